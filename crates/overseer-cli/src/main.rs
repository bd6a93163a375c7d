//! `overseer`: the command line. Parity with the window: every action goes
//! through the running engine when there is one (so the window sees it live),
//! otherwise through the same store transaction in this process.

mod bridge;
mod devices;
mod hook;
mod host_ops;
mod hosts;
mod inbox;
mod mcp;
mod output;
mod snooze;
mod web;
mod webhooks;

use anyhow::Context;
use clap::{Parser, Subcommand};
use overseer_core::confidence::ApprovalMode;
use overseer_core::rules::{RuleSet, SessionMode};
use overseer_core::{Actor, ApiError, GateView, RunView};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use overseer_server::api::{op, Operation, Request};
use overseer_server::client::Client;
use overseer_server::server;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "overseer",
    version,
    about = "Launch and supervise fleets of AI coding agents"
)]
struct Cli {
    /// Where the database and the engine's socket live [env: OVERSEER_DATA_DIR; default: XDG data dir]
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Where the audit signing key lives [env: OVERSEER_CONFIG_DIR; default: XDG config dir]
    #[arg(long, global = true, value_name = "DIR")]
    config_dir: Option<PathBuf>,
    /// Act on this host's engine (`overseer hosts add`) instead of this machine's
    #[arg(long, global = true, value_name = "NAME")]
    host: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Also serve browsers and phones on ADDR (e.g. 127.0.0.1:8765). Loopback
    /// only, unless --tls-cert and --tls-key are given; every browser must be
    /// paired (`overseer devices pair`)
    #[arg(long, value_name = "ADDR")]
    web: Option<std::net::SocketAddr>,
    /// The TLS certificate chain (PEM) for --web
    #[arg(long, value_name = "PEM", requires = "web", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM) for --web
    #[arg(long, value_name = "PEM", requires = "web", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Where a TLS-terminating proxy serves --web (`tailscale serve`, a
    /// reverse proxy), e.g. https://box.tailnet.ts.net: pages of that origin
    /// are answered too, and it is the URL shown for pairing. Repeatable
    #[arg(long, value_name = "URL", requires = "web")]
    web_origin: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the engine headless and serve the local API (and, with --web,
    /// the UI and the window's operations to paired browsers)
    Serve(ServeArgs),
    /// The demo fleet
    #[command(subcommand)]
    Demo(DemoCommand),
    /// List, inspect and decide runs
    #[command(subcommand)]
    Runs(RunsCommand),
    /// List and inspect gates (pending decisions)
    #[command(subcommand)]
    Gates(GatesCommand),
    /// The signed audit log
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Register git repositories that agents work on
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Start work: a task and its first run
    #[command(subcommand)]
    Task(TaskCommand),
    /// The delegated supervisor: policy per workspace or task, and votes
    #[command(subcommand)]
    Supervisor(SupervisorCommand),
    /// Agent profiles: installed or not, the mode each runs in, what each needs
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Claude Code and Codex hooks: the command they run, and installing it
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// Questions agents asked, from every run and session: list and answer
    #[command(subcommand)]
    Questions(inbox::QuestionsCommand),
    /// The inbox: snooze an item until later
    #[command(subcommand)]
    Inbox(snooze::InboxCommand),
    /// Messages between agents, the supervisor and you, through the hub
    #[command(subcommand)]
    Messages(inbox::MessagesCommand),
    /// Launched runs and agents that reached Overseer from outside (hooks, MCP)
    #[command(subcommand)]
    Sessions(inbox::SessionsCommand),
    /// A stdio MCP server of human-in-the-loop tools (ask_user, request_plan_approval, ...)
    Mcp(mcp::McpArgs),
    /// Browsers and phones that act for a person: pair, list, revoke
    #[command(subcommand)]
    Devices(devices::DevicesCommand),
    /// What each paired person may do: approver (in some workspaces or all) or observer
    #[command(subcommand)]
    People(devices::PeopleCommand),
    /// Serve the window to browsers and phones (as Settings does): status, on, off
    #[command(subcommand)]
    Web(web::WebCommand),
    /// Webhooks: tell a phone (ntfy, a receiver of your own) what the desktop is told
    #[command(subcommand)]
    Webhooks(webhooks::WebhooksCommand),
    /// Engines on other Linux machines over ssh: add, list, upgrade, remove, start, verify
    #[command(subcommand)]
    Hosts(HostsCli),
    /// Join stdin/stdout to this machine's engine (what `ssh HOST overseer
    /// bridge` runs for a client elsewhere), after a version handshake
    Bridge,
}

#[derive(Subcommand)]
enum AgentsCommand {
    /// Every profile (built in and from overseer.toml) and whether it is ready
    List {
        #[arg(long)]
        json: bool,
    },
}

/// Where a policy or rules apply: a workspace, or one of its tasks.
#[derive(clap::Args, Clone)]
struct ScopeArgs {
    #[arg(long)]
    workspace: String,
    /// A task of the workspace (its settings override the workspace's)
    #[arg(long)]
    task: Option<overseer_core::TaskId>,
}

impl ScopeArgs {
    fn scope(&self) -> overseer_engine::Scope {
        overseer_engine::Scope {
            workspace: self.workspace.clone(),
            task: self.task,
        }
    }
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum SupervisorCommand {
    /// Set the supervisor's policy (starts from the current one, or from [supervision] in overseer.toml)
    Configure {
        #[command(flatten)]
        scope: ScopeArgs,
        /// advisory (recommends; you decide), cosign (a gate passes when you both approve),
        /// autonomous (it decides; you can override until the effect happens)
        #[arg(long)]
        autonomy: Option<String>,
        /// Per-gate-kind authority, e.g. --gate plan=advisory --gate merge_review=autonomous (repeatable)
        #[arg(long = "gate", value_name = "KIND=AUTONOMY")]
        gates: Vec<String>,
        /// rules, command, or openai
        #[arg(long)]
        evaluator: Option<String>,
        /// The reviewer command (with --evaluator command): JSON on stdin, a verdict on stdout
        #[arg(long)]
        command: Option<String>,
        /// An argument of the reviewer command (repeatable)
        #[arg(long = "arg")]
        args: Vec<String>,
        /// OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1
        #[arg(long)]
        base_url: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// Environment variable holding the endpoint's API key
        #[arg(long)]
        api_key_env: Option<String>,
        #[arg(long)]
        max_reorient_attempts: Option<u32>,
        /// How long an evaluation may take before it counts as failed
        #[arg(long)]
        timeout_seconds: Option<u64>,
        /// Evaluate every step, not only flagged ones
        #[arg(long)]
        always_supervise: Option<bool>,
        /// How long a supervisor pause waits for you before the run is terminated
        #[arg(long)]
        pause_timeout_seconds: Option<u64>,
        /// Seconds an autonomous decision waits before it takes effect (you may
        /// decide otherwise meanwhile); 0: at once
        #[arg(long)]
        grace_seconds: Option<u64>,
        /// Also enable it
        #[arg(long)]
        enable: bool,
    },
    /// Turn the supervisor on at a scope
    Enable {
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Turn the supervisor off at a scope
    Disable {
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// The policy set at a scope and the one in effect there
    Status {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        json: bool,
    },
    /// Vote approve on a gate as the supervisor (scripted setups; you still win)
    Approve {
        gate: overseer_core::GateId,
        #[arg(long, default_value = "approved by a scripted supervisor")]
        rationale: String,
    },
    /// Vote reject on a gate as the supervisor (scripted setups; you still win)
    Reject {
        gate: overseer_core::GateId,
        #[arg(long)]
        rationale: String,
    },
}

#[derive(Subcommand)]
enum WorkspaceCommand {
    /// Register the git repository at PATH
    Add {
        path: PathBuf,
        /// Defaults to the repository's folder name
        #[arg(long)]
        name: Option<String>,
        /// A check command run in the run's worktree when the agent is done (repeatable)
        #[arg(long = "sensor", value_name = "COMMAND")]
        sensors: Vec<String>,
        /// Merge without review when every sensor passes (default: the global setting, off)
        #[arg(long)]
        auto_advance: Option<bool>,
    },
    /// Replace a workspace's sensors and its auto-advance setting
    Checks {
        #[arg(long)]
        workspace: String,
        /// A check command run in the run's worktree when the agent is done
        /// (repeatable; none clears them)
        #[arg(long = "sensor", value_name = "COMMAND")]
        sensors: Vec<String>,
        /// Merge without review when every sensor passes: on, off, or default
        #[arg(long, value_name = "on|off|default", default_value = "default")]
        auto_advance: String,
    },
    /// How a workspace merges: --two-person on makes a run merge only on
    /// the approval of a person who did not start it (never the supervisor's)
    Merge {
        #[arg(long)]
        workspace: String,
        #[arg(long, value_name = "on|off")]
        two_person: String,
    },
    /// The registered workspaces
    List {
        #[arg(long)]
        json: bool,
    },
    /// Replace the permission rules of a workspace (or of one task with --task),
    /// in Claude Code's syntax: Bash(npm test:*), Edit(src/**), Read, mcp__server
    Rules {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long = "allow", value_name = "RULE")]
        allow: Vec<String>,
        #[arg(long = "ask", value_name = "RULE")]
        ask: Vec<String>,
        #[arg(long = "deny", value_name = "RULE")]
        deny: Vec<String>,
    },
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum TaskCommand {
    /// A task's settings as set: rules, approval, supervisor, retries, stage
    Show {
        task: overseer_core::TaskId,
        #[arg(long)]
        json: bool,
    },
    /// Set the budget (the most each run may cost, in the currency its agent
    /// reports) of a task, or with no --task of a workspace; `none` removes
    /// it. A run paused at its budget goes on once you raise it and answer
    /// its gate "Go on".
    Budget {
        #[command(flatten)]
        scope: ScopeArgs,
        /// An amount above 0, or `none`
        amount: String,
    },
    /// Create a task and start its first run; prints the run id
    Start {
        #[arg(long)]
        workspace: String,
        /// An agent profile from overseer.toml, or `demo`
        #[arg(long)]
        agent: String,
        #[arg(long)]
        prompt: String,
        #[arg(long)]
        title: Option<String>,
        /// Demo agent only: happy, questions, destructive, flaky, drift, stubborn, garbage
        #[arg(long)]
        scenario: Option<String>,
        /// Permission rules for this task, checked before the workspace's (repeatable)
        #[arg(long = "allow", value_name = "RULE")]
        allow: Vec<String>,
        #[arg(long = "ask", value_name = "RULE")]
        ask: Vec<String>,
        #[arg(long = "deny", value_name = "RULE")]
        deny: Vec<String>,
        /// When a finished step may proceed without you: auto, manual, confidence_threshold
        #[arg(long, default_value = "auto")]
        approval: String,
        /// With --approval confidence_threshold: proceed at or above this confidence (0 to 1)
        #[arg(long)]
        threshold: Option<f64>,
        /// Seconds a medium-confidence step waits for you before it proceeds (default 10)
        #[arg(long)]
        auto_proceed_seconds: Option<u64>,
        /// A read-only consultation: writes denied, shell asks, known-safe commands allowed
        #[arg(long)]
        read_only: bool,
        /// How this task plans, replacing the profile's: auto, mode, prompt, skip
        #[arg(long)]
        plan: Option<String>,
        /// The agent's session mode for this task, replacing the profile's supervised mode
        #[arg(long)]
        mode: Option<String>,
        /// Seconds an agent's question waits before it takes its defaults (or is declined)
        #[arg(long, value_name = "SECONDS")]
        question_timeout: Option<u64>,
        /// Pause each run of this task once the cost its agent reports reaches
        /// AMOUNT (in the agent's currency); `overseer runs show` prints it
        #[arg(long, value_name = "AMOUNT")]
        max_cost: Option<f64>,
        /// Retry a failed step by itself up to N times (1-10) before asking you
        #[arg(long, value_name = "N")]
        retries: Option<u32>,
        /// The wait before the first unattended retry (it doubles each time)
        #[arg(
            long,
            value_name = "SECONDS",
            default_value_t = 5,
            requires = "retries"
        )]
        retry_backoff: u64,
        /// The task's stage: `[stages.NAME]` in overseer.toml says whether it merges without review
        #[arg(long)]
        stage: Option<String>,
    },
}

#[derive(Subcommand)]
enum DemoCommand {
    /// Create a deterministic demo fleet with runs in every state
    Seed {
        /// Only runs waiting for review or released (what `make run` uses
        /// beside live demo agents)
        #[arg(long)]
        settled: bool,
        /// Instead of the demo fleet, this many runs in a realistic mix of
        /// states (for benchmarks)
        #[arg(long, value_name = "N")]
        runs: Option<u32>,
    },
}

#[derive(Subcommand)]
enum RunsCommand {
    /// One line per run
    List {
        #[arg(long)]
        json: bool,
    },
    /// Everything that decided anything on a run (rules, verdicts, votes,
    /// timers, retries, you), each signed record checked
    Why {
        run: overseer_core::RunId,
        #[arg(long)]
        json: bool,
    },
    /// One run in detail
    Show {
        run: overseer_core::RunId,
        #[arg(long)]
        json: bool,
    },
    /// Approve a run waiting in pending_review (merge)
    Approve { run: overseer_core::RunId },
    /// Reject a run waiting in pending_review
    Reject {
        run: overseer_core::RunId,
        /// Why: goes on the record and to the agent
        #[arg(long)]
        reason: String,
    },
    /// Abort a run in any active state
    Abort { run: overseer_core::RunId },
    /// Remove a released run's worktree and branch
    Clean { run: overseer_core::RunId },
    /// Start a new attempt of an interrupted or failed run in its worktree
    Resume { run: overseer_core::RunId },
    /// The run's changes against its base branch
    Diff {
        run: overseer_core::RunId,
        /// Only the files with their additions and deletions
        #[arg(long)]
        stat: bool,
    },
    /// The run's timeline: agent messages, plans, tool calls, sensor results
    Activity {
        run: overseer_core::RunId,
        #[arg(long)]
        json: bool,
    },
    /// Send an instruction to a running agent's next turn
    Steer {
        run: overseer_core::RunId,
        text: String,
    },
}

#[derive(Subcommand)]
enum GatesCommand {
    /// Pending gates, oldest first, 200 at a time (all gates with --all)
    List {
        #[arg(long)]
        all: bool,
        /// At most this many (default 200, at most 1000); 0: every one
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// Only gates after this one: the next page
        #[arg(long, value_name = "GATE")]
        after: Option<overseer_core::GateId>,
        #[arg(long)]
        json: bool,
    },
    /// One gate with its options and decision
    Show {
        gate: overseer_core::GateId,
        #[arg(long)]
        json: bool,
    },
    /// The whole story of a gate: who asked, what rules and the supervisor
    /// said, the decision, each record's signature checked
    Why {
        gate: overseer_core::GateId,
        #[arg(long)]
        json: bool,
    },
    /// Stop a gate's timer (a step review's auto-proceed, or the supervisor's
    /// decision waiting for its grace): it waits for you
    Hold { gate: overseer_core::GateId },
    /// Decide a pending gate: pick one of its options, with optional context
    Decide {
        gate: overseer_core::GateId,
        #[arg(long)]
        option: String,
        /// Why, or guidance for the agent (required by some options)
        #[arg(long)]
        context: Option<String>,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check every record's hash, chain position and signature, and the checkpoints
    Verify {
        #[arg(long)]
        json: bool,
    },
    /// A consistent copy of the database and its checkpoint in DIR, for
    /// `overseer hosts verify` on another machine to check with its pinned key
    #[command(hide = true)]
    Snapshot { dir: PathBuf },
}

/// `overseer hosts ...`: one list of subcommands, carried out by `hosts`
/// (add, list, upgrade, remove) and by `host_ops`, which builds on it
/// (start, verify).
#[derive(clap::Subcommand)]
enum HostsCli {
    #[command(flatten)]
    Manage(hosts::HostsCommand),
    #[command(flatten)]
    Ops(host_ops::HostOpsCommand),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OVERSEER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let done = runtime.block_on(async {
        let done = run(cli).await;
        host_ops::close().await;
        done
    });
    match done {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = Paths::resolve(cli.data_dir, cli.config_dir).map_err(anyhow::Error::msg)?;
    if let Some(host) = cli.host {
        // Only commands that act through the engine's operations reach a host.
        if !matches!(
            cli.command,
            Command::Runs(_)
                | Command::Gates(_)
                | Command::Questions(_)
                | Command::Messages(_)
                | Command::Sessions(_)
                | Command::Demo(_)
                | Command::Task(_)
                | Command::Workspace(_)
        ) {
            anyhow::bail!(
                "--host works with runs, gates, questions, messages, sessions, task, workspace \
                 and demo commands; run other commands on the host itself (its audit log is \
                 verified from here with `overseer hosts verify {host}`)"
            );
        }
        hosts::select(host);
    }
    match cli.command {
        Command::Hosts(HostsCli::Manage(cmd)) => hosts::run(&paths, cmd).await,
        Command::Hosts(HostsCli::Ops(host_ops::HostOpsCommand::Start { name })) => {
            host_ops::start(&paths, &name).await
        }
        Command::Hosts(HostsCli::Ops(host_ops::HostOpsCommand::Verify { name, json })) => {
            host_ops::verify(&paths, &name, json).await
        }
        Command::Bridge => bridge::run(&paths).await,
        Command::Serve(args) => serve(paths, args).await,
        Command::Hook(cmd) => hook::run(&paths, cmd).await,
        Command::Questions(cmd) => inbox::questions(&paths, cmd).await,
        Command::Inbox(cmd) => snooze::inbox(&paths, cmd).await,
        Command::Messages(cmd) => inbox::messages(&paths, cmd).await,
        Command::Sessions(cmd) => inbox::sessions(&paths, cmd).await,
        Command::Mcp(args) => mcp::run(&paths, args).await,
        Command::Devices(cmd) => devices::devices(&paths, cmd).await,
        Command::People(cmd) => devices::people(&paths, cmd).await,
        Command::Web(cmd) => web::run(&paths, cmd).await,
        Command::Webhooks(cmd) => webhooks::run(&paths, cmd).await,
        Command::Demo(DemoCommand::Seed { settled, runs }) => {
            let ids: Vec<overseer_core::RunId> =
                act(&paths, op::SeedDemo { settled, runs }).await?;
            println!(
                "seeded {} demo runs in {}",
                ids.len(),
                paths.data_dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Runs(cmd) => runs(&paths, cmd).await,
        Command::Gates(cmd) => gates(&paths, cmd).await,
        Command::Audit(AuditCommand::Verify { json }) => verify(&paths, json),
        Command::Audit(AuditCommand::Snapshot { dir }) => host_ops::snapshot(&paths, &dir),
        Command::Workspace(cmd) => workspace(&paths, cmd).await,
        Command::Supervisor(cmd) => supervisor(&paths, cmd).await,
        Command::Agents(AgentsCommand::List { json }) => agents(&paths, json).await,
        Command::Task(TaskCommand::Budget { scope, amount }) => {
            let max_cost = match amount.trim() {
                "none" => None,
                a => Some(a.parse::<f64>().map_err(|_| {
                    anyhow::anyhow!(
                        "{a:?} is not an amount: give a number such as 5 or 2.50, or none"
                    )
                })?),
            };
            let set: Option<f64> = act(
                &paths,
                op::SetMaxCost {
                    scope: scope.scope(),
                    max_cost,
                },
            )
            .await?;
            match set {
                Some(b) => println!("budget set to {b}"),
                None => println!("budget removed"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Task(TaskCommand::Show { task, json }) => {
            let info: overseer_engine::TaskInfo = act(&paths, op::ShowTask { task }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                print!("{}", output::task_info(&info));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Task(TaskCommand::Start {
            workspace,
            agent,
            prompt,
            title,
            scenario,
            allow,
            ask,
            deny,
            approval,
            threshold,
            auto_proceed_seconds,
            read_only,
            plan,
            mode,
            question_timeout,
            max_cost,
            retries,
            retry_backoff,
            stage,
        }) => {
            let plan = match plan.as_deref() {
                None => None,
                Some(p) => Some(overseer_core::agent::PlanStrategy::parse(p).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--plan {p:?} is not a planning strategy; use auto, mode, prompt or skip"
                    )
                })?),
            };
            let settings = overseer_store::TaskSettings {
                plan,
                mode,
                question_timeout_seconds: question_timeout,
                retry: retries.map(|max_attempts| overseer_core::RetryPolicy {
                    max_attempts,
                    backoff_seconds: retry_backoff,
                }),
                permissions: RuleSet::parse(&allow, &ask, &deny).map_err(anyhow::Error::msg)?,
                approval: ApprovalMode::parse(&approval, threshold).map_err(anyhow::Error::msg)?,
                auto_proceed_seconds,
                session: if read_only {
                    SessionMode::ReadOnly
                } else {
                    SessionMode::Normal
                },
                supervisor: None,
                max_cost,
            };
            let started: overseer_engine::Started = act(
                &paths,
                op::StartTask {
                    task: overseer_engine::TaskStart {
                        workspace,
                        agent,
                        prompt,
                        title,
                        scenario,
                        settings,
                        stage,
                    },
                },
            )
            .await?;
            println!("{}", started.run_id);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn runs(paths: &Paths, cmd: RunsCommand) -> anyhow::Result<ExitCode> {
    let now = now_ms();
    match cmd {
        RunsCommand::Why { run, json } => {
            let story: overseer_engine::RunStory = act(paths, op::RunStory { run }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&story)?);
            } else {
                print!("{}", output::run_story(&story, now));
            }
            if !story.verified {
                return Ok(ExitCode::FAILURE);
            }
        }
        RunsCommand::List { json } => {
            let runs: Vec<RunView> = act(paths, op::ListRuns {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else {
                print!("{}", output::runs_table(&runs, now));
            }
        }
        RunsCommand::Show { run, json } => {
            let run: RunView = act(paths, op::ShowRun { run }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&run)?);
            } else {
                print!("{}", output::run_detail(&run, now));
            }
        }
        RunsCommand::Approve { run } => {
            let v: RunView = act(paths, op::ApproveRun { run }).await?;
            println!("run {}: {}", v.id, output::state_label(&v));
        }
        RunsCommand::Reject { run, reason } => {
            let v: RunView = act(paths, op::RejectRun { run, reason }).await?;
            println!("run {}: {}", v.id, output::state_label(&v));
        }
        RunsCommand::Abort { run } => {
            let v: RunView = act(paths, op::AbortRun { run }).await?;
            println!("run {}: {}", v.id, output::state_label(&v));
        }
        RunsCommand::Clean { run } => {
            act(paths, op::CleanRun { run }).await?;
            println!("run {run}: worktree and branch removed");
        }
        RunsCommand::Resume { run } => {
            let s: overseer_engine::Started = act(paths, op::ResumeRun { run }).await?;
            println!("{}", s.run_id);
        }
        RunsCommand::Diff { run, stat } => {
            let v = act(paths, op::RunDiff { run }).await?;
            // On stderr: the diff itself stays pipeable.
            for f in &v.auto_run {
                eprintln!(
                    "AUTO-RUN {}: {}",
                    output::inert(&f.path),
                    output::inert(&f.runs)
                );
            }
            if stat {
                for f in &v.files {
                    println!(
                        "{:>6} {:>6}  {}",
                        format!("+{}", f.additions),
                        format!("-{}", f.deletions),
                        output::inert(&f.path)
                    );
                }
            } else {
                print!("{}", output::inert_lines(&v.diff));
            }
        }
        RunsCommand::Steer { run, text } => {
            act(paths, op::SteerRun { run, text }).await?;
            println!("run {run}: instruction recorded; the agent gets it in its next turn");
        }
        RunsCommand::Activity { run, json } => {
            let items: Vec<overseer_core::ActivityView> =
                act(paths, op::RunActivity { run, after: 0 }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&items)?);
            } else {
                print!("{}", output::activity(&items, now));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn gates(paths: &Paths, cmd: GatesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        GatesCommand::List {
            all,
            limit,
            after,
            json,
        } => {
            let (gates, more) = list_gates(paths, !all, limit, after).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&gates)?);
            } else {
                print!("{}", output::gates_table(&gates, now_ms()));
            }
            if let Some((remaining, next)) = more {
                // On stderr with --json: stdout stays one JSON array.
                let note = format!(
                    "{remaining} more after gate {next}: `overseer gates list --after {next}` \
                     for the next page, `--limit 0` for every one"
                );
                if json {
                    eprintln!("{note}");
                } else {
                    println!("{note}");
                }
            }
        }
        GatesCommand::Decide {
            gate,
            option,
            context,
        } => {
            // The option as typed, sent as the gate's kind's choice.
            let asked: GateView = act(paths, op::ShowGate { gate }).await?;
            let option = inbox::choice_of(&asked, &option)?;
            let g: GateView = act(
                paths,
                op::DecideGate {
                    gate,
                    option: option.into(),
                    context,
                },
            )
            .await?;
            print!("{}", output::gate_detail(&g));
        }
        GatesCommand::Why { gate, json } => {
            let story: overseer_engine::GateStory = act(paths, op::GateStory { gate }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&story)?);
            } else {
                print!("{}", output::gate_story(&story));
            }
            if !story.verified {
                return Ok(ExitCode::FAILURE);
            }
        }
        GatesCommand::Hold { gate } => {
            act(paths, op::HoldGate { gate }).await?;
            println!("gate {gate}: timer stopped; it waits for your decision");
        }
        GatesCommand::Show { gate, json } => {
            let g: GateView = act(paths, op::ShowGate { gate }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&g)?);
            } else {
                print!("{}", output::gate_detail(&g));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Gates oldest first: one page of at most `limit` after `after`, or with
/// `limit` 0 every one (page after page). With what is left after them, if
/// anything: how many, and the gate to list after.
pub(crate) async fn list_gates(
    paths: &Paths,
    pending_only: bool,
    limit: Option<u32>,
    after: Option<overseer_core::GateId>,
) -> anyhow::Result<(Vec<GateView>, Option<(u32, overseer_core::GateId)>)> {
    let every = limit == Some(0);
    let limit = if every {
        Some(overseer_engine::GATE_PAGE_MAX)
    } else {
        limit
    };
    let mut gates = Vec::new();
    let mut after = after;
    loop {
        let page: overseer_engine::GatePage = act(
            paths,
            op::ListGates {
                pending_only,
                limit,
                after,
            },
        )
        .await?;
        gates.extend(page.gates);
        match page.next_after {
            Some(next) if every => after = Some(next),
            Some(next) => return Ok((gates, Some((page.remaining, next)))),
            None => return Ok((gates, None)),
        }
    }
}

async fn workspace(paths: &Paths, cmd: WorkspaceCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        WorkspaceCommand::Add {
            path,
            name,
            sensors,
            auto_advance,
        } => {
            // Resolve here: the engine may run with another working directory.
            if hosts::selected().is_some() && !path.is_absolute() {
                anyhow::bail!(
                    "{}: give the repository's absolute path on the host",
                    path.display()
                );
            }
            let path = std::path::absolute(&path).unwrap_or(path);
            let ws: overseer_store::Workspace = act(
                paths,
                op::AddWorkspace {
                    path,
                    name,
                    settings: overseer_store::WorkspaceSettings {
                        sensors,
                        auto_advance,
                        ..Default::default()
                    },
                },
            )
            .await?;
            println!("workspace {} -> {}", ws.name, ws.path);
        }
        WorkspaceCommand::Rules {
            scope,
            allow,
            ask,
            deny,
        } => {
            let rules = RuleSet::parse(&allow, &ask, &deny).map_err(anyhow::Error::msg)?;
            let set: RuleSet = act(
                paths,
                op::SetPermissions {
                    scope: scope.scope(),
                    rules: (&rules).into(),
                },
            )
            .await?;
            let show = |v: &[overseer_core::rules::Rule]| {
                if v.is_empty() {
                    "-".to_owned()
                } else {
                    v.iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            };
            println!("deny:  {}", output::inert(&show(&set.deny)));
            println!("ask:   {}", output::inert(&show(&set.ask)));
            println!("allow: {}", output::inert(&show(&set.allow)));
        }
        WorkspaceCommand::Merge {
            workspace,
            two_person,
        } => set_two_person(paths, workspace, &two_person).await?,
        WorkspaceCommand::Checks {
            workspace,
            sensors,
            auto_advance,
        } => {
            let auto_advance = match auto_advance.as_str() {
                "on" => Some(true),
                "off" => Some(false),
                "default" => None,
                other => anyhow::bail!(
                    "--auto-advance {other}: say on, off, or default (the global setting)"
                ),
            };
            let ws: overseer_store::Workspace = act(
                paths,
                op::SetWorkspaceChecks {
                    workspace,
                    sensors,
                    auto_advance,
                },
            )
            .await?;
            println!(
                "workspace {}: sensors: {}; auto-advance: {}",
                output::inert(&ws.name),
                if ws.settings.sensors.is_empty() {
                    "none".to_owned()
                } else {
                    output::inert(&ws.settings.sensors.join("; "))
                },
                match ws.settings.auto_advance {
                    Some(true) => "on",
                    Some(false) => "off",
                    None => "default",
                }
            );
        }
        WorkspaceCommand::List { json } => {
            let list: Vec<overseer_store::Workspace> = act(paths, op::ListWorkspaces {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                for w in &list {
                    println!(
                        "{:<16} {}  sensors: {}",
                        output::inert(&w.name),
                        output::inert(&w.path),
                        if w.settings.sensors.is_empty() {
                            "none".to_owned()
                        } else {
                            output::inert(&w.settings.sensors.join("; "))
                        }
                    );
                }
                if list.is_empty() {
                    println!("no workspaces yet: `overseer workspace add PATH`");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn supervisor(paths: &Paths, cmd: SupervisorCommand) -> anyhow::Result<ExitCode> {
    use overseer_core::supervision::{Autonomy, EvaluatorConfig};
    let status = |scope: overseer_engine::Scope| op::SupervisorStatus { scope };
    match cmd {
        SupervisorCommand::Configure {
            scope,
            autonomy,
            gates,
            evaluator,
            command,
            args,
            base_url,
            model,
            api_key_env,
            max_reorient_attempts,
            timeout_seconds,
            always_supervise,
            pause_timeout_seconds,
            grace_seconds,
            enable,
        } => {
            let current: overseer_engine::PolicyStatus = act(paths, status(scope.scope())).await?;
            let config = overseer_engine::config::Config::load(&paths.config_dir)?;
            let mut p = current
                .own
                .unwrap_or_else(|| config.supervision.base_policy());
            if let Some(a) = autonomy {
                p.autonomy = Autonomy::parse(&a).with_context(|| {
                    format!("unknown autonomy '{a}': use advisory, cosign or autonomous")
                })?;
            }
            for g in gates {
                let (kind, level) = g.split_once('=').with_context(|| {
                    format!("--gate {g}: write KIND=AUTONOMY, e.g. merge_review=autonomous")
                })?;
                let kind = overseer_core::GateKind::parse(kind).with_context(|| {
                    format!("--gate {g}: unknown gate kind '{kind}' (plan, tool_call, step_review, merge_review, question)")
                })?;
                let level = Autonomy::parse(level).with_context(|| {
                    format!("--gate {g}: unknown autonomy '{level}' (advisory, cosign, autonomous)")
                })?;
                p.gate_authority.insert(kind, level);
            }
            match evaluator.as_deref() {
                None => {}
                Some("rules") => p.evaluator = EvaluatorConfig::Rules,
                Some("command") => {
                    let command = command
                        .or(config.supervision.command.clone())
                        .context("--evaluator command needs --command PROGRAM")?;
                    p.evaluator = EvaluatorConfig::Command { command, args };
                }
                Some("openai") => {
                    let base_url = base_url.or(config.supervision.base_url.clone()).context(
                        "--evaluator openai needs --base-url URL (or base_url in [supervision])",
                    )?;
                    let model = model.or(config.supervision.model.clone()).context(
                        "--evaluator openai needs --model NAME (or model in [supervision])",
                    )?;
                    p.evaluator = EvaluatorConfig::Openai {
                        base_url,
                        model,
                        api_key_env: api_key_env.or(config.supervision.api_key_env.clone()),
                    };
                }
                Some(other) => {
                    anyhow::bail!("unknown evaluator '{other}': use rules, command or openai")
                }
            }
            if let Some(n) = max_reorient_attempts {
                p.max_reorient_attempts = n;
            }
            if let Some(n) = timeout_seconds {
                p.timeout_seconds = n;
            }
            if let Some(b) = always_supervise {
                p.always_supervise = b;
            }
            if let Some(n) = pause_timeout_seconds {
                p.pause_timeout_seconds = n;
            }
            if let Some(n) = grace_seconds {
                p.grace_seconds = n;
            }
            if enable {
                p.enabled = true;
            }
            let s: overseer_engine::PolicyStatus = act(
                paths,
                op::SetSupervisor {
                    scope: scope.scope(),
                    policy: Some(p),
                },
            )
            .await?;
            print!("{}", output::policy_status(&s));
        }
        SupervisorCommand::Enable { scope } => {
            let s = toggle(paths, &scope, true).await?;
            print!("{}", output::policy_status(&s));
        }
        SupervisorCommand::Disable { scope } => {
            let s = toggle(paths, &scope, false).await?;
            print!("{}", output::policy_status(&s));
        }
        SupervisorCommand::Status { scope, json } => {
            let s: overseer_engine::PolicyStatus = act(paths, status(scope.scope())).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{}", output::policy_status(&s));
            }
        }
        SupervisorCommand::Approve { gate, rationale } => {
            let g: GateView = act(
                paths,
                op::SupervisorVote {
                    gate,
                    approve: true,
                    rationale,
                },
            )
            .await?;
            print!("{}", output::gate_detail(&g));
        }
        SupervisorCommand::Reject { gate, rationale } => {
            let g: GateView = act(
                paths,
                op::SupervisorVote {
                    gate,
                    approve: false,
                    rationale,
                },
            )
            .await?;
            print!("{}", output::gate_detail(&g));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn toggle(
    paths: &Paths,
    scope: &ScopeArgs,
    on: bool,
) -> anyhow::Result<overseer_engine::PolicyStatus> {
    let current: overseer_engine::PolicyStatus = act(
        paths,
        op::SupervisorStatus {
            scope: scope.scope(),
        },
    )
    .await?;
    let mut p = match current.own {
        Some(p) => p,
        None => overseer_engine::config::Config::load(&paths.config_dir)?
            .supervision
            .base_policy(),
    };
    p.enabled = on;
    act(
        paths,
        op::SetSupervisor {
            scope: scope.scope(),
            policy: Some(p),
        },
    )
    .await
}

/// Runs `op` through the engine if one is running, else in-process on the
/// same code path, then checkpoints (a clean exit of an offline writer).
async fn act<O>(paths: &Paths, op: O) -> anyhow::Result<O::Response>
where
    O: Operation + Into<Request>,
    O::Response: serde::de::DeserializeOwned,
{
    if let Some(host) = hosts::selected() {
        return host_ops::perform(paths, host, op).await;
    }
    if let Some(mut client) = Client::connect(&paths.socket()).await? {
        return Ok(client.perform(op).await?);
    }
    let engine = Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
        .map_err(ApiError::from)?;
    let out = op.perform(&engine, &Actor::cli())?;
    if O::DECIDES {
        engine.shutdown()?;
    }
    Ok(out)
}

/// The profiles as the engine sees them (its PATH and environment) when it
/// runs, else as this shell does.
async fn agents(paths: &Paths, json: bool) -> anyhow::Result<ExitCode> {
    let infos: Vec<overseer_engine::config::AgentInfo> =
        match Client::connect(&paths.socket()).await? {
            Some(mut client) => client.perform(op::Agents {}).await?,
            None => overseer_engine::config::Config::load(&paths.config_dir)?
                .agent_infos(|k| std::env::var(k).ok()),
        };
    if json {
        println!("{}", serde_json::to_string_pretty(&infos)?);
        return Ok(ExitCode::SUCCESS);
    }
    // Containment is the machine's: said once, then per profile only when
    // it runs differently.
    if let Some(first) = infos.first() {
        println!("{}", first.containment.summary());
    }
    for a in &infos {
        let state = if a.needs.is_empty() {
            "ready"
        } else {
            "NEEDS SETUP"
        };
        println!(
            "{:<10} {:<12} {}",
            a.name,
            state,
            a.found.as_deref().unwrap_or(&a.command)
        );
        match &a.mode {
            Some(m) => println!("           mode `{m}`: {}", a.mode_effect),
            None => println!("           mode: {}", a.mode_effect),
        }
        println!("           plan: {}", a.plan.as_str());
        // Where the machine cannot contain, a profile either needs the fix
        // (listed below) or runs uncontained by its own choice.
        if !a.contained && a.needs.iter().all(|n| !n.starts_with("a sandbox")) {
            println!("           runs NOT CONTAINED (allow_uncontained = true)");
        }
        println!("           network: {}", a.network.describe());
        for need in &a.needs {
            println!("           needs {need}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(paths: &Paths, json: bool) -> anyhow::Result<ExitCode> {
    if !paths.db().exists() {
        anyhow::bail!(
            "no database at {}: nothing to verify (wrong --data-dir?)",
            paths.db().display()
        );
    }
    let engine = Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
        .map_err(ApiError::from)?;
    match engine.verify_audit()? {
        Ok(report) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"ok": true, "records": report.records, "checkpoints": report.checkpoints, "head_hash": report.head_hash})
                );
            } else {
                println!(
                    "audit log OK: {} records, {} checkpoints, head {}",
                    report.records,
                    report.checkpoints,
                    &report.head_hash[..16.min(report.head_hash.len())]
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            if json {
                let record = failure.record.as_ref();
                println!(
                    "{}",
                    serde_json::json!({
                        "ok": false,
                        "seq": record.map(|r| r.seq),
                        "problem": record.map(|r| &r.problem),
                        "decisions": failure.decisions,
                        "message": failure.to_string(),
                    })
                );
            }
            eprintln!("audit log FAILED verification: {failure}");
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn serve(paths: Paths, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Before the engine opens: an address that will be refused (plain HTTP
    // off loopback, an unusable certificate, a port in use) stops here.
    let web = match args.web {
        Some(addr) => {
            let tls = match (args.tls_cert, args.tls_key) {
                (Some(cert), Some(key)) => Some(overseer_web::TlsFiles { cert, key }),
                _ => None,
            };
            Some(overseer_web::bind(&overseer_web::WebConfig {
                addr,
                tls,
                public_origins: args.web_origin,
            })?)
        }
        None => None,
    };
    // Before anything else: a SIGTERM that arrives while the engine starts
    // (the socket may already answer) is a clean stop once it has started,
    // not the default death that leaves agents and no final checkpoint.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
            .map_err(ApiError::from)?,
    );
    let listener = server::bind(&paths.socket()).map_err(ApiError::from)?;
    eprintln!("overseer engine serving on {}", paths.socket().display());
    let server = tokio::spawn(server::serve(engine.clone(), listener));
    let web = web.map(|web| {
        match web.url() {
            Some(url) => {
                eprintln!("serving browsers on {url} (pair one with `overseer devices pair`)")
            }
            None => eprintln!(
                "serving browsers on {} (pair one with `overseer devices pair`)",
                web.local_addr()
            ),
        }
        tokio::spawn(web.serve(engine.clone()))
    });
    if web.is_none() {
        // No --web: browsers are served as the stored setting says
        // (Settings, "Browsers and phones"), and follow its changes.
        let host = engine.clone();
        let status = tokio::task::spawn_blocking(move || {
            host.serve_browsers(Arc::new(overseer_web::BrowserHost::new(&host)))
        })
        .await?;
        match (&status.error, &status.url) {
            (Some(e), _) => eprintln!(
                "not serving browsers as set ({}): {e}",
                status.settings.addr
            ),
            (None, Some(url)) if status.serving => {
                eprintln!(
                    "serving browsers on {url}, as set (pair one with `overseer devices pair`)"
                )
            }
            _ => {}
        }
    }
    let orchestrator = engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    let ticker = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(30));
            loop {
                every.tick().await;
                // It fsyncs: not on a worker the agents' answers need.
                let engine = engine.clone();
                match tokio::task::spawn_blocking(move || engine.checkpoint_if_moved()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!("checkpoint: {e}"),
                    Err(e) => tracing::warn!("checkpoint: {e}"),
                }
            }
        })
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    ticker.abort();
    server.abort();
    if let Some(web) = &web {
        web.abort();
    }
    orchestrator.abort();
    let _ = server.await;
    engine.stop_agents().await;
    engine.shutdown()?;
    eprintln!("overseer engine stopped; audit checkpoint written");
    Ok(ExitCode::SUCCESS)
}

fn now_ms() -> i64 {
    use overseer_engine::Clock;
    SystemClock.now()
}

/// `overseer workspace merge --two-person on|off`.
async fn set_two_person(paths: &Paths, workspace: String, two_person: &str) -> anyhow::Result<()> {
    let two_person = match two_person {
        "on" => true,
        "off" => false,
        other => anyhow::bail!("--two-person {other}: say on or off"),
    };
    let ws: overseer_store::Workspace = act(
        paths,
        op::SetWorkspaceMerge {
            workspace,
            two_person,
        },
    )
    .await?;
    println!(
        "workspace {}: {}",
        output::inert(&ws.name),
        if ws.settings.two_person_merge {
            "a run merges only on the approval of a person who did not start it"
        } else {
            "one approval merges a run"
        }
    );
    Ok(())
}

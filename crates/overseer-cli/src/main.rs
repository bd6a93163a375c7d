//! `overseer`: the command line. Parity with the window: every action goes
//! through the running engine when there is one (so the window sees it live),
//! otherwise through the same store transaction in this process.

mod output;

use anyhow::Context;
use clap::{Parser, Subcommand};
use overseer_core::{Actor, ApiError, GateView, RunView};
use overseer_engine::api::Request;
use overseer_engine::client::Client;
use overseer_engine::{server, Engine, LogNotifier, Paths, SystemClock};
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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the engine headless and serve the local API
    Serve,
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
    /// The registered workspaces
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum TaskCommand {
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
    },
}

#[derive(Subcommand)]
enum RunsCommand {
    /// One line per run
    List {
        #[arg(long)]
        json: bool,
    },
    /// One run in detail
    Show {
        run: i64,
        #[arg(long)]
        json: bool,
    },
    /// Approve a run waiting in pending_review (merge)
    Approve { run: i64 },
    /// Reject a run waiting in pending_review
    Reject {
        run: i64,
        /// Why: goes on the record and to the agent
        #[arg(long)]
        reason: String,
    },
    /// Abort a run in any active state
    Abort { run: i64 },
    /// Remove a released run's worktree and branch
    Clean { run: i64 },
    /// Start a new attempt of an interrupted or failed run in its worktree
    Resume { run: i64 },
    /// The run's changes against its base branch
    Diff {
        run: i64,
        /// Only the files with their additions and deletions
        #[arg(long)]
        stat: bool,
    },
    /// The run's timeline: agent messages, plans, tool calls, sensor results
    Activity {
        run: i64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum GatesCommand {
    /// Pending gates (all gates with --all)
    List {
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// One gate with its options and decision
    Show {
        gate: i64,
        #[arg(long)]
        json: bool,
    },
    /// Decide a pending gate: pick one of its options, with optional context
    Decide {
        gate: i64,
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
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = Paths::resolve(cli.data_dir, cli.config_dir).map_err(anyhow::Error::msg)?;
    match cli.command {
        Command::Serve => serve(paths).await,
        Command::Demo(DemoCommand::Seed { settled }) => {
            let ids: Vec<i64> = decode(act(&paths, Request::SeedDemo { settled }).await?)?;
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
        Command::Workspace(cmd) => workspace(&paths, cmd).await,
        Command::Task(TaskCommand::Start {
            workspace,
            agent,
            prompt,
            title,
            scenario,
        }) => {
            let started: overseer_engine::Started = decode(
                act(
                    &paths,
                    Request::StartTask(overseer_engine::TaskStart {
                        workspace,
                        agent,
                        prompt,
                        title,
                        scenario,
                    }),
                )
                .await?,
            )?;
            println!("{}", started.run_id);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn runs(paths: &Paths, cmd: RunsCommand) -> anyhow::Result<ExitCode> {
    let now = now_ms();
    match cmd {
        RunsCommand::List { json } => {
            let runs: Vec<RunView> = decode(act(paths, Request::ListRuns).await?)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else {
                print!("{}", output::runs_table(&runs, now));
            }
        }
        RunsCommand::Show { run, json } => {
            let run: RunView = decode(act(paths, Request::ShowRun { run }).await?)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&run)?);
            } else {
                print!("{}", output::run_detail(&run, now));
            }
        }
        RunsCommand::Approve { run } => {
            let v: RunView = decode(act(paths, Request::ApproveRun { run }).await?)?;
            println!("run {}: {}", v.id, output::state_label(&v));
        }
        RunsCommand::Reject { run, reason } => {
            let v: RunView = decode(act(paths, Request::RejectRun { run, reason }).await?)?;
            println!("run {}: {}", v.id, output::state_label(&v));
        }
        RunsCommand::Abort { run } => {
            let v: RunView = decode(act(paths, Request::AbortRun { run }).await?)?;
            println!("run {}: {}", v.id, output::state_label(&v));
        }
        RunsCommand::Clean { run } => {
            act(paths, Request::CleanRun { run }).await?;
            println!("run {run}: worktree and branch removed");
        }
        RunsCommand::Resume { run } => {
            let s: overseer_engine::Started =
                decode(act(paths, Request::ResumeRun { run }).await?)?;
            println!("{}", s.run_id);
        }
        RunsCommand::Diff { run, stat } => {
            let v = act(paths, Request::RunDiff { run }).await?;
            if stat {
                for f in v["files"].as_array().into_iter().flatten() {
                    println!(
                        "{:>6} {:>6}  {}",
                        format!("+{}", f["additions"]),
                        format!("-{}", f["deletions"]),
                        output::inert(f["path"].as_str().unwrap_or_default())
                    );
                }
            } else {
                print!(
                    "{}",
                    output::inert_lines(v["diff"].as_str().unwrap_or_default())
                );
            }
        }
        RunsCommand::Activity { run, json } => {
            let items: Vec<overseer_core::ActivityView> =
                decode(act(paths, Request::RunActivity { run, after: 0 }).await?)?;
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
        GatesCommand::List { all, json } => {
            let gates: Vec<GateView> =
                decode(act(paths, Request::ListGates { pending_only: !all }).await?)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&gates)?);
            } else {
                print!("{}", output::gates_table(&gates, now_ms()));
            }
        }
        GatesCommand::Decide {
            gate,
            option,
            context,
        } => {
            let g: GateView = decode(
                act(
                    paths,
                    Request::DecideGate {
                        gate,
                        option,
                        context,
                    },
                )
                .await?,
            )?;
            print!("{}", output::gate_detail(&g));
        }
        GatesCommand::Show { gate, json } => {
            let g: GateView = decode(act(paths, Request::ShowGate { gate }).await?)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&g)?);
            } else {
                print!("{}", output::gate_detail(&g));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
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
            let path = std::path::absolute(&path).unwrap_or(path);
            let ws: overseer_store::Workspace = decode(
                act(
                    paths,
                    Request::AddWorkspace {
                        path,
                        name,
                        settings: overseer_store::WorkspaceSettings {
                            sensors,
                            auto_advance,
                        },
                    },
                )
                .await?,
            )?;
            println!("workspace {} -> {}", ws.name, ws.path);
        }
        WorkspaceCommand::List { json } => {
            let list: Vec<overseer_store::Workspace> =
                decode(act(paths, Request::ListWorkspaces).await?)?;
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

/// Runs `request` through the engine if one is running, else in-process on the
/// same code path, then checkpoints (a clean exit of an offline writer).
async fn act(paths: &Paths, request: Request) -> anyhow::Result<serde_json::Value> {
    if let Some(mut client) = Client::connect(&paths.socket()).await? {
        return Ok(client.call(request).await?);
    }
    let writes = !matches!(
        request,
        Request::ListRuns
            | Request::ShowRun { .. }
            | Request::ListGates { .. }
            | Request::ShowGate { .. }
            | Request::Ping
    );
    let engine = Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
        .map_err(ApiError::from)?;
    let out = server::dispatch(&engine, request, &Actor::cli())?;
    if writes {
        engine.shutdown()?;
    }
    Ok(out)
}

fn decode<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> anyhow::Result<T> {
    serde_json::from_value(v).context(
        "the engine answered in a format this CLI does not understand; are both the same version?",
    )
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
                println!(
                    "{}",
                    serde_json::json!({"ok": false, "seq": failure.seq, "problem": failure.problem, "message": failure.to_string()})
                );
            }
            eprintln!("audit log FAILED verification: {failure}");
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn serve(paths: Paths) -> anyhow::Result<ExitCode> {
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
            .map_err(ApiError::from)?,
    );
    let listener = server::bind(&paths.socket()).map_err(ApiError::from)?;
    eprintln!("overseer engine serving on {}", paths.socket().display());
    let server = tokio::spawn(server::serve(engine.clone(), listener));
    let orchestrator = engine.start_orchestrator();
    let ticker = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(30));
            loop {
                every.tick().await;
                if let Err(e) = engine.checkpoint_if_moved() {
                    tracing::warn!("checkpoint: {e}");
                }
            }
        })
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    ticker.abort();
    server.abort();
    orchestrator.abort();
    let _ = server.await;
    engine.shutdown()?;
    eprintln!("overseer engine stopped; audit checkpoint written");
    Ok(ExitCode::SUCCESS)
}

fn now_ms() -> i64 {
    use overseer_engine::Clock;
    SystemClock.now()
}

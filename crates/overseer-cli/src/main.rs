//! `overseer`: the command line. Parity with the window: every action goes
//! through the running engine when there is one (so the window sees it live),
//! otherwise through the same store transaction in this process.

mod agents;
mod audit;
mod bridge;
mod demo;
mod devices;
mod gates;
mod hook;
mod host_ops;
mod hosts;
mod inbox;
mod mcp;
mod output;
mod runs;
mod scope;
mod serve;
mod snooze;
mod supervisor;
mod task;
mod web;
mod webhooks;
mod workspace;

use clap::{Parser, Subcommand};
use overseer_core::{Actor, ApiError};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use overseer_server::api::{Operation, Request};
use overseer_server::client::Client;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

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

#[derive(Subcommand)]
enum Command {
    /// Run the engine headless and serve the local API (and, with --web,
    /// the UI and the window's operations to paired browsers)
    Serve(serve::ServeArgs),
    /// The demo fleet
    #[command(subcommand)]
    Demo(demo::DemoCommand),
    /// List, inspect and decide runs
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// List and inspect gates (pending decisions)
    #[command(subcommand)]
    Gates(gates::GatesCommand),
    /// The signed audit log
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Register git repositories that agents work on
    #[command(subcommand)]
    Workspace(workspace::WorkspaceCommand),
    /// Start work: a task and its first run
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// The delegated supervisor: policy per workspace or task, and votes
    #[command(subcommand)]
    Supervisor(supervisor::SupervisorCommand),
    /// Agent profiles: installed or not, the mode each runs in, what each needs
    #[command(subcommand)]
    Agents(agents::AgentsCommand),
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
        select_host(host, &cli.command)?;
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
        Command::Serve(args) => serve::serve(paths, args).await,
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
        Command::Demo(demo::DemoCommand::Seed { settled, runs }) => {
            demo::seed(&paths, settled, runs).await
        }
        Command::Runs(cmd) => runs::runs(&paths, cmd).await,
        Command::Gates(cmd) => gates::gates(&paths, cmd).await,
        Command::Audit(audit::AuditCommand::Verify { json }) => audit::verify(&paths, json),
        Command::Audit(audit::AuditCommand::Snapshot { dir }) => host_ops::snapshot(&paths, &dir),
        Command::Workspace(cmd) => workspace::workspace(&paths, cmd).await,
        Command::Supervisor(cmd) => supervisor::supervisor(&paths, cmd).await,
        Command::Agents(agents::AgentsCommand::List { json }) => agents::agents(&paths, json).await,
        Command::Task(cmd) => task::task(&paths, cmd).await,
    }
}

/// `--host NAME`: the commands after it act on that host's engine.
fn select_host(host: String, command: &Command) -> anyhow::Result<()> {
    // Only commands that act through the engine's operations reach a host.
    if !matches!(
        command,
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
    Ok(())
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

fn now_ms() -> i64 {
    use overseer_engine::Clock;
    SystemClock.now()
}

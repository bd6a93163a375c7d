//! `overseer task ...`: start work (a task and its first run), and a task's
//! settings and budget.

use crate::act;
use crate::output;
use crate::scope::ScopeArgs;
use clap::Subcommand;
use overseer_core::confidence::ApprovalMode;
use overseer_core::rules::{RuleSet, SessionMode};
use overseer_engine::Paths;
use overseer_server::api::op;
use std::process::ExitCode;

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum TaskCommand {
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
    Start(StartArgs),
}

// `overseer task start`: the task, its first prompt, and its settings.
#[derive(clap::Args)]
pub struct StartArgs {
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
}

pub async fn task(paths: &Paths, cmd: TaskCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TaskCommand::Budget { scope, amount } => budget(paths, &scope, &amount).await,
        TaskCommand::Show { task, json } => {
            let info: overseer_engine::TaskInfo = act(paths, op::ShowTask { task }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                print!("{}", output::task_info(&info));
            }
            Ok(ExitCode::SUCCESS)
        }
        TaskCommand::Start(args) => start(paths, args).await,
    }
}

/// `overseer task budget --workspace NAME [--task ID] AMOUNT|none`.
async fn budget(paths: &Paths, scope: &ScopeArgs, amount: &str) -> anyhow::Result<ExitCode> {
    let max_cost = match amount.trim() {
        "none" => None,
        a => Some(a.parse::<f64>().map_err(|_| {
            anyhow::anyhow!("{a:?} is not an amount: give a number such as 5 or 2.50, or none")
        })?),
    };
    let set: Option<f64> = act(
        paths,
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

/// `overseer task start`: prints the new run's id.
async fn start(paths: &Paths, args: StartArgs) -> anyhow::Result<ExitCode> {
    let settings = settings(&args)?;
    let started: overseer_engine::Started = act(
        paths,
        op::StartTask {
            task: overseer_engine::TaskStart {
                workspace: args.workspace,
                agent: args.agent,
                prompt: args.prompt,
                title: args.title,
                scenario: args.scenario,
                settings,
                stage: args.stage,
            },
        },
    )
    .await?;
    println!("{}", started.run_id);
    Ok(ExitCode::SUCCESS)
}

/// The task's settings as its flags give them.
fn settings(args: &StartArgs) -> anyhow::Result<overseer_store::TaskSettings> {
    let plan = match args.plan.as_deref() {
        None => None,
        Some(p) => Some(overseer_core::agent::PlanStrategy::parse(p).ok_or_else(|| {
            anyhow::anyhow!(
                "--plan {p:?} is not a planning strategy; use auto, mode, prompt or skip"
            )
        })?),
    };
    Ok(overseer_store::TaskSettings {
        plan,
        mode: args.mode.clone(),
        question_timeout_seconds: args.question_timeout,
        retry: args.retries.map(|max_attempts| overseer_core::RetryPolicy {
            max_attempts,
            backoff_seconds: args.retry_backoff,
        }),
        permissions: RuleSet::parse(&args.allow, &args.ask, &args.deny)
            .map_err(anyhow::Error::msg)?,
        approval: ApprovalMode::parse(&args.approval, args.threshold)
            .map_err(anyhow::Error::msg)?,
        auto_proceed_seconds: args.auto_proceed_seconds,
        session: if args.read_only {
            SessionMode::ReadOnly
        } else {
            SessionMode::Normal
        },
        supervisor: None,
        max_cost: args.max_cost,
    })
}

//! `overseer supervisor ...`: the delegated supervisor's policy per
//! workspace or task, and its votes.

use crate::act;
use crate::output;
use crate::scope::ScopeArgs;
use anyhow::Context;
use clap::Subcommand;
use overseer_core::supervision::{Autonomy, EvaluatorConfig, SupervisorPolicy};
use overseer_core::GateView;
use overseer_engine::config::SupervisionConfig;
use overseer_engine::{Paths, PolicyStatus};
use overseer_server::api::op;
use std::process::ExitCode;

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum SupervisorCommand {
    /// Set the supervisor's policy (starts from the current one, or from [supervision] in overseer.toml)
    Configure(ConfigureArgs),
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

// `overseer supervisor configure`: each flag given replaces that part of the policy.
#[derive(clap::Args)]
pub struct ConfigureArgs {
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
}

pub async fn supervisor(paths: &Paths, cmd: SupervisorCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SupervisorCommand::Configure(args) => configure(paths, args).await?,
        SupervisorCommand::Enable { scope } => {
            let s = toggle(paths, &scope, true).await?;
            print!("{}", output::policy_status(&s));
        }
        SupervisorCommand::Disable { scope } => {
            let s = toggle(paths, &scope, false).await?;
            print!("{}", output::policy_status(&s));
        }
        SupervisorCommand::Status { scope, json } => {
            let s: PolicyStatus = act(
                paths,
                op::SupervisorStatus {
                    scope: scope.scope(),
                },
            )
            .await?;
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

/// `overseer supervisor configure`: the policy set at the scope (else the
/// base one of overseer.toml), with the flags given applied, set there.
async fn configure(paths: &Paths, args: ConfigureArgs) -> anyhow::Result<()> {
    let current: PolicyStatus = act(
        paths,
        op::SupervisorStatus {
            scope: args.scope.scope(),
        },
    )
    .await?;
    let config = overseer_engine::config::Config::load(&paths.config_dir)?;
    let mut p = current
        .own
        .unwrap_or_else(|| config.supervision.base_policy());
    authority(&mut p, &args)?;
    if let Some(evaluator) = evaluator(&args, &config.supervision)? {
        p.evaluator = evaluator;
    }
    limits(&mut p, &args);
    let s: PolicyStatus = act(
        paths,
        op::SetSupervisor {
            scope: args.scope.scope(),
            policy: Some(p),
        },
    )
    .await?;
    print!("{}", output::policy_status(&s));
    Ok(())
}

/// --autonomy and each --gate KIND=AUTONOMY.
fn authority(p: &mut SupervisorPolicy, args: &ConfigureArgs) -> anyhow::Result<()> {
    if let Some(a) = &args.autonomy {
        p.autonomy = Autonomy::parse(a).with_context(|| {
            format!("unknown autonomy '{a}': use advisory, cosign or autonomous")
        })?;
    }
    for g in &args.gates {
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
    Ok(())
}

/// The evaluator --evaluator names (None: it stays as it was), what it
/// needs taken from the flags, else from [supervision].
fn evaluator(
    args: &ConfigureArgs,
    config: &SupervisionConfig,
) -> anyhow::Result<Option<EvaluatorConfig>> {
    let Some(name) = args.evaluator.as_deref() else {
        return Ok(None);
    };
    let evaluator = match name {
        "rules" => EvaluatorConfig::Rules,
        "command" => {
            let command = args
                .command
                .clone()
                .or(config.command.clone())
                .context("--evaluator command needs --command PROGRAM")?;
            EvaluatorConfig::Command {
                command,
                args: args.args.clone(),
            }
        }
        "openai" => {
            let base_url = args.base_url.clone().or(config.base_url.clone()).context(
                "--evaluator openai needs --base-url URL (or base_url in [supervision])",
            )?;
            let model = args
                .model
                .clone()
                .or(config.model.clone())
                .context("--evaluator openai needs --model NAME (or model in [supervision])")?;
            EvaluatorConfig::Openai {
                base_url,
                model,
                api_key_env: args.api_key_env.clone().or(config.api_key_env.clone()),
            }
        }
        other => anyhow::bail!("unknown evaluator '{other}': use rules, command or openai"),
    };
    Ok(Some(evaluator))
}

/// The attempts, timeouts and switches given; --enable turns it on.
fn limits(p: &mut SupervisorPolicy, args: &ConfigureArgs) {
    if let Some(n) = args.max_reorient_attempts {
        p.max_reorient_attempts = n;
    }
    if let Some(n) = args.timeout_seconds {
        p.timeout_seconds = n;
    }
    if let Some(b) = args.always_supervise {
        p.always_supervise = b;
    }
    if let Some(n) = args.pause_timeout_seconds {
        p.pause_timeout_seconds = n;
    }
    if let Some(n) = args.grace_seconds {
        p.grace_seconds = n;
    }
    if args.enable {
        p.enabled = true;
    }
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

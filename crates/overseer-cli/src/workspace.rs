//! `overseer workspace ...`: register git repositories that agents work on,
//! and set how each checks, merges and permits.

use crate::act;
use crate::hosts;
use crate::output;
use crate::scope::ScopeArgs;
use clap::Subcommand;
use overseer_core::rules::RuleSet;
use overseer_engine::Paths;
use overseer_server::api::op;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum WorkspaceCommand {
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

pub async fn workspace(paths: &Paths, cmd: WorkspaceCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        WorkspaceCommand::Add {
            path,
            name,
            sensors,
            auto_advance,
        } => add(paths, path, name, sensors, auto_advance).await?,
        WorkspaceCommand::Rules {
            scope,
            allow,
            ask,
            deny,
        } => rules(paths, &scope, &allow, &ask, &deny).await?,
        WorkspaceCommand::Merge {
            workspace,
            two_person,
        } => set_two_person(paths, workspace, &two_person).await?,
        WorkspaceCommand::Checks {
            workspace,
            sensors,
            auto_advance,
        } => checks(paths, workspace, sensors, &auto_advance).await?,
        WorkspaceCommand::List { json } => list(paths, json).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `overseer workspace add PATH`.
async fn add(
    paths: &Paths,
    path: PathBuf,
    name: Option<String>,
    sensors: Vec<String>,
    auto_advance: Option<bool>,
) -> anyhow::Result<()> {
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
    Ok(())
}

/// `overseer workspace rules --workspace NAME [--task ID] --allow/--ask/--deny RULE`.
async fn rules(
    paths: &Paths,
    scope: &ScopeArgs,
    allow: &[String],
    ask: &[String],
    deny: &[String],
) -> anyhow::Result<()> {
    let rules = RuleSet::parse(allow, ask, deny).map_err(anyhow::Error::msg)?;
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
    Ok(())
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

/// `overseer workspace checks --workspace NAME [--sensor COMMAND]... [--auto-advance on|off|default]`.
async fn checks(
    paths: &Paths,
    workspace: String,
    sensors: Vec<String>,
    auto_advance: &str,
) -> anyhow::Result<()> {
    let auto_advance = match auto_advance {
        "on" => Some(true),
        "off" => Some(false),
        "default" => None,
        other => {
            anyhow::bail!("--auto-advance {other}: say on, off, or default (the global setting)")
        }
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
    Ok(())
}

/// `overseer workspace list [--json]`.
async fn list(paths: &Paths, json: bool) -> anyhow::Result<()> {
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
    Ok(())
}

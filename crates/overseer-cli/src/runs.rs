//! `overseer runs ...`: list, inspect and decide runs.

use crate::output;
use crate::{act, now_ms};
use clap::Subcommand;
use overseer_core::RunView;
use overseer_engine::Paths;
use overseer_server::api::op;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum RunsCommand {
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

pub async fn runs(paths: &Paths, cmd: RunsCommand) -> anyhow::Result<ExitCode> {
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
        RunsCommand::Diff { run, stat } => diff(paths, run, stat).await?,
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

/// `overseer runs diff RUN [--stat]`.
async fn diff(paths: &Paths, run: overseer_core::RunId, stat: bool) -> anyhow::Result<()> {
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
    Ok(())
}

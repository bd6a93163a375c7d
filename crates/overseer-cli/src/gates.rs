//! `overseer gates ...`: list, inspect, hold and decide gates (pending
//! decisions).

use crate::output;
use crate::{act, now_ms};
use clap::Subcommand;
use overseer_core::{DecisionError, GateChoice, GateView};
use overseer_engine::Paths;
use overseer_server::api::op;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum GatesCommand {
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

pub async fn gates(paths: &Paths, cmd: GatesCommand) -> anyhow::Result<ExitCode> {
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
            let option = choice_of(&asked, &option)?;
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

/// An option as the user typed it (`approve`, `yes`...), as the choice of
/// `g`'s kind it names; one the gate does not offer is refused here with
/// the gate's options, as the engine would.
pub(crate) fn choice_of(g: &GateView, option: &str) -> anyhow::Result<GateChoice> {
    let offered = || {
        g.options
            .iter()
            .map(|o| o.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    GateChoice::parse(g.kind(), option).map_err(|_| {
        let e = DecisionError::UnknownOption {
            chosen: option.to_owned(),
            offered: offered(),
        };
        anyhow::anyhow!("gate {}: {e}", g.id)
    })
}

//! A run's budget: once the cost its agent reports reaches it (`max_cost`,
//! the task's, else the workspace's), the run takes no new turn. It is held
//! at the start of its next turn, never in the middle of one (a tool call
//! runs to its end), on a deviation gate: the user raises the budget and
//! goes on, or stops the run.

use super::turn::{stop, wait_progress_gate, Turn};
use crate::Engine;
use overseer_core::gate_payload::{DeviationCause, DeviationGate};
use overseer_core::usage::{format_cost, over_budget};
use overseer_core::{Activity, Actor, ApiError, DeviationChoice, GateBody, GateOption, RunId};
use std::sync::Mutex;

/// Before a new turn: while the run's cost has reached its budget, asks the
/// user (a timeline entry, a gate, its notification). True: go on (the
/// budget was raised or removed, or the user chose to go on anyway, which
/// asks again at the next turn while it is still reached); false: the user
/// stopped the run.
pub(super) async fn budget_hold(
    engine: &Engine,
    run: RunId,
    turn: &Mutex<Turn>,
) -> Result<bool, ApiError> {
    let view = engine.run(run)?;
    let (Some(usage), Some(budget)) = (view.usage.as_deref(), view.max_cost) else {
        return Ok(true);
    };
    let Some(cost) = usage.cost.as_ref().filter(|_| over_budget(usage, budget)) else {
        return Ok(true);
    };
    let spent = format_cost(cost);
    let text = format!(
        "the run's cost ({spent}) reached its budget of {budget} {}: paused before its next turn; raise the budget (max_cost) to go on, or stop it",
        cost.currency
    );
    tracing::info!(run = %run, "{text}");
    engine.record_activity_or_warn(
        run,
        Activity::Deviation {
            text: text.clone(),
            cause: DeviationCause::Budget.as_str().to_owned(),
        },
    );
    let gate = engine.open_gate(
        run,
        &format!("Run {run} reached its budget ({spent})"),
        &[
            GateOption::choice(DeviationChoice::Retry, "Go on (raise the budget first)"),
            GateOption::choice(DeviationChoice::Stop, "Stop the run"),
        ],
        GateBody::Deviation(DeviationGate {
            cause: DeviationCause::Budget,
            error: text,
            mode: None,
            attempts: None,
            max_attempts: None,
        }),
        &Actor::Engine,
    )?;
    let d = wait_progress_gate(engine, turn, gate).await?;
    if d.choice::<DeviationChoice>() != Ok(DeviationChoice::Retry) {
        stop(engine, run, "stopped at its budget")?;
        return Ok(false);
    }
    // Went on: the next turn asks again if the budget is still reached.
    Ok(true)
}

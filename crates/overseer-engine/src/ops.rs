//! The operations a human can take on a run, each one store transaction.
//!
//! Both the running engine and the CLI (when no engine runs) call these, so a
//! click in the window and a command in a terminal take the same path. Each
//! returns the events its transaction caused (recorded by the store as it
//! wrote), to publish: they come back only once it is committed.

use overseer_core::{
    Actor, EngineEvent, GateKind, MergeReviewChoice, Millis, RunEvent, RunId, RunView,
};
use overseer_store::{Store, StoreError};

/// The run after an operation and what to tell subscribers.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub run: RunView,
    pub events: Vec<EngineEvent>,
}

impl Outcome {
    fn of(run: RunView, changes: overseer_store::Changes) -> Self {
        Outcome {
            run,
            events: changes.into_events(),
        }
    }
}

/// Approve a pending review: decide its merge-review gate and release the run
/// as merged. (The git merge itself arrives with the worktree support.)
pub fn approve_run(
    store: &mut Store,
    run_id: RunId,
    actor: &Actor,
    now: Millis,
) -> Result<Outcome, StoreError> {
    review_decision(
        store,
        run_id,
        MergeReviewChoice::Approve.as_str(),
        None,
        RunEvent::Approve,
        actor,
        now,
    )
}

/// Reject a pending review with the human's reason.
pub fn reject_run(
    store: &mut Store,
    run_id: RunId,
    reason: &str,
    actor: &Actor,
    now: Millis,
) -> Result<Outcome, StoreError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(StoreError::InvalidInput(
            "rejecting a run needs a reason: say what is wrong (--reason TEXT)".to_owned(),
        ));
    }
    review_decision(
        store,
        run_id,
        MergeReviewChoice::Reject.as_str(),
        Some(reason),
        RunEvent::Reject,
        actor,
        now,
    )
}

/// Abort a run in any active state. A pending review's gate is decided as
/// `abort`; any other pending gate is closed with the run.
pub fn abort_run(
    store: &mut Store,
    run_id: RunId,
    actor: &Actor,
    now: Millis,
) -> Result<Outcome, StoreError> {
    let (run, changes) = store.write_changes(|tx| {
        if let Some(gate) = tx.pending_gate(run_id, GateKind::MergeReview)? {
            tx.decide_gate(gate, MergeReviewChoice::Abort.as_str(), None, actor, now)?;
        }
        tx.transition(run_id, RunEvent::Abort, None, actor, now)?;
        tx.run(run_id)
    })?;
    Ok(Outcome::of(run, changes))
}

#[allow(clippy::too_many_arguments)]
fn review_decision(
    store: &mut Store,
    run_id: RunId,
    option: &str,
    context: Option<&str>,
    event: RunEvent,
    actor: &Actor,
    now: Millis,
) -> Result<Outcome, StoreError> {
    let path = store.path().to_owned();
    let (run, changes) = store.write_changes(|tx| {
        let Some(gate) = tx.pending_gate(run_id, GateKind::MergeReview)? else {
            // No review pending: let the state machine say why.
            let state = tx.run(run_id)?.state;
            return match overseer_core::apply(state, event.clone(), now) {
                Err(source) => Err(StoreError::InvalidTransition { run_id, source }),
                Ok(_) => Err(StoreError::Corrupt {
                    path,
                    detail: format!("run {run_id} is pending review without a review gate"),
                }),
            };
        };
        tx.decide_gate(gate, option, context, actor, now)?;
        tx.transition(run_id, event, context, actor, now)?;
        tx.run(run_id)
    })?;
    Ok(Outcome::of(run, changes))
}

/// Applies a lifecycle event from the engine itself (claiming, starting,
/// finishing); opens the merge-review gate when the run enters review.
pub fn advance_run(
    store: &mut Store,
    run_id: RunId,
    event: RunEvent,
    actor: &Actor,
    now: Millis,
) -> Result<Outcome, StoreError> {
    let (run, changes) = store.write_changes(|tx| {
        tx.transition(run_id, event, None, actor, now)?;
        tx.run(run_id)
    })?;
    Ok(Outcome::of(run, changes))
}

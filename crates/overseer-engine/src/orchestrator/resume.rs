//! Runs survive a restart. The driver writes where a run is (its
//! [`Checkpoint`]) at every turn; an engine started after a crash (or a clean
//! exit) relaunches the agent of every run it was driving (continuing its
//! session with `session/resume` or `session/load` where the agent offers
//! one, else a new session told where it was) and carries the run on from
//! its checkpoint.
//!
//! The run's gates stay what they were ([`on_resume`]): the plan, a step
//! review, a supervisor's pause or a deviation stays pending with its timer
//! and the driver waits on it again; a question stays pending and its answer
//! reaches the agent as an instruction; a tool call that was waiting is
//! withdrawn, never answered blindly: the agent, carried on, asks again.

use super::turn::Turn;
use crate::Engine;
use overseer_core::progress::{on_resume, resume_note, Checkpoint, OnResume, Progress};
use overseer_core::Activity;
use overseer_core::{ApiError, GateBody, GateKind, GateView, RunEvent, RunId};
use overseer_store::RunWork;
use std::sync::{Arc, Mutex};

/// Where a carried-on run starts.
pub(super) struct Resumed {
    pub(super) progress: Progress,
    /// The driver's gate it was waiting on (or had just been answered).
    pub(super) adopt: Option<GateView>,
}

/// Keeps where the run is. A checkpoint that cannot be written is logged:
/// the run goes on, and a restart carries it on from the one before.
pub(super) fn save(engine: &Engine, run: RunId, turn: &Mutex<Turn>, progress: &Progress) {
    let checkpoint = {
        let t = turn.lock().unwrap_or_else(|p| p.into_inner());
        Checkpoint {
            progress: progress.clone(),
            after_gate: t.acted_gate,
            always: t.run_rules.allow.clone(),
        }
    };
    let now = engine.clock.now();
    if let Err(e) = engine
        .store()
        .write(|tx| tx.set_run_checkpoint(run, &checkpoint, now))
    {
        tracing::error!(run = %run, "cannot keep where the run is: {e}");
    }
}

/// Keeps the run's "always" rules now (an answer mid-turn would otherwise
/// wait for the next turn's checkpoint). Logged when it cannot be written.
pub(super) fn keep_always(engine: &Engine, run: RunId, turn: &Mutex<Turn>) {
    let always = turn
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .run_rules
        .allow
        .clone();
    let now = engine.clock.now();
    if let Err(e) = engine
        .store()
        .write(|tx| tx.set_run_always(run, &always, now))
    {
        tracing::error!(run = %run, "cannot keep the run's 'always' rules: {e}");
    }
}

/// The checkpoint and the gates of a run the engine carries on (with the
/// run's "always" rules); withdraws
/// the tool calls that were waiting and turns late answers to questions
/// into instructions. `session_resumed`: the agent continued its session.
pub(super) fn prepare(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    session_resumed: bool,
) -> Result<Resumed, ApiError> {
    let run = work.run_id;
    let (checkpoint, gates) = {
        let store = engine.store();
        let checkpoint = store.run_checkpoint(run)?.unwrap_or_default();
        let gates = store.gates_to_resume(run, checkpoint.after_gate)?;
        (checkpoint, gates)
    };
    {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        t.acted_gate = checkpoint.after_gate;
        t.run_rules.allow = checkpoint.always.clone();
    }
    let mut adopt = None;
    for (gate, keyed) in gates {
        match on_resume(gate.kind(), keyed, gate.ask_kind) {
            // Decided and acted on before the engine stopped: a gate the
            // driver may have to act on again (below), nothing else.
            OnResume::Withdraw | OnResume::AnswerAsSteering if gate.effected => {}
            OnResume::Withdraw => engine.withdraw_gate(
                gate.id,
                "the agent that asked stopped with the engine; carried on, it asks again if it still needs to",
            ),
            OnResume::AnswerAsSteering => answer_as_steering(engine, &gate),
            OnResume::WaitAgain if checkpoint.after_gate.is_none_or(|after| gate.id > after) => {
                if fits(&checkpoint.progress, gate.kind()) {
                    adopt = Some(gate);
                } else {
                    tracing::error!(
                        run = %run,
                        gate = %gate.id,
                        "a {} gate does not fit where the run was; it is left for the user",
                        gate.kind().as_str()
                    );
                }
            }
            OnResume::WaitAgain | OnResume::Leave => {}
        }
    }
    let mut progress = checkpoint.progress;
    let note = resume_note(session_resumed);
    match &mut progress {
        Progress::Planning { guidance } | Progress::Executing { guidance, .. } => {
            *guidance = format!("{note}\n{guidance}").trim().to_owned();
        }
        Progress::Finishing => {}
    }
    let waiting = adopt
        .as_ref()
        .map(|g| format!(", waiting again on gate {} ({})", g.id, g.kind().as_str()))
        .unwrap_or_default();
    engine.record_activity_or_warn(
        run,
        Activity::CarriedOn {
            text: format!(
                "the engine restarted: the run carries on from {}{waiting}",
                describe(&progress)
            ),
        },
    );
    Ok(Resumed { progress, adopt })
}

/// Whether a gate of `kind` can be what a run at `progress` waits on.
fn fits(progress: &Progress, kind: GateKind) -> bool {
    match progress {
        Progress::Planning { .. } => matches!(kind, GateKind::Plan | GateKind::Deviation),
        Progress::Executing { .. } => matches!(
            kind,
            GateKind::StepReview | GateKind::SupervisorPause | GateKind::Deviation
        ),
        Progress::Finishing => false,
    }
}

fn describe(progress: &Progress) -> String {
    match progress {
        Progress::Planning { .. } => "planning".to_owned(),
        Progress::Executing { plan, step, .. } => {
            format!("step {} of {}", step + 1, plan.steps.len())
        }
        Progress::Finishing => "its finished work, going to review".to_owned(),
    }
}

/// A question whose asker (the agent's request) is gone stays pending. If
/// the carried-on agent asks the same again, it waits on this gate; else its
/// answer reaches the agent as an instruction for its next turn, as the
/// person who answered.
fn answer_as_steering(engine: &Arc<Engine>, gate: &GateView) {
    let (id, run) = (gate.id, gate.run_id);
    let asked = match &gate.body {
        GateBody::Question(q) if !q.message.is_empty() => q.message.clone(),
        GateBody::Question(_)
        | GateBody::Plan(_)
        | GateBody::ToolCall(_)
        | GateBody::StepReview(_)
        | GateBody::SupervisorPause(_)
        | GateBody::Deviation(_)
        | GateBody::MergeReview(_) => gate.title.clone(),
    };
    engine.live.keep_orphan(id, run, &asked);
    engine.when_answered(id, move |engine, answer, by| {
        if !engine.live.take_orphan(id) {
            // The agent asked again and got this answer itself.
            return;
        }
        let text = format!("You asked: {asked}\nThe answer: {answer}");
        if let Err(e) = engine.queue_steering(run, &text, &by) {
            tracing::error!(
                run = %run,
                "an answer could not be kept as steering: {}",
                e.message
            );
        }
    });
}

/// The run could not be carried on (its agent did not start again, its
/// profile is gone): it is interrupted, and says how to resume it (retried
/// until written: [`super::turn::end_run`]).
pub(super) async fn could_not_carry_on(engine: &Engine, run: RunId, why: &str) {
    let note = format!(
        "the engine restarted and could not carry this run on ({why}); resume it with `overseer runs resume {run}`"
    );
    super::turn::end_run(engine, run, RunEvent::Interrupt, why, &note).await;
}

//! What a run's driver shares between its parts (the prompt loop, the
//! signal pump, planning, steps, permissions, modes): the turn's state,
//! the phase, how the run is supervised, and the small steps every part
//! takes (a prompt turn, a progress gate, ending the run).

use crate::waiting::wait_gate;
use crate::Engine;
use overseer_acp::{AgentSession, StopReason};
use overseer_core::plan::PlanProposal;
use overseer_core::rules::RuleSet;
use overseer_core::{
    Activity, Actor, ApiError, ErrorCode, GateDecision, GateId, RunEvent, RunId, RunState,
};
use overseer_store::RunWork;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// After this many retries of the same step, Retry is no longer offered.
pub const MAX_RETRIES: u32 = 10;

/// How long a run's end that could not be written waits before it is
/// written again (when the disk is not what stops it).
pub(super) const FAIL_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Ends a run whose driver stopped: `why` on its timeline, then `event`
/// (a failure, an interruption) with `note`. An end that cannot be written
/// (a full disk, a locked database) is retried until it is, once the disk
/// has room again: a run whose driver ended is never left `running` with
/// nothing driving it until a restart.
pub(super) async fn end_run(engine: &Engine, run: RunId, event: RunEvent, why: &str, note: &str) {
    let mut noted = false;
    let mut attempt = 0u32;
    loop {
        // Agents stopped at exit did not fail: the next start finds their
        // runs interrupted (resumable).
        // A run the user aborted: its agent was stopped first, and the
        // abort is its record (written now or once there is room).
        if engine.is_stopping() || engine.live.is_aborting(run) {
            return;
        }
        if !noted {
            noted = engine
                .record_activity(
                    run,
                    Activity::Error {
                        text: why.to_owned(),
                    },
                )
                .is_ok();
        }
        let ended = match engine.run(run) {
            Ok(v) if !v.state.is_released() && v.state != RunState::PendingReview => {
                engine.transition(run, event.clone(), Some(note), &Actor::Engine)
            }
            Ok(_) => return,
            Err(e) => Err(e),
        };
        let Err(e) = ended else { return };
        if e.code != ErrorCode::Storage {
            tracing::warn!(run = %run, ?event, "cannot end the run: {}", e.message);
            return;
        }
        attempt += 1;
        tracing::warn!(
            run = %run,
            ?event,
            attempt,
            "cannot end the run yet, retrying once there is room: {}",
            e.message
        );
        engine.disk.wait_for_room().await;
        tokio::time::sleep(FAIL_RETRY).await;
    }
}

/// Why a run cannot go on.
pub(super) fn err(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Internal, message)
}

/// When the run is paused for flooding Overseer ([`crate::flood`]): waits
/// for the user's decision on its pause gate. Some(true): resumed, go on;
/// Some(false): stopped; None: not paused.
pub(super) async fn flood_hold(
    engine: &Arc<Engine>,
    run: RunId,
    turn: &Mutex<Turn>,
) -> Result<Option<bool>, ApiError> {
    let Some(gate) = engine.floods.paused_gate(run) else {
        return Ok(None);
    };
    let d = wait_progress_gate(engine, turn, gate).await?;
    let resumed =
        d.choice::<overseer_core::DeviationChoice>() == Ok(overseer_core::DeviationChoice::Retry);
    if resumed {
        engine.flood_resumed(run, gate, &d.actor);
    }
    Ok(Some(resumed))
}

pub(super) fn still_active(engine: &Engine, run: RunId) -> bool {
    // An abort stops the agent before it is recorded: the turn it broke is
    // no failure of the run's.
    !engine.live.is_aborting(run)
        && matches!(
            engine.run(run).map(|r| r.state),
            Ok(RunState::Running | RunState::Claimed | RunState::RetryQueued)
        )
}

/// Shared between the prompt loop and the signal pump.
#[derive(Default)]
pub(super) struct Turn {
    /// Agent message text of the current turn.
    pub(super) transcript: String,
    /// Rejection reasons to tell the agent in its next prompt.
    pub(super) rejections: Vec<String>,
    /// Rules the user's "always" answers added for this run.
    pub(super) run_rules: RuleSet,
    /// Always-gated operations the agent asked for during the current step.
    pub(super) destructive: u32,
    /// Tool calls of the current step by id, and whether each succeeded.
    pub(super) tool_calls: HashMap<String, bool>,
    /// The agent's latest ACP plan (progress list) of the current turn.
    pub(super) entries: Vec<overseer_acp::PlanEntry>,
    /// Where the run is: planning (in the agent's mode or not) or executing.
    pub(super) phase: Phase,
    /// The plan gate's outcome when it was the agent's own exit-plan request.
    pub(super) plan_decision: Option<Decided>,
    /// A mode the agent switched to that nobody chose: (mode, why).
    pub(super) breach: Option<(String, String)>,
    /// A human said no during the turn: the agent hears why at once, in a
    /// follow-up turn on the same step (a rule's denial waits for the next
    /// prompt, so an agent that keeps asking cannot loop).
    pub(super) owes_reason: bool,
    /// The last of the driver's gates (plan, step review, pause, deviation)
    /// whose decision it acted on: the checkpoint's `after_gate`.
    pub(super) acted_gate: Option<GateId>,
    /// The agent carried out a change without asking and the run was
    /// stopped for it (`unasked`): said once.
    pub(super) stopped_unasked: bool,
}

/// Waits for one of the driver's own gates (plan, step review, supervisor
/// pause, deviation) and notes it acted on it: a restart after this point
/// does not wait on it again.
pub(super) async fn wait_progress_gate(
    engine: &Engine,
    turn: &Mutex<Turn>,
    gate: GateId,
) -> Result<GateDecision, ApiError> {
    let d = wait_gate(engine, gate).await?;
    turn.lock().unwrap_or_else(|p| p.into_inner()).acted_gate = Some(gate);
    Ok(d)
}

/// What the run is doing, for the permission handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Phase {
    #[default]
    Executing,
    /// A planning turn: writes are denied, shell asks.
    Planning { in_mode: bool },
}

/// How a run's agent is supervised, from its profile and its task.
pub(super) struct Supervision {
    /// The mode the agent works in (None: it offers none).
    pub(super) mode: Option<String>,
    pub(super) plan: overseer_core::agent::PlanStrategy,
    pub(super) plan_mode: String,
}

impl Supervision {
    pub(super) fn of(profile: &crate::config::AgentProfile, work: &RunWork) -> Supervision {
        Supervision {
            mode: work
                .task_settings
                .mode
                .clone()
                .or_else(|| profile.mode.clone()),
            plan: work.task_settings.plan.unwrap_or(profile.plan),
            plan_mode: profile.plan_mode.clone(),
        }
    }
}

pub(super) fn stop(engine: &Engine, run: RunId, why: &str) -> Result<(), ApiError> {
    if still_active(engine, run) {
        engine.transition(run, RunEvent::Fail, Some(why), &Actor::Engine)?;
    }
    Ok(())
}

/// True (once) when a human refused a tool call during the turn and the
/// agent has not yet been told why.
pub(super) fn take_owed_reason(turn: &Mutex<Turn>) -> bool {
    let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::take(&mut t.owes_reason) && !t.rejections.is_empty()
}

pub(super) fn take_feedback(
    engine: &Engine,
    run: RunId,
    turn: &Mutex<Turn>,
    guidance: &str,
) -> String {
    let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = String::new();
    for instruction in engine.take_steering(run) {
        out.push_str(&format!("USER INSTRUCTION: {instruction}\n"));
    }
    for r in t.rejections.drain(..) {
        out.push_str(&format!("The user rejected a tool call: {r}\n"));
    }
    if !guidance.trim().is_empty() {
        out.push_str(guidance.trim());
        out.push('\n');
    }
    out
}

/// Sends one prompt and returns how it ended with the turn's message text,
/// once every message the agent sent during the turn has been handled.
/// While the disk is nearly full no prompt is sent: it waits for room.
pub(super) async fn prompt_turn(
    engine: &Engine,
    conn: &dyn AgentSession,
    turn: &Mutex<Turn>,
    text: &str,
) -> Result<(StopReason, String), ApiError> {
    if !engine.disk_room_now() {
        engine.disk.wait_for_room().await;
    }
    {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        t.transcript.clear();
        t.entries.clear();
    }
    let stop = conn.prompt(text).await;
    // The prompt's answer follows the turn's updates on the wire; the pump
    // handles signals on its own task, so wait until it has seen them all.
    conn.settle().await;
    let stop = stop.map_err(|e| err(format!("the agent failed: {e}")))?;
    let transcript = std::mem::take(&mut turn.lock().unwrap_or_else(|p| p.into_inner()).transcript);
    Ok((stop, transcript))
}

pub(super) fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    line.chars().take(120).collect()
}

pub(super) fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    s.chars().skip(n - max).collect()
}

/// The plan gate's outcome, when the gate was the agent's exit-plan request.
pub(super) enum Decided {
    Approved(PlanProposal, Option<String>),
    Changes(String),
    Rejected(GateDecision),
    /// The run ended while the gate was open.
    Gone,
}

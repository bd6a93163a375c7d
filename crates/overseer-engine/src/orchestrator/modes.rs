//! The agent's session mode: set to the supervised one after every
//! `session/new` or `session/resume`, watched for switches nobody chose.
//!
//! An adapter can turn supervision off by itself (claude-agent-acp 0.101
//! opens every session in `auto`, where `rm -rf` runs unasked). So a run is
//! never prompted before its agent confirmed the profile's supervised mode,
//! and when the agent reports any mode the run does not allow, the driver
//! refuses its writes and asks at once, this module records a security
//! event, cancels the turn, and a blocking gate tells the user what happened.

use super::turn::{stop, wait_progress_gate, Supervision, Turn, MAX_RETRIES};
use crate::Engine;
use overseer_acp::AgentSession;
use overseer_core::activity::{Activity, SecurityEntry};
use overseer_core::agent::{acts_unasked, describe_mode, starting_mode as starting};
use overseer_core::{
    Actor, ApiError, DeviationCause, DeviationChoice, DeviationGate, ErrorCode, GateBody,
    GateOption, RunId,
};
use overseer_store::RunWork;
use std::sync::{Arc, Mutex};

/// Puts the agent in its supervised mode and watches for any other. An agent
/// that will not enter it is not prompted: the error names the agent, its
/// modes and the fix.
pub(super) async fn supervise(
    engine: &Engine,
    work: &RunWork,
    conn: &dyn AgentSession,
    supervision: &Supervision,
) -> Result<(), ApiError> {
    let offered = offered(conn);
    let Some(mode) = &supervision.mode else {
        // No mode named and none chosen (`starting_mode`): the agent offers
        // no modes at all.
        return Ok(());
    };
    if let Err(e) = conn.set_mode(mode).await {
        return Err(refused(
            work,
            engine,
            format!(
                "the agent `{}` will not enter its supervised mode `{mode}`: {e}. It offers \
                 {offered}. Set `mode` in [agents.{}] of {} to one of them that asks before acting",
                work.agent,
                work.agent,
                engine.config.path().display()
            ),
        ));
    }
    conn.allow_modes(vec![mode.clone()]);
    engine.record_activity_or_warn(
        work.run_id,
        Activity::Mode {
            mode: mode.to_owned(),
            text: format!(
                "the agent works in mode `{mode}`: it {}",
                describe_mode(mode)
            ),
        },
    );
    Ok(())
}

/// The supervised mode of a run whose profile names none: the one the
/// agent starts in if it is known to ask, else one it offers that is (set
/// by `supervise`), else the run does not start, with a message naming the
/// modes it offers and the ways out. Unknown modes are never trusted.
pub(super) fn starting_mode(
    engine: &Engine,
    work: &RunWork,
    conn: &dyn AgentSession,
    allow_unsupervised: bool,
) -> Result<Option<String>, ApiError> {
    let current = conn.current_mode();
    match starting(current.as_deref(), &conn.mode_ids(), allow_unsupervised) {
        Ok(Some(mode)) => {
            if current.as_deref() != Some(mode.as_str()) {
                engine.record_activity_or_warn(
                    work.run_id,
                    Activity::Mode {
                        mode: mode.clone(),
                        text: format!(
                            "the agent started in mode `{}` ({}); its profile names no mode, so \
                             Overseer puts it in `{mode}`, which asks",
                            current.as_deref().unwrap_or("none"),
                            current.as_deref().map_or("no mode", describe_mode),
                        ),
                    },
                );
            } else if allow_unsupervised && acts_unasked(&mode) {
                engine.record_activity_or_warn(
                    work.run_id,
                    Activity::Security(SecurityEntry {
                        text: format!(
                            "the agent works in mode `{mode}` ({}) because its profile says \
                             `allow_unsupervised = true`: Overseer sees only what it asks",
                            describe_mode(&mode)
                        ),
                        mode: Some(mode.clone()),
                        ..SecurityEntry::default()
                    }),
                );
            }
            Ok(Some(mode))
        }
        Ok(None) => Ok(None),
        Err(why) => Err(refused(
            work,
            engine,
            format!(
                "the run was not started: {why}. Set `mode` in [agents.{}] of {} to a mode \
                 that asks, configure the agent's own permissions to ask and name that mode, \
                 or set `allow_unsupervised = true` there if you accept that Overseer sees \
                 only what it asks",
                work.agent,
                engine.config.path().display()
            ),
        )),
    }
}

/// Enters the agent's planning mode; the supervised mode stays allowed (the
/// agent leaves planning through the plan gate into it).
pub(super) async fn enter(
    engine: &Engine,
    work: &RunWork,
    conn: &dyn AgentSession,
    supervision: &Supervision,
    plan_mode: &str,
) -> Result<(), ApiError> {
    conn.set_mode(plan_mode).await.map_err(|e| {
        refused(
            work,
            engine,
            format!(
                "the agent `{}` will not enter its planning mode `{plan_mode}`: {e}; set \
                 `plan = \"prompt\"` in [agents.{}]",
                work.agent, work.agent
            ),
        )
    })?;
    let mut allowed = vec![plan_mode.to_owned()];
    allowed.extend(supervision.mode.clone());
    conn.allow_modes(allowed);
    Ok(())
}

fn offered(conn: &dyn AgentSession) -> String {
    let ids = conn.mode_ids();
    if ids.is_empty() {
        "no modes".to_owned()
    } else {
        ids.iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn refused(work: &RunWork, engine: &Engine, message: String) -> ApiError {
    engine.record_activity_or_warn(
        work.run_id,
        Activity::Error {
            text: message.to_owned(),
        },
    );
    ApiError::new(ErrorCode::InvalidInput, message)
}

/// The pump saw the agent report a mode. A breach is recorded as a security
/// event and the turn is cancelled; the run loop then opens the gate.
pub(super) async fn on_mode_changed(
    engine: &Engine,
    run: RunId,
    turn: &Mutex<Turn>,
    conn: &dyn AgentSession,
    mode: String,
    breach: Option<String>,
) {
    let Some(why) = breach else {
        engine.record_activity_or_warn(
            run,
            Activity::Mode {
                mode: mode.clone(),
                text: format!("the agent is in mode `{mode}`"),
            },
        );
        return;
    };
    engine.record_activity_or_warn(
        run,
        Activity::Security(SecurityEntry {
            text: format!("{why}; Overseer stopped the turn"),
            mode: Some(mode.clone()),
            ..SecurityEntry::default()
        }),
    );
    engine.audit(
        &Actor::Engine,
        overseer_core::audit::AuditPayload::SecurityEvent(
            overseer_core::audit::SecurityPayload::UnsupervisedMode {
                run_id: run,
                mode: mode.to_string(),
                why: why.to_string(),
            },
        ),
    );
    turn.lock().unwrap_or_else(|p| p.into_inner()).breach = Some((mode, why));
    if let Err(e) = conn.cancel().await {
        tracing::warn!(run = %run, "cancelling after a mode breach: {e}");
    }
}

/// What the run loop does after a breach was handled.
pub(super) enum Next {
    /// The user put the agent back in its supervised mode: go on.
    Again,
    /// The user stopped the run.
    Stopped,
}

/// After a turn: when the agent switched itself to a mode nobody chose, a
/// blocking gate says so; Retry puts the supervised mode back, Stop ends the
/// run. `None` when nothing happened.
pub(super) async fn after_breach(
    engine: &Arc<Engine>,
    work: &RunWork,
    conn: &dyn AgentSession,
    turn: &Mutex<Turn>,
    supervision: &Supervision,
) -> Result<Option<Next>, ApiError> {
    let breach = turn.lock().unwrap_or_else(|p| p.into_inner()).breach.take();
    let (mode, why) = match breach {
        Some(b) => b,
        None if conn.breached() => (
            conn.current_mode().unwrap_or_default(),
            "the agent is in a mode the run does not allow".to_owned(),
        ),
        None => return Ok(None),
    };
    let run = work.run_id;
    if !super::turn::still_active(engine, run) {
        // Stopped meanwhile (the agent also acted unasked): nothing to ask.
        return Ok(Some(Next::Stopped));
    }
    let back = supervision.mode.clone().unwrap_or_default();
    let gate = engine.open_gate(
        run,
        &format!("The agent switched itself to mode `{mode}`: Overseer stopped its turn"),
        &[
            GateOption::choice(
                DeviationChoice::Retry,
                &format!("Put it back in `{back}` and go on"),
            ),
            GateOption::choice(DeviationChoice::Stop, "Stop the run"),
        ],
        GateBody::Deviation(DeviationGate {
            cause: DeviationCause::ModeBreach,
            error: why.clone(),
            mode: Some(mode.to_string()),
            attempts: Some(0),
            max_attempts: Some(MAX_RETRIES),
        }),
        &Actor::Engine,
    )?;
    let d = wait_progress_gate(engine, turn, gate).await?;
    match d.choice::<DeviationChoice>() {
        Ok(DeviationChoice::Retry) => {
            supervise(engine, work, conn, supervision).await?;
            Ok(Some(Next::Again))
        }
        Ok(DeviationChoice::Replan | DeviationChoice::Stop) | Err(_) => {
            stop(engine, run, &format!("stopped: {why}"))?;
            Ok(Some(Next::Stopped))
        }
    }
}

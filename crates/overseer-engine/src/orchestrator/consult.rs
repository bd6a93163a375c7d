//! Read-only consultation (`consult`): a running agent asks another agent
//! profile a question. The answer comes from a child run of the asking run:
//! its own repository made from a snapshot of the asking run's worktree as
//! it is now (uncommitted changes and new files included), a task of its
//! own that is a read-only session (writes denied, shell asks, known-safe
//! commands allowed, subagent dispatch asks) with no plan, and one turn
//! whose prompt is the question. The turn's message is the answer.
//!
//! The child is never queued: it is created claimed, driven here (not by
//! the orchestrator's launcher) and ended when it answered (`ended`), or
//! failed when it timed out, failed, or its asker stopped waiting; its
//! agent is stopped in every case. A consultation cannot consult (depth 1),
//! and after an engine restart it is not carried on: its asker's call is
//! gone, so it is failed at start (`fail_orphans`).

use super::agent::launch_agent;
use super::live::terminate_tree;
use super::modes;
use super::turn::{end_run, prompt_turn, still_active, Supervision, Turn};
use crate::Engine;
use overseer_acp::StopReason;
use overseer_core::agent::PlanStrategy;
use overseer_core::rules::SessionMode;
use overseer_core::session::{check_consult_timeout, CONSULT_TIMEOUT_DEFAULT};
use overseer_core::{Activity, Actor, ApiError, ErrorCode, RunEvent, RunId, SessionAnswer};
use overseer_git as git;
use overseer_store::TaskSettings;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest question accepted (the child's prompt).
const MAX_QUESTION: usize = 20_000;

/// The title of a consultation's entries on both runs' timelines.
const TITLE: &str = "Consultation";

fn refused(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError::new(code, message)
}

/// Asks `profile` the `question` on behalf of `parent` (a running run
/// Overseer launched) and waits for the answer, at most `timeout_seconds`.
pub(crate) async fn consult(
    engine: &Arc<Engine>,
    parent: RunId,
    profile: String,
    question: String,
    timeout_seconds: Option<u64>,
) -> Result<SessionAnswer, ApiError> {
    let asking = engine.run(parent)?;
    may_consult(parent, &asking)?;
    let question = checked_question(question)?;
    let seconds = timeout_seconds.unwrap_or(CONSULT_TIMEOUT_DEFAULT);
    check_consult_timeout(seconds).map_err(|m| refused(ErrorCode::InvalidInput, m))?;
    let agent_profile = engine
        .config
        .profile(&profile)
        .map_err(|e| refused(ErrorCode::InvalidInput, e.to_string()))?;
    let work = engine.store().run_work(parent)?;
    let Some(worktree) = work.worktree.clone() else {
        return Err(refused(
            ErrorCode::InvalidTransition,
            format!("run {parent} has no worktree yet; consult once it has started"),
        ));
    };
    let from = PathBuf::from(&worktree);
    let snapshot = tokio::task::spawn_blocking(move || git::snapshot(&from))
        .await
        .map_err(|e| refused(ErrorCode::Internal, e.to_string()))??;
    let child = create_child(engine, &work, &profile, &question, parent)?;
    // From here, this call going away before the child answered (the
    // asker's connection closed) fails and stops the child.
    let mut guard = Abandon {
        engine: engine.clone(),
        child,
        armed: true,
    };
    let child_work = make_worktree(engine, child, &worktree, &work, &snapshot).await;
    let child_work = match child_work {
        Ok(w) => w,
        Err(e) => {
            guard.armed = false;
            end_run(engine, child, RunEvent::Fail, &e.message, &e.message).await;
            return Err(e);
        }
    };
    note_question(engine, parent, child, &profile, &snapshot, &question);
    let prompt = prompt(parent, &asking.task_title, &question);
    let answer = drive_child(engine, parent, child, child_work, agent_profile, prompt);
    let waited = tokio::time::timeout(Duration::from_secs(seconds), answer).await;
    // The driver ended the child (answered or failed); a timeout ends it
    // below, still guarded until it has.
    guard.armed = waited.is_err();
    match waited {
        Ok(Ok(Ok(text))) => Ok(answered(engine, parent, child, &profile, text)),
        Ok(Ok(Err(e))) => Err(failed(engine, parent, child, &profile, e)),
        Ok(Err(_)) => Err(refused(
            ErrorCode::EngineUnavailable,
            format!("the consultation (run {child}) stopped with the engine; nothing was answered"),
        )),
        Err(_) => Ok(timed_out(engine, parent, child, &profile, seconds, &mut guard).await),
    }
}

/// Refuses a consultation that would consult in turn, and a session Overseer
/// did not launch (it has no worktree to snapshot).
fn may_consult(parent: RunId, asking: &overseer_core::RunView) -> Result<(), ApiError> {
    if let Some(grand) = asking.parent {
        return Err(refused(
            ErrorCode::Forbidden,
            format!(
                "run {parent} is itself a consultation (asked by run {grand}), and a consultation \
                 cannot consult: answer from what you can read yourself, and say what you could not find out"
            ),
        ));
    }
    if asking.origin.is_external() {
        return Err(refused(
            ErrorCode::Forbidden,
            "consult is for runs Overseer launched: a session outside Overseer has no worktree to snapshot",
        ));
    }
    Ok(())
}

/// The question, trimmed; refused when empty or longer than [`MAX_QUESTION`].
fn checked_question(question: String) -> Result<String, ApiError> {
    let question = question.trim().to_owned();
    if question.is_empty() || question.chars().count() > MAX_QUESTION {
        return Err(refused(
            ErrorCode::InvalidInput,
            format!("the question must be 1 to {MAX_QUESTION} characters; ask it in words"),
        ));
    }
    Ok(question)
}

/// Notes the question on both timelines: on the asker's, whom it asked on
/// which snapshot; on the child's, who asks and that it is read-only.
fn note_question(
    engine: &Engine,
    parent: RunId,
    child: RunId,
    profile: &str,
    snapshot: &str,
    question: &str,
) {
    let short: String = snapshot.chars().take(12).collect();
    engine.record_activity_or_warn(
        parent,
        Activity::Notice {
            title: Some(TITLE.to_owned()),
            text: format!("asked {profile} (run {child}), read-only on this worktree as of {short}: {question}"),
        },
    );
    engine.record_activity_or_warn(
        child,
        Activity::Notice {
            title: Some(TITLE.to_owned()),
            text: format!(
                "consulted by run {parent}: read-only, on a snapshot of its worktree ({short}); the question: {question}"
            ),
        },
    );
}

/// Has the child answer in the background: its answer (or why there is
/// none) arrives on the channel once the child is ended and its agent stopped.
fn drive_child(
    engine: &Arc<Engine>,
    parent: RunId,
    child: RunId,
    child_work: overseer_store::RunWork,
    agent_profile: crate::config::AgentProfile,
    prompt: String,
) -> tokio::sync::oneshot::Receiver<Result<String, ApiError>> {
    let (done, answer) = tokio::sync::oneshot::channel();
    let driver = engine.clone();
    engine.spawn_cancellable(async move {
        let result = answer_turn(&driver, &child_work, &agent_profile, &prompt).await;
        let result = end_child(&driver, parent, child, result).await;
        stop_child(&driver, child).await;
        let _ = done.send(result);
    });
    answer
}

/// Ends the child once it answered, or fails it when it could not; a child
/// stopped meanwhile gives no answer.
async fn end_child(
    engine: &Engine,
    parent: RunId,
    child: RunId,
    result: Result<String, ApiError>,
) -> Result<String, ApiError> {
    match result {
        Ok(text) => {
            if still_active(engine, child) {
                let ended = engine.transition(
                    child,
                    RunEvent::End,
                    Some(&format!("answered run {parent}'s consultation")),
                    &Actor::Engine,
                );
                ended.map(|_| text)
            } else {
                Err(refused(
                    ErrorCode::InvalidTransition,
                    format!("run {child} was stopped before it answered"),
                ))
            }
        }
        Err(e) => {
            if still_active(engine, child) {
                end_run(engine, child, RunEvent::Fail, &e.message, &e.message).await;
            }
            Err(e)
        }
    }
}

/// What the child cost, once known.
fn cost_of(engine: &Engine, child: RunId) -> Option<overseer_core::RunCost> {
    engine
        .run(child)
        .ok()
        .and_then(|v| v.usage)
        .and_then(|u| u.cost)
}

/// The child's answer, for the asker, who is told on its timeline that it came.
fn answered(
    engine: &Engine,
    parent: RunId,
    child: RunId,
    profile: &str,
    text: String,
) -> SessionAnswer {
    engine.record_activity_or_warn(
        parent,
        Activity::Notice {
            title: Some(TITLE.to_owned()),
            text: format!("run {child} ({profile}) answered"),
        },
    );
    SessionAnswer::Consult {
        text,
        run: child,
        cost: cost_of(engine, child),
        timed_out: false,
    }
}

/// Why the consultation failed, noted on the asker's timeline and returned
/// to it as its error.
fn failed(engine: &Engine, parent: RunId, child: RunId, profile: &str, e: ApiError) -> ApiError {
    let message = format!(
        "the consultation (run {child}, {profile}) failed: {}",
        e.message
    );
    engine.record_activity_or_warn(
        parent,
        Activity::Notice {
            title: Some(TITLE.to_owned()),
            text: message.clone(),
        },
    );
    ApiError::new(e.code, message)
}

/// After the timeout: the child is failed and its agent stopped, and the
/// asker is answered that no answer came in time.
async fn timed_out(
    engine: &Engine,
    parent: RunId,
    child: RunId,
    profile: &str,
    seconds: u64,
    guard: &mut Abandon,
) -> SessionAnswer {
    let why = format!("timed out after {seconds} s without an answer: stopped");
    if still_active(engine, child) {
        end_run(engine, child, RunEvent::Fail, &why, &why).await;
    }
    stop_child(engine, child).await;
    guard.armed = false;
    engine.record_activity_or_warn(
        parent,
        Activity::Notice {
            title: Some(TITLE.to_owned()),
            text: format!("run {child} ({profile}) {why}"),
        },
    );
    SessionAnswer::Consult {
        text: format!(
            "No answer: the consultation of {profile} (run {child}) timed out after {seconds} s \
             and was stopped."
        ),
        run: child,
        cost: cost_of(engine, child),
        timed_out: true,
    }
}

/// What the consulted agent is told: who asks, what it may do, the question.
fn prompt(parent: RunId, task: &str, question: &str) -> String {
    format!(
        "Another coding agent (Overseer run {parent}, working on \"{task}\") consults you. You work \
         read-only on a snapshot of its repository as it is now: you cannot change files, and shell \
         commands wait for the user's permission. Answer its question; your last message is your \
         answer, returned to it as is.\n\nQuestion: {question}"
    )
}

/// The child's task (read-only, no plan) and run, linked to `parent` and
/// claimed in the same transaction: the launcher never takes it.
fn create_child(
    engine: &Engine,
    work: &overseer_store::RunWork,
    profile: &str,
    question: &str,
    parent: RunId,
) -> Result<RunId, ApiError> {
    let now = engine.clock.now();
    let first: String = question
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(80)
        .collect();
    let title = format!("Consultation for run {parent}: {first}");
    let settings = TaskSettings {
        session: SessionMode::ReadOnly,
        plan: Some(PlanStrategy::Skip),
        ..Default::default()
    };
    let actor = Actor::Agent(work.agent.clone());
    Ok(engine.write(|tx| {
        let task = tx.create_task(work.workspace.id, &title, question, &actor, now)?;
        tx.set_task_settings(task, &settings, &actor, now)?;
        let run = tx.create_run(task, profile, &actor, now)?;
        tx.set_run_parent(run, parent)?;
        tx.transition(run, RunEvent::Claim, None, &Actor::Engine, now)?;
        Ok(run)
    })?)
}

/// The child's own repository, made from the snapshot commit in the asking
/// run's repository; the child's work, read back.
async fn make_worktree(
    engine: &Engine,
    child: RunId,
    parent_worktree: &str,
    parent: &overseer_store::RunWork,
    snapshot: &str,
) -> Result<overseer_store::RunWork, ApiError> {
    let dir = engine.worktree_path(&parent.workspace.name, child);
    let branch = crate::run_branch(child);
    let (from, to, b, at) = (
        PathBuf::from(parent_worktree),
        dir.clone(),
        branch.clone(),
        snapshot.to_owned(),
    );
    tokio::task::spawn_blocking(move || git::create_run_repo(&from, &to, &b, &at))
        .await
        .map_err(|e| refused(ErrorCode::Internal, e.to_string()))??;
    let now = engine.clock.now();
    let wt = dir.to_string_lossy().into_owned();
    let base = parent.base_ref.clone().unwrap_or_else(|| branch.clone());
    engine.store().write(|tx| {
        tx.set_run_work(
            child,
            &wt,
            &branch,
            &base,
            Some(snapshot),
            &Actor::Engine,
            now,
        )
    })?;
    Ok(engine.store().run_work(child)?)
}

/// The child's agent, started in its supervised mode, asked the question in
/// one read-only turn: the turn's message.
async fn answer_turn(
    engine: &Arc<Engine>,
    work: &overseer_store::RunWork,
    profile: &crate::config::AgentProfile,
    prompt: &str,
) -> Result<String, ApiError> {
    let run = work.run_id;
    let worktree = PathBuf::from(work.worktree.clone().unwrap_or_default());
    let turn = Arc::new(Mutex::new(Turn::default()));
    let conn = launch_agent(engine, work, profile, &worktree, &turn).await?;
    let mut supervision = Supervision::of(profile, work);
    if supervision.mode.is_none() {
        supervision.mode = modes::starting_mode(engine, work, &*conn, profile.allow_unsupervised)?;
    }
    modes::supervise(engine, work, &*conn, &supervision).await?;
    engine.transition(run, RunEvent::Start, None, &Actor::Engine)?;
    // File writes through the client are refused for the whole turn, as the
    // rules deny the agent's write requests (the task is read-only).
    conn.set_read_only(true);
    let (stop, transcript) = prompt_turn(engine, &*conn, &turn, prompt).await?;
    match stop {
        StopReason::EndTurn | StopReason::MaxTokens | StopReason::MaxTurnRequests => {}
        StopReason::Refusal => {
            return Err(refused(
                ErrorCode::Internal,
                format!(
                    "the agent refused to answer: {}",
                    super::turn::tail(&transcript, 2000)
                ),
            ))
        }
        StopReason::Cancelled => {
            return Err(refused(
                ErrorCode::Internal,
                "the agent's turn was cancelled before it answered",
            ))
        }
    }
    let text = transcript.trim().to_owned();
    if text.is_empty() {
        return Err(refused(
            ErrorCode::Internal,
            "the agent ended its turn without saying anything",
        ));
    }
    Ok(text)
}

/// Stops the child's agent (its whole process tree), if it still runs.
async fn stop_child(engine: &Engine, child: RunId) {
    if let Some(live) = engine.live.get(child) {
        let _ = live.conn.cancel().await;
        terminate_tree(
            child,
            &live,
            engine.config.abort_timeout(),
            "after its consultation",
        )
        .await;
    }
    engine.live.set(child, None);
}

/// While armed, dropping it (the asker went away) fails and stops the child.
struct Abandon {
    engine: Arc<Engine>,
    child: RunId,
    armed: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (engine, child) = (self.engine.clone(), self.child);
        self.engine.spawn_task(async move {
            if still_active(&engine, child) {
                let why = "the asking agent stopped waiting for the answer: stopped";
                end_run(&engine, child, RunEvent::Fail, why, why).await;
            }
            stop_child(&engine, child).await;
        });
    }
}

/// At start: consultations a stopped engine was running are failed (their
/// askers' calls ended with it), never carried on.
pub(super) fn fail_orphans(engine: &Engine, runs: &[overseer_core::RunView]) {
    for r in runs.iter().filter(|r| r.parent.is_some()) {
        if matches!(
            r.state,
            overseer_core::RunState::Claimed
                | overseer_core::RunState::Running
                | overseer_core::RunState::RetryQueued
        ) {
            let why = "the engine stopped during this consultation; its asker's call ended with it";
            if let Err(e) = engine.transition(r.id, RunEvent::Fail, Some(why), &Actor::Engine) {
                tracing::warn!(run = %r.id, "cannot end an orphaned consultation: {}", e.message);
            }
        }
    }
}

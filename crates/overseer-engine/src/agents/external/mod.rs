//! External sessions: a Claude Code or Codex session in a terminal (through
//! its hooks) or an MCP client running `overseer mcp`. Each is a run of its
//! own origin (a fleet row that appears the first time the session asks);
//! its asks are gates in the same inbox, decided by the same permission
//! rules, "always" answers and supervisor as launched runs.
//!
//! What differs from a launched run, and why:
//! - We did not start the agent and cannot contain it; the one fence we put
//!   up is on the socket: a process the session's agent started may ask, but
//!   a decision from it is refused ([`Engine::external_ancestor`]).
//! - Its working directory is the user's own checkout, so a path outside it
//!   asks instead of being denied (for a launched run, outside means
//!   outside its repository, which is always wrong).
//! - The asker waits on a socket connection. If it goes away (the hook timed
//!   out, the user pressed Esc, the MCP call was cancelled), its gate is
//!   withdrawn after [`REATTACH_GRACE`] unless it asks again with the same
//!   key; after an engine restart the askers have [`RESTART_GRACE`] to come
//!   back for their pending gates.
//!
//! Here: a session's row, the asks' dispatch, gates found again by key and
//! withdrawn when nobody waits. [`asks`]: each kind of ask. [`forms`]: asks
//! in the shapes the inbox and the rules read. [`ancestry`]: who a session's
//! agent is, and who it started.

mod ancestry;
mod asks;
mod forms;
pub(crate) mod sessions;

use crate::supervise::{evaluate_step, permission_for, policy_of, supervisor_pause_options};
use crate::waiting::wait_gate;
use crate::Engine;
use overseer_core::plan::{PlanProposal, PlanSource, PlanStep};
use overseer_core::rules::{self, Permission, ToolRequest};
use overseer_core::session::{
    AskQuestion, NoticeKind, PlanStepInput, PlanVerdict, QuestionAnswer, QuestionsAction,
    StepVerdict, ToolDecision, ToolStage,
};
use overseer_core::supervision::Verdict;
use overseer_core::Activity;
use overseer_core::{
    Actor, AgentToolCall, ApiError, AskKind, ErrorCode, GateBody, GateDecision, GateId, GateOption,
    PlanChoice, QuestionChoice, QuestionGate, ReleaseReason, RunEvent, RunId, RunOrigin, RunState,
    SessionAnswer, SessionAsk, SessionRef, SupervisorPauseChoice, SupervisorPauseGate,
    ToolCallChoice, ToolCallGate,
};
use overseer_store::{GateSpec, NewSession, RunWork};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a gate waits for its asker to come back after the connection
/// dropped (a hook or `overseer mcp` reconnecting) before it is withdrawn.
pub const REATTACH_GRACE: Duration = Duration::from_secs(5);
/// After a restart, how long pending gates of external sessions wait for
/// their askers to ask again.
pub const RESTART_GRACE: Duration = Duration::from_secs(60);
/// The workspace of sessions outside every registered workspace.
pub const EXTERNAL_WORKSPACE: &str = "external";
/// Longest session id accepted.
const MAX_SESSION_ID: usize = 256;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An asker waiting on a gate; when it goes away with the gate still
/// pending, the gate is withdrawn unless someone asks for it again soon.
struct Waiter {
    engine: Arc<Engine>,
    gate: GateId,
}

impl Waiter {
    fn new(engine: &Arc<Engine>, gate: GateId) -> Waiter {
        *lock(&engine.external.waiting).entry(gate).or_default() += 1;
        Waiter {
            engine: engine.clone(),
            gate,
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let left = {
            let mut waiting = lock(&self.engine.external.waiting);
            let n = waiting.entry(self.gate).or_default();
            *n = n.saturating_sub(1);
            let left = *n;
            if left == 0 {
                waiting.remove(&self.gate);
            }
            left
        };
        if left == 0 {
            withdraw_later(&self.engine, self.gate, REATTACH_GRACE);
        }
    }
}

/// Withdraws `gate` after `grace` if it is still pending and nobody waits.
fn withdraw_later(engine: &Arc<Engine>, gate: GateId, grace: Duration) {
    let me = engine.clone();
    engine.spawn_task(async move {
        let engine = me;
        tokio::time::sleep(grace).await;
        if lock(&engine.external.waiting).contains_key(&gate) {
            return;
        }
        engine.withdraw_gate(gate, "the agent stopped waiting for an answer");
    });
}

/// At start: pending gates of external sessions whose askers do not come
/// back within [`RESTART_GRACE`] are withdrawn; a notice (no asker waits on
/// it) stays, and a reply to it is still the session's steering.
pub(crate) fn withdraw_unclaimed_after_restart(engine: &Arc<Engine>) {
    let gates = match engine.store().pending_external_gates() {
        Ok(g) => g,
        Err(e) => {
            tracing::error!("cannot list the pending gates of external sessions: {e}");
            return;
        }
    };
    for gate in gates {
        match engine.gate(gate) {
            Ok(v) if v.ask_kind == overseer_core::AskKind::Info => {
                asks::reply_becomes_steering(engine, gate, v.run_id)
            }
            Ok(_) | Err(_) => withdraw_later(engine, gate, RESTART_GRACE),
        }
    }
}
impl Engine {
    /// Answers one ask of an external session; a blocking ask waits for its
    /// gate's decision. `peer` is the asking process (from the socket).
    pub async fn session_ask(
        self: &Arc<Self>,
        session: SessionRef,
        ask: SessionAsk,
        peer: Option<u32>,
    ) -> Result<SessionAnswer, ApiError> {
        check_session(&session)?;
        if matches!(ask, SessionAsk::Consult { .. }) {
            return Err(consult_outside_a_run());
        }
        let work = match self.session_work(&session, &ask)? {
            Found::Live(work) => work,
            Found::Stopped(run) => return Ok(stopped_answer(run, &ask)),
        };
        if let Some(pid) = peer {
            self.note_external_agent(pid, work.run_id);
        }
        let cwd = self
            .run(work.run_id)?
            .session
            .map(|s| s.cwd)
            .unwrap_or_else(|| session.cwd.to_string_lossy().into_owned());
        self.answer_ask(&work, &cwd, ask).await
    }

    /// An ask of a launched run, from the MCP server its agent started
    /// (through the run's own socket: the run is who asks, whatever the
    /// ask says). A launched agent cannot end its run.
    pub async fn run_ask(
        self: &Arc<Self>,
        run: RunId,
        ask: SessionAsk,
    ) -> Result<SessionAnswer, ApiError> {
        let view = self.run(run)?;
        if view.state.is_released() {
            return Err(ApiError::new(
                ErrorCode::InvalidTransition,
                format!("run {run} is {}; it asks nothing any more", view.state),
            ));
        }
        if matches!(ask, SessionAsk::End) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "a launched agent does not end its run; finish the task and end the turn",
            ));
        }
        if let SessionAsk::Consult {
            profile,
            question,
            timeout_seconds,
        } = ask
        {
            return crate::orchestrator::consult(self, run, profile, question, timeout_seconds)
                .await;
        }
        let work = self.store().run_work(run)?;
        let cwd = work.worktree.clone().unwrap_or_default();
        self.answer_ask(&work, &cwd, ask).await
    }

    /// Answers one ask on `work`'s run; `cwd` is where relative paths start.
    async fn answer_ask(
        self: &Arc<Self>,
        work: &RunWork,
        cwd: &str,
        ask: SessionAsk,
    ) -> Result<SessionAnswer, ApiError> {
        match ask {
            SessionAsk::ToolCall {
                key,
                tool,
                input,
                stage,
            } => {
                self.session_tool_call(work, cwd, key, &tool, input, stage)
                    .await
            }
            SessionAsk::Questions {
                key,
                questions,
                expires_in_seconds,
            } => {
                self.session_questions(work, key, questions, expires_in_seconds)
                    .await
            }
            SessionAsk::Plan {
                key,
                goal,
                steps,
                files,
                risks,
            } => {
                self.session_plan(work, key, goal, steps, files, risks)
                    .await
            }
            SessionAsk::ReportStep {
                key,
                step,
                status,
                summary,
                files_touched,
            } => {
                let step = Activity::StepReported {
                    step,
                    status,
                    summary,
                    files_touched,
                };
                self.session_step(work, key, step).await
            }
            SessionAsk::Notice {
                kind,
                title,
                message,
            } => self.session_notice(work, kind, title, &message),
            SessionAsk::End => self.session_end(work),
            SessionAsk::SendMessage {
                to,
                body,
                correlation_id,
            } => {
                let message =
                    self.agent_message(work.run_id, &work.agent, to, &body, correlation_id)?;
                self.supervisor_reads(work, &message);
                Ok(SessionAnswer::Message { message })
            }
            SessionAsk::ReadMessages { after } => Ok(SessionAnswer::Messages {
                messages: self.agent_inbox(work.run_id, after)?,
            }),
            SessionAsk::Consult { .. } => Err(consult_outside_a_run()),
        }
    }

    /// The run of an external session, opened the first time it asks.
    fn session_work(&self, session: &SessionRef, ask: &SessionAsk) -> Result<Found, ApiError> {
        let existing = self
            .store()
            .session_run(session.origin, &session.session_id)?;
        match existing {
            Some((run, state)) if !state.is_released() => {
                return Ok(Found::Live(Box::new(self.store().run_work(run)?)))
            }
            Some((
                run,
                RunState::Released {
                    reason: ReleaseReason::AbortedByUser,
                },
            )) => return Ok(Found::Stopped(run)),
            Some(_) | None => {}
        }
        if matches!(ask, SessionAsk::End) {
            // Nothing to end: do not open a row just to close it.
            return Err(ApiError::new(
                ErrorCode::NotFound,
                format!("no live session '{}' to end", session.session_id),
            ));
        }
        let now = self.clock.now();
        let cwd = session.cwd.to_string_lossy().into_owned();
        let title = format!("{} in {}", session.origin.label(), shown_path(&session.cwd));
        let agent = session
            .agent
            .clone()
            .filter(|a| !a.trim().is_empty())
            .map(|a| a.chars().take(64).collect())
            .unwrap_or_else(|| default_agent(session.origin).to_owned());
        let actor = Actor::Agent(agent.clone());
        let workspace = workspace_for(&self.store(), &session.cwd);
        let run = self.write(|tx| {
            let workspace_id = match workspace {
                Some(id) => id,
                None => tx.ensure_workspace(EXTERNAL_WORKSPACE, "", &actor, now)?,
            };
            let (_, run) = tx.open_session_run(
                &NewSession {
                    workspace_id,
                    origin: session.origin,
                    session_id: &session.session_id,
                    cwd: &cwd,
                    agent: &agent,
                    title: &title,
                },
                &actor,
                now,
            )?;
            Ok(run)
        })?;
        self.record_activity_or_warn(
            run,
            Activity::SessionStarted {
                text: format!(
                    "{} reached Overseer from {cwd} (session {})",
                    session.origin.label(),
                    session.session_id
                ),
            },
        );
        Ok(Found::Live(Box::new(self.store().run_work(run)?)))
    }

    /// A gate the asker opened before with this key, if any.
    fn gate_of_key(&self, run: RunId, key: Option<&str>) -> Result<Option<GateId>, ApiError> {
        match key {
            Some(k) => Ok(self.store().gate_by_ask_key(run, k)?),
            None => Ok(None),
        }
    }

    /// Opens (or finds again by its key) the gate of an ask, and waits for
    /// its decision while the asker is connected.
    async fn ask_gate(
        self: &Arc<Self>,
        work: &RunWork,
        mut spec: GateSpec,
        key: Option<String>,
    ) -> Result<GateDecision, ApiError> {
        let gate = match self.gate_of_key(work.run_id, key.as_deref())? {
            Some(g) => g,
            None => {
                spec.ask_key = key;
                self.open_gate_supervised(work, spec, &Actor::Agent(work.agent.clone()))?
            }
        };
        let _waiter = Waiter::new(self, gate);
        wait_gate(self, gate).await
    }
}

enum Found {
    Live(Box<RunWork>),
    /// The user stopped this session in Overseer.
    Stopped(RunId),
}

/// What a session the user stopped hears: its tool calls are refused.
fn stopped_answer(run: RunId, ask: &SessionAsk) -> SessionAnswer {
    let why = format!(
        "the user stopped this session in Overseer (run {run}); stop working and tell the user"
    );
    match ask {
        SessionAsk::ToolCall { .. } => SessionAnswer::Tool {
            decision: ToolDecision::Deny,
            reason: Some(why),
        },
        SessionAsk::Questions { .. } => SessionAnswer::Questions {
            action: QuestionsAction::Cancelled,
            answers: Vec::new(),
        },
        SessionAsk::Plan { .. } => SessionAnswer::Plan {
            verdict: PlanVerdict::Rejected { reason: Some(why) },
        },
        SessionAsk::ReportStep { .. } => SessionAnswer::Step {
            verdict: StepVerdict::Pause { reason: why },
        },
        SessionAsk::Notice { .. }
        | SessionAsk::End
        | SessionAsk::SendMessage { .. }
        | SessionAsk::ReadMessages { .. }
        | SessionAsk::Consult { .. } => SessionAnswer::Noted {
            run,
            steering: None,
        },
    }
}

/// `consult` asked by anything but a run Overseer launched, through that
/// run's own MCP server.
fn consult_outside_a_run() -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        "consult is only for agents Overseer launched: it runs a read-only child of the asking run on          a snapshot of that run's worktree, and this session is not tied to a run Overseer launched.          Ask the other agent yourself, or start the task in Overseer",
    )
}

fn check_session(s: &SessionRef) -> Result<(), ApiError> {
    let bad = |m: String| Err(ApiError::new(ErrorCode::InvalidInput, m));
    if !s.origin.is_external() {
        return bad(
            "a session ask comes from an agent outside Overseer: origin claude_code, codex or mcp"
                .into(),
        );
    }
    let id = s.session_id.trim();
    if id.is_empty() || id.len() > MAX_SESSION_ID || id.chars().any(char::is_control) {
        return bad(format!(
            "a session id must be 1 to {MAX_SESSION_ID} printable characters"
        ));
    }
    if !s.cwd.is_absolute() {
        return bad(format!(
            "the session's working directory must be absolute, not '{}'",
            s.cwd.display()
        ));
    }
    Ok(())
}

fn default_agent(origin: RunOrigin) -> &'static str {
    match origin {
        RunOrigin::Launched => "agent",
        RunOrigin::ClaudeCode => "claude-code",
        RunOrigin::Codex => "codex",
        RunOrigin::Mcp => "mcp",
    }
}

/// `~/proj` for a path under the user's home, else the path.
fn shown_path(p: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME") {
        if let Ok(rest) = p.strip_prefix(&home) {
            return format!("~/{}", rest.display());
        }
    }
    p.display().to_string()
}

/// The registered workspace holding `cwd` (the deepest one), if any.
fn workspace_for(store: &overseer_store::Store, cwd: &Path) -> Option<i64> {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    store
        .workspaces()
        .ok()?
        .into_iter()
        .filter(|w| !w.path.is_empty())
        .filter_map(|w| {
            let root = std::fs::canonicalize(&w.path).ok()?;
            cwd.starts_with(&root)
                .then(|| (root.components().count(), w.id))
        })
        .max()
        .map(|(_, id)| id)
}

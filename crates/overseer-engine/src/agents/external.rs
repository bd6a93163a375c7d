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

use crate::api::Request;
use crate::orchestrator::wait_gate;
use crate::supervise::{evaluate_step, permission_for, policy_of, supervisor_pause_options};
use crate::Engine;
use overseer_core::plan::{PlanProposal, PlanSource, PlanStep};
use overseer_core::rules::{self, Permission, RuleSet, ToolRequest};
use overseer_core::session::{
    AskQuestion, NoticeKind, PlanStepInput, PlanVerdict, QuestionAnswer, QuestionsAction,
    StepVerdict, ToolDecision, ToolStage,
};
use overseer_core::supervision::Verdict;
use overseer_core::{
    Actor, ApiError, EngineEvent, ErrorCode, GateDecision, GateId, GateKind, GateOption,
    PlanChoice, QuestionChoice, ReleaseReason, RunEvent, RunId, RunOrigin, RunState, SessionAnswer,
    SessionAsk, SessionRef, SupervisorPauseChoice, ToolCallChoice,
};
use overseer_store::{GateSpec, NewSession, RunWork};
use serde_json::{json, Value};
use std::collections::HashMap;
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

/// What the engine keeps in memory about external sessions.
#[derive(Default)]
pub(crate) struct Sessions {
    /// The agent process of each session, by pid: (its start time, the run).
    agents: Mutex<HashMap<u32, (u64, RunId)>>,
    /// Rules the user's "always" answers added, per session.
    rules: Mutex<HashMap<RunId, RuleSet>>,
    /// How many askers wait on each gate right now.
    waiting: Mutex<HashMap<GateId, usize>>,
}

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
    let Some(rt) = engine
        .runtime
        .get()
        .cloned()
        .or_else(|| tokio::runtime::Handle::try_current().ok())
    else {
        return;
    };
    let engine = engine.clone();
    rt.spawn(async move {
        tokio::time::sleep(grace).await;
        if lock(&engine.external.waiting).contains_key(&gate) {
            return;
        }
        engine.withdraw_gate(gate, "the agent stopped waiting for an answer");
    });
}

/// At start: pending gates of external sessions whose askers do not come
/// back within [`RESTART_GRACE`] are withdrawn.
pub(crate) fn withdraw_unclaimed_after_restart(engine: &Arc<Engine>) {
    let gates = match engine.store().pending_external_gates() {
        Ok(g) => g,
        Err(e) => {
            tracing::error!("cannot list the pending gates of external sessions: {e}");
            return;
        }
    };
    for gate in gates {
        withdraw_later(engine, gate, RESTART_GRACE);
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
    pub(crate) async fn run_ask(
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
            SessionAsk::Questions { key, questions } => {
                self.session_questions(work, key, questions).await
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
                let step = json!({
                    "step": step, "status": status, "summary": summary, "files_touched": files_touched,
                });
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
            } => Ok(SessionAnswer::Message {
                message: self.agent_message(work.run_id, &work.agent, to, &body, correlation_id)?,
            }),
            SessionAsk::ReadMessages { after } => Ok(SessionAnswer::Messages {
                messages: self.agent_inbox(work.run_id, after)?,
            }),
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
        let (run, view) = {
            let mut store = self.store();
            let workspace = workspace_for(&store, &session.cwd);
            let run = store.write(|tx| {
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
            let view = store.run(run)?;
            (run, view)
        };
        self.publish(vec![EngineEvent::RunChanged { run: view }]);
        let _ = self.record_activity(
            run,
            "session_started",
            json!({ "text": format!("{} reached Overseer from {cwd} (session {})", session.origin.label(), session.session_id) }),
        );
        Ok(Found::Live(Box::new(self.store().run_work(run)?)))
    }

    /// Remembers the agent of a session (the asker's parent, past a shell),
    /// so that processes it starts cannot decide.
    fn note_external_agent(&self, asker: u32, run: RunId) {
        let Some(stat) = proc_stat(asker) else { return };
        let mut pid = stat.ppid;
        // Hooks run through `sh -c`: the agent is that shell's parent. An
        // interactive shell (no `-c`) is where a user typed the command by
        // hand: no agent to remember (the user's next command there decides).
        for _ in 0..3 {
            match proc_stat(pid) {
                Some(p) if is_shell(&p.comm) && runs_a_command(pid) && p.ppid > 1 => pid = p.ppid,
                Some(p) if is_shell(&p.comm) => return,
                Some(_) | None => break,
            }
        }
        if pid <= 1 {
            return;
        }
        if let Some(p) = proc_stat(pid) {
            let mut agents = lock(&self.external.agents);
            agents.retain(|pid, (start, _)| proc_stat(*pid).is_some_and(|p| p.start == *start));
            agents.insert(pid, (p.start, run));
        }
    }

    /// The external session whose agent started `pid` (directly or not).
    pub(crate) fn external_ancestor(&self, pid: u32) -> Option<RunId> {
        let agents = lock(&self.external.agents).clone();
        if agents.is_empty() {
            return None;
        }
        let mut cur = proc_stat(pid)?.ppid;
        for _ in 0..128 {
            if cur <= 1 {
                return None;
            }
            let stat = proc_stat(cur)?;
            if let Some((start, run)) = agents.get(&cur) {
                if *start == stat.start {
                    return Some(*run);
                }
            }
            cur = stat.ppid;
        }
        None
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

    async fn session_tool_call(
        self: &Arc<Self>,
        work: &RunWork,
        cwd: &str,
        key: Option<String>,
        tool: &str,
        input: Value,
        stage: ToolStage,
    ) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        let req = hook_tool_request(tool, &input, cwd);
        let title = tool_title(tool, &req);
        let source = Some(format!("tool_call:{}", key.as_deref().unwrap_or(tool)));
        // Asked again (a reconnect): the same gate, not the rules again.
        if let Some(gate) = self.gate_of_key(run, key.as_deref())? {
            let _waiter = Waiter::new(self, gate);
            let d = wait_gate(self, gate).await?;
            return Ok(self.tool_answer(work, cwd, &req, &title, d));
        }
        let run_rules = lock(&self.external.rules)
            .get(&run)
            .cloned()
            .unwrap_or_default();
        let permission = match permission_for(work, &run_rules, &req, cwd, false) {
            // The user's own checkout: a path outside it is a question for
            // the user, not a violation of a run's confinement.
            Permission::Deny { rule, reason } if rule == rules::CONFINEMENT => Permission::Ask {
                reason,
                always_gated: None,
                rule: Some(rule),
            },
            other => other,
        };
        match permission {
            Permission::Allow { rule } => {
                self.record_rule_allow(run, &title, &req, &rule, source)?;
                let decision = match stage {
                    // Before the tool runs: the agent's own permission
                    // system goes on (a stricter rule of its own still holds).
                    ToolStage::PreToolUse => ToolDecision::Pass,
                    ToolStage::PermissionRequest => ToolDecision::Allow,
                };
                Ok(SessionAnswer::Tool {
                    decision,
                    reason: Some(format!("allowed by the rule {rule}")),
                })
            }
            Permission::Deny { rule, reason } => {
                self.record_rule_deny(run, &title, &req, &rule, &reason, source);
                Ok(SessionAnswer::Tool {
                    decision: ToolDecision::Deny,
                    reason: Some(format!("Overseer: {reason} ({rule})")),
                })
            }
            Permission::Ask {
                reason,
                always_gated,
                rule,
            } => {
                let mut options = vec![GateOption::choice(ToolCallChoice::Yes, "Yes")];
                if always_gated.is_none() && rule.as_deref() != Some(rules::CONFINEMENT) {
                    options.push(GateOption::choice(
                        ToolCallChoice::Always,
                        "Always for this session",
                    ));
                }
                options.push(GateOption::choice(ToolCallChoice::No, "No"));
                let mut spec = GateSpec::new(run, GateKind::ToolCall, &title, options);
                spec.payload = json!({
                    "tool_call": { "id": key, "title": title, "kind": req.kind, "raw_input": input, "name": tool },
                    "request": req,
                    "reason": reason,
                    "rule": rule,
                    "always_gated": always_gated.map(|g| g.as_str()),
                    "always_gated_why": always_gated.map(|g| g.describe()),
                    "agent_options": [],
                    "ask_kind": "blocking",
                });
                let d = self.ask_gate(work, spec, key).await?;
                Ok(self.tool_answer(work, cwd, &req, &title, d))
            }
        }
    }

    /// A tool-call gate's decision as the agent's answer.
    fn tool_answer(
        &self,
        work: &RunWork,
        cwd: &str,
        req: &ToolRequest,
        title: &str,
        d: GateDecision,
    ) -> SessionAnswer {
        let allow = SessionAnswer::Tool {
            decision: ToolDecision::Allow,
            reason: Some(format!("allowed in Overseer by {}", d.actor)),
        };
        match d.choice::<ToolCallChoice>() {
            Ok(ToolCallChoice::Yes) => allow,
            Ok(ToolCallChoice::Always) => {
                let added = rules::always_rule(req, cwd);
                let _ = self.record_activity(
                    work.run_id,
                    "rule_added",
                    json!({ "text": format!("allow {added} for the rest of this session") }),
                );
                lock(&self.external.rules)
                    .entry(work.run_id)
                    .or_default()
                    .allow
                    .push(added);
                allow
            }
            Ok(ToolCallChoice::No) | Err(_) => {
                let why = d
                    .context
                    .filter(|c| !c.trim().is_empty())
                    .unwrap_or_else(|| "no reason given".to_owned());
                SessionAnswer::Tool {
                    decision: ToolDecision::Deny,
                    reason: Some(format!(
                        "{title}: refused in Overseer by {}: {why}",
                        d.actor
                    )),
                }
            }
        }
    }

    async fn session_questions(
        self: &Arc<Self>,
        work: &RunWork,
        key: Option<String>,
        questions: Vec<AskQuestion>,
    ) -> Result<SessionAnswer, ApiError> {
        check_questions(&questions)?;
        let schema = question_schema(&questions);
        let title = match questions.as_slice() {
            [one] => one.question.clone(),
            many => format!("{} questions: {}", many.len(), many[0].question),
        };
        let mut spec = GateSpec::new(
            work.run_id,
            GateKind::Question,
            &title,
            vec![
                GateOption::choice(QuestionChoice::Answer, "Answer").with_required_context(),
                GateOption::choice(QuestionChoice::Decline, "Decline"),
            ],
        );
        spec.payload = json!({
            "message": title,
            "schema": schema,
            "questions": questions,
            "ask_kind": "blocking",
        });
        let d = self.ask_gate(work, spec, key).await?;
        Ok(match d.choice::<QuestionChoice>() {
            Ok(QuestionChoice::Answer) => SessionAnswer::Questions {
                action: QuestionsAction::Answered,
                answers: answers_of(&questions, d.context.as_deref().unwrap_or_default()),
            },
            Ok(QuestionChoice::Decline) => SessionAnswer::Questions {
                action: QuestionsAction::Declined,
                answers: Vec::new(),
            },
            Ok(QuestionChoice::Default) | Err(_) => SessionAnswer::Questions {
                action: QuestionsAction::Cancelled,
                answers: Vec::new(),
            },
        })
    }

    async fn session_plan(
        self: &Arc<Self>,
        work: &RunWork,
        key: Option<String>,
        goal: String,
        steps: Vec<PlanStepInput>,
        files: Vec<String>,
        risks: Vec<String>,
    ) -> Result<SessionAnswer, ApiError> {
        if goal.trim().is_empty() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "a plan needs a goal: say in one line what the work achieves",
            ));
        }
        let plan = PlanProposal {
            goal,
            steps: steps
                .into_iter()
                .map(|s| PlanStep {
                    title: s.title,
                    agent: s.agent,
                })
                .collect(),
            files,
            risks,
            markdown: None,
            source: PlanSource::Requested,
        };
        if self.gate_of_key(work.run_id, key.as_deref())?.is_none() {
            let _ = self.record_activity(work.run_id, "plan_proposed", json!(plan));
        }
        let mut spec = GateSpec::new(
            work.run_id,
            GateKind::Plan,
            &format!("Approve the plan: {}", plan.goal),
            vec![
                GateOption::choice(PlanChoice::Approve, "Approve"),
                GateOption::choice(PlanChoice::RequestChanges, "Request changes")
                    .with_required_context(),
                GateOption::choice(PlanChoice::Reject, "Reject"),
            ],
        );
        spec.payload = json!(plan);
        let d = self.ask_gate(work, spec, key).await?;
        let context = d.context.clone().filter(|c| !c.trim().is_empty());
        let verdict = match d.choice::<PlanChoice>() {
            Ok(PlanChoice::Approve) => PlanVerdict::Approved,
            Ok(PlanChoice::RequestChanges) => PlanVerdict::ChangesRequested {
                feedback: context.unwrap_or_else(|| "no details given".to_owned()),
            },
            Ok(PlanChoice::Reject) | Err(_) => PlanVerdict::Rejected { reason: context },
        };
        Ok(SessionAnswer::Plan { verdict })
    }

    /// A reported step: in the timeline, then weighed by the supervisor when
    /// a policy enables one (a pause asks the user). Steering the user left
    /// for the session comes back as a reorientation.
    async fn session_step(
        self: &Arc<Self>,
        work: &RunWork,
        key: Option<String>,
        step: Value,
    ) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        let reattached = self.gate_of_key(run, key.as_deref())?;
        if reattached.is_none() {
            self.record_activity(run, "step_reported", step.clone())?;
            let steering = self.take_steering(run);
            if !steering.is_empty() {
                return Ok(SessionAnswer::Step {
                    verdict: StepVerdict::Reorient {
                        correction: steering.join("\n\n"),
                    },
                });
            }
            let policy = policy_of(work);
            if !policy.enabled {
                return Ok(SessionAnswer::Step {
                    verdict: StepVerdict::Continue,
                });
            }
            let steps = self
                .activity(run, 0)?
                .iter()
                .filter(|a| a.kind == "step_reported")
                .count();
            let judged = evaluate_step(
                self,
                work,
                &policy,
                step,
                u32::try_from(steps).unwrap_or(u32::MAX),
            )
            .await;
            let why = judged.rationale.clone();
            match judged.verdict {
                Verdict::Continue | Verdict::Approve | Verdict::Advise if !judged.failed => {
                    return Ok(SessionAnswer::Step {
                        verdict: StepVerdict::Continue,
                    })
                }
                Verdict::Reorient if !judged.failed => {
                    return Ok(SessionAnswer::Step {
                        verdict: StepVerdict::Reorient {
                            correction: judged.correction.unwrap_or(why),
                        },
                    })
                }
                Verdict::Continue
                | Verdict::Approve
                | Verdict::Advise
                | Verdict::Reorient
                | Verdict::Pause
                | Verdict::Reject
                | Verdict::Escalate => {}
            }
            let mut spec = GateSpec::new(
                run,
                GateKind::SupervisorPause,
                &format!("The supervisor paused the session: {}", first_line(&why)),
                supervisor_pause_options(),
            );
            spec.payload = json!({ "rationale": why, "ask_kind": "blocking" });
            let d = self.ask_gate(work, spec, key).await?;
            return Ok(step_answer(d));
        }
        let gate = reattached.ok_or_else(|| ApiError::new(ErrorCode::Internal, "no gate"))?;
        let _waiter = Waiter::new(self, gate);
        Ok(step_answer(wait_gate(self, gate).await?))
    }

    /// Something the agent tells the user: in the timeline, and an `info`
    /// item in the inbox whose reply (if any) steers the session.
    fn session_notice(
        self: &Arc<Self>,
        work: &RunWork,
        kind: NoticeKind,
        title: Option<String>,
        message: &str,
    ) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        let label = match kind {
            NoticeKind::Notification => "notice",
            NoticeKind::Stop => "turn_ended",
        };
        self.record_activity(run, label, json!({ "text": message, "title": title }))?;
        if kind == NoticeKind::Stop {
            let steering = self.take_steering(run);
            if !steering.is_empty() {
                let text = steering.join("\n\n");
                let _ = self.record_activity(run, "steering_delivered", json!({ "text": text }));
                return Ok(SessionAnswer::Noted {
                    run,
                    steering: Some(text),
                });
            }
        }
        // One info item per session: a newer notice replaces the older.
        for g in self.gates(true)? {
            if g.run_id == run && g.payload["ask_kind"] == "info" {
                self.withdraw_gate(g.id, "a newer notice from the same session replaced it");
            }
        }
        let title = title
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| match kind {
                NoticeKind::Notification => first_line(message),
                NoticeKind::Stop => format!("{} finished its turn", work.agent),
            });
        let mut spec = GateSpec::new(
            run,
            GateKind::Question,
            &title,
            vec![
                GateOption::choice(QuestionChoice::Answer, "Reply").with_required_context(),
                GateOption::choice(QuestionChoice::Decline, "Dismiss"),
            ],
        );
        spec.payload = json!({ "message": message, "ask_kind": "info", "notice": kind });
        let gate = self.open_gate_spec(&spec, &Actor::Agent(work.agent.clone()))?;
        // A reply is steering for the session's next stop or step.
        let engine = self.clone();
        let spawned = self
            .runtime
            .get()
            .cloned()
            .or_else(|| tokio::runtime::Handle::try_current().ok());
        if let Some(rt) = spawned {
            rt.spawn(async move {
                let Ok(d) = wait_gate(&engine, gate).await else {
                    return;
                };
                if let (Ok(QuestionChoice::Answer), Some(text)) = (
                    d.choice::<QuestionChoice>(),
                    d.context.filter(|c| !c.trim().is_empty()),
                ) {
                    // The decision names who replied; the reply becomes
                    // steering as theirs.
                    if let Err(e) = engine.queue_steering(run, &text, &d.actor) {
                        tracing::error!(
                            run,
                            "a reply could not be kept as steering: {}",
                            e.message
                        );
                    }
                }
            });
        }
        Ok(SessionAnswer::Noted {
            run,
            steering: None,
        })
    }

    fn session_end(&self, work: &RunWork) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        self.transition(run, RunEvent::End, None, &Actor::Agent(work.agent.clone()))?;
        lock(&self.external.rules).remove(&run);
        Ok(SessionAnswer::Noted {
            run,
            steering: None,
        })
    }

    /// Decides a pending gate nobody waits for any more with its kind's
    /// declining choice, as the engine. A gate decided meanwhile is left.
    pub(crate) fn withdraw_gate(&self, gate: GateId, why: &str) {
        let Ok(view) = self.gate(gate) else { return };
        if view.decision.is_some() {
            return;
        }
        let choice = view.kind.decline_choice();
        match self.decide_gate(gate, choice.as_str(), Some(why), &Actor::Engine) {
            Ok(_) => {
                let _ = self.record_activity(
                    view.run_id,
                    "gate_withdrawn",
                    json!({ "text": format!("{}: withdrawn ({why})", view.title) }),
                );
            }
            Err(e) => tracing::debug!(gate, "not withdrawn: {}", e.message),
        }
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
        | SessionAsk::ReadMessages { .. } => SessionAnswer::Noted {
            run,
            steering: None,
        },
    }
}

fn step_answer(d: GateDecision) -> SessionAnswer {
    let context = d.context.clone().filter(|c| !c.trim().is_empty());
    let verdict = match d.choice::<SupervisorPauseChoice>() {
        Ok(SupervisorPauseChoice::Proceed) => StepVerdict::Continue,
        Ok(SupervisorPauseChoice::Modify) => StepVerdict::Reorient {
            correction: context.unwrap_or_else(|| "no details given".to_owned()),
        },
        Ok(SupervisorPauseChoice::Abort) | Err(_) => StepVerdict::Pause {
            reason: context.unwrap_or_else(|| format!("{} said stop", d.actor)),
        },
    };
    SessionAnswer::Step { verdict }
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

fn check_questions(questions: &[AskQuestion]) -> Result<(), ApiError> {
    let bad = |m: String| Err(ApiError::new(ErrorCode::InvalidInput, m));
    if questions.is_empty() || questions.len() > 8 {
        return bad("ask between 1 and 8 questions at a time".into());
    }
    for (i, q) in questions.iter().enumerate() {
        if q.question.trim().is_empty() {
            return bad(format!("question {} has no text", i + 1));
        }
        if q.header.chars().count() > 30 {
            return bad(format!(
                "question {}'s header '{}' is longer than 30 characters: shorten it",
                i + 1,
                q.header
            ));
        }
        if q.options.is_empty() && !q.custom {
            return bad(format!(
                "question {} has no options and no free-text answer: give options or allow custom",
                i + 1
            ));
        }
    }
    Ok(())
}

/// The questions as the form the inbox renders (the shape Claude's
/// elicitation uses): `question_N` with its options, `question_N_custom`.
pub(crate) fn question_schema(questions: &[AskQuestion]) -> Value {
    let mut props = serde_json::Map::new();
    for (i, q) in questions.iter().enumerate() {
        let choices: Vec<Value> = q
            .options
            .iter()
            .map(|o| json!({ "const": o.label, "title": o.label, "description": o.description }))
            .collect();
        if !choices.is_empty() {
            let field = if q.multiple {
                json!({ "type": "array", "title": q.header, "description": q.question, "items": { "anyOf": choices } })
            } else {
                json!({ "type": "string", "title": q.header, "description": q.question, "oneOf": choices })
            };
            props.insert(format!("question_{i}"), field);
        }
        if q.custom || choices.is_empty() {
            let (title, description) = if choices.is_empty() {
                (q.header.clone(), q.question.clone())
            } else {
                ("Other".to_owned(), "Your own answer (optional)".to_owned())
            };
            props.insert(
                format!("question_{i}_custom"),
                json!({ "type": "string", "title": title, "description": description }),
            );
        }
    }
    json!({ "type": "object", "properties": props })
}

/// The form content (or plain text) an answer carried, per question.
pub(crate) fn answers_of(questions: &[AskQuestion], context: &str) -> Vec<QuestionAnswer> {
    let content = serde_json::from_str::<Value>(context)
        .ok()
        .filter(Value::is_object);
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let (selected, custom) = match &content {
                Some(c) => {
                    let selected = match &c[format!("question_{i}")] {
                        Value::String(s) => vec![s.clone()],
                        Value::Array(a) => a
                            .iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect(),
                        _ => Vec::new(),
                    };
                    // Only labels the question offered count as chosen.
                    let selected = selected
                        .into_iter()
                        .filter(|s| q.options.iter().any(|o| &o.label == s))
                        .collect();
                    let custom = c[format!("question_{i}_custom")]
                        .as_str()
                        .filter(|s| !s.trim().is_empty())
                        .map(str::to_owned);
                    (selected, custom)
                }
                // Plain text answers the first question.
                None if i == 0 && !context.trim().is_empty() => {
                    (Vec::new(), Some(context.trim().to_owned()))
                }
                None => (Vec::new(), None),
            };
            QuestionAnswer {
                header: q.header.clone(),
                question: q.question.clone(),
                selected,
                custom,
            }
        })
        .collect()
}

/// What the permission rules see of a hook's tool call. The tool name is
/// the agent's own (Claude Code's names are the rules' names).
pub(crate) fn hook_tool_request(tool: &str, input: &Value, cwd: &str) -> ToolRequest {
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| input.get(*n).and_then(Value::as_str).map(str::to_owned))
    };
    let kind = match tool {
        "Bash" | "BashOutput" | "KillShell" | "KillBash" | "shell" | "exec_command"
        | "local_shell" => "execute",
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" | "apply_patch" => "edit",
        "Read" | "NotebookRead" | "LS" => "read",
        "Glob" | "Grep" => "search",
        "WebFetch" | "WebSearch" => "fetch",
        "TodoWrite" | "Task" | "Agent" | "ExitPlanMode" | "EnterPlanMode" | "ListAgents"
        | "ToolSearch" => "think",
        _ => "other",
    }
    .to_owned();
    let command = field(&["command", "cmd"]).or_else(|| {
        input.get("command").and_then(Value::as_array).map(|argv| {
            argv.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
    });
    let mut paths = Vec::new();
    if let Some(p) = field(&["file_path", "path", "notebook_path"]) {
        paths.push(p);
    }
    // Codex's apply_patch names its files inside the patch text.
    if tool == "apply_patch" {
        let patch = command.clone().or_else(|| field(&["input", "patch"]));
        for line in patch.as_deref().unwrap_or_default().lines() {
            let named = [
                "*** Update File: ",
                "*** Add File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|p| line.strip_prefix(p));
            if let Some(p) = named.map(str::trim).filter(|p| !p.is_empty()) {
                if !paths.iter().any(|q| q == p) {
                    paths.push(p.to_owned());
                }
            }
        }
    }
    let resolved = match std::fs::canonicalize(cwd) {
        Ok(root) => paths
            .iter()
            .map(|p| crate::acp::resolve_for_rules(&root, p))
            .collect(),
        Err(_) => Vec::new(),
    };
    let (tool, command) = match tool {
        "shell" | "exec_command" | "local_shell" => ("Bash", command),
        // A patch is an edit of the files it names, not a command.
        "apply_patch" => ("Edit", None),
        other => (other, command),
    };
    ToolRequest {
        tool: tool.to_owned(),
        kind,
        command,
        paths,
        resolved,
    }
}

fn tool_title(tool: &str, req: &ToolRequest) -> String {
    let detail = req
        .command
        .clone()
        .or_else(|| req.paths.first().cloned())
        .unwrap_or_default();
    let detail = first_line(&detail);
    if detail.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool}: {detail}")
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default().trim();
    if line.chars().count() > 120 {
        let cut: String = line.chars().take(119).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
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

struct ProcStat {
    ppid: u32,
    start: u64,
    comm: String,
}

/// A process's parent, start time and command name, from /proc/PID/stat.
fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcStat {
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        comm,
    })
}

/// Whether the process's arguments include `-c` (a shell running one command).
fn runs_a_command(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.split(|b| *b == 0).any(|arg| arg == b"-c"))
        .unwrap_or(false)
}

fn is_shell(comm: &str) -> bool {
    matches!(comm, "sh" | "bash" | "dash" | "zsh" | "fish" | "ksh")
}

/// Whether `request` decides or changes anything (as opposed to reading or
/// asking): what a process an external agent started may not send.
pub(crate) fn is_decision(request: &Request) -> bool {
    match request {
        Request::Ping
        | Request::ListRuns
        | Request::ShowRun { .. }
        | Request::ListGates { .. }
        | Request::ShowGate { .. }
        | Request::Subscribe
        | Request::ListWorkspaces
        | Request::RunActivity { .. }
        | Request::RunDiff { .. }
        | Request::GateStory { .. }
        | Request::RunStory { .. }
        | Request::ShowTask { .. }
        | Request::SupervisorStatus { .. }
        | Request::Notifications
        | Request::Agents
        | Request::ListMessages { .. }
        | Request::Session { .. } => false,
        Request::ApproveRun { .. }
        | Request::RejectRun { .. }
        | Request::AbortRun { .. }
        | Request::SeedDemo { .. }
        | Request::AddWorkspace { .. }
        | Request::SetWorkspaceChecks { .. }
        | Request::StartTask(_)
        | Request::DecideGate { .. }
        | Request::CleanRun { .. }
        | Request::ResumeRun { .. }
        | Request::HoldGate { .. }
        | Request::SteerRun { .. }
        | Request::SupervisorVote { .. }
        | Request::SetSupervisor { .. }
        | Request::SetPermissions { .. }
        | Request::SetNotifications { .. }
        | Request::SendMessage { .. } => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_core::session::AskOption;

    fn q(header: &str, options: &[&str], multiple: bool) -> AskQuestion {
        AskQuestion {
            header: header.into(),
            question: format!("{header}?"),
            options: options
                .iter()
                .map(|l| AskOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multiple,
            custom: true,
        }
    }

    #[test]
    fn a_form_answer_comes_back_per_question_with_only_offered_labels() {
        let qs = [
            q("Tone", &["Formal", "Friendly"], false),
            q("Parts", &["Install", "Usage"], true),
        ];
        let schema = question_schema(&qs);
        assert_eq!(
            schema["properties"]["question_0"]["oneOf"][1]["const"],
            "Friendly"
        );
        assert_eq!(schema["properties"]["question_1"]["type"], "array");
        let answers = answers_of(
            &qs,
            r#"{"question_0": "Friendly", "question_1": ["Usage", "Injected"], "question_1_custom": "a FAQ"}"#,
        );
        assert_eq!(answers[0].selected, vec!["Friendly"]);
        assert_eq!(
            answers[1].selected,
            vec!["Usage"],
            "a label nobody offered is not an answer"
        );
        assert_eq!(answers[1].custom.as_deref(), Some("a FAQ"));
        let plain = answers_of(&qs, "just do it");
        assert_eq!(plain[0].custom.as_deref(), Some("just do it"));
    }

    #[test]
    fn hook_tool_calls_read_as_the_rules_see_them() {
        let r = hook_tool_request("Bash", &json!({"command": "rm -rf build"}), "/nonexistent");
        assert_eq!(
            (r.kind.as_str(), r.command.as_deref()),
            ("execute", Some("rm -rf build"))
        );
        let r = hook_tool_request(
            "Write",
            &json!({"file_path": "/p/a.txt", "content": "x"}),
            "/p",
        );
        assert_eq!(
            (r.kind.as_str(), r.paths.clone()),
            ("edit", vec!["/p/a.txt".to_owned()])
        );
        let r = hook_tool_request("mcp__db__drop", &json!({}), "/p");
        assert_eq!(
            (r.tool.as_str(), r.kind.as_str()),
            ("mcp__db__drop", "other")
        );
        let r = hook_tool_request("exec_command", &json!({"cmd": "ls"}), "/p");
        assert_eq!(
            (r.tool.as_str(), r.command.as_deref()),
            ("Bash", Some("ls"))
        );
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: docs/new.md\n+hi\n*** End Patch";
        let r = hook_tool_request("apply_patch", &json!({"command": patch}), "/p");
        assert_eq!(r.tool, "Edit", "a patch is an edit for the rules");
        assert_eq!(
            r.paths,
            vec!["src/a.rs".to_owned(), "docs/new.md".to_owned()]
        );
    }

    #[test]
    fn questions_are_checked_before_anyone_is_asked() {
        assert!(check_questions(&[]).is_err());
        let long = q(
            "a header that is far longer than thirty characters",
            &["x"],
            false,
        );
        assert!(check_questions(&[long])
            .expect_err("too long")
            .message
            .contains("shorten"));
        let mut closed = q("Pick", &[], false);
        closed.custom = false;
        assert!(check_questions(&[closed]).is_err());
        assert!(check_questions(&[q("Pick", &["a"], false)]).is_ok());
    }
}

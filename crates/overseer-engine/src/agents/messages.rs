//! Agent-to-agent messages, hub and spoke: an agent addresses the
//! supervisor, the user or a broadcast; the user (or the supervisor)
//! replies to a run. Every message is stored with its audit record, shown in
//! the timelines of the runs it concerns and pushed as `message_posted`; one
//! an agent addressed to a peer is held back (`agent_message_blocked`).

use crate::{Engine, NotificationKind};
use overseer_core::activity::{Activity, MessageEntry};
use overseer_core::message::{MessageStatus, MessageTo, MessageView};
use overseer_core::supervision::{Subject, SupervisorPolicy, Verdict};
use overseer_core::{Actor, ApiError, ErrorCode, RunId};
use overseer_evaluate::{evaluate_with_timeout, EvaluationRequest};
use overseer_store::{DecisionInput, NewMessage, RunWork};
use std::sync::Arc;
use std::time::Duration;

/// Longest message body accepted.
pub const MAX_BODY: usize = 32 * 1024;
/// Most messages one read returns.
const READ_LIMIT: usize = 500;
/// Longest correlation id accepted.
const MAX_CORRELATION: usize = 200;

/// Why the hub holds back a message from an agent, if it does.
pub fn hold_back(from_run: RunId, to: &MessageTo) -> Option<String> {
    match *to {
        MessageTo::Run { run } if run == from_run => {
            Some("an agent cannot send a message to itself".to_owned())
        }
        MessageTo::Run { run } => Some(format!(
            "agents talk through the hub, never to a peer directly: address the supervisor, the user or a broadcast, not run {run}"
        )),
        MessageTo::Supervisor
        | MessageTo::User
        | MessageTo::Broadcast
        | MessageTo::Workspace { .. }
        | MessageTo::Task { .. } => None,
    }
}

/// Where an agent's message goes, sent from `from` (its run): an agent talks
/// within its workspace (issue 37, item 11). Its broadcast is scoped to its
/// run's workspace, so it is stored and audited as such; a broadcast to its
/// own workspace or its own task goes as addressed; one to another
/// workspace or task is held back, with why (one project's agent never puts
/// text into another project's prompts). Everything else goes as addressed
/// (to a peer it is then held back by [`hold_back`]).
pub fn scope_of_agent(from: &overseer_core::RunView, to: MessageTo) -> (MessageTo, Option<String>) {
    let own = || MessageTo::Workspace {
        workspace: from.workspace.clone(),
    };
    match to {
        MessageTo::Broadcast => (own(), None),
        MessageTo::Workspace { workspace } if workspace == from.workspace => (own(), None),
        MessageTo::Task { task } if task == from.task_id => (MessageTo::Task { task }, None),
        MessageTo::Workspace { workspace } => {
            let why = format!(
                "an agent's broadcast reaches the runs of its own workspace ({}) only, not workspace {workspace}: the user may broadcast anywhere",
                from.workspace
            );
            (MessageTo::Workspace { workspace }, Some(why))
        }
        MessageTo::Task { task } => {
            let why = format!(
                "an agent's broadcast reaches the runs of its own workspace ({}) or task ({}) only, not task {task}: the user may broadcast anywhere",
                from.workspace, from.task_id
            );
            (MessageTo::Task { task }, Some(why))
        }
        to @ (MessageTo::Supervisor | MessageTo::User | MessageTo::Run { .. }) => (to, None),
    }
}

fn check(body: &str, correlation_id: Option<&str>) -> Result<(), ApiError> {
    let bad = |m: String| Err(ApiError::new(ErrorCode::InvalidInput, m));
    if body.trim().is_empty() {
        return bad("a message needs a body: say something".into());
    }
    if body.len() > MAX_BODY {
        return bad(format!(
            "a message is at most {MAX_BODY} bytes; this one is {}: send less, or a path to a file",
            body.len()
        ));
    }
    if let Some(c) = correlation_id {
        if c.is_empty() || c.len() > MAX_CORRELATION || c.chars().any(char::is_control) {
            return bad(format!(
                "a correlation id is 1 to {MAX_CORRELATION} printable characters"
            ));
        }
    }
    Ok(())
}

impl Engine {
    /// Messages after `after`, oldest first: all, or those of one run.
    pub fn messages(
        &self,
        run: Option<RunId>,
        after: Option<i64>,
    ) -> Result<Vec<MessageView>, ApiError> {
        if let Some(run) = run {
            self.run(run)?;
        }
        Ok(self.store().messages(run, after, READ_LIMIT)?)
    }

    /// A message from the user (or the supervisor): to a run, or a
    /// broadcast to every run, or to every run of a workspace or a task.
    pub fn send_message(
        &self,
        mut to: MessageTo,
        body: &str,
        correlation_id: Option<String>,
        actor: &Actor,
    ) -> Result<MessageView, ApiError> {
        check(body, correlation_id.as_deref())?;
        match &to.clone() {
            MessageTo::Run { run } => {
                let run = *run;
                let view = self.run(run)?;
                if view.state.is_released() {
                    return Err(ApiError::new(
                        ErrorCode::InvalidTransition,
                        format!(
                            "run {run} is {}; only a live run reads messages",
                            view.state
                        ),
                    ));
                }
            }
            MessageTo::Broadcast => {}
            MessageTo::Workspace { workspace } => {
                // By its name, whatever named it (a name or an id).
                let name = self.store().workspace(workspace)?.name;
                to = MessageTo::Workspace { workspace: name };
            }
            MessageTo::Task { task } => {
                self.task(*task)?;
            }
            MessageTo::Supervisor | MessageTo::User => {
                return Err(ApiError::new(
                    ErrorCode::InvalidInput,
                    "from here a message goes to a run (--run N), to every run (--broadcast), or to every run of a workspace (--workspace W) or a task (--task T)",
                ))
            }
        }
        self.post(
            &NewMessage {
                from_run: None,
                to,
                body,
                correlation_id: correlation_id.as_deref(),
                blocked: None,
            },
            actor,
        )
    }

    /// A message from an agent's session (`send_message`).
    pub(crate) fn agent_message(
        &self,
        run: RunId,
        agent: &str,
        to: MessageTo,
        body: &str,
        correlation_id: Option<String>,
    ) -> Result<MessageView, ApiError> {
        check(body, correlation_id.as_deref())?;
        self.flood_use(run, crate::flood::Use::Message)?;
        let (to, out_of_scope) = scope_of_agent(&self.run(run)?, to);
        if let (MessageTo::Task { task }, Some(_)) = (&to, &out_of_scope) {
            // Held back or not, a task that does not exist is an error.
            self.task(*task)?;
        }
        let blocked = hold_back(run, &to).or(out_of_scope);
        let message = self.post(
            &NewMessage {
                from_run: Some(run),
                to,
                body,
                correlation_id: correlation_id.as_deref(),
                blocked: blocked.as_deref(),
            },
            &Actor::Agent(agent.to_owned()),
        )?;
        if let Some(why) = &blocked {
            self.notify_user(
                NotificationKind::AgentMessageBlocked,
                run,
                format!("Run {run}: a message was held back"),
                why.clone(),
            );
        }
        Ok(message)
    }

    /// What an agent's session reads (`read_messages`): messages addressed
    /// to it and delivered broadcasts from others, after `after`.
    pub(crate) fn agent_inbox(
        &self,
        run: RunId,
        after: Option<i64>,
    ) -> Result<Vec<MessageView>, ApiError> {
        Ok(self
            .store()
            .messages(Some(run), after, READ_LIMIT)?
            .into_iter()
            .filter(|m| m.from_run != Some(run) && m.status == MessageStatus::Delivered)
            .collect())
    }

    fn post(&self, m: &NewMessage<'_>, actor: &Actor) -> Result<MessageView, ApiError> {
        let now = self.clock.now();
        let message = self.write(|tx| tx.insert_message(m, actor, now))?;
        let entry = MessageEntry {
            text: message.body.clone(),
            to: message.to.clone(),
            from: message.from.clone(),
            status: message.status,
            blocked_reason: message.blocked_reason.clone(),
            correlation_id: message.correlation_id.clone(),
            message_id: message.id,
        };
        if let Some(run) = message.from_run {
            self.record_activity_or_warn(run, Activity::MessageSent(entry.clone()));
        }
        if let (MessageTo::Run { run }, MessageStatus::Delivered) = (&message.to, message.status) {
            self.record_activity_or_warn(*run, Activity::MessageReceived(entry));
        }
        Ok(message)
    }
}

/// What the supervisor made of a message an agent sent it.
enum Reading {
    /// Its answer for the agent, sent as this supervisor.
    Answer(String, Actor),
    /// A human must answer: why.
    Escalate(String),
    /// Taken note of; nothing to say.
    Noted,
}

impl Engine {
    /// A message `work`'s agent sent the supervisor, read by the supervisor
    /// of its run's policy (when one is enabled), in the background: its
    /// answer goes back to the agent as a message (advice, never a
    /// permission), or it is handed to the user with a notification. Every
    /// reading is recorded as the supervisor's decision on the run
    /// (`message:<id>`); one that cannot be recorded is handed to the user.
    pub(crate) fn supervisor_reads(self: &Arc<Self>, work: &RunWork, message: &MessageView) {
        if message.to != MessageTo::Supervisor || message.status != MessageStatus::Delivered {
            return;
        }
        let policy = crate::supervise::policy_of(work);
        if !policy.enabled {
            return;
        }
        let engine = self.clone();
        let message = message.clone();
        let run = work.run_id;
        self.spawn_cancellable(async move {
            let reading = engine.read_for_supervisor(run, &policy, &message).await;
            engine.act_on_reading(run, &message, reading);
        });
    }

    async fn read_for_supervisor(
        &self,
        run: RunId,
        policy: &SupervisorPolicy,
        message: &MessageView,
    ) -> Reading {
        let view = match self.run(run) {
            Ok(v) => v,
            Err(e) => return Reading::Escalate(e.message),
        };
        let req = EvaluationRequest {
            subject: Subject::Message,
            run: view,
            gate: None,
            step: None,
            message: Some(message.clone()),
            policy: policy.clone(),
            allowed_verdicts: Verdict::ALL
                .into_iter()
                .filter(|v| v.fits(Subject::Message))
                .collect(),
        };
        let ev = crate::supervise::evaluator(policy, &self.config.supervision, || {
            self.evaluator_launcher(run)
        });
        let actor = Actor::Supervisor(ev.id());
        let timeout = Duration::from_secs(policy.timeout_seconds.max(1));
        let (input, reading) = match evaluate_with_timeout(&*ev, &req, timeout).await {
            Ok(out) => {
                let answer = out
                    .correction
                    .clone()
                    .filter(|c| !c.trim().is_empty())
                    .unwrap_or_else(|| out.rationale.clone());
                let reading = match out.verdict {
                    Verdict::Advise if check(&answer, None).is_ok() => {
                        Reading::Answer(answer, actor.clone())
                    }
                    Verdict::Advise => Reading::Escalate(
                        "the supervisor advised with no answer a message can carry".to_owned(),
                    ),
                    Verdict::Escalate => Reading::Escalate(out.rationale.clone()),
                    Verdict::Continue => Reading::Noted,
                    // Refused as unfit before it gets here; never an answer.
                    Verdict::Approve | Verdict::Reject | Verdict::Reorient | Verdict::Pause => {
                        Reading::Escalate(format!("the supervisor answered {:?}", out.verdict))
                    }
                };
                let input = DecisionInput {
                    verdict: Some(out.verdict),
                    rationale: Some(out.rationale),
                    correction: out.correction,
                    rule_ref: out.rule_ref,
                    model_id: out.model_id,
                    prompt_version: out.prompt_version,
                    confidence: out.confidence,
                    ..DecisionInput::default()
                };
                (input, reading)
            }
            Err(e) => {
                let why = e.to_string();
                let input = DecisionInput {
                    verdict: Some(Verdict::Escalate),
                    rationale: Some(why.clone()),
                    ..DecisionInput::default()
                };
                (input, Reading::Escalate(why))
            }
        };
        let input = DecisionInput {
            source_event: Some(format!("message:{}", message.id)),
            ..input
        };
        match self.note_decision(run, None, &actor, &input) {
            Ok(_) => reading,
            // No answer without its record.
            Err(e) => Reading::Escalate(format!(
                "the supervisor's reading could not be recorded ({}), so it is not sent",
                e.message
            )),
        }
    }

    fn act_on_reading(&self, run: RunId, message: &MessageView, reading: Reading) {
        let asked = crate::work::first_line(&message.body, 80);
        match reading {
            Reading::Answer(answer, supervisor) => {
                let reply = self.post(
                    &NewMessage {
                        from_run: None,
                        to: MessageTo::Run { run },
                        body: &answer,
                        correlation_id: message.correlation_id.as_deref(),
                        blocked: None,
                    },
                    &supervisor,
                );
                if let Err(e) = reply {
                    self.notify_user(
                        NotificationKind::SupervisorEscalated,
                        run,
                        format!("Run {run} asked the supervisor: {asked}"),
                        format!(
                            "Its answer could not be sent ({}); answer it yourself.",
                            e.message
                        ),
                    );
                }
            }
            Reading::Escalate(why) => self.notify_user(
                NotificationKind::SupervisorEscalated,
                run,
                format!("Run {run} asked the supervisor: {asked}"),
                format!("The supervisor hands it to you: {why}"),
            ),
            Reading::Noted => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hub_holds_back_what_an_agent_addresses_to_a_peer() {
        assert!(hold_back(
            overseer_core::RunId(3),
            &MessageTo::Run {
                run: overseer_core::RunId(4)
            }
        )
        .is_some());
        assert!(hold_back(
            overseer_core::RunId(3),
            &MessageTo::Run {
                run: overseer_core::RunId(3)
            }
        )
        .is_some());
        for to in [MessageTo::Supervisor, MessageTo::User, MessageTo::Broadcast] {
            assert_eq!(hold_back(overseer_core::RunId(3), &to), None);
        }
    }

    #[test]
    fn empty_huge_or_odd_messages_are_refused_with_what_to_do() {
        assert!(check("  ", None).is_err());
        let huge = "x".repeat(MAX_BODY + 1);
        assert!(check(&huge, None)
            .expect_err("too big")
            .message
            .contains("send less"));
        assert!(check("hi", Some("a\nb")).is_err());
        assert!(check("hi", Some("req-1")).is_ok());
    }
}

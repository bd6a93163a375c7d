//! Agent-to-agent messages, hub and spoke: an agent addresses the
//! supervisor, the user or a broadcast; the user (or the supervisor)
//! replies to a run. Every message is stored with its audit record, shown in
//! the timelines of the runs it concerns and pushed as `message_posted`; one
//! an agent addressed to a peer is held back (`agent_message_blocked`).

use crate::{Engine, NotificationKind};
use overseer_core::activity::{Activity, MessageEntry};
use overseer_core::message::{MessageStatus, MessageTo, MessageView};
use overseer_core::{Actor, ApiError, ErrorCode, RunId};
use overseer_store::NewMessage;

/// Longest message body accepted.
pub const MAX_BODY: usize = 32 * 1024;
/// Most messages one read returns.
const READ_LIMIT: usize = 500;
/// Longest correlation id accepted.
const MAX_CORRELATION: usize = 200;

/// Why the hub holds back a message from an agent, if it does.
pub fn hold_back(from_run: RunId, to: MessageTo) -> Option<String> {
    match to {
        MessageTo::Run { run } if run == from_run => {
            Some("an agent cannot send a message to itself".to_owned())
        }
        MessageTo::Run { run } => Some(format!(
            "agents talk through the hub, never to a peer directly: address the supervisor, the user or a broadcast, not run {run}"
        )),
        MessageTo::Supervisor | MessageTo::User | MessageTo::Broadcast => None,
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
    /// broadcast to every run.
    pub fn send_message(
        &self,
        to: MessageTo,
        body: &str,
        correlation_id: Option<String>,
        actor: &Actor,
    ) -> Result<MessageView, ApiError> {
        check(body, correlation_id.as_deref())?;
        match to {
            MessageTo::Run { run } => {
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
            MessageTo::Supervisor | MessageTo::User => {
                return Err(ApiError::new(
                    ErrorCode::InvalidInput,
                    "from here a message goes to a run (--run N) or to every run (--broadcast)",
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
        let blocked = hold_back(run, to);
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
            to: message.to,
            from: message.from.clone(),
            status: message.status,
            blocked_reason: message.blocked_reason.clone(),
            correlation_id: message.correlation_id.clone(),
            message_id: message.id,
        };
        if let Some(run) = message.from_run {
            self.record_activity_or_warn(run, Activity::MessageSent(entry.clone()));
        }
        if let (MessageTo::Run { run }, MessageStatus::Delivered) = (message.to, message.status) {
            self.record_activity_or_warn(run, Activity::MessageReceived(entry));
        }
        Ok(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hub_holds_back_what_an_agent_addresses_to_a_peer() {
        assert!(hold_back(
            overseer_core::RunId(3),
            MessageTo::Run {
                run: overseer_core::RunId(4)
            }
        )
        .is_some());
        assert!(hold_back(
            overseer_core::RunId(3),
            MessageTo::Run {
                run: overseer_core::RunId(3)
            }
        )
        .is_some());
        for to in [MessageTo::Supervisor, MessageTo::User, MessageTo::Broadcast] {
            assert_eq!(hold_back(overseer_core::RunId(3), to), None);
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

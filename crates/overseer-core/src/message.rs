//! Agent-to-agent messages, hub and spoke (seed `002-shep-collaboration-fabric`):
//! an agent addresses the supervisor, the user or a broadcast, never a peer
//! directly; the hub (Overseer) stores every message, shows it in the run's
//! timeline, and holds back what the policy does not allow.

use crate::{Millis, RunId};
use serde::{Deserialize, Serialize};

/// Whom a message is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum MessageTo {
    Supervisor,
    User,
    /// Every run (what each reads with `read_messages`).
    Broadcast,
    /// A broadcast to every run of one workspace (by its name).
    Workspace {
        workspace: String,
    },
    /// A broadcast to every run of one task.
    Task {
        task: crate::TaskId,
    },
    /// One run. From an agent this is a peer and is always held back; from
    /// the user or the supervisor it is a reply to that run.
    Run {
        run: RunId,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Delivered,
    /// The policy held it back (`agent_message_blocked`).
    Blocked,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct MessageView {
    pub id: i64,
    /// The run that sent it (None: the user or the supervisor).
    pub from_run: Option<RunId>,
    /// Who sent it, as an actor string (`agent:claude`, `user:app`, `supervisor`).
    pub from: String,
    pub to: MessageTo,
    /// Untrusted text when an agent wrote it.
    pub body: String,
    pub correlation_id: Option<String>,
    pub status: MessageStatus,
    /// Why the policy held it back.
    pub blocked_reason: Option<String>,
    pub at: Millis,
}

//! The driver's vocabulary: what it reports of an agent ([`AgentSignal`]),
//! the answers it carries back, and its errors. Nothing here acts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// The largest file the driver reads for an agent.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// Why a turn ended (`session/prompt`'s `stopReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

/// Something the agent said or asked, in the order it arrived.
#[derive(Debug)]
pub enum AgentSignal {
    /// A chunk of the agent's message (`agent_message_chunk`, text only).
    Message { text: String },
    /// A chunk of the agent's reasoning (`agent_thought_chunk`).
    Thought { text: String },
    /// The agent's progress list; each one replaces the previous.
    Plan { entries: Vec<PlanEntry> },
    /// The current state of one tool call, merged from every `tool_call` and
    /// `tool_call_update` with its id. Replace the previous state by id.
    ToolCall(ToolCallInfo),
    /// The agent asks before running a tool. Answer on `reply`; dropping it,
    /// or cancelling the turn, answers `cancelled`.
    Permission {
        tool_call: ToolCallInfo,
        options: Vec<PermissionChoice>,
        reply: oneshot::Sender<PermissionReply>,
    },
    /// The agent asks the user to fill in a form (`elicitation/create`, form
    /// mode). `schema` is the requested JSON schema: a flat object of string,
    /// number, integer, boolean, enum and multi-select fields.
    Question {
        message: String,
        schema: serde_json::Value,
        reply: oneshot::Sender<QuestionReply>,
    },
    /// The driver read a file for the agent; `path` is relative to the worktree.
    FileRead { path: PathBuf },
    /// The driver wrote a file for the agent; `path` is relative to the worktree.
    FileWritten { path: PathBuf, bytes: usize },
    /// A file request the driver refused (outside the worktree, into `.git`,
    /// through a symlink that leaves it). The agent got a JSON-RPC error.
    FileRefused { path: String, reason: String },
    /// The agent sent something that is not valid ACP; it was skipped or
    /// answered with an error, and the connection goes on.
    ProtocolError { detail: String },
    /// The agent reports its session mode. `breach` says why the run does not
    /// allow it (the driver already refuses writes and cancels asks).
    ModeChanged {
        mode: String,
        breach: Option<String>,
    },
    /// The agent carried out a tool call that changes something without
    /// asking, and the run's judge ([`AgentConnection::watch_unasked`]) says
    /// the rules would not have allowed it. The driver already refuses the
    /// agent's writes and cancels its asks from here on.
    Unasked {
        tool_call: ToolCallInfo,
        why: String,
    },
    /// The agent's context and cumulative cost (`usage_update`), as sent:
    /// unchecked figures, the engine decides what to keep.
    Usage {
        used: u64,
        size: u64,
        /// The session's cumulative cost and its currency, when reported.
        cost: Option<(f64, String)>,
    },
    /// Every signal sent before this one has been handled: answer it.
    Settled(oneshot::Sender<()>),
}

/// Judges, at the wire, a tool call the agent reports carried out
/// (`in_progress`, `completed`) with no permission request for it, of a kind
/// that changes something (edit, delete, move, execute): `Some(why)` when
/// the run's rules would not have allowed it on their own (see
/// `overseer_core::unasked`). The driver calls it for no other call.
pub type UnaskedJudge = Arc<dyn Fn(&ToolCallInfo) -> Option<String> + Send + Sync>;

/// One session mode the agent offers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModeInfo {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
}

/// One entry of the agent's progress list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlanEntry {
    pub content: String,
    /// `high`, `medium` or `low`.
    pub priority: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// A tool call as the agent described it so far.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct ToolCallInfo {
    pub id: String,
    pub title: Option<String>,
    pub kind: Option<overseer_core::ToolKind>,
    pub status: Option<overseer_core::ToolCallStatus>,
    pub raw_input: Option<serde_json::Value>,
    /// Files the call touches, as the agent named them.
    pub locations: Vec<PathBuf>,
    /// The text content the agent attached (an exit-plan request's plan).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The agent's own tool name when it says it (claude-agent-acp:
    /// `_meta.claudeCode.toolName`, e.g. `mcp__overseer__ask_user`), so rules
    /// on tool names (`mcp__server__tool`) can match. Untrusted, like all of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The agent asked before it (a `session/request_permission` for this
    /// id arrived), or holds an "always" answer Overseer gave for its kind.
    /// A call that changes something and was never asked for is judged by
    /// `overseer_core::unasked`.
    #[serde(skip)]
    pub asked: bool,
}

/// One answer the agent offers to a permission request. Choose by `kind`:
/// option ids differ between agents.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PermissionChoice {
    pub option_id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// The answer to [`AgentSignal::Permission`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionReply {
    Selected { option_id: String },
    Cancelled,
}

/// The answer to [`AgentSignal::Question`].
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionReply {
    /// `content` is an object with one value per answered field.
    Accept {
        content: serde_json::Value,
    },
    Decline,
    Cancel,
}

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("the run's worktree {path} cannot be used ({source}); check that it exists")]
    Worktree {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the agent did not finish the ACP handshake within {0:?}; check that the command starts an ACP agent and look at its stderr")]
    HandshakeTimeout(Duration),
    #[error("the agent chose ACP protocol version {0}, but Overseer speaks version 1; use an agent or adapter that supports ACP v1")]
    UnsupportedProtocol(String),
    #[error("the agent answered `{method}` with an error: {message} (JSON-RPC {code})")]
    Agent {
        method: &'static str,
        code: i32,
        message: String,
    },
    #[error("the agent closed its output during `{method}`: it exited or crashed. Look at its stderr, then start the run again")]
    AgentExited { method: &'static str },
    #[error("the connection to the agent ended during `{method}` ({detail}); look at the agent's stderr, then start the run again")]
    ConnectionLost {
        method: &'static str,
        detail: String,
    },
    #[error("the agent offers no mode `{wanted}` (it offers {offered}); set the profile's `mode` to one of them")]
    NoSuchMode { wanted: String, offered: String },
    #[error("the agent accepted mode `{wanted}` but reports `{reported}`; it cannot be supervised this way")]
    ModeNotTaken { wanted: String, reported: String },
}

//! The error codes that cross process and IPC boundaries as `{code, message}`.
//! Clients match on the code, never on the message text.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The run, gate or workspace does not exist.
    NotFound,
    /// The action is not allowed in the current state.
    InvalidTransition,
    /// The gate was already decided; nothing changed.
    AlreadyDecided,
    /// The work cannot be merged as it is (conflict, dirty checkout).
    Conflict,
    /// The request itself is wrong (missing reason, unknown option, ...).
    InvalidInput,
    /// The database could not be read or written (locked, full, newer version).
    Storage,
    /// No engine is reachable (or it has too many connections open).
    EngineUnavailable,
    /// The caller may not ask this: a process inside a run talking to the
    /// engine (a run can ask and report only through its agent's protocol).
    Forbidden,
    /// A bug: something that should not happen did.
    Internal,
}

/// An error as it crosses a boundary: a stable code and a human message that
/// says what went wrong and what to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error, ts_rs::TS)]
#[error("{message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }
}

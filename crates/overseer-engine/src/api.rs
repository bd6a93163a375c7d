//! The local API wire format: one JSON object per line over a Unix socket.
//!
//! Client: `{"id": 7, "method": "approve_run", "params": {"run": 3}}`.
//! Server: `{"id": 7, "result": ...}` or `{"id": 7, "error": {"code", "message"}}`.
//! After `subscribe` is answered, the server pushes `{"event": EngineEvent}` lines.
//! There is no actor field: the server decides who the caller is from the
//! connection itself.

use overseer_core::{ApiError, EngineEvent, GateId, RunId};
use serde::{Deserialize, Serialize};

/// Longest request line the server reads; longer lines are refused.
pub const MAX_LINE: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params", rename_all = "snake_case")]
pub enum Request {
    Ping,
    ListRuns,
    ShowRun {
        run: RunId,
    },
    ApproveRun {
        run: RunId,
    },
    RejectRun {
        run: RunId,
        reason: String,
    },
    AbortRun {
        run: RunId,
    },
    ListGates {
        pending_only: bool,
    },
    ShowGate {
        gate: GateId,
    },
    SeedDemo {
        /// Only runs that wait for review or are released: no fictional
        /// agents in active states for a live orchestrator to find.
        #[serde(default)]
        settled: bool,
    },
    Subscribe,
    AddWorkspace {
        path: std::path::PathBuf,
        name: Option<String>,
        #[serde(default)]
        settings: overseer_store::WorkspaceSettings,
    },
    ListWorkspaces,
    StartTask(crate::TaskStart),
    DecideGate {
        gate: GateId,
        option: String,
        context: Option<String>,
    },
    CleanRun {
        run: RunId,
    },
    ResumeRun {
        run: RunId,
    },
    RunActivity {
        run: RunId,
        after: i64,
    },
    RunDiff {
        run: RunId,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    pub id: u64,
    #[serde(flatten)]
    pub request: Request,
}

/// One line from the server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ServerLine {
    Result {
        id: Option<u64>,
        result: serde_json::Value,
    },
    Error {
        id: Option<u64>,
        error: ApiError,
    },
    Event {
        event: EngineEvent,
    },
}

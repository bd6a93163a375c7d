//! External sessions: a Claude Code or Codex session in a terminal (through
//! its hooks) or an MCP client running `overseer mcp`. Each is a run whose
//! asks are gates, decided by the same rules, "always" answers and
//! supervisor as launched runs.

use crate::api::Request;
use crate::Engine;
use overseer_core::{ApiError, ErrorCode, RunId, SessionAnswer, SessionAsk, SessionRef};
use std::sync::Arc;

impl Engine {
    /// Answers one ask of an external session; a blocking ask waits for its
    /// gate's decision. `peer` is the asking process (from the socket).
    pub async fn session_ask(
        self: &Arc<Self>,
        session: SessionRef,
        ask: SessionAsk,
        peer: Option<u32>,
    ) -> Result<SessionAnswer, ApiError> {
        let _ = (session, ask, peer);
        Err(ApiError::new(
            ErrorCode::Internal,
            "external sessions are being built",
        ))
    }

    /// The external session whose agent started `pid` (directly or not).
    pub(crate) fn external_ancestor(&self, pid: u32) -> Option<RunId> {
        let _ = pid;
        None
    }
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
        | Request::SupervisorStatus { .. }
        | Request::Notifications
        | Request::Agents
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
        | Request::SetNotifications { .. } => true,
    }
}

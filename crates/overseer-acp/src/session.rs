//! What the orchestrator needs from a run's agent, as traits: starting (or
//! continuing) a session over the agent process's pipes ([`StartSession`])
//! and the live session ([`AgentSession`]). [`AgentConnection`] over ACP is
//! the engine's; tests put a scripted agent in its place
//! ([`Engine::use_agent_sessions`](crate::Engine::use_agent_sessions)), so a
//! run's life is tested without an agent that speaks ACP.
//!
//! The process itself (its worktree, its containment, its log) stays the
//! orchestrator's: a starter only gets its pipes.

use crate::signal::{AgentSignal, DriverError, ModeInfo, StopReason, ToolCallInfo, UnaskedJudge};
use crate::AgentConnection;
use agent_client_protocol::v1::schema::McpServer;
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;

/// A live session with a run's agent. Dropping the last handle closes it
/// (the agent sees its input close); the process is the caller's to stop.
///
/// What the agent reports while it works arrives on the signal receiver its
/// [`StartSession::start`] returned, in order; a consumer answers
/// [`AgentSignal::Settled`] and the asks' reply senders. A session whose
/// agent died still settles: what it sent before is handled all the same.
pub trait AgentSession: Send + Sync + std::fmt::Debug {
    /// The agent's id of the session (kept, so a resumed run continues it).
    fn session_id(&self) -> &str;

    /// True when an earlier session was continued (resume or load).
    fn resumed(&self) -> bool;

    /// The modes the agent offers, if any.
    fn modes(&self) -> &[ModeInfo];

    /// The ids of [`modes`](Self::modes).
    fn mode_ids(&self) -> Vec<String> {
        self.modes().iter().map(|m| m.id.clone()).collect()
    }

    /// The mode the agent last reported (or that Overseer last set).
    fn current_mode(&self) -> Option<String>;

    /// The modes the run allows from now on; the agent reporting any other
    /// is a breach ([`AgentSignal::ModeChanged`]). Empty: no watch.
    fn allow_modes(&self, modes: Vec<String>);

    /// True after the agent switched itself to a mode the run does not
    /// allow, until Overseer sets a mode again.
    fn breached(&self) -> bool;

    /// Puts the session in `mode`, one the agent offers.
    fn set_mode<'a>(&'a self, mode: &'a str) -> BoxFuture<'a, Result<(), DriverError>>;

    /// Refuses (or again serves) the agent's file writes: a planning turn
    /// changes nothing.
    fn set_read_only(&self, read_only: bool);

    /// What is known so far of the tool call `id`.
    fn tool_call(&self, id: &str) -> Option<ToolCallInfo>;

    /// Judges every tool call the agent reports carried out without asking
    /// (see [`AgentConnection::watch_unasked`]). Sessions that report no
    /// tool calls need not.
    fn watch_unasked(&self, _judge: UnaskedJudge) {}

    /// One turn with this text; resolves when the turn ends, with why.
    fn prompt<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<StopReason, DriverError>>;

    /// Cancels the turn: asks still pending, and any before the next
    /// prompt, are answered cancelled; the turn ends `Cancelled`.
    fn cancel(&self) -> BoxFuture<'_, Result<(), DriverError>>;

    /// Waits until every signal sent so far has been handled (the reader
    /// answered [`AgentSignal::Settled`]). Call after a turn ends.
    fn settle(&self) -> BoxFuture<'_, ()>;
}

/// The agent process's pipes, for its session.
pub struct AgentPipes {
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
}

/// How a run's session starts.
#[derive(Debug, Clone)]
pub struct SessionStart {
    /// The run's worktree: the session's working directory.
    pub worktree: PathBuf,
    pub client_name: String,
    /// The session to continue (resume, else load), else a new one.
    pub resume: Option<String>,
    /// MCP servers offered to the session (Overseer's own, bound to the run).
    pub mcp_servers: Vec<McpServer>,
}

/// A session started, with what its agent reports.
pub type StartedSession = (Arc<dyn AgentSession>, mpsc::Receiver<AgentSignal>);

/// Starts a run's agent session over its process's pipes.
pub trait StartSession: Send + Sync {
    fn start(
        &self,
        pipes: AgentPipes,
        session: SessionStart,
    ) -> BoxFuture<'static, Result<StartedSession, DriverError>>;
}

/// Sessions over ACP: [`AgentConnection::start_or_resume`].
#[derive(Debug, Default, Clone, Copy)]
pub struct AcpSessions;

impl StartSession for AcpSessions {
    fn start(
        &self,
        pipes: AgentPipes,
        session: SessionStart,
    ) -> BoxFuture<'static, Result<StartedSession, DriverError>> {
        Box::pin(async move {
            let (conn, signals) = AgentConnection::start_or_resume(
                pipes.stdout,
                pipes.stdin,
                session.worktree,
                &session.client_name,
                session.resume.as_deref(),
                session.mcp_servers,
            )
            .await?;
            Ok((Arc::new(conn) as Arc<dyn AgentSession>, signals))
        })
    }
}

impl AgentSession for AgentConnection {
    fn session_id(&self) -> &str {
        AgentConnection::session_id(self)
    }

    fn resumed(&self) -> bool {
        AgentConnection::resumed(self)
    }

    fn modes(&self) -> &[ModeInfo] {
        AgentConnection::modes(self)
    }

    fn current_mode(&self) -> Option<String> {
        AgentConnection::current_mode(self)
    }

    fn allow_modes(&self, modes: Vec<String>) {
        AgentConnection::allow_modes(self, modes);
    }

    fn breached(&self) -> bool {
        AgentConnection::breached(self)
    }

    fn set_mode<'a>(&'a self, mode: &'a str) -> BoxFuture<'a, Result<(), DriverError>> {
        Box::pin(AgentConnection::set_mode(self, mode))
    }

    fn set_read_only(&self, read_only: bool) {
        AgentConnection::set_read_only(self, read_only);
    }

    fn tool_call(&self, id: &str) -> Option<ToolCallInfo> {
        AgentConnection::tool_call(self, id)
    }

    fn watch_unasked(&self, judge: UnaskedJudge) {
        AgentConnection::watch_unasked(self, judge);
    }

    fn prompt<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<StopReason, DriverError>> {
        Box::pin(AgentConnection::prompt(self, text))
    }

    fn cancel(&self) -> BoxFuture<'_, Result<(), DriverError>> {
        Box::pin(AgentConnection::cancel(self))
    }

    fn settle(&self) -> BoxFuture<'_, ()> {
        Box::pin(AgentConnection::settle(self))
    }
}

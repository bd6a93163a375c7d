//! The ACP client driver: one live Agent Client Protocol (v1) connection to one
//! agent process, with one session in the run's worktree.
//!
//! The driver does not start processes. It is given the agent's stdout and
//! stdin, performs `initialize` and `session/new`, and then turns everything
//! the agent sends into [`AgentSignal`]s on one channel: messages, plans, tool
//! calls (merged by id), files it read or wrote through us, and the two things
//! that need an answer, a [`Permission`](AgentSignal::Permission) request and a
//! [`Question`](AgentSignal::Question) (ACP's form elicitation). Those carry a
//! oneshot sender; the orchestrator answers when a human (or the supervisor)
//! has decided. Nothing here decides anything: without an answer, or when the
//! signal receiver is gone, a permission is answered `cancelled`, never
//! allowed.
//!
//! The driver serves `fs/read_text_file` and `fs/write_text_file` itself,
//! confined to the worktree (see `confine`), so that what an agent edits
//! through the client is seen and bounded. It offers no terminal.
//!
//! Agent output is untrusted: lines that are not JSON-RPC are reported as
//! [`AgentSignal::ProtocolError`] and skipped (see `transport`), never a panic.
//!
//! Session modes are watched here, at the wire: the orchestrator names the
//! modes a run allows ([`AgentConnection::allow_modes`]); when the agent
//! reports any other (`current_mode_update`, or a `config_option_update` of
//! its mode option), the driver at once refuses its file writes and cancels
//! its permission requests, and reports [`AgentSignal::ModeChanged`] with the
//! breach, until Overseer sets a mode again ([`AgentConnection::set_mode`]).
//!
//! Built on the `agent-client-protocol` crate (v5, stable protocol v1). Inside:
//! `serve` answers what the agent sends, `confine` keeps file access in the
//! worktree, and `transport` gates the agent's output. The plan convention
//! lives in core (`overseer_core::plan`). `session` is what the orchestrator
//! needs of an agent, as traits this driver implements.

mod confine;
mod serve;
mod session;
mod signal;
mod transport;

pub use confine::resolve_for_rules;
pub use session::{
    AcpSessions, AgentPipes, AgentSession, SessionStart, StartSession, StartedSession,
};
pub use signal::*;
pub use transport::MAX_LINE_BYTES;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Agent;
use serve::{drive, Shared};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};

/// How many signals may wait unread. The driver waits when the channel is
/// full, so a consumer must keep reading signals while a prompt runs.
const SIGNAL_BUFFER: usize = 256;

/// How long `initialize` plus `session/new` may take. Adapters that wrap a CLI
/// (`npx ...`) can take a while on a cold start; an agent that never answers is
/// usually a command that does not speak ACP at all.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// A live ACP connection to one agent, with one session.
///
/// Dropping it closes the connection (the agent sees its stdin close); the
/// process itself is the caller's to stop.
pub struct AgentConnection {
    cx: ConnectionTo<Agent>,
    shared: Arc<Shared>,
    session_id: acp::SessionId,
    session_id_text: String,
    modes: Vec<ModeInfo>,
    /// The id of the agent's `mode` config option, when it offers one:
    /// modes are then set through `session/set_config_option`.
    mode_option: Option<String>,
    resumed: bool,
    _stop: oneshot::Sender<()>,
}

impl std::fmt::Debug for AgentConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConnection")
            .field("session_id", &self.session_id_text)
            .field("modes", &self.modes)
            .finish_non_exhaustive()
    }
}

impl AgentConnection {
    /// Initialize + session/new (cwd = worktree, absolute) over the given pipes.
    /// Signals from the agent arrive on the returned receiver; keep reading it
    /// while a prompt runs.
    pub async fn start<R, W>(
        stdout_of_agent: R,
        stdin_of_agent: W,
        worktree: PathBuf,
        client_name: &str,
    ) -> Result<(AgentConnection, mpsc::Receiver<AgentSignal>), DriverError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_or_resume(
            stdout_of_agent,
            stdin_of_agent,
            worktree,
            client_name,
            None,
            Vec::new(),
        )
        .await
    }

    /// Like [`start`](Self::start), but continues the session `resume` with
    /// `session/resume` when the agent offers it, else `session/load` (its
    /// replay of the history is not recorded again), falling back to a new
    /// session when it offers neither, or refuses; [`resumed`](Self::resumed)
    /// tells.
    /// `mcp_servers` are offered to the session (Overseer's own, bound to
    /// the run).
    pub async fn start_or_resume<R, W>(
        stdout_of_agent: R,
        stdin_of_agent: W,
        worktree: PathBuf,
        client_name: &str,
        resume: Option<&str>,
        mcp_servers: Vec<acp::McpServer>,
    ) -> Result<(AgentConnection, mpsc::Receiver<AgentSignal>), DriverError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let root =
            tokio::fs::canonicalize(&worktree)
                .await
                .map_err(|source| DriverError::Worktree {
                    path: worktree.clone(),
                    source,
                })?;
        let root_dir = confine::RootDir::open(&root).map_err(|source| DriverError::Worktree {
            path: worktree.clone(),
            source,
        })?;
        let (signals, receiver) = mpsc::channel(SIGNAL_BUFFER);
        let shared = Arc::new(Shared {
            root,
            root_dir: Arc::new(root_dir),
            signals,
            tool_calls: Mutex::new(HashMap::new()),
            session_id: OnceLock::new(),
            cancel: watch::Sender::new(0),
            turn_cancelled: AtomicBool::new(false),
            ended: Mutex::new(None),
            modes: Mutex::new(serve::ModeWatch::default()),
            breached: AtomicBool::new(false),
            read_only: AtomicBool::new(false),
            replaying: AtomicBool::new(false),
            always_kinds: Mutex::new(std::collections::HashSet::new()),
            judge: Mutex::new(None),
            halted: AtomicBool::new(false),
            suspects: Mutex::new(HashMap::new()),
        });
        let transport = transport::lines(stdout_of_agent, stdin_of_agent, shared.signals.clone());
        let (cx_tx, cx_rx) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(drive(
            shared.clone(),
            client_name.to_owned(),
            transport,
            cx_tx,
            stopped,
        ));
        let cx = match cx_rx.await {
            Ok(cx) => cx,
            Err(_) => {
                return Err(DriverError::ConnectionLost {
                    method: "initialize",
                    detail: shared.ended_detail(),
                })
            }
        };

        let handshake = async {
            let capabilities = acp::ClientCapabilities::new()
                .fs(acp::FileSystemCapabilities::new()
                    .read_text_file(true)
                    .write_text_file(true))
                .terminal(false)
                .elicitation(
                    acp::ElicitationCapabilities::new()
                        .form(acp::ElicitationFormCapabilities::new()),
                );
            let init = acp::InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(capabilities)
                .client_info(acp::Implementation::new(
                    client_name,
                    env!("CARGO_PKG_VERSION"),
                ));
            let answer = cx
                .send_request(init)
                .block_task()
                .await
                .map_err(|e| shared.classify("initialize", e))?;
            if answer.protocol_version != ProtocolVersion::V1 {
                return Err(DriverError::UnsupportedProtocol(
                    answer.protocol_version.to_string(),
                ));
            }
            let can_resume = answer
                .agent_capabilities
                .session_capabilities
                .resume
                .is_some();
            if let (Some(id), true) = (resume, can_resume) {
                // A session/update may arrive before the answer: accept it.
                let resumed = cx
                    .send_request(
                        acp::ResumeSessionRequest::new(
                            acp::SessionId::new(id),
                            shared.root.clone(),
                        )
                        .mcp_servers(mcp_servers.clone()),
                    )
                    .block_task()
                    .await;
                match resumed {
                    Ok(r) => return Ok((acp::SessionId::new(id), r.modes, r.config_options, true)),
                    Err(e) => {
                        tracing::warn!(error = %e.message, "session/resume refused; starting a new session");
                    }
                }
            } else if let (Some(id), true) = (resume, answer.agent_capabilities.load_session) {
                // `session/load` replays the history first: the past is
                // already in the timeline, its updates are not recorded.
                shared.replaying.store(true, Ordering::SeqCst);
                let loaded = cx
                    .send_request(
                        acp::LoadSessionRequest::new(acp::SessionId::new(id), shared.root.clone())
                            .mcp_servers(mcp_servers.clone()),
                    )
                    .block_task()
                    .await;
                shared.replaying.store(false, Ordering::SeqCst);
                match loaded {
                    Ok(r) => return Ok((acp::SessionId::new(id), r.modes, r.config_options, true)),
                    Err(e) => {
                        tracing::warn!(error = %e.message, "session/load refused; starting a new session");
                    }
                }
            }
            let session = cx
                .send_request(
                    acp::NewSessionRequest::new(shared.root.clone())
                        .mcp_servers(mcp_servers.clone()),
                )
                .block_task()
                .await
                .map_err(|e| shared.classify("session/new", e))?;
            Ok((
                session.session_id,
                session.modes,
                session.config_options,
                false,
            ))
        };
        let (session_id, mode_state, config_options, resumed) =
            tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
                .await
                .map_err(|_| DriverError::HandshakeTimeout(HANDSHAKE_TIMEOUT))??;

        let session_id_text = session_id.0.to_string();
        let _ = shared.session_id.set(session_id_text.clone());
        let mut modes: Vec<ModeInfo> = mode_state
            .as_ref()
            .map(|m| {
                m.available_modes
                    .iter()
                    .map(|m| ModeInfo {
                        id: m.id.0.to_string(),
                        name: m.name.clone(),
                        description: m.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut current = mode_state.map(|m| m.current_mode_id.0.to_string());
        let mode_option = config_options
            .as_deref()
            .and_then(serve::mode_option)
            .map(|o| {
                if modes.is_empty() {
                    modes = o.values.clone();
                }
                if current.is_none() {
                    current = Some(o.current.clone());
                }
                o.id
            });
        shared.modes_mut().current = current;
        Ok((
            AgentConnection {
                cx,
                shared,
                session_id,
                session_id_text,
                modes,
                mode_option,
                resumed,
                _stop: stop,
            },
            receiver,
        ))
    }

    /// session/prompt with one text block; resolves when the turn ends.
    pub async fn prompt(&self, text: &str) -> Result<StopReason, DriverError> {
        self.shared.turn_cancelled.store(false, Ordering::SeqCst);
        let request = acp::PromptRequest::new(
            self.session_id.clone(),
            vec![acp::ContentBlock::Text(acp::TextContent::new(text))],
        );
        let answer = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| self.shared.classify("session/prompt", e))?;
        match answer.stop_reason {
            acp::StopReason::EndTurn => Ok(StopReason::EndTurn),
            acp::StopReason::MaxTokens => Ok(StopReason::MaxTokens),
            acp::StopReason::MaxTurnRequests => Ok(StopReason::MaxTurnRequests),
            acp::StopReason::Refusal => Ok(StopReason::Refusal),
            acp::StopReason::Cancelled => Ok(StopReason::Cancelled),
            // The schema enum is non-exhaustive; a reason it cannot name
            // fails to parse before it gets here, so this is defensive.
            other => Err(DriverError::Agent {
                method: "session/prompt",
                code: agent_client_protocol::ErrorCode::INVALID_PARAMS.value(),
                message: format!("unknown stop reason {other:?}"),
            }),
        }
    }

    /// session/cancel (a notification). Permission requests and questions
    /// still pending, and any that arrive before the next prompt, are answered
    /// cancelled. The agent then ends the turn with [`StopReason::Cancelled`].
    pub async fn cancel(&self) -> Result<(), DriverError> {
        self.shared.turn_cancelled.store(true, Ordering::SeqCst);
        self.shared.cancel.send_modify(|epoch| *epoch += 1);
        self.cx
            .send_notification(acp::CancelNotification::new(self.session_id.clone()))
            .map_err(|e| self.shared.classify("session/cancel", e))
    }

    pub fn session_id(&self) -> &str {
        &self.session_id_text
    }

    /// True when the session was continued with `session/resume`.
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// The modes the agent offers (`session/new`'s `modes`, or its `mode`
    /// config option), if any.
    pub fn modes(&self) -> &[ModeInfo] {
        &self.modes
    }

    /// The ids of [`modes`](Self::modes).
    pub fn mode_ids(&self) -> Vec<String> {
        self.modes.iter().map(|m| m.id.clone()).collect()
    }

    /// The mode the agent last reported (or that Overseer last set).
    pub fn current_mode(&self) -> Option<String> {
        self.shared.modes_mut().current.clone()
    }

    /// The modes the run allows from now on. The agent reporting any other
    /// is a breach (see the module docs). An empty list switches the watch off.
    pub fn allow_modes(&self, modes: Vec<String>) {
        self.shared.modes_mut().allowed = modes;
    }

    /// Refuses (or again serves) the agent's file writes: a planning turn
    /// changes nothing.
    pub fn set_read_only(&self, read_only: bool) {
        self.shared.read_only.store(read_only, Ordering::SeqCst);
    }

    /// What is known so far of the tool call `id` (merged from every update).
    pub fn tool_call(&self, id: &str) -> Option<ToolCallInfo> {
        self.shared
            .tool_calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// From now on, every tool call the agent reports carried out without
    /// asking is judged by `judge` as it arrives, before the next message
    /// from the agent is handled: on `Some(why)` the driver stops serving
    /// writes and cancels asks for good, and reports
    /// [`AgentSignal::Unasked`].
    pub fn watch_unasked(&self, judge: UnaskedJudge) {
        *self
            .shared
            .judge
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(judge);
    }

    /// True after the agent switched itself to a mode the run does not allow,
    /// until Overseer sets a mode again.
    pub fn breached(&self) -> bool {
        self.shared.breached.load(Ordering::SeqCst)
    }

    /// Puts the session in `mode`: `session/set_config_option` when the agent
    /// offers a mode option (its answer carries the new value, which must be
    /// `mode`), else `session/set_mode`. The mode must be one the agent offers.
    pub async fn set_mode(&self, mode: &str) -> Result<(), DriverError> {
        if !self.modes.iter().any(|m| m.id == mode) {
            return Err(DriverError::NoSuchMode {
                wanted: mode.to_owned(),
                offered: self
                    .modes
                    .iter()
                    .map(|m| format!("`{}`", m.id))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        // The agent may report the new mode before it answers (Claude sends
        // `current_mode_update` first): the mode being set is no breach.
        let allowed_before = {
            let mut watch = self.shared.modes_mut();
            let before = watch.allowed.clone();
            if !watch.allowed.is_empty() && !watch.allowed.iter().any(|m| m == mode) {
                watch.allowed.push(mode.to_owned());
            }
            before
        };
        let result = self.request_mode(mode).await;
        if result.is_err() {
            self.shared.modes_mut().allowed = allowed_before;
        }
        result
    }

    async fn request_mode(&self, mode: &str) -> Result<(), DriverError> {
        match &self.mode_option {
            Some(option) => {
                let answer = self
                    .cx
                    .send_request(acp::SetSessionConfigOptionRequest::new(
                        self.session_id.clone(),
                        option.clone(),
                        acp::SessionConfigOptionValue::value_id(mode.to_owned()),
                    ))
                    .block_task()
                    .await
                    .map_err(|e| self.shared.classify("session/set_config_option", e))?;
                if let Some(now) = serve::mode_option(&answer.config_options) {
                    if now.current != mode {
                        return Err(DriverError::ModeNotTaken {
                            wanted: mode.to_owned(),
                            reported: now.current,
                        });
                    }
                }
            }
            None => {
                self.cx
                    .send_request(acp::SetSessionModeRequest::new(
                        self.session_id.clone(),
                        mode.to_owned(),
                    ))
                    .block_task()
                    .await
                    .map_err(|e| self.shared.classify("session/set_mode", e))?;
            }
        }
        self.shared.modes_mut().current = Some(mode.to_owned());
        self.shared.breached.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Waits until every signal the agent sent so far has been handled by
    /// the receiver's reader (which must answer [`AgentSignal::Settled`]).
    /// Call after a turn ends: the prompt's answer comes after the turn's
    /// updates on the wire, so they are all in the channel before this. A
    /// tool call still suspect (announced running, never asked for) is
    /// confirmed here, before the turn's signals are settled.
    pub async fn settle(&self) {
        // The turn is over: a call still announced as running and never
        // asked for is not waited for any longer.
        self.shared.confirm_suspect(None).await;
        let (done, settled) = oneshot::channel();
        if self
            .shared
            .signals
            .send(AgentSignal::Settled(done))
            .await
            .is_ok()
        {
            let _ = settled.await;
        }
    }
}

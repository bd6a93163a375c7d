//! A scripted agent: an [`AgentSession`] that plays its turns from a script,
//! one turn per prompt, in place of an agent that speaks ACP. The engine
//! still launches the profile's command as the agent's process (contained,
//! in the run's worktree); the script only replaces the session over its
//! pipes. What the agent heard (prompts, answers to its asks) is kept for
//! the tests.

use futures::future::BoxFuture;
use overseer_acp::{
    AgentPipes, AgentSession, AgentSignal, DriverError, ModeInfo, PermissionChoice,
    PermissionReply, QuestionReply, SessionStart, StartSession, StartedSession, StopReason,
    ToolCallInfo,
};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// A world (see `common::world_with`) whose `scripted` agent is a real
/// process (`sleep`) whose session is `script`'s; `extra_config` goes into
/// overseer.toml before the agent's table.
pub async fn scripted_world(
    settings: overseer_store::WorkspaceSettings,
    extra_config: &str,
    script: &Arc<Script>,
) -> crate::common::World {
    scripted_world_telling(
        settings,
        extra_config,
        script,
        Arc::new(overseer_engine::LogNotifier),
    )
    .await
}

/// [`scripted_world`] whose engine tells `notifier`.
pub async fn scripted_world_telling(
    settings: overseer_store::WorkspaceSettings,
    extra_config: &str,
    script: &Arc<Script>,
    notifier: Arc<dyn overseer_engine::Notifier>,
) -> crate::common::World {
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("sleep");
    let w = crate::common::world_with(
        settings,
        notifier,
        &format!(
            "{extra_config}\n[agents.scripted]\ncommand = {sleep:?}\nargs = [\"600\"]\nmode = \"default\"\n"
        ),
    )
    .await;
    w.engine
        .use_agent_sessions(Arc::new(Scripted(script.clone())));
    w
}

/// One thing the agent does during a turn, in order.
#[derive(Debug, Clone)]
pub enum Act {
    /// A chunk of its message.
    Say(String),
    /// Writes a file in the worktree through the client (refused while the
    /// session is read-only), like `fs/write_text_file`.
    Write { path: String, text: String },
    /// Asks before a tool call, and waits for the answer.
    Ask(ToolCallInfo),
    /// Asks the user to fill in a form (an elicitation), and waits.
    Question {
        message: String,
        schema: serde_json::Value,
    },
    /// Reports how one of its tool calls ended (`tool_call_update` with
    /// `completed` or `failed`), as agents do after running it.
    ToolEnded { id: String, ok: bool },
    /// The session dies: the turn fails as when the agent exits mid-turn,
    /// and nothing more arrives from it.
    Die,
}

/// A tool call the agent asks about (pending), as ACP describes it.
pub fn call(id: &str, kind: &str, title: &str, raw_input: serde_json::Value) -> ToolCallInfo {
    ToolCallInfo {
        id: id.to_owned(),
        title: Some(title.to_owned()),
        kind: Some(kind.into()),
        status: Some(overseer_core::ToolCallStatus::Pending),
        raw_input: Some(raw_input),
        ..Default::default()
    }
}

/// One turn: what the agent does, then how the turn ends.
#[derive(Debug, Clone)]
pub struct Turn {
    pub acts: Vec<Act>,
    pub end: StopReason,
}

impl Turn {
    pub fn new(acts: Vec<Act>) -> Turn {
        Turn {
            acts,
            end: StopReason::EndTurn,
        }
    }
}

/// The script, and what the agent heard.
#[derive(Debug, Default)]
pub struct Script {
    turns: Mutex<VecDeque<Turn>>,
    /// Every prompt, in order.
    pub prompts: Mutex<Vec<String>>,
    /// Every answer to an [`Act::Ask`], by tool call id.
    pub answers: Mutex<Vec<(String, PermissionReply)>>,
    /// Every answer to an [`Act::Question`], in order.
    pub replies: Mutex<Vec<QuestionReply>>,
    /// Sessions started (a resumed run starts another).
    pub sessions: Mutex<Vec<SessionStart>>,
    /// The agent can continue an earlier session (ACP's `session/resume`).
    pub resumes: AtomicBool,
    /// Sessions the engine let go of (dropped): once a run is over, nothing
    /// of its agent's session may stay in memory.
    pub dropped: std::sync::atomic::AtomicUsize,
}

impl Script {
    pub fn new(turns: Vec<Turn>) -> Arc<Script> {
        Arc::new(Script {
            turns: Mutex::new(turns.into()),
            ..Script::default()
        })
    }

    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().expect("prompts").clone()
    }

    pub fn sessions(&self) -> Vec<SessionStart> {
        self.sessions.lock().expect("sessions").clone()
    }

    pub fn answers(&self) -> Vec<(String, PermissionReply)> {
        self.answers.lock().expect("answers").clone()
    }

    pub fn replies(&self) -> Vec<QuestionReply> {
        self.replies.lock().expect("replies").clone()
    }
}

/// Starts scripted sessions: put it in the engine with
/// `engine.use_agent_sessions(Arc::new(Scripted(script)))`.
pub struct Scripted(pub Arc<Script>);

impl StartSession for Scripted {
    fn start(
        &self,
        pipes: AgentPipes,
        session: SessionStart,
    ) -> BoxFuture<'static, Result<StartedSession, DriverError>> {
        let script = self.0.clone();
        Box::pin(async move {
            let n = {
                let mut started = script.sessions.lock().expect("sessions");
                started.push(session.clone());
                started.len()
            };
            let resumed = session
                .resume
                .clone()
                .filter(|_| script.resumes.load(Ordering::SeqCst));
            let (signals, receiver) = mpsc::channel(256);
            let session: Arc<dyn AgentSession> = Arc::new(ScriptedSession {
                script,
                resumed: resumed.is_some(),
                id: resumed.unwrap_or_else(|| format!("scripted-{n}")),
                worktree: session.worktree,
                modes: vec![ModeInfo {
                    id: "default".into(),
                    name: "Default".into(),
                    description: Some("asks before acting".into()),
                }],
                current: Mutex::new(Some("default".into())),
                allowed: Mutex::new(Vec::new()),
                read_only: AtomicBool::new(false),
                cancelled: AtomicBool::new(false),
                tool_calls: Mutex::new(HashMap::new()),
                signals,
                dead: AtomicBool::new(false),
                _pipes: pipes,
            });
            Ok((session, receiver))
        })
    }
}

impl Drop for ScriptedSession {
    fn drop(&mut self) {
        self.script.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

struct ScriptedSession {
    script: Arc<Script>,
    id: String,
    resumed: bool,
    worktree: PathBuf,
    modes: Vec<ModeInfo>,
    current: Mutex<Option<String>>,
    allowed: Mutex<Vec<String>>,
    read_only: AtomicBool,
    cancelled: AtomicBool,
    tool_calls: Mutex<HashMap<String, ToolCallInfo>>,
    signals: mpsc::Sender<AgentSignal>,
    /// Set when the session died: no turn, no signal from the agent after.
    dead: AtomicBool,
    /// Kept open while the session lives, as a real connection does.
    _pipes: AgentPipes,
}

impl std::fmt::Debug for ScriptedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedSession")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

fn exited() -> DriverError {
    DriverError::AgentExited {
        method: "session/prompt",
    }
}

impl ScriptedSession {
    async fn send(&self, signal: AgentSignal) -> Result<(), DriverError> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(exited());
        }
        self.signals.send(signal).await.map_err(|_| exited())
    }

    async fn act(&self, act: Act) -> Result<(), DriverError> {
        match act {
            Act::Say(text) => self.send(AgentSignal::Message { text }).await,
            Act::Write { path, text } => {
                if self.read_only.load(Ordering::SeqCst) {
                    return self
                        .send(AgentSignal::FileRefused {
                            path,
                            reason: "the session is read-only while planning".into(),
                        })
                        .await;
                }
                let full = self.worktree.join(&path);
                if let Some(dir) = full.parent() {
                    std::fs::create_dir_all(dir).expect("mkdir in the worktree");
                }
                std::fs::write(&full, &text).expect("write in the worktree");
                self.send(AgentSignal::FileWritten {
                    path: PathBuf::from(path),
                    bytes: text.len(),
                })
                .await
            }
            Act::Ask(call) => {
                self.tool_calls
                    .lock()
                    .expect("tool calls")
                    .insert(call.id.clone(), call.clone());
                let (reply, answer) = oneshot::channel();
                self.send(AgentSignal::Permission {
                    tool_call: call.clone(),
                    options: options(),
                    reply,
                })
                .await?;
                // Dropped unanswered: cancelled, as the driver answers.
                let answer = answer.await.unwrap_or(PermissionReply::Cancelled);
                self.script
                    .answers
                    .lock()
                    .expect("answers")
                    .push((call.id, answer));
                Ok(())
            }
            Act::Question { message, schema } => {
                let (reply, answer) = oneshot::channel();
                self.send(AgentSignal::Question {
                    message,
                    schema,
                    reply,
                })
                .await?;
                let answer = answer.await.unwrap_or(QuestionReply::Cancel);
                self.script.replies.lock().expect("replies").push(answer);
                Ok(())
            }
            Act::ToolEnded { id, ok } => {
                let status = if ok {
                    overseer_core::ToolCallStatus::Completed
                } else {
                    overseer_core::ToolCallStatus::Failed
                };
                self.send(AgentSignal::ToolCall(ToolCallInfo {
                    id: id.clone(),
                    title: Some(format!("Read {id}")),
                    kind: Some(overseer_core::ToolKind::Read),
                    status: Some(status),
                    ..ToolCallInfo::default()
                }))
                .await
            }
            Act::Die => {
                self.dead.store(true, Ordering::SeqCst);
                Err(exited())
            }
        }
    }
}

/// The four answers ACP agents offer.
pub fn options() -> Vec<PermissionChoice> {
    ["allow_once", "allow_always", "reject_once", "reject_always"]
        .iter()
        .map(|kind| PermissionChoice {
            option_id: format!("opt-{kind}"),
            name: kind.replace('_', " "),
            kind: (*kind).to_owned(),
        })
        .collect()
}

impl AgentSession for ScriptedSession {
    fn session_id(&self) -> &str {
        &self.id
    }

    fn resumed(&self) -> bool {
        self.resumed
    }

    fn modes(&self) -> &[ModeInfo] {
        &self.modes
    }

    fn current_mode(&self) -> Option<String> {
        self.current.lock().expect("mode").clone()
    }

    fn allow_modes(&self, modes: Vec<String>) {
        *self.allowed.lock().expect("allowed") = modes;
    }

    fn breached(&self) -> bool {
        false
    }

    fn set_mode<'a>(&'a self, mode: &'a str) -> BoxFuture<'a, Result<(), DriverError>> {
        Box::pin(async move {
            if !self.modes.iter().any(|m| m.id == mode) {
                return Err(DriverError::NoSuchMode {
                    wanted: mode.to_owned(),
                    offered: "`default`".into(),
                });
            }
            *self.current.lock().expect("mode") = Some(mode.to_owned());
            Ok(())
        })
    }

    fn set_read_only(&self, read_only: bool) {
        self.read_only.store(read_only, Ordering::SeqCst);
    }

    fn tool_call(&self, id: &str) -> Option<ToolCallInfo> {
        self.tool_calls.lock().expect("tool calls").get(id).cloned()
    }

    fn prompt<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<StopReason, DriverError>> {
        Box::pin(async move {
            if self.dead.load(Ordering::SeqCst) {
                return Err(exited());
            }
            self.cancelled.store(false, Ordering::SeqCst);
            self.script
                .prompts
                .lock()
                .expect("prompts")
                .push(text.to_owned());
            let turn = self.script.turns.lock().expect("turns").pop_front();
            let Some(turn) = turn else {
                // Past its script the agent has nothing more to say.
                return Ok(StopReason::EndTurn);
            };
            for act in turn.acts {
                if self.cancelled.load(Ordering::SeqCst) {
                    break;
                }
                self.act(act).await?;
            }
            if self.cancelled.load(Ordering::SeqCst) {
                return Ok(StopReason::Cancelled);
            }
            Ok(turn.end)
        })
    }

    fn cancel(&self) -> BoxFuture<'_, Result<(), DriverError>> {
        self.cancelled.store(true, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }

    /// Like the ACP driver's, this works after the agent died: what it sent
    /// before is handled all the same.
    fn settle(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let (done, settled) = oneshot::channel();
            if self.signals.send(AgentSignal::Settled(done)).await.is_ok() {
                let _ = settled.await;
            }
        })
    }
}

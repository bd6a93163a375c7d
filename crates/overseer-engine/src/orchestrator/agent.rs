//! The run's agent as a process: its worktree, its launch (contained, with
//! Overseer's own MCP tools bound to the run), everything it sends while it
//! works (`pump`), its log, and stopping its whole tree.

use super::live::terminate_tree;
use super::permissions::{permission, question};
use super::turn::{err, Turn};
use super::{modes, Live};
use crate::{Engine, Runs};
use overseer_acp::{AgentPipes, AgentSession, AgentSignal, SessionStart};
use overseer_contain::process::{self, AgentSpec};
use overseer_core::{Activity, Actor, ApiError, ErrorCode, RunId};
use overseer_git as git;
use overseer_store::RunWork;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The run's own repository (see [`overseer_git`]): created on the first
/// attempt, at the base branch's commit then, which is recorded; a resumed
/// run keeps the one it had.
pub(super) async fn prepare_worktree(engine: &Engine, work: &RunWork) -> Result<PathBuf, ApiError> {
    let repo = PathBuf::from(&work.workspace.path);
    let (worktree, branch, base, base_commit) = match (&work.worktree, &work.branch, &work.base_ref)
    {
        (Some(w), Some(b), Some(base)) => (
            PathBuf::from(w),
            b.clone(),
            base.clone(),
            work.base_commit.clone(),
        ),
        _ => {
            let r = repo.clone();
            let (base, commit) = tokio::task::spawn_blocking(move || {
                let base = git::current_branch(&r)?;
                let commit = git::commit_of(&r, &format!("refs/heads/{base}"))?;
                Ok::<_, git::GitError>((base, commit))
            })
            .await
            .map_err(|e| err(e.to_string()))??;
            (
                engine.worktree_path(&work.workspace.name, work.run_id),
                crate::run_branch(work.run_id),
                base,
                Some(commit),
            )
        }
    };
    // A run resumed from one created before base commits were kept starts
    // its repository (if it is gone) from the base branch as it is now.
    let start = base_commit.clone().unwrap_or_else(|| base.clone());
    let (r, w, b) = (repo.clone(), worktree.clone(), branch.clone());
    tokio::task::spawn_blocking(move || git::create_run_repo(&r, &w, &b, &start))
        .await
        .map_err(|e| err(e.to_string()))??;
    let now = engine.clock.now();
    let wt = worktree.to_string_lossy().into_owned();
    engine.store().write(|tx| {
        tx.set_run_work(
            work.run_id,
            &wt,
            &branch,
            &base,
            base_commit.as_deref(),
            &Actor::Engine,
            now,
        )
    })?;
    Ok(worktree)
}

/// The run's agent started, contained, in its worktree: its session (a
/// resumed run continues its agent's), its log and its signals followed.
pub(super) async fn launch_agent(
    engine: &Arc<Engine>,
    work: &RunWork,
    profile: &crate::config::AgentProfile,
    worktree: &Path,
    turn: &Arc<Mutex<Turn>>,
) -> Result<Arc<dyn AgentSession>, ApiError> {
    let mut env = profile.environment(|k| std::env::var(k).ok());
    if let Some(s) = work.options.get("scenario").and_then(|s| s.as_str()) {
        env.push(("OVERSEER_DEMO_SCENARIO".to_owned(), s.to_owned()));
    }
    if let Ok(ms) = std::env::var("OVERSEER_DEMO_STEP_MS") {
        env.push(("OVERSEER_DEMO_STEP_MS".to_owned(), ms));
    }
    let (asks, contained, mcp_servers) = contain(engine, work, profile, &env, worktree)?;
    let spec = AgentSpec {
        program: PathBuf::from(&profile.command),
        args: profile.args.clone(),
        env,
        cwd: worktree.to_owned(),
        marker: engine.agent_marker(work.run_id),
        sandbox: contained.sandbox,
        cgroup: contained.cgroup,
    };
    let (process, stdin, stdout, stderr) = process::spawn(&spec)
        .await
        .map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    let run = work.run_id;
    if let Some(cg) = spec.cgroup {
        engine.spawn_cancellable(
            engine
                .runs_layer()
                .watch_limits(run, work.agent.clone(), cg),
        );
    }
    // The agent's stderr is its log: into the timeline, in batches.
    engine.spawn_to_finish(keep_log(engine.clone(), run, stderr));
    // A resumed run continues its agent's session where the agent can.
    let previous = work
        .options
        .get(SESSION_OPTION)
        .and_then(|s| s.as_str())
        .map(str::to_owned);
    let (conn, signals) = engine
        .live
        .sessions()
        .start(
            AgentPipes { stdout, stdin },
            SessionStart {
                worktree: worktree.to_owned(),
                client_name: "overseer".to_owned(),
                resume: previous,
                mcp_servers,
            },
        )
        .await
        .map_err(|e| {
            err(format!(
                "the agent `{}` did not start a session: {e}",
                work.agent
            ))
        })?;
    conn.watch_unasked(super::unasked::judge(
        Arc::new(work.clone()),
        worktree.to_string_lossy().into_owned(),
        turn.clone(),
    ));
    remember_session(engine, work, conn.as_ref());
    engine.live.set(
        run,
        Some(Arc::new(Live {
            conn: conn.clone(),
            process: tokio::sync::Mutex::new(process),
            _asks: asks.map(|s| s.serving),
        })),
    );
    engine.spawn_cancellable(pump(
        engine.clone(),
        Arc::new(work.clone()),
        worktree.to_string_lossy().into_owned(),
        signals,
        turn.clone(),
        conn.clone(),
    ));
    Ok(conn)
}

/// The run's voice (its own socket, where the `overseer mcp` its agent
/// starts asks: ask_user, request_plan_approval, ...) and its containment
/// (bubblewrap, the run's cgroup; or not started at all unless the profile
/// allows running uncontained), with the MCP server the session is offered.
fn contain(
    engine: &Arc<Engine>,
    work: &RunWork,
    profile: &crate::config::AgentProfile,
    env: &[(String, String)],
    worktree: &Path,
) -> Result<
    (
        Option<crate::RunVoice>,
        crate::containment::Contained,
        Vec<agent_client_protocol::v1::schema::McpServer>,
    ),
    ApiError,
> {
    let asks = match engine.voices.get().map(|v| v.open(engine, work.run_id)) {
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            tracing::warn!(run = %work.run_id, "no MCP tools for this run: {e}");
            None
        }
        None => {
            tracing::warn!(run = %work.run_id, "no MCP tools for this run: the engine serves no run sockets");
            None
        }
    };
    let overseer_bin = crate::agents::overseer_cli();
    let voice = crate::containment::AgentVoice {
        socket: asks.as_ref().map(|s| s.path.clone()),
        overseer_bin: overseer_bin.clone(),
    };
    let contained = engine
        .contain_agent(work, profile, env, worktree, &voice)
        .map_err(|note| ApiError::new(ErrorCode::InvalidInput, note))?;
    let mcp_servers = match (&asks, &overseer_bin) {
        (Some(sock), Some(bin)) => {
            let socket = if contained.sandbox.is_some() {
                PathBuf::from(overseer_contain::bwrap::AGENT_SOCKET)
            } else {
                sock.path.clone()
            };
            vec![crate::agents::mcp_server(bin, &socket, work, worktree)]
        }
        (None, _) | (Some(_), None) => Vec::new(),
    };
    Ok((asks, contained, mcp_servers))
}

/// The run option that keeps the agent's session id, so a resumed run can
/// continue the session (`session/resume`).
pub(super) const SESSION_OPTION: &str = "agent_session";

pub(super) fn remember_session(engine: &Engine, work: &RunWork, conn: &dyn AgentSession) {
    let mut options = work
        .options
        .as_object()
        .map_or_else(|| json!({}), |o| serde_json::Value::Object(o.clone()));
    options[SESSION_OPTION] = json!(conn.session_id());
    if let Err(e) = engine
        .store()
        .write(|tx| tx.set_run_options(work.run_id, &options, work.resumed_from))
    {
        tracing::warn!(run = %work.run_id, "cannot keep the agent's session id: {e}");
    }
    engine.record_activity_or_warn(
        work.run_id,
        Activity::Session {
            text: if conn.resumed() {
                format!("resumed the agent's session {}", conn.session_id())
            } else {
                format!("the agent started session {}", conn.session_id())
            },
            modes: crate::activity::modes(conn.modes()),
        },
    );
}

/// Handles everything the agent sends while it works.
pub(super) async fn pump(
    engine: Arc<Engine>,
    work: Arc<RunWork>,
    worktree: String,
    mut signals: tokio::sync::mpsc::Receiver<AgentSignal>,
    turn: Arc<Mutex<Turn>>,
    conn: Arc<dyn AgentSession>,
) {
    let run = work.run_id;
    let pump = Pump {
        engine,
        work,
        worktree,
        turn,
        conn: Arc::downgrade(&conn),
    };
    drop(conn);
    let mut message = String::new();
    loop {
        let next = if message.is_empty() {
            signals.recv().await
        } else {
            match tokio::time::timeout(Duration::from_millis(300), signals.recv()).await {
                Ok(s) => s,
                Err(_) => {
                    flush_message(&pump.engine, run, &mut message);
                    continue;
                }
            }
        };
        let Some(signal) = next else { break };
        if !matches!(signal, AgentSignal::Message { .. }) {
            flush_message(&pump.engine, run, &mut message);
        }
        pump.on_signal(signal, &mut message).await;
    }
    flush_message(&pump.engine, run, &mut message);
}

/// What handling the agent's signals needs.
struct Pump {
    engine: Arc<Engine>,
    work: Arc<RunWork>,
    worktree: String,
    turn: Arc<Mutex<Turn>>,
    /// Not kept alive by the pump: the session's own sender feeds the pump,
    /// so a strong reference here kept both, and the task, for as long as
    /// the engine ran, after every run. Once the run lets go of its
    /// session, the pump's channel closes and it ends.
    conn: std::sync::Weak<dyn AgentSession>,
}

impl Pump {
    fn turn(&self) -> std::sync::MutexGuard<'_, Turn> {
        self.turn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One signal: into the timeline, the turn, or (an ask) answered on a
    /// task of its own, so the agent's other messages keep flowing.
    async fn on_signal(&self, signal: AgentSignal, message: &mut String) {
        let (engine, run) = (&self.engine, self.work.run_id);
        match signal {
            AgentSignal::Message { text } => {
                self.turn().transcript.push_str(&text);
                message.push_str(&text);
            }
            AgentSignal::Thought { text } => {
                engine.record_activity_or_warn(run, Activity::Thought { text });
            }
            AgentSignal::Plan { entries } => {
                engine.record_activity_or_warn(
                    run,
                    Activity::Plan {
                        entries: crate::activity::progress(&entries),
                    },
                );
                self.turn().entries = entries;
            }
            AgentSignal::ModeChanged { mode, breach } => {
                if let Some(conn) = self.conn.upgrade() {
                    modes::on_mode_changed(engine, run, &self.turn, &*conn, mode, breach).await;
                }
            }
            AgentSignal::Settled(done) => {
                flush_message(engine, run, message);
                let _ = done.send(());
            }
            AgentSignal::ToolCall(info) => self.on_tool_call(&info),
            AgentSignal::Permission {
                tool_call,
                options,
                reply,
            } => self.permission(tool_call, options, reply),
            AgentSignal::Unasked { tool_call, why } => {
                super::unasked::on_unasked(engine, &self.work, &self.turn, &tool_call, &why);
            }
            AgentSignal::Question {
                message: q,
                schema,
                reply,
            } => self.question(q, schema, reply),
            AgentSignal::FileRead { path } => {
                engine.record_activity_or_warn(
                    run,
                    Activity::FileRead {
                        path: path.to_string_lossy().into_owned(),
                    },
                );
            }
            AgentSignal::FileWritten { path, bytes } => {
                engine.record_activity_or_warn(
                    run,
                    Activity::FileWritten {
                        path: path.to_string_lossy().into_owned(),
                        bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
                    },
                );
            }
            AgentSignal::FileRefused { path, reason } => self.file_refused(&path, &reason),
            AgentSignal::ProtocolError { detail } => {
                engine.record_activity_or_warn(run, Activity::ProtocolError { text: detail });
            }
            AgentSignal::Usage { used, size, cost } => {
                super::cost::on_usage(engine, run, used, size, cost);
            }
        }
    }

    /// A tool call's progress: its outcome kept for the turn once it ends,
    /// and the call shown in the run's activity.
    fn on_tool_call(&self, info: &overseer_acp::ToolCallInfo) {
        if let Some(status) = info.status {
            if matches!(
                status,
                overseer_core::ToolCallStatus::Completed | overseer_core::ToolCallStatus::Failed
            ) {
                let ok = status == overseer_core::ToolCallStatus::Completed;
                self.turn().tool_calls.insert(info.id.clone(), ok);
            }
        }
        self.engine.record_activity_or_warn(
            self.work.run_id,
            Activity::ToolCall(crate::activity::tool_call(info)),
        );
    }

    /// The agent's question, put to the user on a task of its own.
    fn question(
        &self,
        q: String,
        schema: serde_json::Value,
        reply: tokio::sync::oneshot::Sender<overseer_acp::QuestionReply>,
    ) {
        let engine = self.engine.clone();
        let work = self.work.clone();
        engine.clone().spawn_cancellable(async move {
            let answer = question(&engine, &work, &q, &schema).await;
            let _ = reply.send(answer);
        });
    }

    /// A file the agent was refused: shown in the run's activity and kept
    /// in the audit log.
    fn file_refused(&self, path: &str, reason: &str) {
        let (engine, run) = (&self.engine, self.work.run_id);
        engine.record_activity_or_warn(
            run,
            Activity::FileRefused {
                path: path.to_owned(),
                text: reason.to_owned(),
            },
        );
        engine.audit(
            &Actor::Engine,
            overseer_core::audit::AuditPayload::FileAccessRefused {
                run_id: run,
                path: path.to_owned(),
                reason: reason.to_owned(),
            },
        );
    }

    /// A permission request, answered on a task of its own.
    fn permission(
        &self,
        tool_call: overseer_acp::ToolCallInfo,
        options: Vec<overseer_acp::PermissionChoice>,
        reply: tokio::sync::oneshot::Sender<overseer_acp::PermissionReply>,
    ) {
        let engine = self.engine.clone();
        let turn = self.turn.clone();
        let work = self.work.clone();
        let worktree = self.worktree.clone();
        let Some(conn) = self.conn.upgrade() else {
            // The run let go of its agent: nobody to allow anything for.
            let _ = reply.send(overseer_acp::PermissionReply::Cancelled);
            return;
        };
        engine.clone().spawn_cancellable(async move {
            let (answer, then_cancel) = permission(
                &engine, &work, &worktree, &tool_call, &options, &turn, &*conn,
            )
            .await;
            let _ = reply.send(answer);
            if then_cancel {
                // The agent's exit-plan request was the plan gate: the
                // turn ends here, and each step gets its own.
                let _ = conn.cancel().await;
            }
        });
    }
}

pub(super) fn flush_message(engine: &Engine, run: RunId, message: &mut String) {
    if !message.is_empty() {
        engine.record_activity_or_warn(
            run,
            Activity::Message {
                text: std::mem::take(message),
            },
        );
    }
}

/// At a clean exit: every live agent's whole tree is stopped at once
/// (SIGTERM, abort_timeout, SIGKILL), so no agent, nor a descendant that left
/// its process group, outlives the app. Their runs stay as they are; the
/// next start finds them agentless and marks them interrupted (resumable).
pub(crate) async fn stop_all(engine: &Engine) -> usize {
    engine
        .stopping
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let lives: Vec<(RunId, Arc<Live>)> = engine
        .live
        .agents
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .collect();
    let grace = engine.config.abort_timeout();
    let stopped = lives.len();
    futures::future::join_all(
        lives
            .iter()
            .map(|(run, live)| terminate_tree(*run, live, grace, "at exit")),
    )
    .await;
    // The agents are gone: their pumps end; drivers and answers waiting on
    // a human stop where they wait (their gates stay pending for the next
    // start), and nothing new starts.
    engine.cancel.cancel();
    engine.tasks.close();
    if tokio::time::timeout(crate::engine::STOP_WAIT, engine.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            tasks = engine.tasks.len(),
            "engine tasks still running {}s after their agents stopped; exiting without them",
            crate::engine::STOP_WAIT.as_secs()
        );
    }
    stopped
}

/// Abort's effect, after the abort is committed: cancel the turn, stop the
/// whole process tree, then tell everyone.
pub(crate) async fn stop_agent(engine: Arc<Runs>, run: RunId) {
    let Some(live) = engine.live.get(run) else {
        return;
    };
    // A run frozen for the disk cannot take SIGTERM: killed at once.
    if let Some(root) = engine.run_cgroup_root() {
        for name in [format!("run-{run}"), format!("run-{run}-sensors")] {
            let dir = root.join(name);
            if overseer_contain::cgroup::is_frozen(&dir) {
                if let Err(e) = overseer_contain::cgroup::kill_dir(&dir) {
                    tracing::warn!(run = %run, "cannot kill the frozen {}: {e}", dir.display());
                }
            }
        }
    }
    let _ = live.conn.cancel().await;
    let killed = terminate_tree(run, &live, engine.config.abort_timeout(), "on abort").await;
    engine.live.set(run, None);
    engine.publish_aborted(run, killed);
}

/// Lines of an agent's log gathered into one timeline entry.
pub(super) const LOG_BATCH_LINES: usize = 50;

/// How long the first line of a batch waits for company.
pub(super) const LOG_BATCH_WAIT: Duration = Duration::from_millis(300);

/// Longest log line kept (the rest is cut, marked with an ellipsis).
pub(super) const LOG_LINE_MAX: usize = 2_000;

/// Log lines kept per agent process; after that, one note and the rest only
/// in the engine's own log (an agent printing without end must not fill the
/// database).
pub(super) const LOG_LINES_MAX: usize = 5_000;

/// Reads an agent's stderr to its end and keeps it in the run's timeline as
/// `log` entries of up to [`LOG_BATCH_LINES`] lines. The text is untrusted:
/// invalid UTF-8 is replaced, long lines are cut.
pub(super) async fn keep_log(
    engine: Arc<Engine>,
    run: RunId,
    stderr: impl tokio::io::AsyncRead + Unpin,
) {
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut batch: Vec<String> = Vec::new();
    let mut kept = 0usize;
    let mut buf = Vec::new();
    let flush = |batch: &mut Vec<String>| {
        if batch.is_empty() {
            return;
        }
        let lines = std::mem::take(batch);
        engine.record_activity_or_warn(
            run,
            Activity::Log {
                text: lines.join("\n"),
                lines: u32::try_from(lines.len()).unwrap_or(u32::MAX),
            },
        );
    };
    loop {
        // `buf` keeps a line read in part when the wait ran out (read_until
        // appends what it read before being cancelled): cleared per line.
        let read = if batch.is_empty() {
            reader.read_until(b'\n', &mut buf).await.ok()
        } else {
            match tokio::time::timeout(LOG_BATCH_WAIT, reader.read_until(b'\n', &mut buf)).await {
                Ok(r) => r.ok(),
                Err(_) => {
                    flush(&mut batch);
                    continue;
                }
            }
        };
        let ended = read.is_none_or(|n| n == 0);
        if ended && buf.is_empty() {
            break;
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        buf.clear();
        let line = text.trim_end_matches(['\n', '\r']);
        tracing::debug!(run = %run, "agent: {line}");
        if kept >= LOG_LINES_MAX {
            if ended {
                break;
            }
            continue;
        }
        kept += 1;
        let mut line: String = line.chars().take(LOG_LINE_MAX).collect();
        if line.len() < text.trim_end_matches(['\n', '\r']).len() {
            line.push('…');
        }
        batch.push(line);
        if kept == LOG_LINES_MAX {
            batch.push(format!(
                "(the agent wrote more than {LOG_LINES_MAX} log lines; the rest is in the engine's own log)"
            ));
        }
        if batch.len() >= LOG_BATCH_LINES {
            flush(&mut batch);
        }
        if ended {
            break;
        }
    }
    flush(&mut batch);
}

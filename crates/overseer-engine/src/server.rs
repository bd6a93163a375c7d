//! Serves the local API on a Unix socket in the data dir.
//!
//! The socket is owner-only (0600) and connections from another user are
//! refused. Every call on a socket connection acts as `user:cli`: the actor
//! comes from the kind of connection, never from the request.

use crate::api::{Call, Request, ServerLine, MAX_LINE};
use crate::{Engine, EngineError};
use overseer_core::{Actor, ApiError, ErrorCode};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::broadcast::error::RecvError;

/// A bound socket, ready to accept. Dropping it removes the socket file.
pub struct Listener {
    /// A std listener so binding needs no async runtime (the app binds before
    /// its runtime starts); it becomes a tokio one in [`serve`].
    listener: std::os::unix::net::UnixListener,
    path: PathBuf,
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `path`, refusing when another engine answers there and replacing a
/// stale socket left by a crashed one.
pub fn bind(path: &Path) -> Result<Listener, EngineError> {
    let io = |source| EngineError::Io {
        path: path.to_owned(),
        source,
    };
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(EngineError::AlreadyRunning(path.to_owned()));
        }
        std::fs::remove_file(path).map_err(io)?;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let listener = std::os::unix::net::UnixListener::bind(path).map_err(io)?;
    listener.set_nonblocking(true).map_err(io)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    Ok(Listener {
        listener,
        path: path.to_owned(),
    })
}

/// Accepts connections until the task is dropped or aborted.
pub async fn serve(engine: Arc<Engine>, listener: Listener) {
    let owner = std::fs::metadata(&engine.paths().data_dir)
        .map(|m| m.uid())
        .ok();
    let accepting = match listener
        .listener
        .try_clone()
        .and_then(UnixListener::from_std)
    {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("cannot serve on {}: {e}", listener.path.display());
            return;
        }
    };
    loop {
        let (stream, _) = match accepting.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!("accept on {}: {e}", listener.path.display());
                continue;
            }
        };
        let peer = stream.peer_cred().ok().map(|c| c.uid());
        if owner.is_none() || peer != owner {
            tracing::warn!(?peer, ?owner, "refused a connection from another user");
            continue;
        }
        let engine = engine.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(engine, stream).await {
                tracing::debug!("connection closed: {e}");
            }
        });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, line: &ServerLine) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    w.write_all(&bytes).await?;
    w.flush().await
}

async fn handle(engine: Arc<Engine>, stream: UnixStream) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    // Bytes, not String: invalid UTF-8 from a client is an error to answer,
    // not a reason to drop the connection.
    let mut line: Vec<u8> = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Ok(());
        }
        if n > MAX_LINE {
            let error = ApiError::new(
                ErrorCode::InvalidInput,
                format!("request longer than {MAX_LINE} bytes; the connection is closed"),
            );
            return write_line(&mut write, &ServerLine::Error { id: None, error }).await;
        }
        let call: Call = match serde_json::from_slice(line.trim_ascii_end()) {
            Ok(c) => c,
            Err(e) => {
                let error = ApiError::new(
                    ErrorCode::InvalidInput,
                    format!("malformed request ({e}); expected {{\"id\": N, \"method\": ..., \"params\": ...}}"),
                );
                write_line(&mut write, &ServerLine::Error { id: None, error }).await?;
                continue;
            }
        };
        if call.request == Request::Subscribe {
            let mut rx = engine.subscribe();
            let ok = ServerLine::Result {
                id: Some(call.id),
                result: serde_json::Value::Null,
            };
            write_line(&mut write, &ok).await?;
            loop {
                match rx.recv().await {
                    Ok(event) => write_line(&mut write, &ServerLine::Event { event }).await?,
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!("a subscriber fell {n} events behind");
                    }
                    Err(RecvError::Closed) => return Ok(()),
                }
            }
        }
        let engine = engine.clone();
        let id = call.id;
        let reply =
            tokio::task::spawn_blocking(move || dispatch(&engine, call.request, &Actor::cli()))
                .await
                .unwrap_or_else(|e| {
                    Err(ApiError::new(
                        ErrorCode::Internal,
                        format!("request failed: {e}"),
                    ))
                });
        let line = match reply {
            Ok(result) => ServerLine::Result {
                id: Some(id),
                result,
            },
            Err(error) => ServerLine::Error {
                id: Some(id),
                error,
            },
        };
        write_line(&mut write, &line).await?;
    }
}

fn json<T: serde::Serialize>(v: T) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

/// Runs one request as `actor`.
pub fn dispatch(
    engine: &Engine,
    request: Request,
    actor: &Actor,
) -> Result<serde_json::Value, ApiError> {
    match request {
        Request::Ping => json("pong"),
        Request::ListRuns => json(engine.runs()?),
        Request::ShowRun { run } => json(engine.run(run)?),
        Request::ApproveRun { run } => json(engine.approve_run(run, actor)?),
        Request::RejectRun { run, reason } => json(engine.reject_run(run, &reason, actor)?),
        Request::AbortRun { run } => json(engine.abort_run(run, actor)?),
        Request::ListGates { pending_only } => json(engine.gates(pending_only)?),
        Request::ShowGate { gate } => json(engine.gate(gate)?),
        Request::SeedDemo {
            runs: Some(count), ..
        } => json(engine.seed_bulk(actor, count)?),
        Request::SeedDemo {
            settled,
            runs: None,
        } => json(engine.seed_demo(actor, settled)?),
        Request::AddWorkspace {
            path,
            name,
            settings,
        } => json(engine.add_workspace(&path, name.as_deref(), settings, actor)?),
        Request::ListWorkspaces => json(engine.workspaces()?),
        Request::SetWorkspaceChecks {
            workspace,
            sensors,
            auto_advance,
        } => json(engine.set_workspace_checks(&workspace, sensors, auto_advance, actor)?),
        Request::StartTask(req) => json(engine.start_task(&req, actor)?),
        Request::DecideGate {
            gate,
            option,
            context,
        } => json(engine.decide_gate(gate, &option, context.as_deref(), actor)?),
        Request::CleanRun { run } => json(engine.clean_run(run)?),
        Request::ResumeRun { run } => json(engine.resume_run(run, actor)?),
        Request::RunActivity { run, after } => json(engine.activity(run, after)?),
        Request::RunDiff { run } => {
            let (files, diff) = engine.run_diff(run)?;
            json(serde_json::json!({"files": files, "diff": diff}))
        }
        Request::GateStory { gate } => json(engine.gate_story(gate)?),
        Request::HoldGate { gate } => json(engine.hold_gate(gate, actor)?),
        Request::SteerRun { run, text } => {
            engine.steer_run(run, &text, actor)?;
            json(engine.run(run)?)
        }
        Request::SupervisorVote {
            gate,
            approve,
            rationale,
        } => {
            // A human acting as the supervisor has the supervisor's
            // authority, never more: the actor is derived, not claimed.
            let name = match actor {
                Actor::User(n) => n.clone(),
                Actor::Supervisor(n) | Actor::Agent(n) => n.clone(),
                Actor::Engine => "engine".to_owned(),
            };
            let view = engine.gate(gate)?;
            let verdict = if approve {
                overseer_core::supervision::Verdict::Approve
            } else {
                overseer_core::supervision::Verdict::Reject
            };
            let option = overseer_core::supervision::verdict_option(view.kind, verdict)
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::InvalidInput,
                        format!("the supervisor cannot decide {} gates; decide it yourself with `overseer gates decide`", view.kind.as_str()),
                    )
                })?;
            let input = overseer_store::DecisionInput {
                verdict: Some(verdict),
                option: Some(option.to_owned()),
                rationale: Some(rationale),
                rule_ref: Some("manual".to_owned()),
                source_event: Some(format!("cli:{gate}")),
                ..Default::default()
            };
            json(engine.supervisor_vote(gate, &Actor::Supervisor(name), &input)?)
        }
        Request::SupervisorStatus { scope } => json(engine.supervisor_status(&scope)?),
        Request::SetSupervisor { scope, policy } => {
            json(engine.set_supervisor(&scope, policy, actor)?)
        }
        Request::SetPermissions { scope, rules } => {
            json(engine.set_permissions(&scope, rules, actor)?)
        }
        Request::Notifications => json(engine.notifications()),
        Request::SetNotifications { settings } => json(engine.set_notifications(settings, actor)?),
        Request::Agents => json(engine.agents()),
        Request::Subscribe => Err(ApiError::new(
            ErrorCode::InvalidInput,
            "subscribe is only available on a socket connection",
        )),
    }
}

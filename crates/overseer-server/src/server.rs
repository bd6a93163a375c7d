//! Serves the local API on a Unix socket in the data dir.
//!
//! The socket is owner-only (0600) and connections from another user are
//! refused. Every call on a socket connection acts as `user:cli`: the actor
//! comes from the kind of connection, never from the request.
//!
//! A connection from inside a run is refused whatever it found on disk (the
//! sandbox hides the socket; this is the second fence): the peer's pid
//! (SO_PEERCRED) is looked up in `/proc` at once, and if its cgroup is one
//! of this engine's run cgroups, or (without cgroups) its environment
//! carries this engine's run marker, it gets one `forbidden` error line, the
//! connection is closed, and the attempt is a signed security event, a
//! `security` entry on the run and a notification. The pid is read twice
//! around the lookup with its start time, so a pid reused meanwhile is not
//! mistaken for the peer.
//!
//! The accept loop backs off when the process is out of file descriptors
//! (EMFILE/ENFILE: retrying at once would spin) and serves at most
//! [`MAX_CONNECTIONS`] at a time; extra ones get an error line.

use crate::api::{
    op, Call, Invocation, Request, Route, ServerLine, Stream, StreamOperation, MAX_LINE,
};
use overseer_core::{Actor, ApiError, ErrorCode, RunId};
use overseer_engine::{Engine, EngineError, RunVoice, RunVoices};
use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::broadcast::error::RecvError;

mod links;
use links::{Fenced, Links};

/// Connections served at once; more get an `engine_unavailable` line.
pub const MAX_CONNECTIONS: usize = 256;
/// A run refused again within this time is not recorded again (a process
/// hammering the socket must not fill the audit log); it is counted.
const SECURITY_EVENT_EVERY: Duration = Duration::from_secs(60);
/// How long a refused connection is kept open for its refusal to be read.
const REFUSE_LINGER: Duration = Duration::from_secs(2);

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

/// What the accept loop does after an error: how long to wait before the
/// next accept, and whether to log it (once per burst, not per error).
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    /// Errors since the last successful accept.
    failures: u64,
}

impl AcceptBackoff {
    /// Out of file descriptors: wait before accepting again (the pending
    /// connection stays in the backlog). Other errors (a peer that hung up
    /// before we accepted) are retried at once.
    pub fn failed(&mut self, e: &std::io::Error) -> (Option<Duration>, bool) {
        self.failures += 1;
        let log = self.failures == 1;
        let exhausted = matches!(
            e.raw_os_error(),
            Some(code) if code == rustix::io::Errno::MFILE.raw_os_error()
                || code == rustix::io::Errno::NFILE.raw_os_error()
                || code == rustix::io::Errno::NOBUFS.raw_os_error()
                || code == rustix::io::Errno::NOMEM.raw_os_error()
        );
        let wait = if exhausted {
            Some(Duration::from_millis(50 + 25 * self.failures.min(2)))
        } else if self.failures > 100 {
            // Anything else that keeps failing must not spin either.
            Some(Duration::from_millis(10))
        } else {
            None
        };
        (wait, log)
    }

    /// An accept worked: the burst is over. Returns how many failed in it.
    pub fn succeeded(&mut self) -> u64 {
        std::mem::take(&mut self.failures)
    }
}

/// Who may not talk to this engine: processes in its run cgroups, or
/// carrying its run marker.
struct Fence {
    cgroup_root: Option<PathBuf>,
    marker_prefix: String,
}

impl Fence {
    fn of(engine: &Engine) -> Fence {
        Fence {
            cgroup_root: engine.run_cgroup_root(),
            marker_prefix: engine.run_marker_prefix(),
        }
    }

    /// The run `pid` belongs to (Some(0) when it belongs to one of ours but
    /// its id cannot be read), or Err when the peer cannot be identified.
    fn run_of(&self, pid: Option<i32>) -> Result<Option<RunId>, String> {
        let pid = pid
            .and_then(|p| u32::try_from(p).ok())
            .filter(|&p| p > 0)
            .ok_or("the peer's process id is not visible")?;
        let started =
            start_time(pid).map_err(|e| format!("the peer (pid {pid}) cannot be checked: {e}"))?;
        let by_cgroup = self
            .cgroup_root
            .as_deref()
            .and_then(|root| overseer_contain::cgroup::run_of(pid, root));
        let by_marker = || {
            overseer_contain::process::marker_of(pid)
                .and_then(|m| m.strip_prefix(&self.marker_prefix).map(str::to_owned))
                .map(|rest| {
                    overseer_contain::parse_run_name(&rest).unwrap_or(overseer_core::RunId(0))
                })
        };
        let run = by_cgroup.or_else(by_marker);
        // The same process as before the lookup, not a reused pid.
        if start_time(pid).ok() != Some(started) {
            return Err("the peer's process changed while it was checked".to_owned());
        }
        Ok(run)
    }
}

/// A process's start time (clock ticks after boot), from /proc/PID/stat.
fn start_time(pid: u32) -> std::io::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Field 22; fields after the command name (which may hold spaces) start at 3.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| std::io::Error::other("unreadable /proc/PID/stat"))
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
    let fence = Fence::of(&engine);
    let links = Arc::new(Links::default());
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut backoff = AcceptBackoff::default();
    let mut recorded: HashMap<RunId, (Instant, u64)> = HashMap::new();
    loop {
        let stream = accept_next(&accepting, &mut backoff, &listener.path).await;
        let cred = stream.peer_cred().ok();
        let peer = cred.map(|c| c.uid());
        if owner.is_none() || peer != owner {
            tracing::warn!(?peer, ?owner, "refused a connection from another user");
            continue;
        }
        let pid = cred.and_then(|c| c.pid());
        let Some(stream) = past_fence(&engine, &fence, &mut recorded, stream, pid) else {
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse(
                stream,
                ErrorCode::EngineUnavailable,
                format!("the engine already serves {MAX_CONNECTIONS} connections; close some (idle `overseer` commands, subscribers) and retry"),
            ));
            continue;
        };
        let engine = engine.clone();
        let links = links.clone();
        let peer = pid.and_then(|p| u32::try_from(p).ok());
        tokio::spawn(async move {
            if let Err(e) = handle(engine, links, stream, peer).await {
                tracing::debug!("connection closed: {e}");
            }
            drop(slot);
        });
    }
}

/// The next connection on the socket, waiting out failures to accept
/// (backing off while descriptors run out).
async fn accept_next(
    accepting: &UnixListener,
    backoff: &mut AcceptBackoff,
    path: &Path,
) -> UnixStream {
    loop {
        match accepting.accept().await {
            Ok((stream, _)) => {
                let failed = backoff.succeeded();
                if failed > 1 {
                    tracing::warn!(
                        "accept on {} worked again after {failed} failures",
                        path.display()
                    );
                }
                return stream;
            }
            Err(e) => {
                let (wait, log) = backoff.failed(&e);
                if log {
                    tracing::warn!(
                        "accept on {}: {e}{}",
                        path.display(),
                        if wait.is_some() {
                            "; backing off until descriptors are free"
                        } else {
                            ""
                        }
                    );
                }
                if let Some(d) = wait {
                    tokio::time::sleep(d).await;
                }
            }
        }
    }
}

/// The connection back if its caller is not inside a run and could be
/// checked; otherwise it is refused (and one from a run is recorded as a
/// security event) and there is none.
fn past_fence(
    engine: &Arc<Engine>,
    fence: &Fence,
    recorded: &mut HashMap<RunId, (Instant, u64)>,
    stream: UnixStream,
    pid: Option<i32>,
) -> Option<UnixStream> {
    match fence.run_of(pid) {
        Ok(None) => Some(stream),
        Ok(Some(run)) => {
            record_refusal(engine, recorded, run, pid);
            tokio::spawn(refuse(
                stream,
                ErrorCode::Forbidden,
                "refused: this connection comes from inside a run; a run asks and reports \
                 only through its agent, never through Overseer's socket (recorded as a security event)"
                    .to_owned(),
            ));
            None
        }
        Err(why) => {
            tracing::warn!(
                ?pid,
                "refused a connection whose caller could not be checked: {why}"
            );
            tokio::spawn(refuse(
                stream,
                ErrorCode::Forbidden,
                format!("refused: {why}; connect from a process that stays alive until it has its answer"),
            ));
            None
        }
    }
}

/// Counts a run's attempt at the socket and records the attempts as a
/// security event, at most once every [`SECURITY_EVENT_EVERY`] per run.
fn record_refusal(
    engine: &Arc<Engine>,
    recorded: &mut HashMap<RunId, (Instant, u64)>,
    run: RunId,
    pid: Option<i32>,
) {
    let now = Instant::now();
    let entry = recorded
        .entry(run)
        .or_insert((now - SECURITY_EVENT_EVERY, 0));
    entry.1 += 1;
    if now.duration_since(entry.0) >= SECURITY_EVENT_EVERY {
        let attempts = std::mem::take(&mut entry.1);
        entry.0 = now;
        let engine = engine.clone();
        let pid = pid.unwrap_or(0);
        tokio::task::spawn_blocking(move || engine.refused_socket_from_run(run, pid, attempts));
    }
}

/// Each run's own socket: where the MCP server its agent starts asks. It
/// serves asks and reports of that run and nothing else (no listing, no
/// decision), so binding it into the sandbox gives the run a voice, not a
/// hand. Given to [`Engine::start_orchestrator`].
pub struct RunSockets;

impl RunVoices for RunSockets {
    fn open(&self, engine: &Arc<Engine>, run: RunId) -> Result<RunVoice, EngineError> {
        let socket = serve_run(engine, run)?;
        Ok(RunVoice {
            path: socket.path.clone(),
            serving: Box::new(socket),
        })
    }
}

/// A run's socket being served. Stops (and its file goes) when dropped.
struct RunSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RunSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds and serves `run`'s own socket in the data dir.
fn serve_run(engine: &Arc<Engine>, run: RunId) -> Result<RunSocket, EngineError> {
    let path = engine
        .paths()
        .data_dir
        .join("run-sockets")
        .join(format!("run-{run}.sock"));
    let io = |source| EngineError::Io {
        path: path.clone(),
        source,
    };
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    if path.exists() {
        std::fs::remove_file(&path).map_err(io)?;
    }
    let std_listener = std::os::unix::net::UnixListener::bind(&path).map_err(io)?;
    std_listener.set_nonblocking(true).map_err(io)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    let listener = UnixListener::from_std(std_listener).map_err(io)?;
    let owner = rustix::process::getuid().as_raw();
    let engine = engine.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            if stream.peer_cred().ok().map(|c| c.uid()) != Some(owner) {
                continue;
            }
            // Counted while open; past the run's cap (or while it is paused)
            // refused, so one run cannot take the engine's descriptors.
            let counted = match engine.flood_connect(run) {
                Ok(c) => c,
                Err(e) => {
                    tokio::spawn(refuse(stream, e.code, e.message));
                    continue;
                }
            };
            let engine = engine.clone();
            tokio::spawn(async move {
                if let Err(e) = handle_run_asks(engine, stream, run).await {
                    tracing::debug!(run = %run, "run socket connection closed: {e}");
                }
                drop(counted);
            });
        }
    });
    Ok(RunSocket { path, task })
}

async fn handle_run_asks(
    engine: Arc<Engine>,
    stream: UnixStream,
    run: RunId,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let call = match next_call(&mut reader, &mut line, &mut write).await? {
            Next::Call(c) => *c,
            Next::Skipped => continue,
            Next::Closed => return Ok(()),
        };
        // Every call counts against the run's rate; past it, or while the
        // run is paused, it is refused.
        if let Err(e) = engine.flood_use(run, overseer_engine::flood::Use::Call) {
            write_line(&mut write, &ServerLine::reply(call.id, Err(e))).await?;
            continue;
        }
        let reply = match call.request {
            Request::Ping => json("pong"),
            // Whatever session the asker names, its asks are this run's.
            Request::Session { ask, .. } => {
                match answer_while_connected(engine.run_ask(run, ask), &mut reader).await {
                    Some(reply) => reply,
                    None => return Ok(()),
                }
            }
            _ => Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("run {run}'s socket takes its asks and reports only (ask_user, request_plan_approval, report_step, messages)"),
            )),
        };
        write_line(&mut write, &ServerLine::reply(call.id, reply)).await?;
    }
}

/// One error line, then the connection is closed. Our side is shut for
/// writing first and what the client sends is read and dropped for a
/// moment: closing with its request unread would make its write fail (or
/// its read see a reset) before it reads why.
async fn refuse(mut stream: UnixStream, code: ErrorCode, message: String) {
    let line = ServerLine::Error {
        id: None,
        error: ApiError::new(code, message),
    };
    let _ = tokio::time::timeout(REFUSE_LINGER, write_line(&mut stream, &line)).await;
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(REFUSE_LINGER, async {
        let mut drained = 0usize;
        while drained < MAX_LINE {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}

/// What the next line of a connection was.
enum Next {
    Call(Box<Call>),
    /// Answered with an error already (malformed); read on.
    Skipped,
    /// The peer closed, or sent a line too long (answered, then closed).
    Closed,
}

/// What the next line of a connection was, before anything is written.
enum Read {
    Call(Box<Call>),
    /// The line is answered with this; `true`: then the connection closes.
    Reply(ServerLine, bool),
    /// The peer closed.
    Closed,
}

/// Reads the next request line and writes what it is answered with
/// itself (a malformed one).
async fn next_call<R, W>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    write: &mut W,
) -> std::io::Result<Next>
where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match read_call(reader, line).await? {
        Read::Call(c) => Ok(Next::Call(c)),
        Read::Reply(reply, close) => {
            write_line(write, &reply).await?;
            Ok(if close { Next::Closed } else { Next::Skipped })
        }
        Read::Closed => Ok(Next::Closed),
    }
}

/// Reads the next request line. Bytes, not String: invalid UTF-8 from a
/// client is an error to answer, not a reason to drop the connection.
async fn read_call<R>(reader: &mut BufReader<R>, line: &mut Vec<u8>) -> std::io::Result<Read>
where
    R: tokio::io::AsyncRead + Unpin,
{
    line.clear();
    let n = reader
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', line)
        .await?;
    if n == 0 {
        return Ok(Read::Closed);
    }
    if n > MAX_LINE {
        let error = ApiError::new(
            ErrorCode::InvalidInput,
            format!("request longer than {MAX_LINE} bytes; the connection is closed"),
        );
        return Ok(Read::Reply(ServerLine::Error { id: None, error }, true));
    }
    match serde_json::from_slice(line.trim_ascii_end()) {
        Ok(c) => Ok(Read::Call(Box::new(c))),
        Err(e) => {
            let error = ApiError::new(
                ErrorCode::InvalidInput,
                format!("malformed request ({e}); expected {{\"id\": N, \"method\": ..., \"params\": ...}}"),
            );
            // A request that names its id (an unknown method, a wrong
            // parameter) is answered on that id, so a client waiting on it
            // hears why; only unreadable JSON gets an answer with no id.
            let id = serde_json::from_slice::<serde_json::Value>(line.trim_ascii_end())
                .ok()
                .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64));
            let reply = match id {
                Some(id) => ServerLine::reply(id, Err(error)),
                None => ServerLine::Error { id: None, error },
            };
            Ok(Read::Reply(reply, false))
        }
    }
}

/// Waits for an agent's ask to be answered while its asker stays: the asker
/// leaving (EOF, or anything more on the line while it should be waiting)
/// drops the wait (None), and the engine withdraws its gate unless the
/// asker comes back with the same key.
async fn answer_while_connected<R>(
    asked: impl std::future::Future<Output = Result<<op::Session as StreamOperation>::Answer, ApiError>>,
    reader: &mut BufReader<R>,
) -> Option<Result<serde_json::Value, ApiError>>
where
    R: tokio::io::AsyncRead + Unpin,
{
    tokio::pin!(asked);
    let mut probe = [0u8; 1];
    tokio::select! {
        reply = &mut asked => Some(reply.and_then(json)),
        _ = reader.read(&mut probe) => None,
    }
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, line: &ServerLine) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    w.write_all(&bytes).await?;
    w.flush().await
}

async fn handle(
    engine: Arc<Engine>,
    links: Arc<Links>,
    stream: UnixStream,
    peer: Option<u32>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let call = match next_call(&mut reader, &mut line, &mut write).await? {
            Next::Call(c) => *c,
            Next::Skipped => continue,
            Next::Closed => return Ok(()),
        };
        let id = call.id;
        let decides = call.request.decides();
        let invocation = match call.request.route() {
            Route::Call(invocation) => invocation,
            Route::Stream(Stream::Subscribe(op::Subscribe {})) => {
                let rx = engine.subscribe();
                let answer: <op::Subscribe as StreamOperation>::Answer = ();
                write_line(&mut write, &ServerLine::reply(id, json(answer))).await?;
                let owner = Subscribed {
                    peer,
                    actor: Actor::cli(),
                    fenced: None,
                };
                return serve_subscribed(engine, reader, write, rx, owner).await;
            }
            Route::Stream(Stream::SubscribeAs(op::SubscribeAs { surface, link })) => {
                let fenced = match link {
                    None => None,
                    Some(link) => match links.enter(&link).await {
                        Ok(fenced) => Some(fenced),
                        Err(error) => {
                            write_line(&mut write, &ServerLine::reply(id, Err(error))).await?;
                            return Ok(());
                        }
                    },
                };
                let rx = engine.subscribe();
                let answer: <op::SubscribeAs as StreamOperation>::Answer = ();
                write_line(&mut write, &ServerLine::reply(id, json(answer))).await?;
                let owner = Subscribed {
                    peer,
                    actor: surface.actor(),
                    fenced,
                };
                return serve_subscribed(engine, reader, write, rx, owner).await;
            }
            Route::Stream(Stream::Session(op::Session { session, ask })) => {
                if let Err(error) = engine.refuse_if_closing() {
                    write_line(&mut write, &ServerLine::reply(id, Err(error))).await?;
                    continue;
                }
                let Some(reply) =
                    answer_while_connected(engine.session_ask(session, ask, peer), &mut reader)
                        .await
                else {
                    return Ok(());
                };
                write_line(&mut write, &ServerLine::reply(id, reply)).await?;
                continue;
            }
        };
        if let Err(error) = may_call(&engine, decides, peer) {
            write_line(&mut write, &ServerLine::reply(id, Err(error))).await?;
            continue;
        }
        let reply = engine
            .carry_out(move |e| dispatch(e, invocation, &Actor::cli()))
            .await;
        write_line(&mut write, &ServerLine::reply(id, reply)).await?;
    }
}

/// Whether a call may be carried out for this connection: not once the
/// engine is closing, and no decision from a process an external agent
/// started.
fn may_call(engine: &Engine, decides: bool, peer: Option<u32>) -> Result<(), ApiError> {
    engine.refuse_if_closing()?;
    if decides {
        if let Some(session) = peer.and_then(|p| engine.external_ancestor(p)) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "refused: this process was started by the agent of run {session} (an external session); \
                     an agent can ask and report, never decide. Decide from the window or from a terminal \
                     the agent did not start"
                ),
            ));
        }
    }
    Ok(())
}

/// Calls carried out at once on one subscribed connection; more wait.
pub const MAX_IN_FLIGHT: usize = 64;

/// Who a subscribed connection's calls come from: its peer process, the
/// owner's surface it said it carries, and, for a persistent link's
/// connection, its place in the link (see [`links`]).
struct Subscribed {
    peer: Option<u32>,
    actor: Actor,
    fenced: Option<Fenced>,
}

/// A subscribed connection: every event the engine commits, in commit
/// order, and calls still (what one persistent link to a host needs):
/// each carried out as it comes, several at once, each answered on its id
/// when it is done (so not necessarily in the order sent). An agent's ask
/// (`session`) needs a connection of its own.
async fn serve_subscribed(
    engine: Arc<Engine>,
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    mut write: tokio::net::unix::OwnedWriteHalf,
    rx: tokio::sync::broadcast::Receiver<overseer_core::EngineEvent>,
    owner: Subscribed,
) -> std::io::Result<()> {
    let (tx, mut out) = tokio::sync::mpsc::channel::<ServerLine>(256);
    let writing = async move {
        while let Some(line) = out.recv().await {
            write_line(&mut write, &line).await?;
        }
        Ok::<(), std::io::Error>(())
    };
    let events = tx.clone();
    // A link's connection replaced by a newer one is told so, once, on a
    // line without id: its client reconnects (see `links`).
    let replaced = owner.fenced.as_ref().map(Fenced::replaced);
    let pumping = pump_events(rx, events, replaced);
    let reading = read_calls(engine, reader, tx, owner);
    tokio::select! {
        written = writing => written,
        () = pumping => Ok(()),
        read = reading => read,
    }
}

/// Passes every event the engine commits on to a subscribed connection, in
/// commit order, until the connection closes or is replaced.
async fn pump_events(
    mut rx: tokio::sync::broadcast::Receiver<overseer_core::EngineEvent>,
    events: tokio::sync::mpsc::Sender<ServerLine>,
    replaced: Option<impl std::future::Future<Output = ApiError>>,
) {
    let replaced = async move {
        match replaced {
            Some(replaced) => replaced.await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(replaced);
    loop {
        let received = tokio::select! {
            r = rx.recv() => r,
            error = &mut replaced => {
                let _ = events.send(ServerLine::Error { id: None, error }).await;
                return std::future::pending().await;
            }
        };
        let line = match received {
            Ok(event) => ServerLine::Event {
                event: Box::new(event),
            },
            Err(RecvError::Lagged(n)) => fell_behind(n),
            Err(RecvError::Closed) => return,
        };
        if events.send(line).await.is_err() {
            return;
        }
    }
}

/// The line telling a subscribed connection it fell `n` events behind.
fn fell_behind(n: u64) -> ServerLine {
    tracing::warn!("a subscriber fell {n} events behind");
    // Said on the connection (a line without id): a client
    // that keeps a view of the engine reads it all again (a
    // host's link reconnects, and the window resyncs).
    let error = ApiError::new(
        ErrorCode::EngineUnavailable,
        format!(
            "this connection fell {n} events behind and missed them; read \
             what you show again"
        ),
    );
    ServerLine::Error { id: None, error }
}

/// Reads a subscribed connection's calls and carries each out as it comes,
/// several at once, each answered on its id when it is done.
async fn read_calls(
    engine: Arc<Engine>,
    mut reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    tx: tokio::sync::mpsc::Sender<ServerLine>,
    owner: Subscribed,
) -> std::io::Result<()> {
    let Subscribed {
        peer,
        actor,
        fenced,
    } = owner;
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut line: Vec<u8> = Vec::new();
    loop {
        let call = match read_call(&mut reader, &mut line).await? {
            Read::Call(c) => *c,
            Read::Reply(reply, close) => {
                let _ = tx.send(reply).await;
                if close {
                    return Ok(());
                }
                continue;
            }
            Read::Closed => return Ok(()),
        };
        let id = call.id;
        let decides = call.request.decides();
        let invocation = match subscribed_invocation(id, call.request.route()) {
            Ok(invocation) => invocation,
            Err(answer) => {
                let _ = tx.send(answer).await;
                continue;
            }
        };
        if let Err(error) = may_call(&engine, decides, peer) {
            let _ = tx.send(ServerLine::reply(id, Err(error))).await;
            continue;
        }
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let admitted = match &fenced {
            None => None,
            Some(fenced) => match fenced.admit().await {
                Ok(admitted) => Some(admitted),
                Err(error) => {
                    let _ = tx.send(ServerLine::reply(id, Err(error))).await;
                    continue;
                }
            },
        };
        let engine = engine.clone();
        let tx = tx.clone();
        let actor = actor.clone();
        tokio::spawn(async move {
            let reply = engine
                .carry_out(move |e| dispatch(e, invocation, &actor))
                .await;
            // Carried out: a newer connection of the link may now take over.
            drop(admitted);
            let _ = tx.send(ServerLine::reply(id, reply)).await;
            drop(slot);
        });
    }
}

/// What a call on a subscribed connection carries out, or its answer at
/// once when it carries out nothing there.
fn subscribed_invocation(id: u64, route: Route) -> Result<Invocation, ServerLine> {
    match route {
        Route::Call(invocation) => Ok(invocation),
        Route::Stream(Stream::Subscribe(_) | Stream::SubscribeAs(_)) => {
            Err(ServerLine::reply(id, json(())))
        }
        Route::Stream(Stream::Session(_)) => {
            let error = ApiError::new(
                ErrorCode::InvalidInput,
                "an agent's ask needs a connection of its own, not a subscribed one",
            );
            Err(ServerLine::reply(id, Err(error)))
        }
    }
}

fn json<T: serde::Serialize>(v: T) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

/// Runs one call as `actor`: the engine's [`Api`](crate::api::Api) method for it.
pub fn dispatch(
    engine: &Engine,
    invocation: Invocation,
    actor: &Actor,
) -> Result<serde_json::Value, ApiError> {
    invocation.perform(engine, actor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_descriptors_the_loop_waits_and_logs_once_per_burst() {
        let mut b = AcceptBackoff::default();
        let emfile = std::io::Error::from_raw_os_error(rustix::io::Errno::MFILE.raw_os_error());
        let mut logged = 0;
        for _ in 0..10_000 {
            let (wait, log) = b.failed(&emfile);
            let wait = wait.expect("EMFILE always waits");
            assert!(wait >= Duration::from_millis(50) && wait <= Duration::from_millis(100));
            logged += usize::from(log);
        }
        assert_eq!(logged, 1, "one line per burst");
        assert_eq!(b.succeeded(), 10_000);
        let enfile = std::io::Error::from_raw_os_error(rustix::io::Errno::NFILE.raw_os_error());
        assert!(b.failed(&enfile).1, "a new burst is logged again");
        // A peer that hung up before the accept: retried at once, and a
        // long run of any error does not spin either.
        let mut b = AcceptBackoff::default();
        let aborted =
            std::io::Error::from_raw_os_error(rustix::io::Errno::CONNABORTED.raw_os_error());
        assert_eq!(b.failed(&aborted).0, None);
        for _ in 0..200 {
            b.failed(&aborted);
        }
        assert!(b.failed(&aborted).0.is_some());
    }
}

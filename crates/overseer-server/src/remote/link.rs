//! One persistent connection to a host's engine: `ssh HOST overseer bridge`,
//! subscribed to the host engine's events, carrying concurrent calls (each
//! with its id, answered in whatever order the engine finishes them) on the
//! same connection.
//!
//! It reconnects by itself, waiting 1 s after a failure, doubling to 30 s
//! ([`LinkOptions`]), and says how it stands ([`HostLinkState`]):
//! connecting, live (which engine process, its version, and how many times
//! it reconnected: a client re-reads the host whenever that grows), or down
//! (since when, why, when it tries again).
//!
//! A call while the link is not live is refused at once, never queued. A
//! call whose answer is lost because the link dropped after it was written
//! is never sent again (so never doubled): it is reported as possibly
//! applied, to re-read when the host is back.

use super::handshake::{self, Bridge};
use super::registry::Host;
use crate::api::{Call, Operation, Request, ServerLine, MAX_LINE};
use overseer_core::{ApiError, EngineEvent, ErrorCode, OwnerSurface};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::{broadcast, oneshot, watch, Notify};

/// How a link watches its host and retries.
#[derive(Debug, Clone, Copy)]
pub struct LinkOptions {
    /// How often it checks the host answers (a `ping` on the connection).
    pub heartbeat: Duration,
    /// Nothing heard from the host for this long: the link is down (a
    /// machine gone from the network never closes the connection).
    pub silence: Duration,
    /// The wait before the first retry; it doubles after each failure.
    pub first_retry: Duration,
    /// The longest wait between retries.
    pub max_retry: Duration,
    /// A decision whose answer the link lost: how long to wait for the
    /// link to come back and read the gate, to say whether it was applied.
    pub confirm_within: Duration,
    /// Whose calls the host's engine records them as: the owner's window
    /// (`user:app`, the default: a link is the app's) or a terminal.
    pub surface: OwnerSurface,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            heartbeat: Duration::from_secs(5),
            silence: Duration::from_secs(15),
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(30),
            confirm_within: Duration::from_secs(10),
            surface: OwnerSurface::App,
        }
    }
}

/// How a host's link stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HostLinkState {
    /// Opening the connection for the first time (a host that went down
    /// stays `Down` while it is tried again).
    Connecting,
    /// Connected and subscribed. `engine`: which engine process answers
    /// (another after the host's engine restarted); `resync`: how many
    /// times the link came back (re-read the host whenever it grows).
    Live {
        engine: String,
        version: String,
        resync: u64,
    },
    /// Not connected: since when (ms since the epoch), why, and when it
    /// tries again (now, while it is trying).
    Down {
        since_ms: i64,
        retry_at_ms: i64,
        reason: String,
    },
}

/// A host's link as the window shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct HostLinkView {
    pub name: String,
    /// `ssh://[user@]host[:port]`.
    pub url: String,
    /// The fingerprint of the host engine's pinned signing key.
    pub fingerprint: String,
    pub state: HostLinkState,
}

/// An event of a host's engine, named by its host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct HostEvent {
    pub host: String,
    pub event: EngineEvent,
}

/// One host's link. Dropping it, or [`Link::stop`], closes the connection
/// and stops retrying.
pub struct Link {
    host: Host,
    options: LinkOptions,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Answer = oneshot::Sender<Answered>;

/// What became of a call that was sent.
enum Answered {
    /// The host's engine answered.
    Done(Result<serde_json::Value, ApiError>),
    /// The link dropped before its answer came (why).
    Lost(String),
}

struct Shared {
    name: String,
    state: watch::Sender<HostLinkState>,
    /// The last time it was down, and why: said while it connects again.
    last_down: Mutex<Option<(i64, String)>>,
    conn: Mutex<Option<Arc<Conn>>>,
    events: broadcast::Sender<EngineEvent>,
    retry: Notify,
    /// True once the link is stopped for good.
    stopped: watch::Sender<bool>,
    /// The `resync` of its live state: grows at each reconnection and each
    /// time a reader of its events fell behind (see [`HostEvents`]).
    resyncs: AtomicU64,
    /// Whether it was live once (the first time live is not a resync).
    was_live: std::sync::atomic::AtomicBool,
    /// While live: the engine's instance and version (said again when the
    /// events overflow and the window must re-read).
    live: Mutex<Option<(String, String)>>,
    /// When an overflow last had the window re-read, and whether one more
    /// is due after it (at most one a [`RESYNC_EVERY`]).
    overflow: Mutex<Overflow>,
}

/// How many events of a host wait for the slowest reader before the
/// oldest are dropped (and the window re-reads the host instead).
pub const QUEUE: usize = 1024;

/// The window re-reads a host at most this often for its events'
/// overflows (a host flooding events would have it re-read without end).
pub const RESYNC_EVERY: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Overflow {
    last: Option<Instant>,
    due: bool,
}

/// A host engine's events as a reader of the link gets them. Fallen more
/// than [`QUEUE`] events behind, the reader is told how many it missed
/// (`RecvError::Lagged`), the rest of its backlog is dropped (it goes on
/// from the newest event), and the link's live state says to re-read the
/// host (its `resync` grows): the window lists the host's runs and gates
/// again instead of missing those whose events were dropped.
pub struct HostEvents {
    rx: broadcast::Receiver<EngineEvent>,
    shared: Arc<Shared>,
}

impl HostEvents {
    /// The next event, or how many were dropped (see [`HostEvents`]), or
    /// that the link is gone.
    pub async fn recv(&mut self) -> Result<EngineEvent, broadcast::error::RecvError> {
        match self.rx.recv().await {
            Err(broadcast::error::RecvError::Lagged(n)) => {
                self.rx = self.rx.resubscribe();
                tracing::warn!(host = %self.shared.name, "a reader fell {n} events behind: resyncing");
                overflowed(&self.shared);
                Err(broadcast::error::RecvError::Lagged(n))
            }
            other => other,
        }
    }
}

/// The events overflowed: the live state's `resync` grows now, or once
/// [`RESYNC_EVERY`] after the last time it did for an overflow.
fn overflowed(shared: &Arc<Shared>) {
    let wait = {
        let Ok(mut o) = shared.overflow.lock() else {
            return;
        };
        match o.last {
            Some(last) if last.elapsed() < RESYNC_EVERY => {
                if o.due {
                    return;
                }
                o.due = true;
                RESYNC_EVERY - last.elapsed()
            }
            _ => {
                o.last = Some(Instant::now());
                drop(o);
                resync_live(shared);
                return;
            }
        }
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        if let Ok(mut o) = shared.overflow.lock() {
            o.due = false;
            o.last = Some(Instant::now());
        }
        resync_live(&shared);
    });
}

/// Says the link is live again with a grown `resync` (a reader re-reads
/// the host); nothing while it is not live (it resyncs when it is back).
fn resync_live(shared: &Shared) {
    // Said holding `live`: a connection that ends clears it first, so this
    // never says live after the link went down.
    let Ok(live) = shared.live.lock() else {
        return;
    };
    let Some((engine, version)) = live.clone() else {
        return;
    };
    let resync = shared.resyncs.fetch_add(1, Ordering::SeqCst) + 1;
    shared.state.send_replace(HostLinkState::Live {
        engine,
        version,
        resync,
    });
    drop(live);
}

/// A live connection: its writer and the calls waiting for their answer.
struct Conn {
    writer: tokio::sync::Mutex<ChildStdin>,
    /// The calls waiting for their answer; `None` once the connection
    /// ended (a call then is refused, nothing sent).
    pending: Mutex<Option<HashMap<u64, Answer>>>,
    next_id: AtomicU64,
}

/// Why a call was not written.
enum Unsent {
    /// The connection had ended: nothing was sent.
    Closed,
    /// The write failed: part of it may be out (its answer comes as lost).
    Broken,
}

impl Conn {
    /// Writes the call; its answer comes to `answer`.
    async fn send(&self, request: Request, answer: Answer) -> Result<(), Unsent> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let mut bytes = match serde_json::to_vec(&Call { id, request }) {
            Ok(b) => b,
            Err(e) => {
                let error = ApiError::new(ErrorCode::Internal, e.to_string());
                let _ = answer.send(Answered::Done(Err(error)));
                return Ok(());
            }
        };
        bytes.push(b'\n');
        match self.pending.lock().as_deref_mut() {
            Ok(Some(p)) => {
                p.insert(id, answer);
            }
            _ => return Err(Unsent::Closed),
        }
        let mut w = self.writer.lock().await;
        // Waited for the writer while the connection ended: not written.
        if self.pending.lock().map_or(true, |p| p.is_none()) {
            return Err(Unsent::Closed);
        }
        let written = async {
            w.write_all(&bytes).await?;
            w.flush().await
        }
        .await;
        if written.is_err() {
            // Answered when the connection ends (as possibly applied: part
            // of it may be out).
            return Err(Unsent::Broken);
        }
        Ok(())
    }

    /// Fails every waiting call: the link dropped after they were sent.
    fn fail_all(&self, reason: &str) {
        let pending: Vec<Answer> = self
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .map(|p| p.into_values().collect())
            .unwrap_or_default();
        for answer in pending {
            let _ = answer.send(Answered::Lost(reason.to_owned()));
        }
    }

    fn answer(&self, id: u64, outcome: Result<serde_json::Value, ApiError>) {
        let waiting = self
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.as_mut().and_then(|p| p.remove(&id)));
        if let Some(answer) = waiting {
            let _ = answer.send(Answered::Done(outcome));
        }
    }
}

/// The error of a call whose answer the link lost.
fn lost(name: &str, reason: &str) -> ApiError {
    ApiError::new(
        ErrorCode::EngineUnavailable,
        format!(
            "the link to {name} dropped after the call was sent ({reason}): it may or may not \
             have been applied on {name}, and it was not sent again; the window re-reads \
             {name} when it is back"
        ),
    )
}

/// An id no other link of this or another machine takes: this process, the
/// time and a counter, with the machine's boot id where it can be read.
fn link_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|b| {
            b.trim()
                .replace('-', "")
                .chars()
                .take(12)
                .collect::<String>()
        })
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{boot}-{:x}-{nanos:x}-{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Milliseconds since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `ms` as a UTC time of day (`10:42:07 UTC`).
pub fn clock(ms: i64) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02} UTC",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

impl Link {
    /// Starts linking to `host` (inside a tokio runtime): connecting at
    /// once, reconnecting by itself.
    pub fn start(host: Host, options: LinkOptions) -> Link {
        let (state, _) = watch::channel(HostLinkState::Connecting);
        let (events, _) = broadcast::channel(QUEUE);
        let shared = Arc::new(Shared {
            name: host.name.clone(),
            state,
            last_down: Mutex::new(None),
            conn: Mutex::new(None),
            events,
            retry: Notify::new(),
            stopped: watch::channel(false).0,
            resyncs: AtomicU64::new(0),
            was_live: std::sync::atomic::AtomicBool::new(false),
            live: Mutex::new(None),
            overflow: Mutex::new(Overflow::default()),
        });
        let task = tokio::spawn(run(shared.clone(), host.clone(), options));
        Link {
            host,
            options,
            shared,
            task,
        }
    }

    pub fn name(&self) -> &str {
        &self.host.name
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// How it stands now.
    pub fn state(&self) -> HostLinkState {
        self.shared.state.borrow().clone()
    }

    /// How it stands, with the host's name, address and key.
    pub fn view(&self) -> HostLinkView {
        HostLinkView {
            name: self.host.name.clone(),
            url: self.host.target().url(),
            fingerprint: self.host.fingerprint(),
            state: self.state(),
        }
    }

    /// Every change of its state, from now.
    pub fn watch(&self) -> watch::Receiver<HostLinkState> {
        self.shared.state.subscribe()
    }

    /// The host engine's events, from now (while live); a reader that
    /// falls too far behind skips ahead and the link resyncs (see
    /// [`HostEvents`]).
    pub fn events(&self) -> HostEvents {
        HostEvents {
            rx: self.shared.events.subscribe(),
            shared: self.shared.clone(),
        }
    }

    /// Tries again now instead of at its retry time (a live link is left alone).
    pub fn retry_now(&self) {
        self.shared.retry.notify_one();
    }

    /// Stops it for good (its host was forgotten, or its entry changed):
    /// its ssh is killed, it no longer retries, a call waiting for its
    /// answer is told the link was closed, and later calls are refused.
    /// Whoever waits on [`Link::stopped`] is woken.
    pub fn stop(&self) {
        self.task.abort();
        let conn = self.shared.conn.lock().ok().and_then(|mut c| c.take());
        if let Some(conn) = conn {
            conn.fail_all("the link was closed here");
        }
        self.shared.stopped.send_replace(true);
    }

    /// Whether [`Link::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        *self.shared.stopped.borrow()
    }

    /// Returns once the link is stopped for good (at once if it is).
    pub async fn stopped(&self) {
        let mut rx = self.shared.stopped.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Sends `request` to the host's engine and waits for its answer;
    /// refused at once (nothing sent) when the link is not live. A call
    /// whose answer the link lost is never sent again; a decision's is
    /// looked up once the link is back (within
    /// [`LinkOptions::confirm_within`]) to say whether it was applied.
    pub async fn call(&self, request: Request) -> Result<serde_json::Value, ApiError> {
        let decision = match &request {
            Request::DecideGate {
                gate,
                option,
                context,
            } => Some((*gate, *option, context.clone())),
            _ => None,
        };
        let reason = match self.exchange(request).await? {
            Answered::Done(outcome) => return outcome,
            Answered::Lost(reason) => reason,
        };
        match decision {
            Some((gate, option, context)) => self.confirm(gate, option, context, &reason).await,
            None => Err(lost(&self.host.name, &reason)),
        }
    }

    /// Sends `request` once; what became of it. Err: refused, nothing sent.
    async fn exchange(&self, request: Request) -> Result<Answered, ApiError> {
        let conn = self.shared.conn.lock().ok().and_then(|c| c.clone());
        let Some(conn) = conn else {
            return Err(self.refusal());
        };
        let (tx, rx) = oneshot::channel();
        if let Err(Unsent::Closed) = conn.send(request, tx).await {
            return Err(self.refusal());
        }
        drop(conn);
        Ok(rx
            .await
            .unwrap_or_else(|_| Answered::Lost("the connection ended".to_owned())))
    }

    /// Whether a decision whose answer was lost was applied: the gate read
    /// once the link is back. Applied: the gate, as its answer would have
    /// been. Else why not, or that it cannot be told yet.
    async fn confirm(
        &self,
        gate: overseer_core::GateId,
        option: overseer_core::RequestedChoice,
        context: Option<String>,
        reason: &str,
    ) -> Result<serde_json::Value, ApiError> {
        let name = &self.host.name;
        let mut states = self.watch();
        let back = tokio::time::timeout(self.options.confirm_within, async {
            loop {
                let live = matches!(*states.borrow_and_update(), HostLinkState::Live { .. });
                if live && self.shared.conn.lock().is_ok_and(|c| c.is_some()) {
                    return true;
                }
                if states.changed().await.is_err() {
                    return false;
                }
            }
        })
        .await
        .unwrap_or(false);
        if !back {
            return Err(lost(name, reason));
        }
        let Ok(Answered::Done(Ok(shown))) = self.exchange(Request::ShowGate { gate }).await else {
            return Err(lost(name, reason));
        };
        let Ok(view) = serde_json::from_value::<overseer_core::GateView>(shown.clone()) else {
            return Err(lost(name, reason));
        };
        let wanted = option
            .for_gate(view.kind())
            .ok()
            .map(|c| c.as_str().to_owned());
        match &view.decision {
            None => Err(ApiError::new(
                ErrorCode::EngineUnavailable,
                format!(
                    "the link to {name} dropped after the decision was sent ({reason}); it was \
                     not applied: gate {gate} is still pending on {name}. Decide again"
                ),
            )),
            Some(d) if Some(&d.option) == wanted.as_ref() && d.context == context => Ok(shown),
            Some(d) => Err(ApiError::new(
                ErrorCode::AlreadyDecided,
                format!(
                    "the link to {name} dropped after the decision was sent ({reason}); gate \
                     {gate} was decided otherwise on {name} meanwhile ({} by {})",
                    d.option, d.actor
                ),
            )),
        }
    }

    /// Runs one operation of the table on the host and decodes its answer.
    pub async fn perform<O>(&self, op: O) -> Result<O::Response, ApiError>
    where
        O: Operation + Into<Request>,
        O::Response: serde::de::DeserializeOwned,
    {
        let value = self.call(op.into()).await?;
        serde_json::from_value(value).map_err(|e| {
            ApiError::new(
                ErrorCode::Internal,
                format!(
                    "unreadable answer from {} ({e}); are both the same version?",
                    self.host.name
                ),
            )
        })
    }

    /// Why a call is refused now (the link is not live).
    fn refusal(&self) -> ApiError {
        let name = &self.host.name;
        if self.is_stopped() {
            return ApiError::new(
                ErrorCode::EngineUnavailable,
                format!(
                    "the link to {name} is closed (the host was removed or changed); nothing \
                     was sent"
                ),
            );
        }
        let message = match self.state() {
            HostLinkState::Down {
                since_ms,
                retry_at_ms,
                reason,
            } => format!(
                "{name} is unreachable since {} ({reason}); nothing was sent; retrying at {}",
                clock(since_ms),
                clock(retry_at_ms)
            ),
            HostLinkState::Connecting => {
                match self.shared.last_down.lock().ok().and_then(|d| d.clone()) {
                    Some((since, reason)) => format!(
                        "{name} is unreachable since {} ({reason}); nothing was sent; \
                         reconnecting now",
                        clock(since)
                    ),
                    None => {
                        format!("{name} is not connected yet; nothing was sent; connecting now")
                    }
                }
            }
            // Live in the state but its connection just went: say so.
            HostLinkState::Live { .. } => {
                format!("the link to {name} is closing; nothing was sent; it reconnects by itself")
            }
        };
        ApiError::new(ErrorCode::EngineUnavailable, message)
    }
}

/// Connects, serves, and reconnects with backoff, forever.
async fn run(shared: Arc<Shared>, host: Host, options: LinkOptions) {
    // This link's id on the host, the same at each reconnection: a new
    // bridge ends the one a cut left there (`handshake::supersede`), and
    // the new connection's subscription fences the earlier ones (the
    // server's `links`), so nothing written before the cut is carried out
    // after the link reads the outcome. Its connections are numbered from
    // 0. When the host's engine refuses the number (another process on the
    // host took the link's id with a higher one, or the engine restarted
    // and this number is more than it takes for a link it does not know),
    // the link takes a new id, numbered from 0 again, and reconnects at
    // once: no process can keep it out by naming its id. Its earlier
    // connections are fenced already (by the number that was refused).
    let mut id = link_id();
    let mut number: u64 = 0;
    let mut renumbered = false;
    let mut wait = options.first_retry;
    let mut since: Option<i64> = None;
    loop {
        // Connecting only the first time: a host that went down stays down
        // (since when, why) while it is tried again, retrying now.
        let last = since.and_then(|s| {
            let d = shared.last_down.lock().ok()?.clone()?;
            Some((s, d.1))
        });
        shared.state.send_replace(match last {
            Some((since_ms, reason)) => HostLinkState::Down {
                since_ms,
                retry_at_ms: now_ms(),
                reason,
            },
            None => HostLinkState::Connecting,
        });
        let reason = match connect(&host, &options, &id).await {
            Err(reason) => reason,
            Ok(bridge) => {
                since = None;
                wait = options.first_retry;
                let this = number;
                number += 1;
                match serve(&shared, &options, bridge, (&id, this)).await {
                    Ended::Over(reason) => {
                        renumbered = false;
                        reason
                    }
                    Ended::Renumber(reason) => {
                        tracing::warn!(host = %host.name, "link renumbered: {reason}");
                        id = link_id();
                        number = 0;
                        // At once the first time; a new id refused too
                        // (an engine that refuses every link) waits as
                        // any failure does, so the link never spins.
                        if !std::mem::replace(&mut renumbered, true) {
                            continue;
                        }
                        reason
                    }
                }
            }
        };
        let now = now_ms();
        let since_ms = *since.get_or_insert(now);
        if let Ok(mut d) = shared.last_down.lock() {
            *d = Some((since_ms, reason.clone()));
        }
        let retry_at_ms = now + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2);
        tracing::info!(host = %host.name, "link down: {reason}");
        shared.state.send_replace(HostLinkState::Down {
            since_ms,
            retry_at_ms,
            reason,
        });
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.retry.notified() => {}
        }
        wait = (wait * 2).min(options.max_retry);
    }
}

/// How a connection ended.
enum Ended {
    /// Why (for the user); the link retries after its wait.
    Over(String),
    /// The host's engine refused the connection's number: the link takes a
    /// new id and reconnects at once.
    Renumber(String),
}

/// Opens the bridge and checks the pinned key; Err: why not, for the user.
async fn connect(host: &Host, options: &LinkOptions, id: &str) -> Result<Bridge, String> {
    // ssh gives up on a connection that does not open (the host gone from
    // the network) instead of waiting for the system's TCP timeout.
    let timeout = options.silence.as_secs().max(1);
    let extra = vec!["-o".to_owned(), format!("ConnectTimeout={timeout}")];
    let target = host.target();
    let opening = handshake::open_link(&target, &host.dir, &host.name, &extra, Some(id));
    let bridge = match tokio::time::timeout(options.silence * 2, opening).await {
        Err(_) => {
            return Err(format!(
                "ssh did not connect within {:?}",
                options.silence * 2
            ))
        }
        Ok(Err(e)) => return Err(e.message(&host.name)),
        Ok(Ok(b)) => b,
    };
    handshake::check_key(host, &bridge.welcome).map_err(|e| e.0)?;
    Ok(bridge)
}

/// One line from the host, or why the connection ended.
async fn read_line(
    reader: &mut tokio::io::BufReader<tokio::process::ChildStdout>,
    buf: &mut Vec<u8>,
) -> Result<ServerLine, String> {
    buf.clear();
    let n = reader
        .take(MAX_LINE as u64 * 16)
        .read_until(b'\n', buf)
        .await
        .map_err(|e| format!("reading from ssh failed: {e}"))?;
    if n == 0 {
        return Err("the connection closed".to_owned());
    }
    serde_json::from_slice(buf.trim_ascii_end())
        .map_err(|e| format!("the host sent a line that is not the engine's protocol: {e}"))
}

/// Subscribes as the link's newest connection (`connection`: the link's id
/// and this connection's number), goes live, and carries calls and events
/// until the connection ends; returns how it ended.
async fn serve(
    shared: &Shared,
    options: &LinkOptions,
    bridge: Bridge,
    connection: (&str, u64),
) -> Ended {
    let (link, number) = connection;
    let said = bridge.said.clone();
    let Bridge {
        mut reader,
        writer,
        child,
        welcome,
        ..
    } = bridge;
    let _child = child;
    let conn = Arc::new(Conn {
        writer: tokio::sync::Mutex::new(writer),
        pending: Mutex::new(Some(HashMap::new())),
        next_id: AtomicU64::new(1),
    });
    let with_ssh = |reason: String| {
        let s = said
            .lock()
            .map(|s| String::from_utf8_lossy(&s).trim().to_owned())
            .unwrap_or_default();
        match s.lines().last() {
            Some(last) if !last.is_empty() => format!("{reason}; ssh: {}", super::inert(last)),
            _ => reason,
        }
    };
    let mut buf = Vec::new();
    // Subscribed before it is live: no event after "live" is missed.
    let (tx, mut subscribed) = oneshot::channel();
    // Named as the link's newest connection: from its subscription on,
    // nothing the link's earlier connections left unread is carried out.
    let subscribe = Request::SubscribeAs {
        surface: options.surface,
        link: Some(crate::api::LinkConnection {
            link: link.to_owned(),
            number,
        }),
    };
    if conn.send(subscribe, tx).await.is_err() {
        return Ended::Over(with_ssh(
            "the connection closed while subscribing".to_owned(),
        ));
    }
    let deadline = tokio::time::sleep(options.silence);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            line = read_line(&mut reader, &mut buf) => match line {
                Ok(line) => dispatch(shared, &conn, line),
                Err(reason) => return Ended::Over(with_ssh(reason)),
            },
            outcome = &mut subscribed => match outcome {
                Ok(Answered::Done(Ok(_))) => break,
                Ok(Answered::Done(Err(e))) => {
                    let reason = format!(
                        "the host's engine refused to subscribe: {}",
                        super::inert(&e.message)
                    );
                    return match e.code {
                        ErrorCode::Conflict | ErrorCode::InvalidInput => Ended::Renumber(reason),
                        _ => Ended::Over(reason),
                    };
                }
                Ok(Answered::Lost(_)) | Err(_) => {
                    return Ended::Over("the connection closed while subscribing".to_owned())
                }
            },
            _ = &mut deadline => {
                return Ended::Over(format!(
                    "the host's engine did not answer within {:?}",
                    options.silence
                ))
            }
        }
    }
    if let Ok(mut c) = shared.conn.lock() {
        *c = Some(conn.clone());
    }
    // The first time live: 0; each time after, and each time the events
    // overflowed meanwhile, higher (the window re-reads the host).
    let resync = if shared.was_live.swap(true, Ordering::SeqCst) {
        shared.resyncs.fetch_add(1, Ordering::SeqCst) + 1
    } else {
        shared.resyncs.load(Ordering::SeqCst)
    };
    let engine = super::inert(&welcome.engine_instance.clone().unwrap_or_default());
    let version = super::inert(&welcome.engine_version);
    if let Ok(mut live) = shared.live.lock() {
        *live = Some((engine.clone(), version.clone()));
    }
    shared.state.send_replace(HostLinkState::Live {
        engine,
        version,
        resync,
    });
    tracing::info!(host = %shared.name, resync, "link live");
    let mut heard = Instant::now();
    let mut beat = tokio::time::interval(options.heartbeat);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let reason = loop {
        tokio::select! {
            line = read_line(&mut reader, &mut buf) => match line {
                Ok(line) => {
                    heard = Instant::now();
                    if let Err(reason) = dispatch_live(shared, &conn, line) {
                        break reason;
                    }
                }
                Err(reason) => break with_ssh(reason),
            },
            _ = beat.tick() => {
                if heard.elapsed() > options.silence {
                    break format!("no answer from the host for {:?}", options.silence);
                }
                // A ping keeps the line heard; its answer is dropped.
                let (tx, _rx) = oneshot::channel();
                let conn = conn.clone();
                tokio::spawn(async move {
                    let _ = conn.send(Request::Ping, tx).await;
                });
            }
        }
    };
    if let Ok(mut c) = shared.conn.lock() {
        *c = None;
    }
    if let Ok(mut live) = shared.live.lock() {
        *live = None;
    }
    conn.fail_all(&reason);
    Ended::Over(reason)
}

/// A line before the link is live.
fn dispatch(shared: &Shared, conn: &Conn, line: ServerLine) {
    let _ = dispatch_live(shared, conn, line);
}

/// A line from the host: an answer to its call, or an event. Err: a line
/// that ends the connection (the engine refused it as a whole).
fn dispatch_live(shared: &Shared, conn: &Conn, line: ServerLine) -> Result<(), String> {
    match line {
        ServerLine::Result {
            id: Some(id),
            result,
        } => conn.answer(id, Ok(result)),
        ServerLine::Error {
            id: Some(id),
            error,
        } => conn.answer(id, Err(error)),
        ServerLine::Event { event } => {
            let _ = shared.events.send(*event);
        }
        ServerLine::Error { id: None, error } => {
            return Err(format!(
                "the host's engine said: {}",
                super::inert(&error.message)
            ))
        }
        ServerLine::Result { id: None, .. } => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_states_are_tagged_by_status_in_snake_case() {
        let down = HostLinkState::Down {
            since_ms: 1,
            retry_at_ms: 2,
            reason: "cut".into(),
        };
        assert_eq!(
            serde_json::to_value(&down).expect("json"),
            serde_json::json!({"status": "down", "since_ms": 1, "retry_at_ms": 2, "reason": "cut"})
        );
        assert_eq!(
            serde_json::to_value(HostLinkState::Connecting).expect("json"),
            serde_json::json!({"status": "connecting"})
        );
        let live = HostLinkState::Live {
            engine: "e".into(),
            version: "1".into(),
            resync: 3,
        };
        assert_eq!(serde_json::to_value(&live).expect("json")["status"], "live");
        assert_eq!(clock(3_723_000), "01:02:03 UTC");
    }
}

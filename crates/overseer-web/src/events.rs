//! `GET /api/events`: the engine's events pushed to a paired browser over
//! a WebSocket. The first frame is the hello (this engine process's id:
//! another id after a reconnect means the engine restarted and the page
//! resyncs), then one frame per engine event in commit order.
//!
//! Each socket has a bounded queue ([`QUEUE`] frames, behind the engine's
//! bus's own bound): a browser that does not read (a phone that slept, a
//! stuck tab) is dropped when one frame cannot be written for
//! [`SEND_TIMEOUT`], or when it falls further behind than the bus keeps; it
//! reconnects and resyncs. A burst of events to a browser that reads is
//! not a reason to drop it. The engine's bus never waits for a browser. A
//! device revoked while connected gets close code 4401 at once.
//!
//! Every [`HEARTBEAT`] the server sends a heartbeat frame
//! (`{"channel": "overseer://heartbeat", "payload": null}`, which a page can
//! see, unlike a WebSocket ping) and a ping; the hello names the interval
//! (`"heartbeat": <ms>`). A page that hears nothing for [`SILENCE`] times
//! the interval takes its connection for dead, reconnects and resyncs. The
//! server drops a socket on which nothing came for as long (browsers answer
//! pings by themselves): a browser gone without closing (a phone off the
//! network) holds nothing.

use crate::auth;
use crate::reply;
use crate::state::Web;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use futures::stream::SplitStream;
use futures::{SinkExt, StreamExt};
use overseer_core::{ApiError, DeviceView, EngineEvent, ErrorCode};
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::mpsc;

/// Frames a socket may have waiting to be written.
pub const QUEUE: usize = 256;
/// How long one frame may take to be written before the browser is dropped.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(5);
pub use crate::state::HEARTBEAT;
/// After how many heartbeat intervals of silence either side takes the
/// connection for dead (2.5: two heartbeats missed, and some slack).
pub const SILENCE: f64 = 2.5;
/// The channel of the heartbeat frame.
pub const HEARTBEAT_CHANNEL: &str = "overseer://heartbeat";
/// The close code for a revoked device.
pub const REVOKED: u16 = 4401;
/// The largest frame a browser may send (it sends none the server reads).
const MAX_INCOMING: usize = 64 << 10;
/// The socket's read buffer.
const READ_BUFFER: usize = 4 << 10;

/// The channel events go out on, as the contract's table names it.
fn event_channel() -> &'static str {
    overseer_api::EVENTS
        .iter()
        .find(|e| e.name == "subscribe")
        .map_or("overseer://event", |e| e.channel)
}

fn frame<T: serde::Serialize>(channel: &str, payload: &T) -> Option<Message> {
    serde_json::to_string(&serde_json::json!({ "channel": channel, "payload": payload }))
        .ok()
        .map(|s| Message::Text(s.into()))
}

/// The upgrade: a paired device only, both halves of its credential (the
/// cookie, and the page's half among the offered protocols); Origin was
/// checked before.
pub async fn upgrade(
    State(web): State<Web>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // Subscribed before the device is looked up: a revocation committed
    // after the lookup is on this bus, and no event committed after the
    // browser sees the 101 is missed.
    let bus = web.engine.subscribe();
    let device = match auth::device(&web.engine, &headers).await {
        Ok(d) => d,
        Err(e) => return reply::error(e),
    };
    let Some(slot) = web
        .sockets
        .take(device.id, crate::state::MAX_SOCKETS_PER_DEVICE)
    else {
        return reply::error(ApiError::new(
            ErrorCode::RateLimited,
            format!(
                "{} has {} event sockets open already: close a tab of Overseer and retry",
                device.name,
                crate::state::MAX_SOCKETS_PER_DEVICE
            ),
        ));
    };
    let ws = match ws {
        Ok(ws) => ws,
        Err(e) => {
            return reply::error(ApiError::new(
                ErrorCode::InvalidInput,
                format!("/api/events is a WebSocket: open it with `new WebSocket(...)` ({e})"),
            ))
        }
    };
    let beat = web.heartbeat;
    let hello = frame(
        "overseer://hello",
        &serde_json::json!({
            "engine": &*web.instance,
            "heartbeat": u64::try_from(beat.as_millis()).unwrap_or(u64::MAX),
        }),
    );
    // The browser sends next to nothing: a small read buffer (tungstenite
    // allocates 128 KiB per socket by default), frames written as they come.
    // The page offers `overseer` and its credential's half
    // (`auth::PROTOCOL_PREFIX`): the answer names `overseer`, never the half.
    ws.protocols([auth::PROTOCOL])
        .max_message_size(MAX_INCOMING)
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .on_upgrade(move |socket| {
            let mut closed = web.closed.clone();
            async move {
                // Serving browsers stopped: the socket ends with it.
                tokio::select! {
                    _ = pump(socket, bus, device, hello, beat) => {}
                    _ = closed.changed() => {}
                }
                drop(slot);
            }
        })
}

/// Why a socket's pump stopped.
enum Exit {
    Revoked,
    TooSlow,
    EngineClosed,
}

async fn pump(
    socket: WebSocket,
    mut bus: broadcast::Receiver<EngineEvent>,
    device: DeviceView,
    hello: Option<Message>,
    beat: Duration,
) {
    let (mut sink, mut incoming) = socket.split();
    let (queue, mut queued) = mpsc::channel::<Message>(QUEUE);
    if let Some(hello) = hello {
        let _ = queue.try_send(hello);
    }
    let channel = event_channel();
    let writer = async move {
        while let Some(message) = queued.recv().await {
            let closing = matches!(message, Message::Close(_));
            match tokio::time::timeout(SEND_TIMEOUT, sink.send(message)).await {
                Ok(Ok(())) if !closing => {}
                _ => return,
            }
        }
    };
    let silence = beat.mul_f64(SILENCE);
    let reader = listen(&mut incoming, silence);
    let heartbeat = heartbeat(&queue, beat);
    let forward = forward(&mut bus, &device, channel, &queue);
    tokio::pin!(writer);
    tokio::select! {
        _ = &mut writer => {
            tracing::info!("a browser took no event for {SEND_TIMEOUT:?}: dropped; it will reconnect and resync");
        }
        silent = reader => if silent {
            tracing::info!("a browser sent nothing for {silence:?} (no pong): dropped; it will reconnect and resync");
        },
        () = heartbeat => {}
        exit = forward => match exit {
            Exit::Revoked => {
                // The frames before it, then the close; not longer than one send.
                let _ = tokio::time::timeout(SEND_TIMEOUT, writer).await;
            }
            Exit::TooSlow => {
                tracing::info!("a browser fell behind the engine's events: dropped; it will reconnect and resync");
            }
            Exit::EngineClosed => {}
        },
    }
}

/// Reads the browser until it leaves (false) or falls silent for `silence`
/// (true).
async fn listen(incoming: &mut SplitStream<WebSocket>, silence: Duration) -> bool {
    // The browser sends nothing we act on but pongs; reading notices it
    // leave, or fall silent (and answers its pings).
    loop {
        match tokio::time::timeout(silence, incoming.next()).await {
            Err(_) => return true,
            Ok(Some(Ok(Message::Close(_)))) | Ok(Some(Err(_))) | Ok(None) => return false,
            Ok(Some(Ok(_))) => {}
        }
    }
}

/// Queues a heartbeat frame and a ping every `beat`, for as long as the
/// browser is served.
async fn heartbeat(queue: &mpsc::Sender<Message>, beat: Duration) {
    let mut every = tokio::time::interval_at(tokio::time::Instant::now() + beat, beat);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let beat_frame = frame(HEARTBEAT_CHANNEL, &serde_json::Value::Null);
    loop {
        every.tick().await;
        // A full queue is a browser behind: the writer's timeout is
        // about it; the beat is skipped.
        if let Some(beat) = beat_frame.clone() {
            let _ = queue.try_send(beat);
        }
        let _ = queue.try_send(Message::Ping(Default::default()));
    }
}

/// Queues the engine's events the device may see, until the device is
/// revoked, falls behind, or the engine closes.
async fn forward(
    bus: &mut broadcast::Receiver<EngineEvent>,
    device: &DeviceView,
    channel: &str,
    queue: &mpsc::Sender<Message>,
) -> Exit {
    loop {
        match bus.recv().await {
            Ok(event) => {
                if auth::revoked(&event) == Some(device.id) {
                    let _ = queue.try_send(Message::Close(Some(CloseFrame {
                        code: REVOKED,
                        reason: "this device was revoked".into(),
                    })));
                    return Exit::Revoked;
                }
                // Another person's devices are the owner's to know.
                if matches!(&event, EngineEvent::DeviceChanged { device: d } if d.person != device.person)
                {
                    continue;
                }
                let Some(message) = frame(channel, &event) else {
                    continue;
                };
                // Full: wait for the writer (which gives up on a browser
                // that takes no frame for SEND_TIMEOUT); the bus keeps
                // the events meanwhile, up to its own bound.
                if queue.send(message).await.is_err() {
                    return Exit::TooSlow;
                }
            }
            Err(RecvError::Lagged(_)) => return Exit::TooSlow,
            Err(RecvError::Closed) => return Exit::EngineClosed,
        }
    }
}

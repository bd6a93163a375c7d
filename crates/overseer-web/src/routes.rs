//! The HTTP routes and the checks every request passes first (Origin, Host,
//! body size and deadline, the number of calls at once: paired devices and
//! everyone else in pools of their own).

use crate::conn::{Conn, BODY_TIMEOUT};
pub use crate::state::{Known, Web, MAX_IN_FLIGHT};
use crate::state::{ANONYMOUS_WAIT, MAX_ANONYMOUS_IN_FLIGHT};
use crate::{assets, auth, calls, events, reply, MAX_BODY};
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{any, get, post};
use axum::Router;
use overseer_core::{ApiError, ErrorCode};

pub fn router(web: Web) -> Router {
    Router::new()
        .route("/api/pair", post(pair).fallback(no_such))
        .route("/api/me", get(me).fallback(no_such))
        .route("/api/call/{command}", post(call).fallback(no_such))
        .route("/api/events", get(events::upgrade).fallback(no_such))
        .route("/api", any(no_such))
        .route("/api/{*rest}", any(no_such))
        .fallback(page)
        .layer(middleware::from_fn_with_state(web.clone(), guard))
        .with_state(web)
}

fn forbidden(message: String) -> Response {
    reply::error(ApiError::new(ErrorCode::Forbidden, message))
}

fn too_large() -> Response {
    too_large_for(MAX_BODY)
}

/// The 413 of a body over `limit` (a paired device's, [`MAX_BODY`], or
/// anyone else's, [`MAX_ANONYMOUS_BODY`]).
fn too_large_for(limit: usize) -> Response {
    let text = if limit >= MAX_BODY {
        format!(
            "the request body is over {} MiB: send less (a decision's context, a message) \
             and retry",
            limit >> 20
        )
    } else {
        format!(
            "the request body is over {} KiB, more than a request without a device credential \
             may send: pair this browser first",
            limit >> 10
        )
    };
    reply::error_with(
        StatusCode::PAYLOAD_TOO_LARGE,
        ApiError::new(ErrorCode::InvalidInput, text),
    )
}

/// The host name of a `Host` header (without its port).
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(name, _)| name);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The checks before any `/api` handler: the Host (on loopback), the Origin
/// (on every POST and the WebSocket upgrade), the declared body size, the
/// credential (a device the engine knows, or nobody), the body (read
/// whole, within [`BODY_TIMEOUT`], before any slot is taken), and a slot
/// among the calls served at once: a paired device's among
/// [`MAX_IN_FLIGHT`], anyone else's among [`MAX_ANONYMOUS_IN_FLIGHT`], so
/// requests without a credential never take a paired device's slot.
async fn guard(State(web): State<Web>, request: Request, next: Next) -> Response {
    let conn = request.extensions().get::<Conn>().cloned();
    let path = request.uri().path();
    if path != "/api" && !path.starts_with("/api/") {
        if let Some(conn) = &conn {
            conn.0.serving();
        }
        return next.run(request).await;
    }
    let headers = request.headers();
    if let Some(refused) = misaddressed(&web, headers, request.method()) {
        return refused;
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|l| l.to_str().ok())
        .and_then(|l| l.parse::<u64>().ok());
    if declared.is_some_and(|l| l > MAX_BODY as u64) {
        // Read (and dropped) first, so the browser, still sending, gets the
        // 413 rather than a broken connection.
        if declared.is_some_and(|l| l <= DRAIN as u64) {
            let _ = drain(request.into_body(), 0).await;
        }
        return too_large();
    }
    // A device the engine knows (one read), or nobody: which pool.
    let known = match auth::credential(headers) {
        Some(_) => auth::device(&web.engine, headers).await.ok(),
        None => None,
    };
    if let Some(conn) = &conn {
        conn.0.credential(known.is_some());
    }
    // The body, whole and within its deadline, before any slot: a slow
    // body holds its connection only (which a new one may take: `listen`).
    let (mut parts, incoming) = request.into_parts();
    let bytes = if parts.method == Method::GET || parts.method == Method::HEAD {
        axum::body::Bytes::new()
    } else {
        let limit = if known.is_some() {
            MAX_BODY
        } else {
            MAX_ANONYMOUS_BODY
        };
        match body(incoming, limit).await {
            Ok(b) => b,
            Err(r) => return r,
        }
    };
    if let Some(conn) = &conn {
        conn.0.serving();
    }
    // Held until the answer (for the socket: until its upgrade is answered).
    let _slot = match slot(&web, known.is_some()).await {
        Ok(slot) => slot,
        Err(refused) => return refused,
    };
    parts.extensions.insert(Known(known));
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The refusal of an `/api` request not addressed to this engine: by a name
/// it answers to (on loopback) and, on a POST or the WebSocket upgrade,
/// from its own page.
fn misaddressed(web: &Web, headers: &HeaderMap, method: &Method) -> Option<Response> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    // A page a proxy serves this engine at names the proxy's host.
    let public = web.public_origins.iter().find(|o| {
        o.split_once("://")
            .is_some_and(|(_, h)| h.eq_ignore_ascii_case(&host))
    });
    if web.loopback && public.is_none() && !is_loopback_name(host_name(&host)) {
        return Some(forbidden(format!(
            "this engine serves on loopback and answers only to localhost, 127.0.0.1 or [::1] \
             (and to the origins given with --web-origin), not to {host:?}; open it by one of \
             those names"
        )));
    }
    let upgrade = headers.contains_key(header::UPGRADE);
    if method == Method::POST || upgrade {
        let own = format!("{}://{host}", web.scheme);
        let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
        // A proxy may pass the browser's Host on, or name the loopback
        // address it forwards to: a page of a public origin is ours either way.
        let ours = origin.is_some_and(|o| {
            o.eq_ignore_ascii_case(&own)
                || web.public_origins.iter().any(|p| o.eq_ignore_ascii_case(p))
        });
        if !ours {
            return Some(forbidden(format!(
                "refused: the request comes from {}, not from this engine's own page ({own}); \
                 other sites may not call the engine",
                origin.map_or_else(|| "no origin".to_owned(), |o| format!("{o:?}"))
            )));
        }
    }
    None
}

/// A slot among the calls served at once: a paired device's (`known`)
/// taken at once or refused, anyone else's waited for a while.
async fn slot(web: &Web, known: bool) -> Result<tokio::sync::OwnedSemaphorePermit, Response> {
    if known {
        let Ok(slot) = web.in_flight().try_acquire_owned() else {
            return Err(reply::error(ApiError::new(
                ErrorCode::RateLimited,
                format!(
                    "the engine is answering {MAX_IN_FLIGHT} requests at once already: wait a \
                     moment and retry"
                ),
            )));
        };
        Ok(slot)
    } else {
        match tokio::time::timeout(ANONYMOUS_WAIT, web.anonymous().acquire_owned()).await {
            Ok(Ok(slot)) => Ok(slot),
            _ => Err(reply::error(ApiError::new(
                ErrorCode::RateLimited,
                format!(
                    "the engine is answering {MAX_ANONYMOUS_IN_FLIGHT} requests without a \
                     device credential at once already (paired devices are served apart): \
                     wait a moment and retry"
                ),
            ))),
        }
    }
}

/// Largest body read from a request without a credential the engine knows
/// (a pairing code is a few bytes); a larger one gets 413.
const MAX_ANONYMOUS_BODY: usize = 16 << 10;

/// How much of an oversized body is read and dropped before the 413 (a
/// larger one gets it at once, and the connection is closed).
const DRAIN: usize = 8 << 20;

/// Reads what is left of `body` (at most [`DRAIN`] in all, `seen` read
/// already), within the time a request may take.
async fn drain(body: Body, mut seen: usize) {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let reading = async {
        while let Some(Ok(chunk)) = stream.next().await {
            seen += chunk.len();
            if seen > DRAIN {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(crate::conn::HANDSHAKE_TIMEOUT, reading).await;
}

/// A body of at most `limit` bytes, read within [`BODY_TIMEOUT`], or the
/// 413 or 408 to answer.
async fn body(body: Body, limit: usize) -> Result<axum::body::Bytes, Response> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let deadline = tokio::time::Instant::now() + BODY_TIMEOUT;
    loop {
        let chunk = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => {
                return Err(reply::error_with(
                    StatusCode::REQUEST_TIMEOUT,
                    ApiError::new(
                        ErrorCode::InvalidInput,
                        format!(
                            "the request body did not arrive within {} s: send it again, \
                             whole",
                            BODY_TIMEOUT.as_secs()
                        ),
                    ),
                ))
            }
            Ok(None) => break,
            Ok(Some(chunk)) => chunk,
        };
        let Ok(chunk) = chunk else {
            return Err(reply::error(ApiError::new(
                ErrorCode::InvalidInput,
                "the request body could not be read; send it again",
            )));
        };
        if bytes.len() + chunk.len() > limit {
            let seen = bytes.len() + chunk.len();
            drain(Body::from_stream(stream), seen).await;
            return Err(too_large_for(limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}

/// The device `guard` found for the request, else `auth`'s refusal.
async fn known_device(
    web: &Web,
    known: Option<axum::Extension<Known>>,
    headers: &HeaderMap,
) -> Result<overseer_core::DeviceView, ApiError> {
    match known.and_then(|k| k.0 .0) {
        Some(device) => Ok(device),
        None => auth::device(&web.engine, headers).await,
    }
}

async fn call(
    State(web): State<Web>,
    Path(command): Path<String>,
    known: Option<axum::Extension<Known>>,
    headers: HeaderMap,
    request: Body,
) -> Response {
    if !calls::COMMANDS.contains(&command.as_str()) {
        return unknown(&command);
    }
    let device = match known_device(&web, known, &headers).await {
        Ok(d) => d,
        Err(e) => return reply::error(e),
    };
    let bytes = match body(request, MAX_BODY).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    match calls::call(&web.engine, device.actor(), &command, &bytes).await {
        Some(outcome) => reply::outcome(outcome),
        None => unknown(&command),
    }
}

fn unknown(command: &str) -> Response {
    reply::error(ApiError::new(
        ErrorCode::NotFound,
        format!(
            "no command `{command}`: a browser can call the window's commands ({} of them, \
             e.g. `list_runs`, `decide_gate`)",
            calls::COMMANDS.len()
        ),
    ))
}

#[derive(serde::Deserialize)]
struct PairBody {
    code: String,
}

async fn pair(
    State(web): State<Web>,
    peer: Option<axum::Extension<crate::conn::Peer>>,
    request: Body,
) -> Response {
    let ip = peer.map(|p| p.0 .0.ip());
    // Off loopback, an address that typed its share of wrong codes is
    // refused before its code is looked up. On loopback (the owner's
    // browser and any local flood are one address) the code is looked up
    // first: a right one always pairs (`throttle`).
    let remote = ip.filter(|ip| !crate::throttle::is_loopback(*ip));
    if let Some(Err(e)) = remote.map(|ip| web.pairing.check(ip)) {
        return reply::error(e);
    }
    let bytes = match body(request, MAX_BODY).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let code = match serde_json::from_slice::<PairBody>(&bytes) {
        Ok(b) => b.code,
        Err(e) => {
            return reply::error(ApiError::new(
                ErrorCode::InvalidInput,
                format!("send {{\"code\": \"ABCD-EFGH\"}} with the pairing code shown: {e}"),
            ))
        }
    };
    let (device, cookie_half, key) = match auth::pair(&web.engine, code).await {
        Ok(paired) => paired,
        Err(e) => {
            if let (Some(ip), ErrorCode::Unauthorized) = (ip, e.code) {
                // Wrong, from an address over its share: told to stop.
                let limited = web.pairing.check(ip);
                web.pairing.wrong(ip);
                if let Err(limited) = limited {
                    let why = format!("{}. This code: {}", limited.message, e.message);
                    return reply::error(ApiError::new(ErrorCode::RateLimited, why));
                }
            }
            return reply::error(e);
        }
    };
    let cookie = match auth::set_cookie(&cookie_half) {
        Ok(c) => c,
        Err(e) => return reply::error(e),
    };
    // The credential's second half, to this page only (the answer is
    // readable by this origin's scripts alone): it keeps it in its own
    // origin's storage and sends it with every request (`auth`).
    let mut response = reply::json(
        StatusCode::OK,
        &serde_json::json!({ "device": device, "key": key }),
    );
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    response
}

async fn me(
    State(web): State<Web>,
    known: Option<axum::Extension<Known>>,
    headers: HeaderMap,
) -> Response {
    match known_device(&web, known, &headers).await {
        Ok(device) => reply::json(StatusCode::OK, &serde_json::json!({ "device": device })),
        Err(e) => reply::error(e),
    }
}

async fn no_such(request: Request) -> Response {
    reply::error(ApiError::new(
        ErrorCode::NotFound,
        format!(
            "no {} {} here: the API is POST /api/pair, GET /api/me, POST /api/call/<command>, \
             GET /api/events",
            request.method(),
            request.uri().path()
        ),
    ))
}

/// Any other GET: the UI.
async fn page(request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return reply::error_with(
            StatusCode::METHOD_NOT_ALLOWED,
            ApiError::new(ErrorCode::InvalidInput, "only GET is served outside /api"),
        );
    }
    assets::get(request.uri().path())
}

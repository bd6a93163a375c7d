//! The HTTP routes and the checks every request passes first (Origin, Host,
//! body size, the number of calls at once).

pub use crate::state::{Web, MAX_IN_FLIGHT};
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
    reply::error_with(
        StatusCode::PAYLOAD_TOO_LARGE,
        ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "the request body is over {} MiB: send less (a decision's context, a message) \
                 and retry",
                MAX_BODY >> 20
            ),
        ),
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
/// (on every POST and the WebSocket upgrade), the declared body size, and
/// a slot among the calls served at once.
async fn guard(State(web): State<Web>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path != "/api" && !path.starts_with("/api/") {
        return next.run(request).await;
    }
    let headers = request.headers();
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
        return forbidden(format!(
            "this engine serves on loopback and answers only to localhost, 127.0.0.1 or [::1] \
             (and to the origins given with --web-origin), not to {host:?}; open it by one of \
             those names"
        ));
    }
    let upgrade = headers.contains_key(header::UPGRADE);
    if request.method() == Method::POST || upgrade {
        let own = format!("{}://{host}", web.scheme);
        let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
        // A proxy may pass the browser's Host on, or name the loopback
        // address it forwards to: a page of a public origin is ours either way.
        let ours = origin.is_some_and(|o| {
            o.eq_ignore_ascii_case(&own)
                || web.public_origins.iter().any(|p| o.eq_ignore_ascii_case(p))
        });
        if !ours {
            return forbidden(format!(
                "refused: the request comes from {}, not from this engine's own page ({own}); \
                 other sites may not call the engine",
                origin.map_or_else(|| "no origin".to_owned(), |o| format!("{o:?}"))
            ));
        }
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
    let Ok(_slot) = web.in_flight().try_acquire_owned() else {
        return reply::error(ApiError::new(
            ErrorCode::RateLimited,
            format!(
                "the engine is answering {MAX_IN_FLIGHT} requests at once already: wait a moment \
                 and retry"
            ),
        ));
    };
    // Held until the answer (for the socket: until its upgrade is answered).
    next.run(request).await
}

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
    let _ = tokio::time::timeout(crate::listen::HANDSHAKE_TIMEOUT, reading).await;
}

/// A body of at most [`MAX_BODY`] bytes, or the 413 to answer.
async fn body(body: Body) -> Result<axum::body::Bytes, Response> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return Err(reply::error(ApiError::new(
                ErrorCode::InvalidInput,
                "the request body could not be read; send it again",
            )));
        };
        if bytes.len() + chunk.len() > MAX_BODY {
            let seen = bytes.len() + chunk.len();
            drain(Body::from_stream(stream), seen).await;
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}

async fn call(
    State(web): State<Web>,
    Path(command): Path<String>,
    headers: HeaderMap,
    request: Body,
) -> Response {
    if !calls::COMMANDS.contains(&command.as_str()) {
        return unknown(&command);
    }
    let device = match auth::device(&web.engine, &headers).await {
        Ok(d) => d,
        Err(e) => return reply::error(e),
    };
    let bytes = match body(request).await {
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
    peer: Option<axum::Extension<crate::listen::Peer>>,
    request: Body,
) -> Response {
    let ip = peer.map(|p| p.0 .0.ip());
    if let Some(Err(e)) = ip.map(|ip| web.pairing.check(ip)) {
        return reply::error(e);
    }
    let bytes = match body(request).await {
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
    let (device, credential) = match auth::pair(&web.engine, code).await {
        Ok(paired) => paired,
        Err(e) => {
            if let (Some(ip), ErrorCode::Unauthorized) = (ip, e.code) {
                web.pairing.wrong(ip);
            }
            return reply::error(e);
        }
    };
    let cookie = match auth::set_cookie(&credential) {
        Ok(c) => c,
        Err(e) => return reply::error(e),
    };
    let mut response = reply::json(StatusCode::OK, &serde_json::json!({ "device": device }));
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    response
}

async fn me(State(web): State<Web>, headers: HeaderMap) -> Response {
    match auth::device(&web.engine, &headers).await {
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

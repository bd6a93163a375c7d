//! Who a browser is: its device credential, exchanged once for a pairing
//! code, looked up on every request (a revoked device is refused at once).
//! Everything the web transport knows of devices is in this module; the
//! engine keeps them (pairing codes, hashed credentials, burned codes,
//! revocation: `overseer_engine::devices`).
//!
//! A credential has two halves, and a request acts as a device only with
//! both halves of that one device:
//!
//! - the **cookie** ([`COOKIE`]): `HttpOnly`, so no script (not even the
//!   engine's own page) reads it. But browsers send a cookie of
//!   `127.0.0.1` to every port of it, and let any port set one: a page on
//!   another local port gets it (and can plant its own);
//! - the **origin's half** ([`HEADER`]): given in the pairing answer's body
//!   to the page that paired, which keeps it in its own origin's
//!   `localStorage` (per scheme, host and port: no other port reads it) and
//!   sends it as a header on each call, and on the WebSocket as one of the
//!   protocols it offers ([`PROTOCOL_PREFIX`]; a page cannot set a
//!   socket's headers).
//!
//! So a cookie read by another port acts as nobody, and a cookie planted by
//! another port (its own device's) does not go with the page's half: the
//! page is refused and shows the pairing screen, never acting as the
//! planter's device.

use axum::http::{header, HeaderMap, HeaderValue};
use overseer_core::{ApiError, DeviceId, DeviceView, EngineEvent, ErrorCode};
use overseer_engine::Engine;
use std::sync::Arc;

/// The cookie that carries the first half of a paired browser's
/// credential. `__Host-`: the browser keeps it only when it is `Secure`,
/// for `Path=/` and without a `Domain` (Chromium accepts that on
/// `http://127.0.0.1` and `http://localhost` too), so a sibling host (a
/// `Domain=` cookie from `evil.example.com`) cannot plant it. Other ports
/// of the same host still can: the second half is what binds it.
pub const COOKIE: &str = "__Host-overseer_device";

/// The header that carries the second half (the page's origin's own).
pub const HEADER: &str = "x-overseer-device";

/// On the WebSocket, the second half travels as an offered protocol
/// `overseer-device.<half>`, beside [`PROTOCOL`], which the server picks.
pub const PROTOCOL_PREFIX: &str = "overseer-device.";

/// The protocol the events socket speaks (the one the server selects).
pub const PROTOCOL: &str = "overseer";

/// How long a browser keeps its device cookie: 400 days, the longest
/// Chromium keeps any cookie. Revocation, not expiry, ends a pairing.
const MAX_AGE: u32 = 400 * 24 * 60 * 60;

/// What joins the two halves in the credential the engine makes
/// (`overseer_store::devices::CREDENTIAL_JOIN`).
const JOIN: char = '.';

/// The cookie's half the request carries, if any.
fn cookie_half(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

/// The origin's half the request carries, if any: the header on a call,
/// an offered protocol on the WebSocket.
fn origin_half(headers: &HeaderMap) -> Option<&str> {
    let header = headers.get(HEADER).and_then(|v| v.to_str().ok());
    let protocol = || {
        headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .find_map(|p| p.trim().strip_prefix(PROTOCOL_PREFIX))
    };
    header
        .or_else(protocol)
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The device credential the request carries: both halves, or none (one
/// half alone is no credential).
pub fn credential(headers: &HeaderMap) -> Option<String> {
    let (cookie, origin) = (cookie_half(headers)?, origin_half(headers)?);
    // A half with the joint in it is not a half: no credential.
    if cookie.contains(JOIN) || origin.contains(JOIN) {
        return None;
    }
    Some(format!("{cookie}{JOIN}{origin}"))
}

fn unpaired() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthorized,
        "this browser is not paired with the engine (or its device was revoked, or it was \
         paired before credentials were bound to the page's origin, or another page on this \
         machine replaced its cookie): pair it again with a code from the window's Settings, \
         \"Browsers and phones\", or `overseer devices pair`",
    )
}

/// The device the request's credential names (both halves: the cookie and
/// the origin's); `unauthorized` without one, or when it is unknown or
/// revoked. Its requests act as `device.actor()`.
pub async fn device(engine: &Arc<Engine>, headers: &HeaderMap) -> Result<DeviceView, ApiError> {
    let Some(credential) = credential(headers) else {
        return Err(unpaired());
    };
    engine
        .carry_out(move |e| e.device_by_credential(&credential))
        .await?
        .ok_or_else(unpaired)
}

/// Pairing: the device a code was issued for, and its credential's two
/// halves: the cookie's and the origin's (wrong or expired, used or burned:
/// `unauthorized`; wrong codes per address are limited by
/// [`crate::throttle`]).
pub async fn pair(
    engine: &Arc<Engine>,
    code: String,
) -> Result<(DeviceView, String, String), ApiError> {
    let paired = engine.carry_out(move |e| e.redeem_pairing(&code)).await?;
    let Some((cookie, origin)) = paired.credential.split_once(JOIN) else {
        return Err(ApiError::new(
            ErrorCode::Internal,
            "the engine made a device credential without its two halves: pair again",
        ));
    };
    Ok((paired.device, cookie.to_owned(), origin.to_owned()))
}

/// The `Set-Cookie` of a new device's cookie half: sent back only to this
/// host, over TLS or to localhost (`Secure`, and `__Host-`), never readable
/// by scripts (`HttpOnly`), never sent from another site
/// (`SameSite=Strict`), kept across browser restarts for 400 days
/// (browsers' own cap): a phone stays paired until the owner revokes it,
/// not until its browser is closed.
pub fn set_cookie(cookie_half: &str) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_str(&format!(
        "{COOKIE}={cookie_half}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age={MAX_AGE}"
    ))
    .map_err(|e| ApiError::new(ErrorCode::Internal, format!("credential: {e}")))
}

/// The device `event` revokes, if any: its sockets are closed at once.
pub fn revoked(event: &EngineEvent) -> Option<DeviceId> {
    match event {
        EngineEvent::DeviceChanged { device } if device.is_revoked() => Some(device.id),
        _ => None,
    }
}

/// Tells the engine where browsers reach it (pairing codes name it).
pub fn announce(engine: &Engine, url: Option<String>) {
    engine.set_web_url(url);
}

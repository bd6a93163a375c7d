//! Who a browser is: its device cookie, exchanged once for a pairing code,
//! looked up on every request (a revoked device is refused at once).
//! Everything the web transport knows of devices is in this module; the
//! engine keeps them (pairing codes, hashed credentials, burned codes,
//! revocation: `overseer_engine::devices`).

use axum::http::{header, HeaderMap, HeaderValue};
use overseer_core::{ApiError, DeviceId, DeviceView, EngineEvent, ErrorCode};
use overseer_engine::Engine;
use std::sync::Arc;

/// The cookie that carries a paired browser's credential.
pub const COOKIE: &str = "overseer_device";

/// How long a browser keeps its device cookie: 400 days, the longest
/// Chromium keeps any cookie. Revocation, not expiry, ends a pairing.
const MAX_AGE: u32 = 400 * 24 * 60 * 60;

/// The device credential the request carries, if any.
pub fn credential(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty())
}

fn unpaired() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthorized,
        "this browser is not paired with the engine (or its device was revoked): pair it with a \
         code from the window's Settings, \"Browsers and phones\", or `overseer devices pair`",
    )
}

/// The device the request's cookie names; `unauthorized` without one, or
/// when it is unknown or revoked. Its requests act as `device.actor()`.
pub async fn device(engine: &Arc<Engine>, headers: &HeaderMap) -> Result<DeviceView, ApiError> {
    let Some(credential) = credential(headers) else {
        return Err(unpaired());
    };
    engine
        .carry_out(move |e| e.device_by_credential(&credential))
        .await?
        .ok_or_else(unpaired)
}

/// Pairing: the device a code was issued for, and its credential (wrong or
/// expired, used or burned: `unauthorized`; wrong codes per address are
/// limited by [`crate::throttle`]).
pub async fn pair(engine: &Arc<Engine>, code: String) -> Result<(DeviceView, String), ApiError> {
    let paired = engine.carry_out(move |e| e.redeem_pairing(&code)).await?;
    Ok((paired.device, paired.credential))
}

/// The `Set-Cookie` of a new device: sent back only to this server, over
/// TLS or to localhost (`Secure`), never readable by scripts (`HttpOnly`),
/// never sent from another site (`SameSite=Strict`), kept across browser
/// restarts for 400 days (browsers' own cap): a phone stays paired until
/// the owner revokes it, not until its browser is closed.
pub fn set_cookie(credential: &str) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_str(&format!(
        "{COOKIE}={credential}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age={MAX_AGE}"
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

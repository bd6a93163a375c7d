//! Who a browser is: its device cookie, exchanged once for a pairing code,
//! looked up on every request (a revoked device is refused at once).
//! Everything the web transport knows of devices is in this module; the
//! engine keeps them (pairing codes, hashed credentials, revocation).

use axum::http::{header, HeaderMap, HeaderValue};
use overseer_core::{Actor, ApiError, EngineEvent, ErrorCode};
use overseer_engine::Engine;
use std::sync::Arc;

/// The cookie that carries a paired browser's credential.
pub const COOKIE: &str = "overseer_device";

/// A paired device, as a request acts.
#[derive(Debug, Clone)]
pub struct Device {
    pub id: i64,
    /// Who its requests act as (`user:<person>`).
    pub actor: Actor,
    /// Its view, as `/api/me` and `/api/pair` answer it.
    pub view: serde_json::Value,
}

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
/// when it is unknown or revoked.
pub async fn device(engine: &Arc<Engine>, headers: &HeaderMap) -> Result<Device, ApiError> {
    let Some(credential) = credential(headers) else {
        return Err(unpaired());
    };
    engine
        .carry_out(move |e| lookup(e, &credential))
        .await?
        .ok_or_else(unpaired)
}

/// Pairing: the code for a device and its credential.
pub async fn pair(engine: &Arc<Engine>, code: String) -> Result<(Device, String), ApiError> {
    engine.carry_out(move |e| redeem(e, &code)).await
}

/// The `Set-Cookie` of a new device: only sent back to this server, never
/// readable by scripts, never sent from another site.
pub fn set_cookie(credential: &str) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_str(&format!(
        "{COOKIE}={credential}; HttpOnly; Secure; SameSite=Strict; Path=/"
    ))
    .map_err(|e| ApiError::new(ErrorCode::Internal, format!("credential: {e}")))
}

/// The device `event` revokes, if any: its sockets are closed at once.
pub fn revoked(_event: &EngineEvent) -> Option<i64> {
    None
}

/// Tells the engine where browsers reach it (the pairing screen shows it).
pub fn announce(_engine: &Engine, _url: Option<String>) {}

fn lookup(_engine: &Engine, _credential: &str) -> Result<Option<Device>, ApiError> {
    Ok(None)
}

fn redeem(_engine: &Engine, _code: &str) -> Result<(Device, String), ApiError> {
    Err(ApiError::new(
        ErrorCode::Unauthorized,
        "this engine has no paired devices yet",
    ))
}

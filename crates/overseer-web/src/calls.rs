//! The window's operations as web calls: the table's `both` and
//! `window_only` entries, named by their Tauri command (`decide_gate`),
//! their arguments read from the object the window passes to `invoke`
//! (camelCase keys: `gateId`) by the mapping generated from the contract's
//! table ([`overseer_server::window`], which a host's link shares), each
//! performing the same [`Operation::perform`](overseer_server::api::Operation)
//! as the socket and the window, as the caller's device. `socket_only`
//! entries and `streams` do not exist here.

use overseer_core::{Actor, ApiError, ErrorCode};
use overseer_engine::Engine;
use overseer_server::window::WindowCall;
use std::sync::Arc;

/// Every command a browser can call (`POST /api/call/<command>`).
pub const COMMANDS: &[&str] = overseer_server::window::COMMANDS;

/// The args object of a call: `{}` when the body is empty, as the window's
/// `invoke` passes for a command without arguments.
fn args(command: &str, body: &[u8]) -> Result<serde_json::Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "the arguments of `{command}` are not valid: {e}; send a JSON object with the \
                 window's argument names (camelCase), `{{}}` when there are none"
            ),
        )
    })
}

/// Performs `command` with the args object `body` as `actor` (off the
/// async runtime, refused once the engine is closing, waited for by its
/// stop); `None` when the window has no such command.
pub async fn call(
    engine: &Arc<Engine>,
    actor: Actor,
    command: &str,
    body: &[u8],
) -> Option<Result<serde_json::Value, ApiError>> {
    let args = match args(command, body) {
        Ok(a) => a,
        Err(e) => return COMMANDS.contains(&command).then_some(Err(e)),
    };
    let call = match WindowCall::read(command, &args)? {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    Some(engine.carry_out(move |e| call.perform(e, &actor)).await)
}

//! The window's operations as web calls, generated from the contract's
//! table ([`overseer_api::operations!`]) as the Tauri commands are: the
//! table's `both` and `window_only` entries, named by their Tauri command
//! (`decide_gate`), their arguments read from the object the window passes
//! to `invoke` (camelCase keys: `gateId`), each performing the same
//! [`Operation::perform`] as the socket and the window, as the caller's
//! device. `socket_only` entries and `streams` do not exist here.

use overseer_core::ErrorCode;
use overseer_engine::Engine;
#[allow(unused_imports)]
use overseer_server::api::vocabulary::*;
use overseer_server::api::Operation;
use std::sync::Arc;

/// Runs `op` off the async runtime as `actor` (refused once the engine is
/// closing, waited for by its stop); its answer as JSON.
async fn perform<O>(
    engine: &Arc<Engine>,
    actor: Actor,
    op: O,
) -> Result<serde_json::Value, ApiError>
where
    O: Operation + Send + 'static,
    O::Response: Send + 'static,
{
    let answer = engine.carry_out(move |e| op.perform(e, &actor)).await?;
    serde_json::to_value(answer).map_err(|e| {
        ApiError::new(
            ErrorCode::Internal,
            format!("the answer could not be written: {e}"),
        )
    })
}

/// The args object of a call: `{}` when the body is empty, as the window's
/// `invoke` passes for a command without arguments.
fn args<'a, T: serde::Deserialize<'a>>(command: &str, body: &'a [u8]) -> Result<T, ApiError> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
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

/// Generates [`COMMANDS`] and [`call`] from the table.
macro_rules! web_adapter {
    (
        both { $(
            $(#[doc = $doc:literal])*
            $kind:ident $call:ident => $Op:ident
                $( { $( $(#[$fattr:meta])* $field:ident : $fty:ty as $arg:ident ),* $(,)? } )?
                -> $resp:ty;
        )* }
        socket_only { $($socket_only:tt)* }
        window_only { $(
            $(#[doc = $wdoc:literal])*
            $wkind:ident $wcall:ident => $WOp:ident
                $( { $( $(#[$wfattr:meta])* $wfield:ident : $wfty:ty as $warg:ident ),* $(,)? } )?
                -> $wresp:ty, because $wwhy:literal;
        )* }
        streams { $($streams:tt)* }
        events { $($events:tt)* }
        also_declared { $($also:tt)* }
    ) => {
        /// Every command a browser can call (`POST /api/call/<command>`).
        pub const COMMANDS: &[&str] = &[$(stringify!($call),)* $(stringify!($wcall),)*];

        /// Performs `command` with the args object `body` as `actor`; `None`
        /// when the window has no such command.
        pub async fn call(
            engine: &Arc<Engine>,
            actor: Actor,
            command: &str,
            body: &[u8],
        ) -> Option<Result<serde_json::Value, ApiError>> {
            match command {
                $(
                    stringify!($call) => Some(async {
                        /// The window's arguments, as it names them.
                        #[derive(serde::Deserialize)]
                        #[serde(rename_all = "camelCase")]
                        struct Args { $($( $arg: $fty, )*)? }
                        let Args { $($( $arg ),*)? } = args::<Args>(command, body)?;
                        #[allow(clippy::redundant_field_names)]
                        let op = overseer_server::api::op::$Op { $($( $field: $arg ),*)? };
                        perform(engine, actor, op).await
                    }.await),
                )*
                $(
                    stringify!($wcall) => Some(async {
                        /// The window's arguments, as it names them.
                        #[derive(serde::Deserialize)]
                        #[serde(rename_all = "camelCase")]
                        struct Args { $($( $warg: $wfty, )*)? }
                        let Args { $($( $warg ),*)? } = args::<Args>(command, body)?;
                        #[allow(clippy::redundant_field_names)]
                        let op = overseer_server::api::op::$WOp { $($( $wfield: $warg ),*)? };
                        perform(engine, actor, op).await
                    }.await),
                )*
                _ => None,
            }
        }
    };
}

overseer_api::operations!(web_adapter);

//! The window's commands, derived from the engine's operation table
//! ([`overseer_engine::operations!`]): one `#[tauri::command]` per operation
//! the window has, with the arguments the window passes, calling the same
//! [`Operation::perform`] as the socket. Every command acts as `user:app`:
//! the actor comes from the connection, never from the window's arguments.
//! Errors reach the web view as `{code, message}`.

use overseer_core::{Actor, ApiError};
use overseer_engine::api::vocabulary::*;
use overseer_engine::api::Operation;
use overseer_engine::Engine;
use std::sync::Arc;
use tauri::State;

/// Runs `op` off the async runtime as the window's user, as the socket
/// does: refused once the engine is closing, waited for by its stop.
async fn perform<O>(engine: &Arc<Engine>, op: O) -> Result<O::Response, ApiError>
where
    O: Operation + Send + 'static,
    O::Response: Send + 'static,
{
    engine
        .carry_out(move |e| op.perform(e, &Actor::app()))
        .await
}

/// Generates the commands of the table's `both` and `window_only` entries,
/// [`COMMANDS`] and [`handler`]; `socket_only` entries are not the window's.
macro_rules! window_adapter {
    (
        both { $(
            $(#[$doc:meta])*
            $kind:ident $window:ident => $Op:ident
                $( { $( $(#[$fattr:meta])* $field:ident : $fty:ty as $arg:ident ),* $(,)? } )?
                -> $resp:ty
                = |$e:ident, $a:ident| $body:expr;
        )* }
        socket_only { $($socket_only:tt)* }
        window_only { $(
            $(#[$wdoc:meta])*
            $wkind:ident $wwindow:ident => $WOp:ident
                $( { $( $(#[$wfattr:meta])* $wfield:ident : $wfty:ty as $warg:ident ),* $(,)? } )?
                -> $wresp:ty, because $wwhy:literal
                = |$we:ident, $wa:ident| $wbody:expr;
        )* }
    ) => {
        $(
            $(#[$doc])*
            // `field: arg` even where the window's name is the field's.
            #[allow(clippy::redundant_field_names)]
            #[tauri::command]
            async fn $window(
                engine: State<'_, Arc<Engine>>,
                $($( $arg: $fty ),*)?
            ) -> Result<$resp, ApiError> {
                perform(&engine, overseer_engine::api::op::$Op { $($( $field: $arg ),*)? }).await
            }
        )*
        $(
            $(#[$wdoc])*
            #[allow(clippy::redundant_field_names)]
            #[tauri::command]
            async fn $wwindow(
                engine: State<'_, Arc<Engine>>,
                $($( $warg: $wfty ),*)?
            ) -> Result<$wresp, ApiError> {
                perform(&engine, overseer_engine::api::op::$WOp { $($( $wfield: $warg ),*)? }).await
            }
        )*

        /// Every command the window may invoke, as registered by [`handler`],
        /// with its arguments (snake_case here; the window passes camelCase).
        #[cfg_attr(not(test), allow(dead_code))]
        pub const COMMANDS: &[(&str, &[&str])] = &[
            $( (stringify!($window), &[$($(stringify!($arg)),*)?]), )*
            $( (stringify!($wwindow), &[$($(stringify!($warg)),*)?]), )*
        ];

        /// The invoke handler registering every command.
        pub fn handler() -> impl Fn(tauri::ipc::Invoke<tauri::Wry>) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$($window,)* $($wwindow,)*]
        }
    };
}

overseer_engine::operations!(window_adapter);

//! The window's commands, derived from the contract's operation table
//! ([`overseer_api::operations!`]): one `#[tauri::command]` per operation
//! the window has, with the arguments the window passes, calling the same
//! [`Operation::perform`] as the socket. Every command acts as `user:app`:
//! the actor comes from the connection, never from the window's arguments.
//! Errors reach the web view as `{code, message}`.

use overseer_engine::Engine;
use overseer_server::api::vocabulary::*;
use overseer_server::api::Operation;
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

/// `f`, typed as an invoke handler (the type a generated one needs).
fn handling<F: Fn(tauri::ipc::Invoke<tauri::Wry>) -> bool>(f: F) -> F {
    f
}

/// Generates the commands of the table's `both` and `window_only` entries
/// and [`handler`]; `socket_only` entries and `streams` are not the
/// window's (the window's events are pushed by the app, see `lib.rs`).
macro_rules! window_adapter {
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
        events { $(
            $(#[doc = $edoc:literal])*
            $event:ident $channel:literal => $payload:ty;
        )* }
        also_declared { $($also:tt)* }
    ) => {
        $(
            $(#[doc = $doc])*
            // `field: arg` even where the window's name is the field's.
            #[allow(clippy::redundant_field_names)]
            #[tauri::command]
            async fn $call(
                engine: State<'_, Arc<Engine>>,
                $($( $arg: $fty ),*)?
            ) -> Result<$resp, ApiError> {
                perform(&engine, overseer_server::api::op::$Op { $($( $field: $arg ),*)? }).await
            }
        )*
        $(
            $(#[doc = $wdoc])*
            #[allow(clippy::redundant_field_names)]
            #[tauri::command]
            async fn $wcall(
                engine: State<'_, Arc<Engine>>,
                $($( $warg: $wfty ),*)?
            ) -> Result<$wresp, ApiError> {
                perform(&engine, overseer_server::api::op::$WOp { $($( $wfield: $warg ),*)? }).await
            }
        )*

        /// The events the app pushes to the window: one typed emitter per
        /// event of the table, named by the window's listener.
        pub mod events {
            use super::*;
            use tauri::Emitter;
            $(
                $(#[doc = $edoc])*
                pub fn $event(handle: &tauri::AppHandle, payload: &$payload) -> tauri::Result<()> {
                    handle.emit($channel, payload)
                }
            )*
        }

        /// The invoke handler registering every command: the engine's, and
        /// the app's host commands (`crate::hosts`).
        pub fn handler() -> impl Fn(tauri::ipc::Invoke<tauri::Wry>) -> bool + Send + Sync + 'static {
            let engine = handling(tauri::generate_handler![$($call,)* $($wcall,)*]);
            let hosts = crate::hosts::handler();
            move |invoke: tauri::ipc::Invoke<tauri::Wry>| {
                if overseer_api::hosts::names::WINDOW_COMMANDS.contains(&invoke.message.command()) {
                    hosts(invoke)
                } else {
                    engine(invoke)
                }
            }
        }
    };
}

overseer_api::operations!(window_adapter);

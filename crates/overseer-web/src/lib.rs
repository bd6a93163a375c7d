//! The browser transport: the window's operations over HTTP, the engine's
//! events over a WebSocket, and the UI built into the binary, so a browser
//! (a laptop's, a phone's) is a client of the engine like the desktop window.
//!
//! - `POST /api/call/<command>`: one route per operation the window has
//!   (the contract table's `both` and `window_only` entries), generated from
//!   [`overseer_api::operations!`] like the socket's requests and the Tauri
//!   commands ([`calls`]); the body is the args object the window passes to
//!   `invoke` (camelCase keys).
//! - `POST /api/pair`, `GET /api/me`: pairing a browser and asking who it is
//!   ([`auth`]); wrong codes are limited per address ([`throttle`]). Every other `/api` request needs the device's credential,
//!   loopback included: loopback is not an identity (a run's processes may
//!   share it). Its two halves, a cookie and a secret the page keeps in its
//!   own origin's storage, keep it from acting for a page on another port.
//! - `GET /api/events`: a WebSocket; a hello frame naming this engine
//!   process, then every engine event in commit order ([`events`]).
//! - any other `GET`: the UI from `ui/dist`, built in at compile time
//!   ([`assets`]).
//!
//! Every error is the contract's `{code, message}` with an HTTP status
//! ([`reply`]). Origin is checked on every POST and on the WebSocket upgrade;
//! there are no CORS headers.
//!
//! It listens on loopback by default; any other address only with TLS
//! ([`listen`]).
//!
//! # Why axum
//! axum is the tokio project's own HTTP framework: it runs on the tokio the
//! engine already uses, and it is a thin layer over hyper, tower and
//! tower-http, which the workspace already builds through other crates. Its
//! WebSocket support (the `ws` feature, on tungstenite) is the one upgrade
//! path most used on hyper. It adds little code of its own, is widely used
//! and actively maintained. TLS is rustls (already in the workspace, with
//! the ring provider) through tokio-rustls; connections are accepted by our
//! own loop so the transport bounds them, times out slow handshakes and
//! serves plain and TLS the same way.

pub mod assets;
pub mod auth;
pub mod calls;
pub mod conn;
mod counts;
pub mod events;
pub mod host;
pub mod listen;
pub mod reply;
mod routes;
mod state;
pub mod throttle;

pub use host::BrowserHost;
pub use listen::{bind, TlsFiles, WebConfig, WebError, WebServer};

/// Largest request body read; a larger one gets 413.
pub const MAX_BODY: usize = 1 << 20;

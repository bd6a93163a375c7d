//! Overseer's transports: how clients and runs reach the engine.
//!
//! - [`api`]: the contract's wire adapter: every operation the contract
//!   declares (`overseer_api::operations!`) as the socket's request, the
//!   typed [`api::Api`] the engine's services answer through
//!   [`api::Served`], and the window's commands' [`api::Operation`].
//! - [`server`]: the engine's local socket (owner-only, fenced against
//!   processes of its runs) and each run's own socket ([`RunSockets`]).
//! - [`client`]: the socket's client (the CLI, hooks, tests).
//! - [`window`]: the window's commands and arguments as operations, for a
//!   transport other than the app's (a browser's, a host's link).
//! - [`remote`]: the client side of hosts: the registry, the bridge's
//!   handshake over ssh, and the persistent link to each host.
//!
//! The engine knows nothing of this crate: a host (the CLI's `serve`, the
//! app) opens the engine, binds its socket here and hands
//! [`RunSockets`] to the orchestrator.

pub mod api;
pub mod client;
pub mod remote;
pub mod server;
pub mod window;

pub use server::RunSockets;

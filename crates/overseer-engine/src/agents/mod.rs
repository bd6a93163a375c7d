//! The ways an agent reaches us from outside Overseer, each translating its
//! protocol into core's session asks ([`overseer_core::SessionAsk`]):
//! - [`external`]: the engine side: a session's fleet row, its asks as gates.
//! - [`messages`]: agent-to-agent messages through the hub.
//! - `hooks`: Claude Code's and Codex's hook formats (the `overseer hook` command).
//!
//! (Agents Overseer launches speak ACP: [`crate::acp`].)

pub mod external;
pub mod hooks;
pub mod messages;

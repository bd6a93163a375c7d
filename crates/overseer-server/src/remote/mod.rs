//! The client side of hosts (engines on other machines reached over the
//! system `ssh`), shared by the CLI (`--host`, `hosts`) and the app:
//!
//! - [`registry`]: the hosts this machine knows (`hosts.json`) and the ssh
//!   command line for each (the user's config, or the one kept with it);
//! - [`handshake`]: `ssh HOST overseer bridge` and the bridge's handshake
//!   (the version, the pinned signing key);
//! - [`link`]: one persistent, multiplexed connection per host that
//!   reconnects by itself and says how it stands;
//! - [`setup`]: adding, upgrading and removing a host, step by step;
//! - [`notify`]: what a host's events call for on this machine's desktop.

pub mod handshake;
pub mod link;
pub mod notify;
pub mod registry;
pub mod setup;

pub use handshake::{check_key, open, Bridge, OpenError, Welcome, VERSION};
pub use link::{HostEvent, HostLinkState, HostLinkView, Link, LinkOptions};
pub use notify::HostNotifications;
pub use registry::{fingerprint, Host, HostsFile, Target};
pub use setup::{HostRemoved, HostSetupStep, SetupError, SetupFailure};

/// What went wrong with a host's entry or its file, said for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError(pub String);

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostError {}

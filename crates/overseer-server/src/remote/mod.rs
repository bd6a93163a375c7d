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
pub use link::{HostEvent, HostEvents, HostLinkState, HostLinkView, Link, LinkOptions};
pub use notify::HostNotifications;
pub use registry::{fingerprint, Host, HostsFile, Target};
pub use setup::{HostRemoved, HostSetupStep, SetupError, SetupFailure};

/// Text from a host (or from ssh about it), made inert before a terminal
/// or the window shows it: control characters (ANSI escapes, carriage
/// returns, C1 controls) and bidi controls (which reorder the rest of the
/// line) are written as escapes (`\u{1b}`); line breaks and tabs stay, and
/// ssh's own line ends (`\r\n`) are plain line breaks.
pub fn inert(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_owned();
    }
    let s = s.replace("\r\n", "\n");
    if !s.chars().any(needs_escape) {
        return s;
    }
    s.chars()
        .flat_map(|c| {
            if needs_escape(c) {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// [`inert`] for every string in `value` (a host's answer), keys included.
pub fn inert_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) if s.chars().any(needs_escape) => *s = inert(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(inert_json),
        serde_json::Value::Object(map) => {
            if map.keys().any(|k| k.chars().any(needs_escape)) {
                let old = std::mem::take(map);
                for (k, mut v) in old {
                    inert_json(&mut v);
                    map.insert(inert(&k), v);
                }
            } else {
                map.values_mut().for_each(inert_json);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn text_from_a_host_is_inert_but_keeps_its_lines() {
        assert_eq!(
            super::inert("ssh: timed out\r\nnext"),
            "ssh: timed out\nnext"
        );
        let said = "run\u{1b}[2J\u{1b}]0;owned\u{7}\rdone\u{9b}31m\u{202E}txt\nnext\tcol";
        let shown = super::inert(said);
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
        assert!(!shown.contains('\u{202E}'));
        assert!(
            shown.contains("\\u{1b}[2J") && shown.contains("\nnext\tcol"),
            "{shown}"
        );
        let mut v =
            serde_json::json!({"title": "a\u{1b}[31m", "list": ["\r"], "n": 1, "k\u{7}": true});
        super::inert_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"title": "a\\u{1b}[31m", "list": ["\\u{d}"], "n": 1, "k\\u{7}": true})
        );
    }
}

/// What went wrong with a host's entry or its file, said for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError(pub String);

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostError {}

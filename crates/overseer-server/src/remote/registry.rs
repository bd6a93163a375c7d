//! The hosts this machine knows (`hosts.json` in its data dir, mode 0600,
//! written whole or not at all) and how the system `ssh` reaches each one:
//! the user's own config (or the one kept with the host, `ssh -F`), agent,
//! ProxyJump and known_hosts. No SSH code of our own, no password kept.

use super::HostError;
use overseer_engine::Paths;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// An ssh config file used instead of `~/.ssh/config` (`ssh -F`).
pub const SSH_CONFIG_ENV: &str = "OVERSEER_SSH_CONFIG";
const HOSTS_FILE: &str = "hosts.json";

/// A host as this machine knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    pub user: Option<String>,
    pub address: String,
    pub port: Option<u16>,
    pub ssh_config: Option<PathBuf>,
    /// The host's overseer data dir (absolute, on the host).
    pub dir: String,
    pub version: String,
    /// The engine's audit signing public key (hex), pinned on first contact.
    pub engine_key: String,
    /// `systemd` (a user unit) or `detached` (setsid, pid in `serve.pid`).
    pub service: String,
    pub added_at: i64,
}

impl Host {
    /// Where and how ssh reaches it.
    pub fn target(&self) -> Target {
        Target {
            user: self.user.clone(),
            address: self.address.clone(),
            port: self.port,
            ssh_config: self.ssh_config.clone(),
        }
    }

    /// The fingerprint of its pinned key (`SHA256:…`).
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.engine_key)
    }
}

/// Every host this machine knows, as `hosts.json` holds them.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct HostsFile {
    pub hosts: Vec<Host>,
}

impl HostsFile {
    /// The host named `name`, or an error naming `overseer hosts list`.
    pub fn find(&self, name: &str) -> Result<&Host, HostError> {
        self.hosts.iter().find(|h| h.name == name).ok_or_else(|| {
            HostError(format!(
                "no host named {name:?}: `overseer hosts list` shows the hosts; add one with \
                 `overseer hosts add {name} ssh://user@host`"
            ))
        })
    }
}

/// `SHA256:<hex>` of a hex public key, as `hosts add` and `hosts list` show it.
pub fn fingerprint(key_hex: &str) -> String {
    let bytes = hex::decode(key_hex).unwrap_or_else(|_| key_hex.as_bytes().to_vec());
    format!("SHA256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Where `hosts.json` is.
pub fn hosts_path(paths: &Paths) -> PathBuf {
    paths.data_dir.join(HOSTS_FILE)
}

/// The hosts this machine knows (none when the file does not exist).
pub fn load(paths: &Paths) -> Result<HostsFile, HostError> {
    let path = hosts_path(paths);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            HostError(format!(
                "{} is not a hosts file Overseer can read ({e}); fix it, or delete it and add \
                 the hosts again",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HostsFile::default()),
        Err(e) => Err(HostError(format!("read {}: {e}", path.display()))),
    }
}

/// Written to a temp file (0600) and renamed over: never half a file.
pub fn save(paths: &Paths, file: &HostsFile) -> Result<(), HostError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = hosts_path(paths);
    let fail = |what: &std::path::Path, e: &dyn std::fmt::Display| {
        HostError(format!("write {}: {e}", what.display()))
    };
    std::fs::create_dir_all(&paths.data_dir).map_err(|e| fail(&paths.data_dir, &e))?;
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| fail(&tmp, &e))?;
    let bytes = serde_json::to_vec_pretty(file).map_err(|e| fail(&tmp, &e))?;
    f.write_all(&bytes).map_err(|e| fail(&tmp, &e))?;
    f.sync_all().map_err(|e| fail(&tmp, &e))?;
    std::fs::rename(&tmp, &path).map_err(|e| fail(&path, &e))?;
    Ok(())
}

/// Whether `name` can name a host.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Where and how to reach a host with the system ssh.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub user: Option<String>,
    pub address: String,
    pub port: Option<u16>,
    pub ssh_config: Option<PathBuf>,
}

fn valid_part(s: &str, extra: &[char]) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') || extra.contains(&c)
        })
}

/// `ssh://[user@]host[:port]` (an IPv6 address in brackets).
pub fn parse_url(url: &str) -> Result<(Option<String>, String, Option<u16>), HostError> {
    let bad = || {
        HostError(format!(
            "{url:?} is not a host address: write ssh://user@host or ssh://user@host:port"
        ))
    };
    let rest = url.strip_prefix("ssh://").ok_or_else(bad)?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_owned()), h),
        None => (None, rest),
    };
    let (address, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (addr, after) = v6.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(bad()),
        };
        (addr.to_owned(), port)
    } else {
        match hostport.split_once(':') {
            Some((a, p)) => (a.to_owned(), Some(p)),
            None => (hostport.to_owned(), None),
        }
    };
    let port = match port {
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| HostError(format!("{url:?}: {p:?} is not a port")))?,
        ),
        None => None,
    };
    if user.as_deref().is_some_and(|u| !valid_part(u, &[])) || !valid_part(&address, &[':']) {
        return Err(bad());
    }
    Ok((user, address, port))
}

impl Target {
    /// `ssh://[user@]host[:port]`.
    pub fn url(&self) -> String {
        let user = self
            .user
            .as_ref()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        match self.port {
            Some(p) => format!("ssh://{user}{}:{p}", self.bracketed()),
            None => format!("ssh://{user}{}", self.bracketed()),
        }
    }

    /// The address, an IPv6 one in brackets.
    pub fn bracketed(&self) -> String {
        if self.address.contains(':') {
            format!("[{}]", self.address)
        } else {
            self.address.clone()
        }
    }

    /// `[user@]address`, as ssh takes it.
    pub fn dest(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.address),
            None => self.address.clone(),
        }
    }

    /// What every `ssh` and `scp` Overseer starts takes first: the
    /// [`SSH_OPTIONS`], then `-F config` when the host keeps one.
    pub fn config_args(&self) -> Vec<String> {
        let mut args: Vec<String> = SSH_OPTIONS
            .iter()
            .flat_map(|o| ["-o".to_owned(), (*o).to_owned()])
            .collect();
        if let Some(c) = &self.ssh_config {
            args.extend(["-F".into(), c.display().to_string()]);
        }
        args
    }

    /// `ssh [-F config] [-p port] dest -- command` (run by the remote user's shell).
    pub fn ssh_args(&self, command: &str) -> Vec<String> {
        let mut args = self.config_args();
        if let Some(p) = self.port {
            args.extend(["-p".into(), p.to_string()]);
        }
        args.extend([self.dest(), "--".into(), command.to_owned()]);
        args
    }
}

/// The options every ssh Overseer starts (a link, `--host`, `hosts add`,
/// `upgrade`, `remove`, `start`, `verify`, and scp's) is given, over
/// whatever the user's `~/.ssh/config` or the host's own config says (the
/// command line's value wins in OpenSSH):
///
/// - nothing of this desktop is forwarded to a host: a compromised host
///   cannot use the desktop's ssh agent (`ForwardAgent`), its X display
///   (`ForwardX11`), or a port forwarding from the config
///   (`ClearAllForwardings`), and no local command runs on connecting
///   (`PermitLocalCommand`);
/// - a host that drops packets fails within `ConnectTimeout` seconds
///   (the TCP connection and the server's SSH banner), not the system's
///   TCP timeout of minutes;
/// - a connection whose host vanished ends after `ServerAliveInterval` x
///   `ServerAliveCountMax` seconds without an answer.
pub const SSH_OPTIONS: &[&str] = &[
    "ForwardAgent=no",
    "ForwardX11=no",
    "ClearAllForwardings=yes",
    "PermitLocalCommand=no",
    "ConnectTimeout=10",
    "ServerAliveInterval=15",
    "ServerAliveCountMax=3",
];

/// `s` as one single-quoted sh word.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_urls_are_parsed_and_option_like_parts_refused() {
        assert_eq!(
            parse_url("ssh://me@box.lan:2222").expect("parsed"),
            (Some("me".into()), "box.lan".into(), Some(2222))
        );
        assert_eq!(
            parse_url("ssh://box").expect("parsed"),
            (None, "box".into(), None)
        );
        assert_eq!(
            parse_url("ssh://u@[fd00::1]:22").expect("parsed"),
            (Some("u".into()), "fd00::1".into(), Some(22))
        );
        for bad in [
            "box",
            "ssh://-oProxyCommand=x",
            "ssh://me@-box",
            "ssh://me@box:0",
            "ssh://me@box:x",
            "ssh://m e@box",
            "ssh://",
        ] {
            assert!(parse_url(bad).is_err(), "{bad} accepted");
        }
    }
}

//! `overseer hosts`: engines on other Linux machines, reached over the
//! system OpenSSH client (the user's config, agent, ProxyJump and
//! known_hosts; no SSH stack of our own, no password kept), and `--host
//! NAME`: a command sent to that engine through `ssh HOST overseer bridge`.
//!
//! On a host, everything lives under its data dir
//! (`${XDG_DATA_HOME:-~/.local/share}/overseer`): `versions/<version>/overseer`
//! (copied with its SHA-256 checked there), the `current` link (replaced
//! atomically), and the engine's own files. The hosts this machine knows,
//! with each engine's pinned signing key, are in `hosts.json` in the local
//! data dir.
//!
//! What `hosts add`, `upgrade` and `remove` do is `overseer_server::remote::
//! setup` (the app's Settings -> Hosts does the same); this prints its steps.

use anyhow::Context;
use overseer_engine::Paths;
use overseer_server::client::Client;
use overseer_server::remote::handshake;
use overseer_server::remote::registry::{self, fingerprint};
use overseer_server::remote::setup;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

#[derive(clap::Subcommand)]
pub enum HostsCommand {
    /// Install this overseer on a Linux machine over ssh, start its engine
    /// and pin its signing key: `overseer hosts add build1 ssh://me@build1`
    Add {
        name: String,
        /// ssh://[user@]host[:port]
        url: String,
        /// An ssh config file to use instead of ~/.ssh/config (kept for this host)
        #[arg(long, value_name = "FILE")]
        ssh_config: Option<PathBuf>,
    },
    /// The hosts this machine knows, with their pinned key fingerprints
    List {
        #[arg(long)]
        json: bool,
    },
    /// Install this overseer's version on a host and restart its engine there
    Upgrade { name: String },
    /// Stop a host's engine and forget the host (its files stay there)
    Remove { name: String },
}

/// The host every engine call of this process goes to (`--host NAME`).
static SELECTED: OnceLock<String> = OnceLock::new();

pub fn select(name: String) {
    let _ = SELECTED.set(name);
}

pub fn selected() -> Option<&'static str> {
    SELECTED.get().map(String::as_str)
}

/// Loads the hosts file (an error says what to do).
pub(crate) fn load(paths: &Paths) -> anyhow::Result<registry::HostsFile> {
    Ok(registry::load(paths)?)
}

/// A client on host `name`'s engine (one `ssh HOST overseer bridge`), its
/// signing key checked against the one pinned when it was added.
pub async fn connect(paths: &Paths, name: &str) -> anyhow::Result<Client> {
    let file = load(paths)?;
    let host = file.find(name)?;
    let bridge = handshake::open(&host.target(), &host.dir, name, &[])
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.message(name)))?;
    handshake::check_key(host, &bridge.welcome)?;
    Ok(Client::over(
        bridge.reader,
        bridge.writer,
        Some(Box::new(bridge.child)),
    ))
}

pub async fn run(paths: &Paths, cmd: HostsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HostsCommand::Add {
            name,
            url,
            ssh_config,
        } => {
            let exe = std::env::current_exe().context("cannot find this overseer's own binary")?;
            let log = setup::StepLog::new(paths, &name);
            let say = |line: &str| tell(&log, line);
            setup::add(paths, &exe, &name, &url, ssh_config, &say).await?;
        }
        HostsCommand::List { json } => {
            let file = load(paths)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&file.hosts)?);
            } else if file.hosts.is_empty() {
                println!(
                    "no hosts: agents run on this machine. Add one with `overseer hosts add NAME \
                     ssh://user@host`"
                );
            } else {
                for h in &file.hosts {
                    println!(
                        "{:<12} {}  overseer {}  {}  key {}",
                        h.name,
                        h.target().url(),
                        h.version,
                        h.service,
                        fingerprint(&h.engine_key)
                    );
                }
            }
        }
        HostsCommand::Upgrade { name } => {
            let exe = std::env::current_exe().context("cannot find this overseer's own binary")?;
            let log = setup::StepLog::new(paths, &name);
            let say = |line: &str| tell(&log, line);
            setup::upgrade(paths, &exe, &name, &say).await?;
        }
        HostsCommand::Remove { name } => {
            let log = setup::StepLog::new(paths, &name);
            let say = |line: &str| tell(&log, line);
            setup::remove(paths, &name, &say).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A setup's step, as `overseer hosts` tells it: one line on stdout, and
/// in the step log a running app shows in its window.
fn tell(log: &setup::StepLog, line: &str) {
    println!("{line}");
    log.write(line);
}

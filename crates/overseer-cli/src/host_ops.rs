//! `overseer hosts start` (a host's engine started again after it died or
//! the host rebooted), `overseer hosts verify` (a host's signed audit log
//! checked on this machine with the key pinned when the host was added), and
//! one ssh connection for all of a `--host` command's operations.

use crate::hosts;
use anyhow::{bail, Context};
use overseer_engine::Paths;
use overseer_server::remote::registry::{fingerprint, quote, Host};
use overseer_server::remote::{self, handshake, setup};
use overseer_store::snapshot::{snapshot_audit, verify_snapshot, SNAPSHOT_CHECKPOINT, SNAPSHOT_DB};
use overseer_store::Keyring;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::{ExitCode, Stdio};

/// The `hosts` subcommands carried out here (beside `hosts::HostsCommand`,
/// whose helpers they build on).
#[derive(clap::Subcommand)]
pub enum HostOpsCommand {
    /// Start a host's engine again if it is not running (after a reboot)
    Start { name: String },
    /// Verify a host's signed audit log here, with the key pinned when it was added
    Verify {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

/// The connection to the selected host, opened by a command's first
/// operation and used by the rest (`gates decide` asks twice): one ssh
/// handshake per command, not one per operation.
static LINK: tokio::sync::Mutex<Option<overseer_server::client::Client>> =
    tokio::sync::Mutex::const_new(None);

/// Performs `op` on host `name`'s engine over this command's connection.
/// A failed operation drops the connection (the next one opens another)
/// and is never sent again: a decision is applied once or reported failed.
///
/// Everything the host answers is made inert before this command prints
/// it (control characters and bidi controls escaped, in every string of
/// the answer and in its error): a host's run titles, messages and errors
/// cannot drive this terminal.
pub async fn perform<O>(paths: &Paths, name: &str, op: O) -> anyhow::Result<O::Response>
where
    O: overseer_server::api::Operation + Into<overseer_server::api::Request>,
    O::Response: serde::de::DeserializeOwned,
{
    let mut link = LINK.lock().await;
    let client = match link.as_mut() {
        Some(client) => client,
        None => link.insert(hosts::connect(paths, name).await?),
    };
    match client.call(op.into()).await {
        Ok(mut value) => {
            remote::inert_json(&mut value);
            serde_json::from_value(value).map_err(|e| {
                anyhow::anyhow!(
                    "unreadable answer from host {name} ({e}); are both the same version? \
                     `overseer hosts upgrade {name}` installs this one there"
                )
            })
        }
        Err(mut e) => {
            *link = None;
            e.message = remote::inert(&e.message);
            for f in &mut e.fields {
                f.field = remote::inert(&f.field);
                f.message = remote::inert(&f.message);
            }
            Err(e.into())
        }
    }
}

/// Closes the command's connection to its host (its ssh ends).
pub async fn close() {
    LINK.lock().await.take();
}

/// What `overseer audit snapshot` says on stdout, beside the copy.
#[derive(Debug, Serialize, Deserialize)]
struct SnapshotInfo {
    records: i64,
    /// The public half of the key file there now (hex), if there is one.
    engine_key: Option<String>,
}

/// The info file in a snapshot directory.
const INFO: &str = "info.json";

fn find(paths: &Paths, name: &str) -> anyhow::Result<Host> {
    hosts::load(paths)?
        .hosts
        .into_iter()
        .find(|h| h.name == name)
        .with_context(|| format!("no host named {name:?}: `overseer hosts list` shows the hosts"))
}

/// `overseer hosts start NAME`: starts the host's engine the way `hosts
/// add` did unless it runs, and checks its key is still the pinned one.
pub async fn start(paths: &Paths, name: &str) -> anyhow::Result<ExitCode> {
    let host = find(paths, name)?;
    let target = host.target();
    let note = if host.service == "systemd" {
        setup::sh(
            &target,
            "starting the engine (systemd user unit)",
            "systemctl --user start overseer.service",
        )
        .await?;
        "the systemd user unit overseer.service is started".to_owned()
    } else {
        setup::start(&target, &host.dir, false).await?.1
    };
    let welcome = setup::first_contact(&target, &host.dir, name).await?;
    handshake::check_key(&host, &welcome)?;
    println!("{}", note.replace("NAME", name));
    println!(
        "host {name}: engine running (overseer {}); key {} unchanged",
        welcome.engine_version,
        fingerprint(&host.engine_key)
    );
    Ok(ExitCode::SUCCESS)
}

/// `overseer audit snapshot DIR` (run on a host by `hosts verify`): a
/// consistent copy of this machine's database and checkpoint in DIR, and
/// [`SnapshotInfo`] in DIR/info.json. Never creates a key.
pub fn snapshot(paths: &Paths, dir: &Path) -> anyhow::Result<ExitCode> {
    if !paths.db().exists() {
        bail!(
            "no database at {}: this engine has no audit log yet",
            paths.db().display()
        );
    }
    let records = snapshot_audit(&paths.db(), &paths.config_dir, dir)?;
    let engine_key = if Keyring::key_path(&paths.config_dir).exists() {
        Some(Keyring::load_or_create(&paths.config_dir)?.public_key_hex())
    } else {
        None
    };
    let info = SnapshotInfo {
        records,
        engine_key,
    };
    std::fs::write(dir.join(INFO), serde_json::to_vec(&info)?)
        .with_context(|| format!("write {}", dir.join(INFO).display()))?;
    Ok(ExitCode::SUCCESS)
}

/// Takes a snapshot on the host and unpacks it into `into` (a tar over ssh).
fn fetch_snapshot(host: &Host, into: &Path) -> anyhow::Result<SnapshotInfo> {
    let target = host.target();
    let script = format!(
        "t=$(mktemp -d) || exit 1; trap 'rm -rf \"$t\"' EXIT; \
         {d}/current/overseer audit snapshot \"$t\" >&2 || exit 1; tar -C \"$t\" -cf - .",
        d = quote(&host.dir)
    );
    let tar_path = into.join("snapshot.tar");
    let tar_file = std::fs::File::create(&tar_path)
        .with_context(|| format!("create {}", tar_path.display()))?;
    let out = std::process::Command::new("ssh")
        .args(target.ssh_args(&format!("sh -c {}", quote(&script))))
        .stdin(Stdio::null())
        .stdout(tar_file)
        .output()
        .context("cannot run `ssh`: install the OpenSSH client")?;
    if !out.status.success() {
        bail!(
            "taking a copy of host {}'s audit log on {} failed: {}",
            host.name,
            target.url(),
            remote::inert(String::from_utf8_lossy(&out.stderr).trim())
        );
    }
    let untar = std::process::Command::new("tar")
        .arg("-C")
        .arg(into)
        .args(["--no-same-owner", "--no-same-permissions", "-xf"])
        .arg(&tar_path)
        .output()
        .context("cannot run `tar`")?;
    if !untar.status.success() {
        bail!(
            "the copy of host {}'s audit log is not a whole tar archive: {}",
            host.name,
            remote::inert(String::from_utf8_lossy(&untar.stderr).trim())
        );
    }
    // What the host sent is untrusted: only plain files are read (a link
    // would point this machine's reads elsewhere).
    for name in [INFO, SNAPSHOT_DB, SNAPSHOT_CHECKPOINT] {
        let path = into.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if !meta.file_type().is_file() {
                bail!(
                    "host {}'s audit log copy holds {name} as something other than a plain                      file; nothing was verified",
                    host.name
                );
            }
        }
    }
    let info = into.join(INFO);
    let text = std::fs::read(&info).with_context(|| {
        format!(
            "host {} sent no {INFO} with its audit log copy (is it running this version?)",
            host.name
        )
    })?;
    serde_json::from_slice(&text).with_context(|| format!("read {}", info.display()))
}

/// `overseer hosts verify NAME`: the host's audit log, copied here, checked
/// with the key pinned when the host was added. A host whose key file now
/// holds another key fails, naming both fingerprints, whatever the log says.
pub async fn verify(paths: &Paths, name: &str, json: bool) -> anyhow::Result<ExitCode> {
    let host = find(paths, name)?;
    let dir = paths
        .data_dir
        .join(format!("host-verify-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let checked = fetch_snapshot(&host, &dir).and_then(|info| {
        let verdict = verify_snapshot(&dir, &host.engine_key)?;
        Ok((info, verdict))
    });
    let _ = std::fs::remove_dir_all(&dir);
    let (info, verdict) = checked?;
    let pinned = fingerprint(&host.engine_key);
    let claimed = info.engine_key.as_deref().map(fingerprint);
    let key_changed = info.engine_key.as_deref() != Some(host.engine_key.as_str());
    if json {
        let (ok, report, failure) = match &verdict {
            Ok(r) => (true, Some(r), None),
            Err(f) => (false, None, Some(f.to_string())),
        };
        println!(
            "{}",
            serde_json::json!({
                "host": name,
                "ok": ok && !key_changed,
                "log_verifies_with_pinned_key": ok,
                "records": report.map(|r| r.records),
                "checkpoints": report.map(|r| r.checkpoints),
                "head_hash": report.map(|r| &r.head_hash),
                "failure": failure,
                "pinned_key": pinned,
                "host_key": claimed,
                "key_changed": key_changed,
            })
        );
    }
    let log = match &verdict {
        Ok(r) => format!(
            "{} records and {} checkpoints verify with the pinned key (head {})",
            r.records,
            r.checkpoints,
            &r.head_hash[..16.min(r.head_hash.len())]
        ),
        Err(f) => format!("it FAILED verification with the pinned key: {f}"),
    };
    if key_changed {
        eprintln!(
            "HOST KEY CHANGED: host {name}'s engine key file now holds {} but {pinned} was \
             pinned when the host was added; its audit log was checked with the pinned key: \
             {log}. Records signed with another key are not the ones this machine trusted. \
             If the host's engine was reinstalled on purpose, `overseer hosts remove {name}` \
             and `overseer hosts add {name} {}` pin the new key",
            claimed.as_deref().unwrap_or("no key at all"),
            host.target().url()
        );
        return Ok(ExitCode::FAILURE);
    }
    match verdict {
        Ok(_) => {
            if !json {
                println!("host {name}: audit log OK: {log}: {pinned}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(_) => {
            eprintln!("host {name}: audit log FAILED: {log}");
            Ok(ExitCode::FAILURE)
        }
    }
}

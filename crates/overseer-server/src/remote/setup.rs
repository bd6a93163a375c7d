//! Adding, upgrading and removing hosts: what `overseer hosts add|upgrade|
//! remove` and the window's Settings -> Hosts both do, told step by step.
//!
//! On a host, everything lives under its data dir
//! (`${XDG_DATA_HOME:-~/.local/share}/overseer`): `versions/<version>/overseer`
//! (copied with its SHA-256 checked there), the `current` link (replaced
//! atomically), and the engine's own files. Every step runs the system
//! `ssh`/`scp` (the user's config, agent, ProxyJump and known_hosts).
//!
//! Each step is told to a `say` callback as one line for the user (what the
//! CLI prints, what the window shows as `overseer://host-setup`); a failure
//! is a [`SetupError`] whose message says what to do. One setup of a host
//! runs at a time on this machine, whoever runs it (a lock file per host in
//! the data dir): a second one is refused as [`SetupFailure::Busy`]. A
//! setup run in a terminal also writes its steps to a [`StepLog`], which a
//! running app shows in its window.

use super::handshake::{self, OpenError, Welcome, VERSION};
use super::registry::{
    self, fingerprint, hosts_path, parse_url, quote, valid_name, Host, HostsFile, Target,
    SSH_CONFIG_ENV,
};
use overseer_core::{ApiError, ErrorCode};
use overseer_engine::Paths;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long a setup waits for a started engine to answer.
const START_WAIT: Duration = Duration::from_secs(30);

/// One step of adding, upgrading or removing host `host`, as it happens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct HostSetupStep {
    pub host: String,
    /// What was done or found, said for the user ("copied overseer 0.1.0
    /// to ...", "the host lacks slirp4netns ...").
    pub line: String,
}

/// Host `host` was forgotten: its link is closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct HostRemoved {
    pub host: String,
}

/// What a step is told to: one line for the user.
pub type Say<'a> = &'a (dyn Fn(&str) + Sync);

/// What kind of failure a [`SetupError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupFailure {
    /// The name, address or ssh config given is not usable.
    InvalidInput,
    /// No host of that name is known here.
    NotFound,
    /// A host of that name is known already.
    AlreadyAdded,
    /// Another setup of the same host is under way (the window's or a
    /// terminal's): wait for it.
    Busy,
    /// The machine lacks what Overseer needs there; nothing was installed.
    Unfit,
    /// ssh, scp or a step on the host failed (the host is unreachable, its
    /// engine does not answer, the copy does not match).
    Remote,
    /// The host's engine signs with another key than the pinned one.
    KeyChanged,
    /// Something on this machine failed (its binary, `hosts.json`).
    Local,
}

/// A setup that failed: what kind, and what to tell the user (what went
/// wrong and what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError {
    pub failure: SetupFailure,
    pub message: String,
}

impl SetupError {
    pub fn new(failure: SetupFailure, message: impl Into<String>) -> SetupError {
        SetupError {
            failure,
            message: message.into(),
        }
    }

    /// The code it crosses a boundary with.
    pub fn code(&self) -> ErrorCode {
        match self.failure {
            SetupFailure::InvalidInput | SetupFailure::Unfit => ErrorCode::InvalidInput,
            SetupFailure::NotFound => ErrorCode::NotFound,
            SetupFailure::AlreadyAdded | SetupFailure::Busy | SetupFailure::KeyChanged => {
                ErrorCode::Conflict
            }
            SetupFailure::Remote => ErrorCode::EngineUnavailable,
            SetupFailure::Local => ErrorCode::Storage,
        }
    }

    /// The same failure, its message preceded by `context`.
    fn within(self, context: &str) -> SetupError {
        SetupError {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SetupError {}

impl From<SetupError> for ApiError {
    fn from(e: SetupError) -> ApiError {
        ApiError::new(e.code(), e.message)
    }
}

fn local(e: super::HostError) -> SetupError {
    SetupError::new(SetupFailure::Local, e.0)
}

/// A failure on the host: what it (or ssh) said, made inert.
fn remote(message: String) -> SetupError {
    SetupError::new(SetupFailure::Remote, super::inert(&message))
}

/// Runs OpenSSH's `program` (`ssh`, `scp`) with `args`; its stdout, or an
/// error `failed` words from what it said on stderr.
async fn openssh(
    program: &str,
    args: &[String],
    failed: impl FnOnce(&str) -> String,
) -> Result<String, SetupError> {
    let out = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| {
            SetupError::new(
                SetupFailure::Local,
                format!("cannot run `{program}` ({e}): install the OpenSSH client"),
            )
        })?;
    if !out.status.success() {
        return Err(remote(failed(String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `script` with `sh` on the host; its stdout, or an error with ssh's
/// or the script's stderr.
pub async fn sh(target: &Target, what: &str, script: &str) -> Result<String, SetupError> {
    let args = target.ssh_args(&format!("sh -c {}", quote(script)));
    openssh("ssh", &args, |said| {
        format!("{what} on {} failed: {said}", target.url())
    })
    .await
}

/// `scp [-F config] [-P port] local dest:remote`.
pub async fn scp(target: &Target, local: &Path, remote_path: &str) -> Result<(), SetupError> {
    let mut args = target.config_args();
    if let Some(p) = target.port {
        args.extend(["-P".into(), p.to_string()]);
    }
    let addr = target.bracketed();
    let dest = match &target.user {
        Some(u) => format!("{u}@{addr}:{remote_path}"),
        None => format!("{addr}:{remote_path}"),
    };
    args.extend(["-q".into(), local.display().to_string(), dest]);
    openssh("scp", &args, |said| {
        format!(
            "copying {} to {} failed: {said}",
            local.display(),
            target.url()
        )
    })
    .await?;
    Ok(())
}

/// What a setup needs to know about a machine before installing.
#[derive(Debug, Default)]
struct Probe {
    os: String,
    arch: String,
    bwrap: bool,
    cgroup2: bool,
    slirp: bool,
    missing_tools: Vec<String>,
    distro: String,
    systemd: bool,
    dir: String,
}

const PROBE: &str = r#"echo "os=$(uname -s)"
echo "arch=$(uname -m)"
if command -v bwrap >/dev/null 2>&1; then echo bwrap=yes; else echo bwrap=no; fi
if grep -q ' - cgroup2 ' /proc/self/mountinfo 2>/dev/null; then echo cgroup2=yes; else echo cgroup2=no; fi
if command -v slirp4netns >/dev/null 2>&1; then echo slirp=yes; else echo slirp=no; fi
for t in sha256sum setsid nohup; do command -v $t >/dev/null 2>&1 || echo "missing=$t"; done
if [ -r /etc/os-release ]; then . /etc/os-release; echo "distro=$ID $ID_LIKE"; fi
if command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then echo systemd=yes; else echo systemd=no; fi
echo "dir=${XDG_DATA_HOME:-$HOME/.local/share}/overseer"
"#;

async fn probe(target: &Target) -> Result<Probe, SetupError> {
    let out = sh(target, "checking the host", PROBE).await?;
    let mut p = Probe::default();
    for line in out.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim().to_owned();
        match k {
            "os" => p.os = v,
            "arch" => p.arch = v,
            "bwrap" => p.bwrap = v == "yes",
            "cgroup2" => p.cgroup2 = v == "yes",
            "slirp" => p.slirp = v == "yes",
            "missing" => p.missing_tools.push(v),
            "distro" => p.distro = v,
            "systemd" => p.systemd = v == "yes",
            "dir" => p.dir = v,
            _ => {}
        }
    }
    if p.dir.is_empty() || !p.dir.starts_with('/') {
        return Err(remote(format!(
            "{} did not say where its home is (got {out:?}); is its login shell a POSIX shell?",
            target.url()
        )));
    }
    Ok(p)
}

/// The package-manager line that installs `packages` on a distro like `distro`.
fn install_line(distro: &str, packages: &[&str]) -> String {
    let ids: Vec<&str> = distro.split_whitespace().collect();
    let has = |id: &str| ids.contains(&id);
    let list = packages.join(" ");
    if has("debian") || has("ubuntu") {
        format!("sudo apt-get install {list}")
    } else if has("fedora") || has("rhel") || has("centos") {
        format!("sudo dnf install {list}")
    } else if has("arch") {
        format!("sudo pacman -S {list}")
    } else if has("alpine") {
        format!("sudo apk add {list}")
    } else if has("suse") || has("opensuse") {
        format!("sudo zypper install {list}")
    } else {
        format!("install {list} with the host's package manager")
    }
}

/// Everything the host lacks, each with what to do; empty when it can run Overseer.
fn shortfalls(p: &Probe) -> Vec<String> {
    let mut out = Vec::new();
    if p.os != "Linux" {
        out.push(format!(
            "a host must run Linux (this one runs {}): Overseer contains agents with Linux \
             namespaces",
            p.os
        ));
        return out;
    }
    let ours = std::env::consts::ARCH;
    if p.arch != ours {
        out.push(format!(
            "this overseer is built for {ours} and the host is {}: add it from a machine of the \
             same architecture (a build for {} is not installed by `hosts add`)",
            p.arch, p.arch
        ));
    }
    if !p.bwrap {
        out.push(format!(
            "bubblewrap (which contains every run): {}",
            install_line(&p.distro, &["bubblewrap"])
        ));
    }
    if !p.cgroup2 {
        out.push(
            "cgroup v2 (per-run limits and stopping a run's every process): boot the host with \
             cgroup v2 mounted (systemd.unified_cgroup_hierarchy=1 on the kernel command line)"
                .to_owned(),
        );
    }
    if !p.missing_tools.is_empty() {
        let tools: Vec<&str> = p.missing_tools.iter().map(String::as_str).collect();
        out.push(format!(
            "{} (coreutils/util-linux): {}",
            tools.join(", "),
            install_line(&p.distro, &["coreutils", "util-linux"])
        ));
    }
    out
}

/// What the host can do without, said before installing: runs whose
/// profile wants a private network share the host's instead.
fn recommended(p: &Probe) -> Option<String> {
    (!p.slirp).then(|| {
        format!(
            "slirp4netns (each run's private network; without it runs share the host's \
             network, its loopback services in reach): {}",
            install_line(&p.distro, &["slirp4netns"])
        )
    })
}

fn sha256_file(path: &Path) -> Result<String, SetupError> {
    let fail = |e: std::io::Error| {
        SetupError::new(SetupFailure::Local, format!("read {}: {e}", path.display()))
    };
    let mut f = std::fs::File::open(path).map_err(fail)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(fail)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Copies `exe` (an `overseer` of this version) to
/// `dir/versions/VERSION/overseer` on the host (unless a copy with the same
/// SHA-256 is there), checks it there, and points `dir/current` at that
/// version atomically. Returns the checksum and whether it was copied.
async fn install(target: &Target, dir: &str, exe: &Path) -> Result<(String, bool), SetupError> {
    let sum = {
        let exe = exe.to_owned();
        tokio::task::spawn_blocking(move || sha256_file(&exe))
            .await
            .map_err(|e| SetupError::new(SetupFailure::Local, e.to_string()))??
    };
    let vdir = format!("{dir}/versions/{VERSION}");
    let have = sh(
        target,
        "preparing the version directory",
        &format!(
            "mkdir -p {v} && chmod 700 {d} && (sha256sum {v}/overseer 2>/dev/null || true)",
            v = quote(&vdir),
            d = quote(dir)
        ),
    )
    .await?;
    let copied = have.split_whitespace().next() != Some(sum.as_str());
    if copied {
        scp(target, exe, &format!("{vdir}/overseer.partial")).await?;
        let checked = sh(
            target,
            "checking the copy",
            &format!(
                "cd {v} && got=$(sha256sum overseer.partial | cut -d' ' -f1) && \
                 if [ \"$got\" != {sum} ]; then rm -f overseer.partial; echo \"mismatch $got\"; \
                 else chmod 755 overseer.partial && mv -f overseer.partial overseer && echo ok; fi",
                v = quote(&vdir),
            ),
        )
        .await?;
        if checked.trim() != "ok" {
            return Err(remote(format!(
                "the copy on {} does not match this binary (SHA-256 {sum}, the host has {}); \
                 nothing was switched: try again",
                target.url(),
                checked.trim().trim_start_matches("mismatch ")
            )));
        }
    }
    let runs = sh(
        target,
        "running the copied overseer",
        &format!("{}/overseer --version", quote(&vdir)),
    )
    .await?;
    if runs.trim() != format!("overseer {VERSION}") {
        return Err(remote(format!(
            "the copied overseer does not run on {} (it said {:?}): is the host's C library \
             older than this machine's?",
            target.url(),
            runs.trim()
        )));
    }
    sh(
        target,
        "switching the current version",
        &format!(
            "cd {d} && ln -sfn versions/{VERSION} current.tmp.$$ && mv -T current.tmp.$$ current",
            d = quote(dir)
        ),
    )
    .await?;
    Ok((sum, copied))
}

/// Starts the host's engine unless it runs: a systemd user unit where the
/// user's systemd answers, else detached (setsid + nohup, pid in serve.pid).
/// Returns the way it runs and a note for the user (`NAME` in it stands for
/// the host's name).
pub async fn start(
    target: &Target,
    dir: &str,
    systemd: bool,
) -> Result<(String, String), SetupError> {
    let d = quote(dir);
    if systemd {
        let out = sh(
            target,
            "starting the engine (systemd user unit)",
            &format!(
                "u=\"${{XDG_CONFIG_HOME:-$HOME/.config}}/systemd/user\" && mkdir -p \"$u\" && \
                 printf '[Unit]\\nDescription=Overseer engine\\n\\n[Service]\\nExecStart=%s/current/overseer serve\\nRestart=on-failure\\n\\n[Install]\\nWantedBy=default.target\\n' {d} >\"$u/overseer.service\" && \
                 systemctl --user daemon-reload && systemctl --user enable overseer.service >/dev/null 2>&1 && \
                 systemctl --user restart overseer.service && \
                 (loginctl show-user \"$(id -un)\" -p Linger 2>/dev/null || true)"
            ),
        )
        .await?;
        let note = if out.contains("Linger=yes") {
            "the engine runs as the systemd user unit overseer.service (lingering is on: it \
             keeps running when you log out)"
                .to_owned()
        } else {
            "the engine runs as the systemd user unit overseer.service; systemd stops it when \
             your last session on the host ends unless lingering is on: run `loginctl \
             enable-linger` on the host once"
                .to_owned()
        };
        return Ok(("systemd".into(), note));
    }
    sh(
        target,
        "starting the engine",
        &format!(
            "d={d}; p=$(cat \"$d/serve.pid\" 2>/dev/null); \
             if [ -n \"$p\" ] && kill -0 \"$p\" 2>/dev/null && \
             tr '\\0' ' ' </proc/$p/cmdline | grep -q 'overseer serve'; then echo running; \
             else cd \"$HOME\" || exit 1; \
             setsid nohup \"$d/current/overseer\" serve >>\"$d/serve.log\" 2>&1 </dev/null & \
             echo $! >\"$d/serve.pid\"; echo started; fi"
        ),
    )
    .await?;
    Ok((
        "detached".into(),
        format!(
            "the engine runs detached (no systemd user session on the host); its log is \
             {dir}/serve.log. It does not start again after a reboot: `overseer hosts upgrade \
             NAME` starts it"
        ),
    ))
}

/// Stops the host's engine the way it was started.
async fn stop(target: &Target, dir: &str, service: &str) -> Result<(), SetupError> {
    let d = quote(dir);
    let script = if service == "systemd" {
        "systemctl --user disable --now overseer.service >/dev/null 2>&1; \
         rm -f \"${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/overseer.service\"; \
         systemctl --user daemon-reload; echo stopped"
            .to_owned()
    } else {
        format!(
            "d={d}; if [ -f \"$d/serve.pid\" ]; then p=$(cat \"$d/serve.pid\"); \
             if kill -0 \"$p\" 2>/dev/null && tr '\\0' ' ' </proc/$p/cmdline | grep -q 'overseer serve'; then \
             kill -TERM \"$p\"; i=0; while kill -0 \"$p\" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; \
             if kill -0 \"$p\" 2>/dev/null; then echo \"still running: pid $p\"; exit 0; fi; fi; \
             rm -f \"$d/serve.pid\"; fi; echo stopped"
        )
    };
    let out = sh(target, "stopping the engine", &script).await?;
    if out.trim() != "stopped" {
        return Err(remote(format!(
            "the engine on {} did not stop within 20 s ({}); nothing was forgotten",
            target.url(),
            out.trim()
        )));
    }
    Ok(())
}

/// The engine's welcome through a bridge that [`start`] just started:
/// retried while the engine is still opening.
pub async fn first_contact(target: &Target, dir: &str, name: &str) -> Result<Welcome, SetupError> {
    let started = Instant::now();
    loop {
        match handshake::open(target, dir, name, &[]).await {
            Ok(bridge) => return Ok(bridge.welcome),
            Err(OpenError::Refused(r)) if r.code == "engine_unavailable" => {
                if started.elapsed() > START_WAIT {
                    let log = sh(
                        target,
                        "reading the engine's log",
                        &format!("tail -n 5 {}/serve.log 2>/dev/null || true", quote(dir)),
                    )
                    .await
                    .unwrap_or_default();
                    return Err(remote(format!(
                        "the engine on {} did not answer within {START_WAIT:?}: {}; the end of \
                         its log ({dir}/serve.log there):\n{}",
                        target.url(),
                        r.message,
                        log.trim_end()
                    )));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(remote(e.message(name))),
        }
    }
}

/// Held while a host is set up: one setup of a host at a time on this
/// machine (a `flock` on a file per host in the data dir, released when
/// dropped, or when the process holding it ends).
pub struct SetupLock {
    _file: OwnedFd,
}

fn lock_file(path: &Path, wait: bool) -> Result<Option<OwnedFd>, SetupError> {
    use rustix::fs::{flock, FlockOperation};
    let fail = |e: &dyn std::fmt::Display| {
        SetupError::new(SetupFailure::Local, format!("lock {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| fail(&e))?;
    let fd = OwnedFd::from(file);
    let op = if wait {
        FlockOperation::LockExclusive
    } else {
        FlockOperation::NonBlockingLockExclusive
    };
    match flock(&fd, op) {
        Ok(()) => Ok(Some(fd)),
        Err(rustix::io::Errno::WOULDBLOCK) if !wait => Ok(None),
        Err(e) => Err(fail(&e)),
    }
}

/// Takes the setup lock of host `name`, or refuses: another setup of it is
/// under way (here, in the window, or in a terminal).
pub fn lock(paths: &Paths, name: &str) -> Result<SetupLock, SetupError> {
    if !valid_name(name) {
        return Err(SetupError::new(
            SetupFailure::InvalidInput,
            format!("{name:?} is not a host name: use letters, digits, '-', '_' or '.'"),
        ));
    }
    let path = paths.data_dir.join(format!(".host-setup-{name}.lock"));
    match lock_file(&path, false)? {
        Some(fd) => Ok(SetupLock { _file: fd }),
        None => Err(SetupError::new(
            SetupFailure::Busy,
            format!(
                "host {name} is being set up already (added, upgraded or removed, from the \
                 window or by `overseer hosts` in a terminal); wait for that to finish, then try \
                 again"
            ),
        )),
    }
}

/// The steps of a setup run in a terminal, for the app to show as they
/// happen: `.host-setup-NAME.steps` in the data dir, one [`HostSetupStep`]
/// (JSON) a line. Created anew (another file) at a setup's first step, so a
/// reader tells a new setup's file from the last one's; each line appended
/// and the file closed, so a reader watching for closed writes sees each.
/// Nothing here fails a setup: a step not written is only not shown.
pub struct StepLog {
    path: PathBuf,
    host: String,
    started: std::sync::atomic::AtomicBool,
}

/// The prefix and suffix of a step log's file name.
pub const STEP_LOG: (&str, &str) = (".host-setup-", ".steps");

impl StepLog {
    pub fn new(paths: &Paths, host: &str) -> StepLog {
        StepLog {
            path: paths
                .data_dir
                .join(format!("{}{host}{}", STEP_LOG.0, STEP_LOG.1)),
            host: host.to_owned(),
            started: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Appends `line` (the first one of a setup to a new file).
    pub fn write(&self, line: &str) {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::Ordering;
        let first = !self.started.swap(true, Ordering::SeqCst);
        if first {
            let _ = std::fs::remove_file(&self.path);
        }
        let step = HostSetupStep {
            host: self.host.clone(),
            line: line.to_owned(),
        };
        let Ok(mut bytes) = serde_json::to_vec(&step) else {
            return;
        };
        bytes.push(b'\n');
        let opened = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&self.path);
        if let Ok(mut f) = opened {
            let _ = f.write_all(&bytes);
        }
    }
}

/// Reads `hosts.json`, lets `change` edit it and writes it back, with no
/// other writer in between (a lock beside it): a setup of another host that
/// ends meanwhile keeps its entry.
fn update<T>(
    paths: &Paths,
    change: impl FnOnce(&mut HostsFile) -> Result<T, SetupError>,
) -> Result<T, SetupError> {
    let _held = lock_file(&paths.data_dir.join(".hosts.json.lock"), true)?;
    let mut file = registry::load(paths).map_err(local)?;
    let out = change(&mut file)?;
    registry::save(paths, &file).map_err(local)?;
    Ok(out)
}

fn not_found(name: &str) -> SetupError {
    SetupError::new(
        SetupFailure::NotFound,
        format!("no host named {name:?}: `overseer hosts list` shows the hosts"),
    )
}

fn already_added(name: &str) -> SetupError {
    SetupError::new(
        SetupFailure::AlreadyAdded,
        format!(
            "a host named {name} is already added: `overseer hosts upgrade {name}` reinstalls \
             it, `overseer hosts remove {name}` forgets it"
        ),
    )
}

/// The host named `name` in `hosts.json`.
fn known(paths: &Paths, name: &str) -> Result<Host, SetupError> {
    registry::load(paths)
        .map_err(local)?
        .hosts
        .into_iter()
        .find(|h| h.name == name)
        .ok_or_else(|| not_found(name))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Adds host `name` at `url` (`ssh://[user@]host[:port]`): checks the
/// machine (saying what it lacks; nothing is installed then), copies `exe`
/// (an `overseer` of this version) there with its checksum checked, switches
/// `current` atomically, starts the engine, pins its signing key, and
/// records the host in `hosts.json`. `ssh_config`: an ssh config file kept
/// with the host (else `$OVERSEER_SSH_CONFIG`, else the user's own).
pub async fn add(
    paths: &Paths,
    exe: &Path,
    name: &str,
    url: &str,
    ssh_config: Option<PathBuf>,
    say: Say<'_>,
) -> Result<Host, SetupError> {
    let _lock = lock(paths, name)?;
    let file = registry::load(paths).map_err(local)?;
    if file.hosts.iter().any(|h| h.name == name) {
        return Err(already_added(name));
    }
    let (user, address, port) =
        parse_url(url).map_err(|e| SetupError::new(SetupFailure::InvalidInput, e.0))?;
    let ssh_config = ssh_config.or_else(|| std::env::var_os(SSH_CONFIG_ENV).map(PathBuf::from));
    let ssh_config = ssh_config.map(|c| std::path::absolute(&c).unwrap_or(c));
    let target = Target {
        user,
        address,
        port,
        ssh_config,
    };
    let p = probe(&target).await?;
    let missing = shortfalls(&p);
    if !missing.is_empty() {
        return Err(SetupError::new(
            SetupFailure::Unfit,
            format!(
                "{} cannot run Overseer yet; nothing was installed. It needs:\n  - {}\n{}then \
                 run this again",
                target.url(),
                missing.join("\n  - "),
                recommended(&p)
                    .map(|r| format!("and should have:\n  - {r}\n"))
                    .unwrap_or_default()
            ),
        ));
    }
    if let Some(r) = recommended(&p) {
        say(&format!("note: the host lacks {r}"));
    }
    say(&format!(
        "host {name}: {}, {} {}, bubblewrap, cgroup v2",
        target.url(),
        p.os,
        p.arch
    ));
    let (sum, copied) = install(&target, &p.dir, exe).await?;
    say(&format!(
        "{} overseer {VERSION} to {}/versions/{VERSION}/overseer; SHA-256 {sum} verified there; \
         {}/current points at it",
        if copied { "copied" } else { "kept the same" },
        p.dir,
        p.dir
    ));
    let (service, note) = start(&target, &p.dir, p.systemd).await?;
    let welcome = first_contact(&target, &p.dir, name).await?;
    let key = welcome
        .engine_key
        .ok_or_else(|| remote("the host's engine answered without its signing key".to_owned()))?;
    say(&note.replace("NAME", name));
    say(&format!(
        "engine signing key pinned: {} (later contacts are refused if it changes)",
        fingerprint(&key)
    ));
    let host = Host {
        name: name.to_owned(),
        user: target.user.clone(),
        address: target.address.clone(),
        port: target.port,
        ssh_config: target.ssh_config.clone(),
        dir: p.dir,
        version: welcome.engine_version,
        engine_key: key,
        service,
        added_at: now_ms(),
    };
    // Every step is told before the host joins `hosts.json`: a window
    // following a terminal's setup takes the join as the end of its steps.
    say(&format!(
        "host {name} ready: `overseer --host {name} runs list`"
    ));
    update(paths, |file| {
        if file.hosts.iter().any(|h| h.name == name) {
            return Err(already_added(name));
        }
        file.hosts.push(host.clone());
        Ok(())
    })?;
    Ok(host)
}

/// Installs `exe`'s version on known host `name` and restarts its engine
/// there; its key must still be the pinned one. Returns the host as
/// `hosts.json` now has it (its version and the way its engine runs).
pub async fn upgrade(
    paths: &Paths,
    exe: &Path,
    name: &str,
    say: Say<'_>,
) -> Result<Host, SetupError> {
    let _lock = lock(paths, name)?;
    let host = known(paths, name)?;
    let target = host.target();
    let p = probe(&target).await?;
    let missing = shortfalls(&p);
    if !missing.is_empty() {
        return Err(SetupError::new(
            SetupFailure::Unfit,
            format!(
                "{} cannot run Overseer: it needs:\n  - {}",
                target.url(),
                missing.join("\n  - ")
            ),
        ));
    }
    let (sum, _) = install(&target, &host.dir, exe).await?;
    stop(&target, &host.dir, &host.service).await?;
    let (service, note) = start(&target, &host.dir, p.systemd).await?;
    let welcome = first_contact(&target, &host.dir, name).await?;
    handshake::check_key(&host, &welcome)
        .map_err(|e| SetupError::new(SetupFailure::KeyChanged, e.0))?;
    say(&note.replace("NAME", name));
    say(&format!(
        "host {name}: overseer {} (SHA-256 {sum}) running; key {} unchanged",
        welcome.engine_version,
        fingerprint(&host.engine_key)
    ));
    update(paths, |file| {
        let entry = file
            .hosts
            .iter_mut()
            .find(|h| h.name == name)
            .ok_or_else(|| not_found(name))?;
        entry.version = welcome.engine_version;
        entry.service = service;
        Ok(entry.clone())
    })
}

/// Stops known host `name`'s engine and forgets the host. Its files stay
/// there (said). A host whose engine cannot be stopped (unreachable) is not
/// forgotten: the error says where its entry is. Returns the forgotten entry.
pub async fn remove(paths: &Paths, name: &str, say: Say<'_>) -> Result<Host, SetupError> {
    let _lock = lock(paths, name)?;
    let host = known(paths, name)?;
    stop(&host.target(), &host.dir, &host.service)
        .await
        .map_err(|e| {
            e.within(&format!(
                "host {name} was not forgotten; when the host is gone for good, delete its \
                 entry from {}",
                hosts_path(paths).display()
            ))
        })?;
    // Told before the host leaves `hosts.json` (see `add`).
    say(&format!(
        "host {name}: engine stopped; forgetting the host here"
    ));
    say(&format!(
        "left on the host: {dir} (overseer's versions, the engine's database, audit log and \
         runs' repositories) and the engine's signing key in its config dir \
         (~/.config/overseer); delete them there when you no longer need them",
        dir = host.dir
    ));
    update(paths, |file| {
        file.hosts.retain(|h| h.name != name);
        Ok(())
    })?;
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_lacking_pieces_is_told_what_to_install() {
        let p = Probe {
            os: "Linux".into(),
            arch: std::env::consts::ARCH.into(),
            bwrap: false,
            cgroup2: false,
            distro: "ubuntu debian".into(),
            ..Probe::default()
        };
        let s = shortfalls(&p);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].contains("sudo apt-get install bubblewrap"), "{s:?}");
        assert!(s[1].contains("cgroup v2"), "{s:?}");
        let mac = Probe {
            os: "Darwin".into(),
            ..Probe::default()
        };
        assert!(shortfalls(&mac)[0].contains("must run Linux"));
        let ok = Probe {
            os: "Linux".into(),
            arch: std::env::consts::ARCH.into(),
            bwrap: true,
            cgroup2: true,
            ..Probe::default()
        };
        assert!(shortfalls(&ok).is_empty());
    }

    #[test]
    fn a_second_setup_of_a_host_is_refused_while_the_first_holds_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths {
            data_dir: dir.path().join("data"),
            config_dir: dir.path().join("config"),
        };
        let first = lock(&paths, "box").expect("the first setup");
        let second = lock(&paths, "box").err().expect("refused");
        assert_eq!(second.failure, SetupFailure::Busy);
        assert_eq!(second.code(), ErrorCode::Conflict);
        assert!(
            second.message.contains("wait for that to finish"),
            "{second}"
        );
        // Another host is not held up.
        let _other = lock(&paths, "other").expect("another host");
        drop(first);
        lock(&paths, "box").expect("free again");
        assert_eq!(
            lock(&paths, "../x").err().map(|e| e.failure),
            Some(SetupFailure::InvalidInput)
        );
    }
}

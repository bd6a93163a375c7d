//! A network of the run's own: its sandbox gets a network namespace
//! (`bwrap --unshare-net`), and slirp4netns, a user-mode network stack from
//! the distribution, gives it outbound network through the engine's user
//! with `--disable-host-loopback`: the host's loopback services (a database
//! on 127.0.0.1, a web endpoint Overseer may serve, the X server's TCP port)
//! are out of reach, and so is every abstract Unix socket of the host (they
//! belong to a network namespace).
//!
//! How it is wired: bwrap writes its sandbox's pid to `--info-fd` and waits
//! on `--block-fd` before it runs the agent; the engine waits until the
//! sandbox is blocked there (its network set up by bwrap: loopback), starts
//! slirp4netns on that namespace (`--configure`, sandboxed and seccomp'd by
//! its own flags, dying with the engine and with its `--exit-fd`), waits for `--ready-fd`, then lets the agent
//! run. Inside: `tap0` with 10.0.2.100, the gateway 10.0.2.2 (which does not
//! lead to the host's loopback) and DNS at 10.0.2.3.
//!
//! Profiles choose: `network = "private"` (the default), `"none"` (its own
//! loopback only) or `"host"` (the host's network, loopback included: for an
//! agent that must reach a model served on this machine).

use super::NetStatus;
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// What network a run's sandbox gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case", try_from = "NetworkSetting")]
pub enum NetworkMode {
    /// A namespace of its own with outbound network through slirp4netns;
    /// the host's loopback is out of reach.
    #[default]
    Private,
    /// A namespace of its own with nothing but its own loopback.
    None,
    /// The host's network namespace, loopback services included.
    Host,
}

/// `network` as written in `overseer.toml`: a mode's name, or the older
/// `true` (a network: now a private one) / `false` (none).
#[derive(Deserialize)]
#[serde(untagged)]
enum NetworkSetting {
    Flag(bool),
    Name(String),
}

impl TryFrom<NetworkSetting> for NetworkMode {
    type Error = String;
    fn try_from(v: NetworkSetting) -> Result<Self, String> {
        match v {
            NetworkSetting::Flag(true) => Ok(NetworkMode::Private),
            NetworkSetting::Flag(false) => Ok(NetworkMode::None),
            NetworkSetting::Name(n) => match n.as_str() {
                "private" => Ok(NetworkMode::Private),
                "none" => Ok(NetworkMode::None),
                "host" => Ok(NetworkMode::Host),
                other => Err(format!(
                    "network = \"{other}\" is not a network: \"private\" (the default: outbound \
                     network, the host's loopback out of reach), \"none\", or \"host\" (the \
                     host's network, its loopback services included)"
                )),
            },
        }
    }
}

impl NetworkMode {
    /// In words, for `agents list` and Settings.
    pub fn describe(self) -> &'static str {
        match self {
            NetworkMode::Private => {
                "its own network (outbound only; this machine's loopback services out of reach)"
            }
            NetworkMode::None => "no network",
            NetworkMode::Host => {
                "this machine's network, loopback services included (network = \"host\")"
            }
        }
    }
}

const SLIRP_ENV: &str = "OVERSEER_SLIRP4NETNS";

fn find_slirp() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(SLIRP_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/local/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join("slirp4netns"))
        .find(|p| super::is_executable(p))
}

/// What a private network needs on this machine.
pub fn probe() -> NetStatus {
    match find_slirp() {
        Some(p) if super::is_executable(&p) => NetStatus::Available {
            helper: p.to_string_lossy().into_owned(),
        },
        Some(p) => NetStatus::Missing {
            why: format!("{SLIRP_ENV}={} is not an executable file", p.display()),
            leaves_open: LEAVES_OPEN.to_owned(),
        },
        None => NetStatus::Missing {
            why: "slirp4netns is not installed (`apt-get install slirp4netns` on Debian/Ubuntu, \
                  `dnf install slirp4netns` on Fedora)"
                .to_owned(),
            leaves_open: LEAVES_OPEN.to_owned(),
        },
    }
}

const LEAVES_OPEN: &str = "runs whose profile wants a private network share this machine's \
     network instead: its loopback services (databases, web endpoints on 127.0.0.1) are in reach";

/// slirp4netns, when private networks work here.
pub fn helper() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| match super::probe().private_network {
            NetStatus::Available { ref helper } => Some(PathBuf::from(helper)),
            NetStatus::Missing { .. } => None,
        })
        .as_deref()
}

/// The pipes a sandbox with a private network is started with: bwrap
/// writes to `info_w` and waits on `block_r` (both passed to it).
pub struct Pending {
    info_r: OwnedFd,
    pub info_w: OwnedFd,
    pub block_r: OwnedFd,
    block_w: OwnedFd,
}

/// The running network of one sandbox: slirp4netns, stopped when this is
/// dropped (its exit pipe closes; it is also killed).
#[derive(Debug)]
pub struct PrivateNetwork {
    _helper: tokio::process::Child,
    _exit: OwnedFd,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(std::io::Error::from)
}

impl Pending {
    pub fn new() -> std::io::Result<Pending> {
        let (info_r, info_w) = pipe()?;
        let (block_r, block_w) = pipe()?;
        Ok(Pending {
            info_r,
            info_w,
            block_r,
            block_w,
        })
    }

    /// bwrap's extra arguments (before the plan's).
    pub fn bwrap_args(&self) -> Vec<String> {
        vec![
            "--info-fd".to_owned(),
            self.info_w.as_raw_fd().to_string(),
            "--block-fd".to_owned(),
            self.block_r.as_raw_fd().to_string(),
        ]
    }

    /// The descriptors bwrap keeps across exec.
    pub fn child_fds(&self) -> [i32; 2] {
        [self.info_w.as_raw_fd(), self.block_r.as_raw_fd()]
    }

    /// Once bwrap is started: its network, then the agent let go. Err: why
    /// (the caller stops the sandbox). Every wait here is the runtime's
    /// (pipes polled by its reactor, its timers): a fleet's launches never
    /// hold up its other tasks.
    pub async fn connect(self, helper: &Path) -> Result<PrivateNetwork, String> {
        let Pending {
            info_r,
            info_w,
            block_r,
            block_w,
        } = self;
        // Ours closed, so the reads below see bwrap's end of them.
        drop(info_w);
        drop(block_r);
        let deadline = tokio::time::Instant::now() + SETUP_LIMIT;
        let pid = read_child_pid(info_r, deadline).await?;
        // bwrap has set up the namespace's loopback once its sandbox waits
        // on the block pipe; slirp4netns must come after that.
        wait_blocked(pid, deadline).await?;
        let (ready_r, ready_w) = pipe().map_err(|e| format!("a pipe: {e}"))?;
        let (exit_r, exit_w) = pipe().map_err(|e| format!("a pipe: {e}"))?;
        let mut cmd = tokio::process::Command::new(helper);
        cmd.args([
            "--configure",
            "--mtu=65520",
            "--disable-host-loopback",
            "--enable-sandbox",
            "--enable-seccomp",
        ])
        .arg(format!("--ready-fd={}", ready_w.as_raw_fd()))
        .arg(format!("--exit-fd={}", exit_r.as_raw_fd()))
        .arg(format!("--userns-path=/proc/{pid}/ns/user"))
        .arg(pid.to_string())
        .arg("tap0")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
        crate::child::keep_fds(&mut cmd, vec![ready_w.as_raw_fd(), exit_r.as_raw_fd()]);
        // Not under the run's Landlock scopes: it is the engine's helper,
        // not the run's code, and a process in another Landlock domain may
        // not open the sandbox's namespaces. It confines itself
        // (--enable-sandbox, --enable-seccomp).
        crate::child::die_with_parent(&mut cmd);
        let mut child = crate::launcher::spawn(cmd)
            .await
            .map_err(|e| format!("cannot start {}: {e}", helper.display()))?;
        drop(ready_w);
        drop(exit_r);
        if let Err(why) = read_byte(ready_r, deadline).await {
            let _ = child.start_kill();
            let err = match child.stderr.take().and_then(|e| e.into_owned_fd().ok()) {
                Some(fd) => read_some(&fd).await,
                None => String::new(),
            };
            return Err(format!(
                "slirp4netns did not bring the network up ({why}): {}",
                err.lines().last().unwrap_or("it said nothing").trim()
            ));
        }
        rustix::io::write(&block_w, b"1").map_err(|e| format!("cannot start the sandbox: {e}"))?;
        drop(block_w);
        Ok(PrivateNetwork {
            _helper: child,
            _exit: exit_w,
        })
    }
}

/// How long bwrap and slirp4netns get to set up the network (it takes
/// about 10-20 ms on an idle machine).
const SETUP_LIMIT: Duration = Duration::from_secs(10);

/// How often the wait for the sandbox to block on its pipe looks (the
/// kernel has no event for it); a timer of the runtime's, not a sleep.
const POLL: Duration = Duration::from_millis(2);

/// What a dead helper left on its stderr (up to 4 KiB, without waiting
/// for more than a moment).
async fn read_some(fd: &OwnedFd) -> String {
    let mut buf = [0u8; 4096];
    let _ = nonblocking(fd);
    tokio::time::sleep(Duration::from_millis(50)).await;
    match rustix::io::read(fd, &mut buf) {
        Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        Err(_) => String::new(),
    }
}

fn nonblocking(fd: &OwnedFd) -> Result<(), String> {
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| e.to_string())?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK).map_err(|e| e.to_string())
}

/// A pipe's read end, read when the runtime's reactor says it can be.
struct AsyncPipe(tokio::net::unix::pipe::Receiver);

/// Why [`AsyncPipe::read`] got nothing.
enum ReadFailed {
    TimedOut,
    Io(std::io::Error),
}

impl AsyncPipe {
    fn new(fd: OwnedFd) -> Result<AsyncPipe, String> {
        tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
            .map(AsyncPipe)
            .map_err(|e| format!("cannot watch a pipe: {e}"))
    }

    /// What is there to read (0: the other end is closed), waiting for it
    /// until `deadline`.
    async fn read(
        &mut self,
        buf: &mut [u8],
        deadline: tokio::time::Instant,
    ) -> Result<usize, ReadFailed> {
        use tokio::io::AsyncReadExt;
        tokio::time::timeout_at(deadline, self.0.read(buf))
            .await
            .map_err(|_| ReadFailed::TimedOut)?
            .map_err(ReadFailed::Io)
    }
}

/// bwrap's `{"child-pid": N}` on the info pipe.
async fn read_child_pid(fd: OwnedFd, deadline: tokio::time::Instant) -> Result<u32, String> {
    let mut pipe = AsyncPipe::new(fd)?;
    let mut text = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match pipe.read(&mut buf, deadline).await {
            Ok(0) => {
                return Err("the sandbox ended before it started (bwrap said nothing)".to_owned())
            }
            Ok(n) => {
                text.extend_from_slice(&buf[..n]);
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) {
                    return v
                        .get("child-pid")
                        .and_then(serde_json::Value::as_u64)
                        .and_then(|p| u32::try_from(p).ok())
                        .ok_or_else(|| format!("bwrap's info has no child pid: {v}"));
                }
            }
            Err(ReadFailed::TimedOut) => {
                return Err("bwrap did not say its sandbox's pid within 10 s".to_owned())
            }
            Err(ReadFailed::Io(e)) => return Err(format!("reading bwrap's info: {e}")),
        }
    }
}

/// Until `pid` waits on a pipe (the block fd). A kernel that hides wait
/// channels (`/proc/PID/wchan` always "0") cannot say: then a pause long
/// enough for bwrap's own set-up (a few ms) stands in.
async fn wait_blocked(pid: u32, deadline: tokio::time::Instant) -> Result<(), String> {
    let wchan = format!("/proc/{pid}/wchan");
    let start = tokio::time::Instant::now();
    loop {
        match std::fs::read_to_string(&wchan) {
            Ok(w) if w.contains("pipe") => return Ok(()),
            Ok(w) if w.trim() == "0" && start.elapsed() > Duration::from_millis(200) => {
                return Ok(())
            }
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "the sandbox ended while its network was set up: {e}"
                ))
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err("the sandbox did not get ready within 10 s".to_owned());
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn read_byte(fd: OwnedFd, deadline: tokio::time::Instant) -> Result<(), String> {
    let mut pipe = AsyncPipe::new(fd)?;
    let mut buf = [0u8; 1];
    match pipe.read(&mut buf, deadline).await {
        Ok(0) => Err("it exited".to_owned()),
        Ok(_) => Ok(()),
        Err(ReadFailed::TimedOut) => Err("not ready within 10 s".to_owned()),
        Err(ReadFailed::Io(e)) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_settings_old_and_new() {
        #[derive(Deserialize)]
        struct P {
            network: NetworkMode,
        }
        let read = |t: &str| toml::from_str::<P>(t).map(|p| p.network);
        assert_eq!(read("network = true").ok(), Some(NetworkMode::Private));
        assert_eq!(read("network = false").ok(), Some(NetworkMode::None));
        assert_eq!(read("network = \"host\"").ok(), Some(NetworkMode::Host));
        assert_eq!(
            read("network = \"private\"").ok(),
            Some(NetworkMode::Private)
        );
        let err = read("network = \"lan\"")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("\"private\" (the default"), "{err}");
    }
}

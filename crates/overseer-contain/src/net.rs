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
    status(find_slirp())
}

/// Whether the slirp4netns at `path` gives private networks.
pub fn probe_at(path: &Path) -> NetStatus {
    status(Some(path.to_owned()))
}

fn status(found: Option<PathBuf>) -> NetStatus {
    match found {
        Some(p) if super::is_executable(&p) => NetStatus::Available {
            helper: p.to_string_lossy().into_owned(),
        },
        Some(p) => NetStatus::Missing {
            why: format!(
                "{} is not an executable file (slirp4netns is not installed there)",
                p.display()
            ),
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

const LEAVES_OPEN: &str = "runs whose profile wants a private network (the default) are not \
     started; a profile may share this machine's network instead (network = \"host\"), its \
     loopback services and Overseer's web endpoint then in reach";

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
        // This machine's own addresses are out of reach too (a web endpoint
        // served on one, a database listening on all of them): routes
        // to them that fail, in the run's namespace, before anything of the
        // run's runs there. Nothing in the sandbox may change its routes.
        let own = own_addresses();
        if let Err(why) = unreachable_routes(pid, &own, helper).await {
            let _ = child.start_kill();
            return Err(format!(
                "cannot keep this machine's own addresses out of the run's network: {why}"
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

/// This machine's own IPv4 addresses but loopback (those of every
/// interface of the engine's network namespace: the kernel's local routes,
/// `/proc/net/fib_trie`). slirp4netns forwards a run's connection to any of
/// them from this machine, so a service listening there (a web endpoint on
/// `0.0.0.0` or on the LAN address) would be in reach. A run's network has
/// no IPv6 (slirp4netns is not given `--enable-ipv6`).
pub fn own_addresses() -> Vec<std::net::Ipv4Addr> {
    let text = std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default();
    own_addresses_in(&text)
}

fn own_addresses_in(fib_trie: &str) -> Vec<std::net::Ipv4Addr> {
    let mut out: Vec<std::net::Ipv4Addr> = Vec::new();
    let mut last: Option<std::net::Ipv4Addr> = None;
    for line in fib_trie.lines() {
        let line = line.trim();
        if let Some(addr) = line.strip_prefix("|-- ") {
            last = addr.trim().parse().ok();
        } else if line.starts_with('/') {
            if let Some(a) = last.filter(|a| !a.is_loopback()) {
                if line.starts_with("/32 host LOCAL") && !out.contains(&a) {
                    out.push(a);
                }
            }
        } else {
            last = None;
        }
    }
    out
}

/// One `RTM_NEWROUTE` request: `addr`/32 unreachable, in the main table.
fn unreachable_route(addr: std::net::Ipv4Addr, seq: u32) -> [u8; 36] {
    const RTM_NEWROUTE: u16 = 24;
    const NLM_F_REQUEST: u16 = 0x1;
    const NLM_F_ACK: u16 = 0x4;
    const NLM_F_EXCL: u16 = 0x200;
    const NLM_F_CREATE: u16 = 0x400;
    const AF_INET: u8 = 2;
    const RT_TABLE_MAIN: u8 = 254;
    const RTPROT_STATIC: u8 = 4;
    const RT_SCOPE_UNIVERSE: u8 = 0;
    const RTN_UNREACHABLE: u8 = 7;
    const RTA_DST: u16 = 1;
    let mut m = [0u8; 36];
    m[0..4].copy_from_slice(&36u32.to_ne_bytes());
    m[4..6].copy_from_slice(&RTM_NEWROUTE.to_ne_bytes());
    m[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE).to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope,
    // type, flags (u32, 0).
    m[16..24].copy_from_slice(&[
        AF_INET,
        32,
        0,
        0,
        RT_TABLE_MAIN,
        RTPROT_STATIC,
        RT_SCOPE_UNIVERSE,
        RTN_UNREACHABLE,
    ]);
    // RTA_DST: the address.
    m[28..30].copy_from_slice(&8u16.to_ne_bytes());
    m[30..32].copy_from_slice(&RTA_DST.to_ne_bytes());
    m[32..36].copy_from_slice(&addr.octets());
    m
}

/// Adds an unreachable route for each of `addrs` in the network namespace
/// of the sandbox `pid` (entered with its user namespace, which this user
/// made and so commands), from a child process that then execs `true`
/// (or `slirp4netns --version`). A connect from the
/// run to one of them fails at once (`EHOSTUNREACH`), UDP too. The sandbox's
/// processes have no capabilities over their namespace (bwrap drops them),
/// so they cannot remove the routes.
async fn unreachable_routes(
    pid: u32,
    addrs: &[std::net::Ipv4Addr],
    helper: &Path,
) -> Result<(), String> {
    if addrs.is_empty() {
        return Ok(());
    }
    let open_ns = |kind: &str| {
        let path = format!("/proc/{pid}/ns/{kind}");
        rustix::fs::open(
            path.as_str(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| format!("cannot open {path}: {e}"))
    };
    let user = open_ns("user")?;
    let net = open_ns("net")?;
    let requests: Vec<[u8; 36]> = addrs
        .iter()
        .zip(1u32..)
        .map(|(a, seq)| unreachable_route(*a, seq))
        .collect();
    // What the child execs once the routes are in: `true`, else the
    // helper's `--version`.
    let (program, arg) = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .map(Path::new)
        .find(|p| super::is_executable(p))
        .map_or((helper, Some("--version")), |t| (t, None));
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(arg)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    add_routes_before_exec(&mut cmd, user, net, requests);
    let status = tokio::time::timeout(SETUP_LIMIT, cmd.status())
        .await
        .map_err(|_| "the routes were not added within 10 s".to_owned())?
        .map_err(|e| format!("the routes were refused: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the child that added them ended with {status}"))
    }
}

/// Between fork and exec: enter the sandbox's user and network namespaces
/// and send each prepared `RTM_NEWROUTE`, reading the kernel's answer to
/// each. A refusal fails the spawn with the kernel's error.
#[allow(unsafe_code)]
fn add_routes_before_exec(
    cmd: &mut tokio::process::Command,
    user: OwnedFd,
    net: OwnedFd,
    requests: Vec<[u8; 36]>,
) {
    use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
    use std::os::fd::AsFd;
    // SAFETY: the closure runs in the forked child, which has one thread,
    // before exec; it makes only system calls (setns, socket, write, read) on
    // descriptors and buffers made in the parent, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            move_into_link_name_space(user.as_fd(), Some(LinkNameSpaceType::User))?;
            move_into_link_name_space(net.as_fd(), Some(LinkNameSpaceType::Network))?;
            let sock = rustix::net::socket(
                rustix::net::AddressFamily::NETLINK,
                rustix::net::SocketType::RAW,
                None,
            )?;
            let mut answer = [0u8; 512];
            for request in &requests {
                rustix::io::write(&sock, request)?;
                let n = rustix::io::read(&sock, &mut answer)?;
                // NLMSG_ERROR (2) with its error code (0: done) after the
                // 16-byte header.
                if n < 20 || u16::from_ne_bytes([answer[4], answer[5]]) != 2 {
                    return Err(std::io::Error::from_raw_os_error(
                        rustix::io::Errno::PROTO.raw_os_error(),
                    ));
                }
                let code = i32::from_ne_bytes([answer[16], answer[17], answer[18], answer[19]]);
                if code != 0 {
                    return Err(std::io::Error::from_raw_os_error(-code));
                }
            }
            Ok(())
        });
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
    fn this_machines_own_addresses_are_read_from_its_local_routes() {
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n\
                    \x20          |-- 127.0.0.1\n              /32 host LOCAL\n\
                    \x20          |-- 192.0.2.0\n              /24 link UNICAST\n\
                    \x20          |-- 192.0.2.2\n              /32 host LOCAL\n\
                    \x20       |-- 192.0.2.255\n           /32 link BROADCAST\n\
                    Local:\n           |-- 192.0.2.2\n              /32 host LOCAL\n\
                    \x20          |-- 172.17.0.1\n              /32 host LOCAL\n";
        assert_eq!(
            own_addresses_in(trie),
            vec![
                std::net::Ipv4Addr::new(192, 0, 2, 2),
                std::net::Ipv4Addr::new(172, 17, 0, 1)
            ]
        );
        let m = unreachable_route(std::net::Ipv4Addr::new(192, 0, 2, 2), 7);
        assert_eq!(&m[32..36], &[192, 0, 2, 2]);
        assert_eq!(m[23], 7, "RTN_UNREACHABLE");
    }

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

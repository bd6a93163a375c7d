//! A test host reached only over real OpenSSH: an `sshd -D` in a network
//! namespace of its own (a veth pair with a /30 of its own, so tests can run
//! in parallel), running for a throwaway Unix user with its own HOME, a fresh
//! host key, and the test's client key in that user's `authorized_keys`.
//!
//! The client side is an ssh config file (pinned host key, the client key,
//! no agent, `BatchMode yes`, `StrictHostKeyChecking yes`) for the system
//! `ssh`/`scp` with `-F`. The client's files live in a root-only directory
//! and the host user's HOME is its own (0700): nothing passes between them
//! except what ssh carries.
//!
//! Only the network is the host's own (sshd enters the namespace with
//! `nsenter --net`): the mounts, cgroups included, are the machine's.
//!
//! Needs root (`ip netns`, `useradd`) and `openssh-server` (`make setup`).
//! Everything is removed on drop, a panicking test included: the user's
//! processes (killed by pid), sshd, the namespace and its veth pair, the user
//! and its HOME, the client's files. Leftovers of a test process that was
//! killed outright are removed by the next [`TestHost::start`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

/// Names of everything a test host creates start with this (users,
/// namespaces, links, directories).
const PREFIX: &str = "ovh";
/// The /16 the hosts' /30s are taken from.
const NET: &str = "10.213";

pub struct TestHost {
    /// The host's Unix user (also the name of its namespace).
    pub user: String,
    /// That user's HOME.
    pub home: PathBuf,
    /// The host's address inside its namespace.
    pub addr: String,
    /// The test's end of the link (the host reaches this machine there: a
    /// server the host should reach listens on it).
    pub client_addr: String,
    /// The test's side: ssh config, client key, known_hosts (root only).
    client_dir: PathBuf,
    /// sshd's config, host key and log (root only).
    sshd_dir: PathBuf,
    veth: String,
    sshd: Option<Child>,
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn sh(program: &str, args: &[&str]) -> Output {
    run(Command::new(program).args(args))
}

/// `useradd args`, retried for a few seconds while /etc/passwd is locked
/// by someone else.
fn useradd(args: &[&str]) {
    let started = Instant::now();
    loop {
        let out = Command::new("useradd")
            .args(args)
            .output()
            .expect("run useradd");
        if out.status.success() {
            return;
        }
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            err.contains("lock") && started.elapsed() < Duration::from_secs(20),
            "useradd {args:?} failed: {err}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pids of every process whose real uid is `uid`.
fn pids_of_uid(uid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| {
                    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
                    line.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(uid)
        })
        .collect()
}

fn uid_of(user: &str) -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == user).then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

/// Kills (SIGKILL, by pid) every process of `user`, then removes the user,
/// its HOME and its namespace (the veth pair goes with the namespace).
fn remove_user_and_netns(user: &str) {
    if let Some(uid) = uid_of(user) {
        for _ in 0..50 {
            let pids = pids_of_uid(uid);
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("userdel")
            .args(["-r", "-f", user])
            .stderr(Stdio::null())
            .status();
    }
    let _ = std::fs::remove_dir_all(Path::new("/home").join(user));
    let _ = Command::new("ip")
        .args(["netns", "del", user])
        .stderr(Stdio::null())
        .status();
}

/// Whether this process runs as root (its effective uid).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let uid = s.lines().find(|l| l.starts_with("Uid:"))?;
            Some(uid.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The creating process's pid in a name `ovh<pid>x<n>`.
fn creator(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('x').next()?.parse().ok()
}

/// Removes what test processes that no longer run left behind.
fn sweep_leftovers() {
    let mut names: Vec<String> = Vec::new();
    if let Ok(passwd) = std::fs::read_to_string("/etc/passwd") {
        names.extend(
            passwd
                .lines()
                .filter_map(|l| l.split(':').next().map(str::to_owned)),
        );
    }
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        names.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_owned)),
        );
    }
    for name in names {
        if creator(&name).is_some_and(|pid| !alive(pid)) {
            remove_user_and_netns(&name);
            let _ = std::fs::remove_dir_all(std::env::temp_dir().join(&name));
        }
    }
}

/// A free /30 of [`NET`]: its first address (the test's side) and second (the host's).
fn free_subnet(seed: u32) -> (String, String) {
    let used =
        String::from_utf8_lossy(&sh("ip", &["-o", "-4", "addr", "show"]).stdout).into_owned();
    for i in 0..16384u32 {
        let idx = (seed.wrapping_mul(7919).wrapping_add(i)) % 16384;
        let (third, fourth) = (idx / 64, (idx % 64) * 4);
        let ours = format!("{NET}.{third}.{}", fourth + 1);
        let theirs = format!("{NET}.{third}.{}", fourth + 2);
        if !used.contains(&format!("{ours}/")) && !used.contains(&format!("{theirs}/")) {
            return (ours, theirs);
        }
    }
    panic!("no free /30 left in {NET}.0.0/16");
}

impl TestHost {
    /// Creates the user, the namespace and its link, the keys, and starts
    /// sshd; returns once sshd accepts connections.
    pub fn start() -> TestHost {
        TestHost::start_hiding(&[])
    }

    /// [`TestHost::start`] on a host whose sessions' PATH lacks `programs`
    /// (a directory of links to every other program of /usr/bin): a machine
    /// where they are not installed.
    pub fn start_hiding(programs: &[&str]) -> TestHost {
        assert!(
            is_root(),
            "an ssh test host needs root (ip netns, useradd, sshd): run the tests as root, as CI does"
        );
        static SWEEP: Once = Once::new();
        static N: AtomicU32 = AtomicU32::new(0);
        SWEEP.call_once(sweep_leftovers);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let user = format!("{PREFIX}{pid}x{n}");
        let (ours, theirs) = free_subnet(pid.wrapping_add(n));
        // Fields filled as they are made: a failure below drops what exists.
        let mut host = TestHost {
            home: Path::new("/home").join(&user),
            addr: theirs.clone(),
            client_addr: ours.clone(),
            client_dir: std::env::temp_dir().join(&user).join("client"),
            sshd_dir: std::env::temp_dir().join(&user).join("sshd"),
            veth: format!("vh{pid}x{n}"),
            user,
            sshd: None,
        };
        let user = host.user.clone();
        let base = std::env::temp_dir().join(&user);
        std::fs::create_dir_all(&host.client_dir).expect("create the client's directory");
        std::fs::create_dir_all(&host.sshd_dir).expect("create sshd's directory");
        sh("chmod", &["-R", "700", &base.to_string_lossy()]);

        // The user and its HOME (its own, 0700; a password no one can type
        // that sshd does not count as a locked account).
        // Retried: useradd fails while another process holds /etc/passwd's lock.
        useradd(&[
            "-m",
            "-d",
            &host.home.to_string_lossy(),
            "-s",
            "/bin/sh",
            "-p",
            "*",
            &user,
        ]);
        sh("chmod", &["700", &host.home.to_string_lossy()]);

        // The namespace and its link.
        let peer = format!("vp{pid}x{n}");
        sh("ip", &["netns", "add", &user]);
        sh(
            "ip",
            &[
                "link", "add", &host.veth, "type", "veth", "peer", "name", &peer,
            ],
        );
        sh("ip", &["link", "set", &peer, "netns", &user]);
        sh(
            "ip",
            &["addr", "add", &format!("{ours}/30"), "dev", &host.veth],
        );
        sh("ip", &["link", "set", &host.veth, "up"]);
        let in_ns = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &user];
            all.extend_from_slice(args);
            sh("ip", &all);
        };
        in_ns(&["ip", "addr", "add", &format!("{theirs}/30"), "dev", &peer]);
        in_ns(&["ip", "link", "set", &peer, "up"]);
        in_ns(&["ip", "link", "set", "lo", "up"]);

        // Keys: the host's, and the client's in the user's authorized_keys.
        let host_key = host.sshd_dir.join("host_ed25519");
        let client_key = host.client_dir.join("id_ed25519");
        for (key, comment) in [(&host_key, "test-host"), (&client_key, "test-client")] {
            sh(
                "ssh-keygen",
                &[
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    comment,
                    "-f",
                    &key.to_string_lossy(),
                ],
            );
        }
        let pub_of = |key: &Path| {
            std::fs::read_to_string(key.with_extension("pub")).expect("read a public key")
        };
        let ssh_dir = host.home.join(".ssh");
        std::fs::create_dir_all(&ssh_dir).expect("create ~/.ssh");
        std::fs::write(ssh_dir.join("authorized_keys"), pub_of(&client_key))
            .expect("write authorized_keys");
        sh("chmod", &["700", &ssh_dir.to_string_lossy()]);
        sh(
            "chmod",
            &["600", &ssh_dir.join("authorized_keys").to_string_lossy()],
        );
        sh(
            "chown",
            &["-R", &format!("{user}:{user}"), &ssh_dir.to_string_lossy()],
        );
        std::fs::write(
            host.client_dir.join("known_hosts"),
            format!("{theirs} {}", pub_of(&host_key)),
        )
        .expect("write known_hosts");
        std::fs::write(
            host.ssh_config(),
            format!(
                "Host *\n  IdentityFile {}\n  IdentitiesOnly yes\n  IdentityAgent none\n  \
                 UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  \
                 StrictHostKeyChecking yes\n  BatchMode yes\n  ControlMaster no\n  \
                 ConnectTimeout 5\n  LogLevel ERROR\n",
                client_key.display(),
                host.client_dir.join("known_hosts").display()
            ),
        )
        .expect("write the ssh config");

        let mut set_env = String::new();
        if !programs.is_empty() {
            let bin = host.home.join(".hidden-bin");
            std::fs::create_dir_all(&bin).expect("create the restricted PATH");
            for entry in std::fs::read_dir("/usr/bin")
                .expect("read /usr/bin")
                .flatten()
            {
                let name = entry.file_name();
                if !programs.iter().any(|p| name == *p) {
                    let _ = std::os::unix::fs::symlink(entry.path(), bin.join(&name));
                }
            }
            set_env = format!("SetEnv PATH={}\n", bin.display());
        }

        // sshd, in the namespace, for this user only.
        std::fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        let config = host.sshd_dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port 22\nListenAddress {theirs}\nHostKey {}\nPidFile none\n\
                 AllowUsers {user}\nPermitRootLogin no\nUsePAM no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PubkeyAuthentication yes\nAuthorizedKeysFile .ssh/authorized_keys\n\
                 StrictModes yes\nX11Forwarding no\nAllowTcpForwarding no\n\
                 AllowAgentForwarding no\nPrintMotd no\nSubsystem sftp internal-sftp\n\
                 LogLevel VERBOSE\n{set_env}",
                host_key.display()
            ),
        )
        .expect("write sshd_config");
        // nsenter, not `ip netns exec`: only the network is the host's own;
        // `ip netns exec` would also remount /sys and hide the cgroup mounts.
        let sshd = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{user}"))
            .args(["/usr/sbin/sshd", "-D", "-f"])
            .arg(&config)
            .arg("-E")
            .arg(host.sshd_dir.join("sshd.log"))
            .stdin(Stdio::null())
            .spawn()
            .expect("start sshd (is openssh-server installed? `make setup`)");
        host.sshd = Some(sshd);
        let start = Instant::now();
        let target: std::net::SocketAddr = format!("{theirs}:22").parse().expect("an address");
        while std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_err() {
            if let Some(Ok(Some(status))) = host.sshd.as_mut().map(Child::try_wait) {
                panic!("sshd exited ({status}): {}", host.sshd_log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sshd never listened on {target}: {}",
                host.sshd_log()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        host
    }

    /// The client's ssh config: `ssh -F` this.
    pub fn ssh_config(&self) -> PathBuf {
        self.client_dir.join("ssh_config")
    }

    /// `ssh://user@addr:22`.
    pub fn url(&self) -> String {
        format!("ssh://{}@{}:22", self.user, self.addr)
    }

    /// Cuts the host's link (its veth pair down): connections to it time
    /// out, as to a machine gone from the network.
    pub fn cut(&self) {
        sh("ip", &["link", "set", &self.veth, "down"]);
    }

    /// Brings the link [`TestHost::cut`] took down back up.
    pub fn restore(&self) {
        sh("ip", &["link", "set", &self.veth, "up"]);
    }

    /// A second way to the host's sshd that holds every byte going to the
    /// host `delay` before passing it on (one way; answers come back at
    /// once): a relay on the test's end of the link, what `tc qdisc add dev
    /// <veth> root netem delay` on that end does, for kernels without netem.
    /// Its host key is pinned in the client's known_hosts; `ssh://` it with
    /// [`DelayedLink::url`]. It takes no new connection once dropped.
    pub fn delayed_link(&self, delay: Duration) -> DelayedLink {
        let listener = std::net::TcpListener::bind((self.client_addr.as_str(), 0))
            .expect("bind the delaying relay");
        let port = listener.local_addr().expect("the relay's address").port();
        let host_key =
            std::fs::read_to_string(self.sshd_dir.join("host_ed25519.pub")).expect("host key");
        let known = self.client_dir.join("known_hosts");
        let mut lines = std::fs::read_to_string(&known).unwrap_or_default();
        lines.push_str(&format!("[{}]:{port} {host_key}", self.client_addr));
        std::fs::write(&known, lines).expect("pin the host key for the relay");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let upstream: std::net::SocketAddr =
            format!("{}:22", self.addr).parse().expect("an address");
        {
            let stop = stop.clone();
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = std::net::TcpStream::connect(upstream) else {
                        continue;
                    };
                    relay(client, server, delay);
                }
            });
        }
        DelayedLink {
            user: self.user.clone(),
            addr: self.client_addr.clone(),
            port,
            stop,
        }
    }

    /// What sshd logged so far.
    pub fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.sshd_dir.join("sshd.log")).unwrap_or_default()
    }

    /// `ssh -F config user@addr -- command` (run by the host user's shell).
    pub fn ssh(&self, command: &str) -> Output {
        Command::new("ssh")
            .arg("-F")
            .arg(self.ssh_config())
            .arg(format!("{}@{}", self.user, self.addr))
            .arg("--")
            .arg(command)
            .stdin(Stdio::null())
            .output()
            .expect("run ssh")
    }

    /// [`TestHost::ssh`] that must succeed; its trimmed stdout.
    pub fn ssh_ok(&self, command: &str) -> String {
        let out = self.ssh(command);
        assert!(
            out.status.success(),
            "ssh {command:?} failed: {}\nsshd log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.sshd_log()
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Copies a local file to `remote` (relative to the host user's HOME)
    /// with `scp -F config`.
    pub fn copy_to(&self, local: &Path, remote: &str) {
        let out = Command::new("scp")
            .arg("-F")
            .arg(self.ssh_config())
            .arg("-q")
            .arg(local)
            .arg(format!("{}@{}:{remote}", self.user, self.addr))
            .stdin(Stdio::null())
            .output()
            .expect("run scp");
        assert!(
            out.status.success(),
            "scp {} to {remote}: {}",
            local.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The pids of the host user's processes (sshd's session processes included).
    pub fn processes(&self) -> Vec<u32> {
        uid_of(&self.user).map(pids_of_uid).unwrap_or_default()
    }

    /// The command lines of the host user's processes.
    pub fn command_lines(&self) -> Vec<String> {
        self.processes()
            .into_iter()
            .filter_map(|pid| {
                let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                Some(
                    raw.split(|b| *b == 0)
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect::<Vec<_>>()
                        .join(" ")
                        .trim()
                        .to_owned(),
                )
            })
            .collect()
    }
}

/// See [`TestHost::delayed_link`].
pub struct DelayedLink {
    user: String,
    addr: String,
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl DelayedLink {
    /// `ssh://user@relay:port`: the same host, every byte to it delayed.
    pub fn url(&self) -> String {
        format!("ssh://{}@{}:{}", self.user, self.addr, self.port)
    }
}

impl Drop for DelayedLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then ends.
        let _ = std::net::TcpStream::connect((self.addr.as_str(), self.port));
    }
}

/// Joins `client` to `server`: bytes to the server leave `delay` after
/// they arrived (in order), bytes back pass at once.
fn relay(client: std::net::TcpStream, server: std::net::TcpStream, delay: Duration) {
    use std::io::{Read, Write};
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(mut client_in), Ok(mut server_out), Ok(mut server_in), Ok(mut client_out)) = (
        client.try_clone(),
        server.try_clone(),
        server.try_clone(),
        client.try_clone(),
    ) else {
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = client_in.read(&mut buf) {
            if n == 0
                || tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
            {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        for (due, bytes) in rx {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if server_out.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = server_out.shutdown(std::net::Shutdown::Write);
    });
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut server_in, &mut client_out);
        let _ = client_out.shutdown(std::net::Shutdown::Both);
        let _ = client.shutdown(std::net::Shutdown::Both);
    });
}

impl Drop for TestHost {
    fn drop(&mut self) {
        if let Some(mut sshd) = self.sshd.take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        remove_user_and_netns(&self.user);
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(&self.user));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_answers_over_ssh_as_its_own_user_and_is_gone_after_drop() {
        let host = TestHost::start();
        let user = host.user.clone();
        assert_eq!(host.ssh_ok("id -un"), user);
        assert_eq!(host.ssh_ok("echo $HOME"), host.home.display().to_string());
        // Its own network: only lo and its end of the veth pair (after
        // /proc/net/dev's two header lines).
        let links = host.ssh_ok("cat /proc/net/dev");
        assert_eq!(links.lines().count(), 4, "links in the namespace: {links}");
        // The machine's mounts, cgroups included, are the host's.
        assert!(host
            .ssh_ok("cat /proc/self/mountinfo")
            .contains(" - cgroup2 "));
        // The test's files are not readable from the host.
        let out = host.ssh(&format!("cat {}", host.ssh_config().display()));
        assert!(!out.status.success(), "the host read the client's config");
        // A second host in parallel gets its own addresses.
        let other = TestHost::start();
        assert_ne!(other.addr, host.addr);
        assert_eq!(other.ssh_ok("id -un"), other.user);
        drop(other);
        drop(host);
        assert!(uid_of(&user).is_none(), "user {user} left behind");
        let ns = String::from_utf8_lossy(&sh("ip", &["netns", "list"]).stdout).into_owned();
        assert!(!ns.contains(&user), "namespace {user} left behind: {ns}");
        assert!(!Path::new("/home").join(&user).exists());
    }
}

//! Containment, tried from inside: real bubblewrap sandboxes, real cgroups,
//! real processes, a real engine and socket (no mocks).
//!
//! - a shell inside an agent's sandbox tries what a hostile agent would
//!   (the data and config dirs, the socket, the engine through /proc, the
//!   user's dotfiles and checkout, the run's own hooks and git config) and
//!   reaches only its working copy, its own home and the network;
//! - a marker-stripped setsid double fork escapes the marker sweep but not
//!   the run's cgroup: it dies on abort and on recovery after a crash;
//! - a sensor runs contained with a cleared environment, and what it leaves
//!   running is stopped;
//! - a process inside a run that connects to the engine's socket anyway
//!   (here without the sandbox, to prove the second fence) is refused,
//!   recorded and notified;
//! - the accept loop backs off when descriptors run out and caps connections.
//!
//! Helper processes are this test binary run again (`helper_*` below, inert
//! unless their environment variable is set).

use crate::common;

use common::*;
use overseer_contain::net::NetworkMode;
use overseer_contain::process::{self, AgentSpec};
use overseer_contain::{self as contain, bwrap, RunCgroup, SandboxInputs};
use overseer_core::{Actor, GateKind};
use overseer_engine::SystemClock;
use overseer_engine::{Engine, LogNotifier, NotificationKind, Paths};
use overseer_server::server;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HELPER: &str = "OVERSEER_CONTAIN_HELPER";
const SOCKET: &str = "OVERSEER_CONTAIN_SOCKET";

/// A temp dir NOT under /tmp (the sandbox hides /tmp as a whole, which
/// would make every check below pass for the wrong reason).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("contain-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("tempdir under the target dir")
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next()),
            Some("Z" | "X")
        )
    })
}

async fn wait_dead(pid: u32) -> bool {
    let start = Instant::now();
    while alive(pid) && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

async fn read_pid(file: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(p) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} was never written",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A marker of its own: stopping one spawned tree signals every process
/// that carries its marker, so tests running side by side must not share one.
fn unique_marker() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "overseer-contain-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

fn bash_spec(cwd: &Path, script: &str, env: Vec<(String, String)>) -> AgentSpec {
    AgentSpec {
        program: "bash".into(),
        args: vec!["-c".into(), script.into()],
        env,
        cwd: cwd.to_owned(),
        marker: unique_marker(),
        sandbox: None,
        cgroup: None,
    }
}

/// A cgroup root of this test's own (as an engine's would be).
fn test_cgroup_root(name: &str) -> PathBuf {
    let base = contain::probe()
        .cgroup_base()
        .expect("cgroup v2 is writable on the machines these tests run on");
    base.join(format!("overseer-test-{}-{name}", std::process::id()))
}

const PROBES: &str = r#"
r() { if eval "$2" >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }
r read_db 'cat "$DATA/overseer.db"'
r data_files 'ls -A "$DATA" | grep -qv "^worktrees$"'
r socket 'test -e "$DATA/overseer.sock"'
r read_key 'cat "$CONFIG/key.pem"'
r config_files 'ls -A "$CONFIG" | grep -q .'
r engine_root 'ls "/proc/$ENGINE/root/"'
r engine_environ 'cat "/proc/$ENGINE/environ"'
r read_dotfile 'grep -q SECRET-DOTFILE "$HOSTHOME/.bashrc"'
r write_bashrc 'echo "echo pwned" >> "$HOSTHOME/.bashrc"'
r runtime 'test -e "$RUNTIME/bus"'
r read_repo 'cat "$REPO/README.md"'
r write_repo 'echo x > "$REPO/pwned"'
r write_hook 'echo x > "$WT/.git/hooks/post-checkout"'
r set_fsmonitor 'git -C "$WT" config core.fsmonitor "touch /tmp/x"'
r write_worktree 'echo ok > "$WT/made-inside"'
r git_log 'git -C "$WT" log --oneline -1'
r objects 'ls "$OBJECTS" | grep -q .'
r staged_blob 'git -C "$WT" cat-file -e "$STAGED"'
r stash_commit 'git -C "$WT" cat-file -e "$STASH"'
r stashed_blob 'git -C "$WT" cat-file -e "$STASHED"'
r branch_commit 'git -C "$WT" cat-file -e "$BRANCH"'
r branch_blob 'git -C "$WT" cat-file -e "$BRANCH_FILE"'
r alternates 'test -e "$WT/.git/objects/info/alternates"'
r repo_in_mountinfo 'grep -qF "$REPO" /proc/self/mountinfo'
r repo_in_git_dir 'grep -rqF "$REPO" "$WT/.git"'
r base_history 'test "$(git -C "$WT" rev-list --count HEAD)" = 2 && git -C "$WT" fsck --no-dangling'
r tmp 'echo x > /tmp/x && test -s /tmp/x'
r tcp 'timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"'
r tcp_gateway 'timeout 3 bash -c "exec 3<>/dev/tcp/10.0.2.2/$PORT"'
r tcp_out 'test -n "$OUT" && timeout 3 bash -c "exec 3<>/dev/tcp/$OUT/$OUTPORT"'
r route_change 'ip route del unreachable "$OUT/32"'
r tcp_out_after 'test -n "$OUT" && timeout 3 bash -c "exec 3<>/dev/tcp/$OUT/$OUTPORT"'
r dns_conf 'grep -q "^nameserver 10.0.2.3" /etc/resolv.conf'
r home_at_user_home 'test "$HOME" = "$HOSTHOME"'
r tmpdir 'test "$TMPDIR" = /tmp'
r abstract_socket 'python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1].replace(\"@\", \"\\0\", 1))" "$ABSTRACT"'
"#;

struct Layout {
    _dir: tempfile::TempDir,
    data: PathBuf,
    config: PathBuf,
    home: PathBuf,
    runtime: PathBuf,
    repo: PathBuf,
    worktree: PathBuf,
    agent_home: PathBuf,
    _socket: std::os::unix::net::UnixListener,
    /// An abstract socket of the desktop's kind (`@/tmp/.X11-unix/X<n>`),
    /// listening outside the run.
    abstract_name: String,
    _abstract: std::os::unix::net::UnixListener,
    /// A TCP listener on this machine's first non-loopback address (what a
    /// server elsewhere on the network looks like from a run), if it has one.
    outside: Option<std::net::SocketAddr>,
    _outside: Option<std::net::TcpListener>,
    /// Objects of the user's repository that the run's base does not reach.
    secrets: UserSecrets,
}

/// What a user's repository holds beside the history a run starts from.
struct UserSecrets {
    /// A file staged but not committed (its blob is only in the index).
    staged: String,
    /// The stash commit, and the blob of the file it stashed.
    stash: String,
    stashed: String,
    /// A branch the run was not given, and its file's blob.
    branch: String,
    branch_file: String,
}

/// Leaves in `repo` a stash, a branch other than `main` and a staged file,
/// each with content no commit of `main` has.
fn user_secrets(repo: &Path) -> UserSecrets {
    git(repo, &["checkout", "-q", "-b", "secret-branch"]);
    std::fs::write(repo.join("plan.txt"), "SECRET-BRANCH-PLAN\n").expect("write");
    git(repo, &["add", "plan.txt"]);
    git(repo, &["commit", "-q", "-m", "secret plan"]);
    let branch = git(repo, &["rev-parse", "HEAD"]);
    let branch_file = git(repo, &["rev-parse", "HEAD:plan.txt"]);
    git(repo, &["checkout", "-q", "main"]);
    std::fs::write(repo.join("README.md"), "SECRET-STASHED-EDIT\n").expect("write");
    git(repo, &["stash", "-q"]);
    let stash = git(repo, &["rev-parse", "refs/stash"]);
    let stashed = git(repo, &["rev-parse", "refs/stash:README.md"]);
    std::fs::write(repo.join("credentials.env"), "SECRET-STAGED-TOKEN\n").expect("write");
    git(repo, &["add", "credentials.env"]);
    let staged = git(repo, &["rev-parse", ":credentials.env"]);
    UserSecrets {
        staged,
        stash,
        stashed,
        branch,
        branch_file,
    }
}

/// This machine's address towards its default route (no packet is sent).
fn non_loopback_ip() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.77:9")
        .or_else(|_| s.connect("10.255.255.1:9"))
        .ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn layout() -> Layout {
    layout_with_repo(None)
}

/// The layout, with the user's repository at `repo` (else under their
/// HOME, where checkouts live).
fn layout_with_repo(repo: Option<PathBuf>) -> Layout {
    let dir = scratch();
    let root = dir.path().canonicalize().expect("canon");
    let (data, config, home, runtime, repo) = (
        root.join("data"),
        root.join("config"),
        root.join("home"),
        root.join("runtime"),
        repo.unwrap_or_else(|| root.join("home/code/repo")),
    );
    for d in [&data, &config, &home, &runtime, &repo] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(data.join("overseer.db"), "database").expect("db");
    let socket = std::os::unix::net::UnixListener::bind(data.join("overseer.sock")).expect("sock");
    std::fs::write(config.join("key.pem"), "signing key").expect("key");
    std::fs::write(home.join(".bashrc"), "# SECRET-DOTFILE\n").expect("bashrc");
    std::fs::write(runtime.join("bus"), "").expect("bus");
    std::fs::write(repo.join("README.md"), "# user's checkout\n").expect("readme");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "second"]);
    let secrets = user_secrets(&repo);
    // The run's repository, made as the engine makes it.
    let worktree = data.join("worktrees/demo/run-1");
    overseer_git::create_run_repo(&repo, &worktree, "overseer/run-1", "main")
        .expect("the run's repository");
    let agent_home = data.join("agent-homes/demo");
    std::fs::create_dir_all(&agent_home).expect("agent home");
    let abstract_name = format!("/tmp/.X11-unix/X{}", 9000 + std::process::id() % 1000);
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
            .expect("abstract name");
        std::os::unix::net::UnixListener::bind_addr(&addr).expect("abstract socket")
    };
    let outside_listener =
        non_loopback_ip().and_then(|ip| std::net::TcpListener::bind((ip, 0)).ok());
    Layout {
        outside: outside_listener.as_ref().and_then(|l| l.local_addr().ok()),
        _outside: outside_listener,
        abstract_name,
        _abstract: abstract_listener,
        secrets,
        _dir: dir,
        data,
        config,
        home,
        runtime,
        repo,
        worktree,
        agent_home,
        _socket: socket,
    }
}

impl Layout {
    fn inputs(&self, network: NetworkMode) -> SandboxInputs {
        SandboxInputs {
            bwrap: contain::probe()
                .bwrap()
                .expect("bubblewrap works on the machines these tests run on")
                .to_owned(),
            data_dir: self.data.clone(),
            config_dir: self.config.clone(),
            runtime_dir: Some(self.runtime.clone()),
            host_home: Some(self.home.clone()),
            host_path: std::env::var("PATH").ok(),
            repo: Some(self.repo.clone()),
            worktree: self.worktree.clone(),
            private_home: Some(self.agent_home.clone()),
            program: process::resolve_program(
                Path::new("bash"),
                std::env::var("PATH").ok().as_deref(),
            ),
            network,
            resolv_conf: {
                let conf = self.data.join("net-resolv.conf");
                std::fs::write(&conf, "nameserver 10.0.2.3\n").expect("resolv.conf");
                Some(conf)
            },
            ..SandboxInputs::default()
        }
    }

    async fn probe(&self, network: NetworkMode, port: u16) -> HashMap<String, bool> {
        let plan = bwrap::plan(&self.inputs(network)).expect("plan");
        let objects = self.repo.join(".git/objects");
        let env: Vec<(String, String)> = [
            ("DATA", self.data.to_string_lossy().into_owned()),
            ("CONFIG", self.config.to_string_lossy().into_owned()),
            ("HOSTHOME", self.home.to_string_lossy().into_owned()),
            ("RUNTIME", self.runtime.to_string_lossy().into_owned()),
            ("REPO", self.repo.to_string_lossy().into_owned()),
            ("WT", self.worktree.to_string_lossy().into_owned()),
            ("OBJECTS", objects.to_string_lossy().into_owned()),
            ("ENGINE", std::process::id().to_string()),
            ("PORT", port.to_string()),
            (
                "OUT",
                self.outside.map(|a| a.ip().to_string()).unwrap_or_default(),
            ),
            (
                "OUTPORT",
                self.outside
                    .map(|a| a.port().to_string())
                    .unwrap_or_default(),
            ),
            ("ABSTRACT", format!("@{}", self.abstract_name)),
            ("STAGED", self.secrets.staged.clone()),
            ("STASH", self.secrets.stash.clone()),
            ("STASHED", self.secrets.stashed.clone()),
            ("BRANCH", self.secrets.branch.clone()),
            ("BRANCH_FILE", self.secrets.branch_file.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let mut spec = bash_spec(&self.worktree, PROBES, env);
        spec.sandbox = Some(plan);
        let out = process::run_captured(
            &spec,
            Duration::from_secs(30),
            Duration::from_secs(1),
            1 << 16,
        )
        .await
        .expect("the probes ran");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.is_some_and(|s| s.success()),
            "probes failed ({:?}, {:?}): {text}\n{}",
            out.status,
            out.leftovers,
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v == "yes"))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_the_sandbox_only_the_run_its_home_and_the_network_are_reachable() {
    let l = layout();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("tcp");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let seen = l.probe(NetworkMode::Private, port).await;
    let expect = [
        ("read_db", false),
        ("data_files", false),
        ("socket", false),
        ("read_key", false),
        ("config_files", false),
        ("engine_root", false),
        ("engine_environ", false),
        ("read_dotfile", false),
        // Writes to ~/.bashrc land in the agent's own home, not the user's.
        ("write_bashrc", true),
        ("runtime", false),
        ("read_repo", false),
        ("write_repo", false),
        ("write_hook", false),
        ("set_fsmonitor", false),
        ("write_worktree", true),
        ("git_log", true),
        // The run holds the history of its base commit and nothing else of
        // the user's repository: not the index, the stash, another branch,
        // the object directory nor any mention of where it is.
        ("base_history", true),
        ("objects", false),
        ("staged_blob", false),
        ("stash_commit", false),
        ("stashed_blob", false),
        ("branch_commit", false),
        ("branch_blob", false),
        ("alternates", false),
        ("repo_in_mountinfo", false),
        ("repo_in_git_dir", false),
        ("tmp", true),
        // A private network (the default): this machine's loopback services
        // are out of reach, directly and through slirp4netns's gateway...
        ("tcp", false),
        ("tcp_gateway", false),
        ("dns_conf", true),
        ("home_at_user_home", true),
        ("tmpdir", true),
        // The desktop's abstract sockets (X11, an abstract session D-Bus):
        // the network namespace is shared, Landlock's scope refuses them.
        ("abstract_socket", false),
    ];
    for (probe, want) in expect {
        assert_eq!(
            seen.get(probe).copied(),
            Some(want),
            "{probe}: expected {}; all: {seen:?}",
            if want { "reachable" } else { "refused" }
        );
    }
    // Judged from outside too.
    assert_eq!(
        std::fs::read_to_string(l.home.join(".bashrc")).expect("bashrc"),
        "# SECRET-DOTFILE\n",
        "the user's dotfile is untouched"
    );
    assert!(std::fs::read_to_string(l.agent_home.join(".bashrc"))
        .expect("the agent's own .bashrc")
        .contains("echo pwned"));
    assert!(!l.repo.join("pwned").exists());
    assert!(!l.worktree.join(".git/hooks/post-checkout").exists());
    assert!(!std::fs::read_to_string(l.worktree.join(".git/config"))
        .expect("config")
        .contains("fsmonitor"));
    assert_eq!(
        std::fs::read_to_string(l.worktree.join("made-inside")).expect("written"),
        "ok\n"
    );
    assert!(
        listener.accept().is_err(),
        "nothing reached this machine's loopback from a private network"
    );
    // Nor does a listener on this machine's own non-loopback address (a web
    // endpoint served on the LAN address, or on 0.0.0.0): slirp4netns would
    // connect to it from this machine; the run's namespace has an
    // unreachable route for each of the machine's addresses.
    match l.outside {
        Some(_) => {
            assert_eq!(seen.get("tcp_out").copied(), Some(false), "{seen:?}");
            // The run cannot take the route away (no capability over its
            // network, also when the engine runs as root).
            assert_eq!(seen.get("route_change").copied(), Some(false), "{seen:?}");
            assert_eq!(seen.get("tcp_out_after").copied(), Some(false), "{seen:?}");
        }
        None => panic!(
            "this machine has no non-loopback address: the test of its own addresses needs one"
        ),
    }

    // network = "host": the user's explicit choice, loopback included (but
    // not the desktop's abstract sockets).
    let seen = l.probe(NetworkMode::Host, port).await;
    assert_eq!(seen.get("tcp").copied(), Some(true), "{seen:?}");
    // The same listener on the machine's own address is reached from the
    // host's network: what the private network refused was the route.
    assert_eq!(seen.get("tcp_out").copied(), Some(true), "{seen:?}");
    assert_eq!(
        seen.get("abstract_socket").copied(),
        Some(false),
        "{seen:?}"
    );
    assert!(
        listener.accept().is_ok(),
        "the loopback connection reached us"
    );

    // network = "none": a network namespace with nothing in it.
    let seen = l.probe(NetworkMode::None, port).await;
    assert_eq!(seen.get("tcp").copied(), Some(false), "{seen:?}");
    assert_eq!(seen.get("tcp_out").copied(), Some(false), "{seen:?}");
    assert_eq!(seen.get("write_worktree").copied(), Some(true));
}

/// A directory for a checkout inside one of the system's directories that
/// the sandbox binds from the host (`/opt/src/app`, `/var/lib/...`,
/// `/run/user/<uid>/...`): the first this user can create one in.
fn in_a_system_directory() -> Option<tempfile::TempDir> {
    let uid = rustix::process::getuid().as_raw();
    ["/opt", "/var/lib", &format!("/run/user/{uid}"), "/run/lock"]
        .into_iter()
        .find_map(|d| {
            tempfile::Builder::new()
                .prefix("overseer-checkout-")
                .tempdir_in(d)
                .ok()
        })
}

/// A checkout outside HOME: nothing of it is in the sandbox, and no mount
/// names its path (a hide at its place would: `/proc/self/mountinfo` lists
/// every mount point). Tried in `/var/tmp` and `/tmp` (where checkouts are
/// often made: CI clones under `/tmp`, whose private copy in the sandbox
/// holds nothing of the host), inside a system directory the sandbox binds
/// from the host (where the bind is split around the checkout) and, where
/// the target dir is not under `/tmp`, beside the test's data dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_outside_home_is_not_named_inside_the_sandbox() {
    let var_tmp = tempfile::Builder::new()
        .prefix("overseer-checkout-")
        .tempdir_in("/var/tmp")
        .expect("a checkout in /var/tmp");
    let tmp = tempfile::Builder::new()
        .prefix("overseer-checkout-")
        .tempdir_in("/tmp")
        .expect("a checkout in /tmp");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .canonicalize()
        .expect("target dir");
    let beside = tempfile::Builder::new()
        .prefix("checkout-")
        .tempdir_in(&target)
        .expect("a checkout beside the data dir");
    let system = in_a_system_directory();
    let mut places = vec![
        var_tmp.path().canonicalize().expect("canon"),
        tmp.path().canonicalize().expect("canon"),
    ];
    match &system {
        Some(s) => places.push(s.path().canonicalize().expect("canon")),
        None => eprintln!(
            "NOTE: this user can create nothing in /opt, /var/lib, /run/user/<uid> or \
             /run/lock: a checkout inside a system directory is not tried"
        ),
    }
    if target.starts_with("/tmp") {
        eprintln!("NOTE: the target dir is under /tmp: a checkout beside it is the /tmp case");
    } else {
        places.push(beside.path().canonicalize().expect("canon"));
    }
    for place in places {
        let repo = place.join("src/user-checkout");
        let l = layout_with_repo(Some(repo.clone()));
        assert!(!repo.starts_with(&l.home));
        let seen = l.probe(NetworkMode::Private, 9).await;
        for (probe, want) in [
            ("repo_in_mountinfo", false),
            ("read_repo", false),
            ("write_repo", false),
            ("base_history", true),
            ("write_worktree", true),
        ] {
            assert_eq!(
                seen.get(probe).copied(),
                Some(want),
                "{probe} with the checkout at {}: all: {seen:?}",
                repo.display()
            );
        }
        assert!(!repo.join("pwned").exists());
    }
}

/// A script that leaves a marker-stripped, double-forked `setsid` sleep
/// behind (its pid in `pidfile`) and ignores SIGTERM itself.
fn escapee(pidfile: &Path) -> String {
    format!(
        "trap '' TERM
setsid bash -c 'env -u {marker} sleep 600 & echo $! > {p}' </dev/null >/dev/null 2>&1 &
while true; do sleep 0.1; done",
        marker = process::MARKER_ENV,
        p = pidfile.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marker_stripped_setsid_double_fork_escapes_the_marker_sweep_but_not_the_cgroup() {
    let dir = scratch();
    // Without a cgroup: the escapee survives stopping the tree.
    let pidfile = dir.path().join("pid-1");
    let spec = bash_spec(dir.path(), &escapee(&pidfile), Vec::new());
    let (mut agent, _i, _o, _e) = process::spawn(&spec).await.expect("spawn");
    let stray = read_pid(&pidfile).await;
    let report = agent
        .terminate(Duration::from_millis(200))
        .await
        .expect("terminate");
    assert!(report.survivors.is_empty(), "{report:?}");
    assert!(
        alive(stray),
        "without a cgroup the escapee survives: this is what the cgroup is for"
    );
    if let Some(pid) = rustix::process::Pid::from_raw(stray as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    assert!(wait_dead(stray).await);

    // With the run's cgroup: it dies with the run.
    let root = test_cgroup_root("abort");
    let cg = RunCgroup::create(&root, "run-1", None).expect("cgroup");
    let pidfile = dir.path().join("pid-2");
    let mut spec = bash_spec(dir.path(), &escapee(&pidfile), Vec::new());
    spec.cgroup = Some(cg.clone());
    let (mut agent, _i, _o, _e) = process::spawn(&spec).await.expect("spawn");
    let stray = read_pid(&pidfile).await;
    assert!(
        cg.pids().contains(&stray),
        "the escapee is in the run's cgroup"
    );
    let report = agent
        .terminate(Duration::from_millis(200))
        .await
        .expect("terminate");
    assert!(report.survivors.is_empty(), "{report:?}");
    assert!(wait_dead(stray).await, "the escapee died with its run");
    assert!(!cg.path().exists(), "the run's cgroup is removed");
    let _ = std::fs::remove_dir(&root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_after_a_crash_kills_what_is_left_in_run_cgroups() {
    let dir = scratch();
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    let engine =
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine");
    let root = engine.run_cgroup_root().expect("cgroups work here");
    drop(engine);
    // What an engine killed with -9 leaves: a run cgroup with a
    // marker-stripped daemon in it (its agent, here, too).
    let cg = RunCgroup::create(&root, "run-7", None).expect("cgroup");
    let pidfile = dir.path().join("pid");
    let mut spec = bash_spec(dir.path(), &escapee(&pidfile), Vec::new());
    spec.cgroup = Some(cg.clone());

    let (agent, _i, _o, _e) = process::spawn(&spec).await.expect("spawn");
    let stray = read_pid(&pidfile).await;
    let agent_pid = agent.pid();
    // No cleanup on drop: as if the engine had died.
    std::mem::forget(agent);

    let engine = Arc::new(
        Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine"),
    );
    engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    assert!(wait_dead(stray).await, "the escapee was killed at start");
    assert!(wait_dead(agent_pid).await, "the agent was killed at start");
    assert!(!cg.path().exists(), "the leftover cgroup is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensor_runs_contained_with_a_cleared_environment_and_its_daemon_is_stopped() {
    std::env::set_var("OVERSEER_TEST_SENSOR_SECRET", "must-not-leak");
    let w = world(Vec::new()).await;
    let sensor = format!(
        "echo \"HOME=$HOME TMPDIR=$TMPDIR\"; env | grep -c SENSOR_SECRET; \
         test -e {socket:?} && echo SOCKET-VISIBLE; test -e {repo:?} && echo REPO-VISIBLE; \
         setsid sleep 600 </dev/null >/dev/null 2>&1 & echo started",
        socket = w.engine.paths().socket(),
        repo = w.repo.join("README.md"),
    );
    w.engine
        .set_workspace_checks("demo", vec![sensor], None, &Actor::cli())
        .expect("sensor");
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let result = loop {
        let found = until(&w, "a tool call gate or the sensor's result", |e| {
            if let Some(a) = e
                .activity(run, 0)
                .ok()?
                .into_iter()
                .find(|a| a.kind() == "sensor")
            {
                return Some(Err(a));
            }
            e.gates(true)
                .ok()?
                .into_iter()
                .find(|g| g.run_id == run && g.kind() == GateKind::ToolCall)
                .map(Ok)
        })
        .await;
        match found {
            Ok(gate) => {
                w.engine
                    .decide_gate(gate.id, "yes", None, &Actor::app())
                    .expect("yes");
            }
            Err(activity) => break activity.payload(),
        }
    };
    let output = result["output"].as_str().unwrap_or_default().to_owned();
    assert!(output.contains("started"), "{result}");
    assert!(
        output.lines().any(|l| l.trim() == "0"),
        "no engine variable reached the sensor: {output}"
    );
    assert!(output.contains("TMPDIR=/tmp"), "{output}");
    assert!(!output.contains("SOCKET-VISIBLE"), "{output}");
    assert!(!output.contains("REPO-VISIBLE"), "{output}");
    // Its daemon is gone with it (nothing of the sensor's is alive).
    let marker = format!(
        "{}={}-sensors\0",
        process::MARKER_ENV,
        w.engine.agent_marker(run)
    );
    let start = Instant::now();
    loop {
        let left: Vec<u32> = std::fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| alive(*p))
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/environ"))
                    .is_ok_and(|env| String::from_utf8_lossy(&env).contains(&marker))
            })
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sensor's processes outlived it: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let root = w.engine.run_cgroup_root().expect("cgroups");
    assert!(!root.join(format!("run-{run}-sensors")).exists());
    assert!(!w
        .engine
        .paths()
        .data_dir
        .join("agent-homes/_sensors")
        .join(format!("run-{run}"))
        .exists());
}

/// Runs `helper_client` in a child process as `spec` says; its reply line.
async fn connect_from(mut spec: AgentSpec, socket: &Path) -> String {
    spec.program = std::env::current_exe().expect("test exe");
    spec.args = vec![
        "--exact".into(),
        "containment::helper_client".into(),
        "--nocapture".into(),
    ];
    spec.env = vec![
        (HELPER.into(), "client".into()),
        (SOCKET.into(), socket.to_string_lossy().into_owned()),
    ];
    let out = process::run_captured(
        &spec,
        Duration::from_secs(30),
        Duration::from_secs(1),
        1 << 16,
    )
    .await
    .expect("client ran");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("REPLY "))
        .unwrap_or_else(|| {
            panic!(
                "no reply ({:?}, {:?}): {text}{}",
                out.status,
                out.leftovers,
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_refuses_a_peer_inside_a_run_even_without_the_sandbox() {
    let notes = Arc::new(Captured::default());
    let w = world_with(Default::default(), notes.clone(), "").await;
    let socket = w.engine.paths().socket();
    let listener = server::bind(&socket).expect("bind");
    tokio::spawn(server::serve(w.engine.clone(), listener));
    let run = start(&w, "happy");
    pending_gate(&w, run, GateKind::Plan).await;
    let dir = scratch();

    // Outside any run: served.
    let outside = bash_spec(dir.path(), "", Vec::new());
    let reply = connect_from(outside.clone(), &socket).await;
    assert!(reply.contains("pong"), "{reply}");

    // In the run's cgroup (a daemon a sensor left, say), no marker, no
    // sandbox: only the cgroup says where it comes from.
    let root = w.engine.run_cgroup_root().expect("cgroups");
    let mut in_cgroup = bash_spec(dir.path(), "", Vec::new());
    in_cgroup.cgroup =
        Some(RunCgroup::create(&root, &format!("run-{run}-sensors"), None).expect("cg"));
    let reply = connect_from(in_cgroup, &socket).await;
    assert!(reply.contains("\"forbidden\""), "{reply}");
    assert!(!reply.contains("pong"), "{reply}");

    // Without a cgroup, carrying the run's marker: refused as well.
    let mut marked = outside;
    marked.marker = w.engine.agent_marker(run);
    let reply = connect_from(marked, &socket).await;
    assert!(reply.contains("\"forbidden\""), "{reply}");

    // Recorded (signed), on the run's timeline, and the user is told.
    until(&w, "the security entry", |e| {
        e.activity(run, 0)
            .ok()?
            .into_iter()
            .find(|a| a.kind() == "security")
    })
    .await;
    let paths = w.engine.paths();
    let keyring = overseer_store::Keyring::load_or_create(&paths.config_dir).expect("keys");
    let store = overseer_store::Store::open(&paths.db(), keyring).expect("store");
    let recorded = store
        .audit_records(0, 100_000)
        .expect("records")
        .into_iter()
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.payload).ok())
        .any(|p| {
            p["type"] == "security_event" && p["event"] == "socket_from_run" && p["run_id"] == run
        });
    assert!(recorded, "a signed security event");
    let start = Instant::now();
    while !notes
        .0
        .lock()
        .expect("lock")
        .iter()
        .any(|n| n.kind == NotificationKind::SecurityEvent && n.run_id == run)
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the user was not told"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(w.engine.verify_audit().expect("audit").is_ok());
}

/// The engine keeps answering with every descriptor in use: the accept
/// loop backs off (it does not spin), and answers again once they free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_the_accept_loop_backs_off_and_recovers() {
    let dir = scratch();
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "containment::helper_serve", "--nocapture"])
        .env(HELPER, "serve")
        .env("OVERSEER_DATA_DIR", dir.path().join("data"))
        .env("OVERSEER_CONFIG_DIR", dir.path().join("config"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("helper");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    loop {
        let line = lines.next().expect("the helper said ready").expect("line");
        if line.starts_with("READY") {
            break;
        }
    }
    let socket = dir
        .path()
        .join("data")
        .join(overseer_engine::paths::SOCKET_FILE);
    // Far more idle connections than the helper has descriptors.
    let held: Vec<std::os::unix::net::UnixStream> = (0..120)
        .filter_map(|_| std::os::unix::net::UnixStream::connect(&socket).ok())
        .collect();
    assert!(held.len() > 64, "{} connections", held.len());
    let ticks = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
        let f: Vec<&str> = stat
            .rsplit_once(')')
            .expect("stat")
            .1
            .split_whitespace()
            .collect();
        f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime")
    };
    let before = ticks(child.id());
    std::thread::sleep(Duration::from_secs(1));
    let used = ticks(child.id()) - before;
    // A spinning loop burns a whole core (about 100 ticks a second).
    assert!(
        used < 25,
        "the engine used {used} ticks of CPU in 1 s while out of descriptors"
    );
    drop(held);
    // Answers again once descriptors are free.
    let start = Instant::now();
    loop {
        let reply = ping(&socket);
        if reply.as_deref().is_some_and(|r| r.contains("pong")) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no answer: {reply:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_get_a_typed_error_and_the_engine_still_answers() {
    let w = world(Vec::new()).await;
    let socket = w.engine.paths().socket();
    let listener = server::bind(&socket).expect("bind");
    tokio::spawn(server::serve(w.engine.clone(), listener));
    let held: Vec<std::os::unix::net::UnixStream> = (0..server::MAX_CONNECTIONS)
        .map(|_| std::os::unix::net::UnixStream::connect(&socket).expect("connect"))
        .collect();
    // Make sure each was accepted and holds its slot: one answered call each
    // would be slow; the cap is reached in accept order, so the next one is
    // refused once the last held one is served.
    let mut last = held.last().expect("held").try_clone().expect("clone");
    writeln!(last, "{{\"id\":1,\"method\":\"ping\"}}").expect("write");
    let mut line = String::new();
    BufReader::new(last).read_line(&mut line).expect("read");
    assert!(line.contains("pong"), "{line}");
    let extra = ping_verbose(&socket).expect("a line");
    assert!(extra.contains("engine_unavailable"), "{extra}");
    assert!(
        extra.contains(&server::MAX_CONNECTIONS.to_string()),
        "{extra}"
    );
    drop(held);
    let start = Instant::now();
    loop {
        if ping(&socket).is_some_and(|r| r.contains("pong")) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ping(socket: &Path) -> Option<String> {
    let mut s = std::os::unix::net::UnixStream::connect(socket).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    writeln!(s, "{{\"id\":1,\"method\":\"ping\"}}").ok()?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).ok()?;
    Some(line)
}

fn ping_verbose(socket: &Path) -> std::io::Result<String> {
    let mut s = std::os::unix::net::UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    writeln!(s, "{{\"id\":1,\"method\":\"ping\"}}")?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line)?;
    Ok(line)
}

/// Helper process: connects to the socket, sends a ping, prints the reply.
#[test]
fn helper_client() {
    if std::env::var(HELPER).as_deref() != Ok("client") {
        return;
    }
    let socket = std::env::var(SOCKET).expect("socket");
    let reply = ping(Path::new(&socket)).unwrap_or_else(|| "no reply".into());
    println!("REPLY {}", reply.trim());
}

/// Helper process: an engine serving its socket with only 48 descriptors.
#[test]
fn helper_serve() {
    if std::env::var(HELPER).as_deref() != Ok("serve") {
        return;
    }
    let paths = Paths::resolve(None, None).expect("paths");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let engine = Arc::new(
            Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
                .expect("engine"),
        );
        // Probed before descriptors run short (it starts bwrap once).
        let _ = engine.run_cgroup_root();
        let listener = server::bind(&paths.socket()).expect("bind");
        rustix::process::setrlimit(
            rustix::process::Resource::Nofile,
            rustix::process::Rlimit {
                current: Some(48),
                maximum: Some(48),
            },
        )
        .expect("setrlimit");
        println!("READY");
        server::serve(engine, listener).await;
    });
}

/// A run's limits hold against a fork storm and a memory hog from a real
/// child inside its cgroup: forks past `pids.max` fail, the hog is killed at
/// `memory.max` (it, not the engine: the run's processes are the OOM
/// killer's first choice), and the cgroup says so for the timeline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cannot_fork_past_its_limit_nor_take_the_machines_memory() {
    let status = &contain::probe().limits;
    assert!(
        matches!(status, contain::LimitsStatus::Available { .. }),
        "the machines these tests run on have pids, memory and cpu controllers: {status:?}"
    );
    let dir = scratch();
    let root = test_cgroup_root("limits");
    let limits = contain::RunLimits {
        pids_max: 40,
        memory_max: 96 << 20,
        memory_high: 80 << 20,
        cpu_weight: 100,
    };
    let cg = RunCgroup::create(&root, "run-3", Some(&limits)).expect("cgroup");
    let script = r#"
        cat /proc/self/oom_score_adj
        python3 -c '
import os, signal, time
kids = []
for i in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print("forks=%d" % len(kids), flush=True)
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
'
        python3 -c "b = bytearray(400 << 20); print('allocated', len(b))"
        echo "hog=$?"
    "#;
    let mut spec = bash_spec(dir.path(), script, Vec::new());
    spec.cgroup = Some(cg.clone());
    let (mut agent, stdin, mut stdout, mut stderr) = process::spawn(&spec).await.expect("spawn");
    drop(stdin);
    let (mut text, mut err) = (String::new(), String::new());
    use tokio::io::AsyncReadExt;
    let read = async {
        let _ = stdout.read_to_string(&mut text).await;
        let _ = stderr.read_to_string(&mut err).await;
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the script ends");
    let _ = agent.wait().await;
    let stderr = err;
    assert!(
        text.starts_with("1000\n"),
        "the run is the OOM killer's first choice: {text}"
    );
    let forks: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("forks="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no fork count: {text} {stderr}"));
    assert!(forks < 40, "forks past pids.max=40: {forks}");
    assert!(
        !text.contains("allocated"),
        "the hog got 400 MiB under a 96 MiB limit: {text}"
    );
    assert!(
        text.contains("hog=137"),
        "the hog was SIGKILLed: {text} {stderr}"
    );
    let hits = cg.limit_hits();
    assert!(
        hits.pids > 0,
        "pids.events counted the refused forks: {hits:?}"
    );
    assert!(hits.oom_kills > 0, "the OOM kill was counted: {hits:?}");
    // The engine (this process) is not the OOM killer's choice.
    let own = std::fs::read_to_string("/proc/self/oom_score_adj").expect("own score");
    assert_ne!(own.trim(), "1000");
    let report = agent
        .terminate(Duration::from_millis(200))
        .await
        .expect("terminate");
    assert!(report.survivors.is_empty(), "{report:?}");
    let _ = cg.remove();
    contain::cgroup::remove_if_empty(&root);
}

/// A run whose agent's tree forks past its limit is told on its timeline
/// (which limit, how often, how to raise it), signed, and the user gets one
/// notification however often it hits the limit again. The agent is the
/// real demo agent, started by a wrapper that leaves a fork storm behind
/// (what a runaway test script does), inside the real sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_hits_its_limit_is_told_on_its_timeline_and_the_user_once() {
    let dir = scratch();
    let wrapper = dir.path().join("storm-agent.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n(sleep 2; exec python3 -c \"$STORM\") </dev/null >/dev/null 2>&1 &\nexec {:?} \"$@\"\n",
            demo_agent().to_string_lossy()
        ),
    )
    .expect("wrapper");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    // Forks until refused, gives ten back (room for the agent's threads),
    // and tries again every second: the limit is hit again and again.
    let storm = "import os, signal, time\nkids = []\nwhile True:\n    while True:\n        try:\n            pid = os.fork()\n        except OSError:\n            break\n        if pid == 0:\n            time.sleep(600)\n            os._exit(0)\n        kids.append(pid)\n    for k in kids[-10:]:\n        os.kill(k, signal.SIGKILL)\n        os.waitpid(k, 0)\n    kids = kids[:-10]\n    time.sleep(1)\n";
    let notes = Arc::new(Captured::default());
    let w = world_with(
        Default::default(),
        notes.clone(),
        &format!(
            "[agents.storm]\ncommand = {:?}\nmode = \"default\"\nenv = {{ STORM = {:?} }}\nlimits = {{ pids_max = 40 }}\n",
            wrapper.to_string_lossy(),
            storm
        ),
    )
    .await;
    let run = start_as(&w, "storm", "happy", Default::default());
    pending_gate(&w, run, GateKind::Plan).await;
    let entry = until(&w, "the limit on the timeline", |e| {
        e.activity(run, 0)
            .ok()?
            .into_iter()
            .map(|a| format!("{a:?}"))
            .find(|a| a.contains("hit its process limit"))
    })
    .await;
    assert!(entry.contains("40 processes and threads"), "{entry}");
    assert!(entry.contains("[agents.storm.limits]"), "{entry}");
    // The storm keeps hitting the limit: more entries, one notification.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let told: Vec<_> = notes
        .0
        .lock()
        .expect("lock")
        .iter()
        .filter(|n| n.kind == NotificationKind::SecurityEvent && n.run_id == run)
        .cloned()
        .collect();
    assert_eq!(told.len(), 1, "one notification: {told:?}");
    assert!(told[0].title.contains("resource limit"), "{told:?}");
    // The run itself goes on (it waits on its plan), its agent alive.
    assert!(w
        .engine
        .gates(true)
        .expect("gates")
        .iter()
        .any(|g| g.run_id == run && g.kind() == GateKind::Plan));
    w.engine.abort_run(run, &Actor::cli()).expect("abort");
}

/// The engine raises its own open-files limit to the hard limit; what a run
/// starts gets the limit the engine started with (programs that use
/// `select()` expect at most 1,024). Run in a helper process started with a
/// soft limit of 256.
#[test]
fn a_run_starts_with_the_open_files_limit_the_engine_started_with() {
    let exe = std::env::current_exe().expect("test exe");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -Sn 256 && exec {:?} --exact containment::helper_fd_limit --nocapture",
            exe.to_string_lossy()
        ))
        .env(HELPER, "fd_limit")
        .output()
        .expect("helper");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("FDLIMIT "))
        .unwrap_or_else(|| panic!("no answer: {text}{}", String::from_utf8_lossy(&out.stderr)));
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .map_or("unlimited".to_owned(), |m| m.to_string());
    assert_eq!(line, format!("engine={hard} child=256"));
}

#[test]
fn helper_fd_limit() {
    if std::env::var(HELPER).as_deref() != Ok("fd_limit") {
        return;
    }
    overseer_engine::raise_fd_limit();
    let own = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .map_or("unlimited".to_owned(), |c| c.to_string());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let child = rt.block_on(async {
        let dir = scratch();
        let spec = bash_spec(dir.path(), "ulimit -Sn", Vec::new());
        let out =
            process::run_captured(&spec, Duration::from_secs(10), Duration::from_secs(1), 4096)
                .await
                .expect("ran");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    });
    println!("FDLIMIT engine={own} child={child}");
}

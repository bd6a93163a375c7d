//! Agent processes: spawned with only the environment their profile gives,
//! in their own process group, dying with the engine (PR_SET_PDEATHSIG), and
//! stopped as a whole tree.
//!
//! Contained (see `contain`), an agent runs inside bubblewrap (`bwrap` is
//! the child; the agent runs in the sandbox's own pid namespace below it)
//! and joins its run's cgroup before exec, so everything it ever starts is
//! in that cgroup and one `cgroup.kill` stops it all.
//!
//! Without a cgroup, a process tree is more than a process group: agents
//! start helpers that call `setsid` or double-fork and get reparented to
//! init. Every process an agent starts inherits
//! `OVERSEER_AGENT_MARKER=<marker>` in its environment, so stopping a run
//! signals its group, its descendants (by parent pid) and every process of
//! ours that carries its marker. At start the engine kills whatever carries
//! its database's marker prefix: agents left by a killed engine.

use crate::{RunCgroup, SandboxPlan};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

pub use crate::child::{die_with_parent, keep_fds};
pub use crate::procscan::{marker_of, MARKER_ENV};
/// Variables an agent keeps from the engine's environment; everything else
/// comes from its profile.
const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "TERM",
];
const POLL: Duration = Duration::from_millis(50);
/// How long SIGKILLed processes get to disappear.
const KILL_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("agent command `{0}` was not found: check the profile's command (and PATH)")]
    NotFound(String),
    #[error("the agent's working directory {0} does not exist")]
    NoCwd(PathBuf),
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the agent's pipes could not be opened")]
    Pipes,
    #[error("waiting for the agent: {0}")]
    Wait(std::io::Error),
    #[error("cannot put the agent in its run's cgroup: {0}")]
    Cgroup(std::io::Error),
    #[error("cannot keep the agent from the desktop's sockets (Landlock): {0}")]
    Scope(String),
    #[error("cannot give the sandbox its private network: {0}")]
    Network(String),
    #[error("cannot make the pipes of the sandbox's private network: {0}")]
    NetworkPipes(std::io::Error),
}

/// How to start one agent.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub marker: String,
    /// Run inside this bubblewrap sandbox (None: uncontained).
    pub sandbox: Option<SandboxPlan>,
    /// Join this cgroup before exec (None: tracked by marker only).
    pub cgroup: Option<RunCgroup>,
}

/// A running agent and what it leaves behind.
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    pid: u32,
    marker: String,
    cgroup: Option<RunCgroup>,
    sandboxed: bool,
    /// Its sandbox's private network (dropped with it: slirp4netns stops).
    _network: Option<crate::net::PrivateNetwork>,
}

/// What stopping a tree did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminateReport {
    /// Everything was gone after SIGTERM, within the grace period.
    pub exited_on_term: bool,
    /// Pids that needed SIGKILL.
    pub killed: Vec<u32>,
    /// Pids still alive at the end: must be empty.
    pub survivors: Vec<u32>,
}

/// `program` as exec would find it with `path`: a path as given, a bare
/// name in the first `path` entry that has it runnable.
pub fn resolve_program(program: &Path, path: Option<&str>) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return crate::is_executable(program).then(|| program.to_owned());
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_absolute() && crate::is_executable(p))
}

/// The PATH the agent will see: its profile's, else Overseer's.
fn child_path(spec: &AgentSpec) -> Option<String> {
    spec.env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
}

/// Starts the agent with piped stdio. The fork happens on the engine's
/// launcher thread ([`crate::launcher`]) and every wait of the start (its
/// private network) is the runtime's: a fleet's launches hold up nothing
/// else. Must be called from inside a tokio runtime. A start that fails
/// leaves nothing behind: whatever it started is killed and the spec's
/// cgroup removed.
pub async fn spawn(
    spec: &AgentSpec,
) -> Result<(AgentProcess, ChildStdin, ChildStdout, ChildStderr), ProcessError> {
    let started = start(spec).await;
    if started.is_err() {
        if let Some(cg) = &spec.cgroup {
            give_back(cg).await;
        }
    }
    started
}

/// The cgroup of a start that failed: emptied and removed.
async fn give_back(cg: &RunCgroup) {
    let left = cg.kill_all(KILL_WAIT).await;
    if !left.is_empty() {
        tracing::error!(
            ?left,
            "processes in {} survived cgroup.kill",
            cg.path().display()
        );
        return;
    }
    match cg.remove() {
        Ok(()) => {
            if let Some(root) = cg.path().parent() {
                crate::cgroup::remove_if_empty(root);
            }
        }
        Err(e) => tracing::warn!("cannot remove the cgroup {}: {e}", cg.path().display()),
    }
}

async fn start(
    spec: &AgentSpec,
) -> Result<(AgentProcess, ChildStdin, ChildStdout, ChildStderr), ProcessError> {
    if !spec.cwd.is_dir() {
        return Err(ProcessError::NoCwd(spec.cwd.clone()));
    }
    let program = spec.program.to_string_lossy().into_owned();
    // A private network: bwrap waits for it before the agent runs.
    let network = match (&spec.sandbox, crate::net::helper()) {
        (Some(plan), Some(helper)) if plan.network == crate::net::NetworkMode::Private => Some((
            crate::net::Pending::new().map_err(ProcessError::NetworkPipes)?,
            helper,
        )),
        _ => None,
    };
    let mut cmd = agent_command(spec, &program, network.as_ref().map(|(p, _)| p))?;
    // Kept open until the child has exec'd (the closure only holds their numbers).
    let procs = match &spec.cgroup {
        Some(cg) => {
            let files = cg.procs_files().map_err(ProcessError::Cgroup)?;
            join_cgroup(&mut cmd, &files);
            Some(files)
        }
        None => None,
    };
    // A sandbox with a private network takes its turn for the set-up.
    let _turn = match &network {
        Some(_) => Some(network_turn().await?),
        None => None,
    };
    let spawned = crate::launcher::spawn(cmd).await;
    drop(procs);
    let mut child = spawned.map_err(|source| spawn_failed(spec, &program, source))?;
    let pid = child.id().ok_or(ProcessError::Pipes)?;
    let private_network = match network {
        Some((pending, helper)) => match pending.connect(helper).await {
            Ok(n) => Some(n),
            Err(why) => {
                let _ = child.start_kill();
                if let Some(cg) = &spec.cgroup {
                    cg.kill();
                }
                return Err(ProcessError::Network(why));
            }
        },
        None => None,
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ProcessError::Pipes);
    };
    Ok((
        AgentProcess {
            child,
            pid,
            marker: spec.marker.clone(),
            cgroup: spec.cgroup.clone(),
            sandboxed: spec.sandbox.is_some(),
            _network: private_network,
        },
        stdin,
        stdout,
        stderr,
    ))
}

/// The command that starts the agent: in its sandbox if it has one (set to
/// join the private network if pending), with only the environment it is
/// given, and the limits every agent runs under.
fn agent_command(
    spec: &AgentSpec,
    program: &str,
    network: Option<&crate::net::Pending>,
) -> Result<Command, ProcessError> {
    let mut cmd = match &spec.sandbox {
        Some(plan) => {
            // bwrap would only say "execvp: No such file": resolve here.
            let resolved = resolve_program(&spec.program, child_path(spec).as_deref())
                .ok_or_else(|| ProcessError::NotFound(program.to_owned()))?;
            let mut cmd = Command::new(&plan.bwrap);
            if let Some(pending) = network {
                cmd.args(pending.bwrap_args());
                keep_fds(&mut cmd, pending.child_fds().to_vec());
            }
            cmd.args(plan.args()).arg(resolved);
            cmd
        }
        None => Command::new(&spec.program),
    };
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for k in BASE_ENV {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    if let Some(plan) = &spec.sandbox {
        for (k, v) in &plan.env {
            cmd.env(k, v);
        }
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.env(MARKER_ENV, &spec.marker);
    die_with_parent(&mut cmd);
    yield_to_engine(&mut cmd);
    first_for_the_oom_killer(&mut cmd);
    usual_fd_limit(&mut cmd);
    crate::scope::enforce_before_exec(&mut cmd).map_err(ProcessError::Scope)?;
    Ok(cmd)
}

/// Why the agent could not be started, from the error of its spawn.
fn spawn_failed(spec: &AgentSpec, program: &str, source: std::io::Error) -> ProcessError {
    match source.kind() {
        std::io::ErrorKind::NotFound if spec.sandbox.is_none() => {
            ProcessError::NotFound(program.to_owned())
        }
        _ => ProcessError::Spawn {
            program: spec.sandbox.as_ref().map_or(program.to_owned(), |p| {
                p.bwrap.to_string_lossy().into_owned()
            }),
            source,
        },
    }
}

/// How many sandboxes set up their private network at once: two per core.
/// All of a fleet's launches at once (1,000 bwraps and slirp4netns starting
/// together on two cores) each took longer than the set-up's 10 s limit and
/// nearly every run failed; taking turns, each set-up takes its usual tens
/// of milliseconds. Waiting for a turn holds up nothing else.
fn network_setups_at_once() -> usize {
    2 * std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// A turn to set up a sandbox's network ([`network_setups_at_once`]).
async fn network_turn() -> Result<tokio::sync::SemaphorePermit<'static>, ProcessError> {
    static TURNS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    TURNS
        .get_or_init(|| tokio::sync::Semaphore::new(network_setups_at_once()))
        .acquire()
        .await
        .map_err(|e| ProcessError::Network(format!("no turn to set it up: {e}")))
}

/// How much lower than the engine's CPU priority an agent and everything
/// it starts run (added to the engine's niceness, up to 19). The engine
/// answers every agent's permission requests and the user's clicks; the
/// agents are the load it supervises. In `make bench`'s 50-agent steady
/// fleet (7 paired runs, same priority vs +5) the round trip's p50 was
/// lower at +5 in every pair (0.69-0.88 vs 0.77-1.27 ms) and the one
/// quarter-second stall came at the same priority; the p99s were within
/// the machine's noise. An agent's builds and tests still get every core
/// nobody else wants.
pub const AGENT_NICENESS_INCREMENT: i32 = 5;

/// The child lowers its priority by [`AGENT_NICENESS_INCREMENT`] before
/// exec; what it starts inherits it. Best effort: a system that refuses
/// leaves it at the engine's priority.
#[allow(unsafe_code)]
fn yield_to_engine(cmd: &mut Command) {
    let engine = rustix::process::getpriority_process(None).unwrap_or(0);
    let agent = (engine + AGENT_NICENESS_INCREMENT).min(19);
    // SAFETY: the closure runs in the forked child before exec and makes
    // one async-signal-safe system call (setpriority); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let _ = rustix::process::setpriority_process(None, agent);
            Ok(())
        });
    }
}

/// The child joins the cgroups whose `cgroup.procs` are `procs` before
/// exec (its run's, and on a hybrid system the v1 ones of its limits), so
/// nothing it starts can run outside them.
#[allow(unsafe_code)]
fn join_cgroup(cmd: &mut Command, procs: &[std::fs::File]) {
    use std::os::fd::AsRawFd;
    let fds: Vec<i32> = procs.iter().map(AsRawFd::as_raw_fd).collect();
    // SAFETY: the closure runs in the forked child before exec and makes
    // async-signal-safe system calls (write) on descriptors the parent keeps
    // open until spawn returns; it allocates nothing (it reads the vector
    // made in the parent; an OS error converts without allocating).
    unsafe {
        cmd.pre_exec(move || {
            for fd in &fds {
                let file = std::os::fd::BorrowedFd::borrow_raw(*fd);
                rustix::io::write(file, b"0").map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
}

/// The child gets the open-files soft limit the engine started with (the
/// engine raises its own to the hard limit: [`crate::raise_fd_limit`]);
/// programs that use `select()` expect at most 1,024.
#[allow(unsafe_code)]
fn usual_fd_limit(cmd: &mut Command) {
    let Some(soft) = started_fd_limit() else {
        return;
    };
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
    // SAFETY: the closure runs in the forked child before exec and makes one
    // async-signal-safe system call (setrlimit); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let _ = rustix::process::setrlimit(
                rustix::process::Resource::Nofile,
                rustix::process::Rlimit {
                    current: Some(soft),
                    maximum: hard,
                },
            );
            Ok(())
        });
    }
}

/// Everything a run starts is the OOM killer's first choice
/// (`oom_score_adj` 1000, inherited), so memory pressure from a run takes
/// the run, never the engine. Best effort: raising one's own score needs
/// no privilege, but a system without `/proc` leaves it as it was.
#[allow(unsafe_code)]
fn first_for_the_oom_killer(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and makes
    // three async-signal-safe system calls (open, write, close) with a
    // static path; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            if let Ok(fd) = rustix::fs::open(
                c"/proc/self/oom_score_adj",
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            ) {
                let _ = rustix::io::write(&fd, b"1000");
            }
            Ok(())
        });
    }
}

impl AgentProcess {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub async fn wait(&mut self) -> Result<ExitStatus, ProcessError> {
        self.child.wait().await.map_err(ProcessError::Wait)
    }

    /// Every live process of this agent's tree.
    fn tree(&mut self) -> Vec<u32> {
        let procs = crate::procscan::processes();
        self.tree_in(&procs)
    }

    /// [`AgentProcess::tree`] from a scan at hand.
    fn tree_in(&mut self, procs: &[crate::procscan::Proc]) -> Vec<u32> {
        let own = self
            .child
            .try_wait()
            .ok()
            .flatten()
            .is_none()
            .then_some(self.pid);
        let mut pids: HashSet<u32> = tree_of(procs, self.pid, &self.marker).into_iter().collect();
        pids.extend(own);
        if let Some(cg) = &self.cgroup {
            pids.extend(cg.live_pids());
        }
        let mut v: Vec<u32> = pids.into_iter().collect();
        v.sort_unstable();
        v
    }

    /// Whether the tree is still there, known without scanning /proc: the
    /// agent has not exited, or its cgroup still holds a live process.
    /// `false` is not proof that the tree is gone ([`AgentProcess::tree`]).
    fn surely_alive(&mut self) -> bool {
        // An error is no answer: let the scan decide.
        let running = matches!(self.child.try_wait(), Ok(None));
        running
            || self
                .cgroup
                .as_ref()
                .is_some_and(|cg| !cg.live_pids().is_empty())
    }

    /// Who gets SIGTERM: everyone but bubblewrap's own processes (the
    /// outer one and the sandbox's init, its child), which would end the
    /// sandbox at once instead of letting the agent exit cleanly; they end
    /// when the agent does.
    fn term_targets(&self, tree: &[u32], procs: &[crate::procscan::Proc]) -> Vec<u32> {
        if !self.sandboxed {
            return tree.to_vec();
        }
        let helpers: HashSet<u32> = procs
            .iter()
            .filter(|p| p.ppid == self.pid)
            .map(|p| p.pid)
            .chain([self.pid])
            .collect();
        tree.iter()
            .copied()
            .filter(|p| !helpers.contains(p))
            .collect()
    }

    /// SIGTERM to the whole tree, up to `grace` to exit, then SIGKILL
    /// (`cgroup.kill` when it has a cgroup); the cgroup is removed at the end.
    pub async fn terminate(&mut self, grace: Duration) -> Result<TerminateReport, ProcessError> {
        let mut report = TerminateReport::default();
        let procs = crate::procscan::processes();
        let first = self.tree_in(&procs);
        if first.is_empty() {
            report.exited_on_term = true;
            self.remove_cgroup();
            return Ok(report);
        }
        let targets = self.term_targets(&first, &procs);
        drop(procs);
        let group = (!self.sandboxed).then_some(self.pid);
        signal_all(&targets, group, rustix::process::Signal::TERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            // A scan of /proc (every process of the user) only once the
            // agent and its cgroup look empty, to confirm it: not at every
            // poll of every finishing run of a fleet.
            if !self.surely_alive() && self.tree().is_empty() {
                report.exited_on_term = true;
                let _ = self.child.try_wait();
                self.remove_cgroup();
                return Ok(report);
            }
            tokio::time::sleep(POLL).await;
        }
        let stubborn = self.tree();
        if let Some(cg) = &self.cgroup {
            cg.kill();
        }
        signal_all(&stubborn, Some(self.pid), rustix::process::Signal::KILL);
        report.killed = stubborn;
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            let _ = self.child.try_wait();
            let left = self.tree();
            if left.is_empty() || Instant::now() >= deadline {
                report.survivors = left;
                break;
            }
            // A late child of a dying process: kill it too.
            if let Some(cg) = &self.cgroup {
                cg.kill();
            }
            signal_all(&left, Some(self.pid), rustix::process::Signal::KILL);
            tokio::time::sleep(POLL).await;
        }
        self.remove_cgroup();
        Ok(report)
    }

    fn remove_cgroup(&mut self) {
        let Some(cg) = self.cgroup.take() else { return };
        if let Err(e) = cg.remove() {
            tracing::warn!("cannot remove the cgroup {}: {e}", cg.path().display());
        } else if let Some(root) = cg.path().parent() {
            crate::cgroup::remove_if_empty(root);
        }
    }
}

impl Drop for AgentProcess {
    /// Dropped without [`AgentProcess::terminate`] (the runtime ended):
    /// the child got SIGKILL (`kill_on_drop`); whatever else is in its
    /// cgroup gets it too, and the cgroup goes.
    fn drop(&mut self) {
        let Some(cg) = self.cgroup.take() else { return };
        let left = cg.kill_blocking(KILL_WAIT);
        let _ = self.child.try_wait();
        if !left.is_empty() {
            tracing::error!(
                ?left,
                "processes in {} survived cgroup.kill",
                cg.path().display()
            );
        }
        match cg.remove() {
            Ok(()) => {
                if let Some(root) = cg.path().parent() {
                    crate::cgroup::remove_if_empty(root);
                }
            }
            Err(e) => tracing::warn!("cannot remove the cgroup {}: {e}", cg.path().display()),
        }
    }
}

/// What a command run to its end printed, and how it ended.
#[derive(Debug, Default)]
pub struct Captured {
    /// None: it did not exit by itself (killed at the time limit).
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
    /// Processes it left behind, stopped after it ended.
    pub leftovers: TerminateReport,
}

/// Runs `spec` with no input to its end or `limit`, keeping the last
/// `keep` bytes of each output; then stops whatever it left behind (a
/// daemon it started), giving it `grace` after SIGTERM.
pub async fn run_captured(
    spec: &AgentSpec,
    limit: Duration,
    grace: Duration,
    keep: usize,
) -> Result<Captured, ProcessError> {
    let (mut proc, stdin, stdout, stderr) = spawn(spec).await?;
    drop(stdin);
    let out = tokio::spawn(read_tail(stdout, keep));
    let err = tokio::spawn(read_tail(stderr, keep));
    let mut captured = Captured::default();
    match tokio::time::timeout(limit, proc.wait()).await {
        Ok(Ok(status)) => captured.status = Some(status),
        Ok(Err(e)) => return Err(e),
        Err(_) => captured.timed_out = true,
    }
    captured.leftovers = proc.terminate(grace).await?;
    // A leftover outside any cgroup may still hold the pipes: do not wait
    // for it forever.
    let read = |h: tokio::task::JoinHandle<Vec<u8>>| async move {
        tokio::time::timeout(KILL_WAIT, h)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    captured.stdout = read(out).await;
    captured.stderr = read(err).await;
    Ok(captured)
}

async fn read_tail(mut r: impl tokio::io::AsyncRead + Unpin, keep: usize) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > keep.saturating_mul(2) {
                    let cut = kept.len() - keep;
                    kept.drain(..cut);
                }
            }
        }
    }
}

fn signal_all(pids: &[u32], group: Option<u32>, sig: rustix::process::Signal) {
    if let Some(pg) = group.and_then(to_pid) {
        let _ = rustix::process::kill_process_group(pg, sig);
    }
    for &p in pids {
        if let Some(pid) = to_pid(p) {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }
}

fn to_pid(p: u32) -> Option<rustix::process::Pid> {
    let raw = i32::try_from(p).ok()?;
    // Never 0 (our group), 1 (init) or ourselves.
    if raw <= 1 || p == std::process::id() {
        return None;
    }
    rustix::process::Pid::from_raw(raw)
}

/// Live processes of the tree rooted at `root` or carrying `marker`.
fn tree_of(procs: &[crate::procscan::Proc], root: u32, marker: &str) -> Vec<u32> {
    let mut members: HashSet<u32> = HashSet::new();
    for p in procs.iter() {
        if p.pgrp == root || p.marker.as_deref() == Some(marker) {
            members.insert(p.pid);
        }
    }
    // Descendants by parent pid, to a fixed point.
    members.insert(root);
    loop {
        let before = members.len();
        for p in procs.iter() {
            if members.contains(&p.ppid) {
                members.insert(p.pid);
            }
        }
        if members.len() == before {
            break;
        }
    }
    let alive: HashSet<u32> = procs.iter().filter(|p| !p.zombie).map(|p| p.pid).collect();
    members.into_iter().filter(|p| alive.contains(p)).collect()
}

/// Kills every process of ours whose marker starts with `prefix`: agents left
/// behind by an engine that was killed. Returns the pids signalled.
pub fn kill_marked(prefix: &str) -> Vec<u32> {
    let pids: Vec<u32> = crate::procscan::processes()
        .iter()
        .filter(|p| !p.zombie && p.marker.as_deref().is_some_and(|m| m.starts_with(prefix)))
        .map(|p| p.pid)
        .collect();
    for &p in &pids {
        if let Some(pid) = to_pid(p) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    pids
}

/// The descriptor limit this process started with (soft, hard), before
/// [`raise_fd_limit`] raised it: what a child should get back before exec
/// (programs that use `select()` expect 1,024).
static STARTED_NOFILE: std::sync::OnceLock<Option<(u64, u64)>> = std::sync::OnceLock::new();

/// Raises this process's soft limit of open descriptors to its hard limit,
/// once: a desktop's usual soft limit (1,024) is what a run with a few
/// hundred waiting asks, plus the window's and agents' connections, ran out
/// of. Returns the limit now in force (soft), or None when it cannot be read.
pub fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let started = *STARTED_NOFILE.get_or_init(|| {
        let l = getrlimit(Resource::Nofile);
        let (cur, max) = (l.current?, l.maximum);
        let raised = Rlimit {
            current: max.or(Some(cur)),
            maximum: max,
        };
        if max != Some(cur) {
            if let Err(e) = setrlimit(Resource::Nofile, raised) {
                tracing::warn!("cannot raise the open-files limit from {cur} to {max:?}: {e}");
            }
        }
        Some((cur, max.unwrap_or(u64::MAX)))
    });
    started?;
    getrlimit(Resource::Nofile).current
}

/// The soft descriptor limit this process started with, if it was raised.
pub fn started_fd_limit() -> Option<u64> {
    STARTED_NOFILE
        .get()
        .copied()
        .flatten()
        .map(|(soft, _)| soft)
}

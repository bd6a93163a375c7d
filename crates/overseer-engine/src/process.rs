//! Agent processes: spawned with only the environment their profile gives,
//! in their own process group, dying with the engine (PR_SET_PDEATHSIG), and
//! stopped as a whole tree.
//!
//! A process tree is more than a process group: agents start helpers that
//! call `setsid` or double-fork and get reparented to init. Every process an
//! agent starts inherits `OVERSEER_AGENT_MARKER=<marker>` in its environment,
//! so stopping a run signals its group, its descendants (by parent pid) and
//! every process of ours that carries its marker. At start the engine kills
//! whatever carries its database's marker prefix: agents left by a killed
//! engine.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

pub const MARKER_ENV: &str = "OVERSEER_AGENT_MARKER";
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
}

/// How to start one agent.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub marker: String,
}

/// A running agent and what it leaves behind.
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    pid: u32,
    marker: String,
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

/// Starts the agent with piped stdio.
pub fn spawn(
    spec: &AgentSpec,
) -> Result<(AgentProcess, ChildStdin, ChildStdout, ChildStderr), ProcessError> {
    if !spec.cwd.is_dir() {
        return Err(ProcessError::NoCwd(spec.cwd.clone()));
    }
    let mut cmd = Command::new(&spec.program);
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
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.env(MARKER_ENV, &spec.marker);
    die_with_parent(&mut cmd);
    let program = spec.program.to_string_lossy().into_owned();
    let mut child = cmd.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ProcessError::NotFound(program.clone()),
        _ => ProcessError::Spawn {
            program: program.clone(),
            source,
        },
    })?;
    let pid = child.id().ok_or(ProcessError::Pipes)?;
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
        },
        stdin,
        stdout,
        stderr,
    ))
}

/// The agent gets SIGKILL when the engine dies, even by kill -9.
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only makes
    // one async-signal-safe system call (prctl); it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
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
        let own = self
            .child
            .try_wait()
            .ok()
            .flatten()
            .is_none()
            .then_some(self.pid);
        let mut pids: HashSet<u32> = tree_of(self.pid, &self.marker).into_iter().collect();
        pids.extend(own);
        let mut v: Vec<u32> = pids.into_iter().collect();
        v.sort_unstable();
        v
    }

    /// SIGTERM to the whole tree, up to `grace` to exit, then SIGKILL.
    pub async fn terminate(&mut self, grace: Duration) -> Result<TerminateReport, ProcessError> {
        let mut report = TerminateReport::default();
        let first = self.tree();
        if first.is_empty() {
            report.exited_on_term = true;
            return Ok(report);
        }
        signal_all(&first, self.pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.tree().is_empty() {
                report.exited_on_term = true;
                let _ = self.child.try_wait();
                return Ok(report);
            }
            tokio::time::sleep(POLL).await;
        }
        let stubborn = self.tree();
        signal_all(&stubborn, self.pid, rustix::process::Signal::KILL);
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
            signal_all(&left, self.pid, rustix::process::Signal::KILL);
            tokio::time::sleep(POLL).await;
        }
        Ok(report)
    }
}

fn signal_all(pids: &[u32], group: u32, sig: rustix::process::Signal) {
    if let Some(pg) = to_pid(group) {
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

/// One process of ours, as /proc shows it.
struct ProcInfo {
    pid: u32,
    ppid: u32,
    pgrp: u32,
    zombie: bool,
}

fn our_processes() -> Vec<ProcInfo> {
    let uid = rustix::process::getuid().as_raw();
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let meta = std::fs::metadata(format!("/proc/{pid}")).ok()?;
            if meta.uid() != uid {
                return None;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command name may hold spaces and parentheses: parse after the last ')'.
            let rest = stat.rsplit_once(')')?.1;
            let mut f = rest.split_whitespace();
            let state = f.next()?;
            let ppid = f.next()?.parse().ok()?;
            let pgrp = f.next()?.parse().ok()?;
            Some(ProcInfo {
                pid,
                ppid,
                pgrp,
                zombie: state == "Z" || state == "X",
            })
        })
        .collect()
}

fn carries_marker(pid: u32, wanted: &dyn Fn(&str) -> bool) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let prefix = format!("{MARKER_ENV}=");
    env.split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .filter_map(|kv| kv.strip_prefix(&prefix))
        .any(wanted)
}

/// Live processes of the tree rooted at `root` or carrying `marker`.
fn tree_of(root: u32, marker: &str) -> Vec<u32> {
    let procs = our_processes();
    let mut members: HashSet<u32> = HashSet::new();
    for p in &procs {
        if p.pgrp == root || carries_marker(p.pid, &|m| m == marker) {
            members.insert(p.pid);
        }
    }
    // Descendants by parent pid, to a fixed point.
    members.insert(root);
    loop {
        let before = members.len();
        for p in &procs {
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
    let pids: Vec<u32> = our_processes()
        .into_iter()
        .filter(|p| !p.zombie && carries_marker(p.pid, &|m| m.starts_with(prefix)))
        .map(|p| p.pid)
        .collect();
    for &p in &pids {
        if let Some(pid) = to_pid(p) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    pids
}

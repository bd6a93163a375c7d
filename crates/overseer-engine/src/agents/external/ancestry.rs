//! Who a session's agent is (the asker's parent, past a `sh -c`) and
//! whether a caller descends from it: a process the agent started may ask,
//! never decide.

use super::*;

impl Engine {
    /// Remembers the agent of a session (the asker's parent, past a shell),
    /// so that processes it starts cannot decide.
    pub(super) fn note_external_agent(&self, asker: u32, run: RunId) {
        let Some(stat) = proc_stat(asker) else { return };
        let mut pid = stat.ppid;
        // Hooks run through `sh -c`: the agent is that shell's parent. An
        // interactive shell (no `-c`) is where a user typed the command by
        // hand: no agent to remember (the user's next command there decides).
        for _ in 0..3 {
            match proc_stat(pid) {
                Some(p) if is_shell(&p.comm) && runs_a_command(pid) && p.ppid > 1 => pid = p.ppid,
                Some(p) if is_shell(&p.comm) => return,
                Some(_) | None => break,
            }
        }
        if pid <= 1 {
            return;
        }
        if let Some(p) = proc_stat(pid) {
            let mut agents = lock(&self.external.agents);
            agents.retain(|pid, (start, _)| proc_stat(*pid).is_some_and(|p| p.start == *start));
            agents.insert(pid, (p.start, run));
        }
    }

    /// The external session whose agent started `pid` (directly or not).
    pub fn external_ancestor(&self, pid: u32) -> Option<RunId> {
        let agents = lock(&self.external.agents).clone();
        if agents.is_empty() {
            return None;
        }
        let mut cur = proc_stat(pid)?.ppid;
        for _ in 0..128 {
            if cur <= 1 {
                return None;
            }
            let stat = proc_stat(cur)?;
            if let Some((start, run)) = agents.get(&cur) {
                if *start == stat.start {
                    return Some(*run);
                }
            }
            cur = stat.ppid;
        }
        None
    }
}

struct ProcStat {
    ppid: u32,
    start: u64,
    comm: String,
}

/// A process's parent, start time and command name, from /proc/PID/stat.
fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcStat {
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        comm,
    })
}

/// Whether the process's arguments include `-c` (a shell running one command).
fn runs_a_command(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.split(|b| *b == 0).any(|arg| arg == b"-c"))
        .unwrap_or(false)
}

fn is_shell(comm: &str) -> bool {
    matches!(comm, "sh" | "bash" | "dash" | "zsh" | "fish" | "ksh")
}

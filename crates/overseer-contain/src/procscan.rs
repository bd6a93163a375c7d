//! Our processes as /proc shows them: one scan shared by everyone who asks
//! at the same time, and each process's marker read once.
//!
//! Stopping an agent polls its process tree every 50 ms until it is gone,
//! and a scan reads two files for every process of ours (its `stat`, and
//! its `environ` for the marker). With a fleet finishing at once, each of 50
//! stops scanned /proc twenty times a second, ~5 ms a scan: more than both
//! cores, and the agents still working waited behind it for their answers.
//!
//! Now a caller gets a scan that *began after it asked*, so nothing started
//! before the call is missing from it, but one scan serves every caller
//! that asked while the previous one ran. A process's marker is read the
//! first time it is seen, and kept for as long as that process lives (a
//! process is its pid and its start time, so a reused pid is read anew; a
//! marker once seen stays, even if the process wipes its environment).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// The variable every process a run starts carries: the run's marker,
/// which finds its processes even when they left its process group.
pub const MARKER_ENV: &str = "OVERSEER_AGENT_MARKER";

/// One process of ours.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub pgrp: u32,
    pub zombie: bool,
    /// Its `OVERSEER_AGENT_MARKER`, if its environment had one.
    pub marker: Option<Arc<str>>,
}

/// A process told apart from a later one with the same pid.
type Identity = (u32, u64);

/// Markers by process, as far as the last scan saw them.
type Markers = HashMap<Identity, Option<Arc<str>>>;

#[derive(Default)]
struct State {
    /// A scan is under way.
    scanning: bool,
    /// Scans begun so far; the number of the latest.
    begun: u64,
    /// The latest finished scan, and its number.
    finished: Option<(u64, Arc<Vec<Proc>>)>,
    /// Markers of the processes the latest scan saw.
    markers: Markers,
}

struct Scanner {
    state: Mutex<State>,
    done: Condvar,
}

fn scanner() -> &'static Scanner {
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    SCANNER.get_or_init(|| Scanner {
        state: Mutex::new(State::default()),
        done: Condvar::new(),
    })
}

impl Scanner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends a scan whatever happens, so that waiters never wait forever.
struct Ending<'a> {
    scanner: &'a Scanner,
    result: Option<(u64, Arc<Vec<Proc>>, Markers)>,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        let mut st = self.scanner.lock();
        st.scanning = false;
        if let Some((number, procs, markers)) = self.result.take() {
            st.finished = Some((number, procs));
            st.markers = markers;
        }
        self.scanner.done.notify_all();
    }
}

/// Every live or zombie process of this user but this one, from a scan of
/// /proc that began after this call did. It blocks: called from a task, the
/// runtime's worker hands its other tasks on first.
pub fn processes() -> Arc<Vec<Proc>> {
    crate::blocking::off_worker(shared_scan)
}

fn shared_scan() -> Arc<Vec<Proc>> {
    let scanner = scanner();
    let mut st = scanner.lock();
    // A scan already under way began before this call: it will not do.
    let wanted = st.begun + 1;
    loop {
        if let Some((number, procs)) = &st.finished {
            if *number >= wanted {
                return procs.clone();
            }
        }
        if !st.scanning {
            st.scanning = true;
            st.begun += 1;
            let number = st.begun;
            let known = std::mem::take(&mut st.markers);
            drop(st);
            let mut ending = Ending {
                scanner,
                result: None,
            };
            let (procs, markers) = scan(&known);
            let shared = Arc::new(procs);
            ending.result = Some((number, shared.clone(), markers));
            drop(ending);
            return shared;
        }
        st = scanner
            .done
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

fn scan(known: &Markers) -> (Vec<Proc>, Markers) {
    let uid = rustix::process::getuid().as_raw();
    let me = std::process::id();
    let mut markers = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return (Vec::new(), markers);
    };
    let procs = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let meta = std::fs::metadata(format!("/proc/{pid}")).ok()?;
            if meta.uid() != uid {
                return None;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command name may hold spaces and parentheses: parse after the last ')'.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let state = *fields.first()?;
            let ppid = fields.get(1)?.parse().ok()?;
            let pgrp = fields.get(2)?.parse().ok()?;
            // Field 22 of the line, the 20th after the name.
            let started: u64 = fields.get(19)?.parse().ok()?;
            let identity = (pid, started);
            let marker = match known.get(&identity) {
                Some(m) => m.clone(),
                None => marker_of(pid).map(Arc::from),
            };
            markers.insert(identity, marker.clone());
            Some(Proc {
                pid,
                ppid,
                pgrp,
                zombie: state == "Z" || state == "X",
                marker,
            })
        })
        .collect();
    (procs, markers)
}

/// The marker in a process's environment, if it has one.
pub fn marker_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{MARKER_ENV}=");
    env.split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .find_map(|kv| kv.strip_prefix(&prefix))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::MARKER_ENV;
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn marked_sleep(marker: &str) -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .env(MARKER_ENV, marker)
            .spawn()
            .expect("sleep")
    }

    /// A child started before the call is in the scan, with its marker; a
    /// later call sees it gone.
    #[test]
    fn a_scan_sees_a_process_started_before_the_call_and_its_marker() {
        let mut child = marked_sleep("procscan-test-marker");
        let pid = child.id();
        let seen = processes();
        let it = seen.iter().find(|p| p.pid == pid).expect("the child");
        assert_eq!(it.ppid, std::process::id());
        assert_eq!(it.marker.as_deref(), Some("procscan-test-marker"));
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            !processes().iter().any(|p| p.pid == pid),
            "a reaped child is gone from the next scan"
        );
    }

    /// While other threads keep scans under way, a call never gets one that
    /// began before it: the process started just before the call is there.
    #[test]
    fn a_scan_under_way_when_asked_is_not_the_answer() {
        let stop = Arc::new(AtomicBool::new(false));
        let busy: Vec<_> = (0..3)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = processes();
                    }
                })
            })
            .collect();
        for round in 0..20 {
            let mut child = marked_sleep(&format!("procscan-fresh-{round}"));
            let pid = child.id();
            let found = processes().iter().any(|p| p.pid == pid);
            let _ = child.kill();
            let _ = child.wait();
            assert!(
                found,
                "round {round}: the child started before the call is missing"
            );
        }
        stop.store(true, Ordering::Relaxed);
        for t in busy {
            t.join().expect("join");
        }
    }
}

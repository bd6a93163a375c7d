//! Where children are forked: one thread of the engine's own that lives as
//! long as the engine.
//!
//! Everything a run starts is told to die with the engine
//! (`PR_SET_PDEATHSIG`, [`crate::process::die_with_parent`]). The kernel's
//! "parent" there is the *thread* that forked the child, not the process: a
//! child forked on a thread that later exits gets SIGKILL at that moment.
//! The runtime's threads come and go (a worker that hands its work on
//! around a blocking call, `block_in_place`, ends up in the blocking pool,
//! whose idle threads exit after a few seconds), so a fork on one of them
//! could kill a healthy agent minutes later. Forking here instead, on a
//! thread that never exits, keeps "dies with the engine" meaning exactly
//! that; the caller awaits the fork without holding up its runtime.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use tokio::process::{Child, Command};

type Job = Box<dyn FnOnce() + Send>;

/// The launcher thread's queue (started on first use).
fn queue() -> std::io::Result<mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Mutex<Option<mpsc::Sender<Job>>>> = OnceLock::new();
    let slot = QUEUE.get_or_init(|| Mutex::new(None));
    let mut slot = slot
        .lock()
        .map_err(|_| std::io::Error::other("the launcher's queue is poisoned"))?;
    if let Some(tx) = slot.as_ref() {
        return Ok(tx.clone());
    }
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("overseer-launcher".to_owned())
        .spawn(move || {
            // Never returns while the engine may send: the sender is kept
            // in a static.
            for job in rx {
                job();
            }
        })?;
    *slot = Some(tx.clone());
    Ok(tx)
}

/// Forks and execs `cmd` on the launcher thread, in the caller's runtime
/// (its pipes and its exit are that runtime's). Must be called from inside
/// a tokio runtime.
pub async fn spawn(mut cmd: Command) -> std::io::Result<Child> {
    let handle = tokio::runtime::Handle::try_current().map_err(|_| {
        std::io::Error::other("a child can only be started from inside the engine's runtime")
    })?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _in_runtime = handle.enter();
        let spawned = cmd.spawn();
        // The caller gave up (its task was cancelled): the child is
        // dropped here, and killed (`kill_on_drop`) if it asked to be.
        let _ = tx.send(spawned);
    });
    queue()?
        .send(job)
        .map_err(|_| std::io::Error::other("the launcher thread is gone"))?;
    rx.await
        .map_err(|_| std::io::Error::other("the launcher thread dropped the start"))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A child started from a thread that exits right after is still
    /// alive a while later: the fork happened on the launcher thread,
    /// and dies-with-parent follows that one.
    #[test]
    fn a_child_outlives_the_thread_that_asked_for_it() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let handle = rt.handle().clone();
        let child = std::thread::spawn(move || {
            handle.block_on(async {
                let mut cmd = Command::new("sleep");
                cmd.arg("30").kill_on_drop(true);
                crate::child::die_with_parent(&mut cmd);
                spawn(cmd).await.expect("sleep starts")
            })
        })
        .join()
        .expect("the asking thread ended");
        let pid = child.id().expect("a pid");
        std::thread::sleep(Duration::from_millis(500));
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .unwrap_or("gone");
        assert!(
            !matches!(state, "Z" | "X" | "gone"),
            "the child died with the thread that asked for it (state {state})"
        );
        drop(child);
    }
}

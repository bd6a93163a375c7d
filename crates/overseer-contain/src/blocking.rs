//! Blocking calls made from async tasks.
//!
//! The orchestrator answers every agent on a runtime with one worker per
//! core (two on the machines we measure). Much of the engine is sync: a
//! write waits for its group's commit, git runs as a child process. Called
//! from a task, such a call held its worker for its whole duration, and
//! every other agent's messages queued behind it: with 50 agents, a tool
//! call a rule answers in a millisecond waited behind other runs' git
//! commands and commits (p99 0.9 s, `make bench`).

/// Runs `f`, which blocks, without holding up the runtime's other tasks:
/// on a multi-thread runtime's worker the worker hands its other tasks on
/// first (`block_in_place`); anywhere else (a plain thread, a blocking
/// task, a current-thread runtime, which cannot hand them on) it just runs.
pub fn off_worker<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::off_worker;
    use std::time::{Duration, Instant};

    /// While one task blocks in `off_worker`, a task spawned on the same
    /// single-worker runtime still runs: the blocked worker handed it on.
    #[test]
    fn a_blocking_call_does_not_hold_up_the_other_tasks() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let (tx, rx) = std::sync::mpsc::channel::<Instant>();
            let blocked =
                tokio::spawn(
                    async move { off_worker(|| rx.recv_timeout(Duration::from_secs(10))) },
                );
            // Give the blocking task the one worker first.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let other = tokio::spawn(async move {
                tx.send(Instant::now()).expect("send");
            });
            other.await.expect("the other task ran");
            assert!(
                blocked.await.expect("join").is_ok(),
                "the blocked call got its answer"
            );
        });
    }

    #[test]
    fn outside_a_runtime_and_on_a_current_thread_runtime_it_just_runs() {
        assert_eq!(off_worker(|| 7), 7);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        assert_eq!(rt.block_on(async { off_worker(|| 8) }), 8);
    }
}

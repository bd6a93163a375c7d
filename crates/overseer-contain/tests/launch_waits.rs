//! A run's launch waits for its sandbox's private network without holding
//! up the runtime it is started from: the engine answers every other run
//! (and every subscribed client) on that runtime meanwhile.
//!
//! Real bubblewrap, a real FIFO and a real child process; the network
//! helper is a script standing in for slirp4netns (`OVERSEER_SLIRP4NETNS`,
//! read once per process: this file is its own test binary) that says
//! "ready" only once another task of the launching runtime has written to
//! its FIFO. On a current-thread runtime that task can only run while the
//! launch is awaiting: a launch that sleeps on its thread instead never
//! sees the network come up (10 s, then "not ready").

mod common;

use overseer_contain::process;
use std::time::Duration;

#[tokio::test(flavor = "current_thread")]
async fn a_launch_waiting_for_its_network_lets_the_runtime_run_other_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("go");
    common::fifo(&fifo);
    common::network_helper(
        dir.path(),
        &format!(
            "{}read go < '{}'\necho 1 > /dev/fd/$fd\n",
            common::READY_FD,
            fifo.display()
        ),
    );
    let spec = common::sandboxed_sh(dir.path(), "launch", "echo up");
    let released = tokio::spawn({
        let fifo = fifo.clone();
        async move { common::let_go(&fifo).await }
    });
    let captured =
        process::run_captured(&spec, Duration::from_secs(30), Duration::from_secs(1), 4096)
            .await
            .expect("the sandbox starts once its network is up");
    assert!(
        released.is_finished(),
        "the other task ran during the launch"
    );
    assert_eq!(
        String::from_utf8_lossy(&captured.stdout).trim(),
        "up",
        "the agent ran: {}",
        String::from_utf8_lossy(&captured.stderr)
    );
}

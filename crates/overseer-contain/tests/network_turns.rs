//! A fleet's sandboxes set up their private networks a few at a time (two
//! per core): all of a 1,000-run wave at once, every set-up ran past its
//! 10 s limit and every run failed.
//!
//! Real bubblewrap, real FIFOs and real child processes; the network helper
//! is a script standing in for slirp4netns (`OVERSEER_SLIRP4NETNS`, read
//! once per process: this file is its own test binary) that marks when it
//! started and when it was let go, and waits for the test in between. The
//! test lets the waiting helpers go only once as many as may be in flight
//! are waiting, and checks that no more than that ever started.

mod common;

use overseer_contain::process;
use std::path::Path;
use std::time::{Duration, Instant};

fn count(dir: &Path, prefix: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxes_set_up_their_networks_a_few_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marks = dir.path().join("marks");
    std::fs::create_dir_all(&marks).expect("marks");
    let fifo = dir.path().join("go");
    common::fifo(&fifo);
    common::network_helper(
        dir.path(),
        &format!(
            "{}: > '{m}/started.'$$\nread go < '{f}'\n: > '{m}/done.'$$\necho 1 > /dev/fd/$fd\n",
            common::READY_FD,
            m = marks.display(),
            f = fifo.display()
        ),
    );
    let spec = common::sandboxed_sh(dir.path(), "turns", "echo up");
    let at_once = 2 * std::thread::available_parallelism().map_or(1, |n| n.get());
    let runs = 2 * at_once + 1;
    let launches: Vec<_> = (0..runs)
        .map(|i| {
            let mut spec = spec.clone();
            spec.marker = format!("{}-{i}", spec.marker);
            tokio::spawn(async move {
                process::run_captured(&spec, Duration::from_secs(60), Duration::from_secs(1), 4096)
                    .await
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut most = 0;
    loop {
        let (started, done) = (count(&marks, "started."), count(&marks, "done."));
        if done == runs {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {runs} networks up after 120 s"
        );
        let waiting = started - done;
        most = most.max(waiting);
        assert!(
            waiting <= at_once,
            "{waiting} sandboxes set up their network at once (at most {at_once})"
        );
        if waiting == at_once.min(runs - done) {
            // As many as may be in flight wait: give any more time to start
            // (they would, had they not to wait for a turn), then check.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let waiting = count(&marks, "started.") - done;
            assert!(
                waiting <= at_once,
                "{waiting} sandboxes set up their network at once (at most {at_once})"
            );
            common::let_go(&fifo).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(most, at_once, "the turns were used");
    for launch in launches {
        let captured = launch
            .await
            .expect("joined")
            .expect("the sandbox starts once its network is up");
        assert_eq!(String::from_utf8_lossy(&captured.stdout).trim(), "up");
    }
}

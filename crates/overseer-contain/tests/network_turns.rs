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

use overseer_contain::net::NetworkMode;
use overseer_contain::process::{self, AgentSpec};
use overseer_contain::{bwrap, SandboxInputs};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

fn count(dir: &Path, prefix: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .count()
        })
        .unwrap_or(0)
}

/// Lets every helper waiting on `fifo` go: opened for writing (once one
/// waits), written and closed.
async fn let_go(fifo: &Path) {
    loop {
        match tokio::net::unix::pipe::OpenOptions::new().open_sender(fifo) {
            Ok(mut w) => {
                w.write_all(b"go\n").await.expect("write to the FIFO");
                return;
            }
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => panic!("cannot open the FIFO: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxes_set_up_their_networks_a_few_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marks = dir.path().join("marks");
    std::fs::create_dir_all(&marks).expect("marks");
    let fifo = dir.path().join("go");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let helper = dir.path().join("fake-slirp4netns");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --ready-fd=*) fd=${{a#--ready-fd=}};; esac; done\n\
             : > '{m}/started.'$$\nread go < '{f}'\n: > '{m}/done.'$$\necho 1 > /dev/fd/$fd\n",
            m = marks.display(),
            f = fifo.display()
        ),
    )
    .expect("helper script");
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::env::set_var("OVERSEER_SLIRP4NETNS", &helper);
    assert!(
        overseer_contain::net::helper().is_some(),
        "the stand-in network helper is taken"
    );
    let (data, config, worktree) = (
        dir.path().join("data"),
        dir.path().join("config"),
        dir.path().join("wt"),
    );
    for d in [&data, &config, &worktree] {
        std::fs::create_dir_all(d).expect("dir");
    }
    let path = std::env::var("PATH").ok();
    let plan = bwrap::plan(&SandboxInputs {
        bwrap: overseer_contain::probe()
            .bwrap()
            .expect("bubblewrap works on the machines these tests run on")
            .to_owned(),
        data_dir: data,
        config_dir: config,
        host_path: path.clone(),
        worktree: worktree.clone(),
        program: process::resolve_program(Path::new("sh"), path.as_deref()),
        network: NetworkMode::Private,
        ..SandboxInputs::default()
    })
    .expect("plan");
    let at_once = 2 * std::thread::available_parallelism().map_or(1, |n| n.get());
    let runs = 2 * at_once + 1;
    let launches: Vec<_> = (0..runs)
        .map(|i| {
            let spec = AgentSpec {
                program: "sh".into(),
                args: vec!["-c".into(), "echo up".into()],
                env: Vec::new(),
                cwd: worktree.clone(),
                marker: format!("overseer-test-turns-{}-{i}", std::process::id()),
                sandbox: Some(plan.clone()),
                cgroup: None,
            };
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
            let_go(&fifo).await;
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

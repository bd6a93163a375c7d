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

use overseer_contain::net::NetworkMode;
use overseer_contain::process::{self, AgentSpec};
use overseer_contain::{bwrap, SandboxInputs};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

fn helper_script(dir: &Path, fifo: &Path) -> std::path::PathBuf {
    let path = dir.join("fake-slirp4netns");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --ready-fd=*) fd=${{a#--ready-fd=}};; esac; done\n\
             read go < '{}'\necho 1 > /dev/fd/$fd\n",
            fifo.display()
        ),
    )
    .expect("helper script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// Opens `fifo` for writing once its reader is there (the helper), and
/// says "go".
async fn release(fifo: &Path) {
    loop {
        match tokio::net::unix::pipe::OpenOptions::new().open_sender(fifo) {
            Ok(mut w) => {
                w.write_all(b"go\n").await.expect("write to the FIFO");
                return;
            }
            // No reader yet.
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => panic!("cannot open the FIFO: {e}"),
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_launch_waiting_for_its_network_lets_the_runtime_run_other_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("go");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    std::env::set_var("OVERSEER_SLIRP4NETNS", helper_script(dir.path(), &fifo));
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
    assert_eq!(plan.network, NetworkMode::Private);
    let spec = AgentSpec {
        program: "sh".into(),
        args: vec!["-c".into(), "echo up".into()],
        env: Vec::new(),
        cwd: worktree,
        marker: format!("overseer-test-launch-{}", std::process::id()),
        sandbox: Some(plan),
        cgroup: None,
    };
    let released = tokio::spawn({
        let fifo = fifo.clone();
        async move { release(&fifo).await }
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

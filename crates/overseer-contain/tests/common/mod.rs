//! Shared by the tests that launch a real sandbox with a private network
//! whose helper is a script standing in for slirp4netns.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use overseer_contain::net::NetworkMode;
use overseer_contain::process::{self, AgentSpec};
use overseer_contain::{bwrap, SandboxInputs};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Makes `body` (a `/bin/sh` script: it runs with an empty environment)
/// the network helper of this test binary (`OVERSEER_SLIRP4NETNS` is read
/// once per process: one test per binary).
pub fn network_helper(dir: &Path, body: &str) {
    let path = dir.join("fake-slirp4netns");
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("helper script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::env::set_var("OVERSEER_SLIRP4NETNS", &path);
    assert!(
        overseer_contain::net::helper().is_some(),
        "the stand-in network helper is taken"
    );
}

/// The shell line that finds the helper's `--ready-fd` (as `$fd`).
pub const READY_FD: &str =
    "for a in \"$@\"; do case \"$a\" in --ready-fd=*) fd=${a#--ready-fd=};; esac; done\n";

/// A FIFO at `path`.
pub fn fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// Lets every helper waiting on `fifo` go: opened for writing once one
/// waits, written and closed.
pub async fn let_go(fifo: &Path) {
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

/// A sandbox with a private network under `dir` that runs `sh -c script`
/// in its worktree (marker `overseer-test-<name>-<pid>`).
pub fn sandboxed_sh(dir: &Path, name: &str, script: &str) -> AgentSpec {
    let (data, config, worktree): (PathBuf, PathBuf, PathBuf) =
        (dir.join("data"), dir.join("config"), dir.join("wt"));
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
    AgentSpec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: Vec::new(),
        cwd: worktree,
        marker: format!("overseer-test-{name}-{}", std::process::id()),
        sandbox: Some(plan),
        cgroup: None,
    }
}

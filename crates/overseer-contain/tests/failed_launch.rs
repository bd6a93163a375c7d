//! A launch whose sandbox cannot get its network fails with the reason and
//! leaves nothing behind: its run's cgroup is gone. (A 1,000-run wave whose
//! network set-ups all timed out left 2,994 cgroup directories.)
//!
//! Real bubblewrap and a real cgroup; the network helper is a script
//! standing in for slirp4netns that exits at once (`OVERSEER_SLIRP4NETNS`,
//! read once per process: this file is its own test binary).

use overseer_contain::net::NetworkMode;
use overseer_contain::process::{self, AgentSpec, ProcessError};
use overseer_contain::{bwrap, RunCgroup, SandboxInputs};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

#[tokio::test]
async fn a_launch_that_fails_removes_its_cgroup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let helper = dir.path().join("fake-slirp4netns");
    std::fs::write(&helper, "#!/bin/sh\necho 'no network today' >&2\nexit 1\n").expect("helper");
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::env::set_var("OVERSEER_SLIRP4NETNS", &helper);
    let probe = overseer_contain::probe();
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
        bwrap: probe
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
    let root = probe
        .cgroup_base()
        .expect("cgroup v2 is writable on the machines these tests run on")
        .join(format!(
            "overseer-test-{}-failed-launch",
            std::process::id()
        ));
    let cg = RunCgroup::create(&root, "run-1", None).expect("cgroup");
    let spec = AgentSpec {
        program: "sh".into(),
        args: vec!["-c".into(), "sleep 600".into()],
        env: Vec::new(),
        cwd: worktree,
        marker: format!("overseer-test-failed-{}", std::process::id()),
        sandbox: Some(plan),
        cgroup: Some(cg.clone()),
    };
    let err = process::spawn(&spec)
        .await
        .expect_err("no network, no start");
    assert!(
        matches!(&err, ProcessError::Network(why) if why.contains("no network today")),
        "{err}"
    );
    let gone = !cg.path().exists();
    let _ = cg.remove();
    let _ = std::fs::remove_dir(&root);
    assert!(gone, "the failed launch left its cgroup behind");
}

//! A launch whose sandbox cannot get its network fails with the reason and
//! leaves nothing behind: its run's cgroup is gone. (A 1,000-run wave whose
//! network set-ups all timed out left 2,994 cgroup directories.)
//!
//! Real bubblewrap and a real cgroup; the network helper is a script
//! standing in for slirp4netns that exits at once (`OVERSEER_SLIRP4NETNS`,
//! read once per process: this file is its own test binary).

mod common;

use overseer_contain::process::{self, ProcessError};
use overseer_contain::RunCgroup;

#[tokio::test]
async fn a_launch_that_fails_removes_its_cgroup() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::network_helper(dir.path(), "echo 'no network today' >&2\nexit 1\n");
    let root = overseer_contain::probe()
        .cgroup_base()
        .expect("cgroup v2 is writable on the machines these tests run on")
        .join(format!(
            "overseer-test-{}-failed-launch",
            std::process::id()
        ));
    let cg = RunCgroup::create(&root, "run-1", None).expect("cgroup");
    let mut spec = common::sandboxed_sh(dir.path(), "failed", "sleep 600");
    spec.cgroup = Some(cg.clone());
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

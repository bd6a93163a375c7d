//! A small filesystem of its own for the full-disk tests (issue 25, item 5):
//! a tmpfs mounted as a world's data dir, which a run's real child fills.
//!
//! Mounting needs root. As root the test mounts it directly (CI); as any
//! other user the test re-runs itself (`--exact`) in a user and mount
//! namespace of its own (`unshare --user --map-root-user --mount`), where
//! that user is root over its own mounts: the tmpfs is mounted there, and
//! bubblewrap still makes the run's sandbox inside (a nested user
//! namespace). Nothing is skipped: a machine that allows neither fails the
//! test with what to fix.

use super::Captured;
use overseer_core::{ActivityView, RunId};
use overseer_engine::{Engine, NotificationKind};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the re-run test, inside its namespaces.
const IN_NAMESPACE: &str = "OVERSEER_TEST_MOUNT_NAMESPACE";

/// True when this process may mount a tmpfs (root, or already inside the
/// namespaces): the test goes on. Otherwise runs the test `name` (its
/// whole name in this binary, `module::test`) in a user and mount namespace, fails unless it passed there, and
/// returns false: the caller returns at once (the test ran, in there).
pub fn may_mount(name: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var_os(IN_NAMESPACE).is_none(),
        "inside the user namespace this test is not root: its uid map was not written"
    );
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "--"])
        .arg(&exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(IN_NAMESPACE, "1")
        .output()
        .unwrap_or_else(|e| {
            panic!("unshare (util-linux) could not be run: {e}; install util-linux or run as root")
        });
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    eprintln!("--- {name}, re-run in a user and mount namespace ---\n{stdout}\n{stderr}");
    assert!(
        out.status.success(),
        "{name} failed in its user and mount namespace ({}); if unshare itself failed, this \
         machine refuses unprivileged user namespaces, which bubblewrap needs too",
        out.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the re-run ran no test named {name}: {stdout}"
    );
    false
}

/// A tmpfs mounted for the test, lazily unmounted when dropped.
pub struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A filesystem of `size` mounted at `dir` (after [`may_mount`]).
pub fn small_disk(dir: &Path, size: &str) -> Mounted {
    std::fs::create_dir_all(dir).expect("mount point");
    let status = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0700"),
            "tmpfs",
        ])
        .arg(dir)
        .status()
        .expect("run mount");
    assert!(
        status.success(),
        "mount -t tmpfs at {} failed as root",
        dir.display()
    );
    Mounted(dir.to_owned())
}

impl Captured {
    /// The notifications that the disk is nearly full.
    pub fn disk_full(&self) -> usize {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|n| n.kind == NotificationKind::DiskFull)
            .inspect(|n| assert!(n.title.contains("disk is nearly full"), "{n:?}"))
            .count()
    }
}

/// Whether the kernel says the cgroup `dir` is frozen (`frozen 1` in its
/// `cgroup.events`): its processes run nothing until thawed.
pub fn kernel_froze(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events"))
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "frozen 1"))
}

/// Waits (polling: a full disk may keep the engine from publishing) until
/// `pred` holds.
pub async fn eventually<T>(what: &str, secs: u64, mut pred: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = pred() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The disk holding `dir` is full: less than a page is left.
pub async fn until_full(dir: &Path) {
    eventually("the run's child to fill the disk", 60, || {
        (overseer_engine::disk::free_bytes(dir).expect("statvfs") < 8192).then_some(())
    })
    .await;
}

/// The run's first timeline entry of `kind` whose payload holds `text`:
/// where it is in the timeline (its id) says what came first.
pub fn entry(engine: &Engine, run: RunId, kind: &str, text: &str) -> Option<ActivityView> {
    engine
        .activity(run, 0)
        .unwrap_or_default()
        .into_iter()
        .find(|a| a.kind() == kind && a.payload().to_string().contains(text))
}

/// The titles of the run's notices (pause, resume).
pub fn notices(engine: &Engine, run: RunId) -> Vec<String> {
    engine
        .activity(run, 0)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.kind() == "notice")
        .map(|a| a.payload()["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

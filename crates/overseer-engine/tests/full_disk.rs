//! A full disk pauses runs, never strands one (issue 25, item 5).
//!
//! The data dir is a small filesystem of its own (a tmpfs mounted for the
//! test: that needs root, which CI has; as another user the tests say
//! loudly that they were skipped). A run's real child process fills it from
//! the run's worktree, as a hostile test script would; the engine is real,
//! on a real SQLite file, with a real git repository.

mod common;
use common::Captured;
#[path = "common/scripted.rs"]
mod scripted;

use common::{start_as, until, world_in, World};
use overseer_acp::{PermissionReply, ToolCallInfo};
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, GateKind, ReleaseReason, RunId, RunState};
use overseer_engine::disk::{free_bytes, RESERVE_FILE};
use overseer_engine::NotificationKind;
use overseer_store::{TaskSettings, WorkspaceSettings};
use scripted::{Act, Script, Scripted, Turn};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Captured {
    /// The notifications that the disk is nearly full.
    fn disk_full(&self) -> usize {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|n| n.kind == NotificationKind::DiskFull)
            .inspect(|n| assert!(n.title.contains("disk is nearly full"), "{n:?}"))
            .count()
    }
}

/// A tmpfs mounted for the test, lazily unmounted when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A filesystem of `size` mounted at `dir`. None, said loudly, when this
/// user cannot mount (not root); as root a failing mount fails the test.
fn small_disk(dir: &Path, size: &str) -> Option<Mounted> {
    std::fs::create_dir_all(dir).expect("mount point");
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "\n*** SKIPPED: the full-disk tests mount a small tmpfs, which needs root \
             (CI runs them as root); nothing of the full-disk behaviour was checked ***\n"
        );
        return None;
    }
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
    Some(Mounted(dir.to_owned()))
}

/// A world whose data dir is a `size` tmpfs, with `extra_config` in its
/// overseer.toml and scripted sessions from `script`.
async fn world_on_small_disk(
    size: &str,
    extra_config: &str,
    settings: WorkspaceSettings,
    notifier: Arc<Captured>,
    script: &Arc<Script>,
) -> Option<(World, Mounted)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mounted = small_disk(&dir.path().join("data"), size)?;
    let w = world_in(dir, settings, notifier, extra_config).await;
    w.engine
        .use_agent_sessions(Arc::new(Scripted(script.clone())));
    Some((w, mounted))
}

fn data_dir(w: &World) -> PathBuf {
    w.engine.paths().data_dir.clone()
}

fn worktree(w: &World, run: RunId) -> PathBuf {
    w.engine.worktree_path("demo", run)
}

/// Waits (polling: a full disk may keep the engine from publishing) until
/// `pred` holds.
async fn eventually<T>(what: &str, secs: u64, mut pred: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = pred() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The disk is full: less than a page is left.
async fn until_full(w: &World) {
    let dir = data_dir(w);
    eventually("the run's child to fill the disk", 60, || {
        (free_bytes(&dir).expect("statvfs") < 8192).then_some(())
    })
    .await;
}

/// The titles of the run's notices (pause, resume).
fn notices(w: &World, run: RunId) -> Vec<String> {
    w.engine
        .activity(run, 0)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.kind() == "notice")
        .map(|a| a.payload()["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn read_call() -> ToolCallInfo {
    ToolCallInfo {
        id: "read-1".to_owned(),
        title: Some("Read src/greeting.txt".to_owned()),
        kind: Some(overseer_core::ToolKind::Read),
        status: Some(overseer_core::ToolCallStatus::Pending),
        raw_input: Some(serde_json::json!({"path": "src/greeting.txt"})),
        ..Default::default()
    }
}

fn skip_plan() -> TaskSettings {
    TaskSettings {
        plan: Some(PlanStrategy::Skip),
        ..Default::default()
    }
}

/// The agent's process: waits for `go` in its worktree, then fills the
/// disk from there (as a test script the agent runs would), then idles.
const FILLER: &str = r#"
[disk]
floor = "16M"
reserve = "8M"

[agents.filler]
command = "/bin/sh"
args = ["-c", "while [ ! -e go ]; do sleep 0.05; done; cat /dev/zero > fill 2>/dev/null; exec sleep 600"]
mode = "default"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fills_the_disk_pauses_the_fleet_and_it_resumes_when_space_returns() {
    let script = Script::new(vec![Turn::new(vec![
        Act::Question {
            message: "Shall I run the test suite?".to_owned(),
            schema: serde_json::json!({"type": "object", "properties": {"ok": {"type": "string"}}}),
        },
        // A read: the default rules allow it, and that allow is recorded.
        Act::Ask(read_call()),
        Act::Say("Done.".to_owned()),
    ])]);
    let notified = Arc::new(Captured::default());
    let Some((w, mounted)) = world_on_small_disk(
        "64m",
        FILLER,
        WorkspaceSettings::default(),
        notified.clone(),
        &script,
    )
    .await
    else {
        return;
    };
    let reserve = data_dir(&w).join(RESERVE_FILE);
    assert_eq!(
        std::fs::metadata(&reserve).expect("the reserve").len(),
        8 << 20,
        "the engine keeps its reserve on the data dir's filesystem"
    );
    let run = start_as(&w, "filler", "none", skip_plan());
    let question = common::pending_gate(&w, run, GateKind::Question).await;

    // The run's child fills the disk from its worktree.
    std::fs::write(worktree(&w, run).join("go"), "").expect("go");
    until_full(&w).await;

    // A decision is recorded, or refused cleanly and recorded on the retry
    // (the first full write frees the reserve for it).
    let mut refused = Vec::new();
    let decided = loop {
        match w.engine.decide_gate(
            question.id,
            "answer",
            Some(r#"{"ok": "yes"}"#),
            &Actor::cli(),
        ) {
            Ok(g) => break g,
            Err(e) => {
                assert!(
                    e.message.contains("is full") && e.message.contains("Nothing was changed"),
                    "a full disk refuses a decision cleanly: {}",
                    e.message
                );
                refused.push(e.message);
                assert!(
                    refused.len() < 3,
                    "the reserve gives the retry room: {refused:?}"
                );
            }
        }
    };
    assert!(decided.decision.is_some(), "the answer is recorded");
    if !refused.is_empty() {
        assert!(!reserve.exists(), "the reserve was freed for the retry");
    }

    // Below the floor the run is paused: on its timeline, and one
    // notification.
    eventually("the pause on the run's timeline", 20, || {
        notices(&w, run)
            .iter()
            .any(|t| t.starts_with("Paused"))
            .then_some(())
    })
    .await;
    assert_eq!(notified.disk_full(), 1);
    // It takes no new work: the agent's tool call waits for its answer;
    // the run is neither failed nor stranded.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        script.answers().is_empty(),
        "no answer while paused: {:?}",
        script.answers()
    );
    assert_eq!(w.engine.run(run).expect("run").state, RunState::Running);

    // Space returns: the run resumes by itself, its allow is recorded and
    // given, and it finishes.
    std::fs::remove_file(worktree(&w, run).join("fill")).expect("delete the filler");
    eventually("the run to finish after the disk had room", 60, || {
        (w.engine.run(run).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
    assert_eq!(
        script.answers(),
        [(
            "read-1".to_owned(),
            PermissionReply::Selected {
                option_id: "opt-allow_once".to_owned()
            }
        )]
    );
    let kinds: Vec<String> = w
        .engine
        .activity(run, 0)
        .expect("activity")
        .iter()
        .map(|a| a.kind())
        .collect();
    assert!(kinds.contains(&"tool_allowed".to_owned()), "{kinds:?}");
    let titles = notices(&w, run);
    assert!(
        titles.iter().any(|t| t.starts_with("Resumed")),
        "{titles:?}"
    );
    assert_eq!(notified.disk_full(), 1, "one notification");
    assert_eq!(
        std::fs::metadata(&reserve)
            .expect("the reserve, again")
            .len(),
        8 << 20,
        "the reserve is allocated again once there is room"
    );
    drop(w);
    drop(mounted);
}

/// No reserve at all (or one already taken): the sensor, a real child of
/// the run, fills the disk and the run's failure cannot be written. It is
/// retried, and written once there is room: the run never stays `running`
/// with nothing driving it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_that_cannot_be_written_is_retried_until_it_is() {
    let script = Script::new(vec![Turn::new(vec![Act::Say("Done.".to_owned())])]);
    let notified = Arc::new(Captured::default());
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep");
    let config = format!(
        "[disk]\nfloor = \"4M\"\nreserve = 0\n\n[agents.scripted]\ncommand = {sleep:?}\nargs = [\"600\"]\nmode = \"default\"\n"
    );
    let Some((w, mounted)) = world_on_small_disk(
        "48m",
        &config,
        WorkspaceSettings {
            sensors: vec!["cat /dev/zero > fill".to_owned()],
            ..Default::default()
        },
        notified.clone(),
        &script,
    )
    .await
    else {
        return;
    };
    let run = start_as(&w, "scripted", "none", skip_plan());
    until_full(&w).await;
    // Nothing can be written: the run's end waits, its driver retrying.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !w.engine.run(run).expect("run").state.is_released(),
        "nothing could be written yet"
    );

    std::fs::remove_file(worktree(&w, run).join("fill")).expect("delete the filler");
    let end = until(&w, "the run's failure to be written", |e| {
        let s = e.run(run).ok()?.state;
        s.is_released().then_some(s)
    })
    .await;
    assert_eq!(
        end,
        RunState::Released {
            reason: ReleaseReason::Failed
        }
    );
    assert_eq!(notified.disk_full(), 1, "one notification for the pause");
    drop(w);
    drop(mounted);
}

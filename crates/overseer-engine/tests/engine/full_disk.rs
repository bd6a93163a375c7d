//! A full disk pauses runs, never strands one (issue 25, item 5).
//!
//! The data dir is a small filesystem of its own (a tmpfs mounted for the
//! test: as root directly, as any other user in a user and mount namespace
//! the test re-runs itself in, see `common/disk.rs`). A run's real child
//! process fills it from the run's worktree, as a hostile test script
//! would; the engine is real, on a real SQLite file, with a real git
//! repository. (`security.rs` makes the same attack from a real child of
//! claude-agent-acp.)

use crate::common;
use crate::common::scripted;
use common::Captured;

use common::disk::{
    entry, eventually, kernel_froze, may_mount, notices, small_disk, until_full, Mounted,
};
use common::{start_as, until, world_in, World};
use overseer_acp::{PermissionReply, ToolCallInfo};
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, GateKind, ReleaseReason, RunId, RunState};
use overseer_engine::disk::RESERVE_FILE;
use overseer_store::{TaskSettings, WorkspaceSettings};
use scripted::{Act, Script, Scripted, Turn};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A world whose data dir is a `size` tmpfs, with `extra_config` in its
/// overseer.toml and scripted sessions from `script`.
async fn world_on_small_disk(
    size: &str,
    extra_config: &str,
    settings: WorkspaceSettings,
    notifier: Arc<Captured>,
    script: &Arc<Script>,
) -> (World, Mounted) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mounted = small_disk(&dir.path().join("data"), size);
    let w = world_in(dir, settings, notifier, extra_config).await;
    w.engine
        .use_agent_sessions(Arc::new(Scripted(script.clone())));
    (w, mounted)
}

fn data_dir(w: &World) -> PathBuf {
    w.engine.paths().data_dir.clone()
}

fn worktree(w: &World, run: RunId) -> PathBuf {
    w.engine.worktree_path("demo", run)
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
    if !may_mount(
        "full_disk::a_run_that_fills_the_disk_pauses_the_fleet_and_it_resumes_when_space_returns",
    ) {
        return;
    }
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
    let (w, mounted) = world_on_small_disk(
        "64m",
        FILLER,
        WorkspaceSettings::default(),
        notified.clone(),
        &script,
    )
    .await;
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
    until_full(&data_dir(&w)).await;

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
    // (The timeline first, then the notification: wait for both.)
    eventually("the pause on the run's timeline, and told", 20, || {
        (notices(&w.engine, run)
            .iter()
            .any(|t| t.starts_with("Paused"))
            && notified.disk_full() > 0)
            .then_some(())
    })
    .await;
    assert_eq!(notified.disk_full(), 1);
    // It takes no new work: the agent's tool call waits for its answer (its
    // timeline says so); the run is neither failed nor stranded.
    let waiting = until(&w, "the read to wait for room", |e| {
        entry(e, run, "notice", "src/greeting.txt: its answer waits")
    })
    .await;
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
    // The timeline says the run resumed before anything of its new work.
    let resumed = entry(&w.engine, run, "notice", "Resumed").expect("resumed");
    let allowed = entry(&w.engine, run, "tool_allowed", "greeting.txt").expect("allowed");
    assert!(
        waiting.id < resumed.id && resumed.id < allowed.id,
        "waiting #{}, resumed #{}, allowed #{}",
        waiting.id,
        resumed.id,
        allowed.id
    );
    assert_eq!(notified.disk_full(), 1, "one notification");
    assert_eq!(
        std::fs::metadata(&reserve)
            .expect("the reserve, again")
            .len(),
        8 << 20,
        "the reserve is allocated again once there is room"
    );
    // Lazily unmounted first, so the temp dir under it can be removed.
    drop(mounted);
    drop(w);
}

/// No reserve at all (or one already taken): the sensor, a real child of
/// the run, fills the disk and fails. Nothing of that failure is written on
/// the full disk, half or whole (its result lost, or the run failed for a
/// deviation gate it could not write): the run waits, paused, its driver
/// holding the result. Once there is room the run says it resumed, then
/// records the check's result and asks the user how to go on; "stop" ends
/// it failed. The run never stays `running` with nothing driving it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_fills_the_disk_is_weighed_once_there_is_room() {
    if !may_mount("full_disk::a_check_that_fills_the_disk_is_weighed_once_there_is_room") {
        return;
    }
    let script = Script::new(vec![Turn::new(vec![Act::Say("Done.".to_owned())])]);
    let notified = Arc::new(Captured::default());
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep");
    let config = format!(
        "[disk]\nfloor = \"4M\"\nreserve = 0\n\n[agents.scripted]\ncommand = {sleep:?}\nargs = [\"600\"]\nmode = \"default\"\n"
    );
    let (w, mounted) = world_on_small_disk(
        "48m",
        &config,
        WorkspaceSettings {
            sensors: vec!["cat /dev/zero > fill".to_owned()],
            ..Default::default()
        },
        notified.clone(),
        &script,
    )
    .await;
    let run = start_as(&w, "scripted", "none", skip_plan());
    until_full(&data_dir(&w)).await;
    // The engine read the full disk (told once: with no reserve the
    // timeline may have no room for it).
    eventually("the runs to be paused", 20, || {
        (notified.disk_full() > 0).then_some(())
    })
    .await;
    assert!(
        !w.engine.run(run).expect("run").state.is_released(),
        "nothing could be written yet"
    );

    std::fs::remove_file(worktree(&w, run).join("fill")).expect("delete the filler");
    let asked = common::pending_gate(&w, run, GateKind::Deviation).await;
    let resumed = entry(&w.engine, run, "notice", "Resumed").expect("resumed");
    let result = entry(&w.engine, run, "sensor", "cat /dev/zero").expect("the check's result");
    assert!(
        resumed.id < result.id,
        "the check's result was written on the full disk: resumed #{}, result #{}",
        resumed.id,
        result.id
    );
    assert!(asked.title.contains("cat /dev/zero"), "{}", asked.title);
    w.engine
        .decide_gate(asked.id, "stop", None, &Actor::cli())
        .expect("stop");
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
    // Lazily unmounted first, so the temp dir under it can be removed.
    drop(mounted);
    drop(w);
}

/// The agent's process: waits for `go` in its worktree, then writes for as
/// long as it lives (a filler that retries whenever a write fails).
const KEEPER: &str = r#"
[disk]
floor = "16M"
reserve = "8M"

[agents.keeper]
command = "/bin/sh"
args = ["-c", "while [ ! -e go ]; do sleep 0.05; done; while true; do cat /dev/zero >> fill 2>/dev/null; done"]
mode = "default"
"#;

/// Issue 37, item 10: a run paused for the disk is frozen (its cgroup's
/// `cgroup.freeze` is 1 and room freed under it stays free), and Stop works
/// on the full disk: the run is killed first (its processes gone at once)
/// and the abort is recorded after, once there is room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_for_the_disk_is_frozen_and_stop_kills_it_first() {
    if !may_mount("full_disk::a_run_paused_for_the_disk_is_frozen_and_stop_kills_it_first") {
        return;
    }
    let script = Script::new(vec![Turn::new(vec![Act::Question {
        message: "Shall I go on?".to_owned(),
        schema: serde_json::json!({"type": "object", "properties": {"ok": {"type": "string"}}}),
    }])]);
    let notified = Arc::new(Captured::default());
    let (w, mounted) = world_on_small_disk(
        "64m",
        KEEPER,
        WorkspaceSettings::default(),
        notified.clone(),
        &script,
    )
    .await;
    // Ballast the test frees once the run is frozen (less than the floor).
    let ballast = data_dir(&w).join("ballast");
    std::fs::write(&ballast, vec![1u8; 4 << 20]).expect("ballast");
    let run = start_as(&w, "keeper", "none", skip_plan());
    common::pending_gate(&w, run, GateKind::Question).await;
    let cgroup = w
        .engine
        .run_cgroup_root()
        .expect("cgroups work here")
        .join(format!("run-{run}"));
    std::fs::write(worktree(&w, run).join("go"), "").expect("go");
    until_full(&data_dir(&w)).await;
    eventually("the pause on the run's timeline", 20, || {
        notices(&w.engine, run)
            .iter()
            .any(|t| t.starts_with("Paused"))
            .then_some(())
    })
    .await;

    // Frozen: the kernel says so, and room freed under the run stays free
    // (a filler still running would take it within milliseconds).
    eventually("the run's cgroup to be frozen", 10, || {
        kernel_froze(&cgroup).then_some(())
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(cgroup.join("cgroup.freeze"))
            .expect("cgroup.freeze")
            .trim(),
        "1"
    );
    let fill = worktree(&w, run).join("fill");
    let size = std::fs::metadata(&fill).expect("the filler's file").len();
    std::fs::remove_file(&ballast).expect("free the ballast");
    let free = overseer_engine::disk::free_bytes(&data_dir(&w)).expect("statvfs");
    assert!(free >= 3 << 20, "the ballast's room is free: {free}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(
        std::fs::metadata(&fill).expect("fill").len(),
        size,
        "a frozen run writes nothing more"
    );
    let later = overseer_engine::disk::free_bytes(&data_dir(&w)).expect("statvfs");
    assert!(
        later + (1 << 20) >= free,
        "nothing took the freed room: {free} then {later}"
    );
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::Running,
        "paused, not failed"
    );

    // Take the room again (as another writer on the machine would): the
    // disk is full when the user stops the run.
    let refill = data_dir(&w).join("refill");
    let _ = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cat /dev/zero > '{}' 2>/dev/null",
            refill.display()
        ))
        .status();
    until_full(&data_dir(&w)).await;

    // Stop, from a transport's blocking task as the CLI's request is served.
    let pids = w
        .engine
        .run_cgroup_root()
        .map(|_| std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap_or_default());
    assert!(
        pids.as_deref().is_some_and(|p| !p.trim().is_empty()),
        "the run has processes before the stop"
    );
    let engine = w.engine.clone();
    let stopped = tokio::task::spawn_blocking(move || engine.abort_run(run, &Actor::cli()))
        .await
        .expect("the abort's task");
    let view = stopped.expect("Stop works on a full disk");
    assert_eq!(
        view.state,
        RunState::Released {
            reason: ReleaseReason::AbortedByUser
        }
    );
    // Killed first: nothing of the run is left, whether or not the record
    // could be written yet.
    let left = std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap_or_default();
    assert!(left.trim().is_empty(), "processes left after Stop: {left}");

    // The record follows once there is room.
    std::fs::remove_file(&refill).expect("free the room");
    let _ = std::fs::remove_file(&fill);
    eventually("the abort to be recorded", 30, || {
        (w.engine.run(run).ok()?.state
            == RunState::Released {
                reason: ReleaseReason::AbortedByUser,
            })
        .then_some(())
    })
    .await;
    assert!(
        !data_dir(&w)
            .join("aborting")
            .join(format!("run-{run}"))
            .exists(),
        "the abort's marker is gone once it is recorded"
    );
    drop(mounted);
    drop(w);
}

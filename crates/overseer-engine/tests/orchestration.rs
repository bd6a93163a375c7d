//! Runs driven end to end: the real engine, the demo agent as a real child
//! process over ACP, real git repositories, real gates decided as a user.

use overseer_core::{Actor, EngineEvent, GateKind, GateView, ReleaseReason, RunState};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock, TaskStart};
use overseer_store::WorkspaceSettings;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

fn demo_agent() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("test exe");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps");
        let mut build = Command::new(env!("CARGO"));
        build
            .args(["build", "-q", "-p", "overseer-demo-agent"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        assert!(build.status().expect("cargo build").success());
        profile_dir.join("overseer-demo-agent")
    })
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=T", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

struct World {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    engine: Arc<Engine>,
}

async fn world(sensors: Vec<String>) -> World {
    std::env::set_var("OVERSEER_DEMO_STEP_MS", "0");
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    std::fs::write(repo.join("README.md"), "# demo\n").expect("write");
    std::fs::write(repo.join("src/greeting.txt"), "hello\n").expect("write");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).expect("config");
    std::fs::write(
        config.join("overseer.toml"),
        format!(
            "abort_timeout_seconds = 1\n[agents.demo]\ncommand = {:?}\n",
            demo_agent().to_string_lossy()
        ),
    )
    .expect("config file");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: config,
    };
    let engine = Arc::new(
        Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine"),
    );
    engine
        .add_workspace(
            &repo,
            Some("demo"),
            WorkspaceSettings {
                sensors,
                auto_advance: None,
            },
            &Actor::cli(),
        )
        .expect("workspace");
    engine.start_orchestrator();
    World {
        _dir: dir,
        repo,
        engine,
    }
}

fn start(w: &World, scenario: &str) -> i64 {
    w.engine
        .start_task(
            &TaskStart {
                workspace: "demo".into(),
                agent: "demo".into(),
                prompt: "Update the greeting".into(),
                title: None,
                scenario: Some(scenario.into()),
            },
            &Actor::cli(),
        )
        .expect("start")
        .run_id
}

/// Waits until `pred` holds, re-checking on every engine event.
async fn until<T>(w: &World, what: &str, mut pred: impl FnMut(&Engine) -> Option<T>) -> T {
    let mut rx = w.engine.subscribe();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = pred(&w.engine) {
            return v;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "timed out waiting for {what}; runs: {:?}",
            w.engine.runs()
        );
        let _ = tokio::time::timeout(left.min(Duration::from_millis(500)), rx.recv()).await;
    }
}

async fn pending_gate(w: &World, run: i64, kind: GateKind) -> GateView {
    until(w, &format!("a {kind:?} gate on run {run}"), |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind == kind)
    })
    .await
}

async fn state(w: &World, run: i64, want: RunState) {
    until(w, &format!("run {run} to be {want}"), |e| {
        (e.run(run).ok()?.state == want).then_some(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_happy_run_plans_asks_executes_and_merges_on_approval() {
    let w = world(vec!["test -s src/greeting.txt".into()]).await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    assert!(
        plan.payload["steps"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{}",
        plan.payload
    );
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve plan");
    // Every edit asks (edits are not read-only); say yes to each.
    loop {
        let gate = until(&w, "a tool call gate or the review", |e| {
            let gates = e.gates(true).ok()?;
            gates.into_iter().find(|g| {
                g.run_id == run && matches!(g.kind, GateKind::ToolCall | GateKind::MergeReview)
            })
        })
        .await;
        if gate.kind == GateKind::MergeReview {
            break;
        }
        w.engine
            .decide_gate(gate.id, "yes", None, &Actor::app())
            .expect("yes");
    }
    state(&w, run, RunState::PendingReview).await;
    let (files, diff) = w.engine.run_diff(run).expect("diff");
    assert!(!files.is_empty() && diff.contains("+++"), "{files:?}");
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity
            .iter()
            .any(|a| a.kind == "sensor" && a.payload["passed"] == true),
        "{activity:?}"
    );
    assert!(activity.iter().any(|a| a.kind == "file_written"));

    w.engine.approve_run(run, &Actor::app()).expect("approve");
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::Released {
            reason: ReleaseReason::Merged
        }
    );
    let merged = git(&w.repo, &["log", "--oneline", "main"]);
    assert!(merged.contains(&format!("Merge run {run}")), "{merged}");
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_the_plan_releases_the_run_as_plan_rejected() {
    let w = world(vec![]).await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(
            plan.id,
            "request_changes",
            Some("smaller steps"),
            &Actor::cli(),
        )
        .expect("changes");
    let plan2 = until(&w, "a second plan gate", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind == GateKind::Plan && g.id != plan.id)
    })
    .await;
    w.engine
        .decide_gate(plan2.id, "reject", Some("not now"), &Actor::cli())
        .expect("reject");
    state(
        &w,
        run,
        RunState::Released {
            reason: ReleaseReason::PlanRejected,
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flaky_step_opens_a_deviation_gate_and_retry_succeeds() {
    let w = world(vec![]).await;
    let run = start(&w, "flaky");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let deviation = until(&w, "the deviation gate", |e| {
        let gates = e.gates(true).ok()?;
        for g in &gates {
            if g.run_id == run && g.kind == GateKind::ToolCall {
                let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
            }
        }
        gates
            .into_iter()
            .find(|g| g.run_id == run && g.kind == GateKind::Deviation)
    })
    .await;
    assert!(deviation.options.iter().any(|o| o.id == "retry"));
    assert!(
        deviation.payload["error"]
            .as_str()
            .is_some_and(|e| e.contains("step 2 failed")),
        "{}",
        deviation.payload
    );
    w.engine
        .decide_gate(deviation.id, "retry", Some("try again"), &Actor::cli())
        .expect("retry");
    until(&w, "the review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id == run && g.kind == GateKind::ToolCall {
                let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
            }
        }
        (e.run(run).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_stubborn_agent_kills_its_whole_tree_and_keeps_the_worktree() {
    let w = world(vec![]).await;
    let run = start(&w, "stubborn");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // Let it sit in its endless turn.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let worktree = w.engine.worktree_path("demo", run);
    let marker = format!("OVERSEER_AGENT_MARKER={}\0", w.engine.agent_marker(run));
    let before =
        git(&worktree, &["status", "--porcelain"]) + &git(&worktree, &["rev-parse", "HEAD"]);
    let marker_procs = || -> usize {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| {
                std::fs::read(e.path().join("environ"))
                    .map(|env| String::from_utf8_lossy(&env).contains(&marker))
                    .unwrap_or(false)
            })
            .filter(|e| {
                std::fs::read_to_string(e.path().join("stat"))
                    .map(|s| {
                        !s.rsplit_once(')')
                            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                    })
                    .unwrap_or(false)
            })
            .count()
    };
    assert!(
        marker_procs() >= 2,
        "the agent and its setsid grandchild run"
    );
    let mut rx = w.engine.subscribe();
    let engine = w.engine.clone();
    tokio::task::spawn_blocking(move || engine.abort_run(run, &Actor::cli()))
        .await
        .expect("join")
        .expect("abort");
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::Released {
            reason: ReleaseReason::AbortedByUser
        }
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Ok(EngineEvent::OrchestrationAborted { run_id, .. })) =
            tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
        {
            if run_id == run {
                break;
            }
        }
        assert!(Instant::now() < deadline, "no orchestration_aborted event");
    }
    assert_eq!(marker_procs(), 0, "processes survived the abort");
    let after =
        git(&worktree, &["status", "--porcelain"]) + &git(&worktree, &["rev-parse", "HEAD"]);
    assert_eq!(before, after, "the worktree is left as it was");
}

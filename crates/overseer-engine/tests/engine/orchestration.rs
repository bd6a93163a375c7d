//! Runs driven end to end: the real engine, the demo agent as a real child
//! process over ACP, real git repositories, real gates decided as a user.

use crate::common;

use common::{
    git, pending_gate, reopen, restart, start, start_with, state, until, world, world_with,
};
use overseer_core::{Actor, EngineEvent, GateKind, ReleaseReason, RunState};
use overseer_engine::{Engine, LogNotifier, SystemClock, TaskStart};
use overseer_store::TaskSettings;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_happy_run_plans_asks_executes_and_merges_on_approval() {
    let w = world(vec!["test -s src/greeting.txt".into()]).await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    assert!(
        plan.body.payload_json()["steps"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{}",
        plan.body.payload_json()
    );
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve plan");
    // Every edit asks (edits are not read-only); say yes to each.
    loop {
        let gate = until(&w, "a tool call gate or the review", |e| {
            let gates = e.gates(true).ok()?;
            gates.into_iter().find(|g| {
                g.run_id == run && matches!(g.kind(), GateKind::ToolCall | GateKind::MergeReview)
            })
        })
        .await;
        if gate.kind() == GateKind::MergeReview {
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
            .any(|a| a.kind() == "sensor" && a.payload()["passed"] == true),
        "{activity:?}"
    );
    assert!(activity.iter().any(|a| a.kind() == "file_written"));
    // The agent's stderr is its log, kept in the timeline (in batches: the
    // last one lands a moment after the agent's last line).
    until(&w, "the agent's log in the timeline", |e| {
        e.activity(run, 0).ok()?.into_iter().find(|a| {
            a.kind() == "log"
                && a.payload()["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("scenario happy"))
        })
    })
    .await;
    // The dashboard row shows the sensors' latest results.
    assert_eq!(
        w.engine.run(run).expect("run").sensors,
        Some(overseer_core::SensorSummary {
            passed: 1,
            failed: 0,
            results: vec![overseer_core::SensorResult {
                command: "test -s src/greeting.txt".into(),
                passed: true
            }]
        })
    );

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
            .find(|g| g.run_id == run && g.kind() == GateKind::Plan && g.id != plan.id)
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
    let (run, deviation) = flaky_at_its_deviation(&w).await;
    assert!(deviation.options.iter().any(|o| o.id == "retry"));
    assert!(
        deviation.body.payload_json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("step 2 failed")),
        "{}",
        deviation.body.payload_json()
    );
    w.engine
        .decide_gate(deviation.id, "retry", Some("try again"), &Actor::cli())
        .expect("retry");
    until(&w, "the review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id == run && g.kind() == GateKind::ToolCall {
                let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
            }
        }
        (e.run(overseer_core::RunId(run)).ok()?.state == RunState::PendingReview).then_some(())
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_retry_policy_a_flaky_step_is_retried_unattended_and_recorded() {
    let w = world(vec![]).await;
    let run = start_with(
        &w,
        "flaky",
        TaskSettings {
            retry: Some(overseer_core::RetryPolicy {
                max_attempts: 2,
                backoff_seconds: 0,
            }),
            ..TaskSettings::default()
        },
    );
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    until(&w, "the review, with no deviation asked", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id == run && g.kind() == GateKind::ToolCall {
                let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
            }
        }
        assert!(
            !e.gates(false)
                .ok()?
                .iter()
                .any(|g| g.run_id == run && g.kind() == GateKind::Deviation),
            "the policy retried without asking"
        );
        (e.run(run).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
    let activity = w.engine.activity(run, 0).expect("activity");
    let retried: Vec<_> = activity
        .iter()
        .filter(|a| a.kind() == "retry_queued")
        .collect();
    assert_eq!(retried.len(), 1, "{activity:?}");
    assert!(retried[0].payload()["text"]
        .as_str()
        .is_some_and(|t| t.contains("retry 1") && t.contains("step 2 failed")));
    let story = w.engine.run_decisions(run).expect("decisions");
    assert!(
        story
            .iter()
            .any(|d| d.rule_ref.as_deref() == Some("retry_policy")),
        "the retry has its decision record: {story:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_a_stage_that_auto_advances_merges_without_review() {
    let w = world_with(
        Default::default(),
        Arc::new(LogNotifier),
        "[stages.docs]\nauto_advance = true\n",
    )
    .await;
    let run = w
        .engine
        .start_task(
            &TaskStart {
                workspace: "demo".into(),
                agent: "demo".into(),
                prompt: "Update the greeting".into(),
                title: None,
                scenario: Some("happy".into()),
                stage: Some("docs".into()),
                settings: TaskSettings {
                    plan: Some(overseer_core::agent::PlanStrategy::Skip),
                    ..TaskSettings::default()
                },
            },
            &Actor::cli(),
        )
        .expect("start")
        .run_id;
    until(&w, "the merge", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id == run && g.kind() == GateKind::ToolCall {
                let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
            }
        }
        (e.run(run).ok()?.state
            == RunState::Released {
                reason: ReleaseReason::Merged,
            })
        .then_some(())
    })
    .await;
}

/// Says yes to the run's tool calls and retry to its deviations until `done`.
async fn yes_until(
    w: &common::World,
    run: i64,
    what: &str,
    done: impl Fn(&overseer_engine::Engine) -> bool,
) {
    until(w, what, |e| {
        for g in e.gates(true).ok()? {
            let option = match g.kind() {
                GateKind::ToolCall => "yes",
                GateKind::Deviation => "retry",
                _ => continue,
            };
            if g.run_id == run {
                let _ = e.decide_gate(g.id, option, None, &Actor::cli());
            }
        }
        done(e).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deviation_waiting_at_a_restart_stays_pending_and_its_retry_carries_the_run_on() {
    let mut w = world(vec![]).await;
    let (run, deviation) = flaky_at_its_deviation(&w).await;
    restart(&mut w).await;
    // The same gate, still pending, in a run still running.
    let again = pending_gate(&w, overseer_core::RunId(run), GateKind::Deviation).await;
    assert_eq!(again.id, deviation.id);
    assert_eq!(
        w.engine.run(overseer_core::RunId(run)).expect("run").state,
        RunState::Running
    );
    w.engine
        .decide_gate(deviation.id, "retry", Some("try again"), &Actor::cli())
        .expect("retry");
    // The carried-on agent is as flaky as the first (a new process):
    // retries take it to its review.
    yes_until(&w, run, "the review", |e| {
        e.run(overseer_core::RunId(run))
            .is_ok_and(|r| r.state == RunState::PendingReview)
    })
    .await;
    let activity = w
        .engine
        .activity(overseer_core::RunId(run), 0)
        .expect("activity");
    let started = |n: u64| {
        activity
            .iter()
            .filter(|a| a.kind() == "step_started" && a.payload()["step"] == n)
            .count()
    };
    assert_eq!(started(1), 1, "step 1 was done once, before the restart");
    assert!(started(2) >= 2, "step 2 again after the retry");
    let plans = w
        .engine
        .gates(false)
        .expect("gates")
        .into_iter()
        .filter(|g| g.run_id == run && g.kind() == GateKind::Plan)
        .count();
    assert_eq!(plans, 1, "the approved plan is not asked for again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_acted_on_just_before_the_engine_stopped_is_not_asked_for_again() {
    let mut w = world(vec![]).await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let call = pending_gate(&w, run, GateKind::ToolCall).await;
    // The engine stopped after acting on the approval but before it wrote
    // where the run went: its checkpoint still says planning.
    w.engine.stop_agents().await;
    let db = rusqlite::Connection::open(w.engine.paths().db()).expect("db");
    let changed = db
        .execute(
            "UPDATE run_progress SET checkpoint = ?1 WHERE run_id = ?2",
            rusqlite::params![r#"{"progress":{"phase":"planning","guidance":""}}"#, run],
        )
        .expect("checkpoint");
    assert_eq!(changed, 1, "the driver kept where the run was");
    reopen(&mut w);
    // The approval is acted on again, not asked for: the run goes on to
    // its first step, whose edit asks again (the old ask is withdrawn).
    let asked = until(&w, "the edit asked again", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::ToolCall && g.id != call.id)
    })
    .await;
    let gates = w.engine.gates(false).expect("gates");
    let old = gates.iter().find(|g| g.id == call.id).expect("old ask");
    let d = old.decision.as_ref().expect("withdrawn");
    assert_eq!((d.option.as_str(), &d.actor), ("no", &Actor::Engine));
    assert_eq!(
        gates
            .iter()
            .filter(|g| g.run_id == run && g.kind() == GateKind::Plan)
            .count(),
        1
    );
    w.engine
        .decide_gate(asked.id, "yes", None, &Actor::cli())
        .expect("yes");
    yes_until(&w, run.into(), "the review", |e| {
        e.run(run).is_ok_and(|r| r.state == RunState::PendingReview)
    })
    .await;
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_always_answers_outlive_a_restart() {
    let mut w = world(vec![]).await;
    let run = start(&w, "flaky");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let first = pending_gate(&w, run, GateKind::ToolCall).await;
    w.engine
        .decide_gate(first.id, "always", None, &Actor::cli())
        .expect("always");
    // Step 2 fails once: the run waits on a deviation, still running.
    let deviation = pending_gate(&w, run, GateKind::Deviation).await;
    w.engine.stop_agents().await;
    let db = rusqlite::Connection::open(w.engine.paths().db()).expect("db");
    let kept: String = db
        .query_row(
            "SELECT json_extract(checkpoint, '$.always') FROM run_progress WHERE run_id = ?1",
            [run],
            |r| r.get(0),
        )
        .expect("checkpoint");
    assert_ne!(kept, "[]", "the rule is kept with the run");
    // Carried on at step 1 again (as after a crash during it), by a new
    // agent process that remembers no "always" of its own: its edit asks,
    // and the rule kept with the run answers.
    db.execute(
        "UPDATE run_progress SET checkpoint = json_set(checkpoint, '$.progress.step', 0) WHERE run_id = ?1",
        [run],
    )
    .expect("back to step 1");
    reopen(&mut w);
    assert_eq!(
        pending_gate(&w, run, GateKind::Deviation).await.id,
        deviation.id
    );
    w.engine
        .decide_gate(deviation.id, "retry", None, &Actor::cli())
        .expect("retry");
    until(&w, "the review, with no ask the kept rule covers", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id != run {
                continue;
            }
            match g.kind() {
                GateKind::ToolCall => {
                    assert_ne!(g.title, first.title, "asked again despite 'always'");
                    let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
                }
                GateKind::Deviation => {
                    let _ = e.decide_gate(g.id, "retry", None, &Actor::cli());
                }
                _ => {}
            }
        }
        (e.run(run).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
    let activity = w.engine.activity(run, 0).expect("activity");
    let restarted = activity
        .iter()
        .position(|a| a.kind() == "carried_on")
        .expect("carried on");
    let allowed_after = activity[restarted..]
        .iter()
        .filter(|a| a.kind() == "tool_allowed")
        .count();
    assert!(allowed_after >= 1, "the kept rule allowed the redone edit");
}

/// A flaky run, its plan approved and its edits allowed, at the deviation
/// its failing step opens.
async fn flaky_at_its_deviation(w: &common::World) -> (i64, overseer_core::GateView) {
    let run = start(w, "flaky");
    let plan = pending_gate(w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let deviation = until(w, "the deviation gate", |e| {
        let gates = e.gates(true).ok()?;
        for g in &gates {
            if g.run_id == run && g.kind() == GateKind::ToolCall {
                let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
            }
        }
        gates
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::Deviation)
    })
    .await;
    (run.into(), deviation)
}

/// At a clean exit the engine lets go: the drivers of runs waiting on the
/// user and the answers agents wait for stop where they wait, so once
/// `stop_agents` returns nothing of the engine still runs or holds it (its
/// final checkpoint is its last write, and the runtime can end under it),
/// and what waited on the user is still pending for the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_its_agents_are_stopped_nothing_of_the_engine_runs_on() {
    let w = world(vec![]).await;
    // One run waits on its plan (its driver waits), one on a tool call
    // (the agent's permission request waits on its own task).
    let planning = start(&w, "happy");
    let plan = pending_gate(&w, planning, GateKind::Plan).await;
    let working = start(&w, "happy");
    let first = pending_gate(&w, working, GateKind::Plan).await;
    w.engine
        .decide_gate(first.id, "approve", None, &Actor::cli())
        .expect("approve");
    let call = pending_gate(&w, working, GateKind::ToolCall).await;

    assert_eq!(w.engine.stop_agents().await, 2);
    w.engine.shutdown().expect("final checkpoint");
    let common::World { _dir, engine, .. } = w;
    let paths = engine.paths().clone();
    let held = Arc::downgrade(&engine);
    drop(engine);
    let deadline = Instant::now() + Duration::from_secs(5);
    while held.upgrade().is_some() {
        assert!(
            Instant::now() < deadline,
            "a task the engine spawned still holds it after stop_agents"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let next = Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("reopen");
    let pending: Vec<_> = next
        .gates(true)
        .expect("gates")
        .into_iter()
        .map(|g| g.id)
        .collect();
    assert!(
        pending.contains(&plan.id) && pending.contains(&call.id),
        "both asks still wait for the user: {pending:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_seeded_while_the_orchestrator_runs_is_left_as_seeded() {
    // The seed's events carry each run's creation (queued) before its later
    // steps; a running orchestrator must launch only what is queued now,
    // never claim (and so fail) a run that is already under way. (The
    // fleet's one queued run is launched, as any queued run is.)
    let w = world(Vec::new()).await;
    let mut rx = w.engine.subscribe();
    let ids = w.engine.seed_demo(&Actor::cli(), false).expect("seed");
    let under_way: Vec<(overseer_core::RunId, RunState)> = ids
        .iter()
        .map(|id| (*id, w.engine.run(*id).expect("run").state))
        .filter(|(_, s)| matches!(s, RunState::Running | RunState::PendingReview))
        .collect();
    assert!(
        under_way
            .iter()
            .filter(|(_, s)| *s == RunState::Running)
            .count()
            >= 2,
        "the demo fleet has runs under way: {under_way:?}"
    );
    // Every event of the seed has reached the orchestrator's loop by the
    // time this subscriber has read them all; then give its launches time.
    while let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await {}
    tokio::time::sleep(Duration::from_millis(700)).await;
    for (id, was) in under_way {
        let now = w.engine.run(id).expect("run").state;
        assert_eq!(
            now,
            was,
            "run {id} changed from {was:?} to {now:?}: {:?}",
            w.engine.activity(id, 0)
        );
    }
}

//! Files other tools run or load on their own (`.vscode/tasks.json`,
//! `.envrc`, a `package.json` postinstall, CI workflows, agent settings)
//! are never merged without a human: not by auto-advance, not by an
//! autonomous supervisor. Judged from the run's diff: files a test script
//! (here a sensor) planted count as much as the agent's own writes. The real
//! orchestrator and engine on a real SQLite file, real git repositories, a
//! real (contained) agent process with a scripted session, real sensors.

use crate::common;
use crate::common::scripted;

use common::{git, pending_gate, start_as, state, until, World};
use overseer_core::autorun::PathChange;
use overseer_core::supervision::{Autonomy, EvaluatorConfig, SupervisorPolicy};
use overseer_core::{Actor, GateBody, GateKind, ReleaseReason, RunId, RunState};
use overseer_store::{TaskSettings, WorkspaceSettings};
use scripted::{scripted_world, Act, Script, Turn};
use std::sync::Arc;

const PLAN: &str = "Here is my plan.\n```overseer-plan\n{\"goal\": \"Greet the world\", \"steps\": [{\"title\": \"Write the greeting\"}, {\"title\": \"Mention it in the README\"}]}\n```\n";

/// A test script that plants auto-run files in the worktree (as a hostile
/// `npm test` could), then passes. It runs after each step; what it planted
/// after the first is committed with the second.
const PLANTING_SENSOR: &str = r#"mkdir -p .vscode .github/workflows .claude && printf '{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch /tmp/pwned","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json && printf 'touch /tmp/pwned\n' > .envrc && printf 'on: push\njobs: {}\n' > .github/workflows/x.yml && printf '{"hooks":{}}' > .claude/settings.json && printf '*.txt filter=x\n' > .gitattributes && test -s src/greeting.txt"#;

/// The files the agent and the planting sensor add that other tools run.
const AUTO_RUN: [&str; 6] = [
    "package.json",
    ".vscode/tasks.json",
    ".envrc",
    ".github/workflows/x.yml",
    ".claude/settings.json",
    ".gitattributes",
];

fn write(path: &str, text: &str) -> Act {
    Act::Write {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// The agent's two steps: the greeting and a `package.json` (with a
/// postinstall when `postinstall`, else only a test script), then the README.
fn script(postinstall: bool) -> Arc<Script> {
    let package = if postinstall {
        r#"{"name":"demo","scripts":{"test":"true","postinstall":"node evil.js"}}"#
    } else {
        r#"{"name":"demo","scripts":{"test":"true"}}"#
    };
    Script::new(vec![
        Turn::new(vec![Act::Say(PLAN.to_owned())]),
        Turn::new(vec![
            write("src/greeting.txt", "hello, world\n"),
            write("package.json", package),
            Act::Say("Wrote the greeting.".to_owned()),
        ]),
        Turn::new(vec![
            write("README.md", "# demo\n\nIt greets the world.\n"),
            Act::Say("Done.".to_owned()),
        ]),
    ])
}

fn start(w: &World) -> RunId {
    start_as(w, "scripted", "none", TaskSettings::default())
}

async fn approve_plan(w: &World, run: RunId) {
    let plan = pending_gate(w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve the plan");
}

fn merged() -> RunState {
    RunState::Released {
        reason: ReleaseReason::Merged,
    }
}

/// The auto-run paths a merge review's payload names.
fn named_by_review(w: &World, run: RunId) -> Vec<String> {
    let review = w
        .engine
        .gates(false)
        .expect("gates")
        .into_iter()
        .find(|g| g.run_id == run && g.kind() == GateKind::MergeReview)
        .expect("a merge review");
    let GateBody::MergeReview(body) = review.body else {
        panic!("a merge review's body: {:?}", review.body)
    };
    body.auto_run.into_iter().map(|f| f.path).collect()
}

fn merge_texts(w: &World, run: RunId) -> Vec<String> {
    w.engine
        .activity(run, 0)
        .expect("activity")
        .into_iter()
        .filter(|a| a.kind() == "merge")
        .filter_map(|a| a.payload()["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_advance_never_merges_files_other_tools_run_and_the_review_names_each() {
    let w = scripted_world(
        WorkspaceSettings {
            sensors: vec![PLANTING_SENSOR.into()],
            ..Default::default()
        },
        "auto_advance = true",
        &script(true),
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w);
    approve_plan(&w, run).await;

    // Every sensor passed and auto-advance is on; the run waits for a human.
    pending_gate(&w, run, GateKind::MergeReview).await;
    state(&w, run, RunState::PendingReview).await;
    assert_eq!(
        git(&w.repo, &["rev-parse", "main"]),
        base,
        "main is not moved"
    );

    // The review names every file and what it would run.
    let named = named_by_review(&w, run);
    for path in AUTO_RUN {
        assert!(named.iter().any(|p| p == path), "{path} in {named:?}");
    }
    assert!(
        !named
            .iter()
            .any(|p| p == "src/greeting.txt" || p == "README.md"),
        "{named:?}"
    );
    // The fleet's preview reads the same from the diff.
    let preview = w.engine.run_auto_run(run).expect("auto-run files");
    let tasks = preview
        .iter()
        .find(|f| f.path == ".vscode/tasks.json")
        .expect("tasks.json in the preview");
    assert_eq!(tasks.change, PathChange::Added);
    assert!(tasks.runs.contains("folderOpen"), "{}", tasks.runs);
    let package = preview
        .iter()
        .find(|f| f.path == "package.json")
        .expect("package.json in the preview");
    assert!(
        package.runs.contains("`postinstall`: node evil.js"),
        "{}",
        package.runs
    );

    // The timeline says why, naming each file.
    let texts = merge_texts(&w, run);
    let held = texts
        .iter()
        .find(|t| t.starts_with("auto-advance did not merge"))
        .unwrap_or_else(|| panic!("a timeline entry: {texts:?}"));
    for path in AUTO_RUN {
        assert!(held.contains(&format!("`{path}`")), "{path} in {held}");
    }

    // A human may still merge it.
    w.engine.approve_run(run, &Actor::app()).expect("approve");
    state(&w, run, merged()).await;
    assert_ne!(git(&w.repo, &["rev-parse", "main"]), base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_advance_still_merges_a_change_without_auto_run_files() {
    // The same run, its package.json without an install script, and a sensor
    // that plants nothing.
    let w = scripted_world(
        WorkspaceSettings {
            sensors: vec!["test -s src/greeting.txt".into()],
            ..Default::default()
        },
        "auto_advance = true",
        &script(false),
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w);
    approve_plan(&w, run).await;
    state(&w, run, merged()).await;
    assert_ne!(git(&w.repo, &["rev-parse", "main"]), base, "merged");
    assert_eq!(
        git(&w.repo, &["show", "main:src/greeting.txt"]),
        "hello, world"
    );
    assert!(w.engine.run_auto_run(run).expect("auto-run").is_empty());
}

/// A supervisor that decides merge reviews on its own and approves
/// everything it is asked.
fn autonomous_supervisor() -> SupervisorPolicy {
    let script = r#"input=$(cat)
case "$input" in
  *'"subject":"step"'*) echo '{"verdict":"continue","rationale":"fine"}'; exit 0;;
esac
echo '{"verdict":"approve","rationale":"looks right"}'"#;
    SupervisorPolicy {
        enabled: true,
        autonomy: Autonomy::Advisory,
        gate_authority: [(GateKind::MergeReview, Autonomy::Autonomous)]
            .into_iter()
            .collect(),
        evaluator: EvaluatorConfig::Command {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
        },
        timeout_seconds: 60,
        ..SupervisorPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autonomous_supervisor_only_advises_on_a_merge_of_auto_run_files() {
    let w = scripted_world(
        WorkspaceSettings {
            sensors: vec![PLANTING_SENSOR.into()],
            supervisor: Some(autonomous_supervisor()),
            ..Default::default()
        },
        "",
        &script(true),
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w);
    approve_plan(&w, run).await;
    let review = pending_gate(&w, run, GateKind::MergeReview).await;

    // The supervisor has had its say: advice, not a decision.
    let story = until(&w, "the supervisor's vote on the review", |e| {
        let story = e.gate_story(review.id).ok()?;
        story
            .decisions
            .iter()
            .any(|d| matches!(d.actor, Actor::Supervisor(_)))
            .then_some(story)
    })
    .await;
    assert!(
        story
            .decisions
            .iter()
            .all(|d| d.verdict != overseer_core::supervision::Verdict::Approve),
        "{:?}",
        story.decisions
    );
    let gate = w.engine.gate(review.id).expect("gate");
    assert_eq!(gate.authority, Some(Autonomy::Advisory));
    assert!(gate.decision.is_none(), "{gate:?}");
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::PendingReview
    );
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base, "nothing merged");
    let texts = merge_texts(&w, run);
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("the supervisor only advises") && t.contains("`.envrc`")),
        "{texts:?}"
    );
    let named = named_by_review(&w, run);
    for path in AUTO_RUN {
        assert!(named.iter().any(|p| p == path), "{path} in {named:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autonomous_supervisor_still_merges_a_change_without_auto_run_files() {
    let w = scripted_world(
        WorkspaceSettings {
            sensors: vec!["test -s src/greeting.txt".into()],
            supervisor: Some(autonomous_supervisor()),
            ..Default::default()
        },
        "",
        &script(false),
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w);
    approve_plan(&w, run).await;
    state(&w, run, merged()).await;
    assert_ne!(git(&w.repo, &["rev-parse", "main"]), base, "merged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cosigned_review_of_auto_run_files_merges_with_the_humans_approval() {
    let mut policy = autonomous_supervisor();
    policy.gate_authority = [(GateKind::MergeReview, Autonomy::Cosign)]
        .into_iter()
        .collect();
    let w = scripted_world(
        WorkspaceSettings {
            sensors: vec![PLANTING_SENSOR.into()],
            supervisor: Some(policy),
            ..Default::default()
        },
        "",
        &script(true),
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w);
    approve_plan(&w, run).await;
    let review = pending_gate(&w, run, GateKind::MergeReview).await;
    // The supervisor co-signs first; the review still waits for the human.
    until(&w, "the supervisor's co-sign", |e| {
        let story = e.gate_story(review.id).ok()?;
        story
            .decisions
            .iter()
            .any(|d| matches!(d.actor, Actor::Supervisor(_)))
            .then_some(())
    })
    .await;
    let gate = w.engine.gate(review.id).expect("gate");
    assert_eq!(gate.authority, Some(Autonomy::Cosign));
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::PendingReview
    );
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base);
    // The human's approval, with the co-sign, merges.
    w.engine.approve_run(run, &Actor::app()).expect("approve");
    state(&w, run, merged()).await;
    assert_ne!(git(&w.repo, &["rev-parse", "main"]), base);
}

/// A review whose diff plants auto-run files is never approved blind from a
/// notification: "ready for review" has no Approve and names the files
/// (issue 37, item 8); the review still merges from the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviews_notification_names_its_auto_run_files_and_offers_no_approve() {
    let told = Arc::new(common::Captured::default());
    let w = scripted::scripted_world_telling(
        WorkspaceSettings {
            sensors: vec![PLANTING_SENSOR.into()],
            ..Default::default()
        },
        "",
        &script(true),
        told.clone(),
    )
    .await;
    let run = start(&w);
    approve_plan(&w, run).await;
    let review = pending_gate(&w, run, GateKind::MergeReview).await;
    let ready = until(&w, "ready for review told", |_| {
        told.0
            .lock()
            .expect("lock")
            .iter()
            .find(|n| {
                n.run_id == run && n.kind == overseer_engine::NotificationKind::RunPendingReview
            })
            .cloned()
    })
    .await;
    assert_eq!(
        ready.quick, None,
        "no Approve on a flagged merge: {ready:?}"
    );
    assert_eq!(
        ready.tag.as_deref(),
        Some(format!("gate:{}", review.id).as_str())
    );
    for path in [".envrc", ".vscode/tasks.json", "package.json"] {
        assert!(
            ready.body.contains(&format!("AUTO-RUN {path} (added)")),
            "{path} in {}",
            ready.body
        );
    }
    assert!(
        ready.body.contains("review it in the window"),
        "{}",
        ready.body
    );
    assert_eq!(overseer_engine::quick_answer(&review), None);
}

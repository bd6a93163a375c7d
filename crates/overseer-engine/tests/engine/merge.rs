//! The one merge, end to end: the real engine, the demo agent as a real child
//! process, real git repositories. A run works in a repository of its own; the
//! user's repository is touched only by a reviewed merge, exactly once, also
//! across a crash between git and the database and a second approval; work
//! found on main without a merge of Overseer's is a security event; and a
//! co-signed merge review waits for the supervisor after a human's approval.

use crate::common;
use common::Captured;

use common::{git, pending_gate, start, state, until, world_with, World};
use overseer_core::supervision::{Autonomy, EvaluatorConfig, SupervisorPolicy};
use overseer_core::{
    Actor, DeviationCause, ErrorCode, GateBody, GateKind, ReleaseReason, RunState,
};
use overseer_engine::{Engine, LogNotifier, MergeOutcome, NotificationKind, SystemClock};
use overseer_store::WorkspaceSettings;
use std::path::Path;
use std::sync::Arc;

fn merged() -> RunState {
    RunState::Released {
        reason: ReleaseReason::Merged,
    }
}

/// Drives a demo run to its review: the plan approved and every tool call
/// allowed, as the user.
async fn to_review(w: &World, run: i64) {
    let plan = pending_gate(w, overseer_core::RunId(run), GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve the plan");
    until(w, "the run in review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id != run {
                continue;
            }
            match g.kind() {
                GateKind::ToolCall => {
                    let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
                }
                GateKind::StepReview => {
                    let _ = e.decide_gate(g.id, "proceed", None, &Actor::cli());
                }
                _ => {}
            }
        }
        (e.run(overseer_core::RunId(run)).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
}

/// How many merge commits `main` has (the fixture has none of its own).
fn merges_on_main(repo: &Path) -> usize {
    git(repo, &["rev-list", "--merges", "main"]).lines().count()
}

fn audit_mentions(w: &World, text: &str) -> i64 {
    rusqlite::Connection::open(w.engine.paths().db())
        .and_then(|c| {
            c.query_row(
                "SELECT count(*) FROM audit_log WHERE payload LIKE ?1",
                [format!("%{text}%")],
                |r| r.get(0),
            )
        })
        .expect("read the audit log")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_works_in_its_own_repository_and_is_merged_once_on_approval() {
    let w = world_with(WorkspaceSettings::default(), Arc::new(LogNotifier), "").await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    // The user has a branch the run is not given and a stash.
    git(&w.repo, &["branch", "elsewhere"]);
    git(&w.repo, &["checkout", "-q", "elsewhere"]);
    std::fs::write(w.repo.join("plan.txt"), "not for runs\n").expect("write");
    git(&w.repo, &["add", "plan.txt"]);
    git(&w.repo, &["commit", "-q", "-m", "elsewhere"]);
    git(&w.repo, &["checkout", "-q", "main"]);
    std::fs::write(w.repo.join("README.md"), "stashed\n").expect("write");
    git(&w.repo, &["stash", "-q"]);
    let not_given = [
        git(&w.repo, &["rev-parse", "elsewhere"]),
        git(&w.repo, &["rev-parse", "elsewhere:plan.txt"]),
        git(&w.repo, &["rev-parse", "refs/stash"]),
        git(&w.repo, &["rev-parse", "refs/stash:README.md"]),
    ];
    let run = start(&w, "happy");
    to_review(&w, run.into()).await;
    let dir = w.engine.worktree_path("demo", run);
    // Its own repository: nothing of the run in the user's repository, and
    // of the user's only what the base commit reaches.
    assert!(dir.join(".git").is_dir(), "not a linked worktree");
    assert!(!dir.join(".git/objects/info/alternates").exists());
    for id in &not_given {
        let found = std::process::Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(["cat-file", "-e", id])
            .status()
            .expect("git");
        assert!(!found.success(), "the run's repository has {id}");
    }
    assert_eq!(git(&w.repo, &["worktree", "list"]).lines().count(), 1);
    assert_eq!(git(&w.repo, &["branch", "--list", "overseer/*"]), "");
    assert_eq!(
        git(&dir, &["remote"]),
        "",
        "no remote back to the user's repository"
    );
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base, "main untouched");
    // Review reads the run's repository: from the base commit to the tip
    // recorded when the run entered review.
    let (files, diff) = w.engine.run_diff(run).expect("diff");
    assert!(!files.is_empty() && diff.contains("+++"), "{files:?}");
    let tip = git(&dir, &["rev-parse", "overseer/run-1"]);

    let view = w.engine.approve_run(run, &Actor::app()).expect("approve");
    assert_eq!(view.state, merged());
    assert_eq!(merges_on_main(&w.repo), 1);
    let head = git(&w.repo, &["rev-parse", "main^2"]);
    assert_eq!(head, tip, "the reviewed commit is what merged");
    assert_eq!(git(&w.repo, &["rev-parse", "main^1"]), base);
    assert_eq!(
        git(&w.repo, &["for-each-ref", "refs/overseer"]),
        "",
        "the hidden ref is gone"
    );
    assert!(audit_mentions(&w, "merge_intent") == 1 && audit_mentions(&w, "merge_done") == 1);
    // A second approval never merges twice.
    let err = w.engine.approve_run(run, &Actor::app()).expect_err("twice");
    assert_eq!(err.code, ErrorCode::InvalidTransition);
    assert_eq!(
        w.engine.merge_run(run, &Actor::app()).expect("merge again"),
        MergeOutcome::AlreadyMerged {
            commit: Some(git(&w.repo, &["rev-parse", "main"]))
        }
    );
    assert_eq!(merges_on_main(&w.repo), 1);
    // The diff still shows what the run changed.
    let (after, _) = w.engine.run_diff(run).expect("diff after");
    assert_eq!(after, files);
    // Cleaning removes the run's repository, nothing of the user's.
    w.engine.clean_run(run).expect("clean");
    assert!(!dir.exists());
    assert_eq!(merges_on_main(&w.repo), 1);
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_gits_merge_and_the_database_never_merges_twice() {
    let w = world_with(WorkspaceSettings::default(), Arc::new(LogNotifier), "").await;
    let run = start(&w, "happy");
    to_review(&w, run.into()).await;
    // Git's part of the merge, then the engine "crashes": nothing recorded
    // that the merge is done, the run still waits for review.
    let outcome = w
        .engine
        .merge_run_crashing_after_git(run, &Actor::app())
        .expect("git's part");
    let MergeOutcome::Merged { commit } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), commit);
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::PendingReview
    );
    // A fresh engine on the same data dir: the user approves again.
    let again = Engine::open(
        w.engine.paths().clone(),
        Arc::new(SystemClock),
        Arc::new(LogNotifier),
    )
    .expect("reopen");
    let view = again.approve_run(run, &Actor::app()).expect("approve");
    assert_eq!(view.state, merged());
    assert_eq!(merges_on_main(&w.repo), 1, "exactly one merge commit");
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), commit);
    let said = again.activity(run, 0).expect("activity");
    assert!(
        said.iter().any(|a| a.kind() == "merge"
            && a.payload()["text"]
                .as_str()
                .is_some_and(|t| t.contains("already merged"))),
        "{said:?}"
    );
    assert!(
        !said.iter().any(|a| a.kind() == "security"),
        "our own merge is no security event: {said:?}"
    );
    // And once more: nothing.
    assert!(again.approve_run(run, &Actor::app()).is_err());
    assert_eq!(merges_on_main(&w.repo), 1);
    assert!(again.verify_audit().expect("read").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_found_on_main_without_a_merge_of_overseers_is_a_security_event() {
    let notes = Arc::new(Captured::default());
    let w = world_with(WorkspaceSettings::default(), notes.clone(), "").await;
    let run = start(&w, "happy");
    to_review(&w, run.into()).await;
    // Someone merges the run's branch into main behind Overseer's back.
    let dir = w.engine.worktree_path("demo", run);
    git(
        &w.repo,
        &["fetch", "-q", &dir.to_string_lossy(), "overseer/run-1"],
    );
    git(
        &w.repo,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merged by hand",
            "FETCH_HEAD",
        ],
    );
    let by_hand = git(&w.repo, &["rev-parse", "main"]);
    let view = w.engine.approve_run(run, &Actor::app()).expect("approve");
    assert_eq!(
        view.state,
        merged(),
        "the approval stands; nothing merges again"
    );
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), by_hand);
    assert_eq!(merges_on_main(&w.repo), 1);
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity
            .iter()
            .any(|a| a.kind() == "security" && a.payload()["event"] == "unrecorded_merge"),
        "{activity:?}"
    );
    assert_eq!(audit_mentions(&w, "unrecorded_merge"), 1);
    assert!(
        notes.kinds().contains(&NotificationKind::SecurityEvent),
        "{:?}",
        notes.kinds()
    );
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

/// An evaluator that answers at once, except on merge reviews, where it
/// waits for the file `go` and then approves.
/// The file a co-signing evaluator waits for before it answers a merge
/// review: in the run's worktree, where the evaluator runs (contained like
/// the run's checks, it sees nothing of the test's own temp dirs).
const GO: &str = ".git/overseer-test-go";

fn let_the_supervisor_answer(w: &World, run: overseer_core::RunId) {
    let go = w.engine.worktree_path("demo", run).join(GO);
    std::fs::write(go, "").expect("let the supervisor answer");
}

fn cosign_policy() -> SupervisorPolicy {
    let script = format!(
        r#"input=$(cat)
case "$input" in
  *'"subject":"step"'*) echo '{{"verdict":"continue","rationale":"fine"}}'; exit 0;;
  *'"kind":"merge_review"'*) while [ ! -f '{go}' ]; do sleep 0.1; done;;
esac
echo '{{"verdict":"approve","rationale":"looks right"}}'"#,
        go = GO
    );
    SupervisorPolicy {
        enabled: true,
        autonomy: Autonomy::Advisory,
        gate_authority: [(GateKind::MergeReview, Autonomy::Cosign)]
            .into_iter()
            .collect(),
        evaluator: EvaluatorConfig::Command {
            command: "sh".into(),
            args: vec!["-c".into(), script],
        },
        timeout_seconds: 60,
        ..SupervisorPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_humans_approval_of_a_cosigned_merge_review_waits_for_the_supervisor() {
    let w = world_with(
        WorkspaceSettings {
            supervisor: Some(cosign_policy()),
            ..Default::default()
        },
        Arc::new(LogNotifier),
        "",
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w, "happy");
    to_review(&w, run.into()).await;
    let review = pending_gate(&w, run, GateKind::MergeReview).await;
    let review = until(&w, "the review's co-sign terms", |e| {
        let g = e.gate(review.id).ok()?;
        (g.authority == Some(Autonomy::Cosign)).then_some(g)
    })
    .await;

    // The human approves: a vote, not a merge.
    let view = w.engine.approve_run(run, &Actor::app()).expect("approve");
    assert_eq!(
        view.state,
        RunState::PendingReview,
        "waiting for the co-sign"
    );
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base, "nothing merged");
    let gate = w.engine.gate(review.id).expect("gate");
    assert!(gate.decision.is_none(), "{gate:?}");
    let story = w.engine.gate_story(review.id).expect("story");
    assert_eq!(story.awaiting_cosign, Some(true));
    assert!(w
        .engine
        .activity(run, 0)
        .expect("activity")
        .iter()
        .any(|a| a.kind() == "cosign"));
    // Approving again is still a vote: nothing merges twice, nothing yet.
    let view = w.engine.approve_run(run, &Actor::app()).expect("again");
    assert_eq!(view.state, RunState::PendingReview);
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base);

    // The supervisor co-signs: the merge happens, once, as the human's.
    let_the_supervisor_answer(&w, run);
    state(&w, run, merged()).await;
    assert_eq!(merges_on_main(&w.repo), 1);
    let gate = w.engine.gate(review.id).expect("gate");
    let d = gate.decision.expect("decided");
    assert_eq!((d.option.as_str(), d.actor), ("approve", Actor::app()));
    assert!(gate.effected);
    let story = w.engine.gate_story(review.id).expect("story");
    assert_eq!(story.awaiting_cosign, Some(false));
    assert!(story
        .decisions
        .iter()
        .any(|d| matches!(d.actor, Actor::Supervisor(_))
            && d.verdict == overseer_core::supervision::Verdict::Approve));
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cosigned_review_the_supervisor_approved_first_merges_on_the_humans_approval() {
    let w = world_with(
        WorkspaceSettings {
            supervisor: Some(cosign_policy()),
            ..Default::default()
        },
        Arc::new(LogNotifier),
        "",
    )
    .await;
    let run = start(&w, "happy");
    to_review(&w, run.into()).await;
    let_the_supervisor_answer(&w, run);
    let review = pending_gate(&w, run, GateKind::MergeReview).await;
    until(&w, "the supervisor's approval", |e| {
        let story = e.gate_story(review.id).ok()?;
        story
            .decisions
            .iter()
            .any(|d| matches!(d.actor, Actor::Supervisor(_)))
            .then_some(())
    })
    .await;
    // The supervisor alone never merges.
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::PendingReview
    );
    assert_eq!(merges_on_main(&w.repo), 0);
    let view = w.engine.approve_run(run, &Actor::app()).expect("approve");
    assert_eq!(view.state, merged());
    assert_eq!(merges_on_main(&w.repo), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_that_cannot_happen_changes_nothing_and_its_retry_merges_once() {
    let w = world_with(WorkspaceSettings::default(), Arc::new(LogNotifier), "").await;
    let run = start(&w, "happy");
    to_review(&w, run.into()).await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    // The user's checkout of main has uncommitted work: nothing may touch it.
    std::fs::write(w.repo.join("README.md"), "my uncommitted work\n").expect("dirty");
    let err = w
        .engine
        .approve_run(run, &Actor::app())
        .expect_err("dirty checkout");
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("commit or stash"), "{}", err.message);
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base);
    assert_eq!(
        git(&w.repo, &["for-each-ref", "refs/overseer"]),
        "",
        "the hidden ref is gone"
    );
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::PendingReview
    );
    let deviation = pending_gate(&w, run, GateKind::Deviation).await;
    assert!(
        matches!(
            &deviation.body,
            GateBody::Deviation(d) if d.cause == DeviationCause::MergeFailed && !d.error.is_empty()
        ),
        "{:?}",
        deviation.body
    );
    // The user puts their work away and retries: one merge.
    git(&w.repo, &["stash", "-q"]);
    w.engine
        .decide_gate(deviation.id, "retry", None, &Actor::app())
        .expect("retry");
    state(&w, run, merged()).await;
    assert_eq!(merges_on_main(&w.repo), 1);
    git(&w.repo, &["stash", "pop", "-q"]);
    assert_eq!(
        std::fs::read_to_string(w.repo.join("README.md")).expect("read"),
        "my uncommitted work\n"
    );
}

/// Two-person merges: the owner started the run, so neither of the owner's
/// surfaces (window, CLI) nor the supervisor can merge it; a paired approver
/// can, through the same call the browser makes, and "Why?" shows both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_person_workspace_merges_only_on_a_second_persons_approval() {
    use overseer_server::api::{op, Operation};
    let w = world_with(
        WorkspaceSettings {
            two_person_merge: true,
            ..Default::default()
        },
        Arc::new(LogNotifier),
        "",
    )
    .await;
    let run = start(&w, "happy");
    to_review(&w, run.into()).await;
    for owner in [Actor::cli(), Actor::app()] {
        let e = w
            .engine
            .approve_run(run, &owner)
            .expect_err("the starter cannot be the second person");
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(
            e.message.contains("started by user:cli") && e.message.contains("second person"),
            "{}",
            e.message
        );
    }
    assert_eq!(merges_on_main(&w.repo), 0, "nothing merged");
    assert_eq!(
        w.engine.run(run).expect("run").state,
        RunState::PendingReview
    );

    // An observer may not; an approver of the workspace may.
    let dee = common::pair(&w.engine, "dee", "Dee's tablet")
        .device
        .actor();
    w.engine
        .set_grant(
            "dee",
            &overseer_core::Grant {
                role: overseer_core::Role::Observer,
                workspaces: None,
            },
            &Actor::cli(),
        )
        .expect("observer");
    let e = op::ApproveRun { run }
        .perform(&w.engine, &dee)
        .expect_err("an observer");
    assert_eq!(e.code, ErrorCode::Forbidden);
    let ana = common::pair(&w.engine, "ana", "Ana's phone").device.actor();
    let view = op::ApproveRun { run }
        .perform(&w.engine, &ana)
        .expect("a second person merges");
    assert_eq!(view.state, merged());
    assert_eq!(merges_on_main(&w.repo), 1);
    let story = w.engine.run_story(run).expect("story");
    let text = serde_json::to_string(&story).expect("json");
    assert!(text.contains("user:ana"), "the approver is in the story");
    assert!(text.contains("user:cli"), "so is the one who started it");
    w.engine.verify_audit().expect("read").expect("verifies");
}

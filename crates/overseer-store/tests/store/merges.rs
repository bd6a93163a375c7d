//! Merge records on a real SQLite file: the intent is written (and signed)
//! before git runs, the merge commit before it is on a branch, and a merge
//! recorded as done is never started again; a run's repository and the
//! commits it started from and was reviewed at are kept with it.

use crate::common;

use common::Fixture;
use overseer_core::Actor;
use overseer_store::StoreError;

#[test]
fn a_merge_goes_from_intent_to_done_and_is_never_started_again() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let user = Actor::User("cli".into());
    f.store
        .write(|tx| {
            tx.set_run_work(
                run,
                "/data/worktrees/demo-run-1",
                "overseer/run-1",
                "main",
                Some("b0"),
                &Actor::Engine,
                1_001,
            )?;
            tx.set_reviewed_tip(run, "t1", 1_002)
        })
        .expect("run work");
    let work = f.store.run_work(run).expect("work");
    assert_eq!(work.base_commit.as_deref(), Some("b0"));
    assert_eq!(work.reviewed_tip.as_deref(), Some("t1"));
    assert_eq!(f.store.merge_record(run).expect("read"), None);

    f.store
        .write(|tx| tx.begin_merge(run, "main", "b0", "t1", &user, 1_003))
        .expect("intent");
    let m = f.store.merge_record(run).expect("read").expect("record");
    assert!(!m.done && m.merge_commit.is_none());
    assert_eq!((m.base_before.as_str(), m.tip.as_str()), ("b0", "t1"));
    // A retry after a failure (the base moved) starts it again from there.
    f.store
        .write(|tx| tx.begin_merge(run, "main", "b1", "t1", &user, 1_004))
        .expect("intent again");
    f.store
        .write(|tx| tx.set_merge_commit(run, "m1", 1_005))
        .expect("commit");
    f.store
        .write(|tx| tx.finish_merge(run, "main", "b1", "t1", None, "merged", &user, 1_006))
        .expect("done");
    let m = f.store.merge_record(run).expect("read").expect("record");
    assert!(m.done);
    assert_eq!(
        m.merge_commit.as_deref(),
        Some("m1"),
        "kept from the intent"
    );
    assert_eq!(m.outcome.as_deref(), Some("merged"));
    assert_eq!(f.store.merges_of_task(work.task_id).expect("task").len(), 1);

    let err = f
        .store
        .write(|tx| tx.begin_merge(run, "main", "b2", "t1", &user, 1_007))
        .expect_err("done is done");
    assert!(
        matches!(err, StoreError::InvalidInput(ref m) if m.contains("already merged")),
        "{err}"
    );
    let err = f
        .store
        .write(|tx| tx.set_merge_commit(run, "m2", 1_008))
        .expect_err("no merge in progress");
    assert!(matches!(err, StoreError::InvalidInput(_)), "{err}");
    assert_eq!(
        f.store
            .merge_record(run)
            .expect("read")
            .expect("record")
            .merge_commit
            .as_deref(),
        Some("m1")
    );

    // Every step has its signed record, and the log verifies.
    let kinds: Vec<String> = f
        .store
        .audit_story("run_id", run.into())
        .expect("story")
        .into_iter()
        .filter_map(|r| {
            serde_json::from_str::<serde_json::Value>(&r.record.payload)
                .ok()
                .and_then(|p| p["type"].as_str().map(str::to_owned))
        })
        .filter(|t| t.starts_with("merge_") || t == "run_reviewed_tip")
        .collect();
    assert_eq!(
        kinds,
        [
            "run_reviewed_tip",
            "merge_intent",
            "merge_intent",
            "merge_commit",
            "merge_done"
        ]
    );
    assert!(f.store.verify_audit().expect("read").is_ok());
}

#[test]
fn a_merge_of_a_missing_run_is_refused() {
    let mut f = Fixture::new();
    let err = f
        .store
        .write(|tx| {
            tx.begin_merge(
                overseer_core::RunId(99),
                "main",
                "b0",
                "t1",
                &Actor::Engine,
                1_000,
            )
        })
        .expect_err("no such run");
    assert!(
        matches!(
            err,
            StoreError::NotFound {
                what: "run",
                id: 99
            }
        ),
        "{err}"
    );
}

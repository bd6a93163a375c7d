//! Runs and gates on a real SQLite file: compare-and-set transitions, gates
//! decided exactly once, and the errors a user sees.

use crate::common;

use common::Fixture;
use overseer_core::{
    Actor, ErrorCode, GateKind, GateOption, GateStatus, ReleaseReason, RunEvent, RunState,
    ToolCallChoice,
};
use overseer_store::StoreError;

#[test]
fn entering_pending_review_opens_a_merge_review_gate_and_marks_needs_you() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let view = f.store.run(run).expect("run");
    assert_eq!(view.state, RunState::PendingReview);
    assert!(view.needs_you);
    let gate = view.pending_gate.expect("pending gate");
    assert_eq!(gate.kind, GateKind::MergeReview);
    let g = f.store.gate(gate.id).expect("gate");
    assert_eq!(g.status, GateStatus::Pending);
    assert_eq!(
        g.options.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(),
        ["approve", "reject", "abort"]
    );
}

#[test]
fn the_needs_you_count_agrees_with_the_rows() {
    let mut f = Fixture::new();
    assert_eq!(f.store.needs_you_count().expect("count"), 0);
    let waiting = f.pending_review_run(1_000);
    let other = f.pending_review_run(1_000);
    let count = |f: &Fixture| {
        let rows = f.store.runs().expect("runs");
        (
            f.store.needs_you_count().expect("count"),
            rows.iter().filter(|r| r.needs_you).count(),
        )
    };
    assert_eq!(count(&f), (2, 2));
    // Decided and released: no longer counted.
    let gate = f.store.run(other).expect("run").pending_gate.expect("gate");
    f.store
        .write(|tx| {
            tx.decide_gate(gate.id, "approve", None, &Actor::app(), 2_000)?;
            tx.transition(other, RunEvent::Approve, None, &Actor::app(), 2_000)
        })
        .expect("approve");
    assert_eq!(count(&f), (1, 1));
    assert!(f.store.run(waiting).expect("run").needs_you);
}

#[test]
fn an_invalid_transition_is_refused_and_changes_nothing() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let before = f.store.audit_len().expect("len");
    let err = f
        .store
        .write(|tx| tx.transition(run, RunEvent::Claim, None, &Actor::cli(), 2_000))
        .expect_err("invalid");
    assert_eq!(err.code(), ErrorCode::InvalidTransition);
    assert_eq!(
        err.to_string(),
        format!("run {run}: cannot claim a run that is pending_review")
    );
    assert_eq!(
        f.store.run(run).expect("run").state,
        RunState::PendingReview
    );
    assert_eq!(f.store.audit_len().expect("len"), before);
}

#[test]
fn a_failed_closure_rolls_back_the_change_and_its_audit_record() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let before = f.store.audit_len().expect("len");
    let err = f
        .store
        .write(|tx| {
            tx.transition(run, RunEvent::Approve, None, &Actor::cli(), 2_000)?;
            Err::<(), _>(StoreError::InvalidInput(
                "simulated failure after the change".into(),
            ))
        })
        .expect_err("fails");
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert_eq!(
        f.store.run(run).expect("run").state,
        RunState::PendingReview
    );
    assert_eq!(f.store.audit_len().expect("len"), before);
}

#[test]
fn deciding_a_gate_twice_returns_already_decided_and_changes_nothing() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = f
        .store
        .run(run)
        .expect("run")
        .pending_gate
        .expect("gate")
        .id;
    f.store
        .write(|tx| tx.decide_gate(gate, "approve", None, &Actor::app(), 2_000))
        .expect("first decision");
    let before = f.store.audit_len().expect("len");
    let err = f
        .store
        .write(|tx| tx.decide_gate(gate, "reject", Some("no"), &Actor::cli(), 3_000))
        .expect_err("second decision");
    assert!(matches!(err, StoreError::AlreadyDecided { .. }), "{err}");
    assert_eq!(err.code(), ErrorCode::AlreadyDecided);
    assert!(err.to_string().contains("approve by user:app"), "{err}");
    let g = f.store.gate(gate).expect("gate");
    let d = g.decision.expect("decision");
    assert_eq!(
        (d.option.as_str(), d.actor, d.at),
        ("approve", Actor::app(), 2_000)
    );
    assert_eq!(f.store.audit_len().expect("len"), before);
}

#[test]
fn a_decision_must_name_an_offered_option_and_reject_needs_a_reason() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = f
        .store
        .run(run)
        .expect("run")
        .pending_gate
        .expect("gate")
        .id;
    let err = f
        .store
        .write(|tx| tx.decide_gate(gate, "merge", None, &Actor::cli(), 2_000))
        .expect_err("unknown option");
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    let err = f
        .store
        .write(|tx| tx.decide_gate(gate, "reject", Some("  "), &Actor::cli(), 2_000))
        .expect_err("blank reason");
    assert!(err.to_string().contains("needs a reason"), "{err}");
    assert_eq!(
        f.store.gate(gate).expect("gate").status,
        GateStatus::Pending
    );
}

#[test]
fn a_gate_offers_only_its_kinds_typed_choices() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let before = f.store.gates(true).expect("gates").len();
    // An ACP option id is not a tool-call choice: a gate source must map it.
    let err = f
        .store
        .write(|tx| {
            tx.open_gate(
                run,
                "Run `npm install`",
                &[
                    GateOption::new("allow_once", "Yes"),
                    GateOption::new("no", "No"),
                ],
                &overseer_core::GateBody::empty(GateKind::ToolCall),
                &Actor::Engine,
                2_000,
            )
        })
        .expect_err("allow_once is not a tool-call choice");
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert!(err.to_string().contains("allow_once"), "{err}");
    assert_eq!(f.store.gates(true).expect("gates").len(), before);
    let opened = f.store.write(|tx| {
        tx.open_gate(
            run,
            "Run `npm install`",
            &[
                GateOption::choice(ToolCallChoice::Yes, "Yes"),
                GateOption::choice(ToolCallChoice::No, "No"),
            ],
            &overseer_core::GateBody::empty(GateKind::ToolCall),
            &Actor::Engine,
            2_000,
        )
    });
    assert!(opened.is_ok(), "{opened:?}");
}

#[test]
fn releasing_a_run_closes_its_pending_gates() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = f
        .store
        .run(run)
        .expect("run")
        .pending_gate
        .expect("gate")
        .id;
    f.store
        .write(|tx| tx.transition(run, RunEvent::Abort, None, &Actor::cli(), 2_000))
        .expect("abort");
    let v = f.store.run(run).expect("run");
    assert_eq!(
        v.state,
        RunState::Released {
            reason: ReleaseReason::AbortedByUser
        }
    );
    assert!(!v.needs_you);
    assert!(v.pending_gate.is_none());
    let g = f.store.gate(gate).expect("gate");
    assert_eq!(g.decision.expect("closed").option, "cancelled");
}

#[test]
fn two_connections_racing_on_one_gate_produce_exactly_one_decision() {
    for round in 0..20 {
        let mut f = Fixture::new();
        let run = f.pending_review_run(1_000);
        let gate = f
            .store
            .run(run)
            .expect("run")
            .pending_gate
            .expect("gate")
            .id;
        let mut a = f.reopen();
        let mut b = f.reopen();
        let ta = std::thread::spawn(move || {
            a.write(|tx| tx.decide_gate(gate, "approve", None, &Actor::app(), 2_000))
                .is_ok()
        });
        let tb = std::thread::spawn(move || {
            b.write(|tx| tx.decide_gate(gate, "abort", None, &Actor::cli(), 2_000))
                .is_ok()
        });
        let wins = [ta.join().expect("a"), tb.join().expect("b")];
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "round {round}: {wins:?}"
        );
        let decisions: i64 = f
            .store
            .raw_connection()
            .query_row(
                "SELECT count(*) FROM gate_decisions WHERE gate_id = ?1",
                [gate],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(decisions, 1);
        assert!(f.store.verify_audit().expect("read").is_ok());
    }
}

#[test]
fn a_database_from_a_newer_overseer_is_refused_on_open() {
    let f = Fixture::new();
    f.store
        .raw_connection()
        .pragma_update(None, "user_version", 99)
        .expect("bump");
    let dir = &f.dir;
    let keyring =
        overseer_store::Keyring::load_or_create(&dir.path().join("config")).expect("keys");
    let err = overseer_store::Store::open(&f.db_path(), keyring)
        .err()
        .expect("refused");
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert_eq!(err.code(), ErrorCode::Storage);
}

#[test]
fn a_database_locked_by_another_writer_gives_a_clear_busy_error() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let holder = rusqlite::Connection::open(f.db_path()).expect("open");
    holder.execute_batch("BEGIN IMMEDIATE").expect("lock");
    holder
        .busy_timeout(std::time::Duration::from_millis(0))
        .expect("timeout");
    // The store waits its busy timeout, then says what to do.
    let started = std::time::Instant::now();
    let err = f
        .store
        .write(|tx| tx.transition(run, RunEvent::Approve, None, &Actor::cli(), 2_000))
        .expect_err("locked");
    assert!(started.elapsed() >= std::time::Duration::from_secs(4));
    assert!(matches!(err, StoreError::Busy { .. }), "{err}");
    assert!(
        err.to_string().contains("locked by another process"),
        "{err}"
    );
    holder.execute_batch("ROLLBACK").expect("unlock");
    assert_eq!(
        f.store.run(run).expect("run").state,
        RunState::PendingReview
    );
}

#[test]
fn the_database_opened_with_another_key_is_refused() {
    let f = Fixture::new();
    let other = tempfile::tempdir().expect("tempdir");
    let keyring = overseer_store::Keyring::load_or_create(other.path()).expect("keys");
    let err = overseer_store::Store::open(&f.db_path(), keyring)
        .err()
        .expect("refused");
    assert!(matches!(err, StoreError::KeyMismatch { .. }), "{err}");
    assert!(err.to_string().contains("--config-dir"));
}

#[test]
fn a_run_for_a_missing_task_is_a_clear_not_found() {
    let mut f = Fixture::new();
    let err = f
        .store
        .write(|tx| tx.create_run(overseer_core::TaskId(4242), "demo", &Actor::cli(), 1))
        .expect_err("no such task");
    assert!(
        matches!(
            err,
            StoreError::NotFound {
                what: "task",
                id: 4242
            }
        ),
        "{err}"
    );
    assert_eq!(f.store.audit_len().expect("len"), 0);
}

#[test]
fn a_gate_an_older_version_wrote_in_another_shape_still_opens_with_its_payload_kept_raw() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    // Rows as an older version wrote them: a tool call in the demo's old
    // shape, a deviation that fits today's type, and a payload that is not
    // JSON at all.
    {
        let conn = f.store.raw_connection();
        let options = r#"[{"id":"yes","label":"Yes"},{"id":"no","label":"No"}]"#;
        for (kind, payload) in [
            (
                "tool_call",
                r#"{"tool":"Bash","command":"npm install pg-migrate"}"#,
            ),
            (
                "deviation",
                r#"{"cause":"merge_failed","error":"conflict in a.rs"}"#,
            ),
            ("question", "{not json"),
        ] {
            conn.execute(
                "INSERT INTO gates(run_id, kind, status, title, options, payload, opened_at)
                 VALUES (?1, ?2, 'pending', 'old gate', ?3, ?4, 1500)",
                rusqlite::params![run, kind, options, payload],
            )
            .expect("old row");
        }
    }
    let mut store = f.reopen();
    let gates = store.gates(true).expect("every gate reads");
    let old = |kind: GateKind| {
        gates
            .iter()
            .find(|g| g.kind() == kind && g.title == "old gate")
            .unwrap_or_else(|| panic!("the old {kind:?} gate is listed"))
    };
    let tool = old(GateKind::ToolCall);
    assert_eq!(
        tool.body,
        overseer_core::GateBody::empty(GateKind::ToolCall)
    );
    assert_eq!(
        tool.unreadable_payload,
        Some(serde_json::json!({"tool": "Bash", "command": "npm install pg-migrate"}))
    );
    let deviation = old(GateKind::Deviation);
    assert_eq!(deviation.unreadable_payload, None);
    assert!(matches!(
        &deviation.body,
        overseer_core::GateBody::Deviation(d)
            if d.cause == overseer_core::DeviationCause::MergeFailed && d.error == "conflict in a.rs"
    ));
    let question = old(GateKind::Question);
    assert_eq!(question.unreadable_payload, Some(serde_json::Value::Null));
    // On the wire the fallback is a named key beside the empty payload.
    let wire = serde_json::to_value(tool).expect("serializes");
    assert_eq!(wire["kind"], "tool_call");
    assert_eq!(
        wire["unreadable_payload"]["command"],
        "npm install pg-migrate"
    );
    // The gate is still one a human can decide.
    let id = tool.id;
    assert_eq!(
        store.gate(id).expect("by id").unreadable_payload,
        tool.unreadable_payload
    );
    let decided = store
        .write(|tx| tx.decide_gate(id, "yes", None, &Actor::User("me".into()), 2_000))
        .expect("decided");
    assert_eq!(decided.status, GateStatus::Decided);
}

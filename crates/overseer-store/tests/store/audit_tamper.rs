//! The audit log catches every kind of tampering, naming the first bad seq.
//! Each test edits the real database file the way an attacker would.

use crate::common;

use common::Fixture;
use overseer_core::Actor;
use overseer_store::{AuditProblem, VerifyFailure};
use serde_json::json;

/// A store with `n` audit records and a checkpoint after the first `checkpoint_at`.
fn log_with(n: i64, checkpoint_at: Option<i64>) -> Fixture {
    let mut f = Fixture::new();
    for i in 1..=n {
        f.store
            .write(|tx| {
                tx.append_untyped_audit(&Actor::cli(), &json!({"type": "test", "i": i}), 1_000 + i)
            })
            .expect("append");
        if checkpoint_at == Some(i) {
            f.store.checkpoint(5_000 + i).expect("checkpoint");
        }
    }
    f
}

fn verdict(f: &Fixture) -> Result<i64, VerifyFailure> {
    f.store
        .verify_audit()
        .expect("readable")
        .map(|r| r.records)
        .map_err(|e| {
            assert!(e.decisions.is_empty(), "no decision rows here: {e}");
            e.record.expect("a bad record")
        })
}

fn sql(f: &Fixture, sql: &str) {
    f.store.raw_connection().execute_batch(sql).expect("tamper");
}

/// A log longer than the batches of signatures verified together (and
/// spread across cores): 10,000 records written in one transaction.
fn long_log(n: i64) -> Fixture {
    let mut f = Fixture::new();
    f.store
        .write(|tx| {
            for i in 1..=n {
                tx.append_untyped_audit(
                    &Actor::cli(),
                    &json!({"type": "test", "i": i}),
                    1_000 + i,
                )?;
            }
            Ok(())
        })
        .expect("append");
    f
}

#[test]
fn in_a_long_log_the_first_bad_record_is_named_whichever_batch_holds_it() {
    let f = long_log(10_000);
    assert_eq!(verdict(&f), Ok(10_000));
    // A signature copied from another record, alone in its batch: the batch
    // fails, and the record is named.
    sql(
        &f,
        "UPDATE audit_log SET signature = (SELECT signature FROM audit_log WHERE seq = 2)
         WHERE seq = 9001",
    );
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (9_001, AuditProblem::BadSignature));
    // An edited payload earlier, in another batch (and on another core):
    // it is the first bad record.
    sql(
        &f,
        r#"UPDATE audit_log SET payload = '{"i":999,"type":"test"}' WHERE seq = 5000"#,
    );
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (5_000, AuditProblem::PayloadEdited));
    // A signature replaced by garbage before both.
    sql(
        &f,
        "UPDATE audit_log SET signature = 'not a signature' WHERE seq = 4097",
    );
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (4_097, AuditProblem::BadSignature));
    // A record deleted before them all: named where it is missing.
    sql(&f, "DELETE FROM audit_log WHERE seq = 300");
    let err = verdict(&f).expect_err("tampered");
    assert_eq!(
        (err.seq, err.problem),
        (300, AuditProblem::SeqGap { found: 301 })
    );
}

#[test]
fn an_intact_log_verifies_with_its_record_count() {
    let f = log_with(12, Some(8));
    assert_eq!(verdict(&f), Ok(12));
}

#[test]
fn an_edited_payload_is_caught_at_its_seq() {
    let f = log_with(10, None);
    sql(
        &f,
        r#"UPDATE audit_log SET payload = '{"i":999,"type":"test"}' WHERE seq = 4"#,
    );
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (4, AuditProblem::PayloadEdited));
}

#[test]
fn an_edited_actor_is_caught_even_with_hashes_left_alone() {
    let f = log_with(10, None);
    sql(&f, "UPDATE audit_log SET actor = 'user:app' WHERE seq = 6");
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (6, AuditProblem::FieldsEdited));
}

#[test]
fn an_edit_with_recomputed_hashes_fails_the_signature() {
    let f = log_with(10, None);
    // Recompute the payload hash as an attacker without the key could.
    let payload = r#"{"i":999,"type":"test"}"#;
    let hash = {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(payload.as_bytes()))
    };
    let conn = f.store.raw_connection();
    let (prev, actor, at): (String, String, i64) = conn
        .query_row(
            "SELECT prev_hash, actor, at FROM audit_log WHERE seq = 3",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("row");
    let record_hash = {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(
            format!("overseer-audit-v1\n3\n{prev}\n{hash}\n{actor}\n{at}").as_bytes(),
        ))
    };
    conn.execute(
        "UPDATE audit_log SET payload = ?1, payload_hash = ?2, record_hash = ?3 WHERE seq = 3",
        rusqlite::params![payload, hash, record_hash],
    )
    .expect("tamper");
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (3, AuditProblem::BadSignature));
}

#[test]
fn a_deleted_record_is_caught_where_it_is_missing() {
    let f = log_with(10, None);
    sql(&f, "DELETE FROM audit_log WHERE seq = 5");
    let err = verdict(&f).expect_err("tampered");
    assert_eq!(
        (err.seq, err.problem),
        (5, AuditProblem::SeqGap { found: 6 })
    );
}

#[test]
fn reordered_records_are_caught_at_the_first_moved_one() {
    let f = log_with(10, None);
    sql(
        &f,
        "UPDATE audit_log SET seq = -1 WHERE seq = 4;
         UPDATE audit_log SET seq = 4 WHERE seq = 5;
         UPDATE audit_log SET seq = 5 WHERE seq = -1;",
    );
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (4, AuditProblem::ChainBroken));
}

#[test]
fn a_signature_copied_from_another_record_is_caught() {
    let f = log_with(10, None);
    sql(
        &f,
        "UPDATE audit_log SET signature = (SELECT signature FROM audit_log WHERE seq = 2) WHERE seq = 7",
    );
    let err = verdict(&f).expect_err("tampered");
    assert_eq!((err.seq, err.problem), (7, AuditProblem::BadSignature));
}

#[test]
fn a_tail_cut_after_the_last_checkpoint_is_caught() {
    let f = log_with(10, Some(10));
    sql(&f, "DELETE FROM audit_log WHERE seq > 7");
    let err = verdict(&f).expect_err("tampered");
    assert_eq!(
        (err.seq, err.problem.clone()),
        (
            8,
            AuditProblem::Truncated {
                checkpoint_count: 10,
                found: 7
            }
        )
    );
    assert!(err.to_string().contains("tail was cut off"), "{err}");
}

#[test]
fn cutting_the_tail_and_the_database_checkpoints_is_still_caught_by_the_config_dir_copy() {
    let f = log_with(10, Some(10));
    sql(
        &f,
        "DELETE FROM audit_log WHERE seq > 6; DELETE FROM audit_checkpoints;",
    );
    let err = verdict(&f).expect_err("tampered");
    assert_eq!(err.seq, 7);
    assert!(matches!(
        err.problem,
        AuditProblem::Truncated {
            checkpoint_count: 10,
            found: 6
        }
    ));
}

#[test]
fn a_tail_rewritten_under_a_checkpoint_is_caught() {
    // Delete the tail, then append new (validly signed) records of the same
    // count: the chain is intact but not the history the checkpoint vouched for.
    let mut f = log_with(6, Some(6));
    sql(&f, "DELETE FROM audit_log WHERE seq > 4");
    for i in 0..2 {
        f.store
            .write(|tx| {
                tx.append_untyped_audit(&Actor::cli(), &json!({"type": "forged", "i": i}), 9_000)
            })
            .expect("append");
    }
    let err = verdict(&f).expect_err("tampered");
    assert_eq!(
        (err.seq, err.problem),
        (
            6,
            AuditProblem::CheckpointMismatch {
                checkpoint_count: 6
            }
        )
    );
}

#[test]
fn a_forged_checkpoint_is_caught() {
    let f = log_with(5, Some(5));
    sql(&f, "UPDATE audit_checkpoints SET count = 3");
    let err = verdict(&f).expect_err("tampered");
    assert!(
        matches!(err.problem, AuditProblem::BadCheckpointSignature { .. }),
        "{err}"
    );
}

#[test]
fn verifying_while_an_engine_appends_and_checkpoints_finds_nothing_wrong() {
    // `overseer audit verify` from another process while the engine writes:
    // records and checkpoints land between its reads. Read apart, a
    // checkpoint newer than the records read looked like a cut-off tail.
    let mut f = log_with(20, Some(20));
    let reader = f.reopen();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writing = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            // Bounded: verifying checks every signature (slow in a debug build).
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && i < 60 {
                i += 1;
                f.store
                    .write(|tx| {
                        tx.append_untyped_audit(
                            &Actor::cli(),
                            &json!({"type": "test", "w": i}),
                            10_000 + i,
                        )
                    })
                    .expect("append");
                f.store.checkpoint(20_000 + i).expect("checkpoint");
            }
            i
        })
    };
    for _ in 0..6 {
        let verdict = reader.verify_audit().expect("readable");
        assert!(verdict.is_ok(), "a live log read as broken: {verdict:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let written = writing.join().expect("writer");
    assert!(written > 0);
}

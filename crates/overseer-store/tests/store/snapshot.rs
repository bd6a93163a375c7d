//! Another machine's audit log verified here: a consistent copy of the
//! database and its checkpoint, checked with a public key alone (the one
//! pinned earlier), never with the key the other machine holds.

use crate::common;

use common::Fixture;
use overseer_core::Actor;
use overseer_store::snapshot::{snapshot_audit, verify_snapshot, SNAPSHOT_CHECKPOINT};
use overseer_store::Keyring;
use serde_json::json;

fn log_of(n: i64) -> Fixture {
    let mut f = Fixture::new();
    for i in 1..=n {
        f.store
            .write(|tx| {
                tx.append_untyped_audit(&Actor::cli(), &json!({"type": "test", "i": i}), 1_000 + i)
            })
            .expect("append");
    }
    f.store.checkpoint(9_000).expect("checkpoint");
    f
}

#[test]
fn a_snapshot_verifies_with_the_pinned_public_key_and_fails_with_another() {
    let f = log_of(40);
    let out = tempfile::tempdir().expect("tempdir");
    let copied = snapshot_audit(&f.db_path(), &f.config_dir(), out.path()).expect("snapshot");
    assert_eq!(copied, 40);
    assert!(out.path().join(SNAPSHOT_CHECKPOINT).exists());

    let pinned = Keyring::load_or_create(&f.config_dir())
        .expect("key")
        .public_key_hex();
    let report = verify_snapshot(out.path(), &pinned)
        .expect("readable")
        .expect("verifies with the key that signed it");
    assert_eq!(report.records, 40);
    assert!(report.checkpoints >= 2, "the database's and the file's");

    let other_dir = tempfile::tempdir().expect("tempdir");
    let other = Keyring::load_or_create(other_dir.path())
        .expect("key")
        .public_key_hex();
    let failure = verify_snapshot(out.path(), &other)
        .expect("readable")
        .expect_err("another key verifies nothing");
    assert_eq!(failure.record.expect("a bad record").seq, 1);

    assert!(verify_snapshot(out.path(), "not hex").is_err());
}

#[test]
fn a_record_edited_before_the_snapshot_fails_verification() {
    let f = log_of(10);
    f.store
        .raw_connection()
        .execute_batch(
            "UPDATE audit_log SET payload = '{\"type\":\"test\",\"i\":99}' WHERE seq = 4",
        )
        .expect("tamper");
    let out = tempfile::tempdir().expect("tempdir");
    snapshot_audit(&f.db_path(), &f.config_dir(), out.path()).expect("snapshot");
    let pinned = Keyring::load_or_create(&f.config_dir())
        .expect("key")
        .public_key_hex();
    let failure = verify_snapshot(out.path(), &pinned)
        .expect("readable")
        .expect_err("an edited record");
    assert_eq!(failure.record.expect("a bad record").seq, 4);
}

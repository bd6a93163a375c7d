//! Records written by an earlier Overseer still verify and tell their story.
//!
//! `fixtures/audit-v1` is a database with one audit record of every kind
//! Overseer writes (made by `examples/audit_fixture.rs` before audit
//! payloads were typed), with its signing key and checkpoint. A copy of it
//! is opened with today's code.

use overseer_core::audit::AuditPayload;
use overseer_core::{GateId, RunId};
use overseer_store::{Keyring, Store, DB_FILE};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A copy of the fixture, opened as every process opens its store.
fn old_store(dir: &tempfile::TempDir) -> Store {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit-v1");
    copy_dir(&fixture, dir.path());
    // git keeps no file modes beyond the executable bit: the key is made
    // owner-only again, as the keyring requires.
    let config = dir.path().join("config");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::set_permissions(
        Keyring::key_path(&config),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let keyring = Keyring::load_or_create(&config).expect("keyring");
    Store::open(&dir.path().join("data").join(DB_FILE), keyring).expect("open")
}

#[test]
fn every_old_record_reads_as_its_typed_payload_and_writes_back_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = old_store(&dir);
    let records = store.audit_records(1, i64::MAX).expect("records");
    assert_eq!(records.len(), 51);
    let mut kinds = std::collections::BTreeSet::new();
    for r in &records {
        let typed = AuditPayload::parse(&r.payload)
            .unwrap_or_else(|e| panic!("record {} does not read ({e}): {}", r.seq, r.payload));
        // Written again, it is the same JSON: the same keys (none added, none
        // left out) and the same values.
        let stored: serde_json::Value = serde_json::from_str(&r.payload).expect("json");
        assert_eq!(typed.to_value(), stored, "record {}", r.seq);
        kinds.insert(match &typed {
            AuditPayload::SecurityEvent(_) => format!(
                "security_event/{}",
                stored["event"].as_str().unwrap_or_default()
            ),
            other => other.kind().to_owned(),
        });
    }
    // Every kind the typed payload knows is in the fixture.
    assert_eq!(kinds.len(), 22 + 7, "{kinds:?}");
}

#[test]
fn an_earlier_overseers_log_verifies_and_tells_each_story() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = old_store(&dir);
    let report = store
        .verify_audit()
        .expect("readable")
        .unwrap_or_else(|e| panic!("the old log must verify: {e}"));
    assert_eq!((report.records, report.checkpoints), (51, 2));
    for run in [RunId(1), RunId(2)] {
        let story = store.audit_story_of_run(run).expect("story");
        assert!(!story.is_empty());
        assert!(
            story.iter().all(|r| r.problem.is_none()),
            "run {run}: {story:?}"
        );
        for r in &story {
            assert!(
                AuditPayload::parse(&r.record.payload).is_ok(),
                "{:?}",
                r.record
            );
        }
        assert_eq!(store.run_decision_problems(run).expect("checks"), vec![]);
    }
    for gate in 1..=6 {
        let story = store.audit_story("gate_id", gate).expect("story");
        assert!(!story.is_empty(), "gate {gate}");
        assert!(story.iter().all(|r| r.problem.is_none()), "gate {gate}");
        assert_eq!(
            store.gate_decision_problems(GateId(gate)).expect("checks"),
            vec![],
            "gate {gate}"
        );
    }
}

/// A rule's decision recorded before provenance was typed (the layer only
/// in its rationale's words) still reads, verifies and says what it said;
/// one written today into the same database keeps its typed provenance.
#[test]
fn an_old_rules_decision_reads_without_provenance_beside_a_typed_one() {
    use overseer_core::rules::{Provenance, RuleLayer};
    use overseer_core::supervision::Verdict;
    use overseer_core::Actor;
    use overseer_store::DecisionInput;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = old_store(&dir);
    let old = store
        .decisions_of_run(RunId(1))
        .expect("old decisions read")
        .into_iter()
        .find(|d| d.rule_ref.as_deref() == Some("workspace:allow Read"))
        .expect("the old rule's decision");
    assert_eq!(old.provenance, None);
    assert_eq!(old.rationale.as_deref(), Some("reads are allowed"));
    let old_record = store.audit_records(old.audit_seq, 1).expect("record");
    let Ok(AuditPayload::Decision(signed)) = AuditPayload::parse(&old_record[0].payload) else {
        panic!("{:?}", old_record[0]);
    };
    assert_eq!(signed.provenance, None);
    let provenance = Provenance::one(RuleLayer::Workspace, "Read");
    store
        .write(|tx| {
            tx.record_decision_note(
                RunId(1),
                None,
                &Actor::Engine,
                &DecisionInput {
                    verdict: Some(Verdict::Approve),
                    rule_ref: Some("Read".into()),
                    provenance: Some(provenance.clone()),
                    ..DecisionInput::default()
                },
                9_000,
            )
        })
        .expect("a new decision");
    let new = store
        .decisions_of_run(RunId(1))
        .expect("read")
        .into_iter()
        .find(|d| d.at == 9_000)
        .expect("the new decision");
    assert_eq!(new.provenance, Some(provenance));
    assert!(store.verify_audit().expect("readable").is_ok());
    assert_eq!(
        store.run_decision_problems(RunId(1)).expect("checks"),
        vec![]
    );
}

//! A run's story (`Store::audit_story_of_run`): every audit record about the
//! run or one of its gates, in log order, each checked, in one scan of the
//! log; the same records the per-gate stories hold, and none of another
//! run's. With `--nocapture` it prints the time beside one scan per gate.

use crate::common;

use common::Fixture;
use overseer_core::{Actor, GateKind, GateOption};
use overseer_store::{DecisionInput, GateSpec};
use std::time::Instant;

#[test]
fn a_runs_story_is_its_records_and_its_gates_records_in_one_scan() {
    let mut f = Fixture::new();
    let runs: Vec<overseer_core::RunId> =
        (0..20).map(|i| f.pending_review_run(1_000 + i)).collect();
    // Each run: 20 tool-call gates, each with a note and a decision.
    for &run in &runs {
        f.store
            .write(|tx| {
                for i in 0..20 {
                    let spec = GateSpec::new(
                        run,
                        overseer_core::GateBody::empty(GateKind::ToolCall),
                        &format!("call {i}"),
                        vec![GateOption::new("yes", "Yes"), GateOption::new("no", "No")],
                    );
                    let gate = tx.open_gate_spec(&spec, &Actor::Agent("demo".into()), 2_000)?;
                    tx.record_decision_note(
                        run,
                        None,
                        &Actor::Engine,
                        &DecisionInput {
                            rule_ref: Some("Read".into()),
                            ..DecisionInput::default()
                        },
                        2_001,
                    )?;
                    tx.decide_gate(gate, "yes", None, &Actor::cli(), 2_002)?;
                }
                Ok(())
            })
            .expect("gates");
    }
    let run = runs[7];
    let gates: Vec<overseer_core::GateId> = f
        .store
        .gates(false)
        .expect("gates")
        .into_iter()
        .filter(|g| g.run_id == run)
        .map(|g| g.id)
        .collect();
    assert!(gates.len() >= 20);

    let t = Instant::now();
    let one = f.store.audit_story_of_run(run).expect("story");
    let single = t.elapsed();

    let t = Instant::now();
    let mut per_gate = f.store.audit_story("run_id", run.into()).expect("story");
    for g in &gates {
        per_gate.extend(f.store.audit_story("gate_id", (*g).into()).expect("story"));
    }
    per_gate.sort_by_key(|r| r.record.seq);
    per_gate.dedup_by_key(|r| r.record.seq);
    let looped = t.elapsed();

    let seqs =
        |v: &[overseer_store::CheckedRecord]| v.iter().map(|r| r.record.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(&one),
        seqs(&per_gate),
        "the same records, in log order"
    );
    assert!(one.iter().all(|r| r.problem.is_none()));
    for r in &one {
        let p: serde_json::Value = serde_json::from_str(&r.record.payload).expect("json");
        assert!(
            p["run_id"] == run
                || p["gate_id"]
                    .as_i64()
                    .is_some_and(|g| gates.contains(&overseer_core::GateId(g))),
            "only this run's records: {p}"
        );
    }
    // The scans alone, without checking each record's signature.
    let conn = f.store.raw_connection();
    let count =
        |sql: &str, id: i64| -> i64 { conn.query_row(sql, [id], |r| r.get(0)).expect("count") };
    let t = Instant::now();
    count(
        "SELECT count(*) FROM audit_log WHERE json_extract(payload, '$.run_id') = ?1
            OR json_extract(payload, '$.gate_id') IN (SELECT id FROM gates WHERE run_id = ?1)",
        run.into(),
    );
    let scan_once = t.elapsed();
    let t = Instant::now();
    count(
        "SELECT count(*) FROM audit_log WHERE json_extract(payload, '$.run_id') = ?1",
        run.into(),
    );
    for g in &gates {
        count(
            "SELECT count(*) FROM audit_log WHERE json_extract(payload, '$.gate_id') = ?1",
            (*g).into(),
        );
    }
    let scan_per_gate = t.elapsed();
    let total: i64 = f
        .store
        .raw_connection()
        .query_row("SELECT count(*) FROM audit_log", [], |r| r.get(0))
        .expect("count");
    eprintln!(
        "run story of 1 run with {} gates, {} of {total} records: one scan {single:?} (the scan alone {scan_once:?}), \
         one scan per gate {looped:?} (the scans alone {scan_per_gate:?})",
        gates.len(),
        one.len()
    );
}

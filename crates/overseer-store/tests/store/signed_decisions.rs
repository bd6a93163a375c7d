//! Decisions exist only with their signed record. Each test writes into the
//! real SQLite file the way someone without the signing key would (a
//! sqlite3 UPDATE or INSERT), then checks that nothing acts on it, that
//! `audit verify` names the row, and that the gate's checks say so.

use crate::common;

use common::Fixture;
use overseer_core::supervision::{Autonomy, Verdict};
use overseer_core::{Actor, GateKind, GateOption, GateStatus, RunId, StepReviewChoice};
use overseer_store::{
    AuditProblem, DecisionInput, DecisionProblem, DecisionTable, GateSpec, Store,
};

fn sql(store: &Store, sql: &str) {
    store.raw_connection().execute_batch(sql).expect("tamper");
}

fn tool_gate(store: &mut Store, run: RunId, authority: Option<Autonomy>) -> i64 {
    let mut spec = GateSpec::new(
        run,
        overseer_core::GateBody::empty(GateKind::ToolCall),
        "rm -rf build",
        vec![GateOption::new("yes", "Yes"), GateOption::new("no", "No")],
    );
    spec.authority = authority;
    spec.approve_option = Some("yes".to_owned());
    store
        .write(|tx| tx.open_gate_spec(&spec, &Actor::Agent("demo".into()), 1_000))
        .expect("open gate")
        .into()
}

fn security_events(store: &Store) -> Vec<serde_json::Value> {
    store
        .audit_records(1, i64::MAX)
        .expect("records")
        .into_iter()
        .map(|r| serde_json::from_str::<serde_json::Value>(&r.payload).expect("json"))
        .filter(|p| p["type"] == "security_event" && p["event"] == "decision_without_record")
        .collect()
}

fn user(option: &str) -> DecisionInput {
    DecisionInput {
        option: Some(option.to_owned()),
        ..DecisionInput::default()
    }
}

#[test]
fn a_decision_written_straight_into_sqlite_is_not_acted_on_and_verify_fails() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, None);
    assert!(f.store.verify_audit().expect("read").is_ok());

    // What a hostile script with write access to the file does.
    sql(
        &f.store,
        &format!(
            "UPDATE gates SET status = 'decided', decided_option = 'yes', decided_by = 'user:cli',
                    decided_at = 2000 WHERE id = {gate}"
        ),
    );

    // audit verify: loud, names the gate and the claim.
    let failure = f
        .store
        .verify_audit()
        .expect("read")
        .expect_err("a decision without its record fails verification");
    assert!(failure.record.is_none(), "the chain itself is intact");
    assert_eq!(failure.decisions.len(), 1, "{failure}");
    let m = &failure.decisions[0];
    assert_eq!(
        (m.table, m.row_id, &m.problem),
        (DecisionTable::Gates, gate, &DecisionProblem::NoRecord)
    );
    let text = failure.to_string();
    assert!(
        text.contains(&format!("gate {gate}'s decision"))
            && text.contains("'yes' by user:cli")
            && text.contains("no signed audit record"),
        "{text}"
    );
    // The gate's own checks ("Why?") say the same.
    assert_eq!(
        f.store
            .gate_decision_problems(overseer_core::GateId(gate))
            .expect("check"),
        vec![m.clone()]
    );

    // The engine's acting path: not acted on, the gate is pending again, and
    // a signed security event says what was found.
    let (view, forged) = f
        .store
        .write(|tx| tx.effect_decision(overseer_core::GateId(gate), 3_000))
        .expect("effect");
    assert_eq!(
        forged.as_ref().map(|m| &m.problem),
        Some(&DecisionProblem::NoRecord)
    );
    assert_eq!(view.status, GateStatus::Pending);
    assert!(view.decision.is_none() && !view.effected);
    let events = security_events(&f.store);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["gate_id"], gate);
    assert_eq!(events[0]["found"]["option"], "yes");
    assert_eq!(events[0]["found"]["by"], "user:cli");
    assert_eq!(events[0]["restored"]["status"], "pending");

    // The human can still decide it, for real, and that decision verifies.
    f.store
        .write(|tx| {
            tx.vote(
                overseer_core::GateId(gate),
                &Actor::cli(),
                &user("no"),
                4_000,
            )
        })
        .expect("a real decision");
    let (view, forged) = f
        .store
        .write(|tx| tx.effect_decision(overseer_core::GateId(gate), 5_000))
        .expect("effect");
    assert!(forged.is_none());
    assert_eq!(view.decision.map(|d| d.option).as_deref(), Some("no"));
    assert!(view.effected);
    assert!(f.store.verify_audit().expect("read").is_ok());
    assert!(f
        .store
        .gate_decision_problems(overseer_core::GateId(gate))
        .expect("check")
        .is_empty());
}

#[test]
fn a_changed_decision_acts_as_its_signed_record_says() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, None);
    f.store
        .write(|tx| {
            tx.vote(
                overseer_core::GateId(gate),
                &Actor::cli(),
                &user("no"),
                2_000,
            )
        })
        .expect("refused by the human");
    // Rewritten to an approval, with the actor and time left as they were.
    sql(
        &f.store,
        &format!("UPDATE gates SET decided_option = 'yes' WHERE id = {gate}"),
    );
    let failure = f.store.verify_audit().expect("read").expect_err("caught");
    assert!(
        matches!(&failure.decisions[0].problem, DecisionProblem::Differs { field, row, record }
            if field == "option" && row == "'yes'" && record == "'no'"),
        "{failure}"
    );
    let (view, forged) = f
        .store
        .write(|tx| tx.effect_decision(overseer_core::GateId(gate), 3_000))
        .expect("effect");
    assert!(forged.is_some());
    let d = view.decision.expect("the signed decision");
    assert_eq!((d.option.as_str(), d.actor), ("no", Actor::cli()));
    assert_eq!(security_events(&f.store)[0]["restored"]["option"], "no");
    // The row is back to what the record says: verify passes again, and the
    // security event stays in the signed log.
    assert!(f.store.verify_audit().expect("read").is_ok());
}

#[test]
fn forged_history_and_vote_rows_are_named_and_never_count() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    // Co-signed: the gate passes only when the supervisor and the human agree.
    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Cosign));
    let head = f.store.audit_len().expect("len");
    // A supervisor approval nobody gave, pointing at a real record (the
    // gate's own opening) and at one that does not exist.
    sql(
        &f.store,
        &format!(
            "INSERT INTO decisions(run_id, gate_id, actor, verdict, option, rationale, at, audit_seq)
             VALUES ({run}, {gate}, 'supervisor:rules', 'approve', 'yes', 'fine', 1500, {head});
             INSERT INTO decisions(run_id, gate_id, actor, verdict, option, at, audit_seq)
             VALUES ({run}, {gate}, 'supervisor:rules', 'approve', 'yes', 1600, 99999);
             INSERT INTO gate_decisions(gate_id, option, context, actor, at, audit_seq)
             VALUES ({gate}, 'yes', NULL, 'user:cli', 1700, 99998);"
        ),
    );
    let problems = f
        .store
        .gate_decision_problems(overseer_core::GateId(gate))
        .expect("check");
    let kinds: Vec<(DecisionTable, &DecisionProblem)> =
        problems.iter().map(|m| (m.table, &m.problem)).collect();
    assert!(
        matches!(
            kinds.as_slice(),
            [
                (DecisionTable::GateDecisions, DecisionProblem::NoRecord),
                (
                    DecisionTable::Decisions,
                    DecisionProblem::WrongRecord { .. }
                ),
                (DecisionTable::Decisions, DecisionProblem::NoRecord),
            ]
        ),
        "{problems:#?}"
    );
    assert_eq!(
        f.store
            .verify_audit()
            .expect("read")
            .expect_err("caught")
            .decisions
            .len(),
        3
    );
    // The human approves: with the forged co-sign ignored, the gate still
    // waits for the supervisor.
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                overseer_core::GateId(gate),
                &Actor::cli(),
                &user("yes"),
                2_000,
            )
        })
        .expect("vote");
    assert!(!out.decided, "a forged co-sign must not complete the gate");
    assert_eq!(out.gate.status, GateStatus::Pending);
    // The real supervisor's vote completes it.
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                overseer_core::GateId(gate),
                &Actor::Supervisor("rules".into()),
                &DecisionInput {
                    verdict: Some(Verdict::Approve),
                    option: Some("yes".into()),
                    rationale: Some("safe".into()),
                    ..DecisionInput::default()
                },
                3_000,
            )
        })
        .expect("vote");
    assert!(out.decided);
}

#[test]
fn a_copied_vote_an_edited_rationale_and_an_erased_decision_are_each_caught() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, None);
    f.store
        .write(|tx| {
            tx.vote(
                overseer_core::GateId(gate),
                &Actor::cli(),
                &DecisionInput {
                    option: Some("no".into()),
                    context: Some("it deletes the cache".into()),
                    ..DecisionInput::default()
                },
                2_000,
            )
        })
        .expect("decided");
    assert!(
        f.store.verify_audit().expect("read").is_ok(),
        "a human's context verifies"
    );
    sql(
        &f.store,
        &format!(
            "INSERT INTO decisions(run_id, gate_id, actor, verdict, option, rationale, at, audit_seq)
               SELECT run_id, gate_id, actor, verdict, option, rationale, at, audit_seq
               FROM decisions WHERE gate_id = {gate};
             UPDATE decisions SET rationale = 'the agent asked nicely' WHERE id = 1;
             UPDATE gates SET status = 'pending', decided_option = NULL, decided_context = NULL,
                    decided_by = NULL, decided_at = NULL WHERE id = {gate};"
        ),
    );
    let failure = f.store.verify_audit().expect("read").expect_err("caught");
    let problems: Vec<&DecisionProblem> = failure.decisions.iter().map(|m| &m.problem).collect();
    assert!(
        matches!(problems.as_slice(), [
            DecisionProblem::DecisionErased { option, by },
            DecisionProblem::Differs { field, .. },
            DecisionProblem::RecordReused { other_row_id: 1 },
        ] if option == "no" && by == "user:cli" && field == "rationale"),
        "{failure}"
    );
}

#[test]
fn an_edited_decision_record_does_not_back_its_row() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, None);
    f.store
        .write(|tx| {
            tx.vote(
                overseer_core::GateId(gate),
                &Actor::cli(),
                &user("no"),
                2_000,
            )
        })
        .expect("decided");
    // Both the row and its record rewritten to an approval: the record's
    // hash and signature no longer hold.
    sql(
        &f.store,
        &format!(
            "UPDATE gates SET decided_option = 'yes' WHERE id = {gate};
             UPDATE audit_log SET payload = replace(payload, '\"option\":\"no\"', '\"option\":\"yes\"')
              WHERE json_extract(payload, '$.gate_id') = {gate}
                AND json_extract(payload, '$.type') = 'gate_decided';"
        ),
    );
    let failure = f.store.verify_audit().expect("read").expect_err("caught");
    assert_eq!(
        failure.record.as_ref().map(|r| &r.problem),
        Some(&AuditProblem::PayloadEdited)
    );
    assert!(failure
        .decisions
        .iter()
        .any(|m| m.table == DecisionTable::Gates
            && m.problem
                == DecisionProblem::RecordNotVerified {
                    why: AuditProblem::PayloadEdited
                }));
    let (view, forged) = f
        .store
        .write(|tx| tx.effect_decision(overseer_core::GateId(gate), 3_000))
        .expect("effect");
    assert!(forged.is_some());
    assert_eq!(
        view.status,
        GateStatus::Pending,
        "no verifying record: pending"
    );
}

#[test]
fn a_forged_decision_neither_blocks_a_timer_nor_a_human() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let mut spec = GateSpec::new(
        run,
        overseer_core::GateBody::empty(GateKind::StepReview),
        "Review step 1",
        vec![
            GateOption::new("proceed", "Proceed"),
            GateOption::new("stop", "Stop"),
        ],
    );
    spec.auto = Some((5_000, StepReviewChoice::Proceed.into()));
    let gate = f
        .store
        .write(|tx| tx.open_gate_spec(&spec, &Actor::Engine, 1_000))
        .expect("open");
    sql(
        &f.store,
        &format!(
            "UPDATE gates SET status = 'decided', decided_option = 'stop', decided_by = 'user:app',
                    decided_at = 2000 WHERE id = {gate}"
        ),
    );
    let fired = f
        .store
        .write(|tx| tx.fire_timer(gate, 6_000))
        .expect("timer")
        .expect("the timer still fires");
    assert_eq!(fired.decision.map(|d| d.option).as_deref(), Some("proceed"));
    assert_eq!(security_events(&f.store).len(), 1);
    assert!(f.store.verify_audit().expect("read").is_ok());
}

#[test]
fn confidences_that_json_reads_back_an_ulp_away_still_verify_but_an_edit_does_not() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    // A confidence the engine computed in a real run: serde_json's default
    // parser reads its shortest decimal back as 0.9166666666666669, two ulps
    // away from the value SQLite stored.
    let note = |confidence: f64| DecisionInput {
        verdict: Some(Verdict::Continue),
        rationale: Some("step went fine".into()),
        rule_ref: Some("confidence:proceed".into()),
        confidence: Some(confidence),
        ..DecisionInput::default()
    };
    f.store
        .write(|tx| {
            tx.record_decision_note(
                run,
                None,
                &Actor::Engine,
                &note(0.916_666_666_666_666_7),
                2_000,
            )
        })
        .expect("note");
    f.store
        .write(|tx| tx.record_decision_note(run, None, &Actor::Engine, &note(0.1 + 0.2), 2_001))
        .expect("note");
    assert!(f.store.verify_audit().expect("read").is_ok());
    sql(
        &f.store,
        "UPDATE decisions SET confidence = 0.99 WHERE id = 1",
    );
    let failure = f.store.verify_audit().expect("read").expect_err("caught");
    assert!(
        matches!(&failure.decisions[0].problem, DecisionProblem::Differs { field, .. } if field == "confidence"),
        "{failure}"
    );
}

/// A rule's allow keeps which rule of which layer decided, typed, in its row
/// and in its signed record: it reads back as written, and a row moved to
/// another layer (a workspace rule passed off as the user's own "always"
/// answer) no longer verifies.
#[test]
fn a_rules_provenance_reads_back_typed_and_an_edited_layer_is_caught() {
    use overseer_core::rules::{Provenance, RuleLayer};
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let provenance = Provenance::one(RuleLayer::Task, "Edit(src/**)");
    f.store
        .write(|tx| {
            tx.record_decision_note(
                run,
                None,
                &Actor::Engine,
                &DecisionInput {
                    verdict: Some(Verdict::Approve),
                    rationale: Some("allowed by rule (task rule): Edit src/x.rs".into()),
                    rule_ref: Some("Edit(src/**)".into()),
                    provenance: Some(provenance.clone()),
                    source_event: Some("tool_call:t1".into()),
                    ..DecisionInput::default()
                },
                2_000,
            )
        })
        .expect("note");
    let decisions = f.store.decisions_of_run(run).expect("read");
    assert_eq!(decisions[0].provenance.as_ref(), Some(&provenance));
    assert!(f.store.verify_audit().expect("read").is_ok());
    sql(
        &f.store,
        r#"UPDATE decisions SET provenance = '[{"layer":"run","rule":"Edit(src/**)"}]' WHERE id = 1"#,
    );
    let failure = f.store.verify_audit().expect("read").expect_err("caught");
    assert!(
        matches!(&failure.decisions[0].problem, DecisionProblem::Differs { field, .. } if field == "provenance"),
        "{failure}"
    );
}

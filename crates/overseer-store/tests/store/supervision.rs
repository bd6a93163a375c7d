//! Supervision in the store, on a real SQLite file: the user always wins
//! (also when the supervisor races from another connection), co-signing,
//! overrides until the effect, timers that fire once and never after a human
//! acted, and a gate's story with every record checked.

use crate::common;

use common::Fixture;
use overseer_core::supervision::{Autonomy, Verdict};
use overseer_core::{Actor, GateChoice, GateKind, GateOption, GateStatus, RunId, ToolCallChoice};
use overseer_store::{AuditProblem, DecisionInput, GateSpec, Store, StoreError};

fn supervisor() -> Actor {
    Actor::Supervisor("rules".to_owned())
}

fn tool_gate(
    store: &mut Store,
    run: RunId,
    authority: Option<Autonomy>,
    auto: Option<(i64, &str)>,
) -> overseer_core::GateId {
    let mut spec = GateSpec::new(
        run,
        overseer_core::GateBody::empty(GateKind::ToolCall),
        "rm -rf build",
        vec![
            GateOption::new("yes", "Yes"),
            GateOption::new("always", "Always"),
            GateOption::new("no", "No"),
        ],
    );
    spec.authority = authority;
    spec.approve_option = Some("yes".to_owned());
    spec.auto = auto.map(|(at, o)| {
        let choice = GateChoice::parse(GateKind::ToolCall, o).expect("a tool-call choice");
        (at, choice)
    });
    store
        .write(|tx| tx.open_gate_spec(&spec, &Actor::Agent("demo".into()), 1_000))
        .expect("open gate")
}

fn supervisor_vote(verdict: Verdict, option: Option<&str>) -> DecisionInput {
    DecisionInput {
        verdict: Some(verdict),
        option: option.map(str::to_owned),
        rationale: Some("looks safe".to_owned()),
        rule_ref: Some("rules:not_destructive".to_owned()),
        model_id: Some("test-model".to_owned()),
        prompt_version: Some("p1".to_owned()),
        confidence: Some(0.9),
        source_event: Some("gate_opened".to_owned()),
        ..DecisionInput::default()
    }
}

fn user_choice(option: &str, context: Option<&str>) -> DecisionInput {
    DecisionInput {
        option: Some(option.to_owned()),
        context: context.map(str::to_owned),
        ..DecisionInput::default()
    }
}

#[test]
fn an_advisory_supervisor_records_advice_but_only_the_human_decides() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Advisory), None);
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                gate,
                &supervisor(),
                &supervisor_vote(Verdict::Advise, Some("yes")),
                2_000,
            )
        })
        .expect("advice recorded");
    assert!(!out.decided);
    assert_eq!(out.gate.status, GateStatus::Pending);
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                gate,
                &Actor::app(),
                &user_choice("no", Some("not now")),
                3_000,
            )
        })
        .expect("user decides");
    assert!(out.decided);
    let d = out.gate.decision.expect("decided");
    assert_eq!((d.option.as_str(), d.actor.clone()), ("no", Actor::app()));
    let decisions = f.store.decisions_of_gate(gate).expect("decisions");
    assert_eq!(decisions.len(), 2);
    assert_eq!(decisions[0].verdict, Verdict::Advise);
    assert_eq!(decisions[0].model_id.as_deref(), Some("test-model"));
    assert_eq!(decisions[1].verdict, Verdict::Reject);
    assert!(decisions[1].audit_seq > decisions[0].audit_seq);
}

#[test]
fn an_autonomous_supervisor_decides_and_the_human_overrides_until_the_effect() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Autonomous), None);
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                gate,
                &supervisor(),
                &supervisor_vote(Verdict::Approve, Some("yes")),
                2_000,
            )
        })
        .expect("supervisor decides");
    assert!(out.decided);
    assert_eq!(out.gate.decision.expect("d").actor, supervisor());
    // The human overrides before the engine acted.
    let out = f
        .store
        .write(|tx| tx.vote(gate, &Actor::cli(), &user_choice("no", None), 3_000))
        .expect("override");
    assert!(out.decided);
    let d = out.gate.decision.expect("d");
    assert_eq!((d.option.as_str(), d.actor), ("no", Actor::cli()));
    // Once the engine acts, nothing changes any more.
    let g = f
        .store
        .write(|tx| tx.mark_effected(gate, 4_000))
        .expect("effect");
    assert!(g.effected);
    let err = f
        .store
        .write(|tx| tx.vote(gate, &Actor::app(), &user_choice("yes", None), 5_000))
        .expect_err("closed");
    assert!(matches!(err, StoreError::AlreadyDecided { .. }), "{err}");
}

#[test]
fn a_supervisor_vote_after_the_human_decided_is_recorded_as_overruled_and_changes_nothing() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Autonomous), None);
    f.store
        .write(|tx| tx.vote(gate, &Actor::app(), &user_choice("no", None), 2_000))
        .expect("user first");
    let before = f.store.audit_len().expect("len");
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                gate,
                &supervisor(),
                &supervisor_vote(Verdict::Approve, Some("yes")),
                3_000,
            )
        })
        .expect("a late vote is kept");
    assert!(out.late && !out.decided);
    // Signed, and in the gate's decisions: the disagreement leaves a trace.
    assert_eq!(f.store.audit_len().expect("len"), before + 1);
    let votes = f.store.decisions_of_gate(gate).expect("decisions");
    let late = votes
        .iter()
        .find(|d| d.actor == supervisor())
        .expect("the supervisor's late vote is recorded");
    assert_eq!(
        (late.verdict, late.option.as_deref()),
        (Verdict::Approve, Some("yes"))
    );
    assert_eq!(
        f.store
            .gate(gate)
            .expect("gate")
            .decision
            .expect("d")
            .option,
        "no"
    );
}

#[test]
fn cosign_passes_only_when_both_approve_and_a_human_reject_stands_alone() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Cosign), None);
    let out = f
        .store
        .write(|tx| tx.vote(gate, &Actor::app(), &user_choice("yes", None), 2_000))
        .expect("user approves");
    assert!(!out.decided, "waits for the co-signature");
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                gate,
                &supervisor(),
                &supervisor_vote(Verdict::Approve, Some("yes")),
                3_000,
            )
        })
        .expect("co-signed");
    assert!(out.decided);
    assert_eq!(out.gate.decision.expect("d").option, "yes");

    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Cosign), None);
    let out = f
        .store
        .write(|tx| {
            tx.vote(
                gate,
                &supervisor(),
                &supervisor_vote(Verdict::Approve, Some("yes")),
                2_000,
            )
        })
        .expect("pre-approved");
    assert!(
        !out.decided,
        "the supervisor alone never passes a co-signed gate"
    );
    let out = f
        .store
        .write(|tx| tx.vote(gate, &Actor::app(), &user_choice("no", Some("no")), 3_000))
        .expect("user rejects");
    assert!(out.decided);
    assert_eq!(out.gate.decision.expect("d").option, "no");
}

#[test]
fn the_user_always_wins_a_race_with_the_supervisor_from_two_connections() {
    let f = Fixture::new();
    let mut setup = f.reopen();
    for round in 0..40 {
        let run = {
            let a = Actor::Engine;
            setup
                .write(|tx| {
                    let ws = tx.ensure_workspace("demo", "/tmp/demo", &a, 1)?;
                    let task = tx.create_task(ws, "race", "race", &a, 1)?;
                    tx.create_run(task, "demo", &a, 1)
                })
                .expect("run")
        };
        let authority = [Autonomy::Autonomous, Autonomy::Cosign, Autonomy::Advisory][round % 3];
        let gate = tool_gate(&mut setup, run, Some(authority), None);
        let mut s = f.reopen();
        let mut u = f.reopen();
        let sup = std::thread::spawn(move || {
            let _ = s.write(|tx| {
                tx.vote(
                    gate,
                    &supervisor(),
                    &supervisor_vote(Verdict::Approve, Some("yes")),
                    2_000,
                )
            });
        });
        let user = std::thread::spawn(move || {
            u.write(|tx| tx.vote(gate, &Actor::app(), &user_choice("no", Some("mine")), 2_000))
                .expect("the user's vote is always accepted")
        });
        sup.join().expect("supervisor thread");
        user.join().expect("user thread");
        let d = setup
            .gate(gate)
            .expect("gate")
            .decision
            .expect("decided by the user");
        assert_eq!(
            (d.option.as_str(), d.actor),
            ("no", Actor::app()),
            "round {round} ({authority:?})"
        );
    }
    assert!(setup.verify_audit().expect("read").is_ok());
}

#[test]
fn a_timer_fires_once_also_after_a_restart_and_never_after_a_human_acted() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, None, Some((5_000, "yes")));
    assert_eq!(
        f.store
            .write(|tx| tx.fire_timer(gate, 4_999))
            .expect("early"),
        None,
        "not before its time"
    );
    assert_eq!(
        f.store.pending_timers().expect("timers"),
        vec![(gate, 5_000)]
    );
    drop(f.store);
    // A restart: a new connection finds the timer and fires it, once.
    let mut store = common::open(&f.dir);
    let fired = store
        .write(|tx| tx.fire_timer(gate, 6_000))
        .expect("fire")
        .expect("fired");
    let d = fired.decision.expect("decided");
    assert_eq!((d.option.as_str(), d.actor), ("yes", Actor::Engine));
    assert_eq!(
        store.write(|tx| tx.fire_timer(gate, 7_000)).expect("again"),
        None
    );
    assert!(store.pending_timers().expect("timers").is_empty());

    // A human who stopped the timer keeps the gate for themselves.
    let gate = tool_gate(&mut store, run, None, Some((5_000, "yes")));
    store
        .write(|tx| tx.hold_gate(gate, &Actor::app(), 4_000))
        .expect("hold");
    assert_eq!(
        store.write(|tx| tx.fire_timer(gate, 9_000)).expect("held"),
        None
    );
    assert_eq!(store.gate(gate).expect("g").status, GateStatus::Pending);

    // A human vote that left the gate pending (co-signing) also stops it.
    let mut spec = GateSpec::new(
        run,
        overseer_core::GateBody::empty(GateKind::ToolCall),
        "x",
        vec![GateOption::new("yes", "Yes"), GateOption::new("no", "No")],
    );
    spec.authority = Some(Autonomy::Cosign);
    spec.approve_option = Some("yes".to_owned());
    spec.auto = Some((5_000, ToolCallChoice::Yes.into()));
    let gate = store
        .write(|tx| tx.open_gate_spec(&spec, &Actor::Engine, 1_000))
        .expect("gate");
    store
        .write(|tx| tx.vote(gate, &Actor::app(), &user_choice("yes", None), 2_000))
        .expect("vote");
    assert_eq!(
        store.write(|tx| tx.fire_timer(gate, 9_000)).expect("acted"),
        None
    );
}

#[test]
fn a_gate_story_checks_every_record_and_flags_an_edited_one() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Advisory), None);
    f.store
        .write(|tx| {
            tx.vote(
                gate,
                &supervisor(),
                &supervisor_vote(Verdict::Advise, Some("yes")),
                2_000,
            )
        })
        .expect("advice");
    f.store
        .write(|tx| tx.vote(gate, &Actor::app(), &user_choice("yes", None), 3_000))
        .expect("decide");
    let story = f.store.audit_story("gate_id", gate.into()).expect("story");
    let kinds: Vec<String> = story
        .iter()
        .map(|r| {
            serde_json::from_str::<serde_json::Value>(&r.record.payload).expect("json")["type"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "gate_opened",
            "gate_terms",
            "decision",
            "decision",
            "gate_decided"
        ]
    );
    assert!(story.iter().all(|r| r.problem.is_none()));
    let seq = story[2].record.seq;
    f.store
        .raw_connection()
        .execute(
            "UPDATE audit_log SET payload = replace(payload, 'looks safe', 'looks fine') WHERE seq = ?1",
            [seq],
        )
        .expect("tamper");
    let story = f.store.audit_story("gate_id", gate.into()).expect("story");
    assert_eq!(story[2].problem, Some(AuditProblem::PayloadEdited));
    assert!(story.iter().filter(|r| r.problem.is_some()).count() == 1);
}

#[test]
fn only_humans_and_the_supervisor_vote() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(&mut f.store, run, Some(Autonomy::Autonomous), None);
    for actor in [Actor::Agent("demo".into()), Actor::Engine] {
        let err = f
            .store
            .write(|tx| tx.vote(gate, &actor, &user_choice("yes", None), 2_000))
            .expect_err("agents ask, never decide");
        assert!(err.to_string().contains("cannot vote"), "{err}");
    }
}

#[test]
fn a_human_approval_reads_as_approve_on_gates_opened_without_a_supervisor() {
    let mut f = Fixture::new();
    // The store opens the merge review itself, with no approve option set.
    let run = f.pending_review_run(1_000);
    let review = f.store.run(run).expect("run").pending_gate.expect("review");
    assert_eq!(review.kind, GateKind::MergeReview);
    f.store
        .write(|tx| {
            tx.vote(
                review.id,
                &Actor::app(),
                &user_choice("approve", None),
                2_000,
            )
        })
        .expect("approve");
    let story = f.store.decisions_of_gate(review.id).expect("decisions");
    assert_eq!(story.len(), 1, "{story:?}");
    assert_eq!(story[0].verdict, Verdict::Approve, "{story:?}");
    assert_eq!(story[0].option.as_deref(), Some("approve"));
    // The decided gate stays the run's latest: where its "Why?" starts.
    let row = f.store.run(run).expect("run");
    assert_eq!(row.pending_gate, None);
    assert_eq!(row.last_gate, Some(review.clone()));

    // A deviation opened by the engine without a supervisor: retry approves,
    // stop rejects.
    for (option, verdict) in [("retry", Verdict::Approve), ("stop", Verdict::Reject)] {
        let spec = GateSpec::new(
            run,
            overseer_core::GateBody::empty(GateKind::Deviation),
            "The agent hit a problem",
            vec![
                GateOption::new("retry", "Retry"),
                GateOption::new("stop", "Stop"),
            ],
        );
        let gate = f
            .store
            .write(|tx| tx.open_gate_spec(&spec, &Actor::Engine, 3_000))
            .expect("open");
        f.store
            .write(|tx| tx.vote(gate, &Actor::app(), &user_choice(option, None), 4_000))
            .expect("decide");
        let d = f.store.decisions_of_gate(gate).expect("decisions");
        assert_eq!(d[0].verdict, verdict, "{option}: {d:?}");
    }
}

/// An autonomous decision waiting for its grace stands in for the gate's
/// own timer: the timer (here "yes" at 2 s) does not fire while the
/// supervisor's "no" waits (until 4 s), the gate is listed as due at the
/// grace's end, and then the supervisor's decision takes effect, once.
#[test]
fn a_pending_supervisor_decision_holds_the_gates_own_timer_and_takes_effect_once() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let gate = tool_gate(
        &mut f.store,
        run,
        Some(Autonomy::Autonomous),
        Some((2_000, "yes")),
    );
    let out = f
        .store
        .write(|tx| {
            tx.vote_within(
                gate,
                &supervisor(),
                &supervisor_vote(Verdict::Reject, Some("no")),
                Some(4_000),
                1_500,
            )
        })
        .expect("the vote");
    assert!(!out.decided);
    let effect = out.gate.pending_effect.expect("waits for its grace");
    assert_eq!(
        (effect.option.as_str(), effect.verdict, effect.at),
        ("no", Verdict::Reject, 4_000)
    );
    assert_eq!(
        f.store.pending_timers().expect("timers"),
        vec![(gate, 4_000)]
    );
    // The gate's own timer is due, and does nothing.
    let fired = f
        .store
        .write(|tx| tx.fire_timer(gate, 2_500))
        .expect("timer");
    assert!(fired.is_none());
    let early = f
        .store
        .write(|tx| tx.take_effect(gate, 3_999))
        .expect("early");
    assert!(early.is_none(), "not before the deadline");
    let decided = f
        .store
        .write(|tx| tx.take_effect(gate, 4_000))
        .expect("effect")
        .expect("took effect");
    let d = decided.decision.expect("decided");
    assert_eq!((d.option.as_str(), d.actor), ("no", supervisor()));
    assert!(decided.pending_effect.is_none());
    let again = f
        .store
        .write(|tx| tx.take_effect(gate, 5_000))
        .expect("again");
    assert!(again.is_none(), "never twice");
    assert!(f
        .store
        .write(|tx| tx.fire_timer(gate, 5_000))
        .expect("timer")
        .is_none());
    assert!(f.store.pending_timers().expect("timers").is_empty());
}

//! A run's "Why?" (`Engine::run_story`): a real demo-agent run, with a
//! question whose timer fires, an advisory supervisor voting on the plan and
//! judging each step, a task rule allowing an edit and a workspace rule
//! denying another, and a human approving the plan. Every one of those is a
//! signed audit record in the run's story, verified, and a rule's record
//! names the layer it came from.

use crate::common;

use common::{pending_gate, start_with, until, world_with};
use overseer_core::rules::{Provenance, RuleLayer, RuleSet};
use overseer_core::supervision::{Autonomy, EvaluatorConfig, SupervisorPolicy, Verdict};
use overseer_core::{Actor, GateKind, RunState};
use overseer_engine::LogNotifier;
use overseer_store::{TaskSettings, WorkspaceSettings};
use serde_json::{json, Value};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_story_holds_every_kind_of_decision_each_a_verified_signed_record() {
    let workspace = WorkspaceSettings {
        permissions: RuleSet::parse(&[], &[], &["Edit(NOTES.md)".to_owned()]).expect("rules"),
        supervisor: Some(SupervisorPolicy {
            enabled: true,
            autonomy: Autonomy::Advisory,
            evaluator: EvaluatorConfig::Rules,
            ..SupervisorPolicy::default()
        }),
        ..Default::default()
    };
    let w = world_with(workspace, Arc::new(LogNotifier), "").await;
    let run = start_with(
        &w,
        "questions",
        TaskSettings {
            question_timeout_seconds: Some(1),
            permissions: RuleSet::parse(&["Edit(src/greeting.txt)".to_owned()], &[], &[])
                .expect("rules"),
            ..Default::default()
        },
    );
    // Nobody answers the question: its timer fires.
    let question = pending_gate(&w, run, GateKind::Question).await;
    // A human approves the plan (the supervisor only advises on it).
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    until(&w, "the supervisor's advice on the plan", |e| {
        let s = e.gate_story(plan.id).ok()?;
        s.decisions
            .iter()
            .any(|d| matches!(d.actor, Actor::Supervisor(_)))
            .then_some(())
    })
    .await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // Whatever else asks on the way (a step review, a pause), a human goes on.
    until(&w, "the run in review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id != run {
                continue;
            }
            let option = match g.kind() {
                GateKind::StepReview | GateKind::SupervisorPause => "proceed",
                GateKind::ToolCall => "yes",
                _ => continue,
            };
            let _ = e.decide_gate(g.id, option, None, &Actor::cli());
        }
        (e.run(run).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
    let story = w.engine.run_story(run).expect("story");
    assert!(story.verified, "{:#?}", story.decision_problems);
    assert!(story.decision_problems.is_empty());
    assert!(story.records.iter().all(|r| r.problem.is_none()));
    let payloads: Vec<(i64, String, Value)> = story
        .records
        .iter()
        .map(|r| {
            let p: Value = serde_json::from_str(&r.record.payload).expect("payload");
            (r.record.seq, r.record.actor.clone(), p)
        })
        .collect();
    assert!(
        payloads.windows(2).all(|p| p[0].0 < p[1].0),
        "in log order, each once"
    );
    // Each decision is backed by a verified record of the story, carrying it.
    for d in &story.decisions {
        let (_, actor, p) = payloads
            .iter()
            .find(|(seq, _, _)| *seq == d.audit_seq)
            .unwrap_or_else(|| panic!("decision {d:?} has its record in the story"));
        assert_eq!(p["type"], "decision", "{p}");
        assert_eq!(*actor, d.actor.to_string());
        assert_eq!(p["verdict"], d.verdict.as_str());
    }
    let decision = |what: &str, f: &dyn Fn(&overseer_core::supervision::DecisionRecord) -> bool| {
        story
            .decisions
            .iter()
            .find(|d| f(d))
            .unwrap_or_else(|| panic!("{what} in the story: {:#?}", story.decisions))
            .clone()
    };
    // Step verdicts: the confidence rule's and the supervisor's, per step.
    let step = |d: &overseer_core::supervision::DecisionRecord| {
        d.source_event
            .as_deref()
            .is_some_and(|s| s.starts_with(&format!("step_finished:{run}:")))
    };
    let by_confidence = decision("the confidence rule's step verdict", &|d| {
        step(d)
            && d.actor == Actor::Engine
            && d.rule_ref
                .as_deref()
                .is_some_and(|r| r.starts_with("confidence:"))
    });
    assert!(matches!(
        by_confidence.verdict,
        Verdict::Continue | Verdict::Pause
    ));
    let by_supervisor = decision("the supervisor's step verdict", &|d| {
        step(d) && matches!(d.actor, Actor::Supervisor(_))
    });
    assert!(matches!(
        by_supervisor.verdict,
        Verdict::Continue | Verdict::Reorient | Verdict::Pause
    ));
    // The rules: an allow from the task's rules, a denial from the workspace's.
    let allow = decision("the task rule's allow", &|d| {
        d.verdict == Verdict::Approve && d.rule_ref.as_deref() == Some("Edit(src/greeting.txt)")
    });
    assert_eq!(allow.actor, Actor::Engine);
    assert!(allow.gate_id.is_none());
    assert!(
        allow
            .rationale
            .as_deref()
            .is_some_and(|r| r.contains("(task rule)")),
        "{allow:?}"
    );
    assert!(allow
        .source_event
        .as_deref()
        .is_some_and(|s| s.starts_with("tool_call:")));
    let deny = decision("the workspace rule's denial", &|d| {
        d.verdict == Verdict::Reject && d.rule_ref.as_deref() == Some("Edit(NOTES.md)")
    });
    assert!(
        deny.rationale
            .as_deref()
            .is_some_and(|r| r.contains("(workspace rule)")),
        "{deny:?}"
    );
    // Which rule of which layer, typed: in the decision and in its signed
    // record, from where the rules decided (nothing parsed back).
    assert_eq!(
        allow.provenance,
        Some(Provenance::one(RuleLayer::Task, "Edit(src/greeting.txt)"))
    );
    assert_eq!(
        deny.provenance,
        Some(Provenance::one(RuleLayer::Workspace, "Edit(NOTES.md)"))
    );
    let signed = |seq: i64| {
        story
            .records
            .iter()
            .find(|r| r.record.seq == seq)
            .and_then(|r| serde_json::from_str::<serde_json::Value>(&r.record.payload).ok())
            .unwrap_or_else(|| panic!("record #{seq} in the story"))
    };
    assert_eq!(
        signed(allow.audit_seq)["provenance"],
        json!([{"layer": "task", "rule": "Edit(src/greeting.txt)"}])
    );
    assert_eq!(
        signed(deny.audit_seq)["provenance"],
        json!([{"layer": "workspace", "rule": "Edit(NOTES.md)"}])
    );
    // The timeline says the same, layer and all.
    let activity = w.engine.activity(run, 0).expect("activity");
    let said = |kind: &str, what: &str| {
        activity.iter().any(|a| {
            a.kind() == kind
                && a.payload()["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(what))
        })
    };
    assert!(
        said("tool_allowed", "Edit(src/greeting.txt) (task rule)"),
        "{activity:#?}"
    );
    assert!(
        said("tool_denied", "Edit(NOTES.md) (workspace rule)"),
        "{activity:#?}"
    );
    assert!(
        activity.iter().any(|a| a.kind() == "tool_allowed"
            && a.payload()["provenance"]
                == json!([{"layer": "task", "rule": "Edit(src/greeting.txt)"}])),
        "{activity:#?}"
    );
    // The supervisor's vote on the plan gate.
    let vote = decision("the supervisor's vote on the plan", &|d| {
        d.gate_id == Some(plan.id) && matches!(d.actor, Actor::Supervisor(_))
    });
    assert!(vote.rationale.is_some(), "{vote:?}");
    // The question's timer firing.
    let timer = decision("the question's timer", &|d| {
        d.gate_id == Some(question.id) && d.rule_ref.as_deref() == Some("timer")
    });
    assert_eq!(timer.actor, Actor::Engine);
    assert_eq!(timer.option.as_deref(), Some("decline"));
    // The human's decision on the plan, as its signed gate_decided record.
    assert!(
        payloads
            .iter()
            .any(|(_, actor, p)| p["type"] == "gate_decided"
                && p["gate_id"] == plan.id
                && p["option"] == "approve"
                && actor == "user:cli"),
        "{payloads:#?}"
    );
    // The run's own records are there too (it was created, it moved).
    assert!(payloads
        .iter()
        .any(|(_, _, p)| p["type"] == "run_transition"));
    // Exactly the records about the run or one of its gates, none other.
    let gates: Vec<overseer_core::GateId> = w
        .engine
        .gates(false)
        .expect("gates")
        .into_iter()
        .filter(|g| g.run_id == run)
        .map(|g| g.id)
        .collect();
    for (_, _, p) in &payloads {
        assert!(
            p["run_id"] == run
                || p["gate_id"]
                    .as_i64()
                    .is_some_and(|g| gates.contains(&overseer_core::GateId(g))),
            "{p}"
        );
    }
}

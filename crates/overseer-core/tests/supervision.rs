//! The delegated supervisor's pure logic: verdict selection for steps, the
//! reorient limit, policies and authority, verdicts as gate options, and how
//! votes resolve (the user always wins).

use overseer_core::supervision::{
    accept_vote, after_reorient_limit, correction_prompt, resolve, resolve_policy, select_verdict,
    verdict_option, Autonomy, Concerns, EvaluatorConfig, Resolution, StepFacts, SupervisorPolicy,
    Verdict, Vote, VoteRefused, MAX_EVALUATOR_TIMEOUT_SECONDS, VERDICT_TABLE,
};
use overseer_core::{Actor, GateKind};
use proptest::prelude::*;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------
// Verdict selection.

/// The verdicts document's logic as written there, nested ifs and all: the
/// table must agree with it on every combination of facts.
fn document(f: &StepFacts) -> Verdict {
    if f.interpretation_wrong {
        Verdict::Pause
    } else if f.out_of_scope {
        if f.destructive {
            Verdict::Pause
        } else {
            Verdict::Reorient
        }
    } else if f.suboptimal_but_achieved {
        Verdict::Continue
    } else if f.concerns != Concerns::None {
        if f.concerns == Concerns::Critical {
            Verdict::Pause
        } else {
            Verdict::Continue
        }
    } else {
        // "confidence is low but output looks correct" and the final ELSE
        // both continue.
        Verdict::Continue
    }
}

fn all_facts() -> Vec<StepFacts> {
    let mut out = Vec::new();
    for bits in 0..32u8 {
        for concerns in [Concerns::None, Concerns::Valid, Concerns::Critical] {
            out.push(StepFacts {
                interpretation_wrong: bits & 1 != 0,
                out_of_scope: bits & 2 != 0,
                destructive: bits & 4 != 0,
                suboptimal_but_achieved: bits & 8 != 0,
                concerns,
                low_confidence_but_correct: bits & 16 != 0,
            });
        }
    }
    out
}

fn selects(f: StepFacts, id: &str, verdict: Verdict) {
    let row = select_verdict(&f);
    assert_eq!((row.id, row.verdict), (id, verdict), "{f:?}");
    assert!(!row.rationale.is_empty());
}

#[test]
fn the_table_is_in_the_documents_order_and_ends_with_a_catch_all() {
    let ids: Vec<&str> = VERDICT_TABLE.iter().map(|r| r.id).collect();
    assert_eq!(
        ids,
        [
            "wrong_interpretation",
            "out_of_scope_destructive",
            "out_of_scope",
            "suboptimal_but_achieved",
            "critical_concerns",
            "valid_concerns",
            "low_confidence_correct",
            "on_track",
        ]
    );
    let last = VERDICT_TABLE.last().expect("rows");
    for f in all_facts() {
        assert!((last.when)(&f), "the last row matches {f:?}");
        assert_eq!(select_verdict(&f).verdict, document(&f), "{f:?}");
        assert!(select_verdict(&f)
            .verdict
            .fits(overseer_core::supervision::Subject::Step));
    }
}

#[test]
fn a_fundamentally_wrong_interpretation_pauses_whatever_else_holds() {
    let everything = StepFacts {
        interpretation_wrong: true,
        out_of_scope: true,
        destructive: true,
        suboptimal_but_achieved: true,
        concerns: Concerns::Valid,
        low_confidence_but_correct: true,
    };
    selects(everything, "wrong_interpretation", Verdict::Pause);
}

#[test]
fn going_out_of_scope_destructively_pauses() {
    let f = StepFacts {
        out_of_scope: true,
        destructive: true,
        suboptimal_but_achieved: true,
        ..StepFacts::default()
    };
    selects(f, "out_of_scope_destructive", Verdict::Pause);
}

#[test]
fn going_out_of_scope_harmlessly_reorients() {
    let f = StepFacts {
        out_of_scope: true,
        suboptimal_but_achieved: true,
        concerns: Concerns::Critical,
        ..StepFacts::default()
    };
    selects(f, "out_of_scope", Verdict::Reorient);
}

#[test]
fn destructive_work_within_scope_is_not_a_scope_problem() {
    let f = StepFacts {
        destructive: true,
        ..StepFacts::default()
    };
    selects(f, "on_track", Verdict::Continue);
}

#[test]
fn a_suboptimal_approach_that_achieved_the_goal_continues() {
    // Before concerns in the document's order: not over-correcting wins.
    let f = StepFacts {
        suboptimal_but_achieved: true,
        concerns: Concerns::Critical,
        ..StepFacts::default()
    };
    selects(f, "suboptimal_but_achieved", Verdict::Continue);
}

#[test]
fn critical_concerns_pause_for_a_human() {
    let f = StepFacts {
        concerns: Concerns::Critical,
        low_confidence_but_correct: true,
        ..StepFacts::default()
    };
    selects(f, "critical_concerns", Verdict::Pause);
}

#[test]
fn valid_concerns_continue() {
    let f = StepFacts {
        concerns: Concerns::Valid,
        low_confidence_but_correct: true,
        ..StepFacts::default()
    };
    selects(f, "valid_concerns", Verdict::Continue);
}

#[test]
fn low_confidence_with_correct_output_continues() {
    let f = StepFacts {
        low_confidence_but_correct: true,
        ..StepFacts::default()
    };
    selects(f, "low_confidence_correct", Verdict::Continue);
}

#[test]
fn otherwise_execution_is_on_track() {
    selects(StepFacts::default(), "on_track", Verdict::Continue);
}

#[test]
fn facts_serialize_in_snake_case() {
    let f = StepFacts {
        concerns: Concerns::Critical,
        ..StepFacts::default()
    };
    let json = serde_json::to_value(f).expect("serialize");
    assert_eq!(json["concerns"], "critical");
    assert_eq!(json["interpretation_wrong"], false);
    let back: StepFacts = serde_json::from_value(json).expect("deserialize");
    assert_eq!(back, f);
}

// ---------------------------------------------------------------------------
// Reorient limit and corrections.

#[test]
fn a_reorient_at_the_limit_becomes_a_pause() {
    assert_eq!(
        after_reorient_limit(Verdict::Reorient, 2, 3),
        Verdict::Reorient
    );
    assert_eq!(
        after_reorient_limit(Verdict::Reorient, 3, 3),
        Verdict::Pause
    );
    assert_eq!(
        after_reorient_limit(Verdict::Reorient, 7, 3),
        Verdict::Pause
    );
    assert_eq!(
        after_reorient_limit(Verdict::Reorient, 0, 1),
        Verdict::Reorient
    );
    assert_eq!(
        after_reorient_limit(Verdict::Reorient, 1, 1),
        Verdict::Pause
    );
    for v in Verdict::ALL {
        if v != Verdict::Reorient {
            assert_eq!(after_reorient_limit(v, 99, 3), v, "{v:?} passes unchanged");
        }
    }
}

#[test]
fn corrections_use_the_documents_wording() {
    assert_eq!(
        correction_prompt("stay within src/parser"),
        "SUPERVISOR CORRECTION: stay within src/parser\n\nPlease re-attempt the task with this guidance."
    );
}

// ---------------------------------------------------------------------------
// Policies.

fn enabled(autonomy: Autonomy) -> SupervisorPolicy {
    SupervisorPolicy {
        enabled: true,
        autonomy,
        ..SupervisorPolicy::default()
    }
}

#[test]
fn the_tasks_policy_comes_first_then_the_workspaces_then_off() {
    let task = enabled(Autonomy::Cosign);
    let workspace = enabled(Autonomy::Autonomous);
    assert_eq!(resolve_policy(Some(&task), Some(&workspace)), task);
    assert_eq!(resolve_policy(Some(&task), None), task);
    assert_eq!(resolve_policy(None, Some(&workspace)), workspace);
    let off = resolve_policy(None, None);
    assert_eq!(off, SupervisorPolicy::default());
    assert!(!off.enabled);
    for kind in GateKind::ALL {
        assert_eq!(off.authority(kind), None, "{kind:?}");
    }
}

/// An autonomous decision waits 10 s by default (the design's
/// auto-proceed), 0 means at once, and more than an hour is refused by
/// name; a policy stored before the grace existed reads as the default.
#[test]
fn an_autonomous_decision_waits_its_grace_and_zero_is_at_once() {
    use overseer_core::supervision::{PendingEffect, MAX_GRACE_SECONDS};
    let p = SupervisorPolicy::default();
    assert_eq!(p.grace_seconds, 10);
    assert_eq!(PendingEffect::deadline(&p, 1_000), Some(11_000));
    let old: SupervisorPolicy =
        serde_json::from_str(r#"{"enabled": true, "autonomy": "autonomous"}"#).expect("old policy");
    assert_eq!(old.grace_seconds, 10);
    let now = SupervisorPolicy {
        grace_seconds: 0,
        ..SupervisorPolicy::default()
    };
    assert_eq!(PendingEffect::deadline(&now, 1_000), None);
    assert_eq!(now.validate(), Ok(()));
    let long = SupervisorPolicy {
        grace_seconds: MAX_GRACE_SECONDS + 1,
        ..SupervisorPolicy::default()
    };
    let errors = long.validate().expect_err("out of range");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].field, "grace_seconds");
    assert!(
        errors[0].message.contains("0 (at once)"),
        "{}",
        errors[0].message
    );
}

#[test]
fn the_default_policy_is_valid() {
    assert_eq!(SupervisorPolicy::default().validate(), Ok(()));
    let openai = SupervisorPolicy {
        evaluator: EvaluatorConfig::Openai {
            base_url: "https://api.example.com/v1".to_owned(),
            model: "small".to_owned(),
            api_key_env: None,
        },
        ..enabled(Autonomy::Cosign)
    };
    assert_eq!(openai.validate(), Ok(()));
    let command = SupervisorPolicy {
        evaluator: EvaluatorConfig::Command {
            command: "./judge".to_owned(),
            args: vec![],
        },
        ..enabled(Autonomy::Cosign)
    };
    assert_eq!(command.validate(), Ok(()));
}

#[test]
fn invalid_policies_say_what_to_fix() {
    let base = SupervisorPolicy::default();
    let openai = |base_url: &str, model: &str| SupervisorPolicy {
        evaluator: EvaluatorConfig::Openai {
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            api_key_env: None,
        },
        ..SupervisorPolicy::default()
    };
    let cases: Vec<(SupervisorPolicy, &str, &str)> = vec![
        (
            SupervisorPolicy {
                timeout_seconds: 0,
                ..base.clone()
            },
            "timeout_seconds",
            "timeout_seconds = 0 is out of range: give 1 to 3600 seconds",
        ),
        (
            SupervisorPolicy {
                timeout_seconds: MAX_EVALUATOR_TIMEOUT_SECONDS + 1,
                ..base.clone()
            },
            "timeout_seconds",
            "timeout_seconds = 3601 is out of range",
        ),
        (
            SupervisorPolicy {
                pause_timeout_seconds: 0,
                ..base.clone()
            },
            "pause_timeout_seconds",
            "pause_timeout_seconds must be at least 1 second",
        ),
        (
            SupervisorPolicy {
                max_reorient_attempts: 0,
                ..base.clone()
            },
            "max_reorient_attempts",
            "max_reorient_attempts must be at least 1",
        ),
        (
            SupervisorPolicy {
                evaluator: EvaluatorConfig::Command {
                    command: "  ".to_owned(),
                    args: vec![],
                },
                ..base.clone()
            },
            "evaluator.command",
            "the supervisor command is empty: give the program to run",
        ),
        (
            openai("localhost:11434/v1", "m"),
            "evaluator.base_url",
            "base_url 'localhost:11434/v1' must start with http:// or https://",
        ),
        (
            openai("ftp://host", "m"),
            "evaluator.base_url",
            "must start with http:// or https://",
        ),
        (
            openai("http://127.0.0.1:11434/v1", " "),
            "evaluator.model",
            "the model is empty: name the model the endpoint serves",
        ),
        (
            SupervisorPolicy {
                gate_authority: BTreeMap::from([(GateKind::Deviation, Autonomy::Autonomous)]),
                ..base.clone()
            },
            "gate_authority.deviation",
            "the supervisor has no authority over deviation gates",
        ),
    ];
    for (policy, field, want) in cases {
        let err = policy.validate().expect_err(want);
        assert_eq!(err.len(), 1, "{err:?}");
        assert_eq!(err[0].field, field, "{err:?}");
        assert!(
            err[0].message.contains(want),
            "{err:?} should contain {want:?}"
        );
    }
}

#[test]
fn every_setting_in_error_is_named_at_once() {
    let policy = SupervisorPolicy {
        timeout_seconds: 0,
        max_reorient_attempts: 0,
        gate_authority: BTreeMap::from([
            (GateKind::Plan, Autonomy::Autonomous),
            (GateKind::SupervisorPause, Autonomy::Advisory),
        ]),
        evaluator: EvaluatorConfig::Openai {
            base_url: "http://127.0.0.1:11434/v1".to_owned(),
            model: String::new(),
            api_key_env: Some("OPENAI_API_KEY".to_owned()),
        },
        ..SupervisorPolicy::default()
    };
    let fields: Vec<String> = policy
        .validate()
        .expect_err("four mistakes")
        .into_iter()
        .map(|e| e.field)
        .collect();
    assert_eq!(
        fields,
        [
            "max_reorient_attempts",
            "timeout_seconds",
            "gate_authority.supervisor_pause",
            "evaluator.model"
        ]
    );
}

#[test]
fn the_api_key_setting_takes_a_variable_name_never_a_key() {
    let with_env = |env: &str| SupervisorPolicy {
        evaluator: EvaluatorConfig::Openai {
            base_url: "https://api.example.com/v1".to_owned(),
            model: "small".to_owned(),
            api_key_env: Some(env.to_owned()),
        },
        ..SupervisorPolicy::default()
    };
    for name in ["OPENAI_API_KEY", "_KEY", "key2"] {
        assert_eq!(with_env(name).validate(), Ok(()), "{name}");
    }
    for secret in [
        "sk-proj-abc123",
        "ghp_0123456789abcdef",
        "AIzaSyD-0123456789",
        "Zx9fQ2mLk8PwR4tYu7IoP3aSd6FgH1jK",
    ] {
        let err = with_env(secret).validate().expect_err(secret);
        assert_eq!(err[0].field, "evaluator.api_key_env");
        assert!(err[0].message.contains("looks like a key"), "{err:?}");
        assert!(
            !err[0].message.contains(secret),
            "the message never repeats the secret: {err:?}"
        );
    }
    let err = with_env("OPENAI KEY").validate().expect_err("a space");
    assert!(
        err[0].message.contains("not an environment variable name"),
        "{err:?}"
    );
}

/// What the supervisor may do on each kind of gate at a given level.
fn expected_authority(kind: GateKind, level: Autonomy) -> Option<Autonomy> {
    match kind {
        GateKind::Plan | GateKind::ToolCall | GateKind::StepReview | GateKind::MergeReview => {
            Some(level)
        }
        GateKind::Question => Some(Autonomy::Advisory),
        GateKind::SupervisorPause | GateKind::Deviation => None,
    }
}

#[test]
fn authority_for_every_autonomy_and_gate_kind() {
    for autonomy in Autonomy::ALL {
        let on = enabled(autonomy);
        let off = SupervisorPolicy {
            enabled: false,
            ..on.clone()
        };
        for kind in GateKind::ALL {
            assert_eq!(
                on.authority(kind),
                expected_authority(kind, autonomy),
                "{autonomy:?} on {kind:?}"
            );
            assert_eq!(
                off.authority(kind),
                None,
                "disabled: {autonomy:?} on {kind:?}"
            );
        }
    }
}

#[test]
fn per_gate_authority_takes_precedence() {
    for base in Autonomy::ALL {
        for level in Autonomy::ALL {
            for overridden in GateKind::ALL {
                let policy = SupervisorPolicy {
                    gate_authority: BTreeMap::from([(overridden, level)]),
                    ..enabled(base)
                };
                for kind in GateKind::ALL {
                    let want = if kind == overridden {
                        expected_authority(kind, level)
                    } else {
                        expected_authority(kind, base)
                    };
                    assert_eq!(
                        policy.authority(kind),
                        want,
                        "base {base:?}, {overridden:?} -> {level:?}, asked {kind:?}"
                    );
                }
            }
        }
    }
    // The example of the policy's docs: advisory on plans, autonomous on merges.
    let mixed = SupervisorPolicy {
        gate_authority: BTreeMap::from([
            (GateKind::Plan, Autonomy::Advisory),
            (GateKind::MergeReview, Autonomy::Autonomous),
            (GateKind::Question, Autonomy::Autonomous),
        ]),
        ..enabled(Autonomy::Cosign)
    };
    assert_eq!(mixed.authority(GateKind::Plan), Some(Autonomy::Advisory));
    assert_eq!(
        mixed.authority(GateKind::MergeReview),
        Some(Autonomy::Autonomous)
    );
    assert_eq!(mixed.authority(GateKind::ToolCall), Some(Autonomy::Cosign));
    assert_eq!(
        mixed.authority(GateKind::Question),
        Some(Autonomy::Advisory),
        "a supervisor never answers a human question"
    );
}

// ---------------------------------------------------------------------------
// Verdicts as gate options.

#[test]
fn verdicts_map_to_options_for_every_kind() {
    let choosing = [
        (GateKind::Plan, "approve", "reject"),
        (GateKind::ToolCall, "yes", "no"),
        (GateKind::StepReview, "proceed", "stop"),
        (GateKind::MergeReview, "approve", "reject"),
    ];
    for kind in GateKind::ALL {
        let mapped = choosing.iter().find(|(k, _, _)| *k == kind);
        for verdict in Verdict::ALL {
            let want = match (mapped, verdict) {
                (Some((_, approve, _)), Verdict::Approve) => Some(*approve),
                (Some((_, _, reject)), Verdict::Reject) => Some(*reject),
                _ => None,
            };
            assert_eq!(verdict_option(kind, verdict), want, "{kind:?} {verdict:?}");
        }
    }
    // The options exist on the gates that offer them.
    let merge: Vec<String> = overseer_core::merge_review_options()
        .into_iter()
        .map(|o| o.id)
        .collect();
    for verdict in [Verdict::Approve, Verdict::Reject] {
        let option = verdict_option(GateKind::MergeReview, verdict).expect("mapped");
        assert!(merge.iter().any(|o| o == option));
    }
}

// ---------------------------------------------------------------------------
// Votes.

/// Casts votes one by one, as the store does: every vote must be accepted.
struct Gate {
    autonomy: Option<Autonomy>,
    approve: Option<&'static str>,
    votes: Vec<Vote>,
    effected: bool,
}

impl Gate {
    fn new(autonomy: Option<Autonomy>, approve: &'static str) -> Self {
        Gate {
            autonomy,
            approve: Some(approve),
            votes: Vec::new(),
            effected: false,
        }
    }

    fn offer(&self, vote: &Vote) -> Result<(), VoteRefused> {
        accept_vote(self.autonomy, &self.votes, self.effected, vote)
    }

    fn cast(&mut self, vote: Vote) -> Resolution {
        if let Err(e) = self.offer(&vote) {
            panic!("{vote:?} refused on {:?}: {e}", self.votes);
        }
        self.votes.push(vote);
        self.resolution()
    }

    fn refuse(&self, vote: &Vote) -> VoteRefused {
        self.offer(vote).expect_err("refused")
    }

    fn resolution(&self) -> Resolution {
        resolve(self.autonomy, self.approve, &self.votes)
    }
}

fn at(n: usize) -> i64 {
    1_000 + i64::try_from(n).unwrap_or(0)
}

/// A human's choice; approve when it is the gate's approving option, as the
/// store records it.
fn user(option: &str, approve: &str) -> Vote {
    Vote {
        actor: Actor::app(),
        verdict: if option == approve {
            Verdict::Approve
        } else {
            Verdict::Reject
        },
        option: Some(option.to_owned()),
        at: at(0),
    }
}

fn sup(verdict: Verdict, kind: GateKind) -> Vote {
    Vote {
        actor: Actor::Supervisor("rules".to_owned()),
        verdict,
        option: verdict_option(kind, verdict).map(str::to_owned),
        at: at(0),
    }
}

fn by_user(option: &str) -> Resolution {
    Resolution::Decided {
        option: option.to_owned(),
        by: Actor::app(),
    }
}

fn by_supervisor(option: &str) -> Resolution {
    Resolution::Decided {
        option: option.to_owned(),
        by: Actor::Supervisor("rules".to_owned()),
    }
}

const PENDING: Resolution = Resolution::Pending {
    awaiting_cosign: false,
};
const AWAITING_COSIGN: Resolution = Resolution::Pending {
    awaiting_cosign: true,
};

const MERGE: GateKind = GateKind::MergeReview;
const TOOL: GateKind = GateKind::ToolCall;

#[test]
fn without_a_supervisor_the_first_human_vote_decides() {
    let mut g = Gate::new(None, "approve");
    assert_eq!(g.resolution(), PENDING);
    let err = g.refuse(&sup(Verdict::Approve, MERGE));
    assert!(matches!(err, VoteRefused::NotAllowed(_)), "{err:?}");
    assert!(err.to_string().contains("no authority"), "{err}");
    assert_eq!(g.cast(user("reject", "approve")), by_user("reject"));
    assert_eq!(
        g.refuse(&user("approve", "approve")),
        VoteRefused::GateClosed
    );
}

#[test]
fn an_advisory_supervisor_is_recorded_but_never_decides() {
    let mut g = Gate::new(Some(Autonomy::Advisory), "approve");
    assert_eq!(g.cast(sup(Verdict::Advise, MERGE)), PENDING);
    assert_eq!(g.cast(sup(Verdict::Approve, MERGE)), PENDING);
    assert_eq!(g.cast(sup(Verdict::Reject, MERGE)), PENDING);
    assert_eq!(g.cast(sup(Verdict::Escalate, MERGE)), PENDING);
    assert_eq!(g.cast(user("reject", "approve")), by_user("reject"));
    assert_eq!(
        g.refuse(&sup(Verdict::Approve, MERGE)),
        VoteRefused::UserAlreadyDecided
    );
    assert_eq!(
        g.refuse(&user("approve", "approve")),
        VoteRefused::GateClosed
    );
}

#[test]
fn an_autonomous_supervisor_decides_until_a_human_overrides() {
    let mut g = Gate::new(Some(Autonomy::Autonomous), "yes");
    assert_eq!(g.cast(sup(Verdict::Escalate, TOOL)), PENDING);
    assert_eq!(g.cast(sup(Verdict::Advise, TOOL)), PENDING);
    assert_eq!(g.cast(sup(Verdict::Approve, TOOL)), by_supervisor("yes"));
    assert_eq!(
        g.refuse(&sup(Verdict::Reject, TOOL)),
        VoteRefused::GateClosed,
        "the supervisor does not change its own decision"
    );
    // The human overrides before the effect happened.
    assert_eq!(g.cast(user("no", "yes")), by_user("no"));
    assert_eq!(g.refuse(&user("yes", "yes")), VoteRefused::GateClosed);
    assert_eq!(
        g.refuse(&sup(Verdict::Approve, TOOL)),
        VoteRefused::UserAlreadyDecided
    );
}

#[test]
fn once_the_effect_happened_nobody_votes() {
    let mut g = Gate::new(Some(Autonomy::Autonomous), "yes");
    assert_eq!(g.cast(sup(Verdict::Approve, TOOL)), by_supervisor("yes"));
    g.effected = true;
    assert_eq!(g.refuse(&user("no", "yes")), VoteRefused::GateClosed);
    assert_eq!(
        g.refuse(&sup(Verdict::Reject, TOOL)),
        VoteRefused::GateClosed
    );
}

#[test]
fn an_autonomous_supervisor_after_the_human_is_too_late() {
    let mut g = Gate::new(Some(Autonomy::Autonomous), "approve");
    assert_eq!(g.cast(user("approve", "approve")), by_user("approve"));
    assert_eq!(
        g.refuse(&sup(Verdict::Reject, MERGE)),
        VoteRefused::UserAlreadyDecided
    );
}

#[test]
fn cosign_needs_both_approvals_in_either_order() {
    let mut g = Gate::new(Some(Autonomy::Cosign), "approve");
    assert_eq!(g.cast(user("approve", "approve")), AWAITING_COSIGN);
    assert_eq!(g.cast(sup(Verdict::Approve, MERGE)), by_user("approve"));
    assert_eq!(
        g.refuse(&sup(Verdict::Approve, MERGE)),
        VoteRefused::GateClosed
    );
    assert_eq!(
        g.refuse(&user("reject", "approve")),
        VoteRefused::GateClosed
    );

    let mut g = Gate::new(Some(Autonomy::Cosign), "approve");
    assert_eq!(
        g.cast(sup(Verdict::Approve, MERGE)),
        PENDING,
        "the supervisor alone never decides"
    );
    assert_eq!(g.cast(user("approve", "approve")), by_user("approve"));
}

#[test]
fn cosign_a_human_refusal_decides_at_once() {
    let mut g = Gate::new(Some(Autonomy::Cosign), "approve");
    assert_eq!(g.cast(user("abort", "approve")), by_user("abort"));
    assert_eq!(
        g.refuse(&sup(Verdict::Approve, MERGE)),
        VoteRefused::UserAlreadyDecided
    );
    assert_eq!(
        g.refuse(&user("approve", "approve")),
        VoteRefused::GateClosed
    );

    // Also after having approved: the refusal stands.
    let mut g = Gate::new(Some(Autonomy::Cosign), "approve");
    assert_eq!(g.cast(user("approve", "approve")), AWAITING_COSIGN);
    assert_eq!(g.cast(sup(Verdict::Reject, MERGE)), AWAITING_COSIGN);
    assert_eq!(g.cast(user("reject", "approve")), by_user("reject"));
}

#[test]
fn cosign_a_human_may_approve_over_the_supervisors_objection() {
    for objection in [Verdict::Reject, Verdict::Escalate, Verdict::Advise] {
        // Approved, then the supervisor objected: the human confirms.
        let mut g = Gate::new(Some(Autonomy::Cosign), "approve");
        assert_eq!(g.cast(user("approve", "approve")), AWAITING_COSIGN);
        assert_eq!(g.cast(sup(objection, MERGE)), AWAITING_COSIGN);
        assert_eq!(g.cast(user("approve", "approve")), by_user("approve"));

        // The supervisor objected first: the human saw it and approved.
        let mut g = Gate::new(Some(Autonomy::Cosign), "approve");
        assert_eq!(g.cast(sup(objection, MERGE)), PENDING);
        assert_eq!(g.cast(user("approve", "approve")), by_user("approve"));
    }
}

#[test]
fn cosign_counts_the_approving_option_or_an_approving_verdict() {
    // The store records a tool call's "always" as an approval: it needs the
    // co-signature like "yes" does.
    let mut g = Gate::new(Some(Autonomy::Cosign), "yes");
    let always = Vote {
        verdict: Verdict::Approve,
        ..user("always", "yes")
    };
    assert_eq!(g.cast(always), AWAITING_COSIGN);
    assert_eq!(g.cast(sup(Verdict::Approve, TOOL)), by_user("always"));
    // A vote for the approving option approves even if recorded otherwise.
    let g = Gate {
        votes: vec![
            Vote {
                verdict: Verdict::Reject,
                ..user("yes", "yes")
            },
            sup(Verdict::Approve, TOOL),
        ],
        ..Gate::new(Some(Autonomy::Cosign), "yes")
    };
    assert_eq!(g.resolution(), by_user("yes"));
}

#[test]
fn only_humans_and_the_supervisor_vote_and_only_with_gate_verdicts() {
    for autonomy in [
        None,
        Some(Autonomy::Advisory),
        Some(Autonomy::Cosign),
        Some(Autonomy::Autonomous),
    ] {
        let g = Gate::new(autonomy, "approve");
        for actor in [Actor::Engine, Actor::Agent("demo".to_owned())] {
            let vote = Vote {
                actor,
                ..user("approve", "approve")
            };
            let err = g.refuse(&vote);
            assert!(
                matches!(&err, VoteRefused::NotAllowed(m) if m.contains("cannot vote")),
                "{err:?}"
            );
        }
        let blank = Vote {
            option: None,
            ..user("approve", "approve")
        };
        assert!(
            matches!(g.refuse(&blank), VoteRefused::NotAllowed(m) if m.contains("choose one of the gate's options"))
        );
        let step_verdict = Vote {
            verdict: Verdict::Continue,
            ..sup(Verdict::Approve, MERGE)
        };
        assert!(
            matches!(g.refuse(&step_verdict), VoteRefused::NotAllowed(m) if m.contains("verdict for finished steps"))
        );
    }
}

#[test]
fn refusals_say_what_happened() {
    assert_eq!(
        VoteRefused::GateClosed.to_string(),
        "this gate is already decided and closed to further votes: see its decision in the run's history"
    );
    assert!(VoteRefused::UserAlreadyDecided
        .to_string()
        .contains("the user always wins"));
    assert_eq!(VoteRefused::NotAllowed("why".to_owned()).to_string(), "why");
}

#[test]
fn votes_and_resolutions_serialize_in_snake_case() {
    let json = serde_json::to_value(by_user("approve")).expect("serialize");
    assert_eq!(
        json,
        serde_json::json!({"resolution": "decided", "option": "approve", "by": {"kind": "user", "name": "app"}})
    );
    let json = serde_json::to_value(AWAITING_COSIGN).expect("serialize");
    assert_eq!(
        json,
        serde_json::json!({"resolution": "pending", "awaiting_cosign": true})
    );
    let vote = sup(Verdict::Reject, TOOL);
    let json = serde_json::to_value(&vote).expect("serialize");
    assert_eq!(json["verdict"], "reject");
    assert_eq!(json["option"], "no");
    let back: Vote = serde_json::from_value(json).expect("deserialize");
    assert_eq!(back, vote);
}

// ---------------------------------------------------------------------------
// Properties of vote resolution.

const OPTIONS: [&str; 3] = ["approve", "reject", "abort"];

/// A candidate vote: by whom (0/1: users at the app / cli, 2: supervisor), a
/// verdict index and an option index.
fn candidate(who: u8, verdict: u8, option: u8, n: usize) -> Vote {
    let option = OPTIONS[usize::from(option) % OPTIONS.len()];
    let human = match who % 3 {
        0 => Some(Actor::app()),
        1 => Some(Actor::cli()),
        _ => None,
    };
    match human {
        Some(actor) => Vote {
            actor,
            verdict: if option == "approve" {
                Verdict::Approve
            } else {
                Verdict::Reject
            },
            option: Some(option.to_owned()),
            at: at(n),
        },
        None => {
            let verdict = [
                Verdict::Approve,
                Verdict::Reject,
                Verdict::Escalate,
                Verdict::Advise,
            ][usize::from(verdict) % 4];
            Vote {
                actor: Actor::Supervisor("judge".to_owned()),
                verdict,
                // Advise sometimes names a recommendation.
                option: verdict_option(MERGE, verdict)
                    .or((verdict == Verdict::Advise).then_some(option))
                    .map(str::to_owned),
                at: at(n),
            }
        }
    }
}

/// Offers every candidate in turn and keeps the accepted ones, with the
/// resolution after each.
fn cast_all(
    autonomy: Option<Autonomy>,
    candidates: &[(u8, u8, u8)],
) -> (Vec<Vote>, Vec<Resolution>) {
    let mut votes = Vec::new();
    let mut resolutions = Vec::new();
    for (n, &(who, verdict, option)) in candidates.iter().enumerate() {
        let vote = candidate(who, verdict, option, n);
        if accept_vote(autonomy, &votes, false, &vote).is_ok() {
            votes.push(vote);
            resolutions.push(resolve(autonomy, Some("approve"), &votes));
        }
    }
    (votes, resolutions)
}

fn candidates() -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    proptest::collection::vec((0u8..3, 0u8..4, 0u8..3), 0..12)
}

proptest! {
    #[test]
    fn outside_cosign_the_latest_accepted_human_vote_decides(
        autonomy in prop_oneof![
            Just(None),
            Just(Some(Autonomy::Advisory)),
            Just(Some(Autonomy::Autonomous)),
        ],
        candidates in candidates(),
    ) {
        let (votes, _) = cast_all(autonomy, &candidates);
        if let Some(last_user) = votes.iter().rev().find(|v| v.actor.is_user()) {
            let resolution = resolve(autonomy, Some("approve"), &votes);
            prop_assert_eq!(
                resolution,
                Resolution::Decided {
                    option: last_user.option.clone().unwrap_or_default(),
                    by: last_user.actor.clone(),
                }
            );
        }
    }

    #[test]
    fn cosign_the_supervisor_never_decides_alone_and_a_human_refusal_stands(
        candidates in candidates(),
    ) {
        let autonomy = Some(Autonomy::Cosign);
        let (votes, resolutions) = cast_all(autonomy, &candidates);
        for (i, resolution) in resolutions.iter().enumerate() {
            if let Resolution::Decided { by, .. } = resolution {
                prop_assert!(by.is_user(), "decided by {by} after {:?}", &votes[..=i]);
                // Once decided, nothing changes it.
                prop_assert!(resolutions[i..].iter().all(|r| r == resolution));
            }
            let refusal = votes[..=i]
                .iter()
                .find(|v| v.actor.is_user() && v.option.as_deref() != Some("approve"));
            if let Some(refusal) = refusal {
                prop_assert_eq!(
                    resolution,
                    &Resolution::Decided {
                        option: refusal.option.clone().unwrap_or_default(),
                        by: refusal.actor.clone(),
                    }
                );
            }
        }
    }

    #[test]
    fn a_human_vote_is_never_refused_on_an_undecided_gate(
        autonomy in prop_oneof![
            Just(None),
            Just(Some(Autonomy::Advisory)),
            Just(Some(Autonomy::Cosign)),
            Just(Some(Autonomy::Autonomous)),
        ],
        candidates in candidates(),
        option in 0u8..3,
    ) {
        let (votes, _) = cast_all(autonomy, &candidates);
        let undecided = !votes.iter().any(|v| v.actor.is_user())
            || matches!(resolve(autonomy, Some("approve"), &votes), Resolution::Pending { .. });
        if undecided {
            let vote = candidate(0, 0, option, votes.len());
            prop_assert_eq!(accept_vote(autonomy, &votes, false, &vote), Ok(()));
        }
    }
}

#[test]
fn the_supervisor_weighs_a_step_only_when_enabled_and_then_only_what_confidence_does_not_clear() {
    use overseer_core::confidence::Band;
    use overseer_core::supervision::{weighs_step, SupervisorPolicy};
    let off = SupervisorPolicy::default();
    let on = SupervisorPolicy {
        enabled: true,
        ..SupervisorPolicy::default()
    };
    let always = SupervisorPolicy {
        always_supervise: true,
        ..on.clone()
    };
    for band in [Band::High, Band::Medium, Band::Low, Band::Zero] {
        for (drift, destructive) in [(false, false), (true, false), (false, true), (true, true)] {
            assert!(
                !weighs_step(&off, band, drift, destructive),
                "off never weighs"
            );
            assert!(
                weighs_step(&always, band, drift, destructive),
                "always weighs"
            );
            let flagged = band != Band::High || drift || destructive;
            assert_eq!(weighs_step(&on, band, drift, destructive), flagged);
        }
    }
}

#[test]
fn a_pause_its_timer_aborts_terminates_and_a_humans_abort_aborts() {
    use overseer_core::supervision::{pause_outcome, PauseOutcome};
    use overseer_core::SupervisorPauseChoice as C;
    assert_eq!(
        pause_outcome(Some(C::Proceed), false),
        PauseOutcome::Proceed
    );
    assert_eq!(pause_outcome(Some(C::Modify), false), PauseOutcome::Modify);
    assert_eq!(pause_outcome(Some(C::Abort), true), PauseOutcome::Terminate);
    assert_eq!(pause_outcome(None, true), PauseOutcome::Terminate);
    assert_eq!(pause_outcome(Some(C::Abort), false), PauseOutcome::Abort);
    assert_eq!(pause_outcome(None, false), PauseOutcome::Abort);
}

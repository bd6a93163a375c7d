//! Confidence per step: the design document's scorer, its bands, and what each
//! approval mode makes of them.

use overseer_core::confidence::{
    band, explain, score, step_action, ApprovalMode, Band, StepAction, StepEvidence, BANDS,
    DEFAULT_AUTO_PROCEED_MS, WEIGHTS,
};
use proptest::prelude::*;

/// Every term at full marks: sensors, supervisor, no retries, nothing
/// destructive, every tool call fine.
fn all_good() -> StepEvidence {
    StepEvidence {
        checks_passed: 3,
        checks_total: 3,
        evaluator_confidence: Some(1.0),
        retries: 0,
        max_retries: 10,
        destructive: false,
        tool_calls_ok: 5,
        tool_calls_total: 5,
    }
}

fn close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "expected {expected}, got {actual}"
    );
}

#[test]
fn the_weights_are_the_design_documents_and_sum_to_one() {
    assert_eq!(WEIGHTS.verification, 0.3);
    assert_eq!(WEIGHTS.evaluator, 0.3);
    assert_eq!(WEIGHTS.no_retries, 0.2);
    assert_eq!(WEIGHTS.not_destructive, 0.1);
    assert_eq!(WEIGHTS.tool_success, 0.1);
    close(
        WEIGHTS.verification
            + WEIGHTS.evaluator
            + WEIGHTS.no_retries
            + WEIGHTS.not_destructive
            + WEIGHTS.tool_success,
        1.0,
    );
    assert_eq!((BANDS.high, BANDS.medium, BANDS.low), (0.8, 0.5, 0.2));
}

#[test]
fn all_good_scores_exactly_one() {
    assert_eq!(score(&all_good()), 1.0);
    let bare = StepEvidence {
        checks_total: 0,
        evaluator_confidence: None,
        tool_calls_total: 0,
        tool_calls_ok: 0,
        ..all_good()
    };
    assert_eq!(
        score(&bare),
        1.0,
        "no sensors, no supervisor, no tool calls"
    );
}

#[test]
fn a_failed_check_costs_its_share_of_the_verification_weight() {
    // All terms present: the weights sum to 1, so the cost is direct.
    let one_failed = StepEvidence {
        checks_passed: 2,
        ..all_good()
    };
    close(score(&one_failed), 1.0 - 0.3 / 3.0);
    let all_failed = StepEvidence {
        checks_passed: 0,
        ..all_good()
    };
    close(score(&all_failed), 0.7);
    // Without a supervisor confidence the verification weight is 0.3 of 0.7.
    let no_supervisor = StepEvidence {
        checks_passed: 3,
        checks_total: 4,
        evaluator_confidence: None,
        ..all_good()
    };
    close(score(&no_supervisor), (0.75 * 0.3 + 0.4) / 0.7);
    // More passes than checks cannot score above full marks.
    let odd = StepEvidence {
        checks_passed: 9,
        ..all_good()
    };
    assert_eq!(score(&odd), 1.0);
}

#[test]
fn the_supervisor_confidence_counts_for_its_weight() {
    let half = StepEvidence {
        evaluator_confidence: Some(0.5),
        ..all_good()
    };
    close(score(&half), 0.85);
}

#[test]
fn retries_cost_up_to_the_retry_weight() {
    let one_of_ten = StepEvidence {
        retries: 1,
        ..all_good()
    };
    close(score(&one_of_ten), 0.98);
    let all_used = StepEvidence {
        retries: 10,
        ..all_good()
    };
    close(score(&all_used), 0.8);
    let beyond = StepEvidence {
        retries: 25,
        ..all_good()
    };
    close(score(&beyond), 0.8);
}

#[test]
fn no_retries_allowed_is_handled() {
    let none_needed = StepEvidence {
        retries: 0,
        max_retries: 0,
        ..all_good()
    };
    assert_eq!(score(&none_needed), 1.0);
    let one_anyway = StepEvidence {
        retries: 1,
        max_retries: 0,
        ..all_good()
    };
    close(score(&one_anyway), 0.8);
}

#[test]
fn destructive_work_costs_its_weight() {
    let destructive = StepEvidence {
        destructive: true,
        ..all_good()
    };
    close(score(&destructive), 0.9);
}

#[test]
fn failed_tool_calls_cost_their_share() {
    let three_of_five = StepEvidence {
        tool_calls_ok: 3,
        ..all_good()
    };
    close(score(&three_of_five), 1.0 - 0.1 * 2.0 / 5.0);
    let none_ok = StepEvidence {
        tool_calls_ok: 0,
        ..all_good()
    };
    close(score(&none_ok), 0.9);
    let no_calls = StepEvidence {
        tool_calls_ok: 0,
        tool_calls_total: 0,
        ..all_good()
    };
    assert_eq!(score(&no_calls), 1.0, "no tool calls counts as full marks");
}

#[test]
fn no_sensors_leaves_the_verification_term_out() {
    // checks_passed is meaningless without sensors and must not count.
    let no_sensors = StepEvidence {
        checks_passed: 0,
        checks_total: 0,
        ..all_good()
    };
    assert_eq!(score(&no_sensors), 1.0);
    // Without sensors, the other terms carry the whole weight: destructive
    // costs 0.1 of 0.7 instead of 0.1 of 1.
    let destructive = StepEvidence {
        destructive: true,
        ..no_sensors
    };
    close(score(&destructive), 0.6 / 0.7);
    let nothing_but_basics = StepEvidence {
        destructive: true,
        evaluator_confidence: None,
        ..no_sensors
    };
    close(score(&nothing_but_basics), 0.3 / 0.4);
}

#[test]
fn a_broken_supervisor_confidence_is_clamped_or_ignored() {
    let without = StepEvidence {
        evaluator_confidence: None,
        checks_passed: 1,
        ..all_good()
    };
    let nan = StepEvidence {
        evaluator_confidence: Some(f64::NAN),
        ..without
    };
    assert_eq!(score(&nan), score(&without), "NaN is ignored");
    for (raw, counted) in [
        (1.5, 1.0),
        (f64::INFINITY, 1.0),
        (-0.5, 0.0),
        (f64::NEG_INFINITY, 0.0),
    ] {
        let raw_e = StepEvidence {
            evaluator_confidence: Some(raw),
            ..without
        };
        let counted_e = StepEvidence {
            evaluator_confidence: Some(counted),
            ..without
        };
        assert_eq!(
            score(&raw_e),
            score(&counted_e),
            "{raw} counts as {counted}"
        );
    }
}

#[test]
fn everything_wrong_scores_zero() {
    let worst = StepEvidence {
        checks_passed: 0,
        checks_total: 4,
        evaluator_confidence: Some(0.0),
        retries: 3,
        max_retries: 3,
        destructive: true,
        tool_calls_ok: 0,
        tool_calls_total: 2,
    };
    assert_eq!(score(&worst), 0.0);
    assert_eq!(band(score(&worst)), Band::Zero);
}

#[test]
fn band_boundaries_belong_to_the_band_above() {
    let cases = [
        (1.0, Band::High),
        (0.8, Band::High),
        (0.799_999, Band::Medium),
        (0.5, Band::Medium),
        (0.499_9, Band::Low),
        (0.2, Band::Low),
        (0.199_9, Band::Zero),
        (0.0, Band::Zero),
        (-1.0, Band::Zero),
        (f64::NAN, Band::Zero),
    ];
    for (s, want) in cases {
        assert_eq!(band(s), want, "score {s}");
    }
}

#[test]
fn every_mode_band_and_gating_combination() {
    use StepAction::{AbortStep, HardStop, Proceed};
    let review = StepAction::ReviewWithTimeout {
        auto_proceed_after_ms: DEFAULT_AUTO_PROCEED_MS,
    };
    let auto = ApprovalMode::Auto;
    let manual = ApprovalMode::Manual;
    let t07 = ApprovalMode::ConfidenceThreshold { threshold: 0.7 };
    let t03 = ApprovalMode::ConfidenceThreshold { threshold: 0.3 };
    let t00 = ApprovalMode::ConfidenceThreshold { threshold: 0.0 };
    // (mode, score, always_gated, expected). Scores: 0.9 high, 0.6 medium,
    // 0.3 low, 0.1 zero, plus scores around the thresholds.
    let table: &[(ApprovalMode, f64, bool, StepAction)] = &[
        (auto, 0.9, false, Proceed),
        (auto, 0.9, true, HardStop),
        (auto, 0.6, false, review),
        (auto, 0.6, true, HardStop),
        (auto, 0.3, false, HardStop),
        (auto, 0.3, true, HardStop),
        (auto, 0.1, false, AbortStep),
        (auto, 0.1, true, AbortStep),
        (manual, 0.9, false, HardStop),
        (manual, 0.9, true, HardStop),
        (manual, 0.6, false, HardStop),
        (manual, 0.6, true, HardStop),
        (manual, 0.3, false, HardStop),
        (manual, 0.3, true, HardStop),
        (manual, 0.1, false, AbortStep),
        (manual, 0.1, true, AbortStep),
        (t07, 0.9, false, Proceed),
        (t07, 0.9, true, HardStop),
        (t07, 0.7, false, Proceed),
        (t07, 0.7, true, HardStop),
        (t07, 0.6, false, HardStop),
        (t07, 0.6, true, HardStop),
        (t07, 0.3, false, HardStop),
        (t07, 0.3, true, HardStop),
        (t07, 0.1, false, AbortStep),
        (t07, 0.1, true, AbortStep),
        // A low threshold lets a low band through, but never the zero band.
        (t03, 0.3, false, Proceed),
        (t03, 0.3, true, HardStop),
        (t03, 0.29, false, HardStop),
        (t00, 0.1, false, AbortStep),
        (t00, 0.2, false, Proceed),
    ];
    for &(mode, s, gated, want) in table {
        assert_eq!(
            step_action(&mode, s, gated, DEFAULT_AUTO_PROCEED_MS),
            want,
            "{mode:?} score {s} always_gated {gated}"
        );
    }
}

#[test]
fn the_review_delay_is_the_given_one_and_never_negative() {
    let s = 0.6;
    assert_eq!(
        step_action(&ApprovalMode::Auto, s, false, 2_500),
        StepAction::ReviewWithTimeout {
            auto_proceed_after_ms: 2_500
        }
    );
    assert_eq!(
        step_action(&ApprovalMode::Auto, s, false, -1),
        StepAction::ReviewWithTimeout {
            auto_proceed_after_ms: 0
        }
    );
    assert_eq!(DEFAULT_AUTO_PROCEED_MS, 10_000);
}

#[test]
fn thresholds_must_be_within_zero_and_one() {
    for ok in [0.0, 0.5, 0.8, 1.0] {
        assert_eq!(
            ApprovalMode::ConfidenceThreshold { threshold: ok }.validate(),
            Ok(())
        );
    }
    for bad in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
        let err = ApprovalMode::ConfidenceThreshold { threshold: bad }
            .validate()
            .expect_err("out of range");
        assert_eq!(err.field, "threshold");
        assert!(err.message.contains("within [0, 1]"), "{err:?}");
    }
    assert_eq!(ApprovalMode::Auto.validate(), Ok(()));
    assert_eq!(ApprovalMode::Manual.validate(), Ok(()));
}

#[test]
fn modes_parse_from_their_names() {
    assert_eq!(ApprovalMode::parse("auto", None), Ok(ApprovalMode::Auto));
    assert_eq!(
        ApprovalMode::parse(" Manual ", None),
        Ok(ApprovalMode::Manual)
    );
    assert_eq!(
        ApprovalMode::parse("confidence_threshold", Some(0.7)),
        Ok(ApprovalMode::ConfidenceThreshold { threshold: 0.7 })
    );
    assert_eq!(
        ApprovalMode::parse("confidence_threshold", None),
        Ok(ApprovalMode::ConfidenceThreshold { threshold: 0.8 }),
        "no threshold: the high band's bound"
    );
    let err = ApprovalMode::parse("confidence_threshold", Some(1.5)).expect_err("range");
    assert!(err.contains("within [0, 1]"), "{err}");
    let err = ApprovalMode::parse("auto", Some(0.5)).expect_err("stray threshold");
    assert!(
        err.contains("only applies to the confidence_threshold mode"),
        "{err}"
    );
    let err = ApprovalMode::parse("sometimes", None).expect_err("unknown");
    assert_eq!(
        err,
        "unknown approval mode 'sometimes': use auto, manual, confidence_threshold"
    );
}

#[test]
fn modes_serialize_with_a_mode_tag() {
    let cases = [
        (ApprovalMode::Auto, r#"{"mode":"auto"}"#),
        (ApprovalMode::Manual, r#"{"mode":"manual"}"#),
        (
            ApprovalMode::ConfidenceThreshold { threshold: 0.7 },
            r#"{"mode":"confidence_threshold","threshold":0.7}"#,
        ),
    ];
    for (mode, json) in cases {
        assert_eq!(serde_json::to_string(&mode).expect("serialize"), json);
        let back: ApprovalMode = serde_json::from_str(json).expect("deserialize");
        assert_eq!(back, mode);
    }
    assert_eq!(ApprovalMode::default(), ApprovalMode::Auto);
    assert_eq!(
        serde_json::to_string(&StepAction::ReviewWithTimeout {
            auto_proceed_after_ms: 10_000
        })
        .expect("serialize"),
        r#"{"action":"review_with_timeout","auto_proceed_after_ms":10000}"#
    );
    assert_eq!(
        serde_json::to_string(&Band::Zero).expect("serialize"),
        r#""zero""#
    );
}

#[test]
fn explain_names_every_term() {
    let e = StepEvidence {
        retries: 1,
        evaluator_confidence: None,
        ..all_good()
    };
    assert_eq!(
        explain(&e, score(&e)),
        "checks 3/3, retries 1/10, no destructive ops, tool calls 5/5 ok -> 0.97"
    );
    let e = StepEvidence {
        checks_total: 0,
        evaluator_confidence: Some(0.5),
        destructive: true,
        tool_calls_total: 0,
        ..all_good()
    };
    assert_eq!(
        explain(&e, 0.5),
        "no sensors, supervisor 0.50, retries 0/10, destructive ops, no tool calls -> 0.50"
    );
    let e = StepEvidence {
        evaluator_confidence: Some(f64::NAN),
        ..all_good()
    };
    assert!(explain(&e, 1.0).contains("supervisor confidence ignored"));
    let e = StepEvidence {
        evaluator_confidence: Some(1.5),
        ..all_good()
    };
    assert!(explain(&e, 1.0).contains("supervisor 1.5 (counted as 1.00)"));
}

fn any_evidence() -> impl Strategy<Value = StepEvidence> {
    (
        (any::<u32>(), any::<u32>()),
        proptest::option::of(prop_oneof![
            any::<f64>(),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            0.0..=1.0f64,
        ]),
        (any::<u32>(), any::<u32>()),
        any::<bool>(),
        (any::<u32>(), any::<u32>()),
    )
        .prop_map(
            |(
                (checks_passed, checks_total),
                evaluator_confidence,
                (retries, max_retries),
                destructive,
                (tool_calls_ok, tool_calls_total),
            )| StepEvidence {
                checks_passed,
                checks_total,
                evaluator_confidence,
                retries,
                max_retries,
                destructive,
                tool_calls_ok,
                tool_calls_total,
            },
        )
}

proptest! {
    #[test]
    fn the_score_is_always_within_zero_and_one(e in any_evidence()) {
        let s = score(&e);
        prop_assert!((0.0..=1.0).contains(&s), "{s} for {e:?}");
    }

    #[test]
    fn destructive_work_never_raises_the_score(e in any_evidence()) {
        let safe = StepEvidence { destructive: false, ..e };
        let risky = StepEvidence { destructive: true, ..e };
        prop_assert!(score(&risky) <= score(&safe));
    }

    #[test]
    fn always_gated_work_never_proceeds_on_its_own(
        s in 0.0..=1.0f64,
        threshold in 0.0..=1.0f64,
        ms in any::<i64>(),
    ) {
        for mode in [
            ApprovalMode::Auto,
            ApprovalMode::Manual,
            ApprovalMode::ConfidenceThreshold { threshold },
        ] {
            let action = step_action(&mode, s, true, ms);
            prop_assert!(
                matches!(action, StepAction::HardStop | StepAction::AbortStep),
                "{mode:?} {s}: {action:?}"
            );
        }
    }
}

//! Confidence per step, and what the task's approval mode makes of it.
//!
//! The score is the design document's scorer ("Human-in-the-Loop"), ported
//! term for term: a weighted average of the terms that apply, so a term the
//! engine knows nothing about (no sensors, no supervisor confidence) is left
//! out instead of counting as a failure. The weights live in [`WEIGHTS`] and
//! nowhere else:
//!
//! | term                        | weight | counts when                              |
//! |-----------------------------|--------|------------------------------------------|
//! | verification (sensors pass) | 0.3    | the workspace has sensors (tier 1)       |
//! | evaluator confidence        | 0.3    | the supervisor reported one (tier 2)     |
//! | no retries needed           | 0.2    | always: 1 - min(retries / max, 1)        |
//! | not destructive             | 0.1    | always                                   |
//! | tool calls succeeded        | 0.1    | always (full marks with no tool calls)   |
//!
//! The bands ([`BANDS`]): >= 0.8 proceed and log; [0.5, 0.8) a step review
//! that proceeds on its own after a delay unless a human intervenes;
//! [0.2, 0.5) a hard stop for approval; < 0.2 the step is aborted with
//! diagnostics and waits for the human. Always-gated (destructive) work never
//! proceeds on its own, whatever its score.

use serde::{Deserialize, Serialize};

/// The weight of each term of the score (see the module table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Share of the sensors (tests, lint, ...) that passed: objective evidence.
    pub verification: f64,
    /// The supervisor's own confidence: as heavy as the sensors, because it
    /// judges what sensors cannot (intent, scope).
    pub evaluator: f64,
    /// Needing retries means the agent struggled, even if it got there.
    pub no_retries: f64,
    /// Destructive work is riskier; it is also always gated on its own.
    pub not_destructive: f64,
    /// Failed tool calls are a weak signal (agents often probe and recover).
    pub tool_success: f64,
}

/// The design document's weights: the one place they are written down.
pub const WEIGHTS: Weights = Weights {
    verification: 0.3,
    evaluator: 0.3,
    no_retries: 0.2,
    not_destructive: 0.1,
    tool_success: 0.1,
};

/// The lower bounds of the bands (see [`Band`]). A score equal to a bound
/// belongs to the band above it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bands {
    /// At or above: proceed and log.
    pub high: f64,
    /// At or above (and below `high`): a step review that proceeds on its own.
    pub medium: f64,
    /// At or above (and below `medium`): hard stop. Below: abort the step.
    pub low: f64,
}

/// The design document's band bounds: the one place they are written down.
/// `high` is also the threshold `confidence_threshold` uses when none is given.
pub const BANDS: Bands = Bands {
    high: 0.8,
    medium: 0.5,
    low: 0.2,
};

/// How long a medium-confidence step waits for a human before it proceeds on
/// its own (the design document's 10 s; a workspace may configure another).
pub const DEFAULT_AUTO_PROCEED_MS: i64 = 10_000;

/// What is known about a finished step.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StepEvidence {
    pub checks_passed: u32,
    /// 0: the workspace has no sensors, and the verification term is left out.
    pub checks_total: u32,
    /// The supervisor's self-reported confidence (tier 2), when it gave one.
    /// Out-of-range values are clamped to [0, 1]; a non-number is ignored.
    pub evaluator_confidence: Option<f64>,
    pub retries: u32,
    /// 0: no retries allowed, so any retry costs the whole term.
    pub max_retries: u32,
    /// The step asked for always-gated (destructive) operations.
    pub destructive: bool,
    pub tool_calls_ok: u32,
    /// 0: the step made no tool calls, which counts as full marks.
    pub tool_calls_total: u32,
}

/// `part / whole` in [0, 1]; an empty whole counts as all good.
fn ratio(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        1.0
    } else {
        f64::from(part.min(whole)) / f64::from(whole)
    }
}

/// The evaluator confidence that counts: clamped, or None when absent or not
/// a number (a broken evaluator must not poison the score).
fn evaluator_term(e: &StepEvidence) -> Option<f64> {
    e.evaluator_confidence
        .filter(|c| !c.is_nan())
        .map(|c| c.clamp(0.0, 1.0))
}

/// The retry penalty in [0, 1].
fn retry_penalty(e: &StepEvidence) -> f64 {
    if e.max_retries == 0 {
        if e.retries == 0 {
            0.0
        } else {
            1.0
        }
    } else {
        (f64::from(e.retries) / f64::from(e.max_retries)).min(1.0)
    }
}

/// The step's confidence, always within [0, 1].
pub fn score(e: &StepEvidence) -> f64 {
    let w = WEIGHTS;
    let mut score = 0.0;
    let mut total = 0.0;
    if e.checks_total > 0 {
        score += ratio(e.checks_passed, e.checks_total) * w.verification;
        total += w.verification;
    }
    if let Some(c) = evaluator_term(e) {
        score += c * w.evaluator;
        total += w.evaluator;
    }
    score += (1.0 - retry_penalty(e)) * w.no_retries;
    total += w.no_retries;
    if !e.destructive {
        score += w.not_destructive;
    }
    total += w.not_destructive;
    score += ratio(e.tool_calls_ok, e.tool_calls_total) * w.tool_success;
    total += w.tool_success;
    // `total` is at least the three terms that always count; the guard only
    // keeps the result defined should the weights ever be zeroed.
    if total > 0.0 {
        (score / total).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Where a score falls (bounds in [`BANDS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    /// >= 0.8: proceed and log.
    High,
    /// [0.5, 0.8): a step review that proceeds on its own unless stopped.
    Medium,
    /// [0.2, 0.5): hard stop for approval.
    Low,
    /// < 0.2: abort the step, show diagnostics, wait.
    Zero,
}

/// The band of `score`. A score that is not a number falls in [`Band::Zero`]:
/// when in doubt, stop.
pub fn band(score: f64) -> Band {
    if score >= BANDS.high {
        Band::High
    } else if score >= BANDS.medium {
        Band::Medium
    } else if score >= BANDS.low {
        Band::Low
    } else {
        Band::Zero
    }
}

/// When a finished step may proceed without a human (per task).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Proceed at high confidence; gate destructive work and low confidence.
    #[default]
    Auto,
    /// Every step waits for a human.
    Manual,
    /// Proceed at or above the threshold (and never destructive work).
    ConfidenceThreshold { threshold: f64 },
}

impl ApprovalMode {
    /// The names [`ApprovalMode::parse`] accepts, as serde writes them.
    pub const NAMES: [&'static str; 3] = ["auto", "manual", "confidence_threshold"];

    /// A threshold must be a number within [0, 1] (a score never leaves
    /// it); the error names the field `threshold`.
    pub fn validate(&self) -> Result<(), crate::FieldError> {
        match self {
            ApprovalMode::Auto | ApprovalMode::Manual => Ok(()),
            ApprovalMode::ConfidenceThreshold { threshold } => {
                if (0.0..=1.0).contains(threshold) {
                    Ok(())
                } else {
                    Err(crate::FieldError::new(
                        "threshold",
                        format!(
                            "the confidence threshold {threshold} must be within [0, 1]: give a number from 0 to 1, e.g. 0.8"
                        ),
                    ))
                }
            }
        }
    }

    /// From a mode name (`auto`, `manual`, `confidence_threshold`, any case)
    /// and an optional threshold. `confidence_threshold` without a threshold
    /// uses the high band's bound, 0.8; a threshold with another mode is an
    /// error rather than silently ignored.
    pub fn parse(mode: &str, threshold: Option<f64>) -> Result<Self, String> {
        let name = mode.trim().to_ascii_lowercase();
        let m = match (name.as_str(), threshold) {
            ("auto", None) => ApprovalMode::Auto,
            ("manual", None) => ApprovalMode::Manual,
            ("confidence_threshold", t) => ApprovalMode::ConfidenceThreshold {
                threshold: t.unwrap_or(BANDS.high),
            },
            ("auto" | "manual", Some(_)) => {
                return Err(format!(
                    "a threshold only applies to the confidence_threshold mode, not '{name}': drop the threshold or use confidence_threshold"
                ))
            }
            (_, _) => {
                return Err(format!(
                    "unknown approval mode '{}': use {}",
                    mode.trim(),
                    Self::NAMES.join(", ")
                ))
            }
        };
        m.validate().map_err(|e| e.message)?;
        Ok(m)
    }
}

/// What to do with a finished step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum StepAction {
    /// Go on, and log the score.
    Proceed,
    /// A step review that chooses "proceed" after this long unless a human acts.
    ReviewWithTimeout { auto_proceed_after_ms: i64 },
    /// A step review that waits for a human.
    HardStop,
    /// Too little confidence to go on: diagnostics, and the human decides.
    AbortStep,
}

/// What the task's approval mode makes of a step's score. `always_gated`: the
/// step involves operations that always need a human (destructive ones), so
/// it never proceeds on its own. A negative `auto_proceed_after_ms` counts as 0.
pub fn step_action(
    mode: &ApprovalMode,
    score: f64,
    always_gated: bool,
    auto_proceed_after_ms: i64,
) -> StepAction {
    let band = band(score);
    // Below the lowest band nothing goes on, whatever the mode: the step is
    // more likely wrong than right.
    if band == Band::Zero {
        return StepAction::AbortStep;
    }
    match mode {
        ApprovalMode::Manual => StepAction::HardStop,
        ApprovalMode::Auto => {
            if always_gated {
                return StepAction::HardStop;
            }
            match band {
                Band::High => StepAction::Proceed,
                Band::Medium => StepAction::ReviewWithTimeout {
                    auto_proceed_after_ms: auto_proceed_after_ms.max(0),
                },
                Band::Low | Band::Zero => StepAction::HardStop,
            }
        }
        ApprovalMode::ConfidenceThreshold { threshold } => {
            // A threshold that is not a number never lets a step through.
            if score >= *threshold && !always_gated {
                StepAction::Proceed
            } else {
                StepAction::HardStop
            }
        }
    }
}

/// One line that says where the score came from, term by term, e.g.
/// `checks 3/3, retries 1/10, no destructive ops, tool calls 5/5 ok -> 0.98`.
pub fn explain(e: &StepEvidence, score: f64) -> String {
    let mut parts = Vec::new();
    if e.checks_total > 0 {
        parts.push(format!("checks {}/{}", e.checks_passed, e.checks_total));
    } else {
        parts.push("no sensors".to_owned());
    }
    match (e.evaluator_confidence, evaluator_term(e)) {
        (None, _) => {}
        (Some(_), None) => parts.push("supervisor confidence ignored (not a number)".to_owned()),
        (Some(raw), Some(c)) if raw == c => parts.push(format!("supervisor {c:.2}")),
        (Some(raw), Some(c)) => parts.push(format!("supervisor {raw} (counted as {c:.2})")),
    }
    parts.push(format!("retries {}/{}", e.retries, e.max_retries));
    parts.push(if e.destructive {
        "destructive ops".to_owned()
    } else {
        "no destructive ops".to_owned()
    });
    if e.tool_calls_total > 0 {
        parts.push(format!(
            "tool calls {}/{} ok",
            e.tool_calls_ok, e.tool_calls_total
        ));
    } else {
        parts.push("no tool calls".to_owned());
    }
    format!("{} -> {score:.2}", parts.join(", "))
}

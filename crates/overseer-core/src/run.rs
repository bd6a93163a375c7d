//! The run state machine.
//!
//! A run is one attempt at a task by one agent in one worktree. Every change of
//! its state goes through [`apply`], a pure function that either returns the
//! [`Transition`] to persist or a typed [`InvalidTransition`]. The store then
//! persists the transition as a compare-and-set on the old state, so two writers
//! racing on the same run cannot both win.
//!
//! Matches here are exhaustive on purpose (no wildcard arms): adding a state or an
//! event must force a decision for every pair.

use crate::Millis;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a run was released. Released is terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseReason {
    Merged,
    HumanRejected,
    AbortedByUser,
    PlanRejected,
    Failed,
    Interrupted,
    SupervisorRejected,
    /// An external session (hooks, MCP) ended on its own.
    Ended,
}

impl ReleaseReason {
    pub const ALL: [ReleaseReason; 8] = [
        ReleaseReason::Merged,
        ReleaseReason::HumanRejected,
        ReleaseReason::AbortedByUser,
        ReleaseReason::PlanRejected,
        ReleaseReason::Failed,
        ReleaseReason::Interrupted,
        ReleaseReason::SupervisorRejected,
        ReleaseReason::Ended,
    ];

    /// The stable snake_case name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseReason::Merged => "merged",
            ReleaseReason::HumanRejected => "human_rejected",
            ReleaseReason::AbortedByUser => "aborted_by_user",
            ReleaseReason::PlanRejected => "plan_rejected",
            ReleaseReason::Failed => "failed",
            ReleaseReason::Interrupted => "interrupted",
            ReleaseReason::SupervisorRejected => "supervisor_rejected",
            ReleaseReason::Ended => "ended",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    Queued,
    Claimed,
    Running,
    RetryQueued,
    PendingReview,
    Released { reason: ReleaseReason },
}

impl RunState {
    /// Every state, released once per reason: the rows of the transition table.
    pub fn all() -> Vec<RunState> {
        let mut v = vec![
            RunState::Queued,
            RunState::Claimed,
            RunState::Running,
            RunState::RetryQueued,
            RunState::PendingReview,
        ];
        v.extend(ReleaseReason::ALL.map(|reason| RunState::Released { reason }));
        v
    }

    /// The state as stored in the database: `pending_review`, `released:merged`.
    pub fn to_db(self) -> String {
        match self {
            RunState::Queued => "queued".into(),
            RunState::Claimed => "claimed".into(),
            RunState::Running => "running".into(),
            RunState::RetryQueued => "retry_queued".into(),
            RunState::PendingReview => "pending_review".into(),
            RunState::Released { reason } => format!("released:{}", reason.as_str()),
        }
    }

    /// Parses what [`RunState::to_db`] wrote; `None` for anything else.
    pub fn from_db(s: &str) -> Option<Self> {
        match s {
            "queued" => Some(RunState::Queued),
            "claimed" => Some(RunState::Claimed),
            "running" => Some(RunState::Running),
            "retry_queued" => Some(RunState::RetryQueued),
            "pending_review" => Some(RunState::PendingReview),
            other => other
                .strip_prefix("released:")
                .and_then(ReleaseReason::parse)
                .map(|reason| RunState::Released { reason }),
        }
    }

    pub fn is_released(self) -> bool {
        matches!(self, RunState::Released { .. })
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_db())
    }
}

/// Something that happened to a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// The engine picked a queued run for an agent.
    Claim,
    /// The agent process started (first attempt or a retry).
    Start,
    /// A step failed and will be retried.
    QueueRetry,
    /// The agent ended its work. With auto-advance on (the user's rule for the
    /// stage) the run merges without review; otherwise it waits for review.
    Finish { auto_advance: bool },
    /// A human approved the pending review: the run's branch is merged.
    Approve,
    /// A human rejected the pending review.
    Reject,
    /// A human aborted the run.
    Abort,
    /// A human rejected the plan.
    RejectPlan,
    /// The agent is gone (engine crash, agent killed outside Overseer).
    Interrupt,
    /// The supervisor, within its authority, rejected the run.
    SupervisorReject,
    /// The run failed and will not be retried.
    Fail,
    /// An external session ended (its agent said so).
    End,
}

impl RunEvent {
    /// One of each event: the columns of the transition table.
    pub fn all() -> Vec<RunEvent> {
        vec![
            RunEvent::Claim,
            RunEvent::Start,
            RunEvent::QueueRetry,
            RunEvent::Finish {
                auto_advance: false,
            },
            RunEvent::Finish { auto_advance: true },
            RunEvent::Approve,
            RunEvent::Reject,
            RunEvent::Abort,
            RunEvent::RejectPlan,
            RunEvent::Interrupt,
            RunEvent::SupervisorReject,
            RunEvent::Fail,
            RunEvent::End,
        ]
    }

    /// A short stable name, used in audit records and error messages.
    pub fn name(&self) -> &'static str {
        match self {
            RunEvent::Claim => "claim",
            RunEvent::Start => "start",
            RunEvent::QueueRetry => "queue_retry",
            RunEvent::Finish {
                auto_advance: false,
            } => "finish",
            RunEvent::Finish { auto_advance: true } => "finish_auto_advance",
            RunEvent::Approve => "approve",
            RunEvent::Reject => "reject",
            RunEvent::Abort => "abort",
            RunEvent::RejectPlan => "reject_plan",
            RunEvent::Interrupt => "interrupt",
            RunEvent::SupervisorReject => "supervisor_reject",
            RunEvent::Fail => "fail",
            RunEvent::End => "end",
        }
    }
}

/// A legal change of state, ready to be persisted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub from: RunState,
    pub to: RunState,
    pub event: RunEvent,
    pub at: Millis,
}

/// The event is not allowed in the run's current state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {} a run that is {}", .event.name(), .state)]
pub struct InvalidTransition {
    pub state: RunState,
    pub event: RunEvent,
}

/// Decides what `event` does to a run in `state` at time `now`.
pub fn apply(
    state: RunState,
    event: RunEvent,
    now: Millis,
) -> Result<Transition, InvalidTransition> {
    use RunState as S;
    let released = |reason| S::Released { reason };
    let next: Option<RunState> = match &event {
        RunEvent::Claim => match state {
            S::Queued => Some(S::Claimed),
            S::Claimed | S::Running | S::RetryQueued | S::PendingReview | S::Released { .. } => {
                None
            }
        },
        RunEvent::Start => match state {
            S::Claimed | S::RetryQueued => Some(S::Running),
            S::Queued | S::Running | S::PendingReview | S::Released { .. } => None,
        },
        RunEvent::QueueRetry => match state {
            S::Running => Some(S::RetryQueued),
            S::Queued | S::Claimed | S::RetryQueued | S::PendingReview | S::Released { .. } => None,
        },
        RunEvent::Finish { auto_advance } => match state {
            S::Running if *auto_advance => Some(released(ReleaseReason::Merged)),
            S::Running => Some(S::PendingReview),
            S::Queued | S::Claimed | S::RetryQueued | S::PendingReview | S::Released { .. } => None,
        },
        RunEvent::Approve => match state {
            S::PendingReview => Some(released(ReleaseReason::Merged)),
            S::Queued | S::Claimed | S::Running | S::RetryQueued | S::Released { .. } => None,
        },
        RunEvent::Reject => match state {
            S::PendingReview => Some(released(ReleaseReason::HumanRejected)),
            S::Queued | S::Claimed | S::Running | S::RetryQueued | S::Released { .. } => None,
        },
        RunEvent::Abort => match state {
            S::Queued | S::Claimed | S::Running | S::RetryQueued | S::PendingReview => {
                Some(released(ReleaseReason::AbortedByUser))
            }
            S::Released { .. } => None,
        },
        RunEvent::RejectPlan => match state {
            S::Running => Some(released(ReleaseReason::PlanRejected)),
            S::Queued | S::Claimed | S::RetryQueued | S::PendingReview | S::Released { .. } => None,
        },
        RunEvent::Interrupt => match state {
            S::Claimed | S::Running | S::RetryQueued => Some(released(ReleaseReason::Interrupted)),
            S::Queued | S::PendingReview | S::Released { .. } => None,
        },
        RunEvent::SupervisorReject => match state {
            S::Running | S::PendingReview => Some(released(ReleaseReason::SupervisorRejected)),
            S::Queued | S::Claimed | S::RetryQueued | S::Released { .. } => None,
        },
        RunEvent::Fail => match state {
            S::Claimed | S::Running | S::RetryQueued => Some(released(ReleaseReason::Failed)),
            S::Queued | S::PendingReview | S::Released { .. } => None,
        },
        RunEvent::End => match state {
            S::Running => Some(released(ReleaseReason::Ended)),
            S::Queued | S::Claimed | S::RetryQueued | S::PendingReview | S::Released { .. } => None,
        },
    };
    match next {
        Some(to) => Ok(Transition {
            from: state,
            to,
            event,
            at: now,
        }),
        None => Err(InvalidTransition { state, event }),
    }
}

/// Unattended retries: a step that fails is tried again by itself, after a
/// growing wait, instead of waiting for a human's "retry" (off unless a
/// policy says so). Never more than [`RetryPolicy::MAX_ATTEMPTS`] retries of
/// one step; after them, the deviation goes to the human as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RetryPolicy {
    /// Retries of one step, 1 to 10.
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles for each next one (at
    /// most an hour).
    #[serde(default = "default_backoff")]
    pub backoff_seconds: u64,
}

fn default_backoff() -> u64 {
    5
}

impl RetryPolicy {
    /// Retries of one step are capped here, whatever the policy says.
    pub const MAX_ATTEMPTS: u32 = 10;
    const MAX_WAIT_MS: u64 = 3_600_000;

    /// The error names the field `max_attempts`.
    pub fn validate(&self) -> Result<(), crate::FieldError> {
        if self.max_attempts == 0 || self.max_attempts > Self::MAX_ATTEMPTS {
            return Err(crate::FieldError::new(
                "max_attempts",
                format!(
                    "retry.max_attempts must be 1 to {} (it is {})",
                    Self::MAX_ATTEMPTS,
                    self.max_attempts
                ),
            ));
        }
        Ok(())
    }

    /// How long to wait before retry number `done + 1` of a step that was
    /// retried `done` times already; None: no more unattended retries.
    pub fn wait_before_retry(&self, done: u32) -> Option<u64> {
        if done >= self.max_attempts.min(Self::MAX_ATTEMPTS) {
            return None;
        }
        let base = self.backoff_seconds.saturating_mul(1000);
        Some(
            base.saturating_mul(1u64 << done.min(20))
                .min(Self::MAX_WAIT_MS),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Renders the whole state x event table, one line per pair.
    fn table() -> String {
        let mut out = String::new();
        for s in RunState::all() {
            for e in RunEvent::all() {
                let cell = match apply(s, e.clone(), 0) {
                    Ok(t) => t.to.to_db(),
                    Err(_) => "-".to_owned(),
                };
                out.push_str(&format!("{:<32} {:<20} {}\n", s.to_db(), e.name(), cell));
            }
        }
        out
    }

    /// The committed snapshot is the reviewed specification of the state machine.
    /// To change it on purpose: `UPDATE_SNAPSHOTS=1 cargo test -p overseer-core`.
    #[test]
    fn every_state_event_pair_matches_the_reviewed_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/transitions.snap");
        let actual = table();
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(path, &actual).expect("write snapshot");
        }
        let expected = std::fs::read_to_string(path).expect("snapshot file exists");
        assert_eq!(
            actual, expected,
            "transition table changed; review and update"
        );
        assert_eq!(
            actual.lines().count(),
            RunState::all().len() * RunEvent::all().len()
        );
    }

    #[test]
    fn unattended_retries_back_off_and_stop_at_the_cap() {
        let p = RetryPolicy {
            max_attempts: 3,
            backoff_seconds: 2,
        };
        assert_eq!(p.wait_before_retry(0), Some(2_000));
        assert_eq!(p.wait_before_retry(1), Some(4_000));
        assert_eq!(p.wait_before_retry(2), Some(8_000));
        assert_eq!(p.wait_before_retry(3), None, "three retries, then a human");
        let greedy = RetryPolicy {
            max_attempts: 50,
            backoff_seconds: 600,
        };
        assert_eq!(
            greedy.validate().map_err(|e| e.field),
            Err("max_attempts".into())
        );
        assert_eq!(greedy.wait_before_retry(10), None, "never past ten");
        assert_eq!(
            greedy.wait_before_retry(9),
            Some(3_600_000),
            "an hour at most"
        );
    }

    #[test]
    fn state_round_trips_through_its_database_name() {
        for s in RunState::all() {
            assert_eq!(RunState::from_db(&s.to_db()), Some(s));
        }
        assert_eq!(RunState::from_db("released:bogus"), None);
        assert_eq!(RunState::from_db("Running"), None);
    }

    #[test]
    fn state_serializes_as_tagged_json() {
        let s = RunState::Released {
            reason: ReleaseReason::HumanRejected,
        };
        assert_eq!(
            serde_json::to_string(&s).expect("json"),
            r#"{"state":"released","reason":"human_rejected"}"#
        );
        assert_eq!(
            serde_json::to_string(&RunState::PendingReview).expect("json"),
            r#"{"state":"pending_review"}"#
        );
    }

    #[test]
    fn invalid_transition_says_what_and_where() {
        let err = apply(RunState::Queued, RunEvent::Approve, 5).expect_err("invalid");
        assert_eq!(err.to_string(), "cannot approve a run that is queued");
    }

    #[test]
    fn transition_carries_the_time_it_was_given() {
        let t = apply(RunState::Queued, RunEvent::Claim, 1234).expect("valid");
        assert_eq!(t.at, 1234);
        assert_eq!(t.from, RunState::Queued);
        assert_eq!(t.to, RunState::Claimed);
    }

    fn any_event(auto_advance_allowed: bool) -> impl Strategy<Value = RunEvent> {
        let events: Vec<RunEvent> = RunEvent::all()
            .into_iter()
            .filter(|e| auto_advance_allowed || *e != RunEvent::Finish { auto_advance: true })
            .collect();
        proptest::sample::select(events)
    }

    proptest! {
        /// Released is terminal: once a run is released no event moves it again.
        #[test]
        fn no_sequence_of_events_leaves_released(events in proptest::collection::vec(any_event(true), 0..60)) {
            let mut state = RunState::Queued;
            let mut released_at: Option<RunState> = None;
            for e in events {
                match apply(state, e, 0) {
                    Ok(t) => {
                        prop_assert!(released_at.is_none(), "left {:?} via {:?}", state, t.event);
                        prop_assert_eq!(t.from, state);
                        state = t.to;
                    }
                    Err(err) => prop_assert_eq!(err.state, state),
                }
                if state.is_released() {
                    released_at.get_or_insert(state);
                    prop_assert_eq!(Some(state), released_at);
                }
            }
        }

        /// With auto-advance off, nothing reaches `merged` without passing
        /// pending_review, and pending_review is only entered from running.
        #[test]
        fn merge_never_skips_pending_review_without_auto_advance(events in proptest::collection::vec(any_event(false), 0..60)) {
            let mut state = RunState::Queued;
            let mut was_reviewed = false;
            for e in events {
                if let Ok(t) = apply(state, e, 0) {
                    if t.to == RunState::PendingReview {
                        prop_assert_eq!(t.from, RunState::Running);
                        was_reviewed = true;
                    }
                    if t.to == (RunState::Released { reason: ReleaseReason::Merged }) {
                        prop_assert_eq!(t.from, RunState::PendingReview);
                        prop_assert!(was_reviewed);
                    }
                    state = t.to;
                }
            }
        }
    }
}

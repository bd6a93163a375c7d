//! Caps on what one run may ask of the engine and of the user, so a run
//! cannot flood either: pending asks (gates its agent opened), messages,
//! notices, calls on its socket (a token bucket per minute) and
//! connections to its socket held at once.
//!
//! Past any cap the run is **paused**: one signed `security_event`
//! (`flood`), one `security` entry on its timeline, and one blocking gate
//! (a deviation, cause `flood`: Resume or Stop the run) whose notification
//! is the one the user gets (a security event: it cannot be muted). The
//! agent's current turn is cancelled (unless it waits on its plan gate) and
//! its pending questions and tool calls are withdrawn (declined). Until the user decides, every ask,
//! message, notice and new connection of the run is refused with a
//! `forbidden` error that says so; a refusal while paused is counted, never
//! recorded or notified again. Resume lifts the pause (the buckets start
//! full again); Stop aborts the run as the user.
//!
//! The counts are in memory (a restart starts them afresh); the pending
//! asks are counted in the database (the pending gates of the run, an
//! indexed count bounded by the cap itself).

mod pause;

use overseer_core::activity::{SecurityEntry, SecurityEvent};
use overseer_core::{
    Activity, Actor, ApiError, DeviationCause, DeviationChoice, DeviationGate, ErrorCode, GateBody,
    GateId, GateKind, GateOption, RunId,
};
use overseer_store::GateSpec;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The caps of one run. The defaults are far above what a working agent
/// asks (a few asks and messages a minute, one or two connections for its
/// MCP servers) and far below what hurts the engine or the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloodLimits {
    /// Gates the run's agent has open at once (questions, tool calls,
    /// plans, notices): the 21st is refused and pauses the run.
    pub pending_asks: usize,
    /// Calls on a launched run's socket per minute (a bucket of this many,
    /// refilled at this rate): asks, reports, message reads, pings alike.
    /// (An external session, the user's own agent in a terminal, asks on
    /// every tool call through its hooks: its other caps hold, not this.)
    pub asks_per_minute: u32,
    /// Messages the run's agent sends per minute.
    pub messages_per_minute: u32,
    /// Notices (notifications, turn ends) per minute.
    pub notices_per_minute: u32,
    /// Connections to the run's socket open at once (each waiting ask holds
    /// one).
    pub connections: usize,
}

impl Default for FloodLimits {
    fn default() -> Self {
        FloodLimits {
            pending_asks: 20,
            asks_per_minute: 120,
            messages_per_minute: 30,
            notices_per_minute: 30,
            connections: 32,
        }
    }
}

/// Which cap a run went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    PendingAsks,
    Asks,
    Messages,
    Notices,
    Connections,
}

impl Cap {
    fn as_str(self) -> &'static str {
        match self {
            Cap::PendingAsks => "pending_asks",
            Cap::Asks => "asks_per_minute",
            Cap::Messages => "messages_per_minute",
            Cap::Notices => "notices_per_minute",
            Cap::Connections => "connections",
        }
    }

    fn describe(self, l: &FloodLimits) -> String {
        match self {
            Cap::PendingAsks => format!("more than {} asks waiting at once", l.pending_asks),
            Cap::Asks => format!(
                "more than {} calls a minute on its socket",
                l.asks_per_minute
            ),
            Cap::Messages => format!("more than {} messages a minute", l.messages_per_minute),
            Cap::Notices => format!("more than {} notices a minute", l.notices_per_minute),
            Cap::Connections => format!(
                "more than {} connections to its socket at once",
                l.connections
            ),
        }
    }
}

/// A token bucket: `per_minute` tokens, refilled continuously.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(per_minute: u32, now: Instant) -> Bucket {
        Bucket {
            tokens: f64::from(per_minute),
            at: now,
        }
    }

    fn take(&mut self, per_minute: u32, now: Instant) -> bool {
        let cap = f64::from(per_minute);
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * cap / 60.0;
        self.tokens = (self.tokens + refill).min(cap);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What kind of use a run makes of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// A call on its socket.
    Call,
    Message,
    Notice,
}

#[derive(Debug, Default)]
struct RunFlood {
    calls: Option<Bucket>,
    messages: Option<Bucket>,
    notices: Option<Bucket>,
    connections: usize,
    paused: Option<Paused>,
    /// The pause cancelled the run's turn: its end is the pause's, not a
    /// failure, even when the user resumed before the turn ended.
    turn_cancelled: bool,
}

#[derive(Debug)]
struct Paused {
    cap: Cap,
    /// Uses refused since the pause.
    refused: u64,
    /// The gate that asks the user to resume or stop the run.
    gate: Option<GateId>,
}

/// Every run's counts. Cheap to check: one lock, no I/O.
#[derive(Default)]
pub(crate) struct Floods {
    limits: FloodLimits,
    runs: Mutex<HashMap<RunId, RunFlood>>,
    /// One gate opening at a time per run, so the pending count is exact.
    opening: Mutex<HashMap<RunId, Arc<Mutex<()>>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn refused(run: RunId, cap: Cap, limits: &FloodLimits) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "refused: run {run} is paused because it went past its cap ({}); \
             nothing more is taken from it until the user resumes it. Stop asking and end your turn",
            cap.describe(limits)
        ),
    )
}

impl Floods {
    pub(crate) fn limits(&self) -> &FloodLimits {
        &self.limits
    }

    /// Err when `run` is paused (counted as one more refusal).
    fn check_paused(&self, run: RunId) -> Result<(), ApiError> {
        let mut runs = lock(&self.runs);
        match runs.get_mut(&run).and_then(|f| f.paused.as_mut()) {
            Some(p) => {
                p.refused += 1;
                Err(refused(run, p.cap, &self.limits))
            }
            None => Ok(()),
        }
    }

    /// Takes one token of `what`: None when there was one, else the cap.
    fn take(&self, run: RunId, what: Use, now: Instant) -> Result<Option<Cap>, ApiError> {
        let l = self.limits;
        let mut runs = lock(&self.runs);
        let f = runs.entry(run).or_default();
        if let Some(p) = f.paused.as_mut() {
            p.refused += 1;
            return Err(refused(run, p.cap, &l));
        }
        let (bucket, per_minute, cap) = match what {
            Use::Call => (&mut f.calls, l.asks_per_minute, Cap::Asks),
            Use::Message => (&mut f.messages, l.messages_per_minute, Cap::Messages),
            Use::Notice => (&mut f.notices, l.notices_per_minute, Cap::Notices),
        };
        let b = bucket.get_or_insert_with(|| Bucket::full(per_minute, now));
        Ok((!b.take(per_minute, now)).then_some(cap))
    }

    /// Marks `run` paused; false when it already was (nothing to record).
    fn pause(&self, run: RunId, cap: Cap) -> bool {
        let mut runs = lock(&self.runs);
        let f = runs.entry(run).or_default();
        if let Some(p) = f.paused.as_mut() {
            p.refused += 1;
            return false;
        }
        f.paused = Some(Paused {
            cap,
            refused: 0,
            gate: None,
        });
        true
    }

    /// Lifts the pause that `gate` (None: any) asked about: the buckets
    /// start full again. Returns how many uses were refused while it
    /// lasted, or None when it was not paused by that gate (lifted already).
    fn resume(&self, run: RunId, gate: Option<GateId>) -> Option<u64> {
        let mut runs = lock(&self.runs);
        let f = runs.get_mut(&run)?;
        if gate.is_some() && f.paused.as_ref()?.gate != gate {
            return None;
        }
        let refused = f.paused.take()?.refused;
        f.calls = None;
        f.messages = None;
        f.notices = None;
        Some(refused)
    }

    /// Notes that the pause cancelled `run`'s turn (see [`Floods::take_turn_cancelled`]).
    pub(crate) fn note_turn_cancelled(&self, run: RunId) {
        if let Some(f) = lock(&self.runs).get_mut(&run) {
            f.turn_cancelled = true;
        }
    }

    /// Whether a pause cancelled `run`'s turn since this was last asked.
    pub(crate) fn take_turn_cancelled(&self, run: RunId) -> bool {
        lock(&self.runs)
            .get_mut(&run)
            .is_some_and(|f| std::mem::take(&mut f.turn_cancelled))
    }

    fn set_gate(&self, run: RunId, gate: GateId) {
        if let Some(p) = lock(&self.runs)
            .get_mut(&run)
            .and_then(|f| f.paused.as_mut())
        {
            p.gate = Some(gate);
        }
    }

    pub(crate) fn is_paused(&self, run: RunId) -> bool {
        lock(&self.runs)
            .get(&run)
            .is_some_and(|f| f.paused.is_some())
    }

    /// The gate a paused run waits on.
    pub(crate) fn paused_gate(&self, run: RunId) -> Option<GateId> {
        lock(&self.runs)
            .get(&run)
            .and_then(|f| f.paused.as_ref())
            .and_then(|p| p.gate)
    }

    fn opening_lock(&self, run: RunId) -> Arc<Mutex<()>> {
        lock(&self.opening).entry(run).or_default().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_allows_its_rate_and_refills_over_the_minute() {
        let t0 = Instant::now();
        let mut b = Bucket::full(30, t0);
        let allowed = (0..100).filter(|_| b.take(30, t0)).count();
        assert_eq!(allowed, 30, "a burst takes the whole bucket, no more");
        assert!(!b.take(30, t0 + Duration::from_secs(1)), "half a token");
        assert!(b.take(30, t0 + Duration::from_secs(2)), "one token in 2 s");
        let later = t0 + Duration::from_secs(600);
        let allowed = (0..100).filter(|_| b.take(30, later)).count();
        assert_eq!(allowed, 30, "never more than the bucket holds");
    }

    #[test]
    fn past_a_rate_the_run_is_paused_once_and_refused_until_resumed() {
        let floods = Floods::default();
        let run = RunId(7);
        let now = Instant::now();
        let per_minute = floods.limits().messages_per_minute as usize;
        for _ in 0..per_minute {
            assert_eq!(
                floods.take(run, Use::Message, now).expect("not paused"),
                None
            );
        }
        assert_eq!(
            floods.take(run, Use::Message, now).expect("not paused yet"),
            Some(Cap::Messages)
        );
        assert!(floods.pause(run, Cap::Messages), "the first time pauses");
        assert!(
            !floods.pause(run, Cap::Asks),
            "a paused run is not paused again"
        );
        let e = floods
            .take(run, Use::Call, now)
            .expect_err("refused while paused");
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(e.message.contains("paused"), "{}", e.message);
        assert!(
            floods.take(RunId(8), Use::Message, now).is_ok(),
            "other runs go on"
        );
        assert_eq!(
            floods.resume(run, None),
            Some(2),
            "two uses were refused meanwhile"
        );
        assert_eq!(floods.resume(run, None), None, "lifted once");
        assert_eq!(floods.take(run, Use::Message, now).expect("resumed"), None);
    }
}

//! The fleet dashboard's first screen: the rows a window shows first, in the
//! dashboard's default order, with the fleet's size and counts, so a window
//! on 10,000 runs paints its first rows without taking every row across IPC
//! first (the whole list follows, for filters and search).

use overseer_core::{RunState, RunView};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// How many runs are in each state, and how many need the user: the
/// dashboard's header counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct FleetCounts {
    pub queued: u32,
    pub claimed: u32,
    pub running: u32,
    pub retry_queued: u32,
    pub pending_review: u32,
    pub released: u32,
    pub needs_you: u32,
}

impl FleetCounts {
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a RunView>) -> Self {
        let mut c = FleetCounts::default();
        for r in runs {
            c.add(r.state, r.needs_you);
        }
        c
    }

    fn add(&mut self, state: RunState, needs_you: bool) {
        *match state {
            RunState::Queued => &mut self.queued,
            RunState::Claimed => &mut self.claimed,
            RunState::Running => &mut self.running,
            RunState::RetryQueued => &mut self.retry_queued,
            RunState::PendingReview => &mut self.pending_review,
            RunState::Released { .. } => &mut self.released,
        } += 1;
        if needs_you {
            self.needs_you += 1;
        }
    }
}

/// The first rows of the fleet in the dashboard's default ("needs-you
/// first") order, and how many runs there are in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunsHead {
    pub rows: Vec<RunView>,
    pub total: u32,
    pub counts: FleetCounts,
}

impl crate::Engine {
    /// The first `limit` rows of the dashboard's default order, with the
    /// fleet's size and counts: what a window paints first.
    /// The order comes from one scan of the ordering columns; only the
    /// rows returned are built.
    pub fn runs_head(&self, limit: usize) -> Result<RunsHead, overseer_core::ApiError> {
        let store = self.store();
        let mut keys = store.run_order_keys()?;
        let mut counts = FleetCounts::default();
        for k in &keys {
            counts.add(k.state, k.needs_you);
        }
        let total = u32::try_from(keys.len()).unwrap_or(u32::MAX);
        let by_rank = |a: &overseer_store::RunOrderKey, b: &overseer_store::RunOrderKey| {
            (a.attention_rank, a.id).cmp(&(b.attention_rank, b.id))
        };
        if limit < keys.len() {
            if limit > 0 {
                keys.select_nth_unstable_by(limit - 1, by_rank);
            }
            keys.truncate(limit);
        }
        let mut rows = keys
            .iter()
            .map(|k| store.run(k.id))
            .collect::<Result<Vec<_>, _>>()?;
        drop(store);
        // The rows themselves decide the order shown.
        rows.sort_by(attention);
        Ok(RunsHead {
            rows,
            total,
            counts,
        })
    }
}

/// The dashboard's default order: by each row's attention rank (core's
/// `attention_rank`, computed by the store for every row), ties by id.
pub fn attention(a: &RunView, b: &RunView) -> Ordering {
    (a.attention_rank, a.id).cmp(&(b.attention_rank, b.id))
}

/// The first `limit` of `runs` in attention order, with the counts of all.
pub fn head(mut runs: Vec<RunView>, limit: usize) -> RunsHead {
    let counts = FleetCounts::of(&runs);
    let total = u32::try_from(runs.len()).unwrap_or(u32::MAX);
    if limit < runs.len() {
        if limit > 0 {
            runs.select_nth_unstable_by(limit - 1, attention);
        }
        runs.truncate(limit);
    }
    runs.sort_by(attention);
    RunsHead {
        rows: runs,
        total,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_core::{ReleaseReason, RunOrigin};

    fn run(id: i64, state: RunState, since: i64, needs_you: bool) -> RunView {
        RunView {
            id: overseer_core::RunId(id),
            task_id: overseer_core::TaskId(id),
            task_title: format!("task {id}"),
            workspace: "w".into(),
            agent: "demo".into(),
            state,
            state_since: since,
            created_at: 0,
            needs_you,
            attention_rank: overseer_core::view::attention_rank(state, needs_you, since),
            release_note: None,
            pending_gate: None,
            current_step: None,
            sensors: None,
            last_gate: None,
            origin: RunOrigin::default(),
            session: None,
            actions: Default::default(),
            usage: None,
            max_cost: None,
            parent: None,
        }
    }

    #[test]
    fn the_head_is_the_first_rows_in_attention_order_with_counts_of_all() {
        let merged = RunState::Released {
            reason: ReleaseReason::Merged,
        };
        let runs = vec![
            run(1, merged, 50, false),
            run(2, RunState::Running, 10, true),
            run(3, RunState::PendingReview, 5, true),
            run(4, RunState::Running, 20, false),
            run(5, RunState::Running, 30, false),
            run(6, RunState::Queued, 99, false),
        ];
        let h = head(runs.clone(), 4);
        let ids: Vec<i64> = h.rows.iter().map(|r| r.id.0).collect();
        // needs-you by longest wait, then running newest change first.
        assert_eq!(ids, vec![3, 2, 5, 4]);
        assert_eq!(h.total, 6);
        assert_eq!(h.counts.running, 3);
        assert_eq!(h.counts.needs_you, 2);
        assert_eq!(h.counts.released, 1);
        let all = head(runs, 100);
        let ids: Vec<i64> = all.rows.iter().map(|r| r.id.0).collect();
        assert_eq!(ids, vec![3, 2, 5, 4, 6, 1]);
        assert!(head(Vec::new(), 0).rows.is_empty());
    }
}

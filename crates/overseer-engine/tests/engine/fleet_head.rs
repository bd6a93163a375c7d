//! The fleet's first screen (`Engine::runs_head`): the rows the window paints
//! before the whole list arrives must be exactly the first rows of the whole
//! list in the dashboard's default order, with the counts of the whole fleet.

use overseer_core::Actor;
use overseer_engine::fleet::{attention, FleetCounts};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use std::sync::Arc;

#[test]
fn the_head_is_the_whole_lists_first_rows_in_attention_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    let engine = Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine");
    // The unsettled demo: runs waiting on gates, on review, running, released.
    engine.seed_demo(&Actor::cli(), false).expect("seed");
    let mut all = engine.runs().expect("runs");
    all.sort_by(attention);
    assert!(all.iter().any(|r| r.needs_you) && all.iter().any(|r| !r.needs_you));
    for limit in [0, 1, 5, all.len(), all.len() + 10] {
        let head = engine.runs_head(limit).expect("head");
        let want: Vec<overseer_core::RunId> = all.iter().take(limit).map(|r| r.id).collect();
        let got: Vec<overseer_core::RunId> = head.rows.iter().map(|r| r.id).collect();
        assert_eq!(got, want, "limit {limit}");
        assert_eq!(head.rows, all[..want.len()].to_vec());
        assert_eq!(head.total as usize, all.len());
        assert_eq!(head.counts, FleetCounts::of(&all));
    }
}

/// The window sorts and counts by what the engine sends: every row carries
/// its attention rank (core's rule, computed once), the rank order is the
/// attention order, and the head's counts agree with the rows and with the
/// store's own "needs you" count (one SQL definition for all three).
#[test]
fn every_row_carries_its_attention_rank_and_the_counts_agree_with_the_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    let engine = Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine");
    engine.seed_demo(&Actor::cli(), false).expect("seed");
    let all = engine.runs().expect("runs");
    for r in &all {
        assert_eq!(
            r.attention_rank,
            overseer_core::view::attention_rank(r.state, r.needs_you, r.state_since),
            "run {}",
            r.id
        );
    }
    let mut by_rank = all.clone();
    by_rank.sort_by_key(|r| (r.attention_rank, r.id));
    // Runs that need the user come first, then the rest.
    let split = by_rank
        .iter()
        .position(|r| !r.needs_you)
        .expect("a run that does not need you");
    assert!(split > 0, "the demo has runs that need you");
    assert!(by_rank[split..].iter().all(|r| !r.needs_you));
    let head = engine.runs_head(all.len()).expect("head");
    assert_eq!(head.rows, by_rank);
    let needs = all.iter().filter(|r| r.needs_you).count();
    assert_eq!(head.counts.needs_you as usize, needs);
    assert_eq!(engine.needs_you_count().expect("count"), needs);
}

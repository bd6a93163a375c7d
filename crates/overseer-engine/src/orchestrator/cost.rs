//! What a run's agent reports it uses (ACP's `usage_update`): kept on the
//! run's row, checked against what can be true first.

use crate::Engine;
use overseer_core::usage::{accept_usage, RunCost, RunUsage};
use overseer_core::RunId;

/// One usage report from `run`'s agent: recorded on the run (its row is
/// pushed to every client) when it can follow the last one; otherwise
/// ignored with a log line (a negative or non-finite cost, a cumulative cost
/// that went down, more context used than there is).
pub(super) fn on_usage(
    engine: &Engine,
    run: RunId,
    used: u64,
    size: u64,
    cost: Option<(f64, String)>,
) {
    let report = RunUsage {
        used,
        size,
        cost: cost.map(|(amount, currency)| RunCost { amount, currency }),
    };
    let written = engine.write(|tx| {
        let previous = tx.run(run)?.usage;
        match accept_usage(previous.as_deref(), report) {
            Ok(usage) => tx.set_run_usage(run, &usage).map(|()| None),
            Err(why) => Ok(Some(why)),
        }
    });
    match written {
        Ok(None) => {}
        Ok(Some(why)) => {
            tracing::warn!(run = %run, "the agent's usage report was ignored: {why}");
        }
        Err(e) => tracing::warn!(run = %run, "the agent's usage report was not recorded: {e}"),
    }
}

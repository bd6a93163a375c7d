//! The user's gates a page at a time (`list_gates`): what the inbox and
//! `overseer gates list` read costs the page's size, never the number of
//! gates pending (issue 25, item 7: a run flooding the engine with asks
//! must not slow the user's list down).

use overseer_core::{ApiError, GateId, GateView};
use serde::{Deserialize, Serialize};

/// Gates in a page when the caller names no limit.
pub const GATE_PAGE: u32 = 200;
/// The most gates one page holds, whatever the caller asks.
pub const GATE_PAGE_MAX: u32 = 1000;

/// One page of gates in id order (oldest first), with how many there are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct GatePage {
    pub gates: Vec<GateView>,
    /// How many gates match in all (pending ones, or every gate).
    pub total: u32,
    /// How many match after this page: ask again with `after` set to
    /// [`GatePage::next_after`] for them.
    pub remaining: u32,
    /// The id to pass as `after` for the next page (null: this is the last).
    pub next_after: Option<GateId>,
}

impl crate::Records {
    /// At most `limit` (default [`GATE_PAGE`], at least 1, at most
    /// [`GATE_PAGE_MAX`]) gates after gate `after`, pending ones or all,
    /// oldest first.
    pub fn gates_page(
        &self,
        only_pending: bool,
        after: Option<GateId>,
        limit: Option<u32>,
    ) -> Result<GatePage, ApiError> {
        let limit = limit.unwrap_or(GATE_PAGE).clamp(1, GATE_PAGE_MAX);
        let page = self
            .store()
            .gates_page(only_pending, after, limit as usize)?;
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let next_after = if page.remaining > 0 {
            page.gates.last().map(|g| g.id).or(after)
        } else {
            None
        };
        Ok(GatePage {
            total: count(page.total),
            remaining: count(page.remaining),
            next_after,
            gates: page.gates,
        })
    }
}

//! What a run's agent reports it uses: its context window and what the
//! session cost so far (ACP's `usage_update`). Reported by the agent, so
//! untrusted: [`accept_usage`] keeps only a report that can be true.

use serde::{Deserialize, Serialize};

/// A run's latest usage, as its agent reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunUsage {
    /// Tokens in the agent's context now.
    pub used: u64,
    /// The context window's size in tokens.
    pub size: u64,
    /// The session's cumulative cost, when the agent reports one.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub cost: Option<RunCost>,
}

/// A cumulative cost: an amount in a currency (an ISO 4217 code such as
/// `USD`, or another unit such as `credits`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunCost {
    pub amount: f64,
    pub currency: String,
}

/// The longest currency name kept (ISO codes are three letters; units such
/// as `credits` a few more).
const MAX_CURRENCY: usize = 16;

/// Whether a new report can follow `previous`: `Err(why)` for one that
/// cannot be true (a cost that is negative, not a number, goes down, or
/// changes currency; more context used than there is; a currency that is
/// no name), which the caller ignores with a log line. A report without a
/// cost keeps the previous cost: the cost is cumulative, so a report that
/// leaves it out has not made it zero.
pub fn accept_usage(previous: Option<&RunUsage>, mut next: RunUsage) -> Result<RunUsage, String> {
    if next.size > 0 && next.used > next.size {
        return Err(format!(
            "context used {} of {} tokens cannot be",
            next.used, next.size
        ));
    }
    let before = previous.and_then(|p| p.cost.as_ref());
    match (&next.cost, before) {
        (None, _) => next.cost = before.cloned(),
        (Some(cost), _) if !cost.amount.is_finite() || cost.amount < 0.0 => {
            return Err(format!("a cost of {} cannot be", cost.amount));
        }
        (Some(cost), _)
            if cost.currency.is_empty()
                || cost.currency.len() > MAX_CURRENCY
                || !cost.currency.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            return Err(format!("{:?} is not a currency", cost.currency));
        }
        (Some(cost), Some(b)) if cost.currency != b.currency => {
            return Err(format!(
                "the cost changed currency from {} to {}",
                b.currency, cost.currency
            ));
        }
        (Some(cost), Some(b)) if cost.amount < b.amount => {
            return Err(format!(
                "the cumulative cost went down from {} to {} {}",
                b.amount, cost.amount, cost.currency
            ));
        }
        _ => {}
    }
    Ok(next)
}

/// Whether `usage`'s cost has reached `budget` (in the cost's currency).
pub fn over_budget(usage: &RunUsage, budget: f64) -> bool {
    usage.cost.as_ref().is_some_and(|c| c.amount >= budget)
}

/// What was spent between two readings of a cumulative cost: `now` less
/// `before` (nothing reported before counts as nothing spent). None when
/// nothing is reported now or the currency changed in between (no sum can
/// be told).
pub fn cost_since(before: Option<&RunCost>, now: Option<&RunCost>) -> Option<RunCost> {
    let now = now?;
    let spent_before = match before {
        None => 0.0,
        Some(b) if b.currency == now.currency => b.amount,
        Some(_) => return None,
    };
    Some(RunCost {
        amount: (now.amount - spent_before).max(0.0),
        currency: now.currency.clone(),
    })
}

/// A cost as people read it: `0.25 USD` (two decimals; four below one cent).
pub fn format_cost(cost: &RunCost) -> String {
    if cost.amount > 0.0 && cost.amount < 0.01 {
        format!("{:.4} {}", cost.amount, cost.currency)
    } else {
        format!("{:.2} {}", cost.amount, cost.currency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(amount: f64) -> RunCost {
        RunCost {
            amount,
            currency: "USD".into(),
        }
    }

    #[test]
    fn a_steps_cost_is_what_was_spent_since_it_started() {
        assert_eq!(
            cost_since(Some(&usd(0.25)), Some(&usd(0.75))),
            Some(usd(0.5))
        );
        assert_eq!(cost_since(None, Some(&usd(0.5))), Some(usd(0.5)));
        assert_eq!(cost_since(Some(&usd(0.5)), None), None);
        let credits = RunCost {
            amount: 3.0,
            currency: "credits".into(),
        };
        assert_eq!(cost_since(Some(&usd(0.5)), Some(&credits)), None);
    }

    fn usage(used: u64, cost: Option<(f64, &str)>) -> RunUsage {
        RunUsage {
            used,
            size: 1000,
            cost: cost.map(|(amount, c)| RunCost {
                amount,
                currency: c.to_owned(),
            }),
        }
    }

    #[test]
    fn a_sound_report_is_kept_and_a_missing_cost_keeps_the_last() {
        let first = accept_usage(None, usage(10, Some((0.5, "USD")))).expect("sound");
        assert_eq!(first, usage(10, Some((0.5, "USD"))));
        let next = accept_usage(Some(&first), usage(20, None)).expect("sound");
        assert_eq!(next, usage(20, Some((0.5, "USD"))));
    }

    #[test]
    fn absurd_reports_are_refused() {
        let first = usage(10, Some((0.5, "USD")));
        for bad in [
            usage(10, Some((-1.0, "USD"))),
            usage(10, Some((f64::NAN, "USD"))),
            usage(10, Some((f64::INFINITY, "USD"))),
            usage(10, Some((0.4, "USD"))),
            usage(10, Some((0.6, "EUR"))),
            usage(10, Some((0.6, ""))),
            usage(10, Some((0.6, "U S D"))),
            usage(2000, Some((0.6, "USD"))),
        ] {
            assert!(accept_usage(Some(&first), bad.clone()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_cost_reads_with_its_currency() {
        let c = |amount: f64| RunCost {
            amount,
            currency: "USD".into(),
        };
        assert_eq!(format_cost(&c(0.5)), "0.50 USD");
        assert_eq!(format_cost(&c(0.0042)), "0.0042 USD");
        assert_eq!(format_cost(&c(0.0)), "0.00 USD");
    }

    #[test]
    fn the_budget_is_reached_at_its_amount() {
        assert!(!over_budget(&usage(1, None), 1.0));
        assert!(!over_budget(&usage(1, Some((0.99, "USD"))), 1.0));
        assert!(over_budget(&usage(1, Some((1.0, "USD"))), 1.0));
    }
}

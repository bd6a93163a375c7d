//! `overseer inbox snooze GATE DURATION`: put an inbox item off. It leaves
//! the inbox and "needs you" until then, and comes back notified again.

use crate::{act, now_ms};
use overseer_core::GateView;
use overseer_engine::Paths;
use overseer_server::api::op;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum InboxCommand {
    /// Snooze an item: out of the inbox until DURATION from now (15m, 1h, 2h30m, 1d; 5 s to 30 days)
    Snooze {
        gate: overseer_core::GateId,
        /// How long: a number with s, m, h or d (`90s`, `15m`, `1h30m`, `2d`)
        duration: String,
    },
}

pub async fn inbox(paths: &Paths, cmd: InboxCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        InboxCommand::Snooze { gate, duration } => {
            let ms = parse_duration(&duration).map_err(anyhow::Error::msg)?;
            let until = now_ms().saturating_add(ms);
            let g: GateView = act(paths, op::SnoozeGate { gate, until }).await?;
            println!(
                "gate {gate} snoozed until {}: it comes back to the inbox then, notified again",
                overseer_core::device::utc_text(g.snoozed_until.unwrap_or(until))
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `15m`, `1h30m`, `2d`, `90s` as milliseconds, or what to type instead.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let bad = || {
        format!(
            "{text:?} is not a duration: give a number with s, m, h or d, e.g. 15m, 1h, 1h30m, 2d"
        )
    };
    let t = text.trim().to_ascii_lowercase();
    if t.is_empty() {
        return Err(bad());
    }
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: i64 = match c {
            's' => 1_000,
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => 86_400_000,
            _ => return Err(bad()),
        };
        let n: i64 = digits.parse().map_err(|_| bad())?;
        digits.clear();
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
    }
    if !digits.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_type_them() {
        assert_eq!(parse_duration("15m"), Ok(900_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration(" 2D "), Ok(172_800_000));
        assert_eq!(parse_duration("90s"), Ok(90_000));
        for bad in ["", "15", "m", "1x", "1.5h", "-1h"] {
            let e = parse_duration(bad).expect_err(bad);
            assert!(e.contains("e.g. 15m"), "{e}");
        }
    }
}

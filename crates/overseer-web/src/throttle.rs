//! Wrong pairing codes, per address: an address that typed
//! [`WRONG_PER_ADDRESS`] wrong codes is refused pairing (`429`, a right
//! code too) until [`WINDOW`] after its first; every other address pairs
//! as before. The engine's own bound stands behind it for many addresses:
//! the 20th wrong try while codes are outstanding burns them (a new code
//! works at once). An IPv6 address counts by its /64, which one holder
//! usually has whole. Kept in memory: a restart forgets it (the engine's
//! count is in its database).

use overseer_core::{ApiError, ErrorCode};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong codes one address may type in a [`WINDOW`].
pub const WRONG_PER_ADDRESS: u32 = 5;
/// How long an address's wrong codes count.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);
/// Addresses remembered at most (the oldest windows go first).
const REMEMBERED: usize = 4096;

/// The wrong codes of each address in its window.
#[derive(Default)]
pub struct PairingThrottle(Mutex<HashMap<IpAddr, (Instant, u32)>>);

/// What an address is counted by.
fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut bytes = v6.octets();
                bytes[8..].fill(0);
                IpAddr::V6(bytes.into())
            }
        },
        v4 => v4,
    }
}

impl PairingThrottle {
    /// Refused (`rate_limited`, saying until when) when `ip` has typed its
    /// share of wrong codes.
    pub fn check(&self, ip: IpAddr) -> Result<(), ApiError> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(&key(ip)) {
            Some((since, wrong)) if *wrong >= WRONG_PER_ADDRESS && since.elapsed() < WINDOW => {
                let left = WINDOW
                    .saturating_sub(since.elapsed())
                    .as_secs()
                    .div_ceil(60);
                Err(ApiError::new(
                    ErrorCode::RateLimited,
                    format!(
                        "{WRONG_PER_ADDRESS} wrong pairing codes came from this address: it may \
                         try again in about {left} minute(s), a right code too. Other devices \
                         can pair meanwhile"
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Counts a wrong code from `ip`.
    pub fn wrong(&self, ip: IpAddr) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= REMEMBERED {
            map.retain(|_, (since, _)| since.elapsed() < WINDOW);
            if map.len() >= REMEMBERED {
                if let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, (since, _))| *since)
                    .map(|(k, _)| *k)
                {
                    map.remove(&oldest);
                }
            }
        }
        let entry = map.entry(key(ip)).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }
}

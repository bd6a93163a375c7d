//! Wrong pairing codes, per address, and how pairing stays open to the
//! owner while wrong codes flood in.
//!
//! An address that typed [`WRONG_PER_ADDRESS`] wrong codes is "flooding"
//! until [`WINDOW`] after its first. Addresses are counted by [`key`]: an
//! IPv6 address by its /64 (which one holder usually has whole), and every
//! loopback address (all of 127.0.0.0/8, `::1`, their IPv4-mapped forms)
//! as one: "this machine". A local process can bind any 127.x.y.z, so
//! counting them apart would give it sixteen million addresses.
//!
//! What happens to a flooding address's tries (`routes::pair`):
//!
//! - **Off loopback** it is refused (`429`) before its code is looked up,
//!   a right code too: a remote guesser gets [`WRONG_PER_ADDRESS`] guesses
//!   per address per [`WINDOW`], whatever else holds. A device sharing the
//!   address (one NAT) waits out the window or pairs from elsewhere.
//! - **On loopback** the owner's browser is the same address as any local
//!   flood, so refusing the address would lock the owner out. There, the
//!   code is looked up first: a right code always pairs; only a wrong one
//!   gets the `429` (which tells the flood to stop, and costs nothing).
//!
//! Every wrong code the engine looks up (all of them on loopback, refused
//! with `429` or not) counts in the engine's bound, which stands behind
//! this one for many addresses and for loopback: the
//! [`BURN_AFTER`](overseer_store::devices::BURN_AFTER)th wrong code while
//! codes are outstanding burns those issued over a minute before
//! ([`BURN_GRACE`](overseer_store::devices::BURN_GRACE)); a newer code is
//! spared, so the owner, who issued it, pairs within that minute however
//! many wrong codes come (a code flood once burned every new code in half
//! a second). A guesser on loopback then gets, per code, what the engine
//! answers in that minute (each try is one read, no write) and at most
//! [`BURN_AFTER`](overseer_store::devices::BURN_AFTER) more: against 31^8
//! codes. `docs/browsers.md` has the numbers measured.
//!
//! Kept in memory: a restart forgets it (so does the engine's count).

use overseer_core::{ApiError, ErrorCode};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong codes one address may type in a [`WINDOW`].
pub const WRONG_PER_ADDRESS: u32 = 5;
/// How long an address's wrong codes count.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);
/// Addresses remembered at most (the oldest windows go first).
const REMEMBERED: usize = 4096;

/// The key every loopback address counts as.
const THIS_MACHINE: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The wrong codes of each address in its window.
#[derive(Default)]
pub struct PairingThrottle(Mutex<HashMap<IpAddr, (Instant, u32)>>);

/// What an address is counted by (for wrong codes, and for connections):
/// every loopback address is one, `127.0.0.1`; an IPv4-mapped IPv6
/// address is its IPv4 address; any other IPv6 address is its /64.
pub fn key(ip: IpAddr) -> IpAddr {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    if ip.is_loopback() {
        return THIS_MACHINE;
    }
    match ip {
        IpAddr::V6(v6) => {
            let mut bytes = v6.octets();
            bytes[8..].fill(0);
            IpAddr::V6(bytes.into())
        }
        v4 => v4,
    }
}

/// Whether `ip` is this machine (any loopback address).
pub fn is_loopback(ip: IpAddr) -> bool {
    key(ip) == THIS_MACHINE
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
                let text = if is_loopback(ip) {
                    format!(
                        "{WRONG_PER_ADDRESS} or more wrong pairing codes came from this machine \
                         (every local address counts as one) in the last {} minutes: wrong codes \
                         from it are refused for about {left} minute(s). A right code still \
                         pairs: type the code shown now",
                        WINDOW.as_secs() / 60
                    )
                } else {
                    format!(
                        "{WRONG_PER_ADDRESS} wrong pairing codes came from this address: it may \
                         try again in about {left} minute(s), a right code too. Other devices \
                         can pair meanwhile"
                    )
                };
                Err(ApiError::new(ErrorCode::RateLimited, text))
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
        entry.1 = entry.1.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn every_loopback_address_is_one() {
        for local in [
            "127.0.0.1",
            "127.0.0.2",
            "127.1.2.3",
            "127.255.255.254",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:127.9.8.7",
        ] {
            assert_eq!(key(ip(local)), ip("127.0.0.1"), "{local}");
            assert!(is_loopback(ip(local)), "{local}");
        }
    }

    #[test]
    fn other_addresses_keep_their_own_key() {
        assert_eq!(key(ip("192.168.1.7")), ip("192.168.1.7"));
        assert_ne!(key(ip("192.168.1.7")), key(ip("192.168.1.8")));
        assert_eq!(key(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
        // An IPv6 address counts by its /64.
        assert_eq!(
            key(ip("2001:db8:1:2:aaaa::1")),
            key(ip("2001:db8:1:2:bbbb::9"))
        );
        assert_ne!(key(ip("2001:db8:1:2::1")), key(ip("2001:db8:1:3::1")));
        assert_eq!(
            key(ip("2001:db8:1:2:aaaa::1")),
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 0, 0, 0, 0))
        );
        for remote in ["10.0.0.1", "2001:db8::1", "::ffff:10.0.0.1", "128.0.0.1"] {
            assert!(!is_loopback(ip(remote)), "{remote}");
        }
    }

    #[test]
    fn wrong_codes_from_rotating_loopback_addresses_count_as_one_address() {
        let throttle = PairingThrottle::default();
        for n in 1..WRONG_PER_ADDRESS {
            throttle.wrong(ip(&format!("127.0.{n}.{n}")));
            assert!(throttle.check(ip("127.0.0.1")).is_ok());
        }
        throttle.wrong(ip("::1"));
        let e = throttle.check(ip("127.200.0.1")).expect_err("flooding");
        assert_eq!(e.code, ErrorCode::RateLimited);
        assert!(
            e.message.contains("right code still pairs"),
            "{}",
            e.message
        );
        // Another address is not touched.
        assert!(throttle.check(ip("10.0.0.1")).is_ok());
        for _ in 0..WRONG_PER_ADDRESS {
            throttle.wrong(ip("10.0.0.1"));
        }
        let e = throttle.check(ip("10.0.0.1")).expect_err("flooding");
        assert!(e.message.contains("a right code too"), "{}", e.message);
    }
}

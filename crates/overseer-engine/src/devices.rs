//! Browsers and phones: pairing them, knowing them by their credential,
//! revoking them.
//!
//! The local owner (the window, the CLI) issues a one-time code for a
//! person's device ([`Records::pair_device`]); the browser exchanges it
//! for a credential ([`Records::redeem_pairing`]), which every later request
//! presents ([`Records::device_by_credential`]). Only the local owner may
//! pair or revoke: a request acting through a device is refused
//! `forbidden` here, whichever transport carried it. The store keeps codes
//! and credentials hashed, counts wrong codes towards a lockout, and signs
//! every pairing and revocation; each is pushed as
//! [`EngineEvent::DeviceChanged`](overseer_core::EngineEvent) once
//! committed (the web transport closes a revoked device's connections on
//! it).

use crate::Records;
use overseer_core::device::utc_text;
use overseer_core::{Actor, ApiError, DeviceId, ErrorCode, Millis};
use overseer_store::devices::{LOCKOUT_AFTER, LOCKOUT_FOR, PAIRING_TTL};
use overseer_store::{Redeemed, Refusal};
use serde::{Deserialize, Serialize};

pub use overseer_core::device::{DeviceRef, DeviceView};

/// A pairing code just issued, to show the person pairing a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Pairing {
    /// The one-time code as shown: `ABCD-EFGH` (typed in any case, with or
    /// without the dash).
    pub code: String,
    /// When the code stops working (5 minutes after it was issued).
    pub expires_at: Millis,
    /// Where the engine serves browsers, when it does: the page to open (a
    /// QR code of it) and type the code into.
    pub url: Option<String>,
}

/// A device just paired, and its credential: shown this once (the web
/// transport sets it as the device's cookie); the engine keeps only its
/// hash.
#[derive(Clone, PartialEq, Eq)]
pub struct Paired {
    pub device: DeviceView,
    pub credential: String,
}

impl std::fmt::Debug for Paired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Paired")
            .field("device", &self.device)
            .field("credential", &"(hidden)")
            .finish()
    }
}

/// Refuses anyone but the local owner (the window's `user:app`, the CLI's
/// `user:cli`): a paired device cannot pair more devices or revoke others.
pub(crate) fn owner_only(actor: &Actor, what: &str) -> Result<(), ApiError> {
    if actor.is_local_owner() {
        return Ok(());
    }
    let through = actor
        .device()
        .map_or_else(String::new, |d| format!(" through {d}"));
    Err(ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "only the owner at the engine's machine (its window or CLI) may {what}; \
             {actor}{through} may not: ask the owner"
        ),
    ))
}

/// "in about N minutes" from `now` to `until`.
fn minutes_until(now: Millis, until: Millis) -> String {
    let minutes = ((until - now).max(0) + 59_999) / 60_000;
    match minutes {
        0 | 1 => "in about a minute".to_owned(),
        n => format!("in about {n} minutes"),
    }
}

impl Records {
    /// Issues a one-time code that pairs a device named `device_name` for
    /// `person` (a short lowercase name such as `ana`; `app` and `cli` are
    /// the local owner's), good for 5 minutes. Only the local owner may.
    pub fn pair_device(
        &self,
        person: &str,
        device_name: &str,
        actor: &Actor,
    ) -> Result<Pairing, ApiError> {
        owner_only(actor, "pair a device")?;
        let now = self.clock.now();
        let issued = self.write(|tx| tx.issue_pairing_code(person, device_name, actor, now))?;
        Ok(Pairing {
            code: issued.code,
            expires_at: issued.expires_at,
            url: self.web_url(),
        })
    }

    /// [`Records::pair_device`] as the owner at the window (`user:app`).
    pub fn start_pairing(&self, person: &str, device_name: &str) -> Result<Pairing, ApiError> {
        self.pair_device(person, device_name, &Actor::app())
    }

    /// Exchanges a code for a device and its credential. A wrong, expired
    /// or used code is refused `unauthorized`; after 5 wrong codes in a row
    /// every code is refused `rate_limited` for 5 minutes, a right one too.
    pub fn redeem_pairing(&self, code: &str) -> Result<Paired, ApiError> {
        let now = self.clock.now();
        // A flood during the lockout is refused without a write.
        if let Some(until) = self.store().pairing_locked_until(now)? {
            return Err(locked_out(now, until));
        }
        match self.write(|tx| tx.redeem_pairing_code(code, now))? {
            Redeemed::Paired { device, credential } => Ok(Paired { device, credential }),
            Redeemed::Refused(why) => Err(refused(why, now)),
        }
    }

    /// The device a credential belongs to, unless it is unknown or revoked
    /// (`None`: refuse the request). Notes that it was seen (written at most
    /// once a minute).
    pub fn device_by_credential(&self, credential: &str) -> Result<Option<DeviceView>, ApiError> {
        let Some(mut device) = self.store().device_by_credential(credential)? else {
            return Ok(None);
        };
        if device.is_revoked() {
            return Ok(None);
        }
        let now = self.clock.now();
        let stale = device
            .last_seen_at
            .is_none_or(|seen| seen <= now - overseer_store::devices::SEEN_EVERY);
        if stale && self.write(|tx| tx.device_seen(device.id, now))? {
            device.last_seen_at = Some(now);
        }
        Ok(Some(device))
    }

    /// Every paired device, revoked ones too, oldest first.
    pub fn list_devices(&self) -> Result<Vec<DeviceView>, ApiError> {
        Ok(self.store().devices()?)
    }

    /// Revokes a device: refused from the moment this returns, and pushed as
    /// `DeviceChanged` (its open connections are closed). Only the local
    /// owner may.
    pub fn revoke_device_as(
        &self,
        device: DeviceId,
        actor: &Actor,
    ) -> Result<DeviceView, ApiError> {
        owner_only(actor, "revoke a device")?;
        let now = self.clock.now();
        Ok(self.write(|tx| tx.revoke_device(device, actor, now))?)
    }

    /// [`Records::revoke_device_as`] as the owner at the window (`user:app`).
    pub fn revoke_device(&self, device: DeviceId) -> Result<DeviceView, ApiError> {
        self.revoke_device_as(device, &Actor::app())
    }

    /// Where the web transport serves browsers (`None`: it does not): what
    /// pairings name as their URL.
    pub fn set_web_url(&self, url: Option<String>) {
        *self.web_url.lock().unwrap_or_else(|p| p.into_inner()) = url;
    }

    pub fn web_url(&self) -> Option<String> {
        self.web_url
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

fn locked_out(now: Millis, until: Millis) -> ApiError {
    ApiError::new(
        ErrorCode::RateLimited,
        format!(
            "pairing is locked after {LOCKOUT_AFTER} wrong codes in a row, until {} ({}): \
             every code is refused until then, a right one too. Wait, then type the code \
             again (or make a new one if it expired)",
            utc_text(until),
            minutes_until(now, until)
        ),
    )
}

fn refused(why: Refusal, now: Millis) -> ApiError {
    let (text, locked) = match why {
        Refusal::LockedOut { until } => return locked_out(now, until),
        Refusal::Wrong { locked_until } => (
            "that pairing code is wrong: check it (8 letters, shown as ABCD-EFGH) or make a \
             new one"
                .to_owned(),
            locked_until,
        ),
        Refusal::Expired { locked_until } => (
            format!(
                "that pairing code expired (a code works for {} minutes): make a new one",
                PAIRING_TTL / 60_000
            ),
            locked_until,
        ),
        Refusal::Used { locked_until } => (
            "that pairing code was used already (a code pairs one device): make a new one"
                .to_owned(),
            locked_until,
        ),
    };
    let tail = match locked {
        Some(until) => format!(
            ". That was {LOCKOUT_AFTER} wrong codes in a row: pairing is locked until {} ({}), \
             a right code too",
            utc_text(until),
            minutes_until(now, until)
        ),
        None => format!(
            " ({LOCKOUT_AFTER} wrong codes in a row lock pairing for {} minutes)",
            LOCKOUT_FOR / 60_000
        ),
    };
    ApiError::new(ErrorCode::Unauthorized, format!("{text}{tail}"))
}

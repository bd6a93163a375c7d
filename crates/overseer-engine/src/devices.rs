//! Browsers and phones: pairing them, knowing them by their credential,
//! revoking them.
//!
//! The local owner (the window, the CLI) issues a one-time code for a
//! person's device ([`Records::pair_device`]); the browser exchanges it
//! for a credential ([`Records::redeem_pairing`]), which every later request
//! presents ([`Records::device_by_credential`]). Only the local owner may
//! pair or revoke: a request acting through a device is refused
//! `forbidden` here, whichever transport carried it. The store keeps codes
//! (under a keyed hash) and credentials hashed; wrong tries are counted
//! here, in memory, and too many burn the outstanding codes older than a
//! minute (never locking pairing: a new code works at once), and the store signs
//! every pairing, revocation and burn; each is pushed as
//! [`EngineEvent::DeviceChanged`](overseer_core::EngineEvent) once
//! committed (the web transport closes a revoked device's connections on
//! it).

use crate::engine::WrongTries;
use crate::Records;
use overseer_core::{Actor, ApiError, DeviceId, ErrorCode, Millis};
use overseer_store::devices::{BURN_AFTER, BURN_GRACE, PAIRING_TTL};
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

/// A device just paired, and its credential: shown this once (two halves
/// joined by a `.`: the web transport sets the first as the device's cookie
/// and gives the second to the page that paired, which keeps it in its own
/// origin's storage); the engine keeps only the hash of the whole.
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
pub fn owner_only(actor: &Actor, what: &str) -> Result<(), ApiError> {
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

impl Records {
    /// Issues a one-time code that pairs a device named `device_name` for
    /// `person` (a short lowercase name such as `ana`; `app` and `cli` are
    /// the local owner's), good for 5 minutes. `grant` gives the person a
    /// role in the same transaction (a signed record); `None` keeps the
    /// role a person has, and makes a new person an approver of every
    /// workspace. Only the local owner may.
    pub fn pair_device_with(
        &self,
        person: &str,
        device_name: &str,
        grant: Option<&overseer_core::Grant>,
        actor: &Actor,
    ) -> Result<Pairing, ApiError> {
        owner_only(actor, "pair a device")?;
        let now = self.clock.now();
        let issued = self.write(|tx| {
            let issued = tx.issue_pairing_code(person, device_name, actor, now)?;
            match grant {
                Some(grant) => {
                    tx.set_grant(person, grant, actor, now)?;
                }
                None => {
                    let every = overseer_core::Grant {
                        role: overseer_core::Role::Approver,
                        workspaces: None,
                    };
                    if tx.person_has_grant(person)? {
                        // Kept as the owner set it.
                    } else {
                        tx.set_grant(person, &every, actor, now)?;
                    }
                }
            }
            Ok(issued)
        })?;
        Ok(Pairing {
            code: issued.code,
            expires_at: issued.expires_at,
            url: self.web_url(),
        })
    }

    /// [`Records::pair_device_with`] keeping the person's role (a new
    /// person: approver of every workspace).
    pub fn pair_device(
        &self,
        person: &str,
        device_name: &str,
        actor: &Actor,
    ) -> Result<Pairing, ApiError> {
        self.pair_device_with(person, device_name, None, actor)
    }

    /// [`Records::pair_device`] as the owner at the window (`user:app`).
    pub fn start_pairing(&self, person: &str, device_name: &str) -> Result<Pairing, ApiError> {
        self.pair_device(person, device_name, &Actor::app())
    }

    /// Exchanges a code for a device and its credential. A wrong, expired,
    /// used or burned code is refused `unauthorized`. The code is looked
    /// up with a read; only a right code writes (the pairing). Wrong tries
    /// are counted in memory ([`WrongTries`]): the 20th while codes are
    /// outstanding burns those issued at least a minute before (a signed
    /// record, and a warning in the log); a newer code is spared, and a new
    /// code works at once. How many tries one address may make is the
    /// transport's to limit.
    pub fn redeem_pairing(&self, code: &str) -> Result<Paired, ApiError> {
        let now = self.clock.now();
        let refusal = match self.store().pairing_code(code, now)? {
            // Right: paired in a write, which looks again (another request
            // may have redeemed it, or a burn hit it, since).
            None => match self.write(|tx| tx.redeem_pairing_code(code, now))? {
                Redeemed::Paired { device, credential } => {
                    return Ok(Paired { device, credential })
                }
                Redeemed::Refused(why) => why,
            },
            Some(why) => why,
        };
        let why = match refusal {
            // A burned code tells a guesser nothing: not counted.
            Refusal::Burned => Refusal::Burned,
            Refusal::Wrong { .. } => Refusal::Wrong {
                burned: self.count_wrong_try(now)?,
            },
            Refusal::Expired { .. } => Refusal::Expired {
                burned: self.count_wrong_try(now)?,
            },
            Refusal::Used { .. } => Refusal::Used {
                burned: self.count_wrong_try(now)?,
            },
        };
        Err(refused(why))
    }

    /// One more wrong try against the outstanding codes, in memory; the
    /// one that makes [`BURN_AFTER`] burns those issued [`BURN_GRACE`]
    /// ago or more (how many: returned) and starts the count over. With no
    /// code outstanding there is nothing to guess: the count starts over;
    /// so it does when every code outstanding is newer than the last
    /// counted try (none of them faced it).
    fn count_wrong_try(&self, now: Millis) -> Result<Option<u32>, ApiError> {
        let outstanding = self
            .store()
            .outstanding_pairing_codes(now, now - BURN_GRACE)?;
        let wrong = {
            let mut tries = self.wrong_pairing.lock().unwrap_or_else(|p| p.into_inner());
            let Some(oldest) = outstanding.oldest_issued else {
                *tries = WrongTries::default();
                return Ok(None);
            };
            if tries.last.is_none_or(|last| oldest > last) {
                tries.count = 0;
            }
            tries.count = tries.count.saturating_add(1);
            tries.last = Some(now);
            if tries.count < BURN_AFTER || outstanding.burnable == 0 {
                // Below the bound, or only codes in their first minute:
                // the count stays, and the first try after a code's
                // minute burns it.
                return Ok(None);
            }
            tries.count
        };
        let codes = self.write(|tx| tx.burn_pairing_codes(now, now - BURN_GRACE, wrong))?;
        if codes == 0 {
            return Ok(None);
        }
        let mut tries = self.wrong_pairing.lock().unwrap_or_else(|p| p.into_inner());
        tries.count = 0;
        Ok(Some(codes))
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

    /// Every paired device, revoked ones too, oldest first (as the local
    /// owner sees them).
    pub fn list_devices(&self) -> Result<Vec<DeviceView>, ApiError> {
        Ok(self.store().devices()?)
    }

    /// The devices `actor` may see: every one for the local owner (the
    /// window, the CLI); a person through a device sees only their own
    /// person's devices (which other people have paired, and what they
    /// named them, is the owner's to know). Anyone else is refused.
    pub fn list_devices_as(&self, actor: &Actor) -> Result<Vec<DeviceView>, ApiError> {
        let all = self.store().devices()?;
        if actor.is_local_owner() {
            return Ok(all);
        }
        match actor.user_name() {
            Some(person) => Ok(all.into_iter().filter(|d| d.person == person).collect()),
            None => Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "{actor} may not list paired devices: only the owner, or a person asking \
                     for their own"
                ),
            )),
        }
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

fn burned_text() -> String {
    format!(
        "that pairing code was burned: {BURN_AFTER} wrong codes were typed while it was \
         outstanding (someone may be guessing codes). Ask the owner for a new one (Settings, \
         \"Browsers and phones\", or `overseer devices pair`): it works at once"
    )
}

fn refused(why: Refusal) -> ApiError {
    let (text, burned) = match why {
        Refusal::Burned => return ApiError::new(ErrorCode::Unauthorized, burned_text()),
        Refusal::Wrong { burned } => (
            "that pairing code is wrong: check it (8 letters, shown as ABCD-EFGH) or make a \
             new one"
                .to_owned(),
            burned,
        ),
        Refusal::Expired { burned } => (
            format!(
                "that pairing code expired (a code works for {} minutes): make a new one",
                PAIRING_TTL / 60_000
            ),
            burned,
        ),
        Refusal::Used { burned } => (
            "that pairing code was used already (a code pairs one device): make a new one"
                .to_owned(),
            burned,
        ),
    };
    if let Some(codes) = burned {
        tracing::warn!(
            "{BURN_AFTER} wrong pairing codes were typed: the {codes} outstanding code(s) are \
             burned; make a new one to pair a device"
        );
        return ApiError::new(
            ErrorCode::Unauthorized,
            format!(
                "{text}. That was the {BURN_AFTER}th wrong code: the codes outstanding are \
                 burned, a new one is needed"
            ),
        );
    }
    ApiError::new(ErrorCode::Unauthorized, text)
}

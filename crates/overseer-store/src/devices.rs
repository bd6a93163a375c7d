//! Paired devices and the one-time codes that pair them.
//!
//! - A pairing code is 8 letters of an alphabet without look-alikes
//!   (`ABCD-EFGH`), valid for [`PAIRING_TTL`], good once, and kept only as
//!   its HMAC-SHA256 under a random key of the database ([`code_hash`]).
//! - Redeeming it makes the device and its credential: two halves of 32
//!   random bytes each (hex, joined by [`CREDENTIAL_JOIN`]), given to the
//!   caller once and kept only as the SHA-256 hash of the whole, which is
//!   how a request's credential is looked up. The web transport keeps the
//!   halves apart (a cookie, and a secret the page keeps in its own
//!   origin's storage): a request presents both or is nobody. A device
//!   paired before the halves (one 64-hex credential) matches no
//!   credential of this shape: it pairs again.
//! - Looking a code up is a read ([`crate::Store::pairing_code`]); only a
//!   right code writes (the pairing). Wrong tries (a wrong, expired or
//!   used code) are counted by the caller in memory (the engine), so a
//!   flood of wrong codes writes nothing; the [`BURN_AFTER`]th while codes
//!   are outstanding burns the ones issued at least [`BURN_GRACE`] before
//!   ([`WriteTx::burn_pairing_codes`], a signed record). Codes are not
//!   named in a wrong try, so the count is for all of them; a new code
//!   works at once, and for its first [`BURN_GRACE`] no flood can burn it
//!   (the owner types it meanwhile). Limiting tries per address is the
//!   transport's (it knows addresses).
//! - Pairing and revoking are signed audit records; a revoked device is
//!   refused from the moment its revocation commits.

use crate::{StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::device::{self, DeviceView, CODE_ALPHABET, CODE_LEN};
use overseer_core::{Actor, DeviceId, EngineEvent, Millis};
use rand_core::{OsRng, RngCore};
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};
use std::path::Path;

/// How long a pairing code can be redeemed.
pub const PAIRING_TTL: Millis = 5 * 60 * 1000;

/// Wrong tries, against the codes outstanding, that burn them: the odds of
/// guessing a code are at most this many in 31^8 (about 1 in 4 * 10^10).
pub const BURN_AFTER: i64 = 20;

/// How long a new code is spared by burns: whoever issued it has this long
/// to type it while wrong codes flood in (the tries in that time are what
/// bounds a guesser then: see `docs/browsers.md`).
pub const BURN_GRACE: Millis = 60 * 1000;

/// A device's last-seen time is written at most this often.
pub const SEEN_EVERY: Millis = 60 * 1000;

/// Bytes of randomness in each half of a device credential.
const CREDENTIAL_BYTES: usize = 32;

/// What joins a credential's two halves (`<cookie half>.<origin half>`).
pub const CREDENTIAL_JOIN: char = '.';

/// Whether `half` could be a half of a credential (64 hex digits).
fn is_half(half: &str) -> bool {
    half.len() == CREDENTIAL_BYTES * 2 && half.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A pairing code just issued: the code as shown (`ABCD-EFGH`) and when it
/// stops working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCode {
    pub code: String,
    pub expires_at: Millis,
}

/// What redeeming a code came to. A refusal is an outcome, not an error
/// (it writes nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeemed {
    /// The device is paired; its credential is shown this once.
    Paired {
        device: DeviceView,
        credential: String,
    },
    Refused(Refusal),
}

/// Why a code was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No code like it was issued (or it is not a code at all).
    Wrong {
        /// This try burned that many outstanding codes.
        burned: Option<u32>,
    },
    /// The code was issued but its time ran out.
    Expired { burned: Option<u32> },
    /// The code was redeemed already.
    Used { burned: Option<u32> },
    /// The code was burned, after [`BURN_AFTER`] wrong tries while it was
    /// outstanding.
    Burned,
}

/// Codes issued, neither redeemed, burned nor expired at `now`.
const OUTSTANDING: &str = "redeemed_at IS NULL AND burned_at IS NULL AND expires_at > ?1";

/// The SHA-256 of a credential, as the database keeps it.
pub fn credential_hash(credential: &str) -> String {
    hex::encode(Sha256::digest(credential.as_bytes()))
}

/// Bytes of the database's pairing key ([`code_hash`]).
const PAIRING_KEY_BYTES: usize = 32;

/// A code's letters as the database keeps them: HMAC-SHA256 under the
/// database's own random key (`pairing_key`, made with the first code).
/// The code space is small (31^8): an unkeyed hash read from a copy of the
/// database could be reversed by trying every code; without the key it
/// cannot. `None` only if the HMAC refused the key (it takes any length).
fn code_hash(key: &[u8], letters: &str) -> Option<String> {
    use hmac::{Hmac, Mac};
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    mac.update(b"pairing-code:");
    mac.update(letters.as_bytes());
    Some(hex::encode(mac.finalize().into_bytes()))
}

/// The database's pairing key, once a code was issued.
fn pairing_key(conn: &Connection) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT key FROM pairing_key WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()
}

/// A code outstanding, as looked up.
struct Outstanding {
    id: i64,
    person: String,
    name: String,
    issued_by: String,
}

/// The code `typed` names at `now`: outstanding (it pairs), or why not.
/// Reads only.
fn look_up_code(
    conn: &Connection,
    typed: &str,
    now: Millis,
) -> rusqlite::Result<Result<Outstanding, Refusal>> {
    let wrong = Err(Refusal::Wrong { burned: None });
    let Some(letters) = device::normalize_code(typed) else {
        return Ok(wrong);
    };
    // No key: no code was ever issued under one.
    let Some(key) = pairing_key(conn)? else {
        return Ok(wrong);
    };
    let Some(hash) = code_hash(&key, &letters) else {
        return Ok(wrong);
    };
    let found = conn
        .prepare_cached(
            "SELECT id, person, device_name, issued_by, expires_at, redeemed_at, burned_at
             FROM pairing_codes WHERE code_hash = ?1 ORDER BY id DESC LIMIT 1",
        )?
        .query_row([hash], |r| {
            Ok((
                Outstanding {
                    id: r.get(0)?,
                    person: r.get(1)?,
                    name: r.get(2)?,
                    issued_by: r.get(3)?,
                },
                r.get::<_, Millis>(4)?,
                r.get::<_, Option<Millis>>(5)?,
                r.get::<_, Option<Millis>>(6)?,
            ))
        })
        .optional()?;
    Ok(match found {
        None => wrong,
        Some((_, _, Some(_), _)) => Err(Refusal::Used { burned: None }),
        Some((_, _, None, Some(_))) => Err(Refusal::Burned),
        Some((code, expires_at, None, None)) if expires_at > now => Ok(code),
        Some(_) => Err(Refusal::Expired { burned: None }),
    })
}

/// The codes outstanding at a moment ([`crate::Store::outstanding_pairing_codes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutstandingCodes {
    /// How many.
    pub codes: i64,
    /// When the oldest of them was issued.
    pub oldest_issued: Option<Millis>,
    /// How many of them a burn may hit (issued at or before the time asked).
    pub burnable: i64,
}

fn random(buf: &mut [u8], path: &Path) -> Result<(), StoreError> {
    OsRng.try_fill_bytes(buf).map_err(|e| StoreError::Io {
        path: path.to_owned(),
        source: std::io::Error::other(format!("the system's random source failed: {e}")),
    })
}

/// A fresh code's letters, each uniform over the alphabet (bytes past the
/// last whole multiple of its size are drawn again).
fn new_code(path: &Path) -> Result<String, StoreError> {
    let n = CODE_ALPHABET.len();
    let limit = 256 - 256 % n;
    let mut letters = String::with_capacity(CODE_LEN);
    let mut buf = [0u8; 32];
    while letters.len() < CODE_LEN {
        random(&mut buf, path)?;
        for b in buf {
            if letters.len() < CODE_LEN && usize::from(b) < limit {
                letters.push(char::from(CODE_ALPHABET[usize::from(b) % n]));
            }
        }
    }
    Ok(letters)
}

/// A device with its person's grant (`people` has no `id` or
/// `credential_hash`: the `WHERE`s after it name the device's).
const DEVICE_SELECT: &str =
    "SELECT id, devices.person, name, created_at, last_seen_at, revoked_at, people.role, \
     people.workspaces FROM devices LEFT JOIN people ON people.person = devices.person";

fn device_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DeviceView> {
    Ok(DeviceView {
        id: r.get(0)?,
        person: r.get(1)?,
        name: r.get(2)?,
        created_at: r.get(3)?,
        last_seen_at: r.get(4)?,
        revoked_at: r.get(5)?,
        grant: crate::grant::grant_of(r.get(6)?, r.get(7)?),
    })
}

pub(crate) fn device_of(conn: &Connection, id: DeviceId) -> rusqlite::Result<Option<DeviceView>> {
    conn.prepare_cached(&format!("{DEVICE_SELECT} WHERE id = ?1"))?
        .query_row([id], device_row)
        .optional()
}

impl crate::Store {
    /// Every device ever paired, revoked ones too, oldest first.
    pub fn devices(&self) -> Result<Vec<DeviceView>, StoreError> {
        let sql = |e| StoreError::from_sqlite(e, self.path());
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{DEVICE_SELECT} ORDER BY id"))
            .map_err(sql)?;
        let rows = stmt.query_map([], device_row).map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)
    }

    pub fn device(&self, id: DeviceId) -> Result<DeviceView, StoreError> {
        device_of(&self.conn, id)
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?
            .ok_or(StoreError::NotFound {
                what: "device",
                id: id.into(),
            })
    }

    /// The device a credential belongs to (revoked or not), if any: looked
    /// up by the credential's hash.
    pub fn device_by_credential(&self, credential: &str) -> Result<Option<DeviceView>, StoreError> {
        // Not one of ours (both halves, or nothing): no need to ask the
        // database.
        if !credential
            .split_once(CREDENTIAL_JOIN)
            .is_some_and(|(a, b)| is_half(a) && is_half(b))
        {
            return Ok(None);
        }
        self.conn
            .prepare_cached(&format!("{DEVICE_SELECT} WHERE credential_hash = ?1"))
            .and_then(|mut s| {
                s.query_row([credential_hash(credential)], device_row)
                    .optional()
            })
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }
}

impl crate::Store {
    /// What the code `typed` is at `now`, with reads only: `None` when it
    /// is outstanding (redeeming it pairs), else why it would be refused.
    pub fn pairing_code(&self, typed: &str, now: Millis) -> Result<Option<Refusal>, StoreError> {
        look_up_code(&self.conn, typed, now)
            .map(Result::err)
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }

    /// The codes outstanding at `now`, and how many of them were issued at
    /// or before `issued_by` (reads only).
    pub fn outstanding_pairing_codes(
        &self,
        now: Millis,
        issued_by: Millis,
    ) -> Result<OutstandingCodes, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT count(*), min(created_at), coalesce(sum(created_at <= ?2), 0)
                 FROM pairing_codes WHERE {OUTSTANDING}"
            ))
            .and_then(|mut s| {
                s.query_row([now, issued_by], |r| {
                    Ok(OutstandingCodes {
                        codes: r.get(0)?,
                        oldest_issued: r.get(1)?,
                        burnable: r.get(2)?,
                    })
                })
            })
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }
}

impl WriteTx<'_> {
    /// Issues a one-time code that pairs a device named `device_name` for
    /// `person` (both checked here), good for [`PAIRING_TTL`].
    pub fn issue_pairing_code(
        &mut self,
        person: &str,
        device_name: &str,
        issued_by: &Actor,
        now: Millis,
    ) -> Result<IssuedCode, StoreError> {
        let person = device::check_person(person).map_err(StoreError::InvalidInput)?;
        let name = device::check_device_name(device_name).map_err(StoreError::InvalidInput)?;
        let letters = new_code(self.path())?;
        let expires_at = now + PAIRING_TTL;
        // The database's pairing key, made with its first code.
        let mut fresh = [0u8; PAIRING_KEY_BYTES];
        random(&mut fresh, self.path())?;
        let conn = self.conn();
        conn.execute(
            "INSERT OR IGNORE INTO pairing_key(id, key) VALUES (1, ?1)",
            [&fresh[..]],
        )
        .map_err(|e| self.sql(e))?;
        let hash = pairing_key(conn)
            .map_err(|e| self.sql(e))?
            .and_then(|key| code_hash(&key, &letters))
            .ok_or_else(|| {
                StoreError::InvalidInput(
                    "the database's pairing key could not be read: try again, or restore the \
                     database from a backup"
                        .to_owned(),
                )
            })?;
        // Codes nobody redeemed are of no use a day later.
        conn.execute(
            "DELETE FROM pairing_codes WHERE redeemed_at IS NULL AND expires_at < ?1",
            [now - 24 * 60 * 60 * 1000],
        )
        .map_err(|e| self.sql(e))?;
        conn.execute(
            "INSERT INTO pairing_codes(code_hash, person, device_name, issued_by, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![hash, person, name, issued_by.to_string(), now, expires_at],
        )
        .map_err(|e| self.sql(e))?;
        Ok(IssuedCode {
            code: device::show_code(&letters),
            expires_at,
        })
    }

    /// Redeems a code as typed: pairs its device (signed, and told as
    /// [`EngineEvent::DeviceChanged`]) or says why not. Nothing is written
    /// for a refusal: counting wrong tries (and burning codes after
    /// [`BURN_AFTER`] of them, [`WriteTx::burn_pairing_codes`]) is the
    /// caller's, in memory. Callers look the code up first with a read
    /// ([`crate::Store::pairing_code`]) and write only for a right one.
    pub fn redeem_pairing_code(
        &mut self,
        typed: &str,
        now: Millis,
    ) -> Result<Redeemed, StoreError> {
        match look_up_code(self.conn(), typed, now).map_err(|e| self.sql(e))? {
            Err(refusal) => Ok(Redeemed::Refused(refusal)),
            Ok(code) => self.pair(code.id, &code.person, &code.name, &code.issued_by, now),
        }
    }

    fn pair(
        &mut self,
        code_id: i64,
        person: &str,
        name: &str,
        issued_by: &str,
        now: Millis,
    ) -> Result<Redeemed, StoreError> {
        let mut bytes = [0u8; CREDENTIAL_BYTES * 2];
        random(&mut bytes, self.path())?;
        let (cookie, bound) = bytes.split_at(CREDENTIAL_BYTES);
        let credential = format!(
            "{}{CREDENTIAL_JOIN}{}",
            hex::encode(cookie),
            hex::encode(bound)
        );
        let conn = self.conn();
        conn.execute(
            "INSERT INTO devices(person, name, credential_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![person, name, credential_hash(&credential), now],
        )
        .map_err(|e| self.sql(e))?;
        let id = DeviceId(conn.last_insert_rowid());
        // A code issued before roles existed named no grant: its person
        // gets what the people paired then got.
        self.grant_if_none(person, now)?;
        let conn = self.conn();
        // Single use: a compare-and-set, so two redeems of one code racing
        // each other cannot both pair.
        let changed = conn
            .execute(
                "UPDATE pairing_codes SET redeemed_at = ?1, device_id = ?2
                 WHERE id = ?3 AND redeemed_at IS NULL",
                params![now, id, code_id],
            )
            .map_err(|e| self.sql(e))?;
        if changed != 1 {
            return Err(StoreError::InvalidInput(
                "this pairing code was redeemed at the same moment by another request".to_owned(),
            ));
        }
        self.append_audit(
            &Actor::Engine,
            &AuditPayload::DevicePaired {
                device_id: id,
                person: person.to_owned(),
                name: name.to_owned(),
                issued_by: issued_by.to_owned(),
            },
            now,
        )?;
        let device =
            device_of(self.conn(), id)
                .map_err(|e| self.sql(e))?
                .ok_or(StoreError::NotFound {
                    what: "device",
                    id: id.into(),
                })?;
        self.happened(EngineEvent::DeviceChanged {
            device: device.clone(),
        });
        Ok(Redeemed::Paired { device, credential })
    }

    /// Burns the outstanding codes issued at or before `issued_by`, after
    /// `wrong_tries` wrong tries against them (signed, told as
    /// [`EngineEvent::PairingCodesBurned`]): how many. None old enough:
    /// nothing is written, 0.
    pub fn burn_pairing_codes(
        &mut self,
        now: Millis,
        issued_by: Millis,
        wrong_tries: i64,
    ) -> Result<u32, StoreError> {
        let burned = self
            .conn()
            .execute(
                &format!(
                    "UPDATE pairing_codes SET burned_at = ?1 WHERE {OUTSTANDING} AND created_at <= ?2"
                ),
                [now, issued_by],
            )
            .map_err(|e| self.sql(e))?;
        if burned == 0 {
            return Ok(0);
        }
        let codes = u32::try_from(burned).unwrap_or(u32::MAX);
        self.append_audit(
            &Actor::Engine,
            &AuditPayload::PairingCodesBurned {
                codes,
                wrong_tries: u32::try_from(wrong_tries).unwrap_or(u32::MAX),
            },
            now,
        )?;
        self.happened(EngineEvent::PairingCodesBurned { codes });
        Ok(codes)
    }

    /// Revokes a device (signed, and told as [`EngineEvent::DeviceChanged`]);
    /// a device revoked already is left as it is.
    pub fn revoke_device(
        &mut self,
        id: DeviceId,
        actor: &Actor,
        now: Millis,
    ) -> Result<DeviceView, StoreError> {
        let conn = self.conn();
        let changed = conn
            .execute(
                "UPDATE devices SET revoked_at = ?1, revoked_by = ?2
                 WHERE id = ?3 AND revoked_at IS NULL",
                params![now, actor.to_string(), id],
            )
            .map_err(|e| self.sql(e))?;
        let device = device_of(conn, id)
            .map_err(|e| self.sql(e))?
            .ok_or(StoreError::NotFound {
                what: "device",
                id: id.into(),
            })?;
        if changed == 1 {
            self.append_audit(
                actor,
                &AuditPayload::DeviceRevoked {
                    device_id: id,
                    person: device.person.clone(),
                    name: device.name.clone(),
                },
                now,
            )?;
            self.happened(EngineEvent::DeviceChanged {
                device: device.clone(),
            });
        }
        Ok(device)
    }

    /// Notes that a device made a request at `now`, at most once per
    /// [`SEEN_EVERY`] (true when written).
    pub fn device_seen(&mut self, id: DeviceId, now: Millis) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE devices SET last_seen_at = ?2
                 WHERE id = ?1 AND revoked_at IS NULL
                   AND (last_seen_at IS NULL OR last_seen_at <= ?2 - ?3)",
                params![id, now, SEEN_EVERY],
            )
            .map_err(|e| self.sql(e))?;
        Ok(changed == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_use_only_the_alphabet_and_differ() {
        let path = Path::new("x.db");
        let a = new_code(path).expect("code");
        let b = new_code(path).expect("code");
        assert_eq!(a.len(), CODE_LEN);
        assert!(a.bytes().all(|c| CODE_ALPHABET.contains(&c)), "{a}");
        assert_ne!(a, b, "two codes in a row are (almost surely) different");
        assert_eq!(device::normalize_code(&device::show_code(&a)), Some(a));
    }
}

//! Paired devices and the one-time codes that pair them.
//!
//! - A pairing code is 8 letters of an alphabet without look-alikes
//!   (`ABCD-EFGH`), valid for [`PAIRING_TTL`], good once, and kept only as
//!   its SHA-256 hash.
//! - Redeeming it makes the device and its credential: 32 random bytes
//!   (hex), given to the caller once and kept only as their SHA-256 hash,
//!   which is how a request's credential is looked up.
//! - Wrong tries (a wrong, expired or used code) made while codes are
//!   outstanding are counted; the [`BURN_AFTER`]th burns every outstanding
//!   code (a signed record says so) and starts the count over. Codes are
//!   not named in a wrong try, so the count is for all of them: each code
//!   faces at most that many guesses in its life, and a new code works at
//!   once (nobody can keep pairing locked, as a time lockout of every code
//!   would let them). The count lives in the database
//!   (`pairing_lockout.failures`), so a restart does not reset it, and a
//!   refusal is committed like any write (it is an outcome of the write,
//!   not an error that rolls it back). Limiting tries per address is the
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

/// A device's last-seen time is written at most this often.
pub const SEEN_EVERY: Millis = 60 * 1000;

/// Bytes of randomness in a device credential.
const CREDENTIAL_BYTES: usize = 32;

/// A pairing code just issued: the code as shown (`ABCD-EFGH`) and when it
/// stops working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCode {
    pub code: String,
    pub expires_at: Millis,
}

/// What redeeming a code came to. A refusal is an outcome, not an error:
/// the write that counts it (and may lock pairing out) is committed.
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

/// The SHA-256 of a code's letters, as the database keeps it.
fn code_hash(letters: &str) -> String {
    hex::encode(Sha256::digest(format!("pairing-code:{letters}").as_bytes()))
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

const DEVICE_SELECT: &str =
    "SELECT id, person, name, created_at, last_seen_at, revoked_at FROM devices";

fn device_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DeviceView> {
    Ok(DeviceView {
        id: r.get(0)?,
        person: r.get(1)?,
        name: r.get(2)?,
        created_at: r.get(3)?,
        last_seen_at: r.get(4)?,
        revoked_at: r.get(5)?,
    })
}

fn device_of(conn: &Connection, id: DeviceId) -> rusqlite::Result<Option<DeviceView>> {
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
        // Not one of ours: no need to ask the database.
        if credential.len() != CREDENTIAL_BYTES * 2
            || !credential.bytes().all(|b| b.is_ascii_hexdigit())
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
        let conn = self.conn();
        // Wrong tries count against the codes outstanding: a first code
        // after none starts the count over.
        let outstanding: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM pairing_codes WHERE {OUTSTANDING}"),
                [now],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        if outstanding == 0 {
            conn.execute("UPDATE pairing_lockout SET failures = 0 WHERE id = 1", [])
                .map_err(|e| self.sql(e))?;
        }
        // Codes nobody redeemed are of no use a day later.
        conn.execute(
            "DELETE FROM pairing_codes WHERE redeemed_at IS NULL AND expires_at < ?1",
            [now - 24 * 60 * 60 * 1000],
        )
        .map_err(|e| self.sql(e))?;
        conn.execute(
            "INSERT INTO pairing_codes(code_hash, person, device_name, issued_by, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![code_hash(&letters), person, name, issued_by.to_string(), now, expires_at],
        )
        .map_err(|e| self.sql(e))?;
        Ok(IssuedCode {
            code: device::show_code(&letters),
            expires_at,
        })
    }

    /// Redeems a code as typed: pairs its device (signed, and told as
    /// [`EngineEvent::DeviceChanged`]) or says why not, counting a wrong,
    /// expired or used code against the outstanding codes (which the
    /// [`BURN_AFTER`]th burns).
    pub fn redeem_pairing_code(
        &mut self,
        typed: &str,
        now: Millis,
    ) -> Result<Redeemed, StoreError> {
        let conn = self.conn();
        let found = match device::normalize_code(typed) {
            None => None,
            Some(letters) => conn
                .prepare_cached(
                    "SELECT id, person, device_name, issued_by, expires_at, redeemed_at, burned_at
                     FROM pairing_codes WHERE code_hash = ?1 ORDER BY id DESC LIMIT 1",
                )
                .and_then(|mut s| {
                    s.query_row([code_hash(&letters)], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, String>(3)?,
                            r.get::<_, Millis>(4)?,
                            r.get::<_, Option<Millis>>(5)?,
                            r.get::<_, Option<Millis>>(6)?,
                        ))
                    })
                    .optional()
                })
                .map_err(|e| self.sql(e))?,
        };
        match found {
            // A burned code tells a guesser nothing: not counted.
            Some((_, _, _, _, _, None, Some(_))) => Ok(Redeemed::Refused(Refusal::Burned)),
            Some((code_id, person, name, issued_by, expires_at, None, None))
                if expires_at > now =>
            {
                self.pair(code_id, &person, &name, &issued_by, now)
            }
            Some((_, _, _, _, _, Some(_), _)) => {
                let burned = self.count_wrong_try(now)?;
                Ok(Redeemed::Refused(Refusal::Used { burned }))
            }
            Some(_) => {
                let burned = self.count_wrong_try(now)?;
                Ok(Redeemed::Refused(Refusal::Expired { burned }))
            }
            None => {
                let burned = self.count_wrong_try(now)?;
                Ok(Redeemed::Refused(Refusal::Wrong { burned }))
            }
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
        let mut bytes = [0u8; CREDENTIAL_BYTES];
        random(&mut bytes, self.path())?;
        let credential = hex::encode(bytes);
        let conn = self.conn();
        conn.execute(
            "INSERT INTO devices(person, name, credential_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![person, name, credential_hash(&credential), now],
        )
        .map_err(|e| self.sql(e))?;
        let id = DeviceId(conn.last_insert_rowid());
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

    /// One more wrong try against the outstanding codes; the one that
    /// makes [`BURN_AFTER`] burns them (signed; returned: how many) and
    /// starts the count over. With no code outstanding there is nothing to
    /// guess: the count starts over.
    fn count_wrong_try(&mut self, now: Millis) -> Result<Option<u32>, StoreError> {
        let conn = self.conn();
        let outstanding: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM pairing_codes WHERE {OUTSTANDING}"),
                [now],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        if outstanding == 0 {
            conn.execute("UPDATE pairing_lockout SET failures = 0 WHERE id = 1", [])
                .map_err(|e| self.sql(e))?;
            return Ok(None);
        }
        let failures: i64 = conn
            .query_row(
                "UPDATE pairing_lockout SET failures = failures + 1 WHERE id = 1 RETURNING failures",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        if failures < BURN_AFTER {
            return Ok(None);
        }
        let burned = conn
            .execute(
                &format!("UPDATE pairing_codes SET burned_at = ?1 WHERE {OUTSTANDING}"),
                [now],
            )
            .map_err(|e| self.sql(e))?;
        conn.execute("UPDATE pairing_lockout SET failures = 0 WHERE id = 1", [])
            .map_err(|e| self.sql(e))?;
        let codes = u32::try_from(burned).unwrap_or(u32::MAX);
        self.append_audit(
            &Actor::Engine,
            &AuditPayload::PairingCodesBurned {
                codes,
                wrong_tries: u32::try_from(failures).unwrap_or(u32::MAX),
            },
            now,
        )?;
        self.happened(EngineEvent::PairingCodesBurned { codes });
        Ok(Some(codes))
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

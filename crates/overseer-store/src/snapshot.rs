//! Verifying another machine's audit log here: a consistent copy of its
//! database (and its out-of-database checkpoint) taken there, then checked
//! here with a public key this machine pinned earlier, never with the key
//! that machine claims now.

use crate::audit::{Checkpoint, VerifyReport};
use crate::{verify, AuditFailure, Keyring, StoreError};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// The copy's database file in a snapshot directory.
pub const SNAPSHOT_DB: &str = "overseer.db";
/// The checkpoint kept beside the signing key, when there is one.
pub const SNAPSHOT_CHECKPOINT: &str = "checkpoint.json";

fn read_only(db: &Path) -> Result<Connection, StoreError> {
    Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::from_sqlite(e, db))
}

/// Writes a consistent copy of the database `db` (an engine may be writing
/// it meanwhile: `VACUUM INTO` reads one transaction) to `out/overseer.db`,
/// and the checkpoint the key's directory `config_dir` keeps for it to
/// `out/checkpoint.json`. Returns the number of audit records copied.
pub fn snapshot_audit(db: &Path, config_dir: &Path, out: &Path) -> Result<i64, StoreError> {
    let conn = read_only(db)?;
    let sql = |e| StoreError::from_sqlite(e, db);
    let target = out.join(SNAPSHOT_DB);
    let target_str = target.to_str().ok_or_else(|| StoreError::Io {
        path: target.clone(),
        source: std::io::Error::other("the snapshot path is not UTF-8"),
    })?;
    conn.execute("VACUUM INTO ?1", [target_str]).map_err(sql)?;
    let copy = read_only(&target)?;
    let (db_id, records): (String, i64) = copy
        .query_row(
            "SELECT (SELECT value FROM meta WHERE key = 'db_id'), \
             (SELECT COUNT(*) FROM audit_log)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| StoreError::from_sqlite(e, &target))?;
    let cp = config_dir.join("checkpoints").join(format!("{db_id}.json"));
    match std::fs::copy(&cp, out.join(SNAPSHOT_CHECKPOINT)) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(StoreError::Io { path: cp, source }),
    }
    Ok(records)
}

/// Verifies the snapshot in `dir` ([`snapshot_audit`]'s output) with the
/// public key `public_hex` alone: every record's hash, chain position and
/// signature, the checkpoints (the database's and the one kept beside the
/// key), and every decision row against its signed record. The outer error
/// is a failure to read; the inner one is the verdict.
pub fn verify_snapshot(
    dir: &Path,
    public_hex: &str,
) -> Result<Result<VerifyReport, AuditFailure>, StoreError> {
    let keyring = Keyring::verifying_only(public_hex, dir)?;
    let db = dir.join(SNAPSHOT_DB);
    let conn = read_only(&db)?;
    let cp_path = dir.join(SNAPSHOT_CHECKPOINT);
    let file_cp: Option<Checkpoint> = match std::fs::read(&cp_path) {
        Ok(bytes) => Some(serde_json::from_slice(&bytes).map_err(|e| StoreError::Key {
            path: cp_path.clone(),
            problem: format!("checkpoint file is unreadable ({e})"),
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(StoreError::Io {
                path: cp_path,
                source,
            })
        }
    };
    verify::verify(&conn, &keyring, file_cp.as_ref()).map_err(|e| StoreError::from_sqlite(e, &db))
}

//! The signed, hash-chained audit log.
//!
//! Each record carries its `seq`, the previous record's hash, the SHA-256 of
//! its canonical payload, the actor and the time. The record hash covers all of
//! those, and an Ed25519 signature covers the record hash. Together they catch
//! an edited payload (payload hash), edited fields (record hash), a record
//! deleted or moved (seq and chain), and a signature copied from elsewhere.
//! Truncation of the tail leaves a valid shorter chain, so signed checkpoints
//! (count + head hash), kept in the database and in the config dir, vouch for
//! how long the log was.
//!
//! This module holds the records themselves (sealing, storing, reading);
//! [`crate::chain`] checks them, [`crate::attest`] checks decision rows
//! against them, and [`crate::verify`] puts both together for `audit
//! verify` and the "Why?" stories. Each uses only the ones before it.

use crate::Keyring;
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The hash the first record points back to.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One stored record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AuditRecord {
    pub seq: i64,
    pub prev_hash: String,
    /// Canonical JSON: serde_json's `Value` keeps object keys sorted.
    pub payload: String,
    pub payload_hash: String,
    pub actor: String,
    pub at: i64,
    pub record_hash: String,
    pub signature: String,
}

pub use crate::keys::Checkpoint;

/// Canonical bytes of a payload: keys sorted at every level, no whitespace,
/// so the same value always gives the same bytes. Sorted here, not left to
/// serde_json's map: a dependency in the workspace turns on its
/// `preserve_order` feature, which keeps insertion order instead. (A record
/// is verified against its stored bytes, so records written before keys
/// were sorted here still verify.)
pub fn canonical(payload: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                serde_json::Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sorted).collect())
            }
            other => other.clone(),
        }
    }
    sorted(payload).to_string()
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The hash that chains and gets signed.
pub(crate) fn record_hash(
    seq: i64,
    prev_hash: &str,
    payload_hash: &str,
    actor: &str,
    at: i64,
) -> String {
    hex::encode(record_digest(seq, prev_hash, payload_hash, actor, at))
}

/// [`record_hash`] before its hex encoding.
pub(crate) fn record_digest(
    seq: i64,
    prev_hash: &str,
    payload_hash: &str,
    actor: &str,
    at: i64,
) -> [u8; 32] {
    Sha256::digest(
        format!("overseer-audit-v1\n{seq}\n{prev_hash}\n{payload_hash}\n{actor}\n{at}").as_bytes(),
    )
    .into()
}

/// Whether `hex_text` is `digest` in lowercase hex, as [`sha256_hex`] and
/// [`record_hash`] write it (compared without allocating).
pub(crate) fn is_hex_of(digest: &[u8; 32], hex_text: &str) -> bool {
    let mut text = [0u8; 64];
    hex::encode_to_slice(digest, &mut text).is_ok() && text.as_slice() == hex_text.as_bytes()
}

pub(crate) fn checkpoint_message(count: i64, head_hash: &str, at: i64) -> Vec<u8> {
    format!("overseer-checkpoint-v1\n{count}\n{head_hash}\n{at}").into_bytes()
}

/// Builds the next record after `(prev_seq, prev_hash)`, signed.
pub(crate) fn seal(
    keyring: &Keyring,
    prev_seq: i64,
    prev_hash: &str,
    payload: &serde_json::Value,
    actor: &str,
    at: i64,
) -> AuditRecord {
    let seq = prev_seq + 1;
    let payload = canonical(payload);
    let payload_hash = sha256_hex(payload.as_bytes());
    let record_hash = record_hash(seq, prev_hash, &payload_hash, actor, at);
    let signature = keyring.sign(record_hash.as_bytes());
    AuditRecord {
        seq,
        prev_hash: prev_hash.to_owned(),
        payload,
        payload_hash,
        actor: actor.to_owned(),
        at,
        record_hash,
        signature,
    }
}

pub(crate) fn insert(conn: &Connection, r: &AuditRecord) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO audit_log(seq, prev_hash, payload, payload_hash, actor, at, record_hash, signature)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        r.seq,
        r.prev_hash,
        r.payload,
        r.payload_hash,
        r.actor,
        r.at,
        r.record_hash,
        r.signature
    ])?;
    Ok(())
}

/// The last record's seq and hash, or (0, genesis) for an empty log.
pub(crate) fn head(conn: &Connection) -> rusqlite::Result<(i64, String)> {
    Ok(conn
        .query_row(
            "SELECT seq, record_hash FROM audit_log ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .unwrap_or_else(|| (0, GENESIS_HASH.to_owned())))
}

/// Reads records in seq order (for `audit export` and the "Why?" story).
pub fn read_records(
    conn: &Connection,
    from_seq: i64,
    limit: i64,
) -> rusqlite::Result<Vec<AuditRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, prev_hash, payload, payload_hash, actor, at, record_hash, signature
         FROM audit_log WHERE seq >= ?1 ORDER BY seq LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![from_seq, limit], row_to_record)?;
    rows.collect()
}

/// The record at `seq`, if there is one.
pub(crate) fn record_at(conn: &Connection, seq: i64) -> rusqlite::Result<Option<AuditRecord>> {
    conn.prepare_cached(
        "SELECT seq, prev_hash, payload, payload_hash, actor, at, record_hash, signature
         FROM audit_log WHERE seq = ?1",
    )?
    .query_row([seq], row_to_record)
    .optional()
}

pub(crate) fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRecord> {
    Ok(AuditRecord {
        seq: r.get(0)?,
        prev_hash: r.get(1)?,
        payload: r.get(2)?,
        payload_hash: r.get(3)?,
        actor: r.get(4)?,
        at: r.get(5)?,
        record_hash: r.get(6)?,
        signature: r.get(7)?,
    })
}

/// What a successful verification saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub records: i64,
    pub head_hash: String,
    pub checkpoints: i64,
}

/// What is wrong with the first bad record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case", tag = "problem")]
pub enum AuditProblem {
    /// A record is missing or out of place.
    SeqGap { found: i64 },
    /// The record does not point to the hash of the record before it.
    ChainBroken,
    /// The payload was edited after it was written.
    PayloadEdited,
    /// seq, actor, time or hashes were edited.
    FieldsEdited,
    /// The signature is not this record's (replaced, forged, or another key).
    BadSignature,
    /// Records the checkpoint vouched for are gone.
    Truncated { checkpoint_count: i64, found: i64 },
    /// The record at a checkpoint's position is not the one it vouched for.
    CheckpointMismatch { checkpoint_count: i64 },
    /// A checkpoint's own signature does not verify.
    BadCheckpointSignature { checkpoint_count: i64 },
}

/// The first bad record and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyFailure {
    pub seq: i64,
    #[serde(flatten)]
    pub problem: AuditProblem,
}

impl fmt::Display for VerifyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seq = self.seq;
        match &self.problem {
            AuditProblem::SeqGap { found } => write!(
                f,
                "seq {seq}: record missing or out of order (found seq {found} where {seq} belongs): records were deleted or reordered"
            ),
            AuditProblem::ChainBroken => write!(
                f,
                "seq {seq}: previous-hash link broken: a record before it was deleted, reordered or rewritten"
            ),
            AuditProblem::PayloadEdited => write!(
                f,
                "seq {seq}: payload does not match its SHA-256: the record was edited"
            ),
            AuditProblem::FieldsEdited => write!(
                f,
                "seq {seq}: seq, actor, time or hash fields do not match the record hash: the record was edited"
            ),
            AuditProblem::BadSignature => write!(
                f,
                "seq {seq}: signature does not verify: it was replaced or forged"
            ),
            AuditProblem::Truncated {
                checkpoint_count,
                found,
            } => write!(
                f,
                "seq {seq}: missing: a signed checkpoint vouches for {checkpoint_count} records but the log ends at seq {found}: the tail was cut off"
            ),
            AuditProblem::CheckpointMismatch { checkpoint_count } => write!(
                f,
                "seq {seq}: not the record the signed checkpoint of {checkpoint_count} records vouched for: history was rewritten"
            ),
            AuditProblem::BadCheckpointSignature { checkpoint_count } => write!(
                f,
                "seq {seq}: the checkpoint of {checkpoint_count} records has an invalid signature: it was forged or edited"
            ),
        }
    }
}

/// One record of a story, with what checking it on its own found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct CheckedRecord {
    pub record: AuditRecord,
    /// `None` when the record is intact and its signature verifies, linked to
    /// the record before it; otherwise what is wrong, loudly.
    pub problem: Option<AuditProblem>,
}

#[cfg(test)]
mod canonical_tests {
    use super::canonical;

    #[test]
    fn the_same_value_gives_the_same_bytes_whatever_order_it_was_built_in() {
        let a = serde_json::json!({"b": 1, "a": {"d": [{"z": 1, "y": 2}], "c": null}});
        let mut m = serde_json::Map::new();
        m.insert(
            "a".into(),
            serde_json::json!({"c": null, "d": [{"y": 2, "z": 1}]}),
        );
        m.insert("b".into(), serde_json::json!(1));
        let b = serde_json::Value::Object(m);
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a),
            r#"{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}"#
        );
    }
}

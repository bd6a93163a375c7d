//! `audit verify` and the "Why?" stories: the records checked
//! ([`crate::chain`]) and the decision rows checked against them
//! ([`crate::attest`]), put together.

use crate::attest::{self, DecisionMismatch};
use crate::audit::{
    checkpoint_message, head, record_at, row_to_record, AuditProblem, AuditRecord, CheckedRecord,
    Checkpoint, VerifyFailure, VerifyReport, GENESIS_HASH,
};
use crate::{chain, Keyring};
use rusqlite::Connection;
use serde::Serialize;
use std::fmt;

/// Why a log failed verification: its first bad record or checkpoint, and
/// every decision row no verifying signed record backs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditFailure {
    /// The first bad record or checkpoint, if the chain itself is broken.
    pub record: Option<VerifyFailure>,
    /// Decision rows (gates, their history, votes and notes) whose signed
    /// record is missing, does not verify, or says something else.
    pub decisions: Vec<DecisionMismatch>,
}

impl fmt::Display for AuditFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        if let Some(r) = &self.record {
            write!(f, "{r}")?;
            first = false;
        }
        if !self.decisions.is_empty() {
            if !first {
                writeln!(f)?;
            }
            write!(
                f,
                "{} decision row(s) are not backed by their signed record:",
                self.decisions.len()
            )?;
            for d in &self.decisions {
                write!(f, "\n  - {d}")?;
            }
        }
        Ok(())
    }
}

/// Verifies the chain and every checkpoint, then cross-checks every
/// decision row against its signed record. The outer `Result` is a database
/// failure; the inner one is the verdict.
pub(crate) fn verify(
    conn: &Connection,
    keyring: &Keyring,
    file_cp: Option<&Checkpoint>,
) -> rusqlite::Result<Result<VerifyReport, AuditFailure>> {
    let chain = verify_chain(conn, keyring, file_cp)?;
    let verified_below = match &chain {
        Ok(report) => report.records + 1,
        Err(f) => match f.problem {
            AuditProblem::Truncated { .. }
            | AuditProblem::CheckpointMismatch { .. }
            | AuditProblem::BadCheckpointSignature { .. } => head(conn)?.0 + 1,
            AuditProblem::SeqGap { .. }
            | AuditProblem::ChainBroken
            | AuditProblem::PayloadEdited
            | AuditProblem::FieldsEdited
            | AuditProblem::BadSignature => f.seq,
        },
    };
    let decisions = attest::check_all(conn, keyring, verified_below)?;
    Ok(match chain {
        Ok(report) if decisions.is_empty() => Ok(report),
        Ok(_) => Err(AuditFailure {
            record: None,
            decisions,
        }),
        Err(record) => Err(AuditFailure {
            record: Some(record),
            decisions,
        }),
    })
}

/// Verifies every record, then every checkpoint (database and `file_cp`).
/// The records in one pass across every core ([`chain::pass`]).
fn verify_chain(
    conn: &Connection,
    keyring: &Keyring,
    file_cp: Option<&Checkpoint>,
) -> rusqlite::Result<Result<VerifyReport, VerifyFailure>> {
    let fail = |seq, problem| Ok(Err(VerifyFailure { seq, problem }));
    let mut checkpoints: Vec<Checkpoint> = {
        let mut stmt = conn
            .prepare("SELECT count, head_hash, at, signature FROM audit_checkpoints ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            Ok(Checkpoint {
                count: r.get(0)?,
                head_hash: r.get(1)?,
                at: r.get(2)?,
                signature: r.get(3)?,
            })
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    checkpoints.extend(file_cp.cloned());
    // The hashes the checkpoints vouch for, kept from the pass (not all of
    // them: a million records' hashes are 100 MB).
    let wanted = checkpoints.iter().map(|cp| cp.count).collect();
    let pass = chain::pass(conn, &keyring.verifying_key(), &wanted)?;
    if let Some((seq, problem)) = pass.failure {
        return fail(seq, problem);
    }
    let records = pass.records;
    for cp in &checkpoints {
        let at_seq = cp.count.max(1);
        if !keyring.verify(
            &checkpoint_message(cp.count, &cp.head_hash, cp.at),
            &cp.signature,
        ) {
            return fail(
                at_seq,
                AuditProblem::BadCheckpointSignature {
                    checkpoint_count: cp.count,
                },
            );
        }
        if cp.count > records {
            return fail(
                records + 1,
                AuditProblem::Truncated {
                    checkpoint_count: cp.count,
                    found: records,
                },
            );
        }
        let head = match cp.count {
            0 => Some(GENESIS_HASH),
            n => pass.hashes_at.get(&n).map(String::as_str),
        };
        if head != Some(cp.head_hash.as_str()) {
            return fail(
                at_seq,
                AuditProblem::CheckpointMismatch {
                    checkpoint_count: cp.count,
                },
            );
        }
    }
    Ok(Ok(VerifyReport {
        records,
        head_hash: pass.head_hash,
        checkpoints: checkpoints.len() as i64,
    }))
}

/// Records whose payload names `key = id` (e.g. every record about gate 12),
/// in seq order, each checked with its predecessor.
pub(crate) fn story(
    conn: &Connection,
    keyring: &Keyring,
    key: &str,
    id: i64,
) -> rusqlite::Result<Vec<CheckedRecord>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT seq, prev_hash, payload, payload_hash, actor, at, record_hash, signature
         FROM audit_log WHERE json_extract(payload, '$.{key}') = ?1 ORDER BY seq"
    ))?;
    let records = stmt
        .query_map([id], row_to_record)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    checked(conn, keyring, records)
}

/// Each record checked on its own: signature, hashes, and its link to the
/// record before it in the log (the signatures in batches, across cores).
fn checked(
    conn: &Connection,
    keyring: &Keyring,
    records: Vec<AuditRecord>,
) -> rusqlite::Result<Vec<CheckedRecord>> {
    // The record before each one: the one before it in the list when they
    // are neighbours in the log, else read.
    let mut read_prev = Vec::with_capacity(records.len());
    for (i, record) in records.iter().enumerate() {
        let listed = i.checked_sub(1).map(|j| &records[j]);
        read_prev.push(match listed {
            Some(p) if p.seq == record.seq - 1 => None,
            _ => record_at(conn, record.seq - 1)?,
        });
    }
    let pairs: Vec<(&AuditRecord, Option<&AuditRecord>)> = records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            let listed = i
                .checked_sub(1)
                .map(|j| &records[j])
                .filter(|p| p.seq == record.seq - 1);
            (record, listed.or(read_prev[i].as_ref()))
        })
        .collect();
    let problems = chain::check_records(keyring, &pairs);
    Ok(records
        .into_iter()
        .zip(problems)
        .map(|(record, problem)| CheckedRecord { record, problem })
        .collect())
}

/// Every audit record about one run or any of its gates, in log order, each
/// checked on its own: one scan of the log, however many gates the run has.
pub(crate) fn run_story(
    conn: &Connection,
    keyring: &Keyring,
    run: i64,
) -> rusqlite::Result<Vec<CheckedRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, prev_hash, payload, payload_hash, actor, at, record_hash, signature
         FROM audit_log
         WHERE json_extract(payload, '$.run_id') = ?1
            OR json_extract(payload, '$.gate_id') IN (SELECT id FROM gates WHERE run_id = ?1)
         ORDER BY seq",
    )?;
    let records = stmt
        .query_map([run], row_to_record)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    checked(conn, keyring, records)
}

impl crate::Store {
    /// Every audit record about one run or any of its gates (the run's
    /// "Why?"), in log order, each checked on its own: signature, hashes,
    /// and its link in the chain. One scan of the log.
    pub fn audit_story_of_run(
        &self,
        run: overseer_core::RunId,
    ) -> Result<Vec<CheckedRecord>, crate::StoreError> {
        run_story(&self.conn, &self.keyring, run.into())
            .map_err(|e| crate::StoreError::from_sqlite(e, &self.path))
    }
}

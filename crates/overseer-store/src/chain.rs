//! Checking audit records: one ([`check_record`]), or many at once on every
//! core ([`check_records`], [`pass`] over the whole log).
//!
//! A record is checked for its link to the record before it, its payload
//! hash, its record hash, then its signature, and the first of those that
//! fails names it. Many at once: the links and hashes per record, and the
//! signatures of a batch of records together ([`crate::batch`]: ed25519-dalek's
//! batch equation with the one key's terms summed into one).
//! A batch that fails is checked again one signature at a time, so that the
//! failure names the record whose signature is bad, exactly as checking one
//! by one would.
//!
//! Batches are spread across the machine's cores with `std::thread::scope`:
//! the work splits into independent chunks with nothing shared but the
//! result, which needs no thread pool (and no new dependency).
//!
//! A batch is checked as one random linear combination of its signatures'
//! equations (random 128-bit coefficients): a batch holding a signature that does not verify fails, except
//! with negligible probability, for anyone without the signing key. Only a
//! signature made with the key itself to tell the two checks apart (a
//! small-order component in its `R`) could pass a batch and fail alone.

use crate::audit::{
    is_hex_of, record_digest, row_to_record, AuditProblem, AuditRecord, GENESIS_HASH,
};
use crate::Keyring;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::{mpsc, Mutex};

/// Signatures verified together. Larger batches verify faster per
/// signature (the multiscalar multiplication amortises better: on a 2-core
/// machine one core verified 35k/s in batches of 64, 45k/s of 512, 58k/s of
/// 4,096, against 17k/s one by one, with ed25519-dalek's `verify_batch`;
/// summing the one key's terms ([`crate::batch`]) took `audit verify` of a
/// million records from 14.1 to 9.3 CPU-seconds) but cost more to redo one by one when
/// one of them is bad (a tampered log: 4,096 alone take about 0.2 s).
pub(crate) const BATCH: usize = 4096;

/// How many threads verification uses: one per core.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// The signature, if its text is one at all.
fn parse_signature(hex_text: &str) -> Option<Signature> {
    let mut bytes = [0u8; 64];
    hex::decode_to_slice(hex_text, &mut bytes).ok()?;
    Some(Signature::from_bytes(&bytes))
}

/// Whether the signature over `record_hash` verifies, one signature alone.
pub(crate) fn signature_verifies(key: &VerifyingKey, record: &AuditRecord) -> bool {
    parse_signature(&record.signature)
        .is_some_and(|sig| key.verify(record.record_hash.as_bytes(), &sig).is_ok())
}

/// What is wrong with a record's payload hash or record hash, in that order.
pub(crate) fn hash_problem(record: &AuditRecord) -> Option<AuditProblem> {
    let payload: [u8; 32] = Sha256::digest(record.payload.as_bytes()).into();
    if !is_hex_of(&payload, &record.payload_hash) {
        return Some(AuditProblem::PayloadEdited);
    }
    let fields = record_digest(
        record.seq,
        &record.prev_hash,
        &record.payload_hash,
        &record.actor,
        record.at,
    );
    if !is_hex_of(&fields, &record.record_hash) {
        return Some(AuditProblem::FieldsEdited);
    }
    None
}

/// Each record's problem apart from its link (hashes, then signature), on
/// this thread: the signatures of the records whose hashes hold are
/// verified in batches, and a failing batch one by one.
fn check_unlinked_here(key: &VerifyingKey, records: &[&AuditRecord]) -> Vec<Option<AuditProblem>> {
    let mut problems: Vec<Option<AuditProblem>> = records.iter().map(|r| hash_problem(r)).collect();
    // The records whose signature is still to be checked, with it parsed.
    let mut pending: Vec<(usize, Signature)> = Vec::with_capacity(BATCH);
    let flush = |pending: &mut Vec<(usize, Signature)>, problems: &mut [Option<AuditProblem>]| {
        if pending.is_empty() {
            return;
        }
        let messages: Vec<&[u8]> = pending
            .iter()
            .map(|(i, _)| records[*i].record_hash.as_bytes())
            .collect();
        let signatures: Vec<Signature> = pending.iter().map(|(_, s)| *s).collect();
        if !crate::batch::verify_one_key(key, &messages, &signatures) {
            // Which one: each alone, exactly as the one-by-one check does.
            for (i, sig) in pending.iter() {
                if key.verify(records[*i].record_hash.as_bytes(), sig).is_err() {
                    problems[*i] = Some(AuditProblem::BadSignature);
                }
            }
        }
        pending.clear();
    };
    for (i, record) in records.iter().enumerate() {
        if problems[i].is_some() {
            continue;
        }
        match parse_signature(&record.signature) {
            Some(sig) => pending.push((i, sig)),
            None => problems[i] = Some(AuditProblem::BadSignature),
        }
        if pending.len() == BATCH {
            flush(&mut pending, &mut problems);
        }
    }
    flush(&mut pending, &mut problems);
    problems
}

/// Each record's problem apart from its link (hashes, then signature),
/// spread across every core when there are enough of them to be worth it.
pub(crate) fn check_unlinked(
    key: &VerifyingKey,
    records: &[&AuditRecord],
) -> Vec<Option<AuditProblem>> {
    let threads = threads();
    if threads < 2 || records.len() < 2 * BATCH {
        return check_unlinked_here(key, records);
    }
    let per_thread = records.len().div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = records
            .chunks(per_thread)
            .map(|part| s.spawn(move || check_unlinked_here(key, part)))
            .collect();
        parts
            .into_iter()
            .flat_map(|p| match p.join() {
                Ok(problems) => problems,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// The first record of `chunk` (in order) with a problem apart from its
/// link, and the problem.
pub(crate) fn first_unlinked_problem(
    key: &VerifyingKey,
    chunk: &[AuditRecord],
) -> Option<(i64, AuditProblem)> {
    let refs: Vec<&AuditRecord> = chunk.iter().collect();
    check_unlinked_here(key, &refs)
        .into_iter()
        .zip(chunk)
        .find_map(|(p, r)| p.map(|p| (r.seq, p)))
}

/// Checks one record: its payload hash, its record hash, its signature, and
/// its link to the record before it (`prev`, or genesis for seq 1).
pub(crate) fn check_record(
    keyring: &Keyring,
    record: &AuditRecord,
    prev: Option<&AuditRecord>,
) -> Option<AuditProblem> {
    link_problem(record, prev).or_else(|| {
        hash_problem(record).or_else(|| {
            (!signature_verifies(&keyring.verifying_key(), record))
                .then_some(AuditProblem::BadSignature)
        })
    })
}

/// What is wrong with a record's link to the record before it (`prev`, or
/// genesis for seq 1), if anything.
fn link_problem(record: &AuditRecord, prev: Option<&AuditRecord>) -> Option<AuditProblem> {
    let expected_prev = match (record.seq, prev) {
        (1, _) => Some(GENESIS_HASH),
        (_, Some(p)) if p.seq == record.seq - 1 => Some(p.record_hash.as_str()),
        _ => None,
    };
    match expected_prev {
        None => Some(AuditProblem::SeqGap {
            found: prev.map_or(0, |p| p.seq),
        }),
        Some(h) if h != record.prev_hash => Some(AuditProblem::ChainBroken),
        Some(_) => None,
    }
}

/// Many records checked as [`check_record`] checks each with the record
/// before it, with the same result, but their signatures verified in
/// batches across every core.
pub(crate) fn check_records(
    keyring: &Keyring,
    pairs: &[(&AuditRecord, Option<&AuditRecord>)],
) -> Vec<Option<AuditProblem>> {
    let links: Vec<Option<AuditProblem>> = pairs
        .iter()
        .map(|(record, prev)| link_problem(record, *prev))
        .collect();
    let linked: Vec<&AuditRecord> = pairs
        .iter()
        .zip(&links)
        .filter(|(_, link)| link.is_none())
        .map(|((record, _), _)| *record)
        .collect();
    let mut rest = check_unlinked(&keyring.verifying_key(), &linked).into_iter();
    links
        .into_iter()
        .map(|link| link.or_else(|| rest.next().flatten()))
        .collect()
}

/// What one pass over the whole log found.
pub(crate) struct Pass {
    /// Records read, all of them verified (when there is no failure).
    pub records: i64,
    /// The last record's hash (genesis for an empty log).
    pub head_hash: String,
    /// The hash of the record at each position asked for (checkpoints').
    pub hashes_at: HashMap<i64, String>,
    /// The first bad record and what is wrong with it.
    pub failure: Option<(i64, AuditProblem)>,
}

/// Checks the whole log in one pass: this thread reads the records in seq
/// order and checks each one's place (seq, link to the one before), while
/// one thread per core checks the hashes and signatures of the chunks it
/// hands them. The first bad record in seq order is named, with the first of
/// its checks that fails, as checking one record after the other would.
pub(crate) fn pass(
    conn: &Connection,
    key: &VerifyingKey,
    wanted: &HashSet<i64>,
) -> rusqlite::Result<Pass> {
    let threads = threads();
    // The lowest seq found bad so far: nothing after it needs checking.
    let bad_from = AtomicI64::new(i64::MAX);
    let (to_workers, chunks) = mpsc::sync_channel::<Vec<AuditRecord>>(2 * threads);
    let chunks = Mutex::new(chunks);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut first: Option<(i64, AuditProblem)> = None;
                    loop {
                        let next = match chunks.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => break,
                        };
                        let Ok(chunk) = next else { break };
                        let starts_after_bad =
                            chunk.first().is_none_or(|r| r.seq > bad_from.load(Relaxed));
                        if starts_after_bad {
                            continue;
                        }
                        if let Some((seq, problem)) = first_unlinked_problem(key, &chunk) {
                            bad_from.fetch_min(seq, Relaxed);
                            if first.as_ref().is_none_or(|(f, _)| seq < *f) {
                                first = Some((seq, problem));
                            }
                        }
                    }
                    first
                })
            })
            .collect();
        let read = read_in_order(conn, wanted, &bad_from, &to_workers);
        // The workers finish the chunks they were sent, then stop.
        drop(to_workers);
        let mut failure: Option<(i64, AuditProblem)> = None;
        for w in workers {
            let found = match w.join() {
                Ok(found) => found,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            failure = earliest(failure, found);
        }
        let mut pass = read?;
        pass.failure = earliest(pass.failure, failure);
        Ok(pass)
    })
}

/// The earlier of two failures (by seq).
fn earliest(
    a: Option<(i64, AuditProblem)>,
    b: Option<(i64, AuditProblem)>,
) -> Option<(i64, AuditProblem)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Records handed to a worker at a time: one batch of signatures.
const CHUNK: usize = BATCH;

/// Reads the log in seq order, checks each record's place and sends the
/// records on in chunks. Stops at the first record out of place, or once a
/// worker found a bad record before the one it reached.
fn read_in_order(
    conn: &Connection,
    wanted: &HashSet<i64>,
    bad_from: &AtomicI64,
    to_workers: &mpsc::SyncSender<Vec<AuditRecord>>,
) -> rusqlite::Result<Pass> {
    let mut prev_hash = GENESIS_HASH.to_owned();
    let mut expected_seq = 1;
    let mut hashes_at = HashMap::new();
    let mut failure = None;
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut stmt = conn.prepare(
        "SELECT seq, prev_hash, payload, payload_hash, actor, at, record_hash, signature
         FROM audit_log ORDER BY seq",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let r = row_to_record(row)?;
        if r.seq != expected_seq {
            failure = Some((expected_seq, AuditProblem::SeqGap { found: r.seq }));
            break;
        }
        if r.prev_hash != prev_hash {
            failure = Some((r.seq, AuditProblem::ChainBroken));
            break;
        }
        if r.seq > bad_from.load(Relaxed) {
            break;
        }
        prev_hash.clone_from(&r.record_hash);
        if wanted.contains(&r.seq) {
            hashes_at.insert(r.seq, r.record_hash.clone());
        }
        chunk.push(r);
        expected_seq += 1;
        if chunk.len() == CHUNK && to_workers.send(std::mem::take(&mut chunk)).is_err() {
            break;
        }
    }
    if !chunk.is_empty() {
        // Only fails when every worker is gone (they panicked: join says so).
        let _ = to_workers.send(chunk);
    }
    Ok(Pass {
        records: expected_seq - 1,
        head_hash: prev_hash,
        hashes_at,
        failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::seal;
    use crate::Keyring;

    fn records(keyring: &Keyring, n: i64) -> Vec<AuditRecord> {
        let mut out: Vec<AuditRecord> = Vec::new();
        for i in 0..n {
            let (seq, prev) = out
                .last()
                .map_or((0, crate::audit::GENESIS_HASH.to_owned()), |r| {
                    (r.seq, r.record_hash.clone())
                });
            out.push(seal(
                keyring,
                seq,
                &prev,
                &serde_json::json!({"type": "note", "i": i}),
                "engine",
                i,
            ));
        }
        out
    }

    /// Batches and threads name the same records, with the same problems,
    /// as checking each record alone.
    #[test]
    fn batches_name_each_bad_record_as_one_by_one_does() {
        let dir = tempfile::tempdir().expect("tempdir");
        let keyring = Keyring::load_or_create(dir.path()).expect("key");
        let other = Keyring::load_or_create(&dir.path().join("other")).expect("key");
        let mut rs = records(&keyring, 3 * BATCH as i64 + 7);
        // A signature of another key over the right hash, one that is not
        // hex, a payload edited, a field edited: across several batches.
        rs[5].signature = other.sign(rs[5].record_hash.as_bytes());
        rs[BATCH + 1].signature = "zz".repeat(64);
        rs[2 * BATCH + 3].payload.push(' ');
        rs[3 * BATCH].actor = "user:mallory".into();
        let last = rs.len() - 1;
        rs[last].signature = rs[0].signature.clone();
        let refs: Vec<&AuditRecord> = rs.iter().collect();
        let batched = check_unlinked(&keyring.verifying_key(), &refs);
        let alone: Vec<Option<AuditProblem>> = rs
            .iter()
            .map(|r| {
                hash_problem(r).or_else(|| {
                    (!signature_verifies(&keyring.verifying_key(), r))
                        .then_some(AuditProblem::BadSignature)
                })
            })
            .collect();
        assert_eq!(batched, alone);
        let named: Vec<(usize, AuditProblem)> = batched
            .into_iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| (i, p)))
            .collect();
        assert_eq!(
            named,
            vec![
                (5, AuditProblem::BadSignature),
                (BATCH + 1, AuditProblem::BadSignature),
                (2 * BATCH + 3, AuditProblem::PayloadEdited),
                (3 * BATCH, AuditProblem::FieldsEdited),
                (last, AuditProblem::BadSignature),
            ]
        );
        assert_eq!(
            first_unlinked_problem(&keyring.verifying_key(), &rs[6..]),
            Some(((BATCH + 2) as i64, AuditProblem::BadSignature))
        );
    }
}

//! `make bench`: audit appends through the real store path beside the same
//! crypto and inserts in a bare loop, measured in the same run, and the latency
//! of a single gate decision commit. Prints figures; asserts nothing (the
//! machine is shared and noisy: compare the ratio, not the absolute numbers).

use ed25519_dalek::{Signer, SigningKey};
use overseer_core::{Actor, RunEvent};
use overseer_store::{Keyring, Store, DB_FILE};
use rusqlite::params;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

const RECORDS: i64 = 6_000;

fn store_in(dir: &std::path::Path) -> Store {
    let keyring = Keyring::load_or_create(&dir.join("config")).expect("keyring");
    Store::open(&dir.join("data").join(DB_FILE), keyring).expect("store")
}

fn payload(i: i64) -> serde_json::Value {
    json!({"type": "run_transition", "run_id": i % 97, "from": "running", "to": "pending_review", "event": "finish", "note": null})
}

/// Records/s through `Store::write` + `append_audit`, `batch` records per commit.
fn through_store(batch: i64) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = store_in(dir.path());
    let actor = Actor::Engine;
    let start = Instant::now();
    let mut i = 0;
    while i < RECORDS {
        store
            .write(|tx| {
                for k in 0..batch {
                    tx.append_audit(&actor, &payload(i + k), 1_000 + i + k)?;
                }
                Ok(())
            })
            .expect("append");
        i += batch;
    }
    let rate = RECORDS as f64 / start.elapsed().as_secs_f64();
    assert!(store.verify_audit().expect("read").is_ok());
    rate
}

/// The same hashing, signing and inserts, hand-rolled on a bare connection.
fn bare_loop(batch: i64) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut conn = rusqlite::Connection::open(dir.path().join("bare.db")).expect("open");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.pragma_update(None, "synchronous", "NORMAL")
        .expect("sync");
    conn.execute_batch(
        "CREATE TABLE log(seq INTEGER PRIMARY KEY, prev_hash TEXT, payload TEXT, payload_hash TEXT, actor TEXT, at INTEGER, record_hash TEXT, signature TEXT) STRICT",
    )
    .expect("table");
    let key = SigningKey::generate(&mut rand_core::OsRng);
    let mut prev = "0".repeat(64);
    let start = Instant::now();
    let mut i = 0;
    while i < RECORDS {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("tx");
        {
            let mut ins = tx
                .prepare_cached("INSERT INTO log VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
                .expect("prepare");
            for k in 0..batch {
                let seq = i + k + 1;
                let body = payload(i + k).to_string();
                let ph = hex::encode(Sha256::digest(body.as_bytes()));
                let at = 1_000 + i + k;
                let rh = hex::encode(Sha256::digest(
                    format!("overseer-audit-v1\n{seq}\n{prev}\n{ph}\nengine\n{at}").as_bytes(),
                ));
                let sig = hex::encode(key.sign(rh.as_bytes()).to_bytes());
                ins.execute(params![seq, prev, body, ph, "engine", at, rh, sig])
                    .expect("insert");
                prev = rh;
            }
        }
        tx.commit().expect("commit");
        i += batch;
    }
    RECORDS as f64 / start.elapsed().as_secs_f64()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Latency of one gate decision commit (CAS + history + audit record).
fn decision_latency(n: usize) -> (Duration, Duration, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = store_in(dir.path());
    let a = Actor::Engine;
    let gates: Vec<overseer_core::GateId> = store
        .write(|tx| {
            let ws = tx.ensure_workspace("bench", "/tmp/bench", &a, 0)?;
            let mut gates = Vec::new();
            for i in 0..n {
                let task = tx.create_task(ws, &format!("task {i}"), "p", &a, 0)?;
                let run = tx.create_run(task, "demo", &a, 0)?;
                tx.transition(run, RunEvent::Claim, None, &a, 0)?;
                tx.transition(run, RunEvent::Start, None, &a, 0)?;
                tx.transition(
                    run,
                    RunEvent::Finish {
                        auto_advance: false,
                    },
                    None,
                    &a,
                    0,
                )?;
                gates.push(tx.run(run)?.pending_gate.map(|g| g.id).unwrap_or_default());
            }
            Ok(gates)
        })
        .expect("setup");
    let user = Actor::cli();
    let mut times: Vec<Duration> = gates
        .iter()
        .map(|&g| {
            let t = Instant::now();
            store
                .write(|tx| tx.decide_gate(g, "approve", None, &user, 1))
                .expect("decide");
            t.elapsed()
        })
        .collect();
    times.sort();
    (
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times[times.len() - 1],
    )
}

fn main() {
    println!("audit appends, {RECORDS} records each (records/s, higher is better)");
    println!(
        "{:>6}  {:>14}  {:>14}  {:>12}",
        "batch", "store path", "bare loop", "store/bare"
    );
    let mut ratios = Vec::new();
    for batch in [1, 8, 64] {
        // Warm the page cache and allocator once, then measure.
        let _ = bare_loop(batch);
        let s = through_store(batch);
        let b = bare_loop(batch);
        println!("{batch:>6}  {s:>14.0}  {b:>14.0}  {:>12.2}", s / b);
        ratios.push(format!(
            "\"audit_append_ratio_vs_bare_batch_{batch}\": {:.3}",
            s / b
        ));
    }
    let (p50, p99, max) = decision_latency(1_000);
    println!();
    println!("gate decision commit (1000 decisions, one transaction each)");
    println!(
        "  p50 {:.3} ms   p99 {:.3} ms   max {:.3} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
    // For `make bench`'s summary (scripts/bench-summary.mjs): the headline
    // ratio is one record per append (batch 1).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let json = format!(
        "{{{}, \"gate_decision_commit_p99_ms\": {:.3}, \"gate_decision_commit_p50_ms\": {:.3}}}\n",
        ratios.join(", "),
        p99.as_secs_f64() * 1e3,
        p50.as_secs_f64() * 1e3
    );
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join("audit.json"), json))
    {
        eprintln!("audit bench: cannot write audit.json: {e}");
    }
}

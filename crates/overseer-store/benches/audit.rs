//! `make bench`: audit appends through the real store path beside the same
//! crypto and inserts in a bare loop, measured in the same run, the latency
//! of a single gate decision commit, and `audit verify` of a million records
//! (seeded through the store) beside checking them one by one on one core,
//! as verification did before it batched signatures across cores. Prints
//! figures; asserts nothing (the machine is shared and noisy: compare the
//! ratio, not the absolute numbers). `AUDIT_VERIFY_RECORDS` sets how many
//! records the verification bench seeds.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use overseer_core::audit::AuditPayload;
use overseer_core::{Actor, RunEvent, RunId};
use overseer_store::{Keyring, Store, DB_FILE};
use rusqlite::params;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

const RECORDS: i64 = 6_000;

fn store_in(dir: &std::path::Path) -> Store {
    let keyring = Keyring::load_or_create(&dir.join("config")).expect("keyring");
    Store::open(&dir.join("data").join(DB_FILE), keyring).expect("store")
}

fn payload(i: i64) -> AuditPayload {
    AuditPayload::RunTransition {
        run_id: RunId(i % 97),
        from: "running".into(),
        to: "pending_review".into(),
        event: "finish".into(),
        note: None,
        device: None,
    }
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
                let body = payload(i + k).to_value().to_string();
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

/// A log of `n` records written through the store (10,000 per commit),
/// with a checkpoint at its end.
fn seeded(dir: &std::path::Path, n: i64) -> Store {
    let mut store = store_in(dir);
    let actor = Actor::Engine;
    let mut i = 0;
    while i < n {
        let batch = (n - i).min(10_000);
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
    store.checkpoint(1_000 + n).expect("checkpoint");
    store
}

/// CPU seconds this process has used, all threads (user + system, from
/// /proc/self/stat in ticks of 1/100 s): on a machine shared with other work,
/// CPU over cores says what the wall time would be with the cores to itself.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces) in parentheses.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return f64::NAN;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

/// Records/s of `Store::verify_audit` (the chain, its checkpoints and the
/// decision rows: what `overseer audit verify` runs), and how long it took.
fn verify_through_store(store: &Store) -> (f64, Duration, f64) {
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let verdict = store.verify_audit().expect("read");
    let took = start.elapsed();
    let cpu = cpu_seconds() - cpu;
    match verdict {
        Ok(report) => (report.records as f64 / took.as_secs_f64(), took, cpu),
        Err(e) => {
            eprintln!("audit bench: the seeded log does not verify: {e}");
            (f64::NAN, took, cpu)
        }
    }
}

/// Records/s of the one-by-one baseline on the same file: each record read
/// in seq order, its link, payload hash and record hash checked, and its
/// signature verified alone, on one core (verification before batching).
fn verify_one_by_one(db: &std::path::Path, public_key_hex: &str) -> (f64, Duration, f64) {
    let mut key = [0u8; 32];
    hex::decode_to_slice(public_key_hex, &mut key).expect("public key");
    let key = VerifyingKey::from_bytes(&key).expect("public key");
    let conn = rusqlite::Connection::open(db).expect("open");
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let mut stmt = conn
        .prepare(
            "SELECT seq, prev_hash, payload, payload_hash, actor, at, record_hash, signature
             FROM audit_log ORDER BY seq",
        )
        .expect("prepare");
    let mut rows = stmt.query([]).expect("query");
    let mut prev = "0".repeat(64);
    let (mut n, mut bad) = (0i64, 0i64);
    while let Some(r) = rows.next().expect("row") {
        let seq: i64 = r.get(0).expect("seq");
        let prev_hash: String = r.get(1).expect("prev");
        let body: String = r.get(2).expect("payload");
        let payload_hash: String = r.get(3).expect("payload hash");
        let actor: String = r.get(4).expect("actor");
        let at: i64 = r.get(5).expect("at");
        let record_hash: String = r.get(6).expect("record hash");
        let signature: String = r.get(7).expect("signature");
        let ok = seq == n + 1
            && prev_hash == prev
            && hex::encode(Sha256::digest(body.as_bytes())) == payload_hash
            && hex::encode(Sha256::digest(
                format!("overseer-audit-v1\n{seq}\n{prev_hash}\n{payload_hash}\n{actor}\n{at}")
                    .as_bytes(),
            )) == record_hash
            && hex::decode(&signature)
                .ok()
                .and_then(|b| Signature::from_slice(&b).ok())
                .is_some_and(|sig| key.verify(record_hash.as_bytes(), &sig).is_ok());
        bad += i64::from(!ok);
        prev = record_hash;
        n += 1;
    }
    let took = start.elapsed();
    let cpu = cpu_seconds() - cpu;
    if bad > 0 {
        eprintln!("audit bench: {bad} records failed the one-by-one check");
    }
    (n as f64 / took.as_secs_f64(), took, cpu)
}

fn main() {
    let verify_records: i64 = std::env::var("AUDIT_VERIFY_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("audit verify, {verify_records} records seeded through the store ({cores} cores)");
    let dir = tempfile::tempdir().expect("tempdir");
    let seed_start = Instant::now();
    let store = seeded(dir.path(), verify_records);
    println!("  seeded in {:.1} s", seed_start.elapsed().as_secs_f64());
    // Once each to warm the page cache, then measured.
    let _ = verify_one_by_one(store.path(), &store_public_key(dir.path()));
    let (base_rate, base_took, base_cpu) =
        verify_one_by_one(store.path(), &store_public_key(dir.path()));
    let (rate, took, cpu) = verify_through_store(&store);
    println!(
        "  {:>28}  {:>12.0} records/s  {:>7.2} s  {:>7.2} CPU s",
        "batched, every core",
        rate,
        took.as_secs_f64(),
        cpu
    );
    println!(
        "  {:>28}  {:>12.0} records/s  {:>7.2} s  {:>7.2} CPU s",
        "one by one, one core",
        base_rate,
        base_took.as_secs_f64(),
        base_cpu
    );
    println!("  {:>28}  {:>12.2}", "batched/one-by-one", rate / base_rate);
    drop(store);
    drop(dir);
    println!();
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
        "{{{}, \"gate_decision_commit_p99_ms\": {:.3}, \"gate_decision_commit_p50_ms\": {:.3}, \"audit_verify_records\": {verify_records}, \"audit_verify_records_per_s\": {}, \"audit_verify_one_by_one_records_per_s\": {}, \"audit_verify_s\": {:.3}, \"audit_verify_one_by_one_s\": {:.3}, \"audit_verify_cpu_s\": {}, \"audit_verify_one_by_one_cpu_s\": {}}}\n",
        ratios.join(", "),
        p99.as_secs_f64() * 1e3,
        p50.as_secs_f64() * 1e3,
        figure(rate),
        figure(base_rate),
        took.as_secs_f64(),
        base_took.as_secs_f64(),
        figure2(cpu),
        figure2(base_cpu)
    );
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join("audit.json"), json))
    {
        eprintln!("audit bench: cannot write audit.json: {e}");
    }
}

/// The public key of the keyring the store in `dir` signs with.
fn store_public_key(dir: &std::path::Path) -> String {
    Keyring::load_or_create(&dir.join("config"))
        .expect("keyring")
        .public_key_hex()
}

/// A figure for the JSON: null when it could not be measured.
fn figure(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        "null".to_owned()
    }
}

/// A figure with two decimals for the JSON: null when it could not be measured.
fn figure2(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "null".to_owned()
    }
}

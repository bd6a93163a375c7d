//! Group commit: many threads writing at once share transactions, and yet
//! every write lands (or fails) on its own, every caller gets its own
//! outcome, and the audit log stays signed and chained record by record.

use crate::common;

use common::Fixture;
use overseer_core::{Actor, GateKind, GateOption, RunEvent};
use overseer_store::{StoreError, Writer};
use serde_json::json;
use std::sync::{Arc, Barrier};

const THREADS: usize = 8;
const WRITES: usize = 40;

/// `THREADS` threads, released together, each making `WRITES` writes of
/// `write(thread, i)`; each thread's results in order.
fn hammer<T: Send + 'static>(
    writer: &Arc<Writer>,
    write: impl Fn(&Writer, usize, usize) -> Result<T, StoreError> + Send + Sync + 'static,
) -> Vec<Vec<Result<T, StoreError>>> {
    let start = Arc::new(Barrier::new(THREADS));
    let write = Arc::new(write);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (writer, start, write) = (writer.clone(), start.clone(), write.clone());
            std::thread::spawn(move || {
                start.wait();
                (0..WRITES)
                    .map(|i| write(&writer, t, i))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a writer thread panicked"))
        .collect()
}

fn record_count(f: &Fixture) -> i64 {
    f.store
        .verify_audit()
        .expect("readable")
        .expect("verifies")
        .records
}

#[test]
fn concurrent_writers_all_land_each_record_signed_and_chained() {
    let f = Fixture::new();
    let writer = f.store.writer();
    let results = hammer(&writer, |w, t, i| {
        w.write(|tx| {
            tx.append_untyped_audit(
                &Actor::cli(),
                &json!({"type": "test", "thread": t, "i": i}),
                1_000,
            )
        })
    });
    let mut seqs: Vec<i64> = results
        .into_iter()
        .flatten()
        .map(|r| r.expect("every write succeeds"))
        .collect();
    seqs.sort_unstable();
    let n = (THREADS * WRITES) as i64;
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>(), "one seq each, no gap");
    // The whole chain verifies: every signature, every link.
    assert_eq!(record_count(&f), n);
    // Each thread's records are in its own order in the chain.
    let records = f.store.audit_records(1, n).expect("read");
    for t in 0..THREADS {
        let mine: Vec<i64> = records
            .iter()
            .filter_map(|r| {
                let p: serde_json::Value = serde_json::from_str(&r.payload).ok()?;
                (p["thread"] == t).then(|| p["i"].as_i64()).flatten()
            })
            .collect();
        assert_eq!(mine, (0..WRITES as i64).collect::<Vec<_>>());
    }
    let (batches, writes) = writer.committed();
    assert_eq!(writes, n as u64);
    assert!(batches <= writes);
}

#[test]
fn writers_share_transactions_when_they_overlap() {
    // Batches form only when writers overlap, which the scheduler decides:
    // try a few rounds; one that shares a transaction is enough.
    let f = Fixture::new();
    let writer = f.store.writer();
    let shared = (0..20).any(|_| {
        let before = writer.committed();
        hammer(&writer, |w, _, i| {
            w.write(|tx| {
                tx.append_untyped_audit(&Actor::Engine, &json!({"type": "test", "i": i}), 1)
            })
        });
        let after = writer.committed();
        after.1 - before.1 > after.0 - before.0
    });
    assert!(shared, "no two overlapping writes ever shared a commit");
    record_count(&f);
}

#[test]
fn a_failing_write_loses_nothing_of_the_others_and_gets_its_own_error() {
    let f = Fixture::new();
    let writer = f.store.writer();
    // Every third write appends a record, then fails: its record must go.
    let results = hammer(&writer, |w, t, i| {
        w.write(|tx| {
            let seq = tx.append_untyped_audit(
                &Actor::cli(),
                &json!({"type": "test", "thread": t, "i": i}),
                1_000,
            )?;
            if i % 3 == 0 {
                return Err(StoreError::InvalidInput(format!("writer {t}/{i} fails")));
            }
            Ok(seq)
        })
    });
    let mut kept = 0;
    for (t, thread) in results.into_iter().enumerate() {
        for (i, r) in thread.into_iter().enumerate() {
            match r {
                Ok(_) => {
                    assert_ne!(i % 3, 0, "writer {t}/{i} should have failed");
                    kept += 1;
                }
                Err(StoreError::InvalidInput(m)) => {
                    assert_eq!(i % 3, 0);
                    assert_eq!(m, format!("writer {t}/{i} fails"), "its own error");
                }
                Err(other) => panic!("writer {t}/{i}: unexpected {other}"),
            }
        }
    }
    // What failed left no record and no gap; what succeeded is all there.
    assert_eq!(record_count(&f), kept);
    let records = f.store.audit_records(1, kept).expect("read");
    assert!(records.iter().all(|r| {
        let p: serde_json::Value = serde_json::from_str(&r.payload).unwrap_or_default();
        p["i"].as_i64().is_some_and(|i| i % 3 != 0)
    }));
}

#[test]
fn concurrent_decisions_each_decide_once_with_a_verified_record() {
    let mut f = Fixture::new();
    let a = Actor::Engine;
    let gates: Vec<overseer_core::GateId> = f
        .store
        .write(|tx| {
            let ws = tx.ensure_workspace("demo", "/tmp/demo", &a, 0)?;
            let mut gates = Vec::new();
            for i in 0..THREADS {
                let task = tx.create_task(ws, &format!("task {i}"), "p", &a, 0)?;
                let run = tx.create_run(task, "demo", &a, 0)?;
                tx.transition(run, RunEvent::Claim, None, &a, 0)?;
                tx.transition(run, RunEvent::Start, None, &a, 0)?;
                for _ in 0..WRITES {
                    gates.push(tx.open_gate(
                        run,
                        "Edit a file",
                        &[GateOption::new("yes", "Yes"), GateOption::new("no", "No")],
                        &overseer_core::GateBody::empty(GateKind::ToolCall),
                        &Actor::Agent("demo".into()),
                        0,
                    )?);
                }
            }
            Ok(gates)
        })
        .expect("seed");
    let gates = Arc::new(gates);
    let writer = f.store.writer();
    // Two threads race for each gate: exactly one decision wins.
    let g = gates.clone();
    let results = hammer(&writer, move |w, t, i| {
        let gate = g[(t / 2) * WRITES + i];
        w.write(|tx| tx.decide_gate(gate, "yes", None, &Actor::Engine, 5))
    });
    let (mut won, mut lost) = (0, 0);
    for r in results.into_iter().flatten() {
        match r {
            Ok(_) => won += 1,
            Err(StoreError::AlreadyDecided { .. }) => lost += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(won, THREADS / 2 * WRITES);
    assert_eq!(lost, THREADS / 2 * WRITES);
    for gate in gates.iter().take(THREADS / 2 * WRITES) {
        assert!(f.store.gate(*gate).expect("gate").decision.is_some());
        assert!(f
            .store
            .gate_decision_problems(*gate)
            .expect("read")
            .is_empty());
    }
    record_count(&f);
}

#[test]
fn a_panicking_writer_is_rolled_back_and_the_store_goes_on() {
    let f = Fixture::new();
    let writer = f.store.writer();
    let w = writer.clone();
    let panicked = std::thread::spawn(move || {
        w.write(|tx| -> Result<(), StoreError> {
            tx.append_untyped_audit(&Actor::Engine, &json!({"type": "doomed"}), 1)?;
            panic!("a bug in a write");
        })
    })
    .join();
    assert!(panicked.is_err());
    writer
        .write(|tx| tx.append_untyped_audit(&Actor::Engine, &json!({"type": "after"}), 2))
        .expect("the store still writes");
    assert_eq!(record_count(&f), 1);
}

#[test]
fn a_write_is_visible_to_reads_once_it_returns() {
    let f = Fixture::new();
    let writer = f.store.writer();
    for i in 1..=20 {
        writer
            .write(|tx| {
                tx.append_untyped_audit(&Actor::Engine, &json!({"type": "test", "i": i}), i)
            })
            .expect("append");
        assert_eq!(f.store.audit_len().expect("read"), i);
    }
}

/// The WAL is copied back by the writer's checkpointer, not inside a
/// commit: after many commits it has run, the WAL stays bounded, and
/// everything written reads back and verifies.
#[test]
fn the_checkpointer_copies_the_wal_back_while_writers_go_on() {
    let f = Fixture::new();
    let writer = f.store.writer();
    let wal = {
        let mut p = f.store.path().as_os_str().to_owned();
        p.push("-wal");
        std::path::PathBuf::from(p)
    };
    let mut largest = 0;
    for i in 1..=2_000 {
        writer
            .write(|tx| {
                tx.append_untyped_audit(
                    &Actor::Engine,
                    &json!({"type": "test", "i": i, "pad": "x".repeat(2_000)}),
                    i,
                )
            })
            .expect("append");
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while writer.checkpoints() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(writer.checkpoints() > 0, "no checkpoint ran");
    // 2,000 commits of ~3 KB records with no pause: a WAL never checkpointed
    // holds them all (~25 MB); the checkpointer alone never catches up with
    // the last frame, so past 8 MB the writer checkpoints it itself and it
    // starts over.
    assert!(
        largest < 12 * 1024 * 1024,
        "the WAL grew to {largest} bytes"
    );
    assert_eq!(record_count(&f), 2_000);
}

#[test]
fn many_openers_of_one_fresh_database_all_open_it_bound_to_one_key() {
    // The engine and CLI commands starting together on a data dir nobody
    // has used: one makes the key, migrates and binds the key; the others
    // wait or find them made, and none fails (a lost race on the key's row
    // failed with "UNIQUE constraint failed: meta.key").
    for round in 0..20 {
        let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
        let start = Arc::new(Barrier::new(THREADS));
        let openers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (dir, start) = (dir.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let store = common::try_open(&dir)?;
                    store.db_id().map_err(|e| e.to_string())
                })
            })
            .collect();
        let ids: Vec<String> = openers
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("an opener panicked")
                    .unwrap_or_else(|e| panic!("round {round}: an open failed: {e}"))
            })
            .collect();
        assert!(
            ids.windows(2).all(|w| w[0] == w[1]),
            "round {round}: one database, one id: {ids:?}"
        );
        let store = common::open(&dir);
        assert_eq!(
            store
                .verify_audit()
                .expect("readable")
                .expect("verifies with the one key")
                .records,
            0
        );
    }
}

/// The writer tells a write from another connection (someone with the
/// database file) from its own: the engine looks for forged rows only after
/// one, so a fleet's waiters cost nothing while nobody else writes.
#[test]
fn the_writer_tells_another_connections_commit_from_its_own() {
    let f = Fixture::new();
    let writer = f.store.writer();
    assert!(
        writer.written_elsewhere().expect("read"),
        "the first look looks"
    );
    assert!(!writer.written_elsewhere().expect("read"), "nothing since");
    for i in 0..3 {
        writer
            .write(|tx| {
                tx.append_untyped_audit(&Actor::cli(), &json!({"type": "test", "i": i}), 1_000)
            })
            .expect("write");
    }
    assert!(
        !writer.written_elsewhere().expect("read"),
        "the writer's own commits are not another's"
    );
    let outside = rusqlite::Connection::open(f.db_path()).expect("open the file");
    outside
        .busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    outside
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS outside_mark(x); INSERT INTO outside_mark VALUES (1);",
        )
        .expect("a write from outside");
    assert!(
        writer.written_elsewhere().expect("read"),
        "the outside commit is seen"
    );
    assert!(!writer.written_elsewhere().expect("read"), "and only once");
}

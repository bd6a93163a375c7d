//! `make bench`: what opening, listing and deciding a gate cost with 10
//! asks pending vs 2,000, measured in the same run on the same engine.
//!
//! The pending asks are real: external sessions (`overseer mcp` clients, as
//! a run's MCP server asks) each with 20 questions waiting (a run's cap),
//! every asker a task waiting on its gate, as a flood leaves them. A probe
//! session then asks one question at a time: *open* is from its ask to the
//! gate's `gate_opened` event, *decide* from the user's decision to the
//! asker holding its answer, *list* is the user's `gates list` (every
//! pending gate, so it grows with them: also printed per gate). Prints
//! medians and p95 and the ratios 2,000 / 10; asserts nothing about them.

use overseer_core::session::{AskQuestion, SessionAsk};
use overseer_core::{Actor, EngineEvent, RunOrigin, SessionRef};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Samples of each measurement at each level.
const SAMPLES: usize = 30;
/// Asks pending per session (a run's cap).
const PER_SESSION: usize = 20;

fn session(id: &str, cwd: &Path) -> SessionRef {
    SessionRef {
        origin: RunOrigin::Mcp,
        session_id: id.to_owned(),
        cwd: cwd.to_owned(),
        agent: Some("bench".to_owned()),
    }
}

fn question(key: String) -> SessionAsk {
    SessionAsk::Questions {
        key: Some(key),
        questions: vec![AskQuestion {
            header: "bench".to_owned(),
            question: "Which one?".to_owned(),
            options: Vec::new(),
            multiple: false,
            custom: true,
        }],
    }
}

/// Leaves `n` more asks pending, `PER_SESSION` per session, each asker a
/// task waiting for its answer.
async fn fill(engine: &Arc<Engine>, cwd: &Path, first_session: usize, n: usize) -> usize {
    let mut sessions = first_session;
    let mut left = n;
    let mut rx = engine.subscribe();
    while left > 0 {
        let here = left.min(PER_SESSION);
        let s = session(&format!("fill-{sessions}"), cwd);
        for i in 0..here {
            let (engine, s, ask) = (engine.clone(), s.clone(), question(format!("q{i}")));
            tokio::spawn(async move {
                let _ = engine.session_ask(s, ask, None).await;
            });
            // One at a time: wait for its gate.
            loop {
                match rx.recv().await {
                    Ok(EngineEvent::GateOpened { .. }) => break,
                    Ok(_) => {}
                    Err(e) => panic!("events: {e}"),
                }
            }
        }
        left -= here;
        sessions += 1;
    }
    sessions
}

struct Figures {
    open: Vec<Duration>,
    decide: Vec<Duration>,
    list: Vec<Duration>,
    listed: usize,
}

async fn measure(engine: &Arc<Engine>, cwd: &Path, label: &str) -> Figures {
    let probe = session(&format!("probe-{label}"), cwd);
    let mut f = Figures {
        open: Vec::new(),
        decide: Vec::new(),
        list: Vec::new(),
        listed: 0,
    };
    for i in 0..SAMPLES {
        let mut rx = engine.subscribe();
        let started = Instant::now();
        let asker = {
            let (engine, s, ask) = (engine.clone(), probe.clone(), question(format!("p{i}")));
            tokio::spawn(async move { engine.session_ask(s, ask, None).await })
        };
        let gate = loop {
            match rx.recv().await {
                Ok(EngineEvent::GateOpened { gate_id, .. }) => break gate_id,
                Ok(_) => {}
                Err(e) => panic!("events: {e}"),
            }
        };
        f.open.push(started.elapsed());

        let started = Instant::now();
        let listed = engine.gates(true).expect("list");
        f.list.push(started.elapsed());
        f.listed = listed.len();

        let started = Instant::now();
        let e = engine.clone();
        tokio::task::spawn_blocking(move || {
            e.decide_gate(gate, "answer", Some("this one"), &Actor::cli())
        })
        .await
        .expect("join")
        .expect("decide");
        asker.await.expect("join").expect("answered");
        f.decide.push(started.elapsed());
    }
    f
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(v: &[Duration], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    ms(v[rank.clamp(1, v.len()) - 1])
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    let cwd: PathBuf = dir.path().join("work");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let engine = Arc::new(
            Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine"),
        );
        let mut json = Vec::new();
        println!("gates with 10 vs 2,000 asks pending (ms; {SAMPLES} samples each):");
        let sessions = fill(&engine, &cwd, 0, 10).await;
        let small = measure(&engine, &cwd, "10").await;
        let t = Instant::now();
        fill(&engine, &cwd, sessions, 1990).await;
        println!("  (1,990 more asks opened in {:.1} s)", t.elapsed().as_secs_f64());
        let large = measure(&engine, &cwd, "2000").await;
        let rows = [
            ("open", &small.open, &large.open),
            ("decide", &small.decide, &large.decide),
            ("list", &small.list, &large.list),
        ];
        for (name, a, b) in rows {
            let (a50, b50) = (percentile(a, 50.0), percentile(b, 50.0));
            println!(
                "  {name:<7} 10: p50 {a50:8.2} p95 {:8.2} | 2,000: p50 {b50:8.2} p95 {:8.2} | ratio p50 {:6.2}",
                percentile(a, 95.0),
                percentile(b, 95.0),
                b50 / a50
            );
            json.push(format!(
                "\"gate_{name}_p50_ms_10_pending\": {a50:.3}, \"gate_{name}_p50_ms_2000_pending\": {b50:.3}, \"gate_{name}_ratio_2000_vs_10\": {:.3}",
                b50 / a50
            ));
        }
        let per = |f: &Figures| percentile(&f.list, 50.0) / f.listed.max(1) as f64;
        println!(
            "  list per gate: {:.4} ms ({} listed) vs {:.4} ms ({} listed): ratio {:.2}",
            per(&small),
            small.listed,
            per(&large),
            large.listed,
            per(&large) / per(&small)
        );
        json.push(format!(
            "\"gate_list_per_gate_ratio_2000_vs_10\": {:.3}",
            per(&large) / per(&small)
        ));
        let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
        if let Err(e) = std::fs::create_dir_all(&out).and_then(|()| {
            std::fs::write(out.join("pending.json"), format!("{{{}}}\n", json.join(", ")))
        }) {
            eprintln!("pending bench: cannot write pending.json: {e}");
        }
        engine.stop_agents().await;
    });
}

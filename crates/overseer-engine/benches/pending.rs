//! `make bench`: what opening, listing and deciding a gate cost with 10
//! asks pending vs 2,000, measured in the same run on the same engine.
//!
//! The pending asks are real: external sessions (`overseer mcp` clients, as
//! a run's MCP server asks) each with 20 questions waiting (a run's cap),
//! every asker a task waiting on its gate, as a flood leaves them. A probe
//! session then asks one question at a time: *open* is from its ask to the
//! gate's `gate_opened` event, *decide* from the user's decision to the
//! asker holding its answer. Listing is measured several ways: *list* is
//! the `list_gates` operation as the window's inbox loads it (one page: 200
//! at most, so 11 gates with 10 pending and 200 with 2,000), *list_sock* the
//! same through the engine's socket as `overseer gates list` sends it,
//! *list10* / *list10_sock* a page of 10 (a page as full with 10 pending as
//! with 2,000: what a page costs, whatever is pending), *list10_b2b* that
//! page asked 300 times back to back before the probe starts (the others
//! are measured just after a gate opened, while the engine still handles
//! it), *list_all* every
//! pending gate (`Engine::gates`, what `list_gates` returned before it was
//! paged: it grows with them, also printed per gate), and, when
//! `OVERSEER_BENCH_CLI` names an `overseer` binary, *cli* / *cli10* that
//! binary's whole `gates list` / `gates list --limit 10` (a process start
//! each).
//! Prints medians and p95 and the ratios 2,000 / 10; asserts nothing about
//! them.

use overseer_core::session::{AskQuestion, SessionAsk};
use overseer_core::{Actor, EngineEvent, RunOrigin, SessionRef};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use overseer_server::api::op::ListGates;
use overseer_server::api::Operation;
use overseer_server::client::Client;
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
        expires_in_seconds: None,
        questions: vec![AskQuestion {
            header: "bench".to_owned(),
            question: "Which one?".to_owned(),
            options: Vec::new(),
            multiple: false,
            custom: true,
            default: None,
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

#[derive(Default)]
struct Figures {
    open: Vec<Duration>,
    decide: Vec<Duration>,
    list: Vec<Duration>,
    list_sock: Vec<Duration>,
    list10: Vec<Duration>,
    list10_sock: Vec<Duration>,
    list10_b2b: Vec<Duration>,
    list_all: Vec<Duration>,
    cli: Vec<Duration>,
    cli10: Vec<Duration>,
    listed: usize,
    listed_all: usize,
}

fn page() -> ListGates {
    ListGates {
        pending_only: true,
        limit: None,
        after: None,
    }
}

fn page10() -> ListGates {
    ListGates {
        pending_only: true,
        limit: Some(10),
        after: None,
    }
}

/// One `overseer gates list ARGS` against the engine at `paths`.
fn cli_list(bin: &std::ffi::OsStr, paths: &Paths, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = std::process::Command::new(bin)
        .args(["gates", "list"])
        .args(args)
        .env("OVERSEER_DATA_DIR", &paths.data_dir)
        .env("OVERSEER_CONFIG_DIR", &paths.config_dir)
        .output()
        .expect("run the overseer binary");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

async fn measure(engine: &Arc<Engine>, paths: &Paths, cwd: &Path, label: &str) -> Figures {
    let probe = session(&format!("probe-{label}"), cwd);
    let mut f = Figures::default();
    for _ in 0..SAMPLES * 10 {
        let started = Instant::now();
        let ten = page10().perform(engine, &Actor::app()).expect("list");
        f.list10_b2b.push(started.elapsed());
        assert_eq!(ten.gates.len(), 10);
    }
    let mut client = Client::connect(&paths.socket())
        .await
        .expect("connect")
        .expect("the engine's socket");
    let cli = std::env::var_os("OVERSEER_BENCH_CLI");
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
        let listed = page().perform(engine, &Actor::app()).expect("list");
        f.list.push(started.elapsed());
        f.listed = listed.gates.len();
        assert!(listed.total as usize >= listed.gates.len());

        let started = Instant::now();
        let listed = client
            .perform(page())
            .await
            .expect("list through the socket");
        f.list_sock.push(started.elapsed());
        assert_eq!(listed.gates.len(), f.listed);

        let started = Instant::now();
        let ten = page10().perform(engine, &Actor::app()).expect("list");
        f.list10.push(started.elapsed());
        assert_eq!(ten.gates.len(), 10);

        let started = Instant::now();
        let ten = client
            .perform(page10())
            .await
            .expect("list through the socket");
        f.list10_sock.push(started.elapsed());
        assert_eq!(ten.gates.len(), 10);

        let started = Instant::now();
        let all = engine.gates(true).expect("list");
        f.list_all.push(started.elapsed());
        f.listed_all = all.len();

        if let Some(bin) = &cli {
            f.cli.push(cli_list(bin, paths, &[]));
            f.cli10.push(cli_list(bin, paths, &["--limit", "10"]));
        }

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
            Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
                .expect("engine"),
        );
        let listener = overseer_server::server::bind(&paths.socket()).expect("bind");
        let served = tokio::spawn(overseer_server::server::serve(engine.clone(), listener));
        let mut json = Vec::new();
        println!("gates with 10 vs 2,000 asks pending (ms; {SAMPLES} samples each):");
        let sessions = fill(&engine, &cwd, 0, 10).await;
        let small = measure(&engine, &paths, &cwd, "10").await;
        let t = Instant::now();
        fill(&engine, &cwd, sessions, 1990).await;
        println!("  (1,990 more asks opened in {:.1} s)", t.elapsed().as_secs_f64());
        let large = measure(&engine, &paths, &cwd, "2000").await;
        let mut rows = vec![
            ("open", &small.open, &large.open),
            ("decide", &small.decide, &large.decide),
            ("list", &small.list, &large.list),
            ("list_sock", &small.list_sock, &large.list_sock),
            ("list10", &small.list10, &large.list10),
            ("list10_sock", &small.list10_sock, &large.list10_sock),
            ("list10_b2b", &small.list10_b2b, &large.list10_b2b),
            ("list_all", &small.list_all, &large.list_all),
        ];
        if !small.cli.is_empty() {
            rows.push(("cli", &small.cli, &large.cli));
            rows.push(("cli10", &small.cli10, &large.cli10));
        }
        println!(
            "  (list and list_sock: one page, {} then {} gates; list_all: {} then {})",
            small.listed, large.listed, small.listed_all, large.listed_all
        );
        for (name, a, b) in rows {
            let (a50, b50) = (percentile(a, 50.0), percentile(b, 50.0));
            println!(
                "  {name:<11} 10: p50 {a50:8.2} p95 {:8.2} | 2,000: p50 {b50:8.2} p95 {:8.2} | ratio p50 {:6.2}",
                percentile(a, 95.0),
                percentile(b, 95.0),
                b50 / a50
            );
            json.push(format!(
                "\"gate_{name}_p50_ms_10_pending\": {a50:.3}, \"gate_{name}_p50_ms_2000_pending\": {b50:.3}, \"gate_{name}_ratio_2000_vs_10\": {:.3}",
                b50 / a50
            ));
        }
        let per = |f: &Figures| percentile(&f.list_all, 50.0) / f.listed_all.max(1) as f64;
        println!(
            "  list_all per gate: {:.4} ms ({} listed) vs {:.4} ms ({} listed): ratio {:.2}",
            per(&small),
            small.listed_all,
            per(&large),
            large.listed_all,
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
        served.abort();
        engine.stop_agents().await;
    });
}

//! `make bench`: how the engine keeps its pace while one run misbehaves.
//!
//! A real child in a run's cgroup (spawned as the engine spawns agents:
//! nice +5, oom_score_adj 1000) starts a fork storm (up to 3,000 sleeping
//! children) and 32 busy loops in their own sessions, the attack of issue 25.
//! Meanwhile the engine's `runs()` (what `overseer runs list` and the window
//! read) is timed every 20 ms on a database of 200 runs. Phases, in the same
//! run: idle (the baseline); the storm and the busy loops in a run cgroup
//! without limits (as before limits existed) and with the machine's default
//! limits; the busy loops alone (no storm), without and with limits (what
//! the runs' CPU weight of 25 against the engine's 100 does by itself: with
//! limits the storm takes every pid it may, so the busy loops never start).
//! Prints p50/p99 and their ratios to the idle baseline, and what the attack
//! got started; asserts nothing.
//!
//! Measured here (2 cores, `cargo bench --profile dev`): p99 2.8 ms idle;
//! storm + busy loops 46 ms without limits, 2.7 ms with; busy loops alone
//! 44 ms without limits, 5.0 ms with.

use overseer_contain::process::{self, AgentSpec};
use overseer_contain::{self as contain, RunCgroup, RunLimits};
use overseer_core::Actor;
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 200;
const SAMPLES: usize = 150;
const EVERY: Duration = Duration::from_millis(20);

const ATTACK: &str = r#"
python3 - <<'PY'
import os, time, signal
kids = []
for i in range(int(os.environ.get("FORKS", "3000"))):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print("forks=%d" % len(kids), flush=True)
busy = []
for i in range(32):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        os.setsid()
        while True:
            pass
    busy.append(pid)
print("busy=%d" % len(busy), flush=True)
time.sleep(60)
PY
"#;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `runs()` latencies in ms, sorted.
fn sample(engine: &Engine) -> Vec<f64> {
    let mut out = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let t = Instant::now();
        let runs = engine.runs().expect("runs");
        out.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(runs.len() >= RUNS);
        std::thread::sleep(EVERY);
    }
    out.sort_by(f64::total_cmp);
    out
}

fn attack_spec(dir: &Path, cg: RunCgroup, forks: u32) -> AgentSpec {
    AgentSpec {
        program: PathBuf::from("bash"),
        args: vec!["-c".into(), ATTACK.into()],
        env: vec![("FORKS".into(), forks.to_string())],
        cwd: dir.to_owned(),
        marker: format!("overseer-bench-hostile-{}", std::process::id()),
        sandbox: None,
        cgroup: Some(cg),
    }
}

/// Starts the attack in `cg`, waits until it is in full swing, samples,
/// stops it; (latencies, the line the storm printed).
async fn under_attack(
    engine: &Engine,
    dir: &Path,
    cg: RunCgroup,
    forks: u32,
) -> (Vec<f64>, String) {
    let (mut agent, stdin, stdout, _stderr) = process::spawn(&attack_spec(dir, cg, forks))
        .await
        .expect("the attack starts");
    drop(stdin);
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let mut said = Vec::new();
    while said.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(120), lines.next_line()).await {
            Ok(Ok(Some(l))) => said.push(l),
            _ => break,
        }
    }
    let figures = tokio::task::block_in_place(|| sample(engine));
    let _ = agent.terminate(Duration::from_millis(100)).await;
    (figures, said.join(" "))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(
        Paths {
            data_dir: dir.path().join("data"),
            config_dir: dir.path().join("config"),
        },
        Arc::new(SystemClock),
        Arc::new(LogNotifier),
    )
    .expect("engine");
    engine
        .seed_bulk(&Actor::cli(), RUNS as u32)
        .expect("runs seeded");
    let Some(root) = engine.run_cgroup_root() else {
        println!(
            "hostile load: no run cgroups on this machine ({}); nothing to measure",
            contain::probe().summary()
        );
        return;
    };
    let idle = sample(&engine);
    let limits = RunLimits::for_machine();
    let mut phases = Vec::new();
    for (name, forks, limited) in [
        ("storm + busy loops, no limits (before)", 3000, false),
        ("storm + busy loops, limits (now)", 3000, true),
        ("busy loops only, no limits (before)", 0, false),
        ("busy loops only, limits (now)", 0, true),
    ] {
        let cg = RunCgroup::create(
            &root,
            &format!("run-90000{}", phases.len()),
            limited.then_some(&limits),
        )
        .expect("cgroup");
        let (figures, said) = under_attack(&engine, dir.path(), cg.clone(), forks).await;
        let _ = cg.remove();
        phases.push((name, figures, said));
    }
    contain::cgroup::remove_if_empty(&root);

    let (i50, i99) = (percentile(&idle, 0.5), percentile(&idle, 0.99));
    println!(
        "hostile load: engine runs() over {RUNS} runs, {SAMPLES} samples every {} ms",
        EVERY.as_millis()
    );
    println!("  idle                                     p50 {i50:7.2} ms  p99 {i99:7.2} ms");
    for (name, figs, said) in &phases {
        let (p50, p99) = (percentile(figs, 0.5), percentile(figs, 0.99));
        println!(
            "  {name:40} p50 {p50:7.2} ms ({:5.1}x)  p99 {p99:7.2} ms ({:5.1}x)  [{said}]",
            p50 / i50,
            p99 / i99
        );
    }
    println!(
        "  limits: pids.max {}, memory.max {} MiB, cpu weight {} (runs' directory 25 vs the engine's 100)",
        limits.pids_max,
        limits.memory_max >> 20,
        limits.cpu_weight
    );
    let dir_out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let keys = [
        "storm_unlimited",
        "storm_limited",
        "busy_unlimited",
        "busy_limited",
    ];
    let mut fields = vec![format!("\"hostile_load_runs_p99_ms_idle\": {i99:.3}")];
    for (key, (_, figs, _)) in keys.iter().zip(&phases) {
        fields.push(format!(
            "\"hostile_load_runs_p99_ms_{key}\": {:.3}",
            percentile(figs, 0.99)
        ));
    }
    let json = format!("{{{}}}\n", fields.join(", "));
    if let Err(e) = std::fs::create_dir_all(&dir_out)
        .and_then(|()| std::fs::write(dir_out.join("hostile_load.json"), json))
    {
        eprintln!("cannot write the figures: {e}");
    }
}

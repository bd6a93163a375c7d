//! `make bench`: a tool-call permission round trip through the real engine,
//! from the agent's `session/request_permission` to the ACP answer it gets,
//! with 1, 10 and 50 demo agents at once; and the engine's CPU while 50
//! agents wait on gates.
//!
//! The demo agent's `permissions` scenario times each request itself and
//! alternates a read (the engine answers by rule, no human) and an edit (a
//! tool_call gate, which a decider task here answers "yes" as a user as soon
//! as it opens). Each concurrency is measured twice: *starting* (every agent
//! launched at once, asking back to back as soon as its plan is approved,
//! so requests share the cores with the others' worktrees, containment and
//! git) and *steady* (every agent started first, then each asking about
//! every 100 ms, as a fleet at work does). The baseline is the same
//! measurement with one agent, in the same run: the other concurrencies
//! are printed as ratios to it. Prints figures; asserts nothing about them
//! (the machine is shared and noisy).

use overseer_contain::process::MARKER_ENV;
use overseer_core::{Actor, EngineEvent, GateKind, RunState};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock, TaskStart};
use overseer_store::WorkspaceSettings;
use overseer_test_support::{demo_agent, repo_with};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::broadcast::error::RecvError;

/// Concurrent agents per measurement; the first is the baseline.
const LEVELS: [usize; 3] = [1, 10, 50];

/// The model's thinking between two requests in the steady-state
/// measurement (each pause drawn from half to one and a half times it): a
/// real agent waits seconds for its model between tool calls, so 100 ms is
/// a fleet asking far more often than real ones do (50 agents: ~500
/// requests a second).
const THINK_MS: u64 = 100;

/// The levels this run measures: `OVERSEER_BENCH_AGENTS=1,50` picks some
/// of [`LEVELS`] (a quicker look while profiling); all of them by default.
fn levels() -> Vec<usize> {
    let picked: Vec<usize> = std::env::var("OVERSEER_BENCH_AGENTS")
        .unwrap_or_default()
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .filter(|n| LEVELS.contains(n))
        .collect();
    if picked.is_empty() {
        LEVELS.to_vec()
    } else {
        picked
    }
}
/// Agents waiting on a gate during the CPU measurement.
const HOLDERS: usize = 50;
/// The CPU measurement's window.
const CPU_WINDOW: Duration = Duration::from_secs(5);
/// How long any one phase may take before the bench gives up on it.
const PHASE_LIMIT: Duration = Duration::from_secs(600);

/// Where the agents write their latencies: a directory their profile names
/// in a `*_HOME` variable, which containment lets them write to (the rest of
/// the bench's temp dir is out of their sight).
fn latency_dir(dir: &Path) -> PathBuf {
    dir.join("latency")
}

/// The agent profile of one measurement: its own latency file.
fn latency_file(dir: &Path, pace: Pace, agents: usize) -> PathBuf {
    latency_dir(dir).join(format!("latency-{}-{agents}.txt", pace.label()))
}

/// How the agents of one measurement ask.
#[derive(Clone, Copy, PartialEq)]
enum Pace {
    /// All started at once, each asking back to back from the moment its
    /// plan is approved: requests timed while the others are still being
    /// set up (worktrees, containment, git) on the same cores.
    Starting,
    /// Every agent started first (a barrier), then each asking about every
    /// [`THINK_MS`], as a fleet at work does.
    Steady,
}

impl Pace {
    fn label(self) -> &'static str {
        match self {
            Pace::Starting => "starting",
            Pace::Steady => "steady",
        }
    }
}

fn profile_name(pace: Pace, agents: usize) -> String {
    format!("{}{agents}", pace.label())
}

/// Where the agents of a steady measurement meet before asking.
fn barrier_dir(dir: &Path, agents: usize) -> PathBuf {
    latency_dir(dir).join(format!("barrier-{agents}"))
}

/// A temp dir with a git repo, and `overseer.toml` with one demo-agent
/// profile per level plus `hold` (one edit, then wait).
fn setup(dir: &Path, agent: &Path, requests: usize) -> Paths {
    repo_with(
        &dir.join("repo"),
        &[("README.md", "# bench\n"), ("src/greeting.txt", "hello\n")],
    );
    let command = format!("{:?}", agent.to_string_lossy());
    std::fs::create_dir_all(latency_dir(dir)).expect("latency dir");
    let mut toml = String::from("abort_timeout_seconds = 1\n");
    for (pace, agents) in LEVELS
        .map(|n| (Pace::Starting, n))
        .into_iter()
        .chain(LEVELS.map(|n| (Pace::Steady, n)))
    {
        let steady = if pace == Pace::Steady {
            let barrier = barrier_dir(dir, agents);
            std::fs::create_dir_all(&barrier).expect("barrier dir");
            format!(
                ", OVERSEER_DEMO_BARRIER = \"{agents}:{}\", OVERSEER_DEMO_THINK_MS = \"{THINK_MS}\"",
                barrier.to_string_lossy()
            )
        } else {
            String::new()
        };
        toml.push_str(&format!(
            "[agents.{}]\ncommand = {command}\nmode = \"default\"\nenv = {{ OVERSEER_DEMO_STEP_MS = \"0\", OVERSEER_DEMO_PERMISSIONS = \"{requests}\", OVERSEER_DEMO_LATENCY_FILE = {:?}, BENCH_LATENCY_HOME = {:?}{steady} }}\n",
            profile_name(pace, agents),
            latency_file(dir, pace, agents).to_string_lossy(),
            latency_dir(dir).to_string_lossy(),
        ));
    }
    toml.push_str(&format!(
        "[agents.hold]\ncommand = {command}\nmode = \"default\"\nenv = {{ OVERSEER_DEMO_STEP_MS = \"0\", OVERSEER_DEMO_HOLD = \"1\" }}\n"
    ));
    let config = dir.join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("overseer.toml"), toml).expect("config file");
    Paths {
        data_dir: dir.join("data"),
        config_dir: config,
    }
}

/// Answers gates the moment they open, as a user: plans approved, tool
/// calls "yes" (while `answer_tool_calls`), deviations stopped, questions
/// declined. Merge reviews are left for the bench to reject.
fn spawn_decider(
    engine: Arc<Engine>,
    answer_tool_calls: Arc<AtomicBool>,
    tool_gates: Arc<AtomicUsize>,
) -> tokio::task::JoinHandle<()> {
    let mut rx = engine.subscribe();
    tokio::spawn(async move {
        let decide = |id, kind| {
            let option = match kind {
                GateKind::Plan => "approve",
                GateKind::ToolCall if answer_tool_calls.load(Ordering::SeqCst) => "yes",
                GateKind::Deviation => "stop",
                GateKind::Question => "decline",
                _ => return,
            };
            if engine.decide_gate(id, option, None, &Actor::app()).is_ok()
                && kind == GateKind::ToolCall
            {
                tool_gates.fetch_add(1, Ordering::SeqCst);
            }
        };
        loop {
            match rx.recv().await {
                Ok(EngineEvent::GateOpened { gate_id, kind, .. }) => decide(gate_id, kind),
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {
                    for g in engine.gates(true).unwrap_or_default() {
                        decide(g.id, g.kind());
                    }
                }
                Err(RecvError::Closed) => break,
            }
        }
    })
}

fn start_tasks(engine: &Engine, agent: &str, count: usize) -> Vec<overseer_core::RunId> {
    (0..count)
        .map(|i| {
            engine
                .start_task(
                    &TaskStart {
                        workspace: "bench".into(),
                        agent: agent.into(),
                        prompt: format!("Permission bench {i}"),
                        title: None,
                        scenario: Some("permissions".into()),
                        stage: None,
                        settings: Default::default(),
                    },
                    &Actor::cli(),
                )
                .expect("start a task")
                .run_id
        })
        .collect()
}

/// Waits until `pred` holds, re-checking ten times a second. (Not on every
/// engine event: with 50 agents that is thousands of checks a second, each
/// reading every run, and the bench would take the cores it measures.)
/// False when the phase limit passed first.
async fn until(engine: &Engine, mut pred: impl FnMut(&Engine) -> bool) -> bool {
    let deadline = Instant::now() + PHASE_LIMIT;
    loop {
        if pred(engine) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn settled(engine: &Engine, runs: &[overseer_core::RunId]) -> bool {
    runs.iter().all(|r| {
        engine
            .run(*r)
            .is_ok_and(|v| v.state == RunState::PendingReview || v.state.is_released())
    })
}

/// Rejects what waits for review, aborts what still runs.
fn release(engine: &Engine, runs: &[overseer_core::RunId]) {
    for &run in runs {
        match engine.run(run).map(|v| v.state) {
            Ok(RunState::PendingReview) => {
                let _ = engine.reject_run(run, "benchmark over", &Actor::cli());
            }
            Ok(s) if !s.is_released() => {
                let _ = engine.abort_run(run, &Actor::cli());
            }
            Ok(_) | Err(_) => {}
        }
    }
}

/// Live (not zombie) processes carrying one of `markers`, by pid.
fn marked_processes(markers: &[String]) -> Vec<i32> {
    let wanted: Vec<Vec<u8>> = markers
        .iter()
        .map(|m| format!("{MARKER_ENV}={m}").into_bytes())
        .collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let env = std::fs::read(e.path().join("environ")).ok()?;
            let marked = env
                .split(|b| *b == 0)
                .any(|kv| wanted.iter().any(|w| w.as_slice() == kv));
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            (marked && !zombie).then_some(pid)
        })
        .collect()
}

/// CPU time of this process (every thread, the engine's included; the
/// agents are child processes and not counted).
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or_default(),
        u32::try_from(t.tv_nsec).unwrap_or_default(),
    )
}

/// Writes figures (a JSON object) to target/bench/NAME, where `make bench`
/// merges every bench's figures into target/bench/summary.json.
fn write_figures(name: &str, json: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(name), json))
    {
        eprintln!("permission bench: cannot write {name}: {e}");
    }
}

/// Percentile by nearest rank of sorted `v`, in milliseconds.
fn percentile(v: &[u64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1] as f64 / 1000.0
}

struct Level {
    pace: Pace,
    agents: usize,
    /// Round trips in µs, sorted: answered by rule (reads), by decision (edits).
    rule: Vec<u64>,
    decision: Vec<u64>,
    /// The rule round trips answered before the first agent stopped asking
    /// (a fleet still at work), sorted; the rest came beside finishing runs.
    rule_before_first_finish: Vec<u64>,
    wall: Duration,
    /// The engine's CPU time from launching the runs to their review gates.
    engine_cpu: Duration,
}

/// What the agents wrote to a latency file (see the demo agent's docs).
#[derive(Default)]
struct Latencies {
    /// (round trip µs, answered at µs since the epoch).
    rule: Vec<(u64, u64)>,
    decision: Vec<(u64, u64)>,
    /// When each agent stopped asking.
    finished: Vec<u64>,
}

fn read_latencies(file: &Path) -> Latencies {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut out = Latencies::default();
    for line in text.lines() {
        let fields: Vec<Option<u64>> = line
            .split(' ')
            .skip(1)
            .map(|f| f.trim().parse().ok())
            .collect();
        match (line.split(' ').next(), fields.as_slice()) {
            (Some("read"), [Some(us), Some(at)]) => out.rule.push((*us, *at)),
            (Some("edit"), [Some(us), Some(at)]) => out.decision.push((*us, *at)),
            (Some("finished"), [Some(at)]) => out.finished.push(*at),
            _ => eprintln!("permission bench: ignoring latency line {line:?}"),
        }
    }
    out
}

fn sorted(v: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut v: Vec<u64> = v.collect();
    v.sort_unstable();
    v
}

fn main() {
    // Before any thread: the engine passes this on to every agent.
    std::env::set_var("OVERSEER_DEMO_STEP_MS", "0");
    let requests: usize = std::env::var("OVERSEER_DEMO_PERMISSIONS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .filter(|n| *n >= 2)
        .unwrap_or(20);
    // Built in the bench's own profile (release).
    let agent = demo_agent();
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = setup(dir.path(), agent, requests);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(bench(dir.path(), paths, requests));
    drop(runtime);
}

async fn bench(dir: &Path, paths: Paths, requests: usize) {
    let engine = Arc::new(
        Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("open engine"),
    );
    engine
        .add_workspace(
            &dir.join("repo"),
            Some("bench"),
            WorkspaceSettings::default(),
            &Actor::cli(),
        )
        .expect("register the workspace");
    engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    let answer_tool_calls = Arc::new(AtomicBool::new(true));
    let tool_gates = Arc::new(AtomicUsize::new(0));
    let decider = spawn_decider(
        engine.clone(),
        answer_tool_calls.clone(),
        tool_gates.clone(),
    );
    let mut all_runs = Vec::new();

    println!(
        "permission round trip, agent request to ACP answer ({requests} requests per agent, reads and edits alternating)"
    );
    let mut levels = Vec::new();
    for (pace, agents) in self::levels()
        .into_iter()
        .map(|n| (Pace::Starting, n))
        .chain(self::levels().into_iter().map(|n| (Pace::Steady, n)))
    {
        tool_gates.store(0, Ordering::SeqCst);
        let (started, cpu_before) = (Instant::now(), cpu_time());
        let runs = start_tasks(&engine, &profile_name(pace, agents), agents);
        all_runs.extend_from_slice(&runs);
        let done = until(&engine, |e| settled(e, &runs)).await;
        let wall = started.elapsed();
        let engine_cpu = cpu_time().saturating_sub(cpu_before);
        if !done {
            eprintln!("permission bench: {agents} agents did not finish in {PHASE_LIMIT:?}");
        }
        let reviewed = runs
            .iter()
            .filter(|r| {
                engine
                    .run(**r)
                    .is_ok_and(|v| v.state == RunState::PendingReview)
            })
            .count();
        if reviewed != agents {
            eprintln!("permission bench: only {reviewed} of {agents} runs reached review");
        }
        release(&engine, &runs);
        let latencies = read_latencies(&latency_file(dir, pace, agents));
        let first_finish = latencies.finished.iter().min().copied().unwrap_or(u64::MAX);
        // Every timed edit, plus each run's final greeting edit, is a gate.
        let gates = tool_gates.load(Ordering::SeqCst);
        let expected = agents * (requests / 2 + 1);
        if gates != expected {
            eprintln!(
                "permission bench: {gates} tool_call gates answered with {agents} agents, expected {expected} (reads should be answered by rule)"
            );
        }
        levels.push(Level {
            pace,
            agents,
            rule: sorted(latencies.rule.iter().map(|(us, _)| *us)),
            decision: sorted(latencies.decision.iter().map(|(us, _)| *us)),
            rule_before_first_finish: sorted(
                latencies
                    .rule
                    .iter()
                    .filter(|(_, at)| *at < first_finish)
                    .map(|(us, _)| *us),
            ),
            wall,
            engine_cpu,
        });
    }
    print_levels(&levels);
    // For `make bench`'s summary (scripts/bench-summary.mjs): the goal's
    // figure is the steady fleet's; the starting one is kept beside it.
    let mut figures = Vec::new();
    for (pace, suffix) in [(Pace::Steady, ""), (Pace::Starting, "_starting")] {
        if let Some(l) = levels.iter().find(|l| l.agents == 50 && l.pace == pace) {
            for (p, name) in [(99.0, "p99"), (50.0, "p50")] {
                figures.push(format!(
                    "\"permission_round_trip_{name}_ms_50_agents{suffix}\": {:.3}",
                    percentile(&l.rule, p)
                ));
            }
            if pace == Pace::Steady {
                figures.push(format!(
                    "\"permission_round_trip_p99_ms_50_agents_before_first_finish\": {:.3}",
                    percentile(&l.rule_before_first_finish, 99.0)
                ));
            }
        }
    }
    if !figures.is_empty() {
        write_figures("permission.json", &format!("{{{}}}\n", figures.join(", ")));
    }

    // CPU while agents wait on gates, beside the idle engine.
    answer_tool_calls.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = measure_cpu().await;
    let holders = start_tasks(&engine, "hold", HOLDERS);
    all_runs.extend_from_slice(&holders);
    let waiting = |e: &Engine| {
        e.gates(true).map_or(0, |gates| {
            gates
                .iter()
                .filter(|g| g.kind() == GateKind::ToolCall && holders.contains(&g.run_id))
                .count()
        })
    };
    if until(&engine, |e| waiting(e) == HOLDERS).await {
        // Let the last gates' bookkeeping finish before sampling.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let busy = measure_cpu().await;
        let (pct, ms) = busy;
        println!(
            "engine CPU while {HOLDERS} agents wait on gates: {pct:.3}% of one core ({ms:.1} ms CPU in {} s); idle engine, no agents: {:.3}% ({:.1} ms)",
            CPU_WINDOW.as_secs(),
            idle.0,
            idle.1
        );
    } else {
        eprintln!(
            "permission bench: only {} of {HOLDERS} agents reached their gate; no CPU figure",
            waiting(&engine)
        );
    }

    // Clean up: abort what runs, reject what waits, and make sure no agent
    // outlives the bench.
    release(&engine, &all_runs);
    let markers: Vec<String> = all_runs.iter().map(|r| engine.agent_marker(*r)).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !marked_processes(&markers).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let survivors = marked_processes(&markers);
    for pid in &survivors {
        if let Some(pid) = rustix::process::Pid::from_raw(*pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    if survivors.is_empty() {
        println!("demo agents left running: 0");
    } else {
        println!(
            "demo agents left running after abort: {} (killed: {survivors:?})",
            survivors.len()
        );
    }
    decider.abort();
    // As `overseer serve` exits: the engine's tasks end before the runtime.
    engine.stop_agents().await;
    if let Err(e) = engine.shutdown() {
        eprintln!("permission bench: engine shutdown: {}", e.message);
    }
}

/// This process's CPU over [`CPU_WINDOW`]: percent of one core, and ms.
async fn measure_cpu() -> (f64, f64) {
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    tokio::time::sleep(CPU_WINDOW).await;
    let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
    (
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        cpu.as_secs_f64() * 1000.0,
    )
}

fn print_levels(levels: &[Level]) {
    println!(
        "{:<8}  {:>6}  {:<8}  {:>5}  {:>9}  {:>9}  {:>11}  {:>7}",
        "agents", "", "answer", "n", "p50 ms", "p99 ms", "p50 vs 1", "wall s"
    );
    for level in levels {
        // The baseline: one agent, asking at the same pace.
        let base = levels.iter().find(|b| b.pace == level.pace);
        for (label, values, base_values) in [
            ("rule", &level.rule, base.map(|b| &b.rule)),
            ("decision", &level.decision, base.map(|b| &b.decision)),
        ] {
            let p50 = percentile(values, 50.0);
            let ratio = base_values.map_or(f64::NAN, |b| p50 / percentile(b, 50.0));
            println!(
                "{:<8}  {:>6}  {:<8}  {:>5}  {:>9.3}  {:>9.3}  {:>10.2}x  {:>7.1}",
                level.pace.label(),
                level.agents,
                label,
                values.len(),
                p50,
                percentile(values, 99.0),
                ratio,
                level.wall.as_secs_f64()
            );
        }
        // A steady fleet before any of its runs finishes (commits, diffs,
        // review gates and exiting agents all at once). Not for a starting
        // one: its first agent is done before the last has started.
        if level.pace != Pace::Steady || level.agents == 1 {
            continue;
        }
        let before = &level.rule_before_first_finish;
        println!(
            "{:<8}  {:>6}  {:<8}  {:>5}  {:>9.3}  {:>9.3}  (rule, before the first run stopped asking)",
            "",
            "",
            "",
            before.len(),
            percentile(before, 50.0),
            percentile(before, 99.0),
        );
    }
    // Load-independent where the latencies are not: what each run costs
    // the engine (launch, every message, git, the review gate).
    for level in levels.iter().filter(|l| l.pace == Pace::Steady) {
        println!(
            "engine CPU per run, {} agent(s): {:.1} ms ({:.0} ms for the level)",
            level.agents,
            level.engine_cpu.as_secs_f64() * 1000.0 / level.agents as f64,
            level.engine_cpu.as_secs_f64() * 1000.0
        );
    }
}

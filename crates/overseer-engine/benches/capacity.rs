//! `make bench`: what one engine carries with many runs at once (1,000 by
//! default, `OVERSEER_BENCH_RUNS=N` for fewer while developing), each
//! agent waiting on a tool-call gate, then every gate decided.
//!
//! What is real: the engine (in this process, as `overseer serve` or the app
//! holds it) on a real SQLite file, its orchestrator, one real git worktree
//! per run from one shared base repository, a real contained agent process
//! per run (sandbox and cgroup as on this machine), the local API server on
//! its real Unix socket and a client subscribed to it (on a thread and
//! runtime of its own, as another process would be). What is scripted
//! depends on `OVERSEER_BENCH_AGENT`:
//!
//! - `scripted` (the default): each run's process is `sleep` and its session
//!   is the tests' scripted one (`tests/engine/common/scripted.rs`) in place of
//!   ACP: one turn that asks before an edit and waits for the answer. The
//!   agent costs a sleeping process, not an ACP peer.
//! - `demo`: each run's process is the demo agent speaking ACP over its
//!   pipes (`permissions` scenario with `OVERSEER_DEMO_HOLD=1`: it asks for
//!   one edit and waits). Heavier per run: the bench prints what the agents'
//!   processes take beside the engine's figures, so the two can be compared.
//!
//! Phases and figures: the runs start and reach their gates (the engine's
//! RSS and CPU per run, from `/proc/self/status` and the process CPU clock,
//! which is `/proc/self/stat`'s utime + stime; the agents' RSS per run);
//! the engine idles with every run waiting (CPU per run per second); the
//! fleet is reloaded as the window does (`runs()`, and `runs_head(100)`, the
//! window's first screen, and the pending gates) p50/p99; then every gate is
//! decided one after another, 10 ms apart (`decide_gate` to its commit,
//! p50/p99, and p99 while at least 90% still wait), and each decision's
//! event is timed from its publication (seen by an in-process subscriber on
//! a thread of its own) to the socket client, p50/p99. The bench process
//! is the engine plus this bench's own small share (the subscriber
//! threads and the client): its RSS and CPU are the engine's upper bound.
//! Prints figures; asserts nothing about them. Every agent process and
//! run cgroup is gone at the end, even when a phase fails (counted and
//! printed).
//!
//! Measured here (2 cores shared with other builds, `cargo bench --profile
//! dev`, 1,000 runs, scripted): the engine 114 MiB with every run waiting
//! (93 KiB per run), 21 ms of CPU to start a run and 29 ms from its
//! decision to its review, 2% of one core while all wait; each run's
//! processes 9 MiB RSS (two bwrap, the agent, slirp4netns). With the demo
//! agent (50 runs) the engine's share is alike (0.3 MiB per run) and the
//! agent's processes take 15.5 MiB per run: the processes, not the engine,
//! are what 1,000 runs cost in memory, hence the light agent here. The
//! fleet's reload: `runs()` p50 37 ms, `runs_head(100)` 14 ms.
//! `decide_gate` p50 13 ms, p99 117 ms (a finishing run read every pending
//! gate under the store's lock, and decisions queued on that lock: p99 246
//! ms before it read only its own). An event reaches the socket client in
//! 6 ms (p50; p99 356 ms) while the runs wait and are decided. While 1,000
//! started it came tens of seconds late (p50 54 s, some dropped as the
//! subscriber lagged) when each launch waited for its sandbox's network
//! with thread sleeps on one of the runtime's two workers; those waits are
//! the runtime's now (`process::spawn` awaits its pipes and timers), and
//! sandboxes set up their networks four at a time on two cores (all 1,000
//! at once, every set-up ran past its 10 s limit and every run failed).
//! With 1,000 runs under a load of 14-34 from other work, the launch wave's
//! events reached the client at p50 1.9 ms, p99 131 ms, none lost, and all
//! 1,000 waited on their gates after 183 s. With 200 runs under a load of
//! 17-20: p50 337 ms, p99 2.4 s, against 9.3 s and 21 s with the sleeps.
//! A run that fails to start is counted, and the bench prints why.

// The tests' shared module, of which this bench uses a part.
#[allow(dead_code, unused_imports)]
#[path = "../tests/engine/common/mod.rs"]
mod common;

use common::scripted;

use overseer_acp::ToolCallInfo;
use overseer_contain::process::MARKER_ENV;
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, EngineEvent, GateKind, RunId, RunState};
use overseer_engine::{Engine, LogNotifier, TaskStart};
use overseer_store::{TaskSettings, WorkspaceSettings};
use scripted::{Act, Script, Scripted, Turn};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs by default (`OVERSEER_BENCH_RUNS` overrides).
const RUNS: usize = 1000;
/// Samples of each fleet reload.
const RELOADS: usize = 50;
/// Rows of the window's first screen (the UI's `HEAD_ROWS`).
const HEAD_ROWS: usize = 100;
/// The idle CPU window.
const IDLE_WINDOW: Duration = Duration::from_secs(5);
/// Between two decisions.
const DECIDE_EVERY: Duration = Duration::from_millis(10);
/// How long the runs may take to reach their gates, or to finish.
const PHASE_LIMIT: Duration = Duration::from_secs(1200);

#[derive(Clone, Copy, PartialEq)]
enum Agent {
    Scripted,
    Demo,
}

impl Agent {
    fn profile(self) -> &'static str {
        match self {
            Agent::Scripted => "light",
            Agent::Demo => "hold",
        }
    }
}

/// Both profiles: `light` (a sleeping process, for the scripted session)
/// and `hold` (the demo agent waiting on one edit).
fn profiles() -> String {
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("sleep");
    format!(
        "[agents.light]\ncommand = {sleep:?}\nargs = [\"7200\"]\nmode = \"default\"\n\
         [agents.hold]\ncommand = {:?}\nmode = \"default\"\nenv = {{ OVERSEER_DEMO_STEP_MS = \"0\", OVERSEER_DEMO_HOLD = \"1\" }}\n",
        common::demo_agent().to_string_lossy()
    )
}

/// One turn per run: ask before an edit, wait for the answer, finish.
fn script(runs: usize) -> Arc<Script> {
    let turns = (0..runs)
        .map(|i| {
            Turn::new(vec![
                Act::Ask(ToolCallInfo {
                    id: format!("edit-{i}"),
                    title: Some("Edit src/greeting.txt".into()),
                    kind: Some("edit".into()),
                    status: Some(overseer_core::ToolCallStatus::Pending),
                    raw_input: Some(serde_json::json!({"path": "src/greeting.txt"})),
                    ..Default::default()
                }),
                Act::Say("Done.".into()),
            ])
        })
        .collect();
    Script::new(turns)
}

/// The engine process's resident memory, in KiB.
fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time of this process (every thread; the agents are other processes).
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or_default(),
        u32::try_from(t.tv_nsec).unwrap_or_default(),
    )
}

/// CPU time of the calling thread: what the bench's own polling costs, to
/// take out of the process's figure.
fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or_default(),
        u32::try_from(t.tv_nsec).unwrap_or_default(),
    )
}

/// Live (not zombie) processes whose environment carries a marker starting
/// with `prefix` (every run's agent of this engine), by pid.
fn marked_processes(prefix: &str) -> Vec<i32> {
    let wanted = format!("{MARKER_ENV}={prefix}").into_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let env = std::fs::read(e.path().join("environ")).ok()?;
            let marked = env.split(|b| *b == 0).any(|kv| kv.starts_with(&wanted));
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            (marked && !zombie).then_some(pid)
        })
        .collect()
}

/// Live (not zombie) processes below this one (every run's sandbox, agent
/// and network helper, and any git the engine runs at that moment), by pid.
fn descendants() -> Vec<i32> {
    let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: HashMap<i32, i32> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let ppid: i32 = fields.next()?.parse().ok()?;
            (state != "Z").then_some((pid, ppid))
        })
        .collect();
    parents
        .keys()
        .copied()
        .filter(|&pid| {
            let mut at = pid;
            for _ in 0..64 {
                match parents.get(&at) {
                    Some(&parent) if parent == me => return true,
                    Some(&parent) if parent > 1 => at = parent,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// `run-*` cgroups left in this engine's cgroup directory, and in the
/// directories of the same name beside it (a hybrid hierarchy's v1
/// controllers: `<base>/<controller>/<name>`).
fn run_cgroups(root: &Path) -> usize {
    let count = |dir: &Path| {
        std::fs::read_dir(dir).map_or(0, |d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("run-"))
                .count()
        })
    };
    let (Some(name), Some(base)) = (root.file_name(), root.parent().and_then(Path::parent)) else {
        return count(root);
    };
    let mut dirs = vec![root.to_owned()];
    if let Ok(controllers) = std::fs::read_dir(base) {
        for c in controllers.filter_map(|e| e.ok()) {
            let dir = c.path().join(name);
            if dir.is_dir() && !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs.iter().map(|d| count(d)).sum()
}

/// What every run's agent marker of `engine` starts with.
fn marker_prefix(engine: &Engine) -> String {
    let one = engine.agent_marker(RunId(0));
    one.strip_suffix('0').unwrap_or(&one).to_owned()
}

/// Percentile by nearest rank, in ms.
fn percentile(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1].as_secs_f64() * 1000.0
}

/// What a subscriber saw: when each gate's events came, by key (gate id,
/// decided?), and how many events of each type.
#[derive(Default)]
struct Watched {
    at: HashMap<(i64, bool), Instant>,
    kinds: std::collections::BTreeMap<&'static str, usize>,
    /// Why runs failed (their error activity), and how many said it.
    errors: std::collections::BTreeMap<String, usize>,
}

type Seen = Arc<Mutex<Watched>>;

fn saw(seen: &Seen, event: &EngineEvent) {
    let now = Instant::now();
    let kind = match event {
        EngineEvent::RunChanged { .. } => "run_changed",
        EngineEvent::GateOpened { .. } => "gate_opened",
        EngineEvent::GateDecided { .. } => "gate_decided",
        EngineEvent::RunActivity { .. } => "run_activity",
        _ => "other",
    };
    let mut w = seen.lock().unwrap_or_else(|p| p.into_inner());
    *w.kinds.entry(kind).or_default() += 1;
    if let Some(key) = gate_key(event) {
        w.at.insert(key, now);
    }
    if let EngineEvent::RunActivity { activity } = event {
        if let overseer_core::Activity::Error { text } = &activity.entry {
            *w.errors.entry(text.clone()).or_default() += 1;
        }
    }
}

fn gate_key(event: &EngineEvent) -> Option<(i64, bool)> {
    match event {
        EngineEvent::GateOpened { gate_id, .. } => Some((gate_id.0, false)),
        EngineEvent::GateDecided { gate_id, .. } => Some((gate_id.0, true)),
        _ => None,
    }
}

/// The moment of publication: an in-process subscriber blocked on the
/// engine's channel on a thread of its own (not behind the runtime's tasks).
fn watch_published(engine: &Engine, seen: Seen) {
    let mut rx = engine.subscribe();
    let watch = move || loop {
        match rx.blocking_recv() {
            Ok(event) => saw(&seen, &event),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                eprintln!("capacity bench: the in-process subscriber lagged by {n} events");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    };
    // Named, to tell the bench's threads from the engine's in a profile.
    if let Err(e) = std::thread::Builder::new()
        .name("bench-published".into())
        .spawn(watch)
    {
        panic!("cannot start the in-process subscriber: {e}");
    }
}

/// A client of the local API on its socket, subscribed, on a thread and
/// runtime of its own: when each gate event reached it.
fn watch_socket(socket: &Path, seen: Seen) -> tokio::sync::oneshot::Receiver<Result<(), String>> {
    let socket = socket.to_owned();
    let (ready, subscribed) = tokio::sync::oneshot::channel();
    let client = move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            let _ = ready.send(Err("no runtime for the client".into()));
            return;
        };
        rt.block_on(async move {
            let mut client = match overseer_server::client::Client::connect(&socket).await {
                Ok(Some(c)) => c,
                Ok(None) => {
                    let _ = ready.send(Err("no engine on the socket".into()));
                    return;
                }
                Err(e) => {
                    let _ = ready.send(Err(e.message));
                    return;
                }
            };
            if let Err(e) = client.subscribe().await {
                let _ = ready.send(Err(e.message));
                return;
            }
            let _ = ready.send(Ok(()));
            while let Ok(event) = client.next_event().await {
                saw(&seen, &event);
            }
        });
    };
    if let Err(e) = std::thread::Builder::new()
        .name("bench-client".into())
        .spawn(client)
    {
        panic!("cannot start the socket client: {e}");
    }
    subscribed
}

fn pending_tool_gates(engine: &Engine) -> Vec<overseer_core::GateView> {
    engine
        .gates(true)
        .unwrap_or_default()
        .into_iter()
        .filter(|g| g.kind() == GateKind::ToolCall)
        .collect()
}

/// Figures for target/bench/capacity.json.
#[derive(Default)]
struct Json(Vec<String>);

impl Json {
    fn add(&mut self, key: &str, value: f64) {
        if value.is_finite() {
            self.0.push(format!("\"capacity_{key}\": {value:.3}"));
        }
    }
}

#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
async fn bench(engine: Arc<Engine>, agent: Agent, runs: usize) -> Json {
    let mut json = Json::default();
    let me = std::process::id().to_string();
    let published: Seen = Arc::default();
    let received: Seen = Arc::default();
    watch_published(&engine, published.clone());
    let listener = overseer_server::server::bind(&engine.paths().socket()).expect("bind");
    tokio::spawn(overseer_server::server::serve(engine.clone(), listener));
    let subscribed = watch_socket(&engine.paths().socket(), received.clone());
    match tokio::time::timeout(Duration::from_secs(30), subscribed).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => panic!("the socket client cannot subscribe: {e}"),
        Ok(Err(_)) | Err(_) => panic!("the socket client did not subscribe"),
    }

    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss0, cpu0) = (rss_kib(&me), cpu_time());
    println!(
        "capacity: {runs} runs, agent {} ({}), engine before: RSS {:.1} MiB",
        agent.profile(),
        match agent {
            Agent::Scripted => "a contained `sleep` with a scripted session",
            Agent::Demo => "the demo agent over ACP",
        },
        rss0 as f64 / 1024.0
    );

    // Start every run; wait until each waits on its tool-call gate.
    let started = Instant::now();
    for i in 0..runs {
        engine
            .start_task(
                &TaskStart {
                    workspace: "demo".into(),
                    agent: agent.profile().into(),
                    prompt: format!("Capacity bench {i}"),
                    title: None,
                    scenario: Some("permissions".into()),
                    stage: None,
                    settings: TaskSettings {
                        plan: Some(PlanStrategy::Skip),
                        ..Default::default()
                    },
                },
                &Actor::cli(),
            )
            .expect("start a task");
    }
    let queued = started.elapsed();
    let deadline = Instant::now() + PHASE_LIMIT;
    let mut last_print = Instant::now();
    // The bench's own reads while it waits (every pending gate and run, four
    // times a second) are not the engine's cost: timed, and taken out.
    let mut polling = Duration::ZERO;
    let waiting = loop {
        let polled = thread_cpu_time();
        let gates = engine.gates(true).unwrap_or_default();
        for g in gates.iter().filter(|g| g.kind() == GateKind::Plan) {
            let _ = engine.decide_gate(g.id, "approve", None, &Actor::app());
        }
        let waiting = gates
            .iter()
            .filter(|g| g.kind() == GateKind::ToolCall)
            .count();
        // A run that failed to start never waits: stop counting on it.
        let ended = engine
            .runs()
            .unwrap_or_default()
            .iter()
            .filter(|r| r.state.is_released())
            .count();
        polling += thread_cpu_time().saturating_sub(polled);
        if waiting + ended >= runs || Instant::now() >= deadline {
            break waiting;
        }
        if last_print.elapsed() > Duration::from_secs(30) {
            println!(
                "  ... {waiting} of {runs} waiting after {:.0} s",
                started.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let to_wait = started.elapsed();
    let counts = |seen: &Seen| {
        let w = seen.lock().unwrap_or_else(|p| p.into_inner());
        (
            w.kinds.values().sum::<usize>(),
            w.kinds
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    let (p, r) = (counts(&published), counts(&received));
    println!(
        "  events while they started: {} published ({}); {} reached the socket client by then",
        p.0, p.1, r.0
    );
    if waiting < runs {
        eprintln!(
            "capacity bench: only {waiting} of {runs} runs reached their gate (the others ended)"
        );
        let w = published.lock().unwrap_or_else(|p| p.into_inner());
        let mut errors: Vec<_> = w.errors.iter().collect();
        errors.sort_by(|a, b| b.1.cmp(a.1));
        for (text, n) in errors.into_iter().take(5) {
            eprintln!("  {n} runs: {text}");
        }
    }
    // Let the last gates' bookkeeping settle before measuring.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (rss1, cpu1) = (rss_kib(&me), cpu_time());
    let agents = descendants();
    let agents_rss: u64 = agents.iter().map(|p| rss_kib(&p.to_string())).sum();
    // Which processes those are (the sandbox's and the agent's own).
    let mut by_name: std::collections::BTreeMap<String, (usize, u64)> = Default::default();
    for pid in &agents {
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let e = by_name.entry(name.trim().to_owned()).or_default();
        e.0 += 1;
        e.1 += rss_kib(&pid.to_string());
    }
    let n = waiting.max(1) as f64;
    let rss_per_run = (rss1.saturating_sub(rss0)) as f64 / n;
    let start_cpu_per_run = (cpu1 - cpu0).saturating_sub(polling).as_secs_f64() * 1000.0 / n;
    println!(
        "  started: {runs} queued in {:.2} s, {waiting} waiting on a gate after {:.1} s",
        queued.as_secs_f64(),
        to_wait.as_secs_f64()
    );
    println!(
        "  engine RSS with {waiting} waiting: {:.1} MiB ({rss_per_run:.0} KiB per run); CPU to start them {start_cpu_per_run:.1} ms per run (the bench's own polling, {:.0} ms, taken out)",
        rss1 as f64 / 1024.0,
        polling.as_secs_f64() * 1000.0
    );
    println!(
        "  the engine's child processes (sandboxes, agents, network helpers): {} ({:.1} per run), RSS {:.1} MiB ({:.0} KiB per run)",
        agents.len(),
        agents.len() as f64 / n,
        agents_rss as f64 / 1024.0,
        agents_rss as f64 / n
    );
    for (name, (count, kib)) in &by_name {
        println!(
            "    {name}: {count} processes, {:.0} KiB RSS each",
            *kib as f64 / (*count).max(1) as f64
        );
    }
    json.add("runs", runs as f64);
    json.add("runs_waiting", waiting as f64);
    json.add("engine_rss_mib", rss1 as f64 / 1024.0);
    json.add("engine_rss_kib_per_run", rss_per_run);
    json.add("engine_start_cpu_ms_per_run", start_cpu_per_run);
    json.add("agent_rss_kib_per_run", agents_rss as f64 / n);
    json.add("time_to_all_waiting_s", to_wait.as_secs_f64());

    // Idle with every run waiting.
    let (c, w) = (cpu_time(), Instant::now());
    tokio::time::sleep(IDLE_WINDOW).await;
    let (idle_cpu, idle_wall) = (cpu_time() - c, w.elapsed());
    let pct = 100.0 * idle_cpu.as_secs_f64() / idle_wall.as_secs_f64();
    println!(
        "  engine CPU while {waiting} wait: {pct:.2}% of one core ({:.3} ms per run per second)",
        idle_cpu.as_secs_f64() * 1000.0 / idle_wall.as_secs_f64() / n
    );
    json.add("engine_idle_cpu_pct", pct);

    // The fleet's reload, as the window does it.
    let (mut all, mut head, mut gates) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RELOADS {
        let t = Instant::now();
        let listed = engine.runs().expect("runs");
        all.push(t.elapsed());
        let t = Instant::now();
        let first = engine.runs_head(HEAD_ROWS).expect("runs head");
        head.push(t.elapsed());
        let t = Instant::now();
        let pending = engine.gates(true).expect("gates");
        gates.push(t.elapsed());
        assert!(listed.len() >= runs && first.rows.len() <= HEAD_ROWS && !pending.is_empty());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (name, key, v) in [
        ("runs() (the whole fleet)", "reload_runs", &all),
        ("runs_head(100) (first screen)", "reload_head", &head),
        ("gates(pending)", "reload_gates", &gates),
    ] {
        let (p50, p99) = (percentile(v, 50.0), percentile(v, 99.0));
        println!("  reload {name:32} p50 {p50:8.2} ms  p99 {p99:8.2} ms  ({RELOADS} samples)");
        json.add(&format!("{key}_p50_ms"), p50);
        json.add(&format!("{key}_p99_ms"), p99);
    }

    // Decide every gate, one after another.
    let pending = pending_tool_gates(&engine);
    let total = pending.len();
    let (cpu2, decided_from) = (cpu_time(), Instant::now());
    let e = engine.clone();
    let decisions: Vec<(usize, Duration, i64)> = tokio::task::spawn_blocking(move || {
        pending
            .iter()
            .enumerate()
            .filter_map(|(i, g)| {
                let t = Instant::now();
                let ok = e.decide_gate(g.id, "yes", None, &Actor::app());
                let took = t.elapsed();
                std::thread::sleep(DECIDE_EVERY);
                match ok {
                    Ok(_) => Some((total - i, took, g.id.0)),
                    Err(err) => {
                        eprintln!("capacity bench: deciding gate {}: {}", g.id, err.message);
                        None
                    }
                }
            })
            .collect()
    })
    .await
    .expect("the decisions");
    let all_d: Vec<Duration> = decisions.iter().map(|d| d.1).collect();
    let crowded: Vec<Duration> = decisions
        .iter()
        .filter(|d| d.0 * 10 >= total * 9)
        .map(|d| d.1)
        .collect();
    println!(
        "  decide_gate to commit: p50 {:.2} ms  p99 {:.2} ms  ({} decisions, {} ms apart); with >= 90% still waiting: p50 {:.2} ms  p99 {:.2} ms ({})",
        percentile(&all_d, 50.0),
        percentile(&all_d, 99.0),
        all_d.len(),
        DECIDE_EVERY.as_millis(),
        percentile(&crowded, 50.0),
        percentile(&crowded, 99.0),
        crowded.len()
    );
    json.add("decision_commit_p50_ms", percentile(&all_d, 50.0));
    json.add("decision_commit_p99_ms", percentile(&all_d, 99.0));
    json.add("decision_commit_p99_ms_crowded", percentile(&crowded, 99.0));

    // Each decision's event, from publication to the socket client.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let latencies = |decided: bool, of: &[i64]| -> (Vec<Duration>, usize) {
        let p = &published.lock().unwrap_or_else(|p| p.into_inner()).at;
        let r = &received.lock().unwrap_or_else(|p| p.into_inner()).at;
        let mut missing = 0;
        let v = of
            .iter()
            .filter_map(
                |id| match (p.get(&(*id, decided)), r.get(&(*id, decided))) {
                    (Some(a), Some(b)) => Some(b.saturating_duration_since(*a)),
                    _ => {
                        missing += 1;
                        None
                    }
                },
            )
            .collect();
        (v, missing)
    };
    let ids: Vec<i64> = decisions.iter().map(|d| d.2).collect();
    let (opened, opened_missing) = latencies(false, &ids);
    let (decided, decided_missing) = latencies(true, &ids);
    for (name, key, v, missing) in [
        (
            "gate_decided (while the others wait)",
            "event_to_socket",
            &decided,
            decided_missing,
        ),
        (
            "gate_opened (while the runs start)",
            "event_to_socket_starting",
            &opened,
            opened_missing,
        ),
    ] {
        let (p50, p99) = (percentile(v, 50.0), percentile(v, 99.0));
        println!(
            "  event to socket client, {name:38} p50 {p50:8.3} ms  p99 {p99:8.3} ms  ({} events, {missing} not seen)",
            v.len()
        );
        json.add(&format!("{key}_p50_ms"), p50);
        json.add(&format!("{key}_p99_ms"), p99);
    }

    // Every run finishes: its agent answered, its turn ends, its work waits
    // for review.
    let deadline = Instant::now() + PHASE_LIMIT;
    let mut polling = Duration::ZERO;
    let finished = loop {
        let polled = thread_cpu_time();
        let all = engine.runs().unwrap_or_default();
        let finished = all
            .iter()
            .filter(|r| r.state == RunState::PendingReview || r.state.is_released())
            .count();
        polling += thread_cpu_time().saturating_sub(polled);
        if finished >= all.len() || Instant::now() >= deadline {
            break finished;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let (cpu3, rss3) = (cpu_time().saturating_sub(polling), rss_kib(&me));
    println!(
        "  {finished} runs finished {:.1} s after the first decision; engine CPU from decision to review {:.1} ms per run; RSS after {:.1} MiB",
        decided_from.elapsed().as_secs_f64(),
        cpu3.saturating_sub(cpu2).as_secs_f64() * 1000.0 / n,
        rss3 as f64 / 1024.0
    );
    json.add(
        "engine_finish_cpu_ms_per_run",
        cpu3.saturating_sub(cpu2).as_secs_f64() * 1000.0 / n,
    );
    json
}

/// Ends every run and makes sure none of their processes or cgroups is
/// left: what the bench prints last.
async fn clean_up(engine: &Arc<Engine>) {
    for run in engine.runs().unwrap_or_default() {
        match run.state {
            RunState::PendingReview => {
                let _ = engine.reject_run(run.id, "benchmark over", &Actor::cli());
            }
            s if !s.is_released() => {
                let _ = engine.abort_run(run.id, &Actor::cli());
            }
            _ => {}
        }
    }
    engine.stop_agents().await;
    let prefix = marker_prefix(engine);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(marked_processes(&prefix).is_empty() && descendants().is_empty())
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut survivors = marked_processes(&prefix);
    survivors.extend(descendants());
    survivors.sort_unstable();
    survivors.dedup();
    for pid in &survivors {
        if let Some(pid) = rustix::process::Pid::from_raw(*pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    let cgroups = engine.run_cgroup_root().map_or(0, |root| {
        overseer_contain::cgroup::remove_if_empty(&root);
        run_cgroups(&root)
    });
    println!(
        "  left behind: {} agent processes (killed), {cgroups} run cgroups",
        survivors.len()
    );
    if let Err(e) = engine.shutdown() {
        eprintln!("capacity bench: engine shutdown: {}", e.message);
    }
}

fn main() {
    let runs = std::env::var("OVERSEER_BENCH_RUNS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(RUNS);
    let agent = match std::env::var("OVERSEER_BENCH_AGENT").as_deref() {
        Ok("demo") => Agent::Demo,
        Ok("scripted") | Err(_) => Agent::Scripted,
        Ok(other) => {
            eprintln!("OVERSEER_BENCH_AGENT is `scripted` or `demo`, not {other:?}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let world = common::world_with(
            WorkspaceSettings::default(),
            Arc::new(LogNotifier),
            &profiles(),
        )
        .await;
        if agent == Agent::Scripted {
            world
                .engine
                .use_agent_sessions(Arc::new(Scripted(script(runs))));
        }
        let engine = world.engine.clone();
        // On a task of its own: a failed phase ends there, and the clean-up
        // below still runs.
        let outcome = tokio::spawn(bench(engine.clone(), agent, runs)).await;
        clean_up(&engine).await;
        match outcome {
            Ok(json) => {
                let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
                let text = format!("{{{}}}\n", json.0.join(", "));
                if let Err(e) = std::fs::create_dir_all(&dir)
                    .and_then(|()| std::fs::write(dir.join("capacity.json"), text))
                {
                    eprintln!("capacity bench: cannot write capacity.json: {e}");
                }
            }
            Err(e) => eprintln!("capacity bench: a phase failed: {e}"),
        }
        drop(world);
    });
}

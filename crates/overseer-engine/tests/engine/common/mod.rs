//! Shared by the engine's end-to-end tests: a real engine on a temp dir, a
//! real git repository, the demo agent as a real child process.

use overseer_core::{Actor, GateKind, GateView, RunState};
use overseer_engine::{Engine, LogNotifier, Notifier, Paths, SystemClock, TaskStart};
use overseer_store::{TaskSettings, WorkspaceSettings};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use overseer_test_support::{demo_agent, git, repo_with};

pub mod disk;
pub mod real;
pub mod scripted;

/// An engine on a fresh data dir and config dir under `dir`, serving the
/// local API on its socket (the tests that talk to it as the CLI does).
/// Call from within a runtime.
pub fn served(dir: &std::path::Path) -> (Arc<Engine>, Paths, tokio::task::JoinHandle<()>) {
    let paths = Paths {
        data_dir: dir.join("data"),
        config_dir: dir.join("config"),
    };
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine"),
    );
    let listener = overseer_server::server::bind(&paths.socket()).expect("bind");
    let server = tokio::spawn(overseer_server::server::serve(engine.clone(), listener));
    (engine, paths, server)
}

/// A notifier that keeps every notification, for tests that check who was
/// told what (each test file adds the views it needs).
#[derive(Default)]
pub struct Captured(pub std::sync::Mutex<Vec<overseer_engine::Notification>>);

impl Notifier for Captured {
    fn notify(&self, n: &overseer_engine::Notification) {
        self.0.lock().expect("lock").push(n.clone());
    }
}

impl Captured {
    /// The kinds of the notifications sent so far, in order.
    pub fn kinds(&self) -> Vec<overseer_engine::NotificationKind> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .map(|n| n.kind)
            .collect()
    }

    /// The notifications of `kind` sent so far.
    pub fn of(
        &self,
        kind: overseer_engine::NotificationKind,
    ) -> Vec<overseer_engine::Notification> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|n| n.kind == kind)
            .cloned()
            .collect()
    }

    /// Waits (up to 10 s) for a notification of `kind`: they are sent right
    /// after the decision is committed.
    pub async fn wait_for(&self, kind: overseer_engine::NotificationKind) -> bool {
        for _ in 0..500 {
            if self.kinds().contains(&kind) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

pub struct World {
    pub _dir: tempfile::TempDir,
    pub repo: PathBuf,
    pub engine: Arc<Engine>,
}

pub async fn world(sensors: Vec<String>) -> World {
    world_with(
        WorkspaceSettings {
            sensors,
            ..Default::default()
        },
        Arc::new(LogNotifier),
        "",
    )
    .await
}

/// A world with these workspace settings, notifier, and extra overseer.toml lines.
pub async fn world_with(
    settings: WorkspaceSettings,
    notifier: Arc<dyn Notifier>,
    extra_config: &str,
) -> World {
    world_in(
        tempfile::tempdir().expect("tempdir"),
        settings,
        notifier,
        extra_config,
    )
    .await
}

/// [`world_with`] in `dir`, whose `data` may be prepared already (a
/// filesystem of its own mounted there).
pub async fn world_in(
    dir: tempfile::TempDir,
    settings: WorkspaceSettings,
    notifier: Arc<dyn Notifier>,
    extra_config: &str,
) -> World {
    std::env::set_var("OVERSEER_DEMO_STEP_MS", "0");
    let repo = repo_with(
        &dir.path().join("repo"),
        &[("README.md", "# demo\n"), ("src/greeting.txt", "hello\n")],
    );
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).expect("config");
    std::fs::write(
        config.join("overseer.toml"),
        format!(
            "abort_timeout_seconds = 1\n{extra_config}\n[agents.demo]\ncommand = {:?}\nmode = \"default\"\n",
            demo_agent().to_string_lossy()
        ),
    )
    .expect("config file");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: config,
    };
    let engine = Arc::new(Engine::open(paths, Arc::new(SystemClock), notifier).expect("engine"));
    engine
        .add_workspace(&repo, Some("demo"), settings, &Actor::cli())
        .expect("workspace");
    engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    World {
        _dir: dir,
        repo,
        engine,
    }
}

pub fn start(w: &World, scenario: &str) -> overseer_core::RunId {
    start_with(w, scenario, TaskSettings::default())
}

pub fn start_with(w: &World, scenario: &str, settings: TaskSettings) -> overseer_core::RunId {
    start_as(w, "demo", scenario, settings)
}

/// Starts a task with the agent profile `agent` (one the world's
/// overseer.toml defines, running the demo agent) in `scenario`.
pub fn start_as(
    w: &World,
    agent: &str,
    scenario: &str,
    settings: TaskSettings,
) -> overseer_core::RunId {
    w.engine
        .start_task(
            &TaskStart {
                workspace: "demo".into(),
                agent: agent.into(),
                prompt: "Update the greeting".into(),
                title: None,
                scenario: Some(scenario.into()),
                stage: None,
                settings,
            },
            &Actor::cli(),
        )
        .expect("start")
        .run_id
}

/// Waits until `pred` holds, re-checking on every engine event.
pub async fn until<T>(w: &World, what: &str, mut pred: impl FnMut(&Engine) -> Option<T>) -> T {
    let mut rx = w.engine.subscribe();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = pred(&w.engine) {
            return v;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "timed out waiting for {what}; runs: {:?}",
            w.engine.runs()
        );
        let _ = tokio::time::timeout(left.min(Duration::from_millis(500)), rx.recv()).await;
    }
}

pub async fn pending_gate(w: &World, run: overseer_core::RunId, kind: GateKind) -> GateView {
    until(w, &format!("a {kind:?} gate on run {run}"), |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == kind)
    })
    .await
}

pub async fn state(w: &World, run: overseer_core::RunId, want: RunState) {
    until(w, &format!("run {run} to be {want}"), |e| {
        (e.run(run).ok()?.state == want).then_some(())
    })
    .await
}

/// Another engine on the same data, started, in place of `w`'s (the old one
/// already stopped: see [`restart`]).
pub fn reopen(w: &mut World) {
    reopen_with(w, Arc::new(LogNotifier));
}

/// [`reopen`] with the new engine telling `notifier`.
pub fn reopen_with(w: &mut World, notifier: Arc<dyn Notifier>) {
    let paths: Paths = w.engine.paths().clone();
    let engine = Arc::new(Engine::open(paths, Arc::new(SystemClock), notifier).expect("engine"));
    engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    w.engine = engine;
}

/// The engine stops (its agents with it) and another starts on the same data.
pub async fn restart(w: &mut World) {
    w.engine.stop_agents().await;
    reopen(w);
}

/// A clock the test moves by hand (from the wall clock's time when made).
pub struct TestClock(std::sync::atomic::AtomicI64);

impl TestClock {
    pub fn new() -> Arc<Self> {
        use overseer_engine::Clock;
        Arc::new(TestClock(std::sync::atomic::AtomicI64::new(
            SystemClock.now(),
        )))
    }

    /// Moves the time on by `ms`.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl overseer_engine::Clock for TestClock {
    fn now(&self) -> overseer_core::Millis {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// An engine on a fresh data dir and config dir under `dir`, on `clock`,
/// with nothing started (for tests of what the engine keeps, not of runs).
pub fn engine_on(dir: &std::path::Path, clock: Arc<dyn overseer_engine::Clock>) -> Arc<Engine> {
    let paths = Paths {
        data_dir: dir.join("data"),
        config_dir: dir.join("config"),
    };
    Arc::new(Engine::open(paths, clock, Arc::new(LogNotifier)).expect("engine"))
}

/// A device paired for `person`: a code the CLI issued, redeemed as a
/// browser redeems it.
pub fn pair(engine: &Engine, person: &str, name: &str) -> overseer_engine::Paired {
    let pairing = engine
        .pair_device(person, name, &Actor::cli())
        .expect("a code");
    engine.redeem_pairing(&pairing.code).expect("paired")
}

/// The processes (not zombies) whose environment carries exactly `marker`
/// (an agent's: [`Engine::agent_marker`]).
pub fn marked_pids(marker: &str) -> Vec<u32> {
    let marker = format!("OVERSEER_AGENT_MARKER={marker}\0");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let env = std::fs::read(e.path().join("environ")).ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            (String::from_utf8_lossy(&env).contains(&marker) && !zombie).then_some(pid)
        })
        .collect()
}

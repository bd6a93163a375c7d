use crate::config::{Config, ConfigError};
use crate::notify::notification_for;
use crate::{demo, Clock, Notifier, Paths};
use overseer_core::{Actor, ApiError, EngineEvent, ErrorCode, GateId, GateView, RunId, RunView};
use overseer_store::{AuditFailure, Keyring, Store, StoreError, VerifyReport, WriteTx, Writer};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// Where the notification settings live in the database's settings.
pub(crate) const NOTIFICATIONS_KEY: &str = "notifications";

/// How many events a slow subscriber may fall behind before it misses some.
const EVENT_BUFFER: usize = 4096;

/// How long [`Engine::stop_agents`] waits for the orchestrator's tasks once
/// the agents are gone: each stops at its next await, so this only bounds a
/// blocking call one is inside (a git command, a commit).
pub(crate) const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("another Overseer engine is already running on {0} (the desktop app or `overseer serve`); use it, or stop it first")]
    AlreadyRunning(std::path::PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A change counter per gate that its waiters watch, moved by the store's
/// writer right after each commit that changed the gate's row (a decision,
/// an override, a timer, the engine acting on it), whoever wrote it: a
/// waiter wakes when its gate changed, not when anything else did. Woken by
/// every change of the gate's run instead, each waiter re-read its gate for
/// every timeline entry of its run; with a broadcast to all, for every
/// event of every run.
#[derive(Default)]
pub(crate) struct GateWatch {
    gates: Mutex<std::collections::HashMap<GateId, Watched>>,
    /// How many times waiters were woken and re-read their gate, in all
    /// (for tests and benches).
    wakes: std::sync::atomic::AtomicU64,
}

/// A gate someone waits on.
struct Watched {
    changed: tokio::sync::watch::Sender<u64>,
    /// Times its waiters were woken (for tests and benches).
    woken: u64,
}

impl GateWatch {
    /// A wait that sees every change of `gate` from now on.
    pub(crate) fn watch(&self, gate: GateId) -> GateWait<'_> {
        let changes = self
            .lock()
            .entry(gate)
            .or_insert_with(|| Watched {
                changed: tokio::sync::watch::channel(0).0,
                woken: 0,
            })
            .changed
            .subscribe();
        GateWait {
            watch: self,
            gate,
            changes: Some(changes),
        }
    }

    fn lock(&self) -> MutexGuard<'_, std::collections::HashMap<GateId, Watched>> {
        self.gates.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the waiters on `changed` (called after the commit).
    fn changed(&self, changed: &[GateId]) {
        let mut gates = self.lock();
        for gate in changed {
            if let Some(w) = gates.get(gate) {
                if w.changed.receiver_count() == 0 {
                    gates.remove(gate);
                } else {
                    w.changed.send_modify(|n| *n = n.wrapping_add(1));
                }
            }
        }
    }

    /// Has every waiter read its gate again, changed or not.
    pub(crate) fn look_again(&self) {
        let all: Vec<GateId> = self.lock().keys().copied().collect();
        self.changed(&all);
    }
}

/// One waiter's watch on a gate ([`GateWatch::watch`]); the gate is
/// forgotten when its last waiter is gone (also when the wait is dropped).
pub(crate) struct GateWait<'w> {
    watch: &'w GateWatch,
    gate: GateId,
    changes: Option<tokio::sync::watch::Receiver<u64>>,
}

impl GateWait<'_> {
    /// Marks what was seen: a change from here on ends [`GateWait::changed`].
    pub(crate) fn seen(&mut self) {
        if let Some(rx) = self.changes.as_mut() {
            rx.borrow_and_update();
        }
    }

    /// Waits until the gate changed since last seen; false once the engine
    /// is gone.
    pub(crate) async fn changed(&mut self) -> bool {
        let Some(rx) = self.changes.as_mut() else {
            return false;
        };
        if rx.changed().await.is_err() {
            return false;
        }
        self.watch
            .wakes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(w) = self.watch.lock().get_mut(&self.gate) {
            w.woken += 1;
        }
        true
    }
}

impl Drop for GateWait<'_> {
    fn drop(&mut self) {
        drop(self.changes.take());
        let mut gates = self.watch.lock();
        if gates
            .get(&self.gate)
            .is_some_and(|w| w.changed.receiver_count() == 0)
        {
            gates.remove(&self.gate);
        }
    }
}

/// The engine, as layers by job, each a service that holds the one below
/// it and its own state, and reaches nothing above it (the compiler keeps
/// the arrows pointing down):
///
/// | layer | its job | its own state | its methods |
/// |---|---|---|---|
/// | [`Shared`] | the store, the event bus, the clock, the tasks | store, writer, bus, config | `engine.rs` |
/// | [`Records`] | the timeline, transitions, workspaces, diffs, signed effects, settings, gate pages, paired devices | the web URL | `work.rs`, `signed.rs`, `autorun.rs`, `settings.rs`, `gate_page.rs`, `devices.rs` |
/// | [`Runs`] | live agents, their containment, limits and the disk floor | live runs, floods, disk | part of `orchestrator/mod.rs`, `containment.rs`, `disk/watch.rs` |
/// | [`Merges`] | reviews and merges | | `merge.rs` |
/// | [`Supervision`] | gates: rules, the supervisor, decisions, steering, flood pauses | itself (`Weak`) | `supervise.rs`, `decide.rs`, `flood/pause.rs` |
/// | [`Engine`] | the handle: external sessions, messages, the orchestrator's start and stop, serving browsers as set | external sessions, the runs' sockets, the web server | `orchestrator/`, `agents/`, `web_serving/` |
///
/// Each layer holds the one below in an `Arc` and derefs to it (a layer *is*
/// its lower layers plus its own job), so the handle reaches every
/// service's methods while each service's code sees only what is beneath
/// it; a service that spawns work that outlives a call takes
/// `self: &Arc<Self>` and gives the task its own layer, never the engine.
/// The contract's `Api` is implemented on `overseer_server::api::Served`,
/// not here.
/// Cheap to share: wrap it in an `Arc`.
pub struct Engine {
    below: Arc<Supervision>,
    /// External sessions' agents, "always" rules and waiting askers.
    pub(crate) external: crate::agents::external::sessions::Sessions,
    /// Itself, for effects that outlive a call (stopping an aborted agent).
    pub(crate) me: std::sync::OnceLock<std::sync::Weak<Engine>>,
    /// Serves each run's own socket: the transport the host gave
    /// [`Engine::start_orchestrator`].
    pub(crate) voices: std::sync::OnceLock<Arc<dyn RunVoices>>,
    /// Serving browsers: the host's way to, what it serves now
    /// (`web_serving/`).
    pub(crate) web: crate::web_serving::state::WebState,
}

/// Where a run's agent asks and reports (ask_user, request_plan_approval,
/// report_step, messages): the run's own socket, served by a transport
/// (`overseer_server::RunSockets`) that the host hands to
/// [`Engine::start_orchestrator`]. The engine binds what it returns into the
/// run's sandbox; the transport answers the run's asks and nothing else.
pub trait RunVoices: Send + Sync {
    /// Binds and serves `run`'s own socket.
    fn open(&self, engine: &Arc<Engine>, run: RunId) -> Result<RunVoice, EngineError>;
}

/// A run's socket, served while this is kept (the run's agent keeps it).
pub struct RunVoice {
    /// Where it listens (outside the sandbox).
    pub path: PathBuf,
    /// Stops serving, and removes the socket, when dropped.
    pub serving: Box<dyn Send + Sync>,
}

/// Gates and decisions: rules, the supervisor's evaluators, steering.
pub struct Supervision {
    below: Arc<Merges>,
    /// Itself, for the work its decisions start that outlives a call (an
    /// evaluator, a paused run's wait).
    pub(crate) me: std::sync::Weak<Supervision>,
}

/// Reviews and merges.
pub struct Merges {
    below: Arc<Runs>,
}

/// Live agents: their processes, containment, caps and disk pauses.
pub struct Runs {
    below: Arc<Records>,
    /// Runs whose agent is alive, driven by the orchestrator.
    pub(crate) live: crate::orchestrator::live::LiveRuns,
    /// Each run's caps on what it asks of the engine and the user.
    pub(crate) floods: crate::flood::Floods,
    /// The data dir's free space: its reserve, its floor, runs paused on it.
    pub(crate) disk: Arc<crate::disk::Disk>,
    /// The slirp4netns this engine's runs use instead of the machine's
    /// ([`Runs::use_slirp4netns`]).
    pub(crate) slirp: std::sync::OnceLock<std::path::PathBuf>,
}

/// What a run did and where it stands: the timeline, transitions,
/// workspaces, diffs, signed effects.
pub struct Records {
    below: Arc<Shared>,
    /// Where the web transport serves browsers, if it does: what a
    /// pairing's URL says (`devices.rs`).
    pub(crate) web_url: Mutex<Option<String>>,
    /// Wrong pairing codes typed, counted in memory (`devices.rs`).
    pub(crate) wrong_pairing: Mutex<WrongTries>,
}

/// The wrong pairing codes typed against the codes outstanding, kept in
/// memory (a flood of wrong codes writes nothing; a restart starts the
/// count over, which only the owner can do). Counted by `devices.rs`;
/// kept here, beside the layer that holds it, so that this file needs
/// nothing of that one.
#[derive(Debug, Default)]
pub(crate) struct WrongTries {
    /// Wrong tries since the count last started over.
    pub(crate) count: i64,
    /// When the last one was counted.
    pub(crate) last: Option<overseer_core::Millis>,
}

/// What every layer shares: the one writer of the store, the event bus,
/// the clock, the configuration, the tasks.
pub struct Shared {
    /// Reads (their own connection; they never wait behind a write).
    store: Mutex<Store>,
    /// Writes, from any thread at once: concurrent writes share one
    /// transaction (group commit), each signed and chained in order.
    writer: Arc<Writer>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) notifier: Arc<dyn Notifier>,
    events: broadcast::Sender<EngineEvent>,
    paths: Paths,
    pub(crate) config: Config,
    /// The runtime the orchestrator runs on, once started.
    pub(crate) runtime: std::sync::OnceLock<tokio::runtime::Handle>,
    /// Audit length at the last checkpoint.
    checkpointed: Mutex<i64>,
    /// What the user muted (kept in the database, cached here).
    pub(crate) notifications: Mutex<crate::notify::NotificationSettings>,
    /// Set when the app closes: agents are being stopped on purpose, so
    /// their ends are neither failures nor deviations.
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    /// The orchestrator's tasks (run drivers, agents' pumps, answers runs
    /// wait on, gate timers): [`Engine::stop_agents`] waits for them, so
    /// none still writes when the final checkpoint is taken, or wakes up
    /// after the runtime is gone.
    pub(crate) tasks: tokio_util::task::TaskTracker,
    /// Cancelled by [`Engine::stop_agents`]: the tasks spawned with
    /// [`Shared::spawn_cancellable`] stop at their next await.
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    /// The database's id, which names its agents' processes (read once).
    pub(crate) db_id: String,
    /// Wakes the waiters on a gate when that gate changed
    /// ([`crate::waiting::wait_gate`]).
    pub(crate) gate_watch: Arc<GateWatch>,
    /// Webhook deliveries: the hooks, the delivery thread ([`crate::webhooks`]).
    pub(crate) webhooks: crate::webhooks::state::Deliveries,
}

macro_rules! layer_on {
    ($($upper:ty => $lower:ty $(as $layer:ident)?),* $(,)?) => {$(
        impl std::ops::Deref for $upper {
            type Target = Arc<$lower>;
            fn deref(&self) -> &Arc<$lower> {
                &self.below
            }
        }

        $(impl $lower {
            /// This layer, shared: what a task it starts holds (reached
            /// from any layer above by deref).
            pub(crate) fn $layer(self: &Arc<Self>) -> Arc<$lower> {
                self.clone()
            }
        })?
    )*};
}

layer_on! {
    Engine => Supervision,
    Supervision => Merges,
    Merges => Runs as runs_layer,
    Runs => Records,
    Records => Shared as shared_layer,
}

/// The marker every agent process of this database carries in its environment.
pub(crate) fn marker_prefix(engine: &Shared) -> String {
    format!("overseer-{}-", engine.db_id)
}

impl Engine {
    /// Opens the store under `paths` (creating the key on first start).
    pub fn open(
        paths: Paths,
        clock: Arc<dyn Clock>,
        notifier: Arc<dyn Notifier>,
    ) -> Result<Engine, EngineError> {
        overseer_contain::process::raise_fd_limit();
        // The owner's alone, whoever made the dirs and files first.
        for fixed in paths.make_private().map_err(|e| EngineError::Io {
            path: paths.data_dir.clone(),
            source: std::io::Error::other(e),
        })? {
            tracing::warn!("{fixed}");
        }
        let config = Config::load(&paths.config_dir)?;
        let keyring = Keyring::load_or_create(&paths.config_dir)?;
        let store = match Store::open(&paths.db(), keyring) {
            // What the reserve is for: the engine starts (its runs paused
            // until there is room) instead of refusing to.
            Err(StoreError::DiskFull { .. })
                if crate::disk::release_reserve_in(&paths.data_dir) =>
            {
                Store::open(&paths.db(), Keyring::load_or_create(&paths.config_dir)?)?
            }
            other => other?,
        };
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let disk = crate::disk::Disk::new(&paths.data_dir, &config.disk);
        let on_full = disk.clone();
        store
            .writer()
            .on_disk_full(Box::new(move || on_full.on_full()));
        let gate_watch = Arc::new(GateWatch::default());
        let watch = gate_watch.clone();
        store
            .writer()
            .on_gates_changed(Box::new(move |gates| watch.changed(gates)));
        let checkpointed = store.audit_len()?;
        let db_id = store.db_id()?;
        let notifications = store
            .setting(NOTIFICATIONS_KEY)?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let webhooks = crate::webhooks::state::Deliveries::default();
        webhooks.prime(store.webhooks()?);
        let shared = Shared {
            writer: store.writer(),
            store: Mutex::new(store),
            clock,
            notifier,
            events,
            paths,
            config,
            runtime: std::sync::OnceLock::new(),
            checkpointed: Mutex::new(checkpointed),
            notifications: Mutex::new(notifications),
            stopping: std::sync::atomic::AtomicBool::new(false),
            tasks: tokio_util::task::TaskTracker::new(),
            cancel: tokio_util::sync::CancellationToken::new(),
            db_id,
            gate_watch,
            webhooks,
        };
        let records = Arc::new(Records {
            below: Arc::new(shared),
            web_url: Mutex::new(None),
            wrong_pairing: Mutex::default(),
        });
        records.tell_migrated_people();
        let runs = Arc::new(Runs {
            below: records,
            live: Default::default(),
            floods: Default::default(),
            disk,
            slirp: std::sync::OnceLock::new(),
        });
        Ok(Engine {
            below: Arc::new_cyclic(|me| Supervision {
                below: Arc::new(Merges { below: runs }),
                me: me.clone(),
            }),
            external: Default::default(),
            me: std::sync::OnceLock::new(),
            voices: std::sync::OnceLock::new(),
            web: Default::default(),
        })
    }

    /// Carries out a request from outside (the socket, the window) on a
    /// blocking thread (a store call may wait on SQLite's lock) that
    /// [`Engine::stop_agents`] waits for; refused once the engine is closing.
    pub async fn carry_out<T: Send + 'static>(
        self: &Arc<Self>,
        request: impl FnOnce(&Engine) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        self.refuse_if_closing()?;
        let me = self.clone();
        self.tasks
            .spawn_blocking(move || request(&me))
            .await
            .unwrap_or_else(|e| {
                Err(ApiError::new(
                    ErrorCode::Internal,
                    format!("request failed: {e}"),
                ))
            })
    }
}

impl Shared {
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The marker every agent process of this database carries in its
    /// environment (a transport refuses a connection from a process that
    /// carries it).
    pub fn run_marker_prefix(&self) -> String {
        marker_prefix(self)
    }

    /// Events published after each commit, in commit order.
    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.events.subscribe()
    }

    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave a half-written
        // transaction behind (it rolls back on drop), so the store is usable.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether another connection committed to the database since the
    /// last look ([`Writer::written_elsewhere`]).
    pub(crate) fn written_elsewhere(&self) -> Result<bool, StoreError> {
        self.writer.written_elsewhere()
    }

    /// Runs `f` in a write transaction, shared with the writes other
    /// threads make at the same time, and returns once it is committed
    /// (its error, or the commit's, otherwise: then nothing of it is kept).
    /// Once committed, the events its changes caused are published (the
    /// store records them as it writes: [`overseer_store::Changes`]); a
    /// write that was rolled back publishes nothing.
    /// Does not take the read lock: reads go on meanwhile. Called from a
    /// task, the wait does not hold up the runtime's other tasks
    /// ([`overseer_contain::blocking::off_worker`]), so many agents' writes can share a
    /// commit.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (out, changes) = self.writer.write_changes(f)?;
        self.publish(changes.into_events());
        Ok(out)
    }

    /// How many times waiters on gates were woken since the engine opened
    /// (each wake is one more read of the gate, and of its signed record
    /// once decided), in all and, while someone waits on it, on `gate`:
    /// for tests and benches.
    pub fn gate_wakes(&self, gate: GateId) -> (u64, Option<u64>) {
        let all = self
            .gate_watch
            .wakes
            .load(std::sync::atomic::Ordering::Relaxed);
        (all, self.gate_watch.lock().get(&gate).map(|w| w.woken))
    }

    pub fn runs(&self) -> Result<Vec<RunView>, ApiError> {
        Ok(self.store().runs()?)
    }

    /// How many runs need the user (the tray's count).
    pub fn needs_you_count(&self) -> Result<usize, ApiError> {
        Ok(self.store().needs_you_count()?)
    }

    pub fn run(&self, id: RunId) -> Result<RunView, ApiError> {
        Ok(self.store().run(id)?)
    }

    pub fn gates(&self, only_pending: bool) -> Result<Vec<GateView>, ApiError> {
        Ok(self.store().gates(only_pending)?)
    }

    pub fn gate(&self, id: GateId) -> Result<GateView, ApiError> {
        Ok(self.store().gate(id)?)
    }

    /// A large fleet for benchmarks (no events: open the window afterwards).
    pub fn seed_bulk(&self, actor: &Actor, count: u32) -> Result<Vec<RunId>, ApiError> {
        let now = self.clock.now();
        Ok(demo::seed_bulk(&mut self.store(), actor, now, count)?)
    }

    /// Seeds the demo fleet and publishes every resulting row.
    pub fn seed_demo(&self, actor: &Actor, settled: bool) -> Result<Vec<RunId>, ApiError> {
        let now = self.clock.now();
        let (ids, events) = demo::seed(&mut self.store(), actor, now, settled)?;
        self.publish(events);
        Ok(ids)
    }

    /// Verifies the audit log's chain and checkpoints, and every decision row
    /// against its signed record.
    pub fn verify_audit(&self) -> Result<Result<VerifyReport, AuditFailure>, ApiError> {
        Ok(self.store().verify_audit()?)
    }

    /// Writes a checkpoint if records were appended since the last one.
    pub fn checkpoint_if_moved(&self) -> Result<bool, ApiError> {
        let mut store = self.store();
        let len = store.audit_len()?;
        let mut done = self.checkpointed.lock().unwrap_or_else(|p| p.into_inner());
        if len == *done {
            return Ok(false);
        }
        let cp = store.checkpoint(self.clock.now())?;
        *done = cp.count;
        Ok(true)
    }

    /// The notification kinds the user muted.
    pub fn notifications(&self) -> crate::notify::NotificationSettings {
        self.notifications
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How loudly each kind of inbox item is told: the user's choice, else
    /// `[notifications.urgency]` in `overseer.toml`.
    pub fn urgencies(&self) -> crate::UrgencySettings {
        self.notifications()
            .urgency
            .over(self.config.notifications.urgency)
    }

    /// Every agent profile, installed or not, with what it still needs.
    pub fn agents(&self) -> Vec<crate::config::AgentInfo> {
        self.config.agent_infos(|k| std::env::var(k).ok())
    }

    /// True once [`Engine::stop_agents`] began: the app is closing.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Refuses a request from outside (the socket, the window) once the
    /// engine is closing: past that point its final checkpoint may be taken.
    pub fn refuse_if_closing(&self) -> Result<(), ApiError> {
        if self.is_stopping() {
            return Err(ApiError::new(
                ErrorCode::EngineUnavailable,
                "Overseer is closing: this request was not carried out; run it again once it has \
                 closed (with no engine running, the CLI works on the database itself)",
            ));
        }
        Ok(())
    }

    /// Spawns orchestration work that has no use once the engine stops (a
    /// run's driver, its agent's pump, an answer a run waits on, the gate
    /// timers): at [`Engine::stop_agents`] it stops at its next await, and
    /// `stop_agents` waits until it has.
    pub(crate) fn spawn_cancellable(
        &self,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let cancel = self.cancel.clone();
        self.tasks.spawn(async move {
            cancel.run_until_cancelled(work).await;
        })
    }

    /// Spawns work that finishes even when the engine stops (keeping the
    /// last of an agent's log): [`Engine::stop_agents`] waits for it.
    pub(crate) fn spawn_to_finish(
        &self,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.tasks.spawn(work);
    }

    /// Clean shutdown: a final checkpoint so a cut tail is detectable.
    pub fn shutdown(&self) -> Result<(), ApiError> {
        self.checkpoint_if_moved().map(|_| ())
    }

    /// An aborted run's agent is gone, its whole process tree with it
    /// (`killed`): not a write, so no transaction tells it.
    pub(crate) fn publish_aborted(&self, run_id: RunId, killed: Vec<u32>) {
        self.publish(vec![EngineEvent::OrchestrationAborted { run_id, killed }]);
    }

    /// After commit: push to subscribers, then notify the user about what
    /// still needs them once the whole batch is applied (a run that entered
    /// review and left it in the same batch does not call for anyone).
    pub(crate) fn publish(&self, events: Vec<EngineEvent>) {
        for (i, event) in events.iter().enumerate() {
            // No subscribers is fine: nobody is watching.
            let _ = self.events.send(event.clone());
            let latest = events.iter().skip(i).rev().find_map(|e| match e {
                EngineEvent::RunChanged { run } if Some(run.id) == run_of(event) => Some(run),
                EngineEvent::RunChanged { .. }
                | EngineEvent::GateOpened { .. }
                | EngineEvent::GateDecided { .. }
                | EngineEvent::RunActivity { .. }
                | EngineEvent::OrchestrationAborted { .. }
                | EngineEvent::MessagePosted { .. }
                | EngineEvent::WorkspaceChanged { .. }
                | EngineEvent::TaskChanged { .. }
                | EngineEvent::DeviceChanged { .. }
                | EngineEvent::PairingCodesBurned { .. }
                | EngineEvent::WebServingChanged { .. } => None,
            });
            let Some(run) = latest else { continue };
            // A run's row may be pushed more than once in a batch: only its
            // last push speaks for it (one failure, one notification).
            if let EngineEvent::RunChanged { run: changed } = event {
                let again = events.iter().skip(i + 1).any(
                    |e| matches!(e, EngineEvent::RunChanged { run: later } if later.id == changed.id),
                );
                if again {
                    continue;
                }
            }
            let opened = match event {
                EngineEvent::GateOpened { gate_id, .. } => self.gate(*gate_id).ok(),
                EngineEvent::GateDecided { .. }
                | EngineEvent::RunChanged { .. }
                | EngineEvent::RunActivity { .. }
                | EngineEvent::OrchestrationAborted { .. }
                | EngineEvent::MessagePosted { .. }
                | EngineEvent::WorkspaceChanged { .. }
                | EngineEvent::TaskChanged { .. }
                | EngineEvent::DeviceChanged { .. }
                | EngineEvent::PairingCodesBurned { .. }
                | EngineEvent::WebServingChanged { .. } => None,
            };
            let gate = match event {
                EngineEvent::GateOpened { gate_id, .. } => Some(*gate_id),
                _ => None,
            };
            if let Some(mut n) = notification_for(event, run, opened.as_ref()) {
                n.urgency = n
                    .kind
                    .urgency(opened.as_ref().map(|g| g.ask_kind), &self.urgencies());
                // One key per thing told: a gate opened, a run failed.
                let key = match gate {
                    Some(g) => format!("gate:{g}"),
                    None => format!("{}:{}", n.kind.as_str(), n.run_id),
                };
                self.tell(
                    &n,
                    crate::webhooks::About {
                        run: Some(run),
                        gate,
                        key: Some(key),
                    },
                );
            }
            if let EngineEvent::RunChanged { run: changed } = event {
                if let Some((title, text)) = crate::webhooks::finished(changed) {
                    self.queue_event(
                        crate::WebhookEvent::RunFinished,
                        &title,
                        &text,
                        changed.id,
                        crate::webhooks::About {
                            run: Some(changed),
                            gate: None,
                            key: Some(format!("run_finished:{}", changed.id)),
                        },
                        None,
                    );
                }
            }
        }
    }

    /// Tells the user `n` on every channel that did not mute its kind: the
    /// desktop (the notifier) and webhooks (queued, never sent here).
    /// A `silent` one is told nowhere: the item is in the inbox only.
    pub(crate) fn tell(&self, n: &crate::Notification, about: crate::webhooks::About<'_>) {
        if n.urgency == crate::Urgency::Silent {
            tracing::debug!(kind = n.kind.as_str(), "silent: in the inbox only");
            return;
        }
        if self.notifications().is_muted(n.kind) {
            tracing::debug!(kind = n.kind.as_str(), "muted on the desktop by the user");
        } else {
            self.notifier.notify(n);
        }
        self.queue_webhooks(n, about);
    }
}

fn run_of(e: &EngineEvent) -> Option<RunId> {
    match e {
        EngineEvent::RunChanged { run } => Some(run.id),
        EngineEvent::GateOpened { run_id, .. }
        | EngineEvent::GateDecided { run_id, .. }
        | EngineEvent::OrchestrationAborted { run_id, .. } => Some(*run_id),
        EngineEvent::RunActivity { activity } => Some(activity.run_id),
        EngineEvent::MessagePosted { message } => message.from_run,
        EngineEvent::WorkspaceChanged { .. }
        | EngineEvent::TaskChanged { .. }
        | EngineEvent::DeviceChanged { .. }
        | EngineEvent::PairingCodesBurned { .. }
        | EngineEvent::WebServingChanged { .. } => None,
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Store(s) => s.into(),
            EngineError::Config(_) => ApiError::new(ErrorCode::InvalidInput, e.to_string()),
            EngineError::AlreadyRunning(_) => ApiError::new(ErrorCode::Storage, e.to_string()),
            EngineError::Io { .. } => ApiError::new(ErrorCode::Storage, e.to_string()),
        }
    }
}

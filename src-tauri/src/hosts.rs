//! The app's links to hosts (engines on other machines, `overseer hosts
//! add`): one [`Link`] per host in `hosts.json`. The window reaches them
//! through the host commands (declared with the contract,
//! `overseer_api::host_commands!`, and generated here like the engine's
//! commands): the links and how they stand, a window command performed on a
//! host's engine, reconnecting now, and adding, upgrading and removing a
//! host (`overseer_server::remote::setup`, as `overseer hosts` does, each
//! step pushed as it happens). Every host's events and every change of a
//! link's state are pushed to the window, and a host's gate that would
//! notify here notifies, naming the host.
//!
//! Hosts come and go while the app runs: from the window, or from a
//! terminal (`overseer hosts add|upgrade|remove` rewrites `hosts.json`),
//! which the app follows by watching the data dir (inotify), never polling.
//! Both end in `Inner::follow`: a link for each host in the file (a new one
//! where its entry changed), none for a host no longer in it. A terminal's
//! setup steps reach the window too, read from its step log
//! (`setup::StepLog`) as they are written.

use overseer_core::{ApiError, ErrorCode};
use overseer_engine::{Engine, Notification, Paths};
use overseer_server::remote::{
    registry, setup, Host, HostEvent, HostLinkState, HostLinkView, HostNotifications, HostRemoved,
    HostSetupStep, Link, LinkOptions,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tauri::{AppHandle, State};

type JsonValue = serde_json::Value;

/// Shows a host's notification (`host`, what to tell).
pub type HostNotify = Arc<dyn Fn(&str, Notification) + Send + Sync>;

/// Where the links' news go: the window (and the desktop's notifications)
/// in the app, a recorder in tests.
pub trait HostSink: Send + Sync + 'static {
    /// An event of a host's engine.
    fn event(&self, event: &HostEvent);
    /// A host's link as it stands now (at its start, and at each change).
    fn link(&self, view: &HostLinkView);
    /// One step of adding, upgrading or removing a host.
    fn setup(&self, step: &HostSetupStep);
    /// A host was forgotten; its link is closed.
    fn removed(&self, removed: &HostRemoved);
    /// A host's event calls for this notification (told once per event).
    fn notify(&self, host: &str, notification: Notification);
}

/// The window's sink: the host events pushed to the web view; a host's
/// notification shown unless this machine's settings mute its kind.
pub struct WindowSink {
    pub handle: AppHandle,
    pub engine: Arc<Engine>,
    pub notify: HostNotify,
}

impl HostSink for WindowSink {
    fn event(&self, payload: &HostEvent) {
        if let Err(e) = events::on_host_event(&self.handle, payload) {
            tracing::warn!(
                "cannot push host {}'s event to the window: {e}",
                payload.host
            );
        }
    }

    fn link(&self, view: &HostLinkView) {
        if let Err(e) = events::on_host_link(&self.handle, view) {
            tracing::warn!("cannot push host {}'s link to the window: {e}", view.name);
        }
    }

    fn setup(&self, step: &HostSetupStep) {
        if let Err(e) = events::on_host_setup(&self.handle, step) {
            tracing::warn!(
                "cannot push host {}'s setup step to the window: {e}",
                step.host
            );
        }
    }

    fn removed(&self, removed: &HostRemoved) {
        if let Err(e) = events::on_host_removed(&self.handle, removed) {
            tracing::warn!(
                "cannot tell the window host {} is removed: {e}",
                removed.host
            );
        }
    }

    fn notify(&self, host: &str, n: Notification) {
        if !self.engine.notifications().is_muted(n.kind) {
            (self.notify)(host, n);
        }
    }
}

/// What adding and upgrading a host from the app installs there, and how
/// its links behave.
#[derive(Debug, Clone)]
pub struct SetupOptions {
    /// The `overseer` command line binary copied to a host (the one
    /// installed beside the app); none found: adding and upgrading say so.
    pub exe: Option<PathBuf>,
    /// An ssh config file kept with a host added here (else
    /// `$OVERSEER_SSH_CONFIG`, else the user's own).
    pub ssh_config: Option<PathBuf>,
    pub link: LinkOptions,
}

impl Default for SetupOptions {
    fn default() -> Self {
        SetupOptions {
            exe: overseer_engine::agents::overseer_cli(),
            ssh_config: None,
            link: LinkOptions::default(),
        }
    }
}

/// How long adding or upgrading a host waits for its link to be live (on
/// the engine just started) before answering with how it stands.
const SETTLE: Duration = Duration::from_secs(15);

/// The app's links, one per host it knows, following `hosts.json`.
pub struct HostLinks {
    inner: Arc<Inner>,
    _watch: Option<Watch>,
}

struct Inner {
    paths: Paths,
    options: SetupOptions,
    sink: Arc<dyn HostSink>,
    links: Mutex<HashMap<String, Arc<Link>>>,
    started: AtomicU64,
}

impl Drop for HostLinks {
    fn drop(&mut self) {
        if let Ok(links) = self.inner.links.lock() {
            for link in links.values() {
                link.stop();
            }
        }
    }
}

impl HostLinks {
    /// Starts a link to every host in `hosts.json` and follows the file
    /// (inside the async runtime), each link's news told to `sink`. A hosts
    /// file that cannot be read leaves the app without hosts, said in the
    /// log (and read again when it changes).
    pub fn start(paths: &Paths, options: SetupOptions, sink: Arc<dyn HostSink>) -> HostLinks {
        let inner = Arc::new(Inner {
            paths: paths.clone(),
            options,
            sink,
            links: Mutex::new(HashMap::new()),
            started: AtomicU64::new(0),
        });
        let watch = match watch(paths, Arc::downgrade(&inner)) {
            Ok(watch) => Some(watch),
            Err(e) => {
                tracing::warn!(
                    "hosts added or removed from a terminal are linked at the app's next start: \
                     cannot watch {}: {e}",
                    paths.data_dir.display()
                );
                None
            }
        };
        inner.follow();
        HostLinks {
            inner,
            _watch: watch,
        }
    }

    /// The link to host `host` now.
    pub fn get(&self, host: &str) -> Option<Arc<Link>> {
        self.inner.get(host)
    }

    fn link(&self, host: &str) -> Result<Arc<Link>, ApiError> {
        self.get(host).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "no host named {host:?}: `overseer hosts list` shows the hosts this machine \
                     knows"
                ),
            )
        })
    }

    pub async fn host_links(&self) -> Result<Vec<HostLinkView>, ApiError> {
        let mut views: Vec<HostLinkView> = self.inner.all().iter().map(|l| l.view()).collect();
        views.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(views)
    }

    pub async fn host_call(
        &self,
        host: String,
        command: String,
        args: JsonValue,
    ) -> Result<JsonValue, ApiError> {
        let link = self.link(&host)?;
        let request = overseer_server::window::request(&command, &args)?;
        link.call(request).await
    }

    pub async fn host_retry(&self, host: String) -> Result<(), ApiError> {
        self.link(&host)?.retry_now();
        Ok(())
    }

    /// What adding or upgrading copies to the host, or why there is none.
    fn exe(&self) -> Result<PathBuf, ApiError> {
        self.inner.options.exe.clone().ok_or_else(|| {
            ApiError::new(
                ErrorCode::Internal,
                "the `overseer` command line binary is not installed beside the app (it is \
                 what a host runs): reinstall Overseer, or set OVERSEER_CLI to its path",
            )
        })
    }

    pub async fn host_add(
        &self,
        name: String,
        url: String,
        ssh_config: Option<String>,
    ) -> Result<HostLinkView, ApiError> {
        // The window's file, else the app's own (OVERSEER_SSH_CONFIG), else
        // the user's ~/.ssh/config.
        let ssh_config = match ssh_config.map(PathBuf::from) {
            Some(file) if !file.is_absolute() => {
                return Err(ApiError::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "{}: give the ssh config file's absolute path, or none for                          ~/.ssh/config",
                        file.display()
                    ),
                ))
            }
            Some(file) => Some(file),
            None => self.inner.options.ssh_config.clone(),
        };
        let exe = self.exe()?;
        let say = self.inner.teller(&name);
        setup::add(&self.inner.paths, &exe, &name, &url, ssh_config, &say).await?;
        self.inner.follow();
        self.settled(&name, None).await
    }

    pub async fn host_upgrade(&self, host: String) -> Result<HostLinkView, ApiError> {
        let exe = self.exe()?;
        let before = self.get(&host);
        let engine = before.as_ref().and_then(|l| match l.state() {
            HostLinkState::Live { engine, .. } => Some(engine),
            _ => None,
        });
        let say = self.inner.teller(&host);
        setup::upgrade(&self.inner.paths, &exe, &host, &say).await?;
        self.inner.follow();
        // Its entry unchanged, the same link: reconnect now to the
        // restarted engine rather than at its retry time.
        if let (Some(before), Some(now)) = (before, self.get(&host)) {
            if Arc::ptr_eq(&before, &now) {
                now.retry_now();
            }
        }
        self.settled(&host, engine).await
    }

    pub async fn host_remove(&self, host: String) -> Result<(), ApiError> {
        let say = self.inner.teller(&host);
        setup::remove(&self.inner.paths, &host, &say).await?;
        self.inner.follow();
        Ok(())
    }

    /// Host `name`'s link once it is live on an engine other than
    /// `not_on` (the one before an upgrade restarted it), or as it stands
    /// after [`SETTLE`]. A link replaced meanwhile (its entry changed
    /// again) is followed by its successor.
    async fn settled(&self, name: &str, not_on: Option<String>) -> Result<HostLinkView, ApiError> {
        let deadline = tokio::time::Instant::now() + SETTLE;
        loop {
            let link = self.link(name)?;
            let mut states = link.watch();
            let live = states.wait_for(|s| {
                matches!(s, HostLinkState::Live { engine, .. } if Some(engine) != not_on.as_ref())
            });
            tokio::select! {
                _ = tokio::time::timeout_at(deadline, live) => return Ok(link.view()),
                _ = link.stopped() => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(link.view());
            }
        }
    }

    /// How many links were started since these links were (each host's
    /// first, and one each time its entry changed).
    #[cfg(test)]
    pub fn started(&self) -> u64 {
        self.inner.started.load(Ordering::Relaxed)
    }
}

impl Inner {
    fn get(&self, host: &str) -> Option<Arc<Link>> {
        self.links.lock().ok()?.get(host).cloned()
    }

    fn all(&self) -> Vec<Arc<Link>> {
        self.links
            .lock()
            .map(|l| l.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Tells each step of a setup of host `host` to the sink.
    fn teller(&self, host: &str) -> impl Fn(&str) + Sync + use<> {
        let (sink, host) = (self.sink.clone(), host.to_owned());
        move |line: &str| {
            sink.setup(&HostSetupStep {
                host: host.clone(),
                line: line.to_owned(),
            })
        }
    }

    /// Links as `hosts.json` says now: a link started for each new host
    /// (and for a host whose entry changed, in place of its old one), the
    /// link of a host no longer there stopped and its removal told. Run
    /// after every change, whoever made it: a host is linked once.
    fn follow(&self) {
        let file = match registry::load(&self.paths) {
            Ok(file) => file,
            Err(e) => {
                tracing::warn!("the hosts' links are left as they are: {e}");
                return;
            }
        };
        let Ok(mut links) = self.links.lock() else {
            return;
        };
        let gone: Vec<String> = links
            .keys()
            .filter(|name| !file.hosts.iter().any(|h| &h.name == *name))
            .cloned()
            .collect();
        for name in gone {
            if let Some(link) = links.remove(&name) {
                link.stop();
            }
            tracing::info!(host = %name, "host forgotten: its link is closed");
            self.sink.removed(&HostRemoved { host: name });
        }
        for host in &file.hosts {
            if links.get(&host.name).is_some_and(|l| l.host() == host) {
                continue;
            }
            if let Some(old) = links.remove(&host.name) {
                tracing::info!(host = %host.name, "host changed: linking to it again");
                old.stop();
            }
            let link = self.start_link(host.clone());
            links.insert(host.name.clone(), link);
        }
    }

    /// Starts `host`'s link and forwards its states and events to the sink
    /// until it is stopped.
    fn start_link(&self, host: Host) -> Arc<Link> {
        let started = self.started.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(host = %host.name, started, "linking to the host");
        let link = Arc::new(Link::start(host, self.options.link));
        let mut states = link.watch();
        let (l, sink) = (link.clone(), self.sink.clone());
        tokio::spawn(async move {
            loop {
                sink.link(&l.view());
                tokio::select! {
                    changed = states.changed() => if changed.is_err() { return },
                    _ = l.stopped() => return,
                }
            }
        });
        let mut rx = link.events();
        let (l, sink) = (link.clone(), self.sink.clone());
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            let mut told = HostNotifications::default();
            loop {
                let received = tokio::select! {
                    r = rx.recv() => r,
                    _ = l.stopped() => return,
                };
                let event = match received {
                    Ok(e) => e,
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!("the window fell {n} events of host {} behind", l.name());
                        continue;
                    }
                    Err(RecvError::Closed) => return,
                };
                let payload = HostEvent {
                    host: l.name().to_owned(),
                    event,
                };
                sink.event(&payload);
                if let Some(n) = told.for_event(&l, &payload.event).await {
                    sink.notify(l.name(), n);
                }
            }
        });
        link
    }
}

/// The watch on the data dir that follows `hosts.json`: its inotify fd
/// (read by a thread of its own) and the watch, removed when the links go
/// (which wakes the thread to end).
struct Watch {
    fd: Arc<std::os::fd::OwnedFd>,
    wd: i32,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = rustix::fs::inotify::remove_watch(&*self.fd, self.wd);
    }
}

/// Follows `hosts.json` in `paths`' data dir: each time it is replaced,
/// written, or deleted (by `overseer hosts` in a terminal, by the window's
/// own setups, by hand), the links follow it; each step a terminal's setup
/// writes to its step log is told to the sink. Its thread ends with the
/// links (call it inside the async runtime the links use).
fn watch(paths: &Paths, inner: Weak<Inner>) -> std::io::Result<Watch> {
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    std::fs::create_dir_all(&paths.data_dir)?;
    let fd = Arc::new(inotify::init(CreateFlags::CLOEXEC)?);
    let wd = inotify::add_watch(
        &*fd,
        &paths.data_dir,
        WatchFlags::MOVED_TO
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM,
    )?;
    let name = registry::hosts_path(paths)
        .file_name()
        .map(|n| n.as_encoded_bytes().to_vec())
        .unwrap_or_default();
    let runtime = tokio::runtime::Handle::current();
    let reading = fd.clone();
    let dir = paths.data_dir.clone();
    // A terminal's setup steps from now on, not those of setups before.
    let mut logs = StepLogs::at_start(&dir);
    std::thread::Builder::new()
        .name("hosts.json".into())
        .spawn(move || {
            let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(&*reading, &mut buf);
            let mut changed = false;
            loop {
                match reader.next() {
                    Ok(event) => {
                        let flags = event.events();
                        if flags.contains(ReadFlags::IGNORED) {
                            return;
                        }
                        changed |= flags.contains(ReadFlags::QUEUE_OVERFLOW)
                            || event.file_name().is_some_and(|n| n.to_bytes() == name);
                        let log = event
                            .file_name()
                            .and_then(|n| n.to_str().ok())
                            .filter(|n| StepLogs::is_one(n))
                            .map(|n| dir.join(n));
                        if let Some(log) = log {
                            if flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
                                // The next setup's file (perhaps on the same
                                // inode) is read from its start.
                                logs.forget(&log);
                            } else {
                                let Some(inner) = inner.upgrade() else { return };
                                for step in logs.read(&log) {
                                    inner.sink.setup(&step);
                                }
                            }
                        }
                    }
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => {
                        tracing::warn!("stopped following hosts.json: {e}");
                        return;
                    }
                }
                // Every event read so far taken in: follow the file once.
                if changed && reader.is_buffer_empty() {
                    changed = false;
                    let Some(inner) = inner.upgrade() else { return };
                    let _in_runtime = runtime.enter();
                    inner.follow();
                }
            }
        })?;
    Ok(Watch { fd, wd })
}

/// How far the app has read each terminal setup's step log
/// (`setup::StepLog`): the file (its inode; a new setup writes another) and
/// the bytes read.
struct StepLogs(HashMap<PathBuf, (u64, u64)>);

impl StepLogs {
    fn is_one(name: &str) -> bool {
        let (prefix, suffix) = setup::STEP_LOG;
        name.starts_with(prefix) && name.ends_with(suffix)
    }

    /// The logs there now, as read to their end.
    fn at_start(dir: &std::path::Path) -> StepLogs {
        use std::os::unix::fs::MetadataExt;
        let mut seen = HashMap::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let is_log = entry.file_name().to_str().is_some_and(StepLogs::is_one);
            if let (true, Ok(meta)) = (is_log, entry.metadata()) {
                seen.insert(entry.path(), (meta.ino(), meta.len()));
            }
        }
        StepLogs(seen)
    }

    fn forget(&mut self, path: &std::path::Path) {
        self.0.remove(path);
    }

    /// The whole lines written to `path` since it was last read (from its
    /// start if it is another file than then).
    fn read(&mut self, path: &std::path::Path) -> Vec<HostSetupStep> {
        use std::io::{Read, Seek};
        use std::os::unix::fs::MetadataExt;
        let Ok(mut file) = std::fs::File::open(path) else {
            return Vec::new();
        };
        let Ok(meta) = file.metadata() else {
            return Vec::new();
        };
        let (ino, read) = self.0.get(path).copied().unwrap_or((meta.ino(), 0));
        let from = if ino == meta.ino() && read <= meta.len() {
            read
        } else {
            0
        };
        let mut bytes = Vec::new();
        if file.seek(std::io::SeekFrom::Start(from)).is_err()
            || file.read_to_end(&mut bytes).is_err()
        {
            return Vec::new();
        }
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        self.0
            .insert(path.to_owned(), (meta.ino(), from + whole as u64));
        bytes[..whole]
            .split(|b| *b == b'\n')
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect()
    }
}

/// Generates the host commands, their events' emitters and [`handler`]
/// from the table (`overseer_api::host_commands!`): each command calls the
/// [`HostLinks`] method of its name.
macro_rules! host_adapter {
    (
        both {}
        socket_only {}
        window_only { $(
            $(#[doc = $wdoc:literal])*
            $wkind:ident $wcall:ident => $WOp:ident
                $( { $( $(#[$wfattr:meta])* $wfield:ident : $wfty:ty as $warg:ident ),* $(,)? } )?
                -> $wresp:ty, because $wwhy:literal;
        )* }
        streams {}
        events { $(
            $(#[doc = $edoc:literal])*
            $event:ident $channel:literal => $payload:ty;
        )* }
        also_declared {}
    ) => {
        $(
            $(#[doc = $wdoc])*
            #[tauri::command]
            async fn $wcall(
                links: State<'_, HostLinks>,
                $($( $warg: $wfty ),*)?
            ) -> Result<$wresp, ApiError> {
                links.$wcall($($( $warg ),*)?).await
            }
        )*

        /// The host events the app pushes to the window.
        pub mod events {
            use super::*;
            use tauri::Emitter;
            $(
                $(#[doc = $edoc])*
                pub fn $event(handle: &AppHandle, payload: &$payload) -> tauri::Result<()> {
                    handle.emit($channel, payload)
                }
            )*
        }

        /// The invoke handler of the host commands.
        pub fn handler() -> impl Fn(tauri::ipc::Invoke<tauri::Wry>) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$($wcall,)*]
        }
    };
}

overseer_api::host_commands!(host_adapter);

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_server::remote::HostsFile;
    use serde_json::json;

    /// What the links told, in order (the window's sink, recorded).
    #[derive(Default)]
    pub(super) struct Recorder {
        pub told: Mutex<Vec<Heard>>,
    }

    /// One thing told to a [`Recorder`].
    #[derive(Debug, Clone)]
    pub(super) enum Heard {
        Event(Box<HostEvent>),
        Link(HostLinkView),
        Setup(HostSetupStep),
        Removed(HostRemoved),
        /// `host: title`.
        Notify(String),
    }

    impl Recorder {
        fn push(&self, t: Heard) {
            if let Ok(mut told) = self.told.lock() {
                told.push(t);
            }
        }

        pub fn all(&self) -> Vec<Heard> {
            self.told.lock().map(|t| t.clone()).unwrap_or_default()
        }
    }

    impl HostSink for Recorder {
        fn event(&self, e: &HostEvent) {
            self.push(Heard::Event(Box::new(e.clone())))
        }
        fn link(&self, v: &HostLinkView) {
            self.push(Heard::Link(v.clone()))
        }
        fn setup(&self, s: &HostSetupStep) {
            self.push(Heard::Setup(s.clone()))
        }
        fn removed(&self, r: &HostRemoved) {
            self.push(Heard::Removed(r.clone()))
        }
        fn notify(&self, host: &str, n: Notification) {
            self.push(Heard::Notify(format!("{host}: {}", n.title)))
        }
    }

    /// A hosts file with one host no ssh can reach (a closed local port).
    fn unreachable_host() -> (tempfile::TempDir, Paths) {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths {
            data_dir: dir.path().join("data"),
            config_dir: dir.path().join("config"),
        };
        let host = registry::Host {
            name: "gone".into(),
            user: Some("nobody".into()),
            address: "127.0.0.1".into(),
            port: Some(1),
            ssh_config: Some("/dev/null".into()),
            dir: "/nonexistent/overseer".into(),
            version: overseer_server::remote::VERSION.into(),
            engine_key: "00".into(),
            service: "detached".into(),
            added_at: 0,
        };
        registry::save(&paths, &HostsFile { hosts: vec![host] }).expect("hosts.json");
        (dir, paths)
    }

    #[tokio::test]
    async fn a_host_call_names_what_is_wrong_and_is_refused_at_once_while_the_link_is_down() {
        let (_dir, paths) = unreachable_host();
        let links = HostLinks::start(
            &paths,
            SetupOptions::default(),
            Arc::new(Recorder::default()),
        );
        let views = links.host_links().await.expect("links");
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].name, "gone");
        assert_eq!(views[0].url, "ssh://nobody@127.0.0.1:1");

        let unknown = links
            .host_call("other".into(), "list_runs".into(), json!({}))
            .await
            .expect_err("no such host");
        assert_eq!(unknown.code, ErrorCode::InvalidInput);
        assert!(
            unknown.message.contains("`overseer hosts list`"),
            "{}",
            unknown.message
        );
        let wrong = links
            .host_call("gone".into(), "show_gate".into(), json!({"gateId": "four"}))
            .await
            .expect_err("a wrong argument");
        assert_eq!(wrong.code, ErrorCode::InvalidInput);
        assert!(wrong.message.contains("gateId"), "{}", wrong.message);

        // Down (ssh cannot connect): refused at once, saying why and when.
        let mut states = links.get("gone").expect("its link").watch();
        tokio::time::timeout(std::time::Duration::from_secs(20), async {
            while !matches!(*states.borrow_and_update(), HostLinkState::Down { .. }) {
                states.changed().await.expect("the link runs");
            }
        })
        .await
        .expect("the link went down");
        let started = std::time::Instant::now();
        let refused = links
            .host_call("gone".into(), "list_runs".into(), json!({}))
            .await
            .expect_err("refused");
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        assert_eq!(refused.code, ErrorCode::EngineUnavailable);
        assert!(
            refused.message.starts_with("gone is unreachable since")
                && refused.message.contains("nothing was sent"),
            "{}",
            refused.message
        );
        links.host_retry("gone".into()).await.expect("retry");
        assert!(links.host_retry("other".into()).await.is_err());
    }
}

#[cfg(test)]
mod setup_tests;

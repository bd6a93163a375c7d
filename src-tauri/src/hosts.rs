//! The app's links to hosts (engines on other machines, `overseer hosts
//! add`): one [`Link`] per host in `hosts.json`, started with the app. The
//! window reaches them through the host commands (declared with the
//! contract, `overseer_api::host_commands!`, and generated here like the
//! engine's commands): the links and how they stand, a window command
//! performed on a host's engine, reconnecting now. Every host's events and
//! every change of a link's state are pushed to the window, and a host's
//! gate that would notify here notifies, naming the host.

use overseer_core::{ApiError, EngineEvent, ErrorCode};
use overseer_engine::{notification_for, Engine, Notification, Paths};
use overseer_server::api::op;
use overseer_server::remote::{
    registry, HostEvent, HostLinkView, HostRemoved, HostSetupStep, Link, LinkOptions,
};
use std::sync::Arc;
use tauri::{AppHandle, State};

type JsonValue = serde_json::Value;

/// Shows a host's notification (`host`, what to tell).
pub type HostNotify = Arc<dyn Fn(&str, Notification) + Send + Sync>;

/// The app's links, one per host it knows.
pub struct HostLinks {
    links: Vec<Arc<Link>>,
}

impl HostLinks {
    /// Starts a link to every host in `hosts.json` (inside the async
    /// runtime). A hosts file that cannot be read leaves the app without
    /// hosts, said in the log.
    pub fn start(paths: &Paths) -> HostLinks {
        let hosts = match registry::load(paths) {
            Ok(file) => file.hosts,
            Err(e) => {
                tracing::warn!("no hosts are linked: {e}");
                Vec::new()
            }
        };
        HostLinks {
            links: hosts
                .into_iter()
                .map(|h| Arc::new(Link::start(h, LinkOptions::default())))
                .collect(),
        }
    }

    fn link(&self, host: &str) -> Result<&Arc<Link>, ApiError> {
        self.links.iter().find(|l| l.name() == host).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "no host named {host:?}: `overseer hosts list` shows the hosts this machine \
                     knows (the app links to those it found when it started)"
                ),
            )
        })
    }

    pub async fn host_links(&self) -> Result<Vec<HostLinkView>, ApiError> {
        Ok(self.links.iter().map(|l| l.view()).collect())
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

    // CONTRACT BRANCH PLACEHOLDERS: replaced by the h-hostsetup helper.
    pub async fn host_add(
        &self,
        name: String,
        url: String,
        ssh_config: Option<String>,
    ) -> Result<HostLinkView, ApiError> {
        let _ = (name, url, ssh_config);
        Err(ApiError::new(ErrorCode::Internal, "not built yet"))
    }

    pub async fn host_upgrade(&self, host: String) -> Result<HostLinkView, ApiError> {
        let _ = host;
        Err(ApiError::new(ErrorCode::Internal, "not built yet"))
    }

    pub async fn host_remove(&self, host: String) -> Result<(), ApiError> {
        let _ = host;
        Err(ApiError::new(ErrorCode::Internal, "not built yet"))
    }

    /// Pushes every host's events and link states to the window, and tells
    /// `notify` what a host's events call for (what this machine's
    /// notification settings do not mute).
    pub fn forward(&self, handle: &AppHandle, engine: &Arc<Engine>, notify: HostNotify) {
        for link in &self.links {
            let mut states = link.watch();
            let (l, h) = (link.clone(), handle.clone());
            tauri::async_runtime::spawn(async move {
                loop {
                    if let Err(e) = events::on_host_link(&h, &l.view()) {
                        tracing::warn!("cannot push host {}'s link to the window: {e}", l.name());
                    }
                    if states.changed().await.is_err() {
                        return;
                    }
                }
            });
            let mut rx = link.events();
            let (l, h, engine, notify) =
                (link.clone(), handle.clone(), engine.clone(), notify.clone());
            tauri::async_runtime::spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                let mut told = Told::default();
                loop {
                    let event = match rx.recv().await {
                        Ok(e) => e,
                        Err(RecvError::Lagged(n)) => {
                            tracing::warn!(
                                "the window fell {n} events of host {} behind",
                                l.name()
                            );
                            continue;
                        }
                        Err(RecvError::Closed) => return,
                    };
                    let payload = HostEvent {
                        host: l.name().to_owned(),
                        event,
                    };
                    if let Err(e) = events::on_host_event(&h, &payload) {
                        tracing::warn!("cannot push host {}'s event to the window: {e}", l.name());
                    }
                    if let Some(n) = notification(&l, &payload.event).await {
                        if told.first(&payload.event, &n)
                            && !engine.notifications().is_muted(n.kind)
                        {
                            notify(l.name(), n);
                        }
                    }
                }
            });
        }
    }
}

/// What a host's notifications told already: a run's row pushed twice (as
/// an engine does within a batch) is one failure, one popup.
#[derive(Default)]
struct Told(std::collections::HashSet<String>);

impl Told {
    /// Whether `n`, called for by `event`, is told for the first time.
    fn first(&mut self, event: &EngineEvent, n: &Notification) -> bool {
        let key = match event {
            EngineEvent::GateOpened { gate_id, .. } => format!("gate:{gate_id}"),
            EngineEvent::RunChanged { run } => {
                format!("{}:{}:{}", n.kind.as_str(), run.id, run.state_since)
            }
            _ => format!("{}:{}", n.kind.as_str(), n.run_id),
        };
        if self.0.len() > 10_000 {
            self.0.clear();
        }
        self.0.insert(key)
    }
}

/// What a host's event calls for, as it would on that machine: the host's
/// run and gate read through its link. No buttons: a decision about a
/// host's gate is made in the window, through the link.
async fn notification(link: &Link, event: &EngineEvent) -> Option<Notification> {
    let n = match event {
        EngineEvent::GateOpened {
            gate_id, run_id, ..
        } => {
            let run = link.perform(op::ShowRun { run: *run_id }).await.ok()?;
            let gate = link.perform(op::ShowGate { gate: *gate_id }).await.ok()?;
            notification_for(event, &run, Some(&gate))
        }
        EngineEvent::RunChanged { run } => notification_for(event, run, None),
        _ => None,
    }?;
    Some(Notification { quick: None, ..n })
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
    use overseer_server::remote::{HostLinkState, HostsFile};
    use serde_json::json;

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

    #[test]
    fn a_hosts_failed_run_pushed_twice_notifies_once_and_each_gate_once() {
        let mut told = Told::default();
        let n = |kind, run: i64| Notification {
            kind,
            run_id: overseer_core::RunId(run),
            title: "t".into(),
            body: "b".into(),
            quick: None,
            urgency: overseer_engine::Urgency::Critical,
            tag: None,
        };
        let opened = |gate: i64| EngineEvent::GateOpened {
            gate_id: overseer_core::GateId(gate),
            run_id: overseer_core::RunId(1),
            kind: overseer_core::GateKind::ToolCall,
        };
        let blocking = overseer_engine::NotificationKind::AgentQuestionBlocking;
        assert!(told.first(&opened(5), &n(blocking, 1)));
        assert!(!told.first(&opened(5), &n(blocking, 1)));
        assert!(told.first(&opened(6), &n(blocking, 1)));
        let run: overseer_core::RunView =
            serde_json::from_value(serde_json::to_value(demo_run()).expect("json")).expect("a run");
        let failed = overseer_engine::NotificationKind::RunFailed;
        let changed = EngineEvent::RunChanged { run: run.clone() };
        assert!(told.first(&changed, &n(failed, run.id.0)));
        assert!(!told.first(&changed, &n(failed, run.id.0)));
        // Failed again later (resumed, failed again): told again.
        let mut later = run.clone();
        later.state_since += 1000;
        let again = EngineEvent::RunChanged { run: later };
        assert!(told.first(&again, &n(failed, run.id.0)));
    }

    /// A run as the demo fleet has them.
    fn demo_run() -> overseer_core::RunView {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = Engine::open(
            Paths {
                data_dir: dir.path().join("data"),
                config_dir: dir.path().join("config"),
            },
            std::sync::Arc::new(overseer_engine::SystemClock),
            std::sync::Arc::new(overseer_engine::LogNotifier),
        )
        .expect("engine");
        engine
            .seed_demo(&overseer_core::Actor::cli(), true)
            .expect("seed");
        engine.runs().expect("runs").remove(0)
    }

    #[tokio::test]
    async fn a_host_call_names_what_is_wrong_and_is_refused_at_once_while_the_link_is_down() {
        let (_dir, paths) = unreachable_host();
        let links = HostLinks::start(&paths);
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
        let mut states = links.links[0].watch();
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

//! The desktop's notification server on the session bus
//! (`org.freedesktop.Notifications`): showing a notification with its
//! buttons, and hearing which one was pressed.
//!
//! A press arrives as an `ActionInvoked(id, key)` signal. Any client of the
//! session bus can send a signal with that name, so a press counts only when
//! its sender is the unique name that owns `org.freedesktop.Notifications`
//! when it arrives: the bus daemon stamps every message with its sender's
//! unique name, which a client cannot choose. Anything else is logged and
//! ignored. A press counts only for a notification shown on this connection
//! and for a button it had; pressed once, its buttons are spent.

use futures::StreamExt;
use overseer_core::{GateId, RunId};
use overseer_engine::{Notification, QuickAnswer};
use std::collections::HashMap;
use std::sync::Mutex;

const SERVER: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

/// How many notifications' buttons are remembered (the oldest go first).
const REMEMBERED: usize = 512;
/// How long a call to the notification server may take.
const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a pressed button asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pressed {
    /// The notification itself: open its run in the window.
    Open(RunId),
    /// A host's notification itself: open that host's run in the window.
    OpenOnHost(RunId, String),
    /// A tool call's Yes.
    Yes(GateId),
    /// A tool call's No.
    No(GateId),
    /// A pending review's Approve (its gate).
    Approve(GateId),
}

/// The buttons a notification has: (key, label), the first the click on
/// the notification itself.
pub fn buttons(quick: Option<QuickAnswer>) -> Vec<(&'static str, &'static str)> {
    let mut out = vec![("default", "Open")];
    match quick {
        Some(QuickAnswer::ToolCall { .. }) => out.extend([("yes", "Yes"), ("no", "No")]),
        Some(QuickAnswer::Review { .. }) => out.push(("approve", "Approve")),
        None => {}
    }
    out
}

/// What pressing `key` on a notification about `run` with `quick` asks
/// for; None for a key it did not have.
pub fn pressed(run: RunId, quick: Option<QuickAnswer>, key: &str) -> Option<Pressed> {
    match (key, quick) {
        ("default", _) => Some(Pressed::Open(run)),
        ("yes", Some(QuickAnswer::ToolCall { gate })) => Some(Pressed::Yes(gate)),
        ("no", Some(QuickAnswer::ToolCall { gate })) => Some(Pressed::No(gate)),
        ("approve", Some(QuickAnswer::Review { gate, .. })) => Some(Pressed::Approve(gate)),
        _ => None,
    }
}

/// A notification shown: its run, its buttons, its host (none: this
/// machine's).
type Shown = (RunId, Option<QuickAnswer>, Option<String>);

/// One connection to the session bus: notifications are shown on it, and
/// the server's signals about them arrive on it.
pub struct Bus {
    conn: zbus::Connection,
    /// Notifications shown and not yet pressed: their run, buttons and
    /// host (none: this machine's).
    shown: Mutex<HashMap<u32, Shown>>,
    /// The server's id of the last notification shown with each tag: one
    /// with the same tag replaces it (a gate told again with the
    /// supervisor's advice).
    tagged: Mutex<HashMap<String, u32>>,
}

impl Bus {
    /// Connects to the session bus (`address`: another bus, for tests).
    pub async fn connect(address: Option<&str>) -> zbus::Result<Bus> {
        let builder = match address {
            Some(a) => zbus::connection::Builder::address(a),
            None => zbus::connection::Builder::session(),
        };
        // A notification server that never answers costs one notification,
        // not every later one.
        let conn = builder.method_timeout(CALL_TIMEOUT).build().await?;
        Ok(Bus {
            conn,
            shown: Mutex::default(),
            tagged: Mutex::default(),
        })
    }

    /// Shows `n` (its title and text already made inert) with its buttons,
    /// about a run of `host` (none: this machine's); the server's id for it.
    pub async fn show(
        &self,
        n: &Notification,
        host: Option<&str>,
        summary: &str,
        body: &str,
    ) -> zbus::Result<u32> {
        let actions: Vec<&str> = buttons(n.quick)
            .into_iter()
            .flat_map(|(key, label)| [key, label])
            .collect();
        let mut hints: HashMap<&str, zbus::Variant<'_>> = HashMap::new();
        hints.insert(
            "category",
            zbus::Variant::from(format!("overseer.{}", n.kind.as_str())),
        );
        // The urgency the user chose for the item's kind (critical stays on
        // screen until dismissed on most servers).
        if let Some(level) = n.urgency.desktop_hint() {
            hints.insert("urgency", zbus::Variant::from(level));
        }
        // Replaces the one shown with the same tag, if any (0: a new one).
        // Tags name gates by id, and ids repeat across hosts: the host is
        // part of the key.
        let key = n.tag.as_ref().map(|t| match host {
            Some(h) => format!("{h}/{t}"),
            None => t.clone(),
        });
        let replaces = key
            .as_ref()
            .and_then(|t| {
                self.tagged
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(t)
                    .copied()
            })
            .unwrap_or(0u32);
        let reply = self
            .conn
            .call_method(
                Some(SERVER),
                PATH,
                Some(SERVER),
                "Notify",
                &(
                    "Overseer", replaces, "", summary, body, actions, hints, -1i32,
                ),
            )
            .await?;
        let id: u32 = reply.body().deserialize()?;
        if let Some(tag) = &key {
            let mut tagged = self.tagged.lock().unwrap_or_else(|p| p.into_inner());
            if tagged.len() >= REMEMBERED && !tagged.contains_key(tag) {
                if let Some(oldest) = tagged
                    .iter()
                    .min_by_key(|(_, id)| **id)
                    .map(|(t, _)| t.clone())
                {
                    tagged.remove(&oldest);
                }
            }
            tagged.insert(tag.clone(), id);
        }
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        if shown.len() >= REMEMBERED {
            if let Some(oldest) = shown.keys().min().copied() {
                shown.remove(&oldest);
            }
        }
        shown.insert(id, (n.run_id, n.quick, host.map(str::to_owned)));
        Ok(id)
    }

    /// Hears presses until the connection ends, handing each one that
    /// counts to `on` (see the module's doc).
    pub async fn listen(&self, on: impl Fn(Pressed)) -> zbus::Result<()> {
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface(SERVER)
            .member("ActionInvoked")
            .build()?;
        let mut stream = zbus::MessageStream::for_match_rule(rule, &self.conn, None).await?;
        let bus = zbus::fdo::DBusProxy::new(&self.conn).await?;
        while let Some(message) = stream.next().await {
            let Ok(message) = message else { continue };
            let header = message.header();
            let sender = header.sender().map(|s| s.to_string());
            // Asked each time: the server may have been restarted.
            let owner = bus
                .get_name_owner(zbus::names::BusName::try_from(SERVER)?)
                .await
                .ok()
                .map(|o| o.to_string());
            if sender.is_none() || sender != owner {
                tracing::warn!(
                    sender = sender.as_deref().unwrap_or("?"),
                    server = owner.as_deref().unwrap_or("none"),
                    "ignored a notification button press that did not come from the \
                     notification server"
                );
                continue;
            }
            let body = message.body();
            let parsed: zbus::Result<(u32, String)> = body.deserialize();
            let Ok((id, key)) = parsed else {
                continue;
            };
            let found = {
                let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
                let found = shown.get(&id).and_then(|(run, quick, host)| {
                    match (pressed(*run, *quick, &key)?, host) {
                        (Pressed::Open(run), Some(host)) => {
                            Some(Pressed::OpenOnHost(run, host.clone()))
                        }
                        (p, _) => Some(p),
                    }
                });
                if found.is_some() && key.as_str() != "default" {
                    // Answered: its buttons are spent.
                    shown.remove(&id);
                }
                found
            };
            if let Some(p) = found {
                on(p);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{buttons, pressed, Bus, Pressed, PATH, SERVER};
    use overseer_core::{Actor, GateId, GateKind, RunId};
    use overseer_engine::{
        Engine, LogNotifier, Notification, NotificationKind, Paths, QuickAnswer, SystemClock,
    };
    use std::collections::HashMap;
    use std::io::BufRead;
    use std::process::{Child, Command, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    #[test]
    fn a_tool_call_has_yes_and_no_a_review_approve_and_nothing_else_is_read() {
        let gate = GateId(7);
        let run = RunId(3);
        let tool = Some(QuickAnswer::ToolCall { gate });
        let review = Some(QuickAnswer::Review {
            run,
            gate: GateId(8),
        });
        assert_eq!(
            buttons(tool),
            [("default", "Open"), ("yes", "Yes"), ("no", "No")]
        );
        assert_eq!(
            buttons(review),
            [("default", "Open"), ("approve", "Approve")]
        );
        assert_eq!(buttons(None), [("default", "Open")]);
        assert_eq!(pressed(run, tool, "yes"), Some(Pressed::Yes(gate)));
        assert_eq!(pressed(run, tool, "no"), Some(Pressed::No(gate)));
        assert_eq!(pressed(run, tool, "approve"), None, "not a button it had");
        assert_eq!(
            pressed(run, review, "approve"),
            Some(Pressed::Approve(GateId(8)))
        );
        assert_eq!(pressed(run, review, "yes"), None);
        assert_eq!(pressed(run, None, "default"), Some(Pressed::Open(run)));
        assert_eq!(pressed(run, None, "always"), None);
    }

    /// A private session bus: a real `dbus-daemon`, ended when dropped.
    struct Daemon {
        child: Child,
        address: String,
    }

    impl Daemon {
        fn start() -> Daemon {
            let mut child = Command::new("dbus-daemon")
                .args(["--session", "--nofork", "--print-address=1"])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("dbus-daemon (Debian's dbus-daemon package) runs the test's bus");
            let mut line = String::new();
            let out = child.stdout.take().expect("stdout");
            std::io::BufReader::new(out)
                .read_line(&mut line)
                .expect("the bus's address");
            Daemon {
                child,
                address: line.trim().to_owned(),
            }
        }
    }

    impl Drop for Daemon {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Each Notify call's `replaces_id` and `urgency` hint.
    type Seen = Arc<Mutex<Vec<(u32, Option<u8>)>>>;

    /// A notification server of the test's own: owns the name, answers
    /// Notify with ids from 1, keeps each call's buttons (and what it
    /// replaces, how urgent it is).
    async fn server(address: &str) -> (zbus::Connection, Arc<Mutex<Vec<Vec<String>>>>, Seen) {
        use futures::StreamExt;
        let conn = zbus::connection::Builder::address(address)
            .build()
            .await
            .expect("server's connection");
        conn.request_name(SERVER).await.expect("own the name");
        let calls: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let kept = calls.clone();
        let seen: Seen = Arc::default();
        let noted = seen.clone();
        let answering = conn.clone();
        // Made before this returns: a stream sees only what arrives after
        // it exists, and the test's first Notify follows at once.
        let mut stream = zbus::MessageStream::from(&answering);
        std::thread::spawn(move || {
            zbus::block_on(async move {
                while let Some(Ok(m)) = stream.next().await {
                    let header = m.header();
                    if header.message_type() != zbus::message::Type::MethodCall
                        || header.member().map(|m| m.as_str()) != Some("Notify")
                    {
                        continue;
                    }
                    type Notify = (
                        String,
                        u32,
                        String,
                        String,
                        String,
                        Vec<String>,
                        HashMap<String, zbus::OwnedVariant>,
                        i32,
                    );
                    let raw = m.body();
                    let parsed: zbus::Result<Notify> = raw.deserialize();
                    let Ok(mut body) = parsed else {
                        continue;
                    };
                    let urgency = body.6.remove("urgency").and_then(|v| u8::try_from(v).ok());
                    noted.lock().expect("lock").push((body.1, urgency));
                    let id = {
                        let mut calls = kept.lock().expect("lock");
                        calls.push(body.5);
                        calls.len() as u32
                    };
                    let _ = answering.reply(&header, &id).await;
                }
            })
        });
        (conn, calls, seen)
    }

    async fn press(from: &zbus::Connection, to: Option<&str>, id: u32, key: &str) {
        from.emit_signal(to, PATH, SERVER, "ActionInvoked", &(id, key))
            .await
            .expect("signal sent");
    }

    fn notification(run: RunId, quick: Option<QuickAnswer>) -> Notification {
        Notification {
            kind: NotificationKind::AgentQuestionBlocking,
            run_id: run,
            title: format!("Run {run} asks permission"),
            body: "task".into(),
            quick,
            urgency: overseer_engine::Urgency::Critical,
            tag: None,
        }
    }

    /// The urgency reaches the notification server as its `urgency` hint,
    /// and a notification with the tag of one shown before (a gate told
    /// again with the supervisor's advice) replaces it.
    #[test]
    fn a_notification_says_its_urgency_and_replaces_the_last_with_its_tag() {
        use overseer_engine::Urgency;
        let daemon = Daemon::start();
        let (_server, _calls, seen) = zbus::block_on(server(&daemon.address));
        let bus = zbus::block_on(Bus::connect(Some(&daemon.address))).expect("bus");
        let mut gate = notification(RunId(1), None);
        gate.tag = Some("gate:7".into());
        let first = zbus::block_on(bus.show(&gate, None, "Run 1: approve the plan", "task"))
            .expect("shown");
        let mut low = notification(RunId(2), None);
        low.urgency = Urgency::Low;
        low.tag = Some("gate:8".into());
        zbus::block_on(bus.show(&low, None, "Run 2 has a question", "task")).expect("shown");
        gate.body = "task\nThe supervisor advises “Approve”".into();
        zbus::block_on(bus.show(&gate, None, "Run 1: approve the plan", &gate.body))
            .expect("shown");
        let mut untagged = notification(RunId(1), None);
        untagged.urgency = Urgency::Normal;
        zbus::block_on(bus.show(&untagged, None, "Run 1 failed", "task")).expect("shown");
        assert_eq!(
            *seen.lock().expect("lock"),
            [(0, Some(2)), (0, Some(0)), (first, Some(2)), (0, Some(1))]
        );
    }

    #[test]
    fn a_forged_button_press_from_another_bus_client_decides_nothing() {
        let daemon = Daemon::start();
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = Arc::new(
            Engine::open(
                Paths {
                    data_dir: dir.path().join("data"),
                    config_dir: dir.path().join("config"),
                },
                Arc::new(SystemClock),
                Arc::new(LogNotifier),
            )
            .expect("engine"),
        );
        engine.seed_demo(&Actor::cli(), false).expect("seed");
        let gate = engine
            .gates(true)
            .expect("gates")
            .into_iter()
            .find(|g| g.kind() == GateKind::ToolCall)
            .expect("the demo's tool call");

        let (server, calls, _) = zbus::block_on(server(&daemon.address));
        let bus = Arc::new(zbus::block_on(Bus::connect(Some(&daemon.address))).expect("bus"));
        let ours = bus.conn.unique_name().expect("a name").to_string();
        // Heard as the app hears them: the notifier's own listener, deciding
        // on the engine, opening through the window's hook.
        type Opened = Vec<(RunId, Option<String>)>;
        let opened: Arc<Mutex<Opened>> = Arc::default();
        let opens = opened.clone();
        let on_open: crate::notifier::OnOpen = Arc::default();
        let _ = on_open.set(Box::new(move |run, host| {
            opens.lock().expect("lock").push((run, host))
        }));
        let deciding: crate::notifier::Deciding = Arc::default();
        let _ = deciding.set(Arc::downgrade(&engine));
        crate::notifier::listen(bus.clone(), deciding, on_open);
        let id = zbus::block_on(bus.show(
            &notification(gate.run_id, Some(QuickAnswer::ToolCall { gate: gate.id })),
            None,
            "Run asks permission",
            "task",
        ))
        .expect("shown");
        assert_eq!(
            calls.lock().expect("lock")[0],
            ["default", "Open", "yes", "Yes", "no", "No"]
        );
        // The listener hears the server: a click on another
        // notification opens its run (so a forged press below would be
        // heard too).
        let probe =
            zbus::block_on(bus.show(&notification(RunId(4242), None), None, "probe", "probe"))
                .expect("shown");
        assert_ne!(probe, id);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            zbus::block_on(press(&server, None, probe, "default"));
            std::thread::sleep(Duration::from_millis(100));
            if opened.lock().expect("lock").contains(&(RunId(4242), None)) {
                break;
            }
            assert!(Instant::now() < deadline, "the listener hears nothing");
        }
        // A host's notification opens that host's run.
        let remote = zbus::block_on(bus.show(
            &notification(RunId(77), None),
            Some("build-box"),
            "Run 77 asks permission on build-box",
            "task",
        ))
        .expect("shown");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            zbus::block_on(press(&server, None, remote, "default"));
            std::thread::sleep(Duration::from_millis(100));
            let opened = opened.lock().expect("lock").clone();
            if opened.contains(&(RunId(77), Some("build-box".to_owned()))) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the host's run was not opened: {opened:?}"
            );
        }

        // Another client of the bus presses Yes: broadcast, and sent
        // straight to the listener's connection.
        let forger =
            zbus::block_on(zbus::connection::Builder::address(daemon.address.as_str()).build())
                .expect("forger");
        zbus::block_on(press(&forger, None, id, "yes"));
        zbus::block_on(press(&forger, Some(&ours), id, "yes"));
        // Even under a well-known name of its own.
        zbus::block_on(forger.request_name("org.freedesktop.NotificationsX")).expect("a name");
        zbus::block_on(press(&forger, Some(&ours), id, "yes"));
        std::thread::sleep(Duration::from_millis(800));
        let still = engine.gate(gate.id).expect("gate");
        assert!(
            still.decision.is_none(),
            "a forged press decided the gate: {still:?}"
        );

        // The notification server's own press decides, as the owner.
        zbus::block_on(press(&server, None, id, "no"));
        let deadline = Instant::now() + Duration::from_secs(10);
        let decided = loop {
            let g = engine.gate(gate.id).expect("gate");
            if let Some(d) = g.decision.clone() {
                break d;
            }
            assert!(
                Instant::now() < deadline,
                "the server's press decided nothing"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(decided.option, "no");
        assert_eq!(
            decided.context.as_deref(),
            Some(crate::notifier::NO_FROM_NOTIFICATION)
        );
        assert_eq!(decided.actor, Actor::app());
        // Spent: a second press (even the server's) does nothing more.
        zbus::block_on(press(&server, None, id, "yes"));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            engine
                .gate(gate.id)
                .expect("gate")
                .decision
                .map(|d| d.option),
            Some("no".to_owned())
        );
    }
}

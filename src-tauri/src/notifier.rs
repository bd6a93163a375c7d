//! OS notifications on the freedesktop notification server (the session
//! bus; see `notify_bus`). Sending happens on its own thread: a slow or
//! missing notification daemon must never stall the engine. The first
//! notification after a quiet spell goes out at once; what follows within a
//! short window is coalesced per kind, so fifty agents finishing at once make
//! two popups, not fifty.
//!
//! A notification can answer: a low or medium risk tool call's has Yes and
//! No, a pending review's Approve when its diff has no file other tools run
//! on their own (the engine decides: `overseer_engine::quick_answer`);
//! pressed, they decide as the owner (`user:app`) through the contract's
//! `decide_gate`, as the window would. Only presses from the notification
//! server count.

use crate::notify_bus::{Bus, Pressed};
use overseer_core::{Actor, GateId, RunId};
use overseer_engine::{coalesce, Engine, Notification, Notifier};
use overseer_server::api::{op::DecideGate, Operation};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// After a notification is shown, how long the next ones are gathered
/// before they are shown together.
const COALESCE_WINDOW: Duration = Duration::from_millis(600);

/// How long a notification arriving `now` waits: not at all after a quiet
/// spell (a blocking ask must reach the user at once), else until the
/// window that the last one opened closes.
fn hold_for(last_shown: Option<Instant>, now: Instant) -> Duration {
    match last_shown {
        Some(t) => (t + COALESCE_WINDOW).saturating_duration_since(now),
        None => Duration::ZERO,
    }
}

/// What clicking a notification does (focus the window, open the run, of
/// a host when it names one); set once the window exists.
pub type OnOpen = Arc<OnceLock<Box<dyn Fn(RunId, Option<String>) + Send + Sync>>>;

/// The engine a notification's buttons decide on; set once it is open.
pub type Deciding = Arc<OnceLock<Weak<Engine>>>;

/// What to show, about a run of which host (none: this machine's).
type Told = (Notification, Option<String>);

pub struct DesktopNotifier {
    tx: Mutex<mpsc::Sender<Told>>,
    pub on_open: OnOpen,
    pub deciding: Deciding,
}

impl DesktopNotifier {
    pub fn start() -> Self {
        let (tx, rx) = mpsc::channel::<Told>();
        let on_open: OnOpen = Arc::new(OnceLock::new());
        let deciding: Deciding = Arc::new(OnceLock::new());
        let opener = on_open.clone();
        let engine = deciding.clone();
        std::thread::Builder::new()
            .name("notifier".into())
            .spawn(move || {
                let bus = match zbus::block_on(Bus::connect(None)) {
                    Ok(bus) => Some(Arc::new(bus)),
                    Err(e) => {
                        tracing::warn!("no session bus: OS notifications are not shown ({e})");
                        None
                    }
                };
                if let Some(bus) = &bus {
                    listen(bus.clone(), engine, opener);
                }
                let mut last_shown: Option<Instant> = None;
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    let until = Instant::now() + hold_for(last_shown, Instant::now());
                    while let Some(left) = until.checked_duration_since(Instant::now()) {
                        match rx.recv_timeout(left) {
                            Ok(n) => batch.push(n),
                            Err(_) => break,
                        }
                    }
                    // What arrived together goes together.
                    batch.extend(rx.try_iter());
                    last_shown = Some(Instant::now());
                    let Some(bus) = &bus else { continue };
                    for (host, n) in by_host(batch) {
                        let shown = zbus::block_on(bus.show(
                            &n,
                            host.as_deref(),
                            &inert(&n.title),
                            &inert(&n.body),
                        ));
                        if let Err(e) = shown {
                            tracing::warn!("cannot show a notification ({}): {e}", n.kind.as_str());
                        }
                    }
                }
            })
            .map_err(|e| tracing::warn!("no notifier thread: {e}"))
            .ok();
        DesktopNotifier {
            tx: Mutex::new(tx),
            on_open,
            deciding,
        }
    }
}

impl DesktopNotifier {
    /// Shows what a host's event calls for, naming the host (no buttons:
    /// a host's gate is decided in the window, through its link).
    pub fn for_hosts(&self) -> crate::hosts::HostNotify {
        let tx = Mutex::new(self.tx.lock().unwrap_or_else(|p| p.into_inner()).clone());
        Arc::new(move |host: &str, n: Notification| {
            let n = Notification { quick: None, ..n };
            let tx = tx.lock().unwrap_or_else(|p| p.into_inner());
            if tx.send((n, Some(host.to_owned()))).is_err() {
                tracing::warn!("notifier thread is gone; dropped one of host {host}");
            }
        })
    }
}

/// A batch coalesced per host (this machine's first): what arrived
/// together from one engine is told together, each host's apart, its
/// title naming the host.
fn by_host(batch: Vec<Told>) -> Vec<(Option<String>, Notification)> {
    let mut groups: Vec<(Option<String>, Vec<Notification>)> = Vec::new();
    for (n, host) in batch {
        match groups.iter_mut().find(|(h, _)| *h == host) {
            Some((_, of_host)) => of_host.push(n),
            None => groups.push((host, vec![n])),
        }
    }
    groups.sort_by_key(|(h, _)| h.is_some());
    groups
        .into_iter()
        .flat_map(|(host, of_host)| {
            coalesce(of_host).into_iter().map(move |mut n| {
                if let Some(host) = &host {
                    n.title = format!("{} on {host}", n.title);
                }
                (host.clone(), n)
            })
        })
        .collect()
}

/// Hears the buttons pressed on `bus`'s notifications, on a thread of its
/// own; each press is carried out on a thread of its own (a merge takes a
/// while).
pub(crate) fn listen(bus: Arc<Bus>, engine: Deciding, opener: OnOpen) {
    let started = std::thread::Builder::new()
        .name("notification-buttons".into())
        .spawn(move || {
            let heard = zbus::block_on(bus.listen(|pressed| {
                let Some(engine) = engine.get().and_then(Weak::upgrade) else {
                    return;
                };
                let opener = opener.clone();
                let _ = std::thread::Builder::new()
                    .name("notification-answer".into())
                    .spawn(move || {
                        carry_out(&engine, pressed, &|run, host| {
                            if let Some(open) = opener.get() {
                                open(run, host);
                            }
                        })
                    });
            }));
            if let Err(e) = heard {
                tracing::warn!("notification buttons are not heard: {e}");
            }
        });
    if let Err(e) = started {
        tracing::warn!("no thread for notification buttons: {e}");
    }
}

/// The reason a tool call's No from a notification gives the agent.
pub(crate) const NO_FROM_NOTIFICATION: &str = "Denied from the desktop notification";

/// Does what a pressed button asks, as the owner: opens the run, decides
/// the tool call, approves the review, each decision through the
/// contract's `decide_gate` with the gate's typed choice (the check every
/// surface gets). Yes and Approve count only while the gate is still one a
/// notification may answer ([`overseer_engine::quick_answer`], asked again
/// now, and for a review its diff checked again for auto-run files): else
/// the window opens on the run instead. A refusal (decided meanwhile, the
/// app closing) is logged: the window shows where things stand.
pub(crate) fn carry_out(engine: &Engine, pressed: Pressed, open: &dyn Fn(RunId, Option<String>)) {
    use overseer_core::{GateChoice, MergeReviewChoice, ToolCallChoice};
    let owner = Actor::app();
    let decide = |gate: GateId, choice: GateChoice, context: Option<&str>| {
        engine.refuse_if_closing().and_then(|_| {
            DecideGate {
                gate,
                option: choice.into(),
                context: context.map(str::to_owned),
            }
            .perform(engine, &owner)
            .map(|_| ())
        })
    };
    let done = match &pressed {
        Pressed::Open(run) => {
            open(*run, None);
            return;
        }
        Pressed::OpenOnHost(run, host) => {
            open(*run, Some(host.clone()));
            return;
        }
        Pressed::Yes(gate) => match still_quick(engine, *gate) {
            Ok(()) => decide(*gate, ToolCallChoice::Yes.into(), None),
            Err(run) => return refused(run, open),
        },
        // No needs a reason; the agent is told this one. Refusing never
        // runs anything: it counts whatever the call's risk.
        Pressed::No(gate) => decide(*gate, ToolCallChoice::No.into(), Some(NO_FROM_NOTIFICATION)),
        Pressed::Approve(gate) => match still_quick(engine, *gate) {
            Ok(()) => decide(*gate, MergeReviewChoice::Approve.into(), None),
            Err(run) => return refused(run, open),
        },
    };
    if let Err(e) = done {
        tracing::warn!(
            "a notification's button was not carried out ({pressed:?}): {}",
            e.message
        );
    }
}

/// Whether `gate` may still be answered from a notification, as it stands
/// now; else the run to open instead (None: the gate is gone).
fn still_quick(engine: &Engine, gate: GateId) -> Result<(), Option<RunId>> {
    let Ok(g) = engine.gate(gate) else {
        return Err(None);
    };
    if overseer_engine::quick_answer(&g).is_none() {
        return Err(Some(g.run_id));
    }
    // A review: its diff checked again (a review opened without the check,
    // or one that could not be checked, is never merged from here).
    if g.kind() == overseer_core::GateKind::MergeReview {
        match engine.run_auto_run(g.run_id) {
            Ok(files) if files.is_empty() => {}
            Ok(_) | Err(_) => return Err(Some(g.run_id)),
        }
    }
    Ok(())
}

/// A Yes or Approve the notification may no longer give: logged, and the
/// window opened on the run, where the whole call or diff is shown.
fn refused(run: Option<RunId>, open: &dyn Fn(RunId, Option<String>)) {
    tracing::warn!(
        "a notification's Yes or Approve was not carried out: the gate needs the window \
         (a high or critical call, a merge with files other tools run, or already decided)"
    );
    if let Some(run) = run {
        open(run, None);
    }
}

impl Notifier for DesktopNotifier {
    fn notify(&self, n: &Notification) {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if tx.send((n.clone(), None)).is_err() {
            tracing::warn!("notifier thread is gone; dropped {}", n.kind.as_str());
        }
    }
}

/// Notification servers read the body (and some the summary) as markup:
/// agent-controlled text (task titles, reasons) must arrive as text.
fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{by_host, carry_out, hold_for, inert, COALESCE_WINDOW, NO_FROM_NOTIFICATION};
    use crate::notify_bus::Pressed;
    use overseer_core::{Actor, GateKind, RunId};
    use overseer_engine::{
        Engine, LogNotifier, Notification, NotificationKind, Paths, SystemClock,
    };
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    /// A Yes (or Approve) pressed on a notification whose gate a
    /// notification may not answer (a high-risk call: a stale notification,
    /// or one from before this check) decides nothing and opens the window
    /// on the run; No still refuses it, through the contract's typed door.
    #[test]
    fn a_stale_yes_on_a_high_risk_call_opens_the_window_and_decides_nothing() {
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
        engine.seed_demo(&Actor::cli(), false).expect("seed");
        let gate = engine
            .gates(true)
            .expect("gates")
            .into_iter()
            .find(|g| g.kind() == GateKind::ToolCall)
            .expect("the demo's tool call (npm install: high risk)");
        assert_eq!(overseer_engine::quick_answer(&gate), None);
        let opened: Mutex<Vec<RunId>> = Mutex::default();
        let open = |run: RunId, _host: Option<String>| opened.lock().expect("lock").push(run);
        carry_out(&engine, Pressed::Yes(gate.id), &open);
        carry_out(&engine, Pressed::Approve(gate.id), &open);
        assert_eq!(*opened.lock().expect("lock"), [gate.run_id, gate.run_id]);
        assert!(
            engine.gate(gate.id).expect("gate").decision.is_none(),
            "nothing decided"
        );
        carry_out(&engine, Pressed::No(gate.id), &open);
        let decided = engine
            .gate(gate.id)
            .expect("gate")
            .decision
            .expect("No refuses it");
        assert_eq!(decided.option, "no");
        assert_eq!(decided.context.as_deref(), Some(NO_FROM_NOTIFICATION));
        assert_eq!(decided.actor, Actor::app());
    }

    #[test]
    fn a_hosts_notifications_are_told_apart_from_this_machines_and_name_the_host() {
        let asks = |run: i64| Notification {
            kind: NotificationKind::AgentQuestionBlocking,
            run_id: RunId(run),
            title: format!("Run {run} asks permission"),
            body: "task".into(),
            quick: None,
            urgency: overseer_engine::Urgency::Critical,
            tag: None,
        };
        let told = by_host(vec![
            (asks(1), Some("build-box".into())),
            (asks(2), None),
            (asks(3), None),
        ]);
        let titles: Vec<(Option<&str>, &str)> = told
            .iter()
            .map(|(h, n)| (h.as_deref(), n.title.as_str()))
            .collect();
        assert_eq!(
            titles,
            [
                (None, "2 agents are waiting for you"),
                (Some("build-box"), "Run 1 asks permission on build-box"),
            ]
        );
    }

    #[test]
    fn the_first_of_a_burst_goes_at_once_and_what_follows_waits_for_the_window() {
        let now = Instant::now();
        assert_eq!(hold_for(None, now), Duration::ZERO, "nothing shown yet");
        assert_eq!(
            hold_for(Some(now - COALESCE_WINDOW * 2), now),
            Duration::ZERO,
            "after a quiet spell"
        );
        let held = hold_for(Some(now - Duration::from_millis(100)), now);
        assert_eq!(held, COALESCE_WINDOW - Duration::from_millis(100));
    }

    #[test]
    fn agent_text_reaches_the_notification_server_as_text() {
        assert_eq!(
            inert("<img src=x onerror=alert(1)> & <b>bold</b>"),
            "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
        );
        assert_eq!(inert("Fix the build"), "Fix the build");
    }
}

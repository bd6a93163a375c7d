//! What a host's events call for on this machine's desktop: the
//! notification its engine would show there (the host's run and gate read
//! through the link), each told once. A desktop client of hosts (the app)
//! shows them, naming the host, unless this machine's settings mute their
//! kind.

use super::Link;
use crate::api::op;
use overseer_core::EngineEvent;
use overseer_engine::{notification_for, Notification};
use std::collections::HashSet;

/// Keys remembered of what was told; past this, forgotten at once (a
/// notification told again after 10,000 others is no harm).
const REMEMBERED: usize = 10_000;

/// One link's notifications, each told once: a run's row pushed twice (as
/// an engine does within a batch) is one failure, one popup.
#[derive(Default)]
pub struct HostNotifications {
    told: HashSet<String>,
}

impl HostNotifications {
    /// What `event` of `link`'s host calls for, unless told already. No
    /// buttons: a decision about a host's gate is made in the window,
    /// through the link.
    pub async fn for_event(&mut self, link: &Link, event: &EngineEvent) -> Option<Notification> {
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
        let n = Notification { quick: None, ..n };
        self.first(event, &n).then_some(n)
    }

    /// Whether `n`, called for by `event`, is told for the first time.
    fn first(&mut self, event: &EngineEvent, n: &Notification) -> bool {
        let key = match event {
            EngineEvent::GateOpened { gate_id, .. } => format!("gate:{gate_id}"),
            EngineEvent::RunChanged { run } => {
                format!("{}:{}:{}", n.kind.as_str(), run.id, run.state_since)
            }
            _ => format!("{}:{}", n.kind.as_str(), n.run_id),
        };
        if self.told.len() > REMEMBERED {
            self.told.clear();
        }
        self.told.insert(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_engine::{Engine, NotificationKind, Paths};

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

    #[test]
    fn a_hosts_failed_run_pushed_twice_notifies_once_and_each_gate_once() {
        let mut told = HostNotifications::default();
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
        let blocking = NotificationKind::AgentQuestionBlocking;
        assert!(told.first(&opened(5), &n(blocking, 1)));
        assert!(!told.first(&opened(5), &n(blocking, 1)));
        assert!(told.first(&opened(6), &n(blocking, 1)));
        let run = demo_run();
        let failed = NotificationKind::RunFailed;
        let changed = EngineEvent::RunChanged { run: run.clone() };
        assert!(told.first(&changed, &n(failed, run.id.0)));
        assert!(!told.first(&changed, &n(failed, run.id.0)));
        // Failed again later (resumed, failed again): told again.
        let mut later = run.clone();
        later.state_since += 1000;
        let again = EngineEvent::RunChanged { run: later };
        assert!(told.first(&again, &n(failed, run.id.0)));
    }
}

//! The deterministic demo fleet: runs in every state, created through the same
//! store transactions and operations as real work (never raw SQL), so the demo
//! exercises the real paths and leaves a verifiable audit log.

use crate::ops;
use overseer_core::rules::{AlwaysGated, ToolRequest};
use overseer_core::{
    Actor, AgentToolCall, EngineEvent, GateBody, GateKind, GateOption, MergeReviewChoice, Millis,
    RunEvent, RunId, ToolCallChoice, ToolCallGate,
};
use overseer_store::{Store, StoreError};

const MINUTE: Millis = 60_000;

/// Where a demo run ends up.
#[derive(Debug, Clone, Copy)]
enum Target {
    Queued,
    Claimed,
    Running,
    Waiting,
    RetryQueued,
    PendingReview,
    Merged,
    HumanRejected,
    Aborted,
    PlanRejected,
    Failed,
    Interrupted,
    SupervisorRejected,
}

/// (workspace, task, agent, target state, minutes ago)
const FLEET: &[(&str, &str, &str, Target, i64)] = &[
    (
        "web-app",
        "Add rate limiting to the public API",
        "claude-code",
        Target::PendingReview,
        12,
    ),
    (
        "web-app",
        "Fix the flaky checkout test",
        "gemini",
        Target::PendingReview,
        3,
    ),
    (
        "api-server",
        "Upgrade tokio and fix deprecations",
        "codex",
        Target::PendingReview,
        47,
    ),
    (
        "api-server",
        "Write the migration for user settings",
        "claude-code",
        Target::Waiting,
        21,
    ),
    (
        "web-app",
        "Refactor the billing module",
        "gemini",
        Target::Running,
        8,
    ),
    (
        "web-app",
        "Document the CLI flags",
        "demo",
        Target::Queued,
        1,
    ),
    (
        "api-server",
        "Add dark mode to the settings page",
        "codex",
        Target::Claimed,
        2,
    ),
    (
        "api-server",
        "Speed up the CI cache",
        "demo",
        Target::RetryQueued,
        5,
    ),
    (
        "web-app",
        "Bump version to 0.4.2",
        "demo",
        Target::Merged,
        180,
    ),
    (
        "api-server",
        "Rewrite auth with procedural macros",
        "codex",
        Target::HumanRejected,
        240,
    ),
    (
        "web-app",
        "Delete unused feature flags",
        "claude-code",
        Target::Aborted,
        95,
    ),
    (
        "api-server",
        "Split the monolith into microservices",
        "gemini",
        Target::PlanRejected,
        300,
    ),
    (
        "web-app",
        "Port the test suite to vitest",
        "demo",
        Target::Failed,
        130,
    ),
    (
        "api-server",
        "Add a telemetry opt-out",
        "claude-code",
        Target::Interrupted,
        60,
    ),
    (
        "web-app",
        "Disable the linter in CI",
        "codex",
        Target::SupervisorRejected,
        75,
    ),
];

/// Seeds the demo fleet. Refuses a data dir that already has runs, so it never
/// mixes with real work. Returns the run ids in fleet order and the events to
/// publish, in commit order.
pub fn seed(
    store: &mut Store,
    user: &Actor,
    now: Millis,
    settled: bool,
) -> Result<(Vec<RunId>, Vec<EngineEvent>), StoreError> {
    if !store.runs()?.is_empty() {
        return Err(StoreError::InvalidInput(format!(
            "{} already has runs; seed the demo into an empty data dir (--data-dir)",
            store.path().display()
        )));
    }
    let mut ids = Vec::new();
    let mut events: Vec<EngineEvent> = Vec::new();
    for (ws, title, agent, target, minutes_ago) in FLEET {
        let active = matches!(
            target,
            Target::Queued
                | Target::Claimed
                | Target::Running
                | Target::Waiting
                | Target::RetryQueued
        );
        if settled && active {
            continue;
        }
        let at = now - minutes_ago * MINUTE;
        let started = at - 4 * MINUTE;
        let (run, created) = store.write_changes(|tx| {
            let ws_id = tx.ensure_workspace(ws, &format!("~/src/{ws}"), user, started)?;
            let task = tx.create_task(ws_id, title, title, user, started)?;
            tx.create_run(task, agent, user, started)
        })?;
        let mut demo = DemoRun {
            run,
            started,
            at,
            events: &mut events,
        };
        demo.changed(created);
        demo.reach(store, user, agent, *target)?;
        ids.push(run);
    }
    Ok((ids, events))
}

/// One demo run on its way to its state, its events kept in commit order.
struct DemoRun<'a> {
    run: RunId,
    started: Millis,
    at: Millis,
    events: &'a mut Vec<EngineEvent>,
}

impl DemoRun<'_> {
    /// The events of changes written directly.
    fn changed(&mut self, c: overseer_store::Changes) {
        self.events.extend(c.into_events());
    }

    /// The events of an operation.
    fn record(&mut self, out: ops::Outcome) {
        self.events.extend(out.events);
    }

    /// The run moved on by the engine at `t`.
    fn step(&mut self, store: &mut Store, e: RunEvent, t: Millis) -> Result<(), StoreError> {
        ops::advance_run(store, self.run, e, &Actor::Engine, t).map(|out| self.record(out))
    }

    /// The run claimed and started.
    fn start(&mut self, store: &mut Store) -> Result<(), StoreError> {
        self.step(store, RunEvent::Claim, self.started + 1_000)?;
        self.step(store, RunEvent::Start, self.started + 2_000)
    }

    /// The run started and finished, waiting for its review.
    fn review(&mut self, store: &mut Store) -> Result<(), StoreError> {
        self.start(store)?;
        self.step(
            store,
            RunEvent::Finish {
                auto_advance: false,
            },
            self.at - MINUTE,
        )
    }

    /// The run taken to its state through the real operations.
    fn reach(
        &mut self,
        store: &mut Store,
        user: &Actor,
        agent: &str,
        target: Target,
    ) -> Result<(), StoreError> {
        let (run, at) = (self.run, self.at);
        match target {
            Target::Queued => {}
            Target::Claimed => self.step(store, RunEvent::Claim, at)?,
            Target::Running => self.start(store)?,
            Target::Waiting => {
                self.start(store)?;
                self.open_install_gate(store, agent)?;
            }
            Target::RetryQueued => {
                self.start(store)?;
                self.step(store, RunEvent::QueueRetry, at)?;
            }
            Target::PendingReview => {
                self.start(store)?;
                self.step(
                    store,
                    RunEvent::Finish {
                        auto_advance: false,
                    },
                    at,
                )?;
            }
            Target::Merged => {
                self.review(store)?;
                self.record(ops::approve_run(store, run, user, at)?);
            }
            Target::HumanRejected => {
                self.review(store)?;
                self.record(ops::reject_run(
                    store,
                    run,
                    "Too clever: keep the current auth design",
                    user,
                    at,
                )?);
            }
            Target::Aborted => {
                self.start(store)?;
                self.record(ops::abort_run(store, run, user, at)?);
            }
            Target::PlanRejected => {
                self.start(store)?;
                let (_, rejected) = store.write_changes(|tx| {
                    tx.transition(run, RunEvent::RejectPlan, Some("Out of scope"), user, at)
                })?;
                self.changed(rejected);
            }
            Target::Failed => {
                self.start(store)?;
                self.step(store, RunEvent::Fail, at)?;
            }
            Target::Interrupted => {
                self.start(store)?;
                self.step(store, RunEvent::Interrupt, at)?;
            }
            Target::SupervisorRejected => {
                self.review(store)?;
                self.supervisor_reject(store)?;
            }
        }
        Ok(())
    }

    /// The waiting run's gate: the agent asks to install a package.
    fn open_install_gate(&mut self, store: &mut Store, agent: &str) -> Result<(), StoreError> {
        let (run, at) = (self.run, self.at);
        let ((), opened) = store.write_changes(|tx| {
            tx.open_gate(
                run,
                "Run `npm install pg-migrate` in the worktree",
                &[
                    GateOption::choice(ToolCallChoice::Yes, "Yes"),
                    GateOption::choice(ToolCallChoice::Always, "Always for this run"),
                    GateOption::choice(ToolCallChoice::No, "No").with_required_context(),
                ],
                &demo_install_call(),
                &Actor::Agent(agent.to_string()),
                at,
            )
            .map(|_| ())
        })?;
        self.changed(opened);
        Ok(())
    }

    /// The supervisor's rejection of a finished run, citing the policy.
    fn supervisor_reject(&mut self, store: &mut Store) -> Result<(), StoreError> {
        let (run, at) = (self.run, self.at);
        let (_, rejected) = store.write_changes(|tx| {
            tx.transition(
                run,
                RunEvent::SupervisorReject,
                Some("Disabling the linter violates the workspace policy"),
                &Actor::Supervisor("rules".into()),
                at,
            )
        })?;
        self.changed(rejected);
        Ok(())
    }
}

/// A large fleet for benchmarks: `count` runs across three workspaces, in a
/// realistic mix of settled states (mostly merged, some waiting for review,
/// some failed, interrupted or rejected), created through the store's real
/// transactions (each
/// state change compare-and-set and audited), 500 runs per transaction.
pub fn seed_bulk(
    store: &mut Store,
    user: &Actor,
    now: Millis,
    count: u32,
) -> Result<Vec<RunId>, StoreError> {
    if !store.runs()?.is_empty() {
        return Err(StoreError::InvalidInput(format!(
            "{} already has runs; seed the demo into an empty data dir (--data-dir)",
            store.path().display()
        )));
    }
    const WORKSPACES: [&str; 3] = ["web-app", "api-server", "mobile"];
    const AGENTS: [&str; 4] = ["claude-code", "gemini", "codex", "demo"];
    const VERBS: [&str; 6] = ["Fix", "Refactor", "Document", "Speed up", "Test", "Upgrade"];
    const NOUNS: [&str; 7] = [
        "the billing module",
        "the checkout flow",
        "the auth middleware",
        "the CI cache",
        "the settings page",
        "the public API",
        "the search index",
    ];
    let engine = Actor::Engine;
    let mut ids = Vec::with_capacity(count as usize);
    let mut i: u32 = 0;
    while i < count {
        let batch_end = (i + 500).min(count);
        let batch = store.write(|tx| {
            let mut out = Vec::new();
            for n in i..batch_end {
                let k = n as usize;
                let ws = WORKSPACES[k % WORKSPACES.len()];
                let at = now - i64::from(count - n) * 7_000;
                let ws_id = tx.ensure_workspace(ws, &format!("~/src/{ws}"), user, at)?;
                let title = format!(
                    "{} {} (#{n})",
                    VERBS[k % VERBS.len()],
                    NOUNS[(k / VERBS.len()) % NOUNS.len()]
                );
                let task = tx.create_task(ws_id, &title, &title, user, at)?;
                let run = tx.create_run(task, AGENTS[k % AGENTS.len()], user, at)?;
                tx.transition(run, RunEvent::Claim, None, &engine, at + 1)?;
                tx.transition(run, RunEvent::Start, None, &engine, at + 2)?;
                // No fictional live agents: a run "running" here would be
                // found agentless (interrupted) by the next engine start.
                let (ends, note): (RunEvent, Option<&str>) = match k % 10 {
                    0 => (RunEvent::Interrupt, Some("agent gone")),
                    1 => (RunEvent::Fail, Some("sensor failed")),
                    _ => (
                        RunEvent::Finish {
                            auto_advance: false,
                        },
                        None,
                    ),
                };
                tx.transition(run, ends, note, &engine, at + 3)?;
                // Of the finished runs: two in ten wait for review, one is
                // rejected, the rest merged.
                let review = match k % 10 {
                    0..=3 => None,
                    4 => Some((
                        MergeReviewChoice::Reject,
                        Some("not this way"),
                        RunEvent::Reject,
                    )),
                    _ => Some((MergeReviewChoice::Approve, None, RunEvent::Approve)),
                };
                if let Some((option, reason, event)) = review {
                    if let Some(g) = tx.pending_gate(run, GateKind::MergeReview)? {
                        tx.decide_gate(g, option.as_str(), reason, user, at + 4)?;
                    }
                    tx.transition(run, event, reason, user, at + 4)?;
                }
                out.push(run);
            }
            Ok(out)
        })?;
        ids.extend(batch);
        i = batch_end;
    }
    Ok(ids)
}

/// The demo fleet's waiting run asks this: a package install, always gated.
fn demo_install_call() -> GateBody {
    let gated = AlwaysGated::InstallPackages;
    let request = ToolRequest {
        tool: "Bash".to_owned(),
        kind: overseer_core::ToolKind::Execute,
        command: Some("npm install pg-migrate".to_owned()),
        paths: Vec::new(),
        resolved: Vec::new(),
    };
    GateBody::ToolCall(ToolCallGate {
        tool_call: AgentToolCall::default(),
        risk: Some(overseer_core::rules::risk_of(&request, Some(gated), None)),
        request,
        reason: format!("{}: npm install pg-migrate", gated.describe()),
        rule: None,
        always_gated: Some(gated),
        always_gated_why: Some(gated.describe().to_owned()),
        agent_options: Vec::new(),
        ask_kind: None,
    })
}

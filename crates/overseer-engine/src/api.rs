//! The local API wire format: one JSON object per line over a Unix socket.
//!
//! Client: `{"id": 7, "method": "approve_run", "params": {"run": 3}}`.
//! Server: `{"id": 7, "result": ...}` or `{"id": 7, "error": {"code", "message"}}`.
//! After `subscribe` is answered, the server pushes `{"event": EngineEvent}` lines.
//! There is no actor field: the server decides who the caller is from the
//! connection itself.
//!
//! What can be called is [`operations!`], the one table of operations that
//! this module (the socket's [`Request`], [`op`], [`Operation`]) and the
//! app's Tauri commands are generated from.

use crate::Engine;
use overseer_core::{Actor, ApiError, EngineEvent, ErrorCode};
use serde::{Deserialize, Serialize};
use vocabulary::*;

/// Longest request line the server reads; longer lines are refused.
pub const MAX_LINE: usize = 1 << 20;

/// The one list of operations, read by both adapters: the socket API
/// ([`Request`], [`dispatch`](crate::server::dispatch), in this module) and
/// the app's Tauri commands (`src-tauri/src/commands.rs`). Each entry says
/// whether it decides or changes anything (`write`) or only reads
/// (`read`), its Tauri command name, its typed parameters (with the name
/// the window passes each under), its typed response and the [`Engine`]
/// call it makes. An operation on one surface only says why.
///
/// `operations!(adapter)` expands to `adapter! { both {..} socket_only {..}
/// window_only {..} }`. An entry reads
/// `read|write command => Name { field: Type as window_arg, .. } -> Response
/// = |engine, actor| call;` (`, because "why"` after the response when
/// one-sided; socket-only entries have no command or window names). Without
/// braces it takes no parameters (a socket request without `params`). The
/// `|engine, actor|` names what the call may use; it is not a closure. The
/// actor is never a parameter: each adapter passes the one its connection
/// implies.
#[macro_export]
macro_rules! operations {
    ($adapter:ident) => {
        $adapter! {
            both {
                read list_runs => ListRuns -> Vec<RunView>
                    = |engine, _actor| engine.runs();
                write approve_run => ApproveRun { run: RunId as run_id } -> RunView
                    = |engine, actor| engine.approve_run(run, actor);
                write reject_run => RejectRun { run: RunId as run_id, reason: String as reason } -> RunView
                    = |engine, actor| engine.reject_run(run, &reason, actor);
                write abort_run => AbortRun { run: RunId as run_id } -> RunView
                    = |engine, actor| engine.abort_run(run, actor);
                read list_gates => ListGates { pending_only: bool as pending_only } -> Vec<GateView>
                    = |engine, _actor| engine.gates(pending_only);
                read show_gate => ShowGate { gate: GateId as gate_id } -> GateView
                    = |engine, _actor| engine.gate(gate);
                write decide_gate => DecideGate {
                    gate: GateId as gate_id,
                    option: String as option,
                    context: Option<String> as context,
                } -> GateView
                    = |engine, actor| engine.decide_gate(gate, &option, context.as_deref(), actor);
                /// Stop a gate's timer: it waits for a human.
                write hold_gate => HoldGate { gate: GateId as gate_id } -> GateView
                    = |engine, actor| engine.hold_gate(gate, actor);
                /// The chronological story of a gate, each record's signature checked.
                read gate_story => GateStory { gate: GateId as gate_id } -> GateStory
                    = |engine, _actor| engine.gate_story(gate);
                /// Everything that decided anything on a run (step verdicts,
                /// rules' allows and denials, supervisor votes, timers,
                /// humans), each record checked.
                read run_story => RunStory { run: RunId as run_id } -> RunStory
                    = |engine, _actor| engine.run_story(run);
                read run_activity => RunActivity { run: RunId as run_id, after: i64 as after } -> Vec<ActivityView>
                    = |engine, _actor| engine.activity(run, after);
                /// The run's diff: files with their counts, the unified diff
                /// text, and the files other tools run on their own.
                read run_diff => RunDiff { run: RunId as run_id } -> RunDiff
                    = |engine, _actor| {
                        let (files, diff) = engine.run_diff(run)?;
                        let auto_run = engine.run_auto_run(run)?;
                        Ok(RunDiff { files, diff, auto_run })
                    };
                /// An instruction for a running agent's next turn; answers the run.
                write steer_run => SteerRun { run: RunId as run_id, text: String as text } -> RunView
                    = |engine, actor| {
                        engine.steer_run(run, &text, actor)?;
                        engine.run(run)
                    };
                /// Messages after `after`, oldest first: all, or one run's
                /// (sent by it, to it, delivered broadcasts).
                read list_messages => ListMessages {
                    #[serde(default)]
                    run: Option<RunId> as run,
                    #[serde(default)]
                    after: Option<i64> as after,
                } -> Vec<MessageView>
                    = |engine, _actor| engine.messages(run, after);
                /// A message from the user to a run, or a broadcast; a reply
                /// carries the correlation id of what it answers.
                write send_message => SendMessage {
                    to: MessageTo as to,
                    body: String as body,
                    #[serde(default)]
                    correlation_id: Option<String> as correlation_id,
                } -> MessageView
                    = |engine, actor| engine.send_message(to, &body, correlation_id, actor);
                /// A task and its settings (rules, approval, supervisor, retries, stage).
                read show_task => ShowTask { task: TaskId as task_id } -> TaskInfo
                    = |engine, _actor| engine.task(task);
                read list_workspaces => ListWorkspaces -> Vec<Workspace>
                    = |engine, _actor| engine.workspaces();
                /// Replace a workspace's sensors and auto-advance override.
                write set_workspace_checks => SetWorkspaceChecks {
                    workspace: String as workspace,
                    sensors: Vec<String> as sensors,
                    auto_advance: Option<bool> as auto_advance,
                } -> Workspace
                    = |engine, actor| engine.set_workspace_checks(&workspace, sensors, auto_advance, actor);
                read supervisor_status => SupervisorStatus { scope: Scope as scope } -> PolicyStatus
                    = |engine, _actor| engine.supervisor_status(&scope);
                /// Set (or with None remove) the supervisor policy at a scope.
                write set_supervisor => SetSupervisor {
                    scope: Scope as scope,
                    policy: Option<SupervisorPolicy> as policy,
                } -> PolicyStatus
                    = |engine, actor| engine.set_supervisor(&scope, policy, actor);
                /// Rules as typed, parsed here: a rule that is not one is a
                /// typed `invalid_input` naming it.
                write set_permissions => SetPermissions { scope: Scope as scope, rules: RuleTexts as rules } -> RuleSet
                    = |engine, actor| {
                        let rules = $crate::settings::check_rules(&rules).map_err(ApiError::invalid_fields)?;
                        engine.set_permissions(&scope, rules, actor)
                    };
                /// A settings write checked, not made: the field errors it
                /// would be refused with (empty: it would be saved). The
                /// window calls it as the user types. Writes nothing.
                read check_settings => CheckSettings { change: SettingsChange as change } -> Vec<FieldError>
                    = |engine, _actor| engine.check_settings(&change);
                read notification_settings => Notifications -> NotificationSettings
                    = |engine, _actor| Ok(engine.notifications());
                write set_notification_settings => SetNotifications { settings: NotificationSettings as settings } -> NotificationSettings
                    = |engine, actor| engine.set_notifications(settings, actor);
                /// Every agent profile: installed or not, its mode, what it still needs.
                read agents => Agents -> Vec<AgentInfo>
                    = |engine, _actor| Ok(engine.agents());
            }
            socket_only {
                read Ping -> String,
                    because "a client's check that an engine answers; the window embeds its engine"
                    = |_engine, _actor| Ok("pong".to_owned());
                read ShowRun { run: RunId } -> RunView,
                    because "the window keeps every run from list_runs and the pushed events"
                    = |engine, _actor| engine.run(run);
                read Subscribe -> (),
                    because "the app pushes events to the window itself; on the socket it turns the connection into an event stream (the server answers it, never dispatch)"
                    = |_engine, _actor| Err(ApiError::new(
                        ErrorCode::InvalidInput,
                        "subscribe is only available on a socket connection",
                    ));
                write SeedDemo {
                    /// Only runs that wait for review or are released: no fictional
                    /// agents in active states for a live orchestrator to find.
                    #[serde(default)]
                    settled: bool,
                    /// Instead of the demo fleet: this many runs, for benchmarks.
                    #[serde(default)]
                    runs: Option<u32>,
                } -> Vec<RunId>,
                    because "demo and benchmark data, seeded from a terminal (`overseer demo seed`)"
                    = |engine, actor| match runs {
                        Some(count) => engine.seed_bulk(actor, count),
                        None => engine.seed_demo(actor, settled),
                    };
                write AddWorkspace {
                    path: PathBuf,
                    name: Option<String>,
                    #[serde(default)]
                    settings: WorkspaceSettings,
                } -> Workspace,
                    because "the window has no form to add a workspace yet (`overseer workspace add`)"
                    = |engine, actor| engine.add_workspace(&path, name.as_deref(), settings, actor);
                /// On the wire the task's fields are the params themselves.
                write StartTask {
                    #[serde(flatten)]
                    task: TaskStart,
                } -> Started,
                    because "the window has no form to start a task yet (`overseer task start`)"
                    = |engine, actor| engine.start_task(&task, actor);
                write CleanRun { run: RunId } -> RunView,
                    because "removing a released run's worktree and branch is a terminal chore (`overseer runs clean`)"
                    = |engine, _actor| engine.clean_run(run);
                write ResumeRun { run: RunId } -> Started,
                    because "the window does not resume runs; an interrupted run is resumed from a terminal (`overseer runs resume`)"
                    = |engine, actor| engine.resume_run(run, actor);
                /// A vote as the supervisor (for scripted setups): it obeys the
                /// user-always-wins rule like the real supervisor.
                write SupervisorVote { gate: GateId, approve: bool, rationale: String } -> GateView,
                    because "for scripts that stand in for the supervisor; a human in the window decides as themselves"
                    = |engine, actor| supervisor_vote(engine, gate, approve, rationale, actor);
                /// An agent outside Overseer (a hook, `overseer mcp`) asks or reports;
                /// answered with a [`overseer_core::SessionAnswer`] once decided (a
                /// blocking ask keeps the call open until a human or the supervisor
                /// answers). It can never decide anything.
                read Session { session: SessionRef, ask: SessionAsk } -> SessionAnswer,
                    because "an agent's ask, held open while it waits and dropped when its asker leaves: only a socket connection (`overseer hook`, `overseer mcp`) can do that (the server answers it, never dispatch)"
                    = |_engine, _actor| Err(ApiError::new(
                        ErrorCode::InvalidInput,
                        "an agent's ask is only answered on a socket connection (`overseer hook`, `overseer mcp`)",
                    ));
            }
            window_only {
                /// The first `limit` rows of the dashboard's default order, with
                /// the fleet's size and counts.
                read list_runs_head => ListRunsHead { limit: usize as limit } -> RunsHead,
                    because "what the window paints before the whole list arrives; a terminal lists every run"
                    = |engine, _actor| engine.runs_head(limit);
            }
        }
    };
}

/// What an operation is, whichever surface carries it.
pub trait Operation {
    /// What it answers.
    type Response: Serialize;
    /// Whether it decides or changes anything (else it only reads or asks):
    /// what a process an external agent started may not send, and what an
    /// offline CLI checkpoints after.
    const DECIDES: bool;
    /// Calls the engine as `actor`, which the caller's connection implies.
    fn perform(self, engine: &Engine, actor: &Actor) -> Result<Self::Response, ApiError>;
}

/// Which surfaces carry an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surfaces {
    Both,
    /// On the socket only, because of the reason given.
    SocketOnly(&'static str),
    /// In the window only, because of the reason given.
    WindowOnly(&'static str),
}

/// One row of the table, for the tests that keep the surfaces in step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationInfo {
    /// The Rust name (the socket's method is its snake_case form).
    pub name: &'static str,
    /// The Tauri command, when the window has one.
    pub window: Option<&'static str>,
    pub surfaces: Surfaces,
    pub decides: bool,
}

impl OperationInfo {
    /// The socket's method (serde's snake_case of the variant), when the
    /// socket carries it.
    pub fn socket_method(&self) -> Option<String> {
        if matches!(self.surfaces, Surfaces::WindowOnly(_)) {
            return None;
        }
        let mut method = String::new();
        for (i, c) in self.name.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                method.push('_');
            }
            method.extend(c.to_lowercase());
        }
        Some(method)
    }
}

/// Generates, from the table: one struct per operation in [`op`] with its
/// [`Operation`] impl, the socket's [`Request`] (both + socket_only) and its
/// dispatch, and [`OPERATIONS`].
macro_rules! socket_adapter {
    (
        both { $(
            $(#[$doc:meta])*
            $kind:ident $window:ident => $Op:ident
                $( { $( $(#[$fattr:meta])* $field:ident : $fty:ty as $arg:ident ),* $(,)? } )?
                -> $resp:ty
                = |$e:ident, $a:ident| $body:expr;
        )* }
        socket_only { $(
            $(#[$sdoc:meta])*
            $skind:ident $SOp:ident
                $( { $( $(#[$sfattr:meta])* $sfield:ident : $sfty:ty ),* $(,)? } )?
                -> $sresp:ty, because $swhy:literal
                = |$se:ident, $sa:ident| $sbody:expr;
        )* }
        window_only { $(
            $(#[$wdoc:meta])*
            $wkind:ident $wwindow:ident => $WOp:ident
                $( { $( $(#[$wfattr:meta])* $wfield:ident : $wfty:ty as $warg:ident ),* $(,)? } )?
                -> $wresp:ty, because $wwhy:literal
                = |$we:ident, $wa:ident| $wbody:expr;
        )* }
    ) => {
        /// One struct per operation: its typed parameters.
        pub mod op {
            #[allow(unused_imports)]
            use super::vocabulary::*;
            use serde::{Deserialize, Serialize};
            $(
                $(#[$doc])*
                #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
                pub struct $Op { $($( $(#[$fattr])* pub $field: $fty, )*)? }
            )*
            $(
                $(#[$sdoc])*
                #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
                pub struct $SOp { $($( $(#[$sfattr])* pub $sfield: $sfty, )*)? }
            )*
            $(
                $(#[$wdoc])*
                #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
                pub struct $WOp { $($( $(#[$wfattr])* pub $wfield: $wfty, )*)? }
            )*
        }

        $( socket_adapter!(@perform $kind $Op { $($($field),*)? } -> $resp = |$e, $a| $body); )*
        $( socket_adapter!(@perform $skind $SOp { $($($sfield),*)? } -> $sresp = |$se, $sa| $sbody); )*
        $( socket_adapter!(@perform $wkind $WOp { $($($wfield),*)? } -> $wresp = |$we, $wa| $wbody); )*

        /// A call on the socket: `method` names the operation, `params`
        /// holds its parameters (absent when it takes none).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "method", content = "params", rename_all = "snake_case")]
        pub enum Request {
            $(
                $(#[$doc])*
                $Op $( { $( $(#[$fattr])* $field: $fty ),* } )?,
            )*
            $(
                $(#[$sdoc])*
                $SOp $( { $( $(#[$sfattr])* $sfield: $sfty ),* } )?,
            )*
        }

        $(
            impl From<op::$Op> for Request {
                fn from(o: op::$Op) -> Request {
                    let op::$Op { $($($field),*)? } = o;
                    Request::$Op $( { $($field),* } )?
                }
            }
        )*
        $(
            impl From<op::$SOp> for Request {
                fn from(o: op::$SOp) -> Request {
                    let op::$SOp { $($($sfield),*)? } = o;
                    Request::$SOp $( { $($sfield),* } )?
                }
            }
        )*

        impl Request {
            /// Whether it decides or changes anything (see [`Operation::DECIDES`]).
            pub fn decides(&self) -> bool {
                match self {
                    $( Request::$Op { .. } => <op::$Op as Operation>::DECIDES, )*
                    $( Request::$SOp { .. } => <op::$SOp as Operation>::DECIDES, )*
                }
            }

            /// Runs the operation as `actor`; its typed answer as JSON.
            pub fn perform(self, engine: &Engine, actor: &Actor) -> Result<serde_json::Value, ApiError> {
                match self {
                    $(
                        Request::$Op $( { $($field),* } )? => {
                            to_json(op::$Op { $($($field),*)? }.perform(engine, actor)?)
                        }
                    )*
                    $(
                        Request::$SOp $( { $($sfield),* } )? => {
                            to_json(op::$SOp { $($($sfield),*)? }.perform(engine, actor)?)
                        }
                    )*
                }
            }
        }

        /// Every operation, in table order.
        pub const OPERATIONS: &[OperationInfo] = &[
            $( OperationInfo {
                name: stringify!($Op),
                window: Some(stringify!($window)),
                surfaces: Surfaces::Both,
                decides: <op::$Op as Operation>::DECIDES,
            }, )*
            $( OperationInfo {
                name: stringify!($SOp),
                window: None,
                surfaces: Surfaces::SocketOnly($swhy),
                decides: <op::$SOp as Operation>::DECIDES,
            }, )*
            $( OperationInfo {
                name: stringify!($WOp),
                window: Some(stringify!($wwindow)),
                surfaces: Surfaces::WindowOnly($wwhy),
                decides: <op::$WOp as Operation>::DECIDES,
            }, )*
        ];
    };

    (@perform $kind:ident $Op:ident { $($field:ident),* } -> $resp:ty = |$e:ident, $a:ident| $body:expr) => {
        impl Operation for op::$Op {
            type Response = $resp;
            const DECIDES: bool = socket_adapter!(@decides $kind);
            fn perform(self, engine: &Engine, actor: &Actor) -> Result<$resp, ApiError> {
                // An operation answered by the server itself ignores its fields here.
                #[allow(unused_variables)]
                let op::$Op { $($field),* } = self;
                let $e: &Engine = engine;
                let $a: &Actor = actor;
                $body
            }
        }
    };
    (@decides read) => { false };
    (@decides write) => { true };
}

operations!(socket_adapter);

/// The types the table names, for an adapter to import where it expands
/// the table.
pub mod vocabulary {
    pub use super::RunDiff;
    pub use crate::config::AgentInfo;
    pub use crate::{
        GateStory, NotificationSettings, PolicyStatus, RunStory, RunsHead, Scope, Started,
        TaskInfo, TaskStart,
    };
    pub use crate::{RuleTexts, SettingsChange};
    pub use overseer_core::message::{MessageTo, MessageView};
    pub use overseer_core::rules::RuleSet;
    pub use overseer_core::supervision::SupervisorPolicy;
    pub use overseer_core::FieldError;
    pub use overseer_core::{
        ActivityView, GateId, GateView, RunId, RunView, SessionAnswer, SessionAsk, SessionRef,
        TaskId,
    };
    pub use overseer_store::{Workspace, WorkspaceSettings};
    pub use std::path::PathBuf;
}

/// A run's diff against its base: the files with their counts and the
/// unified diff text (untrusted: shown as text only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDiff {
    pub files: Vec<overseer_git::FileChange>,
    pub diff: String,
    /// The diff's files that other tools run or load on their own, with
    /// what would run them (never merged without a human).
    #[serde(default)]
    pub auto_run: Vec<overseer_core::autorun::AutoRunFile>,
}

impl From<&RuleSet> for RuleTexts {
    fn from(rules: &RuleSet) -> RuleTexts {
        let texts = |v: &[overseer_core::rules::Rule]| v.iter().map(|r| r.to_string()).collect();
        RuleTexts {
            allow: texts(&rules.allow),
            ask: texts(&rules.ask),
            deny: texts(&rules.deny),
        }
    }
}

/// A human voting as the supervisor has the supervisor's authority, never
/// more: the actor is derived from the caller, not claimed.
fn supervisor_vote(
    engine: &Engine,
    gate: GateId,
    approve: bool,
    rationale: String,
    actor: &Actor,
) -> Result<GateView, ApiError> {
    let name = match actor {
        Actor::User(n) => n.clone(),
        Actor::Supervisor(n) | Actor::Agent(n) => n.clone(),
        Actor::Engine => "engine".to_owned(),
    };
    let view = engine.gate(gate)?;
    let verdict = if approve {
        overseer_core::supervision::Verdict::Approve
    } else {
        overseer_core::supervision::Verdict::Reject
    };
    let option = overseer_core::supervision::verdict_option(view.kind(), verdict).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "the supervisor cannot decide {} gates; decide it yourself with `overseer gates decide`",
                view.kind().as_str()
            ),
        )
    })?;
    let input = overseer_store::DecisionInput {
        verdict: Some(verdict),
        option: Some(option.to_owned()),
        rationale: Some(rationale),
        rule_ref: Some("manual".to_owned()),
        source_event: Some(format!("cli:{gate}")),
        ..Default::default()
    };
    engine.supervisor_vote(gate, &Actor::Supervisor(name), &input)
}

fn to_json<T: Serialize>(v: T) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    pub id: u64,
    #[serde(flatten)]
    pub request: Request,
}

/// One line from the server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ServerLine {
    Result {
        id: Option<u64>,
        result: serde_json::Value,
    },
    Error {
        id: Option<u64>,
        error: ApiError,
    },
    Event {
        event: EngineEvent,
    },
}

impl ServerLine {
    /// The answer to call `id`: its result, or its error.
    pub fn reply(id: u64, outcome: Result<serde_json::Value, ApiError>) -> Self {
        match outcome {
            Ok(result) => ServerLine::Result {
                id: Some(id),
                result,
            },
            Err(error) => ServerLine::Error {
                id: Some(id),
                error,
            },
        }
    }
}

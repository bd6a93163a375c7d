//! The local API wire format: one JSON object per line over a Unix socket.
//!
//! Client: `{"id": 7, "method": "approve_run", "params": {"run": 3}}`.
//! Server: `{"id": 7, "result": ...}` or `{"id": 7, "error": {"code", "message"}}`.
//! After `subscribe` is answered, the server pushes `{"event": EngineEvent}` lines.
//! There is no actor field: the server decides who the caller is from the
//! connection itself.
//!
//! What can be called is the contract's one table
//! ([`overseer_api::operations!`]); this module expands it into the socket's
//! [`Request`], [`op`], the [`Api`] trait and each call's [`Operation`], and
//! implements [`Api`] for the [`Engine`].

use overseer_core::role::Target;
use overseer_core::ErrorCode;
use overseer_engine::Engine;
use serde::{Deserialize, Serialize};
use vocabulary::*;

/// Longest request line the server reads; longer lines are refused.
pub const MAX_LINE: usize = 1 << 20;

/// What an operation is, whichever surface carries it.
pub trait Operation {
    /// What it answers.
    type Response: Serialize;
    /// Whether it decides or changes anything (else it only reads or asks):
    /// what a process an external agent started may not send, and what an
    /// offline CLI checkpoints after.
    const DECIDES: bool;
    /// Who may call it: the first word of its entry in the table.
    const ACCESS: Access;
    /// Refuses `actor` (`forbidden`) unless their role permits this call
    /// where it acts: the one check every call passes, from the table's
    /// declaration. [`Operation::perform`] calls it first.
    fn authorize(&self, engine: &Engine, actor: &Actor) -> Result<(), ApiError>;
    /// Calls the engine as `actor`, which the caller's connection implies,
    /// once [`Operation::authorize`] let it.
    fn perform(self, engine: &Engine, actor: &Actor) -> Result<Self::Response, ApiError>;
}

/// Where a `decide` operation acts: the workspace of the run, gate, task
/// or message it names. Every `decide` entry of the table needs one (the
/// compiler demands it), so none can skip the approver's workspace check.
pub trait Scoped {
    fn target(&self, engine: &Engine) -> Result<Target, ApiError>;
}

/// What a stream is: the transport answers it itself, holding the
/// connection (the table's `streams`).
pub trait StreamOperation {
    /// What it answers once (for an ask, when it is decided).
    type Answer: Serialize;
    /// What it pushes after its answer (`()`: nothing).
    type Item: Serialize;
}

/// Generates, from the contract's table ([`overseer_api::operations!`]):
/// one struct per operation in [`op`], the [`Api`] trait the engine
/// implements (one method per call; streams are the transport's), each
/// call's [`Operation`] impl, the socket's [`Request`] with its
/// [`Request::route`] to a [`Invocation`] or a [`Stream`].
macro_rules! wire_adapter {
    (
        both { $(
            $(#[doc = $doc:literal])*
            $kind:ident $call:ident => $Op:ident
                $( { $( $(#[$fattr:meta])* $field:ident : $fty:ty as $arg:ident ),* $(,)? } )?
                -> $resp:ty;
        )* }
        socket_only { $(
            $(#[doc = $sdoc:literal])*
            $skind:ident $scall:ident => $SOp:ident
                $( { $( $(#[$sfattr:meta])* $sfield:ident : $sfty:ty ),* $(,)? } )?
                -> $sresp:ty, because $swhy:literal;
        )* }
        window_only { $(
            $(#[doc = $wdoc:literal])*
            $wkind:ident $wcall:ident => $WOp:ident
                $( { $( $(#[$wfattr:meta])* $wfield:ident : $wfty:ty as $warg:ident ),* $(,)? } )?
                -> $wresp:ty, because $wwhy:literal;
        )* }
        streams { $(
            $(#[doc = $tdoc:literal])*
            $tkind:ident $tcall:ident => $TOp:ident
                $( { $( $(#[$tfattr:meta])* $tfield:ident : $tfty:ty ),* $(,)? } )?
                -> $tresp:ty $(, then $titem:ty)?, because $twhy:literal;
        )* }
        events { $($events:tt)* }
        also_declared { $($also:tt)* }
    ) => {
        /// One struct per operation: its typed parameters.
        pub mod op {
            #[allow(unused_imports)]
            use super::vocabulary::*;
            use serde::{Deserialize, Serialize};
            $(
                $(#[doc = $doc])*
                #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
                pub struct $Op { $($( $(#[$fattr])* pub $field: $fty, )*)? }
            )*
            $(
                $(#[doc = $sdoc])*
                #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
                pub struct $SOp { $($( $(#[$sfattr])* pub $sfield: $sfty, )*)? }
            )*
            $(
                $(#[doc = $wdoc])*
                #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
                pub struct $WOp { $($( $(#[$wfattr])* pub $wfield: $wfty, )*)? }
            )*
            $(
                $(#[doc = $tdoc])*
                #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
                pub struct $TOp { $($( $(#[$tfattr])* pub $tfield: $tfty, )*)? }
            )*
        }

        /// What the engine implements: one method per call of the table
        /// (streams are answered by their transport), as `actor`, which the
        /// caller's connection implies.
        pub trait Api {
            $(
                $(#[doc = $doc])*
                fn $call(&self, actor: &Actor $($(, $field: $fty)*)?) -> Result<$resp, ApiError>;
            )*
            $(
                $(#[doc = $sdoc])*
                fn $scall(&self, actor: &Actor $($(, $sfield: $sfty)*)?) -> Result<$sresp, ApiError>;
            )*
            $(
                $(#[doc = $wdoc])*
                fn $wcall(&self, actor: &Actor $($(, $wfield: $wfty)*)?) -> Result<$wresp, ApiError>;
            )*
        }

        $(
            impl StreamOperation for op::$TOp {
                type Answer = $tresp;
                type Item = wire_adapter!(@item $($titem)?);
            }
        )*

        $( wire_adapter!(@perform $kind $call $Op { $($($field),*)? } -> $resp); )*
        $( wire_adapter!(@perform $skind $scall $SOp { $($($sfield),*)? } -> $sresp); )*
        $( wire_adapter!(@perform $wkind $wcall $WOp { $($($wfield),*)? } -> $wresp); )*

        /// A call on the socket: `method` names the operation, `params`
        /// holds its parameters (absent when it takes none).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "method", content = "params", rename_all = "snake_case")]
        pub enum Request {
            $(
                $(#[doc = $doc])*
                $Op $( { $( $(#[$fattr])* $field: $fty ),* } )?,
            )*
            $(
                $(#[doc = $sdoc])*
                $SOp $( { $( $(#[$sfattr])* $sfield: $sfty ),* } )?,
            )*
            $(
                $(#[doc = $tdoc])*
                $TOp $( { $( $(#[$tfattr])* $tfield: $tfty ),* } )?,
            )*
        }

        /// A socket request that is a call: performed by the [`Api`].
        #[derive(Debug, Clone, PartialEq)]
        pub enum Invocation {
            $( $Op(op::$Op), )*
            $( $SOp(op::$SOp), )*
        }

        /// A socket request its transport answers itself, holding the
        /// connection (the table's `streams`).
        // Like [`Request`], one lives for one request: its size is no cost.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Stream {
            $( $(#[doc = $tdoc])* $TOp(op::$TOp), )*
        }

        /// Where a socket request goes.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Route {
            Call(Invocation),
            Stream(Stream),
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
        $(
            impl From<op::$TOp> for Request {
                fn from(o: op::$TOp) -> Request {
                    let op::$TOp { $($($tfield),*)? } = o;
                    Request::$TOp $( { $($tfield),* } )?
                }
            }
        )*

        impl Request {
            /// Whether it decides or changes anything (see [`Operation::DECIDES`]).
            pub fn decides(&self) -> bool {
                match self {
                    $( Request::$Op { .. } => <op::$Op as Operation>::DECIDES, )*
                    $( Request::$SOp { .. } => <op::$SOp as Operation>::DECIDES, )*
                    $( Request::$TOp { .. } => wire_adapter!(@decides $tkind), )*
                }
            }

            /// A call for the [`Api`], or a stream for the transport.
            pub fn route(self) -> Route {
                match self {
                    $( Request::$Op $( { $($field),* } )? => Route::Call(Invocation::$Op(op::$Op { $($($field),*)? })), )*
                    $( Request::$SOp $( { $($sfield),* } )? => Route::Call(Invocation::$SOp(op::$SOp { $($($sfield),*)? })), )*
                    $( Request::$TOp $( { $($tfield),* } )? => Route::Stream(Stream::$TOp(op::$TOp { $($($tfield),*)? })), )*
                }
            }
        }

        impl Invocation {
            /// Whether `actor` may call it (see [`Operation::authorize`]).
            pub fn authorize(&self, engine: &Engine, actor: &Actor) -> Result<(), ApiError> {
                match self {
                    $( Invocation::$Op(o) => o.authorize(engine, actor), )*
                    $( Invocation::$SOp(o) => o.authorize(engine, actor), )*
                }
            }

            /// Who may call it.
            pub fn access(&self) -> Access {
                match self {
                    $( Invocation::$Op(_) => <op::$Op as Operation>::ACCESS, )*
                    $( Invocation::$SOp(_) => <op::$SOp as Operation>::ACCESS, )*
                }
            }

            /// Runs the operation as `actor`; its typed answer as JSON.
            pub fn perform(self, engine: &Engine, actor: &Actor) -> Result<serde_json::Value, ApiError> {
                match self {
                    $( Invocation::$Op(o) => to_json(o.perform(engine, actor)?), )*
                    $( Invocation::$SOp(o) => to_json(o.perform(engine, actor)?), )*
                }
            }
        }
    };

    (@perform $kind:ident $call:ident $Op:ident { $($field:ident),* } -> $resp:ty) => {
        impl Operation for op::$Op {
            type Response = $resp;
            const DECIDES: bool = wire_adapter!(@decides $kind);
            const ACCESS: Access = wire_adapter!(@access $kind);
            fn authorize(&self, engine: &Engine, actor: &Actor) -> Result<(), ApiError> {
                engine.authorize(actor, Self::ACCESS, stringify!($call), || {
                    wire_adapter!(@target $kind self engine)
                })
            }
            fn perform(self, engine: &Engine, actor: &Actor) -> Result<$resp, ApiError> {
                self.authorize(engine, actor)?;
                let op::$Op { $($field),* } = self;
                <Served<'_> as Api>::$call(&Served(engine), actor $(, $field)*)
            }
        }
    };
    (@decides read) => { false };
    (@decides decide) => { true };
    (@decides own) => { true };
    (@access read) => { Access::Read };
    (@access decide) => { Access::Decide };
    (@access own) => { Access::Own };
    (@target decide $op:ident $engine:ident) => { Scoped::target($op, $engine) };
    (@target $other:ident $op:ident $engine:ident) => { Ok(Target::Anywhere) };
    (@item) => { () };
    (@item $item:ty) => { $item };
}

overseer_api::operations!(wire_adapter);

/// The table's operations and events, without their types.
pub use overseer_api::{EventInfo, OperationInfo, Surfaces, EVENTS, OPERATIONS};
pub use overseer_core::role::Access;

/// Who may call an operation of the table, as the engine's check reads it
/// (the table's own [`overseer_api::Access`] mirrors it: that crate
/// depends on nothing).
pub fn access_of(info: &OperationInfo) -> Access {
    match info.access {
        overseer_api::Access::Read => Access::Read,
        overseer_api::Access::Decide => Access::Decide,
        overseer_api::Access::Own => Access::Own,
    }
}

/// The engine as its clients reach it: the contract's calls, each a thin
/// delegation to the service that does it. Kept apart from [`Engine`]
/// itself, whose layers hold the work (see its table).
pub struct Served<'e>(pub &'e Engine);

/// The engine's side of the contract: each call's implementation.
impl Api for Served<'_> {
    fn list_runs(&self, _actor: &Actor) -> Result<Vec<RunView>, ApiError> {
        self.0.runs()
    }
    fn approve_run(&self, actor: &Actor, run: RunId) -> Result<RunView, ApiError> {
        self.0.approve_run(run, actor)
    }
    fn reject_run(&self, actor: &Actor, run: RunId, reason: String) -> Result<RunView, ApiError> {
        self.0.reject_run(run, &reason, actor)
    }
    fn abort_run(&self, actor: &Actor, run: RunId) -> Result<RunView, ApiError> {
        self.0.abort_run(run, actor)
    }
    fn list_gates(
        &self,
        _actor: &Actor,
        pending_only: bool,
        limit: Option<u32>,
        after: Option<GateId>,
    ) -> Result<GatePage, ApiError> {
        self.0.gates_page(pending_only, after, limit)
    }
    fn show_gate(&self, _actor: &Actor, gate: GateId) -> Result<GateView, ApiError> {
        self.0.gate(gate)
    }
    fn decide_gate(
        &self,
        actor: &Actor,
        gate: GateId,
        option: RequestedChoice,
        context: Option<String>,
    ) -> Result<GateView, ApiError> {
        // The choice is read as the gate's kind's: a choice of another kind
        // is refused, saying the gate's choices.
        let choice = option
            .for_gate(self.0.gate(gate)?.kind())
            .map_err(|e| ApiError::new(ErrorCode::InvalidInput, format!("gate {gate}: {e}")))?;
        self.0
            .decide_gate(gate, choice.as_str(), context.as_deref(), actor)
    }
    fn hold_gate(&self, actor: &Actor, gate: GateId) -> Result<GateView, ApiError> {
        self.0.hold_gate(gate, actor)
    }
    fn snooze_gate(&self, actor: &Actor, gate: GateId, until: i64) -> Result<GateView, ApiError> {
        self.0.snooze_gate(gate, until, actor)
    }
    fn gate_story(&self, _actor: &Actor, gate: GateId) -> Result<GateStory, ApiError> {
        self.0.gate_story(gate)
    }
    fn run_story(&self, _actor: &Actor, run: RunId) -> Result<RunStory, ApiError> {
        self.0.run_story(run)
    }
    fn run_activity(
        &self,
        _actor: &Actor,
        run: RunId,
        after: i64,
    ) -> Result<Vec<ActivityView>, ApiError> {
        self.0.activity(run, after)
    }
    fn run_diff(&self, _actor: &Actor, run: RunId) -> Result<RunDiff, ApiError> {
        let (files, diff) = self.0.run_diff(run)?;
        let auto_run = self.0.run_auto_run(run)?;
        Ok(RunDiff {
            files,
            diff,
            auto_run,
        })
    }
    fn steer_run(&self, actor: &Actor, run: RunId, text: String) -> Result<RunView, ApiError> {
        self.0.steer_run(run, &text, actor)?;
        self.0.run(run)
    }
    fn list_messages(
        &self,
        _actor: &Actor,
        run: Option<RunId>,
        after: Option<i64>,
    ) -> Result<Vec<MessageView>, ApiError> {
        self.0.messages(run, after)
    }
    fn send_message(
        &self,
        actor: &Actor,
        to: MessageTo,
        body: String,
        correlation_id: Option<String>,
    ) -> Result<MessageView, ApiError> {
        self.0.send_message(to, &body, correlation_id, actor)
    }
    fn show_task(&self, _actor: &Actor, task: TaskId) -> Result<TaskInfo, ApiError> {
        self.0.task(task)
    }
    fn list_workspaces(&self, _actor: &Actor) -> Result<Vec<Workspace>, ApiError> {
        self.0.workspaces()
    }
    fn set_workspace_checks(
        &self,
        actor: &Actor,
        workspace: String,
        sensors: Vec<String>,
        auto_advance: Option<bool>,
    ) -> Result<Workspace, ApiError> {
        self.0
            .set_workspace_checks(&workspace, sensors, auto_advance, actor)
    }
    fn set_workspace_merge(
        &self,
        actor: &Actor,
        workspace: String,
        two_person: bool,
    ) -> Result<Workspace, ApiError> {
        self.0.set_two_person_merge(&workspace, two_person, actor)
    }
    fn supervisor_status(&self, _actor: &Actor, scope: Scope) -> Result<PolicyStatus, ApiError> {
        self.0.supervisor_status(&scope)
    }
    fn set_supervisor(
        &self,
        actor: &Actor,
        scope: Scope,
        policy: Option<SupervisorPolicy>,
    ) -> Result<PolicyStatus, ApiError> {
        self.0.set_supervisor(&scope, policy, actor)
    }
    fn set_max_cost(
        &self,
        actor: &Actor,
        scope: Scope,
        max_cost: Option<f64>,
    ) -> Result<Option<f64>, ApiError> {
        self.0.set_max_cost(&scope, max_cost, actor)
    }
    fn set_permissions(
        &self,
        actor: &Actor,
        scope: Scope,
        rules: RuleTexts,
    ) -> Result<RuleSet, ApiError> {
        let rules =
            overseer_engine::settings::check_rules(&rules).map_err(ApiError::invalid_fields)?;
        self.0.set_permissions(&scope, rules, actor)
    }
    fn check_settings(
        &self,
        _actor: &Actor,
        change: SettingsChange,
    ) -> Result<Vec<FieldError>, ApiError> {
        self.0.check_settings(&change)
    }
    fn notification_settings(&self, _actor: &Actor) -> Result<NotificationSettings, ApiError> {
        Ok(self.0.notifications())
    }
    fn set_notification_settings(
        &self,
        actor: &Actor,
        settings: NotificationSettings,
    ) -> Result<NotificationSettings, ApiError> {
        self.0.set_notifications(settings, actor)
    }
    fn agents(&self, _actor: &Actor) -> Result<Vec<AgentInfo>, ApiError> {
        Ok(self.0.agents())
    }
    fn list_webhooks(&self, actor: &Actor) -> Result<Vec<Webhook>, ApiError> {
        self.0.webhooks_seen_by(actor)
    }
    fn add_webhook(
        &self,
        actor: &Actor,
        url: String,
        events: Vec<WebhookEvent>,
    ) -> Result<WebhookAdded, ApiError> {
        self.0.add_webhook(&url, &events, actor)
    }
    fn remove_webhook(&self, actor: &Actor, id: i64) -> Result<Webhook, ApiError> {
        self.0.remove_webhook(id, actor)
    }
    fn set_webhook_enabled(
        &self,
        actor: &Actor,
        id: i64,
        enabled: bool,
    ) -> Result<Webhook, ApiError> {
        self.0.set_webhook_enabled(id, enabled, actor)
    }
    fn test_webhook(&self, actor: &Actor, id: i64) -> Result<WebhookDelivery, ApiError> {
        self.0.test_webhook(id, actor)
    }
    fn webhook_deliveries(
        &self,
        _actor: &Actor,
        id: i64,
        limit: Option<u32>,
    ) -> Result<Vec<WebhookDelivery>, ApiError> {
        self.0.webhook_deliveries(id, limit)
    }
    fn ping(&self, _actor: &Actor) -> Result<String, ApiError> {
        Ok("pong".to_owned())
    }
    fn show_run(&self, _actor: &Actor, run: RunId) -> Result<RunView, ApiError> {
        self.0.run(run)
    }
    fn seed_demo(
        &self,
        actor: &Actor,
        settled: bool,
        runs: Option<u32>,
    ) -> Result<Vec<RunId>, ApiError> {
        match runs {
            Some(count) => self.0.seed_bulk(actor, count),
            None => self.0.seed_demo(actor, settled),
        }
    }
    fn add_workspace(
        &self,
        actor: &Actor,
        path: PathBuf,
        name: Option<String>,
        settings: WorkspaceSettings,
    ) -> Result<Workspace, ApiError> {
        self.0
            .add_workspace_for(actor, &path, name.as_deref(), settings)
    }
    fn start_task(&self, actor: &Actor, task: TaskStart) -> Result<Started, ApiError> {
        self.0.start_task(&task, actor)
    }
    fn clean_run(&self, _actor: &Actor, run: RunId) -> Result<RunView, ApiError> {
        self.0.clean_run(run)
    }
    fn resume_run(&self, actor: &Actor, run: RunId) -> Result<Started, ApiError> {
        self.0.resume_run(run, actor)
    }
    fn supervisor_vote(
        &self,
        actor: &Actor,
        gate: GateId,
        approve: bool,
        rationale: String,
    ) -> Result<GateView, ApiError> {
        self.0.vote_as_supervisor(gate, approve, rationale, actor)
    }
    fn list_runs_head(&self, _actor: &Actor, limit: usize) -> Result<RunsHead, ApiError> {
        self.0.runs_head(limit)
    }
    fn pair_device(
        &self,
        actor: &Actor,
        person: String,
        name: String,
        role: Option<Role>,
        workspaces: Option<Vec<String>>,
    ) -> Result<Pairing, ApiError> {
        let grant = grant_given(role, workspaces)?;
        self.0
            .pair_device_with(&person, &name, grant.as_ref(), actor)
    }
    fn list_people(&self, actor: &Actor) -> Result<Vec<PersonView>, ApiError> {
        self.0.people_seen_by(actor)
    }
    fn set_person_role(
        &self,
        actor: &Actor,
        person: String,
        role: Role,
        workspaces: Option<Vec<String>>,
    ) -> Result<PersonView, ApiError> {
        let grant = grant_given(Some(role), workspaces)?
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidInput, "name the role to give"))?;
        self.0.set_grant(&person, &grant, actor)
    }
    fn list_devices(&self, actor: &Actor) -> Result<Vec<DeviceView>, ApiError> {
        self.0.list_devices_as(actor)
    }
    fn revoke_device(&self, actor: &Actor, device: DeviceId) -> Result<DeviceView, ApiError> {
        self.0.revoke_device_as(device, actor)
    }
    fn web_serving(&self, _actor: &Actor) -> Result<WebStatus, ApiError> {
        Ok(self.0.web_status())
    }
    fn set_web_serving(&self, actor: &Actor, settings: WebSettings) -> Result<WebStatus, ApiError> {
        self.0.set_web_settings(settings, actor)
    }
}

/// A run's workspace, for the `decide` calls that name a run.
fn run_target(engine: &Engine, run: RunId) -> Result<Target, ApiError> {
    Ok(Target::Workspace(engine.run_workspace(run)?))
}

fn gate_target(engine: &Engine, gate: GateId) -> Result<Target, ApiError> {
    Ok(Target::Workspace(engine.gate_workspace(gate)?))
}

/// The `decide` calls that name a run (`run`) or a gate (`gate`): they act
/// in its workspace.
macro_rules! scoped_by {
    ($target:ident, $field:ident: $($Op:ident),+) => {
        $(
            impl Scoped for op::$Op {
                fn target(&self, engine: &Engine) -> Result<Target, ApiError> {
                    $target(engine, self.$field)
                }
            }
        )+
    };
}
scoped_by!(run_target, run: ApproveRun, RejectRun, AbortRun, SteerRun, CleanRun, ResumeRun);
scoped_by!(gate_target, gate: DecideGate, HoldGate, SnoozeGate);

impl Scoped for op::StartTask {
    fn target(&self, engine: &Engine) -> Result<Target, ApiError> {
        Ok(Target::Workspace(
            engine.workspace_name(&self.task.workspace)?,
        ))
    }
}
/// A message acts where it lands: one run's workspace, one workspace, one
/// task's; a broadcast to every run, or to the supervisor or the user,
/// reaches beyond one workspace.
impl Scoped for op::SendMessage {
    fn target(&self, engine: &Engine) -> Result<Target, ApiError> {
        match &self.to {
            MessageTo::Run { run } => run_target(engine, *run),
            MessageTo::Workspace { workspace } => {
                Ok(Target::Workspace(engine.workspace_name(workspace)?))
            }
            MessageTo::Task { task } => Ok(Target::Workspace(engine.task_workspace(*task)?)),
            MessageTo::Broadcast | MessageTo::Supervisor | MessageTo::User => Ok(Target::Anywhere),
        }
    }
}

/// A role as a call gives it, checked: workspaces only for an approver.
fn grant_given(
    role: Option<Role>,
    workspaces: Option<Vec<String>>,
) -> Result<Option<overseer_core::Grant>, ApiError> {
    match (role, workspaces) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(ApiError::new(
            ErrorCode::InvalidInput,
            "workspaces are granted with a role: give `approver` with them",
        )),
        (Some(Role::Observer), Some(_)) => Err(ApiError::new(
            ErrorCode::InvalidInput,
            "an observer reads every workspace and decides in none: give workspaces only to an \
             approver",
        )),
        (Some(role), workspaces) => Ok(Some(overseer_core::Grant { role, workspaces })),
    }
}

/// The types the table names, for an adapter to import where it expands
/// the table.
pub mod vocabulary {
    pub use super::{LinkConnection, OpenRun, RunDiff};
    pub use overseer_core::message::{MessageTo, MessageView};
    pub use overseer_core::rules::RuleSet;
    pub use overseer_core::supervision::SupervisorPolicy;
    pub use overseer_core::FieldError;
    pub use overseer_core::{
        Activity, Actor, ApiError, EngineEvent, GateBody, GateChoice, OwnerSurface, RequestedChoice,
    };
    pub use overseer_core::{
        ActivityView, GateId, GateView, RunId, RunView, SessionAnswer, SessionAsk, SessionRef,
        TaskId,
    };
    pub use overseer_core::{DeviceId, DeviceView, Role};
    pub use overseer_engine::config::AgentInfo;
    pub use overseer_engine::people::PersonView;
    pub use overseer_engine::Pairing;
    pub use overseer_engine::{
        GatePage, GateStory, NotificationSettings, PolicyStatus, RunStory, RunsHead, Scope,
        Started, TaskInfo, TaskStart,
    };
    pub use overseer_engine::{RuleTexts, SettingsChange};
    pub use overseer_engine::{WebSettings, WebStatus};
    pub use overseer_engine::{Webhook, WebhookAdded, WebhookDelivery, WebhookEvent};
    pub use overseer_engine::{Workspace, WorkspaceSettings};
    pub use std::path::PathBuf;
}

/// Which connection of a persistent link (a window's link to this host
/// over `overseer bridge`) a subscription is: the link's id, the same at
/// each of its reconnections, and the connection's number, higher at each.
/// A new connection fences the link's earlier ones: a call they left in
/// the engine's socket buffer when they were cut is refused, not carried
/// out after the client was told it was not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkConnection {
    pub link: String,
    pub number: u64,
}

/// Asks the window to open a run (the user clicked a notification about it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct OpenRun {
    pub run_id: RunId,
    /// The host whose run it is; absent for this machine's engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub host: Option<String>,
}

/// A run's diff against its base: the files with their counts and the
/// unified diff text (untrusted: shown as text only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunDiff {
    pub files: Vec<overseer_engine::FileChange>,
    pub diff: String,
    /// The diff's files that other tools run or load on their own, with
    /// what would run them (never merged without a human).
    #[serde(default)]
    pub auto_run: Vec<overseer_core::autorun::AutoRunFile>,
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
    /// What `subscribe` pushes, as the table declares it.
    /// Boxed: an event carries a whole run row, far larger than a reply.
    Event {
        event: Box<<op::Subscribe as StreamOperation>::Item>,
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

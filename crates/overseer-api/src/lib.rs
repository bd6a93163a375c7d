//! The contract between the engine and its clients, declared once.
//!
//! [`operations!`] is the one table of everything a client can call (each
//! operation's typed parameters and response, whether it only reads or
//! decides, which surfaces carry it, whether it streams) and of every event
//! the engine pushes to the window. Everything else is generated from it:
//!
//! - the socket's wire format (`Request`, one struct per operation, the
//!   `Api` trait the engine implements, the dispatch): the engine's `api`
//!   module expands the table;
//! - the app's Tauri commands: `src-tauri/src/commands.rs` expands it;
//! - the app's command list for its build manifest and the main window's
//!   capability ([`WINDOW_COMMANDS`], [`capability`]), from [`OPERATIONS`];
//! - the window's typed TypeScript client ([`typescript_client`], from the
//!   signatures [`typescript_adapter!`] reads off the types) and the ts-rs
//!   declarations of every type the contract reaches.
//!
//! The generated files that are checked in (the TypeScript client and types,
//! the capability) are compared with a fresh generation by the engine's
//! `contract` test; `make types` rewrites them.
//!
//! This crate depends on nothing: the table names its types as bare
//! identifiers, which resolve where an adapter expands it (the engine's
//! `api::vocabulary`). An adapter that only reads names ([`OPERATIONS`])
//! never needs them.
//!
//! Adding an operation is one entry here plus its implementation (a method
//! of the engine's `Api` trait, which the compiler then demands).

/// The one table. `operations!(adapter)` expands to
/// `adapter! { both {..} socket_only {..} window_only {..} streams {..} events {..} also_declared {..} }`.
///
/// An operation reads
/// `read|decide|own name => Type { field: FieldType as window_arg, .. } -> Response;`
/// (`, because "why"` after the response when it is on one surface only;
/// socket-only entries have no window argument names). `name` is the Tauri
/// command and the `Api` method; the socket's method is serde's snake_case
/// of `Type`. Without braces it takes no parameters (a socket request
/// without `params`). The first word is who may call it ([`Access`]):
/// `read` every paired person; `decide` (it decides or acts within one
/// workspace: a gate, a run, a message, a task) an approver of that
/// workspace; `own` (it configures the machine or who is told) the owner
/// only. The transports enforce it from here, in the one place every call
/// passes; `decide` and `own` also mean it changes something: what a
/// process an external agent started may not send.
///
/// `streams` are socket operations the transport answers itself, holding
/// the connection: `-> Answer, then Item` pushes items after answering. They
/// are not in the `Api` trait; the server matches them exhaustively.
///
/// An event reads `name "channel" => Payload;`: the window's listener
/// `name` receives every `Payload` the app emits on `channel`.
///
/// `also_declared` names the types the window names although the wire
/// carries them inlined in another or as a string: their TypeScript is
/// declared too.
#[macro_export]
macro_rules! operations {
    ($adapter:ident) => {
        $adapter! {
            both {
                read list_runs => ListRuns -> Vec<RunView>;
                decide approve_run => ApproveRun { run: RunId as run_id } -> RunView;
                decide reject_run => RejectRun { run: RunId as run_id, reason: String as reason } -> RunView;
                decide abort_run => AbortRun { run: RunId as run_id } -> RunView;
                /// Registers the git repository at `path` (absolute, on the
                /// engine's machine) as a workspace, named `name` (default:
                /// the repository's directory name). The local owner only
                /// (the window, the CLI): a paired device cannot.
                own add_workspace => AddWorkspace {
                    path: PathBuf as path,
                    name: Option<String> as name,
                    #[serde(default)]
                    settings: WorkspaceSettings as settings,
                } -> Workspace;
                /// Gates oldest first, a page at a time: at most `limit` (null:
                /// 200; at most 1,000) after gate `after` (null: from the first),
                /// with how many there are in all and after the page. The cost is
                /// the page's, not the number pending.
                read list_gates => ListGates {
                    pending_only: bool as pending_only,
                    #[serde(default)]
                    limit: Option<u32> as limit,
                    #[serde(default)]
                    after: Option<GateId> as after,
                } -> GatePage;
                read show_gate => ShowGate { gate: GateId as gate_id } -> GateView;
                /// Decides a gate. `option` is one of the gate's kind's choices,
                /// typed (`{"kind": "tool_call", "choice": "yes"}`; an unknown one
                /// is refused when the request is read, one of another kind by
                /// the engine; older clients' bare option id is still read).
                /// `context` is the optional free text (reason, feedback,
                /// guidance, or for a question the JSON object of answers).
                decide decide_gate => DecideGate {
                    gate: GateId as gate_id,
                    option: RequestedChoice as option,
                    context: Option<String> as context,
                } -> GateView;
                /// Stop a gate's timer (auto-proceed, expiry): it waits for a human.
                decide hold_gate => HoldGate { gate: GateId as gate_id } -> GateView;
                /// Snooze a pending gate until `until` (ms since the epoch, 5 s to
                /// 30 days ahead): out of the inbox and "needs you" until then,
                /// when it is told again as opened (and notifies again).
                decide snooze_gate => SnoozeGate { gate: GateId as gate_id, until: i64 as until } -> GateView;
                /// The chronological story of a gate, each record's signature checked.
                read gate_story => GateStory { gate: GateId as gate_id } -> GateStory;
                /// Everything that decided anything on a run (step verdicts,
                /// rules' allows and denials, supervisor votes, timers,
                /// humans), each record checked.
                read run_story => RunStory { run: RunId as run_id } -> RunStory;
                /// A run's activity entries with id > `after` (0: all).
                read run_activity => RunActivity { run: RunId as run_id, after: i64 as after } -> Vec<ActivityView>;
                /// The run's diff: files with their counts, the unified diff
                /// text, and the files other tools run on their own.
                read run_diff => RunDiff { run: RunId as run_id } -> RunDiff;
                /// An instruction for a running agent's next turn; answers the run.
                decide steer_run => SteerRun { run: RunId as run_id, text: String as text } -> RunView;
                /// Messages after `after` (null: all), oldest first: all, or one
                /// run's (sent by it, to it, delivered broadcasts).
                read list_messages => ListMessages {
                    #[serde(default)]
                    run: Option<RunId> as run,
                    #[serde(default)]
                    after: Option<i64> as after,
                } -> Vec<MessageView>;
                /// A message from the user to a run, or a broadcast; a reply
                /// carries the correlation id of what it answers.
                decide send_message => SendMessage {
                    to: MessageTo as to,
                    body: String as body,
                    #[serde(default)]
                    correlation_id: Option<String> as correlation_id,
                } -> MessageView;
                /// A task and its settings (rules, approval, supervisor, retries, stage).
                read show_task => ShowTask { task: TaskId as task_id } -> TaskInfo;
                read list_workspaces => ListWorkspaces -> Vec<Workspace>;
                /// Replace a workspace's sensors and auto-advance override.
                own set_workspace_checks => SetWorkspaceChecks {
                    workspace: String as workspace,
                    sensors: Vec<String> as sensors,
                    auto_advance: Option<bool> as auto_advance,
                } -> Workspace;
                /// Two-person merges on or off for a workspace: with it on, a
                /// run merges only on the approval of a person who did not
                /// start it (never the supervisor's alone).
                own set_workspace_merge => SetWorkspaceMerge {
                    workspace: String as workspace,
                    two_person: bool as two_person,
                } -> Workspace;
                read supervisor_status => SupervisorStatus { scope: Scope as scope } -> PolicyStatus;
                /// Set (or with null remove) the supervisor policy at a scope.
                own set_supervisor => SetSupervisor {
                    scope: Scope as scope,
                    policy: Option<SupervisorPolicy> as policy,
                } -> PolicyStatus;
                /// Set (or with null remove) the budget at a scope: the most
                /// each run may cost (in the currency its agent reports)
                /// before it is paused at its next turn.
                own set_max_cost => SetMaxCost {
                    scope: Scope as scope,
                    max_cost: Option<f64> as max_cost,
                } -> Option<f64>;
                /// Rules as typed, parsed by the engine: a rule that is not one
                /// is a typed `invalid_input` naming it.
                own set_permissions => SetPermissions { scope: Scope as scope, rules: RuleTexts as rules } -> RuleSet;
                /// A settings write checked, not made: the field errors it
                /// would be refused with (empty: it would be saved). The
                /// window calls it as the user types. Writes nothing.
                read check_settings => CheckSettings { change: SettingsChange as change } -> Vec<FieldError>;
                read notification_settings => Notifications -> NotificationSettings;
                own set_notification_settings => SetNotifications { settings: NotificationSettings as settings } -> NotificationSettings;
                /// Every agent profile: installed or not, its mode, what it still needs.
                read agents => Agents -> Vec<AgentInfo>;
                /// A one-time code (5 minutes) that pairs a browser or phone
                /// named `name` for `person` (a short lowercase name such as
                /// `ana`), with the URL to open when the engine serves
                /// browsers. Only the local owner may: a paired device is
                /// refused `forbidden`.
                own pair_device => PairDevice {
                    person: String as person,
                    name: String as name,
                    /// The person's role (`approver`, `observer`; null:
                    /// keep theirs, a new person is an approver).
                    #[serde(default)]
                    role: Option<Role> as role,
                    /// For an approver, the workspaces it holds in (null:
                    /// every one).
                    #[serde(default)]
                    workspaces: Option<Vec<String>> as workspaces,
                } -> Pairing;
                /// Every person with a role (a person sees only their own).
                read list_people => ListPeople -> Vec<PersonView>;
                /// Gives a person a role: `approver` (in `workspaces`, null:
                /// every one) or `observer`. A signed record; their devices
                /// act by it from their next request. Only the owner may.
                own set_person_role => SetPersonRole {
                    person: String as person,
                    role: Role as role,
                    #[serde(default)]
                    workspaces: Option<Vec<String>> as workspaces,
                } -> PersonView;
                /// Every paired device, revoked ones too, with when each was
                /// last seen; a person through a device sees only their own.
                read list_devices => ListDevices -> Vec<DeviceView>;
                /// Revokes a device: refused from now on, its connections
                /// closed. Only the local owner may.
                own revoke_device => RevokeDevice { device: DeviceId as device_id } -> DeviceView;
                /// Whether and where the engine serves browsers, as set and
                /// as it stands (its URL, or why it does not serve).
                read web_serving => WebServing -> WebStatus;
                /// Switches serving browsers on or off, or moves it: a
                /// loopback address, or any other with a TLS certificate and
                /// key (plain HTTP off loopback is refused with why). Kept
                /// across restarts; only the local owner may.
                own set_web_serving => SetWebServing { settings: WebSettings as settings } -> WebStatus;
                /// Every webhook, oldest first (never its secret; to a paired
                /// person, each URL cut to its scheme and host).
                read list_webhooks => ListWebhooks -> Vec<Webhook>;
                /// Adds a webhook: an http(s) URL and the event kinds it gets
                /// (empty: every kind). The answer holds its secret, shown
                /// this once.
                own add_webhook => AddWebhook {
                    url: String as url,
                    #[serde(default)]
                    events: Vec<WebhookEvent> as events,
                } -> WebhookAdded;
                /// Removes a webhook and its delivery log.
                own remove_webhook => RemoveWebhook { id: i64 as id } -> Webhook;
                /// Turns a webhook off (`enabled` false: it gets nothing, and
                /// what was pending for it is given up on) or on again; its
                /// secret and its log stay. Only the local owner may.
                own set_webhook_enabled => SetWebhookEnabled {
                    id: i64 as id,
                    enabled: bool as enabled,
                } -> Webhook;
                /// Sends a test event to a webhook now; answers with its
                /// delivery once the first attempt ended (within the
                /// receiver's timeout). A write: it sends outside the machine.
                own test_webhook => TestWebhook { id: i64 as id } -> WebhookDelivery;
                /// A webhook's latest deliveries (at most `limit`, null: 50),
                /// newest first, each with its attempts.
                read webhook_deliveries => WebhookDeliveries {
                    id: i64 as id,
                    #[serde(default)]
                    limit: Option<u32> as limit,
                } -> Vec<WebhookDelivery>;
                /// The first `limit` rows of the dashboard's default order
                /// (needs-you first), with the fleet's size and counts: the
                /// first screen of a big fleet, before the whole list (the
                /// window's, a host's through its link).
                read list_runs_head => ListRunsHead { limit: usize as limit } -> RunsHead;
            }
            socket_only {
                read ping => Ping -> String,
                    because "a client's check that an engine answers; the window embeds its engine";
                read show_run => ShowRun { run: RunId } -> RunView,
                    because "the window keeps every run from list_runs and the pushed events";
                own seed_demo => SeedDemo {
                    /// Only runs that wait for review or are released: no fictional
                    /// agents in active states for a live orchestrator to find.
                    #[serde(default)]
                    settled: bool,
                    /// Instead of the demo fleet: this many runs, for benchmarks.
                    #[serde(default)]
                    runs: Option<u32>,
                } -> Vec<RunId>,
                    because "demo and benchmark data, seeded from a terminal (`overseer demo seed`)";
                /// On the wire the task's fields are the params themselves.
                decide start_task => StartTask {
                    #[serde(flatten)]
                    task: TaskStart,
                } -> Started,
                    because "the window has no form to start a task yet (`overseer task start`)";
                decide clean_run => CleanRun { run: RunId } -> RunView,
                    because "removing a released run's worktree and branch is a terminal chore (`overseer runs clean`)";
                decide resume_run => ResumeRun { run: RunId } -> Started,
                    because "the window does not resume runs; an interrupted run is resumed from a terminal (`overseer runs resume`)";
                /// A vote as the supervisor (for scripted setups): it obeys the
                /// user-always-wins rule like the real supervisor.
                own supervisor_vote => SupervisorVote { gate: GateId, approve: bool, rationale: String } -> GateView,
                    because "for scripts that stand in for the supervisor; a human in the window decides as themselves";
            }
            window_only {
            }
            streams {
                /// Turns the connection into an event stream: answered once,
                /// then every event the engine commits, in commit order. Calls
                /// on it are the owner's at a terminal (`user:cli`).
                read subscribe => Subscribe -> (), then EngineEvent,
                    because "the app pushes events to the window itself (see `events`)";
                /// `subscribe`, its calls carried out as the owner through
                /// `surface`: a window's link to this host is the owner's
                /// window (`app`, recorded as `user:app`). A persistent link
                /// names which of its connections this is: once it
                /// subscribed, no call left from the link's earlier
                /// connections is carried out.
                read subscribe_as => SubscribeAs {
                    surface: OwnerSurface,
                    #[serde(default, skip_serializing_if = "Option::is_none")]
                    link: Option<LinkConnection>,
                } -> (), then EngineEvent,
                    because "the app pushes events to the window itself; its links to hosts subscribe as the window";
                /// An agent outside Overseer (a hook, `overseer mcp`) asks or reports;
                /// answered with a `SessionAnswer` once decided (a blocking ask keeps
                /// the call open until a human or the supervisor answers, and is
                /// dropped when its asker leaves). It can never decide anything.
                read session => Session { session: SessionRef, ask: SessionAsk } -> SessionAnswer,
                    because "an agent's ask is held open while it waits: only a socket connection (`overseer hook`, `overseer mcp`) can do that";
            }
            events {
                /// Every change the engine commits, in commit order.
                subscribe "overseer://event" => EngineEvent;
                /// The user clicked an OS notification about a run: open it.
                on_open_request "overseer://open" => OpenRun;
            }
            also_declared {
                // A gate's body and an activity entry are flattened into
                // their views; a gate option's id is one of the kind's
                // choices, sent as a string.
                GateBody, Activity, GateChoice,
            }
        }
    };
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

/// One operation of the table, without its types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationInfo {
    /// The Rust name of its parameters' struct (the socket's method is its
    /// snake_case form).
    pub name: &'static str,
    /// Its snake_case name: the `Api` method, and the Tauri command when the
    /// window carries it.
    pub call: &'static str,
    /// The Tauri command, when the window has one.
    pub window: Option<&'static str>,
    pub surfaces: Surfaces,
    /// Whether it decides or changes anything (`decide`, `own`), else it
    /// only reads or asks.
    pub decides: bool,
    /// Who may call it.
    pub access: Access,
    /// Whether the transport answers it itself on a held connection.
    pub streams: bool,
    /// The window's argument names (snake_case; the window passes them in
    /// camelCase), in order.
    pub args: &'static [&'static str],
    /// Its documentation, one string per doc line.
    pub docs: &'static [&'static str],
}

impl OperationInfo {
    /// The socket's method (serde's snake_case of the variant), when the
    /// socket carries it.
    pub fn socket_method(&self) -> Option<String> {
        if matches!(self.surfaces, Surfaces::WindowOnly(_)) {
            return None;
        }
        Some(snake_case(self.name))
    }
}

/// Who may call an operation: the first word of its entry in the table.
/// (`overseer_core::role::Access` is the same, for the engine's check;
/// this crate depends on nothing.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// `read`: every paired person.
    Read,
    /// `decide`: an approver of the workspace it acts in.
    Decide,
    /// `own`: the owner only.
    Own,
}

/// One event the app pushes to the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventInfo {
    /// The window's listener.
    pub name: &'static str,
    /// The channel the app emits it on.
    pub channel: &'static str,
    pub docs: &'static [&'static str],
}

/// Reads the table's names only: [`OPERATIONS`] and [`EVENTS`]. The types
/// are parsed, never resolved, so it expands here.
#[doc(hidden)]
#[macro_export]
macro_rules! describe_adapter {
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
        events { $(
            $(#[doc = $edoc:literal])*
            $event:ident $channel:literal => $payload:ty;
        )* }
        also_declared { $($also:ty),* $(,)? }
    ) => {
        /// Every operation, in table order (both, socket only, window only,
        /// streams).
        pub const OPERATIONS: &[OperationInfo] = &[
            $( OperationInfo {
                name: stringify!($Op),
                call: stringify!($call),
                window: Some(stringify!($call)),
                surfaces: Surfaces::Both,
                decides: $crate::describe_adapter!(@decides $kind),
                access: $crate::describe_adapter!(@access $kind),
                streams: false,
                args: &[$($(stringify!($arg)),*)?],
                docs: &[$($doc),*],
            }, )*
            $( OperationInfo {
                name: stringify!($SOp),
                call: stringify!($scall),
                window: None,
                surfaces: Surfaces::SocketOnly($swhy),
                decides: $crate::describe_adapter!(@decides $skind),
                access: $crate::describe_adapter!(@access $skind),
                streams: false,
                args: &[],
                docs: &[$($sdoc),*],
            }, )*
            $( OperationInfo {
                name: stringify!($WOp),
                call: stringify!($wcall),
                window: Some(stringify!($wcall)),
                surfaces: Surfaces::WindowOnly($wwhy),
                decides: $crate::describe_adapter!(@decides $wkind),
                access: $crate::describe_adapter!(@access $wkind),
                streams: false,
                args: &[$($(stringify!($warg)),*)?],
                docs: &[$($wdoc),*],
            }, )*
            $( OperationInfo {
                name: stringify!($TOp),
                call: stringify!($tcall),
                window: None,
                surfaces: Surfaces::SocketOnly($twhy),
                decides: $crate::describe_adapter!(@decides $tkind),
                access: $crate::describe_adapter!(@access $tkind),
                streams: true,
                args: &[],
                docs: &[$($tdoc),*],
            }, )*
        ];

        /// The commands the app registers and its build manifest declares
        /// (each becomes a permission a capability must grant), in table
        /// order.
        pub const WINDOW_COMMANDS: &[&str] = &[
            $( stringify!($call), )*
            $( stringify!($wcall), )*
        ];

        /// Every event the app pushes to the window, in table order.
        pub const EVENTS: &[EventInfo] = &[
            $( EventInfo {
                name: stringify!($event),
                channel: $channel,
                docs: &[$($edoc),*],
            }, )*
        ];
    };
    (@decides read) => { false };
    (@decides decide) => { true };
    (@decides own) => { true };
    (@access read) => { $crate::Access::Read };
    (@access decide) => { $crate::Access::Decide };
    (@access own) => { $crate::Access::Own };
}

operations!(describe_adapter);

pub mod hosts;

/// Every command the app registers: the contract's window operations, then
/// the app's host commands ([`hosts`]); each a permission the main window's
/// capability grants.
pub fn app_commands() -> Vec<&'static str> {
    WINDOW_COMMANDS
        .iter()
        .chain(hosts::names::WINDOW_COMMANDS)
        .copied()
        .collect()
}

/// Every operation the window has a command for, the host commands' too.
fn window_operations() -> impl Iterator<Item = &'static OperationInfo> {
    OPERATIONS.iter().chain(hosts::names::OPERATIONS)
}

/// Every event the app pushes, the host ones too.
fn window_events() -> impl Iterator<Item = &'static EventInfo> {
    EVENTS.iter().chain(hosts::names::EVENTS)
}

/// Reads the TypeScript side of the table off the types (ts-rs): where it
/// expands, `ts_rs` and the table's types must be in scope. Expands to
/// `typescript_signatures(cfg) -> (Vec<TsOperation>, Vec<TsEvent>)` (the
/// window's operations and events) and `visit_contract(visitor)`, which
/// visits every type they name, and the error type.
#[macro_export]
macro_rules! typescript_adapter {
    (
        both { $(
            $(#[doc = $doc:literal])*
            $kind:ident $call:ident => $Op:ident
                $( { $( $(#[$fattr:meta])* $field:ident : $fty:ty as $arg:ident ),* $(,)? } )?
                -> $resp:ty;
        )* }
        socket_only { $($socket_only:tt)* }
        window_only { $(
            $(#[doc = $wdoc:literal])*
            $wkind:ident $wcall:ident => $WOp:ident
                $( { $( $(#[$wfattr:meta])* $wfield:ident : $wfty:ty as $warg:ident ),* $(,)? } )?
                -> $wresp:ty, because $wwhy:literal;
        )* }
        streams { $($streams:tt)* }
        events { $(
            $(#[doc = $edoc:literal])*
            $event:ident $channel:literal => $payload:ty;
        )* }
        also_declared { $($also:ty),* $(,)? }
    ) => {
        /// The window's operations and events with their TypeScript types.
        fn typescript_signatures(
            cfg: &ts_rs::Config,
        ) -> (Vec<$crate::TsOperation>, Vec<$crate::TsEvent>) {
            use ts_rs::TS;
            let operations = vec![
                $( $crate::TsOperation {
                    command: stringify!($call),
                    params: vec![$($( (stringify!($arg), <$fty as TS>::name(cfg)) ),*)?],
                    response: <$resp as TS>::name(cfg),
                }, )*
                $( $crate::TsOperation {
                    command: stringify!($wcall),
                    params: vec![$($( (stringify!($warg), <$wfty as TS>::name(cfg)) ),*)?],
                    response: <$wresp as TS>::name(cfg),
                }, )*
            ];
            let events = vec![
                $( $crate::TsEvent {
                    name: stringify!($event),
                    payload: <$payload as TS>::name(cfg),
                }, )*
            ];
            (operations, events)
        }

        /// Visits every type the window's side of the contract names: each
        /// window operation's parameters and response, the events'
        /// payloads, the error every call may answer, and the table's
        /// `also_declared`. (The socket's
        /// own operations are Rust's only: the CLI is their one client.)
        fn visit_contract(v: &mut impl ts_rs::TypeVisitor) {
            v.visit::<ApiError>();
            $( $($( v.visit::<$fty>(); )*)? v.visit::<$resp>(); )*
            $( $($( v.visit::<$wfty>(); )*)? v.visit::<$wresp>(); )*
            $( v.visit::<$payload>(); )*
            $( v.visit::<$also>(); )*
        }
    };
}

/// A window operation with its TypeScript types (see [`typescript_adapter!`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsOperation {
    pub command: &'static str,
    /// Each argument's snake_case name and TypeScript type.
    pub params: Vec<(&'static str, String)>,
    pub response: String,
}

/// An event with its payload's TypeScript type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsEvent {
    pub name: &'static str,
    pub payload: String,
}

/// The main window's capability (`src-tauri/capabilities/main.json`): every
/// window command and listening to events. Nothing else.
pub fn capability() -> String {
    let mut permissions = vec![
        "core:event:allow-listen".to_owned(),
        "core:event:allow-unlisten".to_owned(),
    ];
    permissions.extend(
        app_commands()
            .iter()
            .map(|c| format!("allow-{}", c.replace('_', "-"))),
    );
    let permissions = permissions
        .iter()
        .map(|p| format!("    \"{p}\""))
        .collect::<Vec<_>>()
        .join(",\n");
    format!(
        r#"{{
  "$schema": "../gen/schemas/desktop-schema.json",
  "identifier": "main-window",
  "description": "What the main window may call: the engine's commands and engine events. Nothing else. Generated from the operation table (crates/overseer-api): do not edit by hand; `make types` rewrites it.",
  "windows": [
    "main"
  ],
  "permissions": [
{permissions}
  ]
}}
"#
    )
}

/// The header of every generated TypeScript file.
pub const TS_HEADER: &str = "// Generated from the Rust contract (crates/overseer-api) and types (ts-rs): do not edit by hand.\n\
// Regenerate with `make types`; crates/overseer-server/tests/contract.rs fails when they drift.\n";

/// The window's typed client (`ui/src/lib/generated/client.ts`): the
/// `Operations` and `Events` interfaces and the functions that implement
/// them over an `invoke` and a `listen`. `declared` is every type name the
/// types module exports (imported where a signature names it).
pub fn typescript_client(
    operations: &[TsOperation],
    events: &[TsEvent],
    declared: &[String],
) -> String {
    let docs_of = |name: &str| -> &'static [&'static str] {
        window_operations()
            .find(|o| o.window == Some(name))
            .map(|o| o.docs)
            .or_else(|| window_events().find(|e| e.name == name).map(|e| e.docs))
            .unwrap_or(&[])
    };
    let jsdoc = |docs: &[&str]| -> String {
        if docs.is_empty() {
            return String::new();
        }
        if let [one] = docs {
            return format!("  /**{} */\n", one.trim_end());
        }
        let lines: Vec<String> = docs
            .iter()
            .map(|d| format!("   *{}", d.trim_end()))
            .collect();
        format!("  /**\n{}\n   */\n", lines.join("\n"))
    };
    let mut used: Vec<&String> = declared
        .iter()
        .filter(|name| {
            let mentions = |ts: &str| {
                ts.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|word| word == name.as_str())
            };
            operations
                .iter()
                .any(|o| mentions(&o.response) || o.params.iter().any(|(_, t)| mentions(t)))
                || events.iter().any(|e| mentions(&e.payload))
        })
        .collect();
    used.sort();
    used.dedup();

    let mut out = String::from(TS_HEADER);
    out.push_str("import type {\n");
    for name in used {
        out.push_str(&format!("  {name},\n"));
    }
    out.push_str("} from \"./types\";\n\n");

    out.push_str(
        "/** Everything the window may call: one function per window operation of the\n \
         * contract. Every call rejects with an `ApiError` ({code, message}). */\n\
         export interface Operations {\n",
    );
    for o in operations {
        out.push_str(&jsdoc(docs_of(o.command)));
        let params: Vec<String> = o
            .params
            .iter()
            .map(|(name, ts)| format!("{}: {ts}", camel_case(name)))
            .collect();
        out.push_str(&format!(
            "  {}({}): Promise<{}>;\n",
            camel_case(o.command),
            params.join(", "),
            o.response
        ));
    }
    out.push_str("}\n\n");

    out.push_str(
        "/** The events the engine pushes to the window. Each listener resolves to\n \
         * its unsubscribe. */\n\
         export interface Events {\n",
    );
    for e in events {
        out.push_str(&jsdoc(docs_of(e.name)));
        out.push_str(&format!(
            "  {}(on: (payload: {}) => void): Promise<() => void>;\n",
            camel_case(e.name),
            e.payload
        ));
    }
    out.push_str("}\n\n");

    out.push_str(
        "/** Calls a command by name with its camelCase arguments. */\n\
         export type Invoke = <T>(command: string, args?: Record<string, unknown>) => Promise<T>;\n\n\
         /** Listens on a channel; resolves to the unsubscribe. */\n\
         export type Listen = <T>(channel: string, on: (payload: T) => void) => Promise<() => void>;\n\n\
         /** The operations, each a call of its command. */\n\
         export function operations(invoke: Invoke): Operations {\n  return {\n",
    );
    for o in operations {
        let args: Vec<String> = o.params.iter().map(|(name, _)| camel_case(name)).collect();
        let call_args = if args.is_empty() {
            String::new()
        } else {
            format!(", {{ {} }}", args.join(", "))
        };
        out.push_str(&format!(
            "    {}: ({}) => invoke<{}>(\"{}\"{call_args}),\n",
            camel_case(o.command),
            args.join(", "),
            o.response,
            o.command
        ));
    }
    out.push_str("  };\n}\n\n");

    // A transport that can lose its engine (a browser's) refuses these
    // while it cannot see the engine, instead of deciding on a stale view.
    out.push_str(
        "/** The commands that decide or change something (the contract's `decide` and `own`). */\n\
         export const WRITES: ReadonlySet<string> = new Set([\n",
    );
    for o in operations {
        let decides = window_operations().any(|d| d.window == Some(o.command) && d.decides);
        if decides {
            out.push_str(&format!("  \"{}\",\n", o.command));
        }
    }
    out.push_str("]);\n\n");

    out.push_str(
        "/** The events, each a listener on its channel. */\n\
         export function events(listen: Listen): Events {\n  return {\n",
    );
    for e in events {
        let channel = window_events()
            .find(|d| d.name == e.name)
            .map(|d| d.channel)
            .unwrap_or_default();
        out.push_str(&format!(
            "    {}: (on) => listen<{}>(\"{channel}\", on),\n",
            camel_case(e.name),
            e.payload
        ));
    }
    out.push_str("  };\n}\n");
    out
}

/// `list_runs_head` -> `listRunsHead`.
pub fn camel_case(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `ListRunsHead` -> `list_runs_head` (serde's `rename_all = "snake_case"`).
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// The event channel the app emits `name`'s payloads on.
pub fn event_channel(name: &str) -> Option<&'static str> {
    window_events().find(|e| e.name == name).map(|e| e.channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_the_snake_case_of_its_name_except_the_two_renamed_window_commands() {
        let renamed: Vec<&str> = OPERATIONS
            .iter()
            .filter(|o| snake_case(o.name) != o.call)
            .map(|o| o.call)
            .collect();
        // The window's names for the notification settings predate the
        // socket's; the socket keeps `notifications` / `set_notifications`.
        assert_eq!(
            renamed,
            ["notification_settings", "set_notification_settings"]
        );
    }

    #[test]
    fn the_window_commands_are_the_window_operations() {
        let window: Vec<&str> = OPERATIONS.iter().filter_map(|o| o.window).collect();
        assert_eq!(window, WINDOW_COMMANDS);
    }

    #[test]
    fn the_capability_grants_exactly_the_window_commands_and_listening() {
        let cap = capability();
        let granted: Vec<&str> = cap
            .lines()
            .filter_map(|l| l.trim().trim_end_matches(',').strip_prefix("\"allow-"))
            .map(|p| p.trim_end_matches('"'))
            .collect();
        let want: Vec<String> = WINDOW_COMMANDS
            .iter()
            .chain(hosts::names::WINDOW_COMMANDS)
            .map(|c| c.replace('_', "-"))
            .collect();
        assert_eq!(granted, want);
        assert_eq!(
            hosts::names::WINDOW_COMMANDS,
            [
                "host_links",
                "host_call",
                "host_retry",
                "host_add",
                "host_upgrade",
                "host_remove"
            ]
        );
        assert!(cap.contains("\"core:event:allow-listen\""));
        assert!(!cap.contains(":default"), "no blanket default permissions");
    }
}

//! The local API wire format: one JSON object per line over a Unix socket.
//!
//! Client: `{"id": 7, "method": "approve_run", "params": {"run": 3}}`.
//! Server: `{"id": 7, "result": ...}` or `{"id": 7, "error": {"code", "message"}}`.
//! After `subscribe` is answered, the server pushes `{"event": EngineEvent}` lines.
//! There is no actor field: the server decides who the caller is from the
//! connection itself.

use overseer_core::{ApiError, EngineEvent, GateId, RunId};
use serde::{Deserialize, Serialize};

/// Longest request line the server reads; longer lines are refused.
pub const MAX_LINE: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params", rename_all = "snake_case")]
pub enum Request {
    Ping,
    ListRuns,
    ShowRun {
        run: RunId,
    },
    ApproveRun {
        run: RunId,
    },
    RejectRun {
        run: RunId,
        reason: String,
    },
    AbortRun {
        run: RunId,
    },
    ListGates {
        pending_only: bool,
    },
    ShowGate {
        gate: GateId,
    },
    SeedDemo {
        /// Only runs that wait for review or are released: no fictional
        /// agents in active states for a live orchestrator to find.
        #[serde(default)]
        settled: bool,
        /// Instead of the demo fleet: this many runs, for benchmarks.
        #[serde(default)]
        runs: Option<u32>,
    },
    Subscribe,
    AddWorkspace {
        path: std::path::PathBuf,
        name: Option<String>,
        #[serde(default)]
        settings: overseer_store::WorkspaceSettings,
    },
    ListWorkspaces,
    /// Replace a workspace's sensors and auto-advance override.
    SetWorkspaceChecks {
        workspace: String,
        sensors: Vec<String>,
        auto_advance: Option<bool>,
    },
    StartTask(crate::TaskStart),
    DecideGate {
        gate: GateId,
        option: String,
        context: Option<String>,
    },
    CleanRun {
        run: RunId,
    },
    ResumeRun {
        run: RunId,
    },
    RunActivity {
        run: RunId,
        after: i64,
    },
    RunDiff {
        run: RunId,
    },
    /// The chronological story of a gate, each record's signature checked.
    GateStory {
        gate: GateId,
    },
    /// Everything that decided anything on a run, each record checked.
    RunStory {
        run: RunId,
    },
    /// A task and its settings (rules, approval, supervisor, retries, stage).
    ShowTask {
        task: overseer_core::TaskId,
    },
    /// Stop a gate's timer: it waits for a human.
    HoldGate {
        gate: GateId,
    },
    /// An instruction for a running agent's next turn.
    SteerRun {
        run: RunId,
        text: String,
    },
    /// A vote as the supervisor (for scripted setups): it obeys the
    /// user-always-wins rule like the real supervisor.
    SupervisorVote {
        gate: GateId,
        approve: bool,
        rationale: String,
    },
    SupervisorStatus {
        scope: crate::supervise::Scope,
    },
    /// Set (or with None remove) the supervisor policy at a scope.
    SetSupervisor {
        scope: crate::supervise::Scope,
        policy: Option<overseer_core::supervision::SupervisorPolicy>,
    },
    SetPermissions {
        scope: crate::supervise::Scope,
        rules: overseer_core::rules::RuleSet,
    },
    Notifications,
    /// A settings write checked, not made: its field errors (empty: it
    /// would be saved). Writes nothing.
    CheckSettings {
        change: crate::SettingsChange,
    },
    SetNotifications {
        settings: crate::NotificationSettings,
    },
    /// Every agent profile: installed or not, its mode, what it still needs.
    Agents,
    /// An agent outside Overseer (a hook, `overseer mcp`) asks or reports;
    /// answered with a [`overseer_core::SessionAnswer`] once decided (a
    /// blocking ask keeps the call open until a human or the supervisor
    /// answers). It can never decide anything.
    Session {
        session: overseer_core::SessionRef,
        ask: overseer_core::SessionAsk,
    },
    /// Messages after `after`, oldest first: all, or one run's.
    ListMessages {
        #[serde(default)]
        run: Option<RunId>,
        #[serde(default)]
        after: Option<i64>,
    },
    /// A message from the user to a run, or a broadcast.
    SendMessage {
        to: overseer_core::message::MessageTo,
        body: String,
        #[serde(default)]
        correlation_id: Option<String>,
    },
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

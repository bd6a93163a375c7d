//! What each signed audit record says: its payload, typed.
//!
//! Every record of the audit log carries one [`AuditPayload`], written by the
//! store and the engine, checked against the decision rows by `audit
//! verify`, and read back by the "Why?" stories. It is stored as canonical
//! JSON (keys sorted) tagged by `type` (a security event also by `event`),
//! exactly as the records written before it was typed: the log's indexes
//! and queries read `$.type`, `$.gate_id` and `$.run_id`, and old records
//! parse into it. A key an old writer sometimes left out (a decision's
//! `context`, a gate's timer terms) keeps that difference ([`Present`]), so
//! what a record says is read exactly as it was signed.

use crate::{GateId, Millis, RunId, TaskId};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A key that a record may lack altogether, or hold as `null`: `None` when
/// it is absent, `Some(None)` when it is `null`.
pub type Present<T> = Option<Option<T>>;

/// Reads a key that is there (even as `null`) as `Some`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// One audit record's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuditPayload {
    WorkspaceAdded {
        workspace_id: i64,
        name: String,
        path: String,
    },
    WorkspaceSettings {
        workspace_id: i64,
        settings: Value,
    },
    /// An engine-wide setting.
    Setting {
        key: String,
        value: String,
    },
    TaskCreated {
        task_id: TaskId,
        workspace_id: i64,
        title: String,
    },
    TaskStage {
        task_id: TaskId,
        stage: String,
    },
    TaskSettings {
        task_id: TaskId,
        settings: Value,
    },
    RunCreated {
        run_id: RunId,
        task_id: TaskId,
        agent: String,
        state: String,
    },
    /// A run's state changed (`from` and `to` as the database holds them).
    RunTransition {
        run_id: RunId,
        from: String,
        to: String,
        event: String,
        note: Option<String>,
        /// The paired device a person acted through (approving, rejecting
        /// or aborting from a browser); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<crate::DeviceRef>,
    },
    RunWorktree {
        run_id: RunId,
        worktree: String,
        branch: String,
        base: String,
        base_commit: Option<String>,
    },
    RunReviewedTip {
        run_id: RunId,
        tip: String,
    },
    MergeIntent {
        run_id: RunId,
        base: String,
        base_before: String,
        tip: String,
    },
    MergeCommit {
        run_id: RunId,
        merge_commit: String,
    },
    MergeDone {
        run_id: RunId,
        base: String,
        tip: String,
        merge_commit: Option<String>,
        outcome: String,
    },
    /// A run that reached us from outside (hooks, MCP) began.
    SessionOpened {
        run_id: RunId,
        origin: String,
        session_id: String,
        cwd: String,
    },
    /// The user steered a run.
    UserInstruction {
        run_id: RunId,
        text: String,
        /// The paired device a person steered through; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<crate::DeviceRef>,
    },
    GateOpened {
        gate_id: GateId,
        run_id: RunId,
        kind: String,
        title: String,
        /// The gate's options, as the gate holds them.
        options: Value,
        /// What the gate is about (its kind's payload).
        payload: Value,
    },
    /// The supervisor's authority on a gate, and its timer.
    GateTerms {
        gate_id: GateId,
        authority: Option<String>,
        /// Left out when the terms were set after the gate opened.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        auto_at: Present<Millis>,
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        auto_option: Present<String>,
    },
    /// A gate's decision (by whoever the record's actor is).
    GateDecided {
        gate_id: GateId,
        run_id: RunId,
        kind: String,
        option: String,
        context: Option<String>,
        /// The decision this one replaced (a human overriding the supervisor).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overrides: Option<Overrides>,
        /// The paired device a person decided through (the record's actor
        /// is `user:<person>`). Absent for the local owner's decisions and
        /// in records written before devices existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<crate::DeviceRef>,
    },
    /// A human stopped a gate's timer.
    GateTimerStopped {
        gate_id: GateId,
        run_id: RunId,
        /// The paired device a person stopped it through; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<crate::DeviceRef>,
    },
    /// A human snoozed a pending gate until `until`: out of the inbox until
    /// then (it decides nothing).
    GateSnoozed {
        gate_id: GateId,
        run_id: RunId,
        until: Millis,
        /// The paired device a person snoozed it through; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<crate::DeviceRef>,
    },
    /// A vote on a gate, or a decision on no gate's outcome (a rule's allow,
    /// a step verdict, a timer's choice, a retry).
    Decision(DecisionPayload),
    /// A message through the hub.
    Message {
        from_run: Option<RunId>,
        to: String,
        to_run: Option<RunId>,
        /// A broadcast scoped to a workspace: its name (absent otherwise,
        /// and in records written before scopes existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_workspace: Option<String>,
        /// A broadcast scoped to a task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_task: Option<crate::TaskId>,
        body: String,
        correlation_id: Option<String>,
        status: String,
        blocked_reason: Option<String>,
    },
    /// A file access the engine refused on its own authority.
    FileAccessRefused {
        run_id: RunId,
        path: String,
        reason: String,
    },
    SecurityEvent(SecurityPayload),
    /// A device was paired: a one-time code `issued_by` the local owner was
    /// redeemed, and the device acts for `person` from now on.
    DevicePaired {
        device_id: crate::DeviceId,
        person: String,
        name: String,
        issued_by: String,
    },
    /// A device was revoked: it is refused from now on.
    DeviceRevoked {
        device_id: crate::DeviceId,
        person: String,
        name: String,
    },
    /// The owner gave `person` a role (and for an approver, the
    /// workspaces it holds in; `None`: every one).
    PersonRoleSet {
        person: String,
        role: crate::Role,
        workspaces: Option<Vec<String>>,
    },
    /// Someone typed `wrong_tries` wrong pairing codes while `codes` codes
    /// were outstanding: those codes were burned (refused from now on; the
    /// owner makes new ones).
    PairingCodesBurned {
        codes: u32,
        wrong_tries: u32,
    },
}

/// The decision a `gate_decided` record replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrides {
    pub option: Option<String>,
    pub by: String,
}

/// A `decision` record: a vote or a note, with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionPayload {
    pub run_id: RunId,
    pub gate_id: Option<GateId>,
    pub verdict: String,
    pub option: Option<String>,
    pub rationale: Option<String>,
    /// The human's context. Records written before it was signed lack the
    /// key (`None`); since then it is always there (`Some`), maybe `null`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub context: Present<String>,
    pub correction: Option<String>,
    pub rule_ref: Option<String>,
    /// A permission rule's decision: the rules and their layers. Absent for
    /// other decisions and in records written before it was signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::rules::Provenance>,
    pub model_id: Option<String>,
    pub prompt_version: Option<String>,
    pub confidence: Option<f64>,
    pub source_event: Option<String>,
    /// The paired device a person voted through. Absent otherwise, and in
    /// records written before devices existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::DeviceRef>,
}

/// Something that threatened a run's containment or a decision's integrity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SecurityPayload {
    /// A decision row no verifying signed record backs, put back.
    DecisionWithoutRecord {
        gate_id: GateId,
        run_id: RunId,
        /// The row as it was found.
        found: Value,
        audit_seq: Option<i64>,
        problem: Value,
        /// What the row was put back to.
        restored: Value,
        text: String,
    },
    /// The agent switched to a mode that asks nothing.
    UnsupervisedMode {
        run_id: RunId,
        mode: String,
        why: String,
    },
    /// The agent carried out a tool call it did not ask about.
    UnaskedAction {
        run_id: RunId,
        tool_call: Value,
        kind: Value,
        status: Value,
        title: Value,
        raw_input: Value,
        why: String,
    },
    /// A run went past one of its caps.
    Flood {
        run_id: RunId,
        cap: String,
        what: String,
    },
    /// A merge into the base that no merge record accounts for.
    UnrecordedMerge {
        run_id: RunId,
        base: String,
        base_commit: String,
        tip: String,
        found: Value,
    },
    /// A process of a run connected to the engine's socket.
    SocketFromRun {
        run_id: RunId,
        pid: i64,
        attempts: u64,
    },
    /// A run hit one of its resource limits.
    LimitHit {
        run_id: RunId,
        limit: String,
        text: String,
    },
}

impl AuditPayload {
    /// The payload a record's stored JSON holds; an error for one of no
    /// known kind (or not JSON at all).
    pub fn parse(json: &str) -> Result<AuditPayload, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The payload as a JSON value (to be stored canonically).
    pub fn to_value(&self) -> Value {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Its `type`, as stored.
    pub fn kind(&self) -> &'static str {
        match self {
            AuditPayload::WorkspaceAdded { .. } => "workspace_added",
            AuditPayload::WorkspaceSettings { .. } => "workspace_settings",
            AuditPayload::Setting { .. } => "setting",
            AuditPayload::TaskCreated { .. } => "task_created",
            AuditPayload::TaskStage { .. } => "task_stage",
            AuditPayload::TaskSettings { .. } => "task_settings",
            AuditPayload::RunCreated { .. } => "run_created",
            AuditPayload::RunTransition { .. } => "run_transition",
            AuditPayload::RunWorktree { .. } => "run_worktree",
            AuditPayload::RunReviewedTip { .. } => "run_reviewed_tip",
            AuditPayload::MergeIntent { .. } => "merge_intent",
            AuditPayload::MergeCommit { .. } => "merge_commit",
            AuditPayload::MergeDone { .. } => "merge_done",
            AuditPayload::SessionOpened { .. } => "session_opened",
            AuditPayload::UserInstruction { .. } => "user_instruction",
            AuditPayload::GateOpened { .. } => "gate_opened",
            AuditPayload::GateTerms { .. } => "gate_terms",
            AuditPayload::GateDecided { .. } => "gate_decided",
            AuditPayload::GateTimerStopped { .. } => "gate_timer_stopped",
            AuditPayload::GateSnoozed { .. } => "gate_snoozed",
            AuditPayload::Decision(_) => "decision",
            AuditPayload::Message { .. } => "message",
            AuditPayload::FileAccessRefused { .. } => "file_access_refused",
            AuditPayload::SecurityEvent(_) => "security_event",
            AuditPayload::DevicePaired { .. } => "device_paired",
            AuditPayload::DeviceRevoked { .. } => "device_revoked",
            AuditPayload::PersonRoleSet { .. } => "person_role_set",
            AuditPayload::PairingCodesBurned { .. } => "pairing_codes_burned",
        }
    }

    /// The gate the record is about, if any.
    pub fn gate_id(&self) -> Option<GateId> {
        match self {
            AuditPayload::GateOpened { gate_id, .. }
            | AuditPayload::GateTerms { gate_id, .. }
            | AuditPayload::GateDecided { gate_id, .. }
            | AuditPayload::GateTimerStopped { gate_id, .. }
            | AuditPayload::GateSnoozed { gate_id, .. }
            | AuditPayload::SecurityEvent(SecurityPayload::DecisionWithoutRecord {
                gate_id, ..
            }) => Some(*gate_id),
            AuditPayload::Decision(d) => d.gate_id,
            AuditPayload::WorkspaceAdded { .. }
            | AuditPayload::WorkspaceSettings { .. }
            | AuditPayload::Setting { .. }
            | AuditPayload::TaskCreated { .. }
            | AuditPayload::TaskStage { .. }
            | AuditPayload::TaskSettings { .. }
            | AuditPayload::RunCreated { .. }
            | AuditPayload::RunTransition { .. }
            | AuditPayload::RunWorktree { .. }
            | AuditPayload::RunReviewedTip { .. }
            | AuditPayload::MergeIntent { .. }
            | AuditPayload::MergeCommit { .. }
            | AuditPayload::MergeDone { .. }
            | AuditPayload::SessionOpened { .. }
            | AuditPayload::UserInstruction { .. }
            | AuditPayload::Message { .. }
            | AuditPayload::FileAccessRefused { .. }
            | AuditPayload::SecurityEvent(_)
            | AuditPayload::DevicePaired { .. }
            | AuditPayload::DeviceRevoked { .. }
            | AuditPayload::PersonRoleSet { .. }
            | AuditPayload::PairingCodesBurned { .. } => None,
        }
    }

    /// The run the record names as `run_id`, if any.
    pub fn run_id(&self) -> Option<RunId> {
        match self {
            AuditPayload::RunCreated { run_id, .. }
            | AuditPayload::RunTransition { run_id, .. }
            | AuditPayload::RunWorktree { run_id, .. }
            | AuditPayload::RunReviewedTip { run_id, .. }
            | AuditPayload::MergeIntent { run_id, .. }
            | AuditPayload::MergeCommit { run_id, .. }
            | AuditPayload::MergeDone { run_id, .. }
            | AuditPayload::SessionOpened { run_id, .. }
            | AuditPayload::UserInstruction { run_id, .. }
            | AuditPayload::GateOpened { run_id, .. }
            | AuditPayload::GateDecided { run_id, .. }
            | AuditPayload::GateTimerStopped { run_id, .. }
            | AuditPayload::GateSnoozed { run_id, .. }
            | AuditPayload::FileAccessRefused { run_id, .. } => Some(*run_id),
            AuditPayload::Decision(d) => Some(d.run_id),
            AuditPayload::SecurityEvent(s) => Some(s.run_id()),
            AuditPayload::WorkspaceAdded { .. }
            | AuditPayload::WorkspaceSettings { .. }
            | AuditPayload::Setting { .. }
            | AuditPayload::TaskCreated { .. }
            | AuditPayload::TaskStage { .. }
            | AuditPayload::TaskSettings { .. }
            | AuditPayload::GateTerms { .. }
            | AuditPayload::Message { .. }
            | AuditPayload::DevicePaired { .. }
            | AuditPayload::DeviceRevoked { .. }
            | AuditPayload::PersonRoleSet { .. }
            | AuditPayload::PairingCodesBurned { .. } => None,
        }
    }
}

impl SecurityPayload {
    pub fn run_id(&self) -> RunId {
        match self {
            SecurityPayload::DecisionWithoutRecord { run_id, .. }
            | SecurityPayload::UnsupervisedMode { run_id, .. }
            | SecurityPayload::UnaskedAction { run_id, .. }
            | SecurityPayload::Flood { run_id, .. }
            | SecurityPayload::UnrecordedMerge { run_id, .. }
            | SecurityPayload::SocketFromRun { run_id, .. }
            | SecurityPayload::LimitHit { run_id, .. } => *run_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys left out and keys held as null stay apart, both ways.
    #[test]
    fn a_key_left_out_reads_and_writes_back_left_out() {
        let without = r#"{"authority":"advisory","gate_id":5,"type":"gate_terms"}"#;
        let with_null = r#"{"authority":null,"auto_at":null,"auto_option":null,"gate_id":3,"type":"gate_terms"}"#;
        for json in [without, with_null] {
            let p = AuditPayload::parse(json).expect("parses");
            let stored: Value = serde_json::from_str(json).expect("json");
            assert_eq!(p.to_value(), stored);
        }
        let old_decision = r#"{"confidence":null,"correction":null,"gate_id":null,"model_id":null,"option":null,"prompt_version":null,"rationale":"r","rule_ref":"timer","run_id":1,"source_event":null,"type":"decision","verdict":"approve"}"#;
        let AuditPayload::Decision(d) = AuditPayload::parse(old_decision).expect("parses") else {
            panic!("a decision");
        };
        assert_eq!(d.context, None);
        assert!(AuditPayload::parse(r#"{"type":"test","i":1}"#).is_err());
    }

    /// Records written before devices read back as they were signed (no
    /// `device` key), and a person's record keeps its device.
    #[test]
    fn a_decision_names_its_device_and_older_records_read_back_without_one() {
        let old = r#"{"context":null,"gate_id":4,"kind":"tool_call","option":"yes","run_id":2,"type":"gate_decided"}"#;
        let p = AuditPayload::parse(old).expect("parses");
        assert!(matches!(p, AuditPayload::GateDecided { device: None, .. }));
        assert_eq!(
            p.to_value(),
            serde_json::from_str::<Value>(old).expect("json")
        );
        let new = r#"{"context":null,"device":{"id":3,"name":"Ana's phone"},"gate_id":4,"kind":"tool_call","option":"yes","run_id":2,"type":"gate_decided"}"#;
        let p = AuditPayload::parse(new).expect("parses");
        let AuditPayload::GateDecided { device, .. } = &p else {
            panic!("a decision")
        };
        assert_eq!(
            device.as_ref().map(|d| (d.id, d.name.as_str())),
            Some((crate::DeviceId(3), "Ana's phone"))
        );
        assert_eq!(
            p.to_value(),
            serde_json::from_str::<Value>(new).expect("json")
        );
    }
}

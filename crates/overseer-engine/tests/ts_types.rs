//! The TypeScript types the window uses are generated from the Rust types
//! (ts-rs) and committed at ui/src/lib/generated/types.ts. This test fails
//! when the two drift; `make types` (OVERSEER_WRITE_TYPES=1) rewrites the file.

use overseer_core::supervision::{
    Autonomy, DecisionRecord, EvaluatorConfig, SupervisorPolicy, Verdict,
};
use overseer_core::{
    ActivityView, Actor, ApiError, EngineEvent, ErrorCode, GateDecision, GateKind, GateOption,
    GateStatus, GateView, PendingGate, ReleaseReason, RunState, RunView,
};
use std::path::PathBuf;
use ts_rs::{Config, TS};

const HEADER: &str = "// Generated from the Rust types by ts-rs: do not edit by hand.\n\
// Regenerate with `make types`; crates/overseer-engine/tests/ts_types.rs fails when they drift.\n";

fn generated() -> String {
    let cfg = Config::new().with_large_int("number");
    let mut out = String::from(HEADER);
    macro_rules! declare {
        ($($t:ty),* $(,)?) => {
            $(
                out.push_str("\nexport ");
                out.push_str(&<$t as TS>::decl(&cfg));
                out.push('\n');
            )*
        };
    }
    declare!(
        serde_json::Value,
        overseer_core::RunId,
        overseer_core::TaskId,
        overseer_core::GateId,
        ErrorCode,
        ApiError,
        overseer_core::FieldError,
        Actor,
        ReleaseReason,
        RunState,
        GateKind,
        overseer_core::PlanChoice,
        overseer_core::ToolCallChoice,
        overseer_core::StepReviewChoice,
        overseer_core::SupervisorPauseChoice,
        overseer_core::DeviationChoice,
        overseer_core::MergeReviewChoice,
        overseer_core::QuestionChoice,
        overseer_core::GateChoice,
        overseer_core::AskKind,
        GateStatus,
        GateOption,
        GateDecision,
        PendingGate,
        overseer_core::GateBody,
        overseer_core::ToolCallGate,
        overseer_core::AgentToolCall,
        overseer_core::AgentOption,
        overseer_core::rules::ToolRequest,
        overseer_core::rules::Resolved,
        overseer_core::rules::AlwaysGated,
        overseer_core::StepRecord,
        overseer_core::StepSensor,
        overseer_core::SupervisorPauseGate,
        overseer_core::DeviationCause,
        overseer_core::DeviationGate,
        overseer_core::MergeReviewGate,
        overseer_core::autorun::AutoRunFile,
        overseer_core::autorun::PathChange,
        overseer_core::QuestionGate,
        overseer_core::session::AskQuestion,
        overseer_core::session::AskOption,
        overseer_core::session::NoticeKind,
        overseer_core::SensorSummary,
        overseer_core::SensorResult,
        overseer_core::RunOrigin,
        overseer_core::view::RunActions,
        overseer_core::RetryPolicy,
        overseer_core::session::ExternalSession,
        overseer_core::message::MessageTo,
        overseer_core::message::MessageStatus,
        overseer_core::message::MessageView,
        RunView,
        GateView,
        overseer_core::activity::Activity,
        overseer_core::activity::ProgressEntry,
        overseer_core::activity::ToolCallEntry,
        overseer_core::activity::RuleDecision,
        overseer_core::activity::SensorRun,
        overseer_core::activity::SecurityEntry,
        overseer_core::activity::SecurityEvent,
        overseer_core::activity::AgentMode,
        overseer_core::activity::MessageEntry,
        overseer_core::activity::MergeOutcome,
        overseer_core::activity::UnrecognizedEntry,
        ActivityView,
        EngineEvent,
        Verdict,
        Autonomy,
        EvaluatorConfig,
        SupervisorPolicy,
        DecisionRecord,
        overseer_core::rules::RuleSet,
        overseer_core::rules::SessionMode,
        overseer_core::confidence::ApprovalMode,
        overseer_core::agent::PlanStrategy,
        overseer_contain::SandboxStatus,
        overseer_contain::CgroupStatus,
        overseer_contain::ScopeStatus,
        overseer_contain::LimitsStatus,
        overseer_contain::NetStatus,
        overseer_contain::net::NetworkMode,
        overseer_contain::Containment,
        overseer_engine::config::AgentInfo,
        overseer_core::plan::PlanProposal,
        overseer_core::plan::PlanStep,
        overseer_core::plan::PlanSource,
        overseer_store::WorkspaceSettings,
        overseer_store::TaskSettings,
        overseer_store::Workspace,
        overseer_store::AuditRecord,
        overseer_store::AuditProblem,
        overseer_store::CheckedRecord,
        overseer_store::DecisionTable,
        overseer_store::DecisionProblem,
        overseer_store::DecisionMismatch,
        overseer_engine::FleetCounts,
        overseer_engine::RunsHead,
        overseer_engine::GateStory,
        overseer_engine::RunStory,
        overseer_engine::TaskInfo,
        overseer_engine::Scope,
        overseer_engine::PolicyStatus,
        overseer_engine::TaskStart,
        overseer_engine::Started,
        overseer_git::FileChange,
        overseer_engine::NotificationKind,
        overseer_engine::NotificationSettings,
        overseer_engine::RuleTexts,
        overseer_engine::SettingsChange,
    );
    out
}

#[test]
fn the_committed_typescript_types_match_the_rust_types() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/lib/generated/types.ts");
    let want = generated();
    if std::env::var_os("OVERSEER_WRITE_TYPES").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, &want).expect("write types");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is out of date with the Rust types: run `make types` and commit the result",
        path.display()
    );
}

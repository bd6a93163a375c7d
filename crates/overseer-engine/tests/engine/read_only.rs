//! A read-only session (a consultation, or any task started read-only)
//! never hands its work to a subagent unasked: the demo agent, a real child
//! over real ACP pipes, dispatches a `Task` as Claude Code does (kind
//! `think`, its own tool name in `_meta.claudeCode.toolName`), and the user
//! is asked before it starts.

use crate::common;

use common::*;
use overseer_core::agent::PlanStrategy;
use overseer_core::rules::SessionMode;
use overseer_core::{Actor, GateBody, GateKind};
use overseer_store::TaskSettings;

fn read_only() -> TaskSettings {
    TaskSettings {
        plan: Some(PlanStrategy::Skip),
        session: SessionMode::ReadOnly,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_session_asks_before_a_subagent_is_dispatched() {
    let w = world(vec![]).await;
    let run = start_with(&w, "dispatch", read_only());
    // Without the check the dispatch is a `think` call, allowed by the
    // read-only default, and the first thing asked is the greeting's edit
    // (denied in a read-only session, so nothing would be asked at all).
    let gate = pending_gate(&w, run, GateKind::ToolCall).await;
    let GateBody::ToolCall(call) = &gate.body else {
        panic!("a tool call gate: {:?}", gate.body)
    };
    assert_eq!(call.request.tool, "Task", "{call:?}");
    assert!(
        call.reason.contains("subagent"),
        "the gate says a subagent would start: {}",
        call.reason
    );
    // A "no" keeps the subagent from starting.
    w.engine
        .decide_gate(gate.id, "no", Some("no subagents here"), &Actor::cli())
        .expect("reject");
    let said = until(&w, "the agent hears the refusal", |e| {
        e.activity(run, 0)
            .ok()?
            .into_iter()
            .find_map(|a| match a.entry {
                overseer_core::Activity::Message { text } if text.contains("rejected") => {
                    Some(text)
                }
                _ => None,
            })
    })
    .await;
    assert!(said.contains("Task"), "{said}");
}

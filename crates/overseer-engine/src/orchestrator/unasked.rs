//! Watching what the agent does, whatever mode it claims: a tool call that
//! edits, deletes, moves or executes, carried out (`in_progress`,
//! `completed`) with no permission request for it, where Overseer's rules
//! would not have allowed it on their own, is a security event
//! (`overseer_core::unasked` judges it). The run is stopped at once: it is
//! failed, its agent's whole tree killed with no grace; the event is a
//! signed audit record, a `security` entry on the timeline and a
//! notification that cannot be muted. Nothing of the run merges by itself:
//! a failed run never reaches review, and a run resumed from it carries the
//! mark ([`MARK`]), so it is never merged by auto-advance and its review
//! says what happened.

use super::live::terminate_tree;
use super::turn::{stop, Phase, Turn};
use crate::supervise::{permission_for, tool_request};
use crate::Engine;
use overseer_acp::{ToolCallInfo, UnaskedJudge};
use overseer_core::activity::{Activity, SecurityEntry, SecurityEvent};
use overseer_core::{unasked, Actor, RunId};
use overseer_store::RunWork;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The run option that marks a run whose agent acted unasked (kept by a
/// run resumed from it): what happened, in words.
pub(super) const MARK: &str = "unasked_action";

/// The run's judge, for the driver to call as each tool call arrives (see
/// `AgentConnection::watch_unasked`): the rules as they stand for the run
/// (its "always" answers, the task's, the workspace's; read-only while
/// planning).
pub(super) fn judge(work: Arc<RunWork>, worktree: String, turn: Arc<Mutex<Turn>>) -> UnaskedJudge {
    Arc::new(move |info: &ToolCallInfo| {
        if info.asked {
            return None;
        }
        if !info.kind?.changes_something() || !info.status?.carried_out() {
            return None;
        }
        let req = tool_request(info, &worktree);
        let (run_rules, planning) = {
            let t = turn.lock().unwrap_or_else(|p| p.into_inner());
            (
                t.run_rules.clone(),
                matches!(t.phase, Phase::Planning { .. }),
            )
        };
        let permission = permission_for(&work, &run_rules, &req, &worktree, planning);
        let title = info
            .title
            .clone()
            .unwrap_or_else(|| format!("{} tool call", req.kind));
        unasked::judge(&req, &title, &permission, &worktree)
    })
}

/// The driver found the agent acting unasked (it already refuses the
/// agent's writes and asks): the run is stopped, once.
pub(super) fn on_unasked(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    info: &ToolCallInfo,
    why: &str,
) {
    {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        if std::mem::replace(&mut t.stopped_unasked, true) {
            return;
        }
    }
    security_stop(engine, work, info, why);
}

/// The run stops at once: the record first (signed), then the run failed
/// (so its driver ends quietly when its agent goes), then the agent's tree
/// killed, then the user told.
fn security_stop(engine: &Arc<Engine>, work: &RunWork, info: &ToolCallInfo, why: &str) {
    let run = work.run_id;
    tracing::error!(run = %run, tool_call = %info.id, "security event: {why}");
    engine.audit(
        &Actor::Engine,
        overseer_core::audit::AuditPayload::SecurityEvent(
            overseer_core::audit::SecurityPayload::UnaskedAction {
                run_id: run,
                tool_call: json!(info.id),
                kind: json!(info.kind),
                status: json!(info.status),
                title: json!(info.title),
                raw_input: json!(info.raw_input),
                why: why.to_owned(),
            },
        ),
    );
    let text = format!(
        "{why}. Overseer stopped the run at once and killed its agent: nothing of it is \
         merged unless you review it (resuming it keeps this mark, and auto-advance never \
         merges it)"
    );
    if let Err(e) = engine.record_activity(
        run,
        Activity::Security(SecurityEntry {
            text: text.clone(),
            event: Some(SecurityEvent::UnaskedAction),
            tool_call: Some(info.id.clone()),
            ..SecurityEntry::default()
        }),
    ) {
        tracing::error!(run = %run, "cannot record the security event: {}", e.message);
    }
    mark(engine, work, why);
    if let Err(e) = stop(engine, run, &format!("stopped: security event: {why}")) {
        tracing::error!(run = %run, "cannot mark the run failed after a security event: {}", e.message);
    }
    engine.spawn_to_finish(kill_now(engine.clone(), run));
    engine.notify_user(
        crate::NotificationKind::SecurityEvent,
        run,
        format!("Run {run}'s agent acted without asking: stopped"),
        text,
    );
}

/// Keeps the mark in the run's options, which a resumed run inherits.
fn mark(engine: &Engine, work: &RunWork, why: &str) {
    let mut options = engine
        .store()
        .run_work(work.run_id)
        .map(|w| w.options)
        .unwrap_or_else(|_| work.options.clone());
    if !options.is_object() {
        options = json!({});
    }
    options[MARK] = json!(format!("run {}: {why}", work.run_id));
    if let Err(e) = engine
        .store()
        .write(|tx| tx.set_run_options(work.run_id, &options, work.resumed_from))
    {
        tracing::error!(run = %work.run_id, "cannot mark the run as having acted unasked: {e}");
    }
}

/// No grace: the agent is acting without asking right now.
async fn kill_now(engine: Arc<Engine>, run: RunId) {
    let Some(live) = engine.live.get(run) else {
        return;
    };
    let killed = terminate_tree(run, &live, Duration::ZERO, "on a security event").await;
    let _ = live.conn.cancel().await;
    engine.live.set(run, None);
    engine.publish_aborted(run, killed);
}

/// Whether auto-advance may merge this run: never one whose agent (or the
/// agent of a run it was resumed from) acted unasked. Such a run waits for
/// the user, and its timeline says why just before the review.
pub(super) fn may_auto_advance(engine: &Engine, work: &RunWork) -> bool {
    let Some(what) = work.options.get(MARK) else {
        return true;
    };
    let what = what.as_str().unwrap_or("an agent acted without asking");
    engine.record_activity_or_warn(
        work.run_id,
        Activity::Security(SecurityEntry {
            text: format!(
                "this work includes what an agent did without asking ({what}): review every \
                 change; Overseer does not merge it without you"
            ),
            event: Some(SecurityEvent::UnaskedAction),
            ..SecurityEntry::default()
        }),
    );
    false
}

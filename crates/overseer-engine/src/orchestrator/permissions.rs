//! What the agent asks while it works: a tool call's permission (the rules,
//! then a gate for the user) and an elicitation (a question gate).

use super::turn::{Phase, Turn};
use super::{planning, resume};
use crate::supervise::{permission_for, tool_request};
use crate::waiting::wait_gate;
use crate::Engine;
use overseer_acp::{AgentSession, PermissionReply, QuestionReply};
use overseer_core::rules::{self, Permission};
use overseer_core::Activity;
use overseer_core::{
    Actor, AgentOption, AgentToolCall, AskKind, GateBody, GateId, GateOption, QuestionChoice,
    QuestionGate, ToolCallChoice, ToolCallGate,
};
use overseer_store::GateSpec;
use overseer_store::RunWork;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// A permission request, decided by the permission rules (the run's
/// "always" rules, the task's, the workspace's, then the defaults: reads
/// allowed, everything else asks). Always-gated operations ask every time.
///
/// While planning, the session is read-only (writes denied by the rules,
/// shell asks); in the agent's own plan mode, its exit-plan request is the
/// plan gate. The second value says to cancel the turn once answered.
pub(super) async fn permission(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &str,
    tool_call: &overseer_acp::ToolCallInfo,
    options: &[overseer_acp::PermissionChoice],
    turn: &Mutex<Turn>,
    conn: &dyn AgentSession,
) -> (PermissionReply, bool) {
    let run = work.run_id;
    // A run paused for flooding Overseer gets nothing until it is resumed.
    if engine.floods.is_paused(run) {
        return (PermissionReply::Cancelled, false);
    }
    // While the disk is nearly full (read now: a command of the run may
    // have filled it a moment ago) the run takes no new work: the agent
    // waits for its answer (`disk`); a run ended meanwhile gets none.
    if !engine.disk_room_now() {
        let title = tool_call.title.as_deref().unwrap_or("a tool call");
        engine
            .wait_for_disk_room(run, &format!("{title}: its answer"))
            .await;
        if !super::turn::still_active(engine, run) {
            return (PermissionReply::Cancelled, false);
        }
    }
    // Options an answer could not tell apart: refused before anything is
    // decided, so no answer of ours can mean something else to the agent.
    if let Some(why) = ambiguous_options(options) {
        let title = tool_call.title.as_deref().unwrap_or("a tool call");
        let text = format!("{title}: refused: {why}");
        tracing::warn!(run = %run, "{text}");
        engine.record_activity_or_warn(run, Activity::ProtocolError { text: text.clone() });
        turn.lock()
            .unwrap_or_else(|p| p.into_inner())
            .rejections
            .push(text);
        return (PermissionReply::Cancelled, false);
    }
    let phase = turn.lock().unwrap_or_else(|p| p.into_inner()).phase;
    if phase == (Phase::Planning { in_mode: true })
        && overseer_core::agent::is_exit_plan_request(
            tool_call.kind,
            tool_call.title.as_deref(),
            tool_call.raw_input.as_ref(),
        )
    {
        return (
            planning::exit_plan(engine, work, worktree, tool_call, options, turn, conn).await,
            true,
        );
    }
    let planning = matches!(phase, Phase::Planning { .. });
    (
        tool_permission(engine, work, worktree, tool_call, options, turn, planning).await,
        false,
    )
}

/// Why a permission request's options cannot be answered safely: an
/// option id given twice (on an allow and a reject option, or on a once
/// and an always one) would make our answer mean whichever the agent
/// picks. None when every id is distinct.
pub(super) fn ambiguous_options(options: &[overseer_acp::PermissionChoice]) -> Option<String> {
    options.iter().enumerate().find_map(|(i, o)| {
        let twin = options[..i].iter().find(|p| p.option_id == o.option_id)?;
        Some(format!(
            "the agent gave the option id '{}' to two options ('{}', {} and '{}', {}), so an answer \
             with it could mean either; Overseer answered nothing (cancelled). The agent must offer \
             one id per option",
            o.option_id, twin.name, twin.kind, o.name, o.kind
        ))
    })
}

/// The agent's answer options, picked by kind (ACP's allow_once,
/// allow_always, reject_once, reject_always).
struct Offered<'a>(&'a [overseer_acp::PermissionChoice]);

impl Offered<'_> {
    fn by_kind(&self, kinds: &[&str]) -> PermissionReply {
        kinds
            .iter()
            .find_map(|k| self.0.iter().find(|o| o.kind == *k))
            .map_or(PermissionReply::Cancelled, |o| PermissionReply::Selected {
                option_id: o.option_id.clone(),
            })
    }
    /// A yes for this call only: `allow_once`, never `allow_always` (that
    /// would let the agent skip asking next time, which nobody said).
    /// Cancelled when the agent offers no one-time allow.
    fn allow(&self) -> PermissionReply {
        self.by_kind(&["allow_once"])
    }
    /// Whether a yes for this call only can be given.
    fn can_allow_once(&self) -> bool {
        self.0.iter().any(|o| o.kind == "allow_once")
    }
    fn allow_always(&self) -> PermissionReply {
        self.by_kind(&["allow_always", "allow_once"])
    }
    fn reject(&self) -> PermissionReply {
        self.by_kind(&["reject_once", "reject_always"])
    }
}

/// A one-time yes the agent's options cannot carry: said on the timeline
/// and to the agent, and nothing is allowed.
fn no_allow_once(
    engine: &Engine,
    run: overseer_core::RunId,
    turn: &Mutex<Turn>,
    title: &str,
    by: &str,
) {
    let text = format!(
        "{title}: {by} allowed it once, but the agent offered no one-time allow (only 'allow always', \
         which would let it skip asking next time), so it was not allowed; answer Always if that is meant"
    );
    tracing::warn!(run = %run, "{text}");
    engine.record_activity_or_warn(run, Activity::ProtocolError { text: text.clone() });
    turn.lock()
        .unwrap_or_else(|p| p.into_inner())
        .rejections
        .push(text);
}

/// A tool call's permission: rules first, then a gate for the user.
pub(super) async fn tool_permission(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &str,
    tool_call: &overseer_acp::ToolCallInfo,
    options: &[overseer_acp::PermissionChoice],
    turn: &Mutex<Turn>,
    planning: bool,
) -> PermissionReply {
    let run = work.run_id;
    let offered = Offered(options);
    let req = tool_request(tool_call, worktree);
    let title = tool_call
        .title
        .clone()
        .unwrap_or_else(|| format!("{} tool call", req.kind));
    let run_rules = {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        if rules::always_gated(&req, worktree).is_some() {
            t.destructive += 1;
        }
        t.run_rules.clone()
    };
    let source = Some(format!("tool_call:{}", tool_call.id));
    match permission_for(work, &run_rules, &req, worktree, planning) {
        Permission::Allow { rule } => {
            if !record_allow(engine, work, &title, &req, &rule, source).await {
                return PermissionReply::Cancelled;
            }
            if !offered.can_allow_once() {
                no_allow_once(engine, run, turn, &title, &format!("the rule {rule}"));
            }
            offered.allow()
        }
        Permission::Deny { rule, reason } => {
            engine.record_rule_deny(work, &title, &req, &rule, &reason, source);
            turn.lock()
                .unwrap_or_else(|p| p.into_inner())
                .rejections
                .push(format!("{title}: denied by rule {rule}: {reason}"));
            offered.reject()
        }
        Permission::Ask {
            reason,
            always_gated,
            rule,
        } => {
            let gate_options = crate::supervise::tool_call_options(
                &req,
                always_gated,
                rule.as_deref(),
                "Always for this run",
            );
            let body = tool_call_gate(tool_call, options, &req, reason, always_gated, rule);
            let spec = GateSpec::new(run, body, &title, gate_options);
            let asked = Asked {
                req: &req,
                title: &title,
                worktree,
            };
            ask_user(engine, work, spec, turn, &offered, asked).await
        }
    }
}

/// A rule's allow, recorded before it is given: false if it cannot be
/// written (a full disk only delays it until there is room).
async fn record_allow(
    engine: &Arc<Engine>,
    work: &RunWork,
    title: &str,
    req: &rules::ToolRequest,
    rule: &rules::Provenance,
    source: Option<String>,
) -> bool {
    let run = work.run_id;
    // No allow without its record: if the decision cannot be
    // written, the agent is not allowed. A full disk only delays
    // it: the allow is recorded (and given) once there is room.
    loop {
        match engine.record_rule_allow(work, title, req, rule, source.clone()) {
            Ok(()) => break true,
            Err(e) if !engine.disk.has_room() && !engine.is_stopping() => {
                tracing::warn!(run = %run, "a rule's allow waits for room: {}", e.message);
                engine.disk.wait_for_room().await;
            }
            Err(e) => {
                tracing::error!(
                    run = %run,
                    "cannot record a rule's allow, so it is not given: {}",
                    e.message
                );
                break false;
            }
        }
    }
}

/// What the user sees at a tool call's gate: the call, its risk, why it
/// asks, and the answers the agent offered.
fn tool_call_gate(
    tool_call: &overseer_acp::ToolCallInfo,
    options: &[overseer_acp::PermissionChoice],
    req: &rules::ToolRequest,
    reason: String,
    always_gated: Option<rules::AlwaysGated>,
    rule: Option<String>,
) -> GateBody {
    GateBody::ToolCall(ToolCallGate {
        tool_call: AgentToolCall {
            id: Some(tool_call.id.clone()),
            title: tool_call.title.clone(),
            kind: tool_call.kind,
            status: tool_call.status,
            raw_input: tool_call.raw_input.clone(),
            locations: tool_call
                .locations
                .iter()
                .map(|l| l.display().to_string())
                .collect(),
            text: tool_call.text.clone(),
            name: tool_call.name.clone(),
        },
        request: req.clone(),
        risk: Some(overseer_core::rules::risk_of(
            req,
            always_gated,
            rule.as_deref(),
        )),
        reason,
        rule,
        always_gated,
        always_gated_why: always_gated.map(|g| g.describe().to_owned()),
        agent_options: options
            .iter()
            .map(|o| AgentOption {
                option_id: o.option_id.clone(),
                name: o.name.clone(),
                kind: o.kind.clone(),
            })
            .collect(),
        ask_kind: None,
    })
}

/// What the user is asked about.
struct Asked<'a> {
    req: &'a rules::ToolRequest,
    title: &'a str,
    worktree: &'a str,
}

/// A tool call no rule decides: a gate, and the agent's answer from its
/// decision ("always" adds a rule for the rest of the run; "no" owes the
/// agent the reason).
async fn ask_user(
    engine: &Arc<Engine>,
    work: &RunWork,
    spec: GateSpec,
    turn: &Mutex<Turn>,
    offered: &Offered<'_>,
    asked: Asked<'_>,
) -> PermissionReply {
    let run = work.run_id;
    let Ok(gate) = engine.open_gate_supervised(work, spec, &Actor::Agent(work.agent.clone()))
    else {
        return PermissionReply::Cancelled;
    };
    let Ok(d) = wait_gate(engine, gate).await else {
        return PermissionReply::Cancelled;
    };
    if d.actor == Actor::Engine && engine.floods.paused_gate(run).is_some() {
        // Withdrawn because the run was paused for flooding Overseer: nobody
        // refused it, and the agent, carried on, asks again.
        return PermissionReply::Cancelled;
    }
    match d.choice::<ToolCallChoice>() {
        Ok(ToolCallChoice::Yes) => {
            if !offered.can_allow_once() {
                no_allow_once(engine, run, turn, asked.title, &d.actor.to_string());
            }
            offered.allow()
        }
        Ok(ToolCallChoice::Always) => {
            let added = rules::always_rule(asked.req, asked.worktree);
            engine.record_activity_or_warn(
                run,
                Activity::RuleAdded {
                    text: format!("allow {added} for the rest of this run"),
                },
            );
            turn.lock()
                .unwrap_or_else(|p| p.into_inner())
                .run_rules
                .allow
                .push(added);
            resume::keep_always(engine, run, turn);
            offered.allow_always()
        }
        Ok(ToolCallChoice::No) => {
            let reason = d
                .context
                .filter(|c| !c.trim().is_empty())
                .unwrap_or_else(|| "no reason given".to_owned());
            let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
            t.rejections.push(format!("{}: {reason}", asked.title));
            t.owes_reason = true;
            drop(t);
            offered.reject()
        }
        Err(_) => PermissionReply::Cancelled,
    }
}

/// An elicitation: a question gate in the inbox; the answer's context is the
/// form content (JSON), or plain text put under `answer`. With the task's
/// question timeout it is a `question` (not `blocking`) ask: its timer takes
/// the form's defaults, or declines when there are none.
pub(super) async fn question(
    engine: &Arc<Engine>,
    work: &RunWork,
    message: &str,
    schema: &serde_json::Value,
) -> QuestionReply {
    let defaults = schema_defaults(schema);
    if let Some(gate) = engine.live.adopt_orphan(work.run_id, message) {
        // Asked again after a restart: the same question, still pending.
        engine.record_activity_or_warn(
            work.run_id,
            Activity::QuestionAgain {
                text: format!("asked again after the restart: gate {gate}, still pending"),
            },
        );
        return question_answer(engine, gate, defaults).await;
    }
    let mut options =
        vec![GateOption::choice(QuestionChoice::Answer, "Answer").with_required_context()];
    if !defaults.is_empty() {
        options.push(GateOption::choice(
            QuestionChoice::Default,
            "Use the defaults",
        ));
    }
    options.push(GateOption::choice(QuestionChoice::Decline, "Decline"));
    // The task's expiry, else the one the owner set for every question
    // (`[questions] expiry_seconds`). Unset, a launched run's question waits
    // for the user like its plan and its tool calls: its agent (an ACP
    // elicitation) gives no expiry and no default of its own, so the engine
    // answering for the user after a day would be a guess nobody made.
    let timeout = work
        .task_settings
        .question_timeout_seconds
        .or_else(|| engine.config.questions.set_expiry());
    let body = GateBody::Question(QuestionGate {
        message: message.to_owned(),
        schema: schema.clone(),
        questions: Vec::new(),
        ask_kind: Some(if timeout.is_some() {
            AskKind::Question
        } else {
            AskKind::Blocking
        }),
        notice: None,
    });
    let mut spec = GateSpec::new(work.run_id, body, message, options);
    if let Some(secs) = timeout {
        let at =
            engine.clock.now() + i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX / 2);
        let fallback = if defaults.is_empty() {
            QuestionChoice::Decline
        } else {
            QuestionChoice::Default
        };
        spec.auto = Some((at, fallback.into()));
    }
    let gate = match engine.open_gate_supervised(work, spec, &Actor::Agent(work.agent.clone())) {
        Ok(g) => g,
        Err(_) => return QuestionReply::Cancel,
    };
    question_answer(engine, gate, defaults).await
}

/// The agent's answer from its question gate's decision.
pub(super) async fn question_answer(
    engine: &Engine,
    gate: GateId,
    defaults: serde_json::Map<String, serde_json::Value>,
) -> QuestionReply {
    let Ok(d) = wait_gate(engine, gate).await else {
        return QuestionReply::Cancel;
    };
    match d.choice::<QuestionChoice>() {
        Ok(QuestionChoice::Answer) => {
            let text = d.context.unwrap_or_default();
            let content = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .filter(|v| v.is_object())
                .unwrap_or_else(|| json!({ "answer": text }));
            QuestionReply::Accept { content }
        }
        Ok(QuestionChoice::Default) => QuestionReply::Accept {
            content: serde_json::Value::Object(defaults),
        },
        Ok(QuestionChoice::Decline) => QuestionReply::Decline,
        Err(_) => QuestionReply::Cancel,
    }
}

/// The `default` of each field of a form schema that has one.
pub(super) fn schema_defaults(
    schema: &serde_json::Value,
) -> serde_json::Map<String, serde_json::Value> {
    schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|props| {
            props
                .iter()
                .filter_map(|(k, p)| {
                    p.get("default")
                        .filter(|d| !d.is_null())
                        .map(|d| (k.clone(), d.clone()))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_acp::PermissionChoice;

    fn option(id: &str, kind: &str) -> PermissionChoice {
        PermissionChoice {
            option_id: id.to_owned(),
            name: kind.replace('_', " "),
            kind: kind.to_owned(),
        }
    }

    #[test]
    fn an_option_id_given_to_an_allow_and_a_reject_option_is_refused() {
        let shared = [option("x", "allow_once"), option("x", "reject_once")];
        let why = ambiguous_options(&shared).expect("refused");
        assert!(why.contains("'x'") && why.contains("cancelled"), "{why}");
        // A once and an always sharing an id: a yes could become always.
        let once_always = [
            option("ok", "allow_once"),
            option("ok", "allow_always"),
            option("no", "reject_once"),
        ];
        assert!(ambiguous_options(&once_always).is_some());
        let distinct = [
            option("allow", "allow_once"),
            option("always", "allow_always"),
            option("reject", "reject_once"),
        ];
        assert_eq!(ambiguous_options(&distinct), None);
        assert_eq!(ambiguous_options(&[]), None);
    }

    #[test]
    fn a_yes_is_never_answered_with_an_always_option() {
        let only_always = [
            option("always", "allow_always"),
            option("no", "reject_once"),
        ];
        let offered = Offered(&only_always);
        assert!(!offered.can_allow_once());
        assert_eq!(
            offered.allow(),
            PermissionReply::Cancelled,
            "no one-time allow: nothing is allowed"
        );
        assert_eq!(
            offered.allow_always(),
            PermissionReply::Selected {
                option_id: "always".into()
            },
            "Always is the user's own choice of it"
        );
        let both = [
            option("always", "allow_always"),
            option("once", "allow_once"),
            option("no", "reject_always"),
        ];
        let offered = Offered(&both);
        assert_eq!(
            offered.allow(),
            PermissionReply::Selected {
                option_id: "once".into()
            }
        );
        assert_eq!(
            offered.reject(),
            PermissionReply::Selected {
                option_id: "no".into()
            }
        );
    }

    #[test]
    fn a_forms_defaults_are_what_its_timer_answers_with() {
        let schema = json!({"type": "object", "properties": {
            "framework": {"type": "string", "enum": ["svelte", "react"], "default": "svelte"},
            "add_tests": {"type": "boolean", "default": false},
            "tags": {"type": "array", "items": {"anyOf": []}, "default": ["a", "b"]},
            "notes": {"type": "string"},
            "odd": {"type": "string", "default": null},
        }});
        let defaults = schema_defaults(&schema);
        assert_eq!(
            serde_json::Value::Object(defaults),
            json!({"framework": "svelte", "add_tests": false, "tags": ["a", "b"]})
        );
        assert!(schema_defaults(&json!({"type": "object"})).is_empty());
        assert!(schema_defaults(&json!("not a schema")).is_empty());
    }
}

//! Claude Code's hooks (measured with Claude Code 2.1.330, see
//! PROTOCOLS.md §2). A decision is read only inside `hookSpecificOutput`
//! with the event's `hookEventName`; without it Claude ignores the answer
//! and the tool runs, so every decision below carries it.

use super::{
    bounded_input, common, fingerprint, notice_text, parse_json, str_field, Event, HookCall,
    InputError, Vendor,
};
use overseer_core::session::{NoticeKind, ToolDecision, ToolStage};
use overseer_core::{RunOrigin, SessionAnswer, SessionAsk, SessionRef};
use serde_json::{json, Value};

pub fn read(stdin: &str, salt: &str) -> Result<HookCall, InputError> {
    let v = parse_json(Vendor::Claude, stdin)?;
    let c = common(Vendor::Claude, &v)?;
    let session = SessionRef {
        origin: RunOrigin::ClaudeCode,
        session_id: c.session_id.clone(),
        cwd: c.cwd,
        agent: None,
    };
    let ask = ask_of(Vendor::Claude, &c.event, &c.session_id, &v, salt)?;
    Ok(HookCall {
        vendor: Vendor::Claude,
        stop_hook_active: v
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        event: c.event,
        session,
        ask,
    })
}

/// The ask of an event; shared with Codex, whose events read the same.
pub fn ask_of(
    vendor: Vendor,
    event: &Event,
    session_id: &str,
    v: &Value,
    salt: &str,
) -> Result<Option<SessionAsk>, InputError> {
    let label = vendor.label();
    Ok(match event {
        Event::PreToolUse | Event::PermissionRequest => {
            let tool = str_field(v, "tool_name")
                .filter(|t| !t.is_empty())
                .ok_or_else(|| InputError {
                    event: Some(event.clone()),
                    message: format!(
                        "the {label} {} hook input has no tool_name; {label} decides on its own",
                        event.name()
                    ),
                })?;
            let input = v.get("tool_input").cloned().unwrap_or(Value::Null);
            // A PermissionRequest carries no tool_use_id: the prompt (or
            // turn), the call itself and the salt name it instead.
            let id = match str_field(v, "tool_use_id").filter(|s| !s.is_empty()) {
                Some(id) => id.to_owned(),
                None => fingerprint(&[
                    str_field(v, "prompt_id")
                        .or_else(|| str_field(v, "turn_id"))
                        .unwrap_or(""),
                    tool,
                    &input.to_string(),
                    salt,
                ]),
            };
            let (stage, key) = match event {
                Event::PreToolUse => (ToolStage::PreToolUse, format!("pre:{id}")),
                Event::PermissionRequest
                | Event::Notification
                | Event::Stop
                | Event::SessionEnd
                | Event::Other(_) => (ToolStage::PermissionRequest, format!("permission:{id}")),
            };
            Some(SessionAsk::ToolCall {
                key: Some(format!("{}:{session_id}:{key}", vendor.as_str())),
                tool: tool.to_owned(),
                input: bounded_input(input),
                stage,
            })
        }
        Event::Notification => Some(SessionAsk::Notice {
            kind: NoticeKind::Notification,
            title: str_field(v, "title")
                .filter(|t| !t.trim().is_empty())
                .map(str::to_owned),
            message: notice_text(
                str_field(v, "message"),
                &format!("{label} sent a notification"),
            ),
        }),
        Event::Stop => Some(SessionAsk::Notice {
            kind: NoticeKind::Stop,
            title: Some(format!("{label} finished its turn")),
            message: notice_text(
                str_field(v, "last_assistant_message"),
                &format!("{label} finished its turn"),
            ),
        }),
        Event::SessionEnd => Some(SessionAsk::End),
        Event::Other(_) => None,
    })
}

fn specific(event: &str, fields: Value) -> Value {
    let mut out = json!({ "hookEventName": event });
    if let (Some(out), Some(fields)) = (out.as_object_mut(), fields.as_object()) {
        for (k, v) in fields {
            out.insert(k.clone(), v.clone());
        }
    }
    json!({ "hookSpecificOutput": out })
}

/// Nothing to decide: Claude goes on as it would without the hook.
const NOTHING: &str = "{}";

const DENIED: &str = "Denied in Overseer";

pub fn render(call: &HookCall, answer: &SessionAnswer) -> String {
    match (&call.event, answer) {
        (Event::PreToolUse, SessionAnswer::Tool { decision, reason }) => match decision {
            ToolDecision::Allow => specific(
                "PreToolUse",
                json!({
                    "permissionDecision": "allow",
                    "permissionDecisionReason": reason.as_deref().unwrap_or("Allowed in Overseer"),
                }),
            )
            .to_string(),
            ToolDecision::Deny => specific(
                "PreToolUse",
                json!({
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason.as_deref().unwrap_or(DENIED),
                }),
            )
            .to_string(),
            ToolDecision::Pass => NOTHING.to_owned(),
        },
        (Event::PermissionRequest, SessionAnswer::Tool { decision, reason }) => match decision {
            ToolDecision::Allow => specific(
                "PermissionRequest",
                json!({"decision": {"behavior": "allow"}}),
            )
            .to_string(),
            ToolDecision::Deny => specific(
                "PermissionRequest",
                json!({"decision": {
                    "behavior": "deny",
                    "message": reason.as_deref().unwrap_or(DENIED),
                }}),
            )
            .to_string(),
            ToolDecision::Pass => NOTHING.to_owned(),
        },
        (Event::Stop, SessionAnswer::Noted { steering, .. }) => stop_output(steering.as_deref()),
        (Event::PreToolUse | Event::PermissionRequest, _) => fallback(
            Some(&call.event),
            "Overseer gave an answer this hook does not understand",
        ),
        _ => NOTHING.to_owned(),
    }
}

/// Stop with the user's steering: Claude goes on with it as its next
/// instruction. The engine hands a steering text out once, so blocking
/// again (`stop_hook_active`) happens only for newer steering: no loop.
pub fn stop_output(steering: Option<&str>) -> String {
    match steering.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => json!({"decision": "block", "reason": s}).to_string(),
        None => NOTHING.to_owned(),
    }
}

pub fn fallback(event: Option<&Event>, why: &str) -> String {
    match event {
        // Claude's own prompt (in print mode, `ask` denies): never allow.
        Some(Event::PreToolUse) => specific(
            "PreToolUse",
            json!({
                "permissionDecision": "ask",
                "permissionDecisionReason": format!("{why}; Claude Code asks you instead"),
            }),
        )
        .to_string(),
        // No decision: Claude shows its own permission dialog.
        _ => NOTHING.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_core::session::NoticeKind;

    const PRE: &str = r#"{"session_id":"21f88d2b","transcript_path":"/h/.claude/projects/p/21f88d2b.jsonl","cwd":"/work/proj","prompt_id":"199fa48c","permission_mode":"default","effort":{"level":"medium"},"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"touch made-by-claude","description":"Create a file"},"tool_use_id":"toolu_ovs002_001_0"}"#;
    const PERM: &str = r#"{"session_id":"21f88d2b","transcript_path":"/h/t.jsonl","cwd":"/work/proj","prompt_id":"199fa48c","permission_mode":"default","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"touch made-by-claude","description":"Create a file"},"permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}"#;
    const STOP: &str = r#"{"session_id":"21f88d2b","transcript_path":"/h/t.jsonl","cwd":"/work/proj","prompt_id":"199fa48c","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done. SCRIPT-DONE","background_tasks":[],"session_crons":[]}"#;
    const END: &str = r#"{"session_id":"21f88d2b","transcript_path":"/h/t.jsonl","cwd":"/work/proj","prompt_id":"199fa48c","hook_event_name":"SessionEnd","reason":"other"}"#;
    const NOTE: &str = r#"{"session_id":"21f88d2b","transcript_path":"/h/t.jsonl","cwd":"/work/proj","hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}"#;

    fn parsed(s: &str) -> Value {
        serde_json::from_str(s).expect("json output")
    }

    #[test]
    fn pre_tool_use_is_a_tool_call_keyed_by_its_tool_use_id() {
        let call = read(PRE, "10").expect("read");
        assert_eq!(call.event, Event::PreToolUse);
        assert_eq!(call.session.origin, RunOrigin::ClaudeCode);
        assert_eq!(call.session.session_id, "21f88d2b");
        assert_eq!(call.session.cwd, std::path::PathBuf::from("/work/proj"));
        assert_eq!(
            call.ask,
            Some(SessionAsk::ToolCall {
                key: Some("claude:21f88d2b:pre:toolu_ovs002_001_0".into()),
                tool: "Bash".into(),
                input: json!({"command":"touch made-by-claude","description":"Create a file"}),
                stage: ToolStage::PreToolUse,
            })
        );
        // The salt does not matter where Claude gives the id.
        assert_eq!(read(PRE, "99").expect("read").ask, call.ask);
    }

    #[test]
    fn permission_request_keys_come_from_the_prompt_the_call_and_the_salt() {
        let a = read(PERM, "100").expect("read");
        let Some(SessionAsk::ToolCall { key, stage, .. }) = &a.ask else {
            panic!("not a tool call: {:?}", a.ask)
        };
        assert_eq!(*stage, ToolStage::PermissionRequest);
        let key = key.as_deref().expect("key");
        assert!(key.starts_with("claude:21f88d2b:permission:"), "{key}");
        assert_eq!(read(PERM, "100").expect("read").ask, a.ask, "stable");
        assert_ne!(
            read(PERM, "250").expect("read").ask,
            a.ask,
            "the same command later in the transcript is another ask"
        );
    }

    #[test]
    fn decisions_carry_the_event_name_claude_requires() {
        let pre = read(PRE, "").expect("read");
        let allow = parsed(&render(
            &pre,
            &SessionAnswer::Tool {
                decision: ToolDecision::Allow,
                reason: None,
            },
        ));
        assert_eq!(allow["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(allow["hookSpecificOutput"]["permissionDecision"], "allow");
        let deny = parsed(&render(
            &pre,
            &SessionAnswer::Tool {
                decision: ToolDecision::Deny,
                reason: Some("not on main".into()),
            },
        ));
        assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(
            deny["hookSpecificOutput"]["permissionDecisionReason"],
            "not on main"
        );
        let pass = parsed(&render(
            &pre,
            &SessionAnswer::Tool {
                decision: ToolDecision::Pass,
                reason: Some("allowed by a rule".into()),
            },
        ));
        assert_eq!(pass, json!({}), "pass leaves Claude's own flow alone");

        let perm = read(PERM, "").expect("read");
        let allow = parsed(&render(
            &perm,
            &SessionAnswer::Tool {
                decision: ToolDecision::Allow,
                reason: None,
            },
        ));
        assert_eq!(
            allow,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
        let deny = parsed(&render(
            &perm,
            &SessionAnswer::Tool {
                decision: ToolDecision::Deny,
                reason: Some("use the test db".into()),
            },
        ));
        assert_eq!(
            deny["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "use the test db"})
        );
        assert_eq!(
            parsed(&render(
                &perm,
                &SessionAnswer::Tool {
                    decision: ToolDecision::Deny,
                    reason: None
                }
            ))["hookSpecificOutput"]["decision"]["message"],
            DENIED
        );
    }

    #[test]
    fn an_answer_of_the_wrong_kind_falls_back_and_never_allows() {
        let pre = read(PRE, "").expect("read");
        let out = parsed(&render(
            &pre,
            &SessionAnswer::Noted {
                run: overseer_core::RunId(1),
                steering: None,
            },
        ));
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask");
    }

    #[test]
    fn the_fallback_is_claudes_own_prompt() {
        let out = parsed(&fallback(
            Some(&Event::PreToolUse),
            "Overseer is not running",
        ));
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask");
        assert!(out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .expect("reason")
            .starts_with("Overseer is not running"));
        for event in [
            Some(Event::PermissionRequest),
            Some(Event::Stop),
            Some(Event::Notification),
            Some(Event::SessionEnd),
            None,
        ] {
            assert_eq!(
                parsed(&fallback(event.as_ref(), "down")),
                json!({}),
                "{event:?}"
            );
        }
    }

    #[test]
    fn stop_carries_steering_back_once_as_a_block() {
        let call = read(STOP, "").expect("read");
        assert!(!call.stop_hook_active);
        assert_eq!(
            call.ask,
            Some(SessionAsk::Notice {
                kind: NoticeKind::Stop,
                title: Some("Claude Code finished its turn".into()),
                message: "Done. SCRIPT-DONE".into(),
            })
        );
        let out = parsed(&render(
            &call,
            &SessionAnswer::Noted {
                run: overseer_core::RunId(3),
                steering: Some("also update the changelog".into()),
            },
        ));
        assert_eq!(
            out,
            json!({"decision": "block", "reason": "also update the changelog"})
        );
        let none = parsed(&render(
            &call,
            &SessionAnswer::Noted {
                run: overseer_core::RunId(3),
                steering: Some("   ".into()),
            },
        ));
        assert_eq!(none, json!({}));
        let active = read(
            &STOP.replace("\"stop_hook_active\":false", "\"stop_hook_active\":true"),
            "",
        )
        .expect("read");
        assert!(active.stop_hook_active);
    }

    #[test]
    fn notification_and_session_end_are_reports() {
        let n = read(NOTE, "").expect("read");
        assert_eq!(
            n.ask,
            Some(SessionAsk::Notice {
                kind: NoticeKind::Notification,
                title: None,
                message: "Claude needs your permission to use Bash".into(),
            })
        );
        assert_eq!(read(END, "").expect("read").ask, Some(SessionAsk::End));
        let other = read(&END.replace("SessionEnd", "SubagentStop"), "").expect("read");
        assert_eq!(other.ask, None);
    }

    #[test]
    fn malformed_input_names_what_is_wrong_and_keeps_the_event_when_known() {
        let e = read("not json", "").expect_err("garbage");
        assert_eq!(e.event, None);
        assert!(
            e.message.contains("cannot read the Claude Code hook input"),
            "{e}"
        );
        let e = read("[1]", "").expect_err("array");
        assert!(e.message.contains("not a JSON object"), "{e}");
        let e = read(r#"{"hook_event_name":"PreToolUse","cwd":"/w"}"#, "").expect_err("no id");
        assert_eq!(e.event, Some(Event::PreToolUse));
        assert!(e.message.contains("session_id"), "{e}");
        let e = read(
            r#"{"hook_event_name":"PreToolUse","session_id":"s","cwd":"relative"}"#,
            "",
        )
        .expect_err("relative cwd");
        assert!(e.message.contains("cwd"), "{e}");
        let e = read(
            r#"{"hook_event_name":"PreToolUse","session_id":"s","cwd":"/w"}"#,
            "",
        )
        .expect_err("no tool");
        assert_eq!(e.event, Some(Event::PreToolUse));
        assert!(e.message.contains("tool_name"), "{e}");
        // Whatever went wrong, the output for it is never an allow.
        let out = fallback(e.event.as_ref(), &e.message);
        assert!(!out.contains("\"allow\""), "{out}");
    }
}

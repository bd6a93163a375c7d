//! Codex's hooks (measured with Codex 0.169, see PROTOCOLS.md §2): the same
//! input fields as Claude's (a shell call arrives as `tool_name: "Bash"`),
//! plus `turn_id`. What differs is what Codex honours: a PreToolUse can only
//! deny (`ask` and `allow` change nothing), a PermissionRequest decides with
//! `decision.behavior`, Stop blocks like Claude's, and there is no
//! Notification. Codex has no prompt of its own to fall back to in
//! `codex exec`: without an answer its own approval policy applies.

use super::claude::{ask_of, stop_output};
use super::{common, parse_json, Event, HookCall, InputError, Vendor};
use overseer_core::session::ToolDecision;
use overseer_core::{RunOrigin, SessionAnswer, SessionRef};
use serde_json::{json, Value};

pub fn read(stdin: &str, salt: &str) -> Result<HookCall, InputError> {
    let v = parse_json(Vendor::Codex, stdin)?;
    let c = common(Vendor::Codex, &v)?;
    let session = SessionRef {
        origin: RunOrigin::Codex,
        session_id: c.session_id.clone(),
        cwd: c.cwd,
        agent: None,
    };
    let ask = match c.event {
        // Codex has no Notification; should a later one send it, it is a report.
        Event::PreToolUse
        | Event::PermissionRequest
        | Event::Stop
        | Event::SessionEnd
        | Event::Notification => ask_of(Vendor::Codex, &c.event, &c.session_id, &v, salt)?,
        Event::Other(_) => None,
    };
    Ok(HookCall {
        vendor: Vendor::Codex,
        stop_hook_active: v
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        event: c.event,
        session,
        ask,
    })
}

const NOTHING: &str = "{}";
const DENIED: &str = "Denied in Overseer";

pub fn render(call: &HookCall, answer: &SessionAnswer) -> String {
    match (&call.event, answer) {
        (Event::PreToolUse, SessionAnswer::Tool { decision, reason }) => match decision {
            ToolDecision::Deny => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason.as_deref().unwrap_or(DENIED),
            }})
            .to_string(),
            // Codex reads nothing but a deny here: its own approval goes on.
            ToolDecision::Allow | ToolDecision::Pass => NOTHING.to_owned(),
        },
        (Event::PermissionRequest, SessionAnswer::Tool { decision, reason }) => match decision {
            ToolDecision::Allow => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"},
            }})
            .to_string(),
            ToolDecision::Deny => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason.as_deref().unwrap_or(DENIED)},
            }})
            .to_string(),
            ToolDecision::Pass => NOTHING.to_owned(),
        },
        (Event::Stop, SessionAnswer::Noted { steering, .. }) => stop_output(steering.as_deref()),
        _ => NOTHING.to_owned(),
    }
}

/// No decision at all: Codex's own approval policy decides, as without
/// Overseer. (Codex offers no "ask the user" a hook could fall back to.)
pub fn fallback(_event: Option<&Event>, _why: &str) -> String {
    NOTHING.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_core::session::{NoticeKind, ToolStage};
    use overseer_core::SessionAsk;

    // Captured from `codex exec` 0.169.0 with a logging hook.
    const PRE: &str = r#"{"session_id":"01a20ad4-3404","turn_id":"01a20ad4-3481","transcript_path":"/c/sessions/rollout.jsonl","cwd":"/work/cproj","hook_event_name":"PreToolUse","model":"gpt-5.5","permission_mode":"bypassPermissions","tool_name":"Bash","tool_input":{"command":"echo hi > notes.txt"},"tool_use_id":"call_ovs004_001_0"}"#;
    const STOP: &str = r#"{"session_id":"01a20ad4-3404","turn_id":"01a20ad4-3481","transcript_path":"/c/sessions/rollout.jsonl","cwd":"/work/cproj","hook_event_name":"Stop","model":"gpt-5.5","permission_mode":"bypassPermissions","stop_hook_active":false,"last_assistant_message":"Finished. SCRIPT-DONE"}"#;
    const END: &str = r#"{"session_id":"01a20ad4-3404","transcript_path":"/c/sessions/rollout.jsonl","cwd":"/work/cproj","hook_event_name":"SessionEnd","reason":"other"}"#;
    const START: &str = r#"{"session_id":"01a20ad4-3404","transcript_path":"/c/sessions/rollout.jsonl","cwd":"/work/cproj","hook_event_name":"SessionStart","model":"gpt-5.5","permission_mode":"bypassPermissions","source":"startup"}"#;
    // PermissionRequest in the documented shape (codex exec never asks).
    const PERM: &str = r#"{"session_id":"01a20ad4-3404","turn_id":"01a20ad4-3481","transcript_path":"/c/r.jsonl","cwd":"/work/cproj","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf build"}}"#;

    fn parsed(s: &str) -> Value {
        serde_json::from_str(s).expect("json output")
    }

    #[test]
    fn a_shell_call_is_a_tool_call_of_a_codex_session() {
        let call = read(PRE, "").expect("read");
        assert_eq!(call.session.origin, RunOrigin::Codex);
        assert_eq!(
            call.ask,
            Some(SessionAsk::ToolCall {
                key: Some("codex:01a20ad4-3404:pre:call_ovs004_001_0".into()),
                tool: "Bash".into(),
                input: json!({"command": "echo hi > notes.txt"}),
                stage: ToolStage::PreToolUse,
            })
        );
        let perm = read(PERM, "7").expect("read");
        let Some(SessionAsk::ToolCall { key, stage, .. }) = perm.ask else {
            panic!("not a tool call")
        };
        assert_eq!(stage, ToolStage::PermissionRequest);
        assert!(key
            .as_deref()
            .is_some_and(|k| k.starts_with("codex:01a20ad4-3404:permission:")));
    }

    #[test]
    fn a_patch_arrives_whole_as_the_tools_command() {
        // Captured from `codex exec` 0.169.0: apply_patch's input is the patch text.
        let patch = r#"{"session_id":"01a20ae0-3780","turn_id":"01a20ae0-37da","transcript_path":"/c/r.jsonl","cwd":"/work/cproj","hook_event_name":"PreToolUse","model":"gpt-5.5","permission_mode":"bypassPermissions","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: README.md\n@@\n-A demo project.\n+A demo project, patched.\n*** End Patch\n"},"tool_use_id":"call_ovs004_001_0"}"#;
        let call = read(patch, "").expect("read");
        let Some(SessionAsk::ToolCall { tool, input, .. }) = call.ask else {
            panic!("not a tool call")
        };
        assert_eq!(tool, "apply_patch");
        assert!(input["command"]
            .as_str()
            .is_some_and(|p| p.contains("*** Update File: README.md")));
    }

    #[test]
    fn only_a_deny_is_said_before_the_tool_runs() {
        let call = read(PRE, "").expect("read");
        let deny = parsed(&render(
            &call,
            &SessionAnswer::Tool {
                decision: ToolDecision::Deny,
                reason: Some("no writes on main".into()),
            },
        ));
        assert_eq!(
            deny,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no writes on main"}})
        );
        for decision in [ToolDecision::Allow, ToolDecision::Pass] {
            let out = render(
                &call,
                &SessionAnswer::Tool {
                    decision,
                    reason: None,
                },
            );
            assert_eq!(parsed(&out), json!({}));
        }
    }

    #[test]
    fn permission_requests_decide_with_a_behavior() {
        let call = read(PERM, "").expect("read");
        let allow = parsed(&render(
            &call,
            &SessionAnswer::Tool {
                decision: ToolDecision::Allow,
                reason: None,
            },
        ));
        assert_eq!(
            allow["hookSpecificOutput"]["decision"],
            json!({"behavior": "allow"})
        );
        let deny = parsed(&render(
            &call,
            &SessionAnswer::Tool {
                decision: ToolDecision::Deny,
                reason: None,
            },
        ));
        assert_eq!(
            deny["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": DENIED})
        );
    }

    #[test]
    fn stop_steers_end_ends_and_start_is_left_alone() {
        let stop = read(STOP, "").expect("read");
        assert!(matches!(
            stop.ask,
            Some(SessionAsk::Notice {
                kind: NoticeKind::Stop,
                ..
            })
        ));
        assert_eq!(
            parsed(&render(
                &stop,
                &SessionAnswer::Noted {
                    run: overseer_core::RunId(1),
                    steering: Some("run the tests too".into())
                }
            )),
            json!({"decision": "block", "reason": "run the tests too"})
        );
        assert_eq!(read(END, "").expect("read").ask, Some(SessionAsk::End));
        let start = read(START, "").expect("read");
        assert_eq!(start.event, Event::Other("SessionStart".into()));
        assert_eq!(start.ask, None);
    }

    #[test]
    fn the_fallback_decides_nothing() {
        for e in [Event::PreToolUse, Event::PermissionRequest, Event::Stop] {
            assert_eq!(parsed(&fallback(Some(&e), "down")), json!({}));
        }
        let e = read("{", "").expect_err("garbage");
        assert!(e.message.contains("Codex"), "{e}");
    }
}

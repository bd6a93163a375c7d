//! Hook input and output: `agents::hooks::read` (Claude Code's and Codex's
//! stdin JSON) and what `render` and `fallback` print back.
//!
//! Input: one flag byte (bit 0: Codex, bits 1-3: which canned answer), then
//! the hook's stdin, a NUL, an answer as JSON (a `SessionAnswer`, used when
//! it parses), a NUL, the reason shown on a fallback.
//!
//! Properties: nothing panics; everything printed is JSON; a fallback (bad
//! input, no answer, an answer the hook does not understand) never says
//! allow; and only an explicit Allow answer ever renders as an allow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use overseer_core::session::ToolDecision;
use overseer_core::SessionAnswer;
use overseer_hooks::{fallback, read, render, Vendor};
use serde_json::Value;

/// True when `out` tells the agent to let a tool run.
fn says_allow(out: &str) -> bool {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    fn walk(v: &Value) -> bool {
        match v {
            Value::Object(o) => o.iter().any(|(k, v)| {
                (matches!(k.as_str(), "permissionDecision" | "behavior" | "decision")
                    && matches!(v.as_str(), Some("allow" | "approve")))
                    || walk(v)
            }),
            Value::Array(a) => a.iter().any(walk),
            _ => false,
        }
    }
    walk(&v)
}

fn canned(i: u8, reason: &str) -> SessionAnswer {
    let reason = (!reason.is_empty()).then(|| reason.to_owned());
    match i % 5 {
        0 => SessionAnswer::Tool {
            decision: ToolDecision::Allow,
            reason,
        },
        1 => SessionAnswer::Tool {
            decision: ToolDecision::Deny,
            reason,
        },
        2 => SessionAnswer::Tool {
            decision: ToolDecision::Pass,
            reason,
        },
        3 => SessionAnswer::Noted {
            run: overseer_core::RunId(7),
            steering: reason,
        },
        _ => SessionAnswer::Messages {
            messages: Vec::new(),
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let vendor = if flags & 1 == 0 {
        Vendor::Claude
    } else {
        Vendor::Codex
    };
    let mut parts = rest.splitn(3, '\0');
    let stdin = parts.next().unwrap_or("");
    let answer_text = parts.next().unwrap_or("");
    let why = parts.next().unwrap_or("");

    let call = match read(vendor, stdin, "17") {
        Ok(call) => call,
        Err(e) => {
            let out = fallback(vendor, e.event.as_ref(), &e.message);
            assert!(!says_allow(&out), "a fallback for bad input allows: {out}");
            return;
        }
    };
    assert_eq!(call.vendor, vendor);
    let out = fallback(vendor, Some(&call.event), why);
    assert!(!says_allow(&out), "a fallback allows: {out}");
    let out = fallback(vendor, None, why);
    assert!(!says_allow(&out), "a fallback allows: {out}");

    let answer = serde_json::from_str::<SessionAnswer>(answer_text)
        .unwrap_or_else(|_| canned(flags >> 1, why));
    let out = render(&call, &answer);
    let allowed = matches!(
        answer,
        SessionAnswer::Tool {
            decision: ToolDecision::Allow,
            ..
        }
    );
    if says_allow(&out) {
        assert!(
            allowed,
            "an answer that is not Allow renders as allow: {answer:?} -> {out}"
        );
    }
});

//! Claude Code's and Codex's hooks, translated: a hook's stdin JSON into
//! core's session words ([`SessionRef`], [`SessionAsk`]) and Overseer's
//! [`SessionAnswer`] back into the JSON the agent reads on the hook's stdout.
//! Pure: `overseer hook` does the reading, the asking and the printing.
//!
//! The one rule everything here keeps: when Overseer cannot answer (it is not
//! running, the answer did not come in time, the input made no sense), the
//! hook says nothing that lets a tool run. Claude Code then asks its user as
//! it would without Overseer; Codex applies its own approval policy.

pub mod claude;
pub mod codex;
pub mod install;

use overseer_core::{SessionAnswer, SessionAsk, SessionRef};
use serde_json::Value;

/// The agents whose hooks we speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    Claude,
    Codex,
}

impl Vendor {
    /// The word on the command line (`overseer hook claude`).
    pub fn as_str(self) -> &'static str {
        match self {
            Vendor::Claude => "claude",
            Vendor::Codex => "codex",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Vendor::Claude => "Claude Code",
            Vendor::Codex => "Codex",
        }
    }
}

/// The hook events we act on; any other is read and left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    PreToolUse,
    PermissionRequest,
    Notification,
    Stop,
    SessionEnd,
    /// An event we were not installed for (or a newer one): no answer.
    Other(String),
}

impl Event {
    pub fn parse(name: &str) -> Event {
        match name {
            "PreToolUse" => Event::PreToolUse,
            "PermissionRequest" => Event::PermissionRequest,
            "Notification" => Event::Notification,
            "Stop" => Event::Stop,
            "SessionEnd" => Event::SessionEnd,
            other => Event::Other(other.to_owned()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PermissionRequest => "PermissionRequest",
            Event::Notification => "Notification",
            Event::Stop => "Stop",
            Event::SessionEnd => "SessionEnd",
            Event::Other(name) => name,
        }
    }

    /// An ask that waits for a decision (a human may take long), as opposed
    /// to a report that is recorded at once.
    pub fn waits_for_a_decision(&self) -> bool {
        matches!(self, Event::PreToolUse | Event::PermissionRequest)
    }
}

/// One hook invocation, read.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    pub vendor: Vendor,
    pub event: Event,
    pub session: SessionRef,
    /// What to ask Overseer; `None` for events with nothing to tell it.
    pub ask: Option<SessionAsk>,
    /// Stop: the agent is already going on because a Stop hook blocked.
    pub stop_hook_active: bool,
}

/// Why a hook's input could not be read. The message is for the user's
/// terminal (stderr): what was wrong and that the agent decides alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The event, when the input said which it was (so the fallback fits).
    pub event: Option<Event>,
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Reads one hook's stdin. `salt` tells apart two identical tool calls of
/// the same prompt where the agent gives no id of its own
/// (PermissionRequest): the CLI passes the transcript's length.
pub fn read(vendor: Vendor, stdin: &str, salt: &str) -> Result<HookCall, InputError> {
    match vendor {
        Vendor::Claude => claude::read(stdin, salt),
        Vendor::Codex => codex::read(stdin, salt),
    }
}

/// What the hook prints for Overseer's answer.
pub fn render(call: &HookCall, answer: &SessionAnswer) -> String {
    match call.vendor {
        Vendor::Claude => claude::render(call, answer),
        Vendor::Codex => codex::render(call, answer),
    }
}

/// What the hook prints when Overseer did not answer: never an allow.
/// `why` is shown where the agent shows a hook's reason.
pub fn fallback(vendor: Vendor, event: Option<&Event>, why: &str) -> String {
    match vendor {
        Vendor::Claude => claude::fallback(event, why),
        Vendor::Codex => codex::fallback(event, why),
    }
}

/// The fields both vendors share, read leniently: a missing optional field
/// is no error, a missing session or cwd is.
pub struct Common {
    pub event: Event,
    pub session_id: String,
    pub cwd: std::path::PathBuf,
}

pub fn common(vendor: Vendor, v: &Value) -> Result<Common, InputError> {
    let Some(obj) = v.as_object() else {
        return Err(InputError {
            event: None,
            message: format!("the {} hook input is not a JSON object", vendor.label()),
        });
    };
    let event = obj
        .get("hook_event_name")
        .and_then(Value::as_str)
        .map(Event::parse);
    let missing = |field: &str| {
        InputError {
        event: event.clone(),
        message: format!(
            "the {} hook input has no {field} (is this a {} hook? `overseer hook {}` reads what {} sends to a hook)",
            vendor.label(),
            vendor.label(),
            vendor.as_str(),
            vendor.label()
        ),
    }
    };
    let Some(ev) = event.clone() else {
        return Err(missing("hook_event_name"));
    };
    let session_id = obj
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| missing("session_id"))?
        .to_owned();
    let cwd = obj
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|s| s.starts_with('/'))
        .ok_or_else(|| missing("absolute cwd"))?;
    Ok(Common {
        event: ev,
        session_id,
        cwd: std::path::PathBuf::from(cwd),
    })
}

pub fn parse_json(vendor: Vendor, stdin: &str) -> Result<Value, InputError> {
    serde_json::from_str(stdin).map_err(|e| InputError {
        event: None,
        message: format!(
            "cannot read the {} hook input as JSON ({e}); {} decides on its own",
            vendor.label(),
            vendor.label()
        ),
    })
}

pub fn str_field<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    v.get(field).and_then(Value::as_str)
}

/// A stable id for an ask that carries no id of its own: FNV-1a over the
/// parts, twice with different offsets (128 bits). Not cryptographic: it
/// only has to tell one of this session's asks from another.
pub fn fingerprint(parts: &[&str]) -> String {
    fn fnv(seed: u64, parts: &[&str]) -> u64 {
        let mut h = seed;
        for part in parts {
            for b in part.bytes().chain(std::iter::once(0xff)) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }
    format!(
        "{:016x}{:016x}",
        fnv(0xcbf2_9ce4_8422_2325, parts),
        fnv(0x6c62_272e_07bb_0142, parts)
    )
}

/// Longest tool input sent to the engine as is. The local API refuses lines
/// over 1 MiB; a Write of a large file would otherwise never reach the
/// inbox. Longer inputs keep their shape with long strings cut.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;
const CUT_STRING_AT: usize = 8 * 1024;

pub fn bounded_input(input: Value) -> Value {
    let size = serde_json::to_string(&input).map(|s| s.len()).unwrap_or(0);
    if size <= MAX_INPUT_BYTES {
        return input;
    }
    fn cut(v: Value) -> Value {
        match v {
            Value::String(s) if s.len() > CUT_STRING_AT => {
                let mut end = CUT_STRING_AT;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                Value::String(format!(
                    "{}… [cut by Overseer: {} bytes in all]",
                    &s[..end],
                    s.len()
                ))
            }
            Value::Array(items) => Value::Array(items.into_iter().map(cut).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, cut(v))).collect())
            }
            other @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)) => other,
        }
    }
    cut(input)
}

/// The last thing the agent said, as a notice's message: bounded, never empty.
pub fn notice_text(text: Option<&str>, otherwise: &str) -> String {
    const MAX: usize = 4000;
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) if t.len() > MAX => {
            let mut end = MAX;
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &t[..end])
        }
        Some(t) => t.to_owned(),
        None => otherwise.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprints_are_stable_and_tell_parts_apart() {
        assert_eq!(fingerprint(&["a", "b"]), fingerprint(&["a", "b"]));
        assert_ne!(fingerprint(&["ab", ""]), fingerprint(&["a", "b"]));
        assert_eq!(fingerprint(&["x"]).len(), 32);
    }

    #[test]
    fn huge_inputs_are_cut_but_keep_their_shape() {
        let big = "x".repeat(MAX_INPUT_BYTES + 10);
        let v = bounded_input(json!({"file_path": "/r/a", "content": big}));
        assert_eq!(v["file_path"], "/r/a");
        let content = v["content"].as_str().expect("string");
        assert!(content.len() < 10_000, "{}", content.len());
        assert!(content.contains("cut by Overseer"));
        let small = json!({"command": "ls"});
        assert_eq!(bounded_input(small.clone()), small);
    }

    #[test]
    fn notices_are_bounded_and_never_empty() {
        assert_eq!(notice_text(Some("  "), "stopped"), "stopped");
        assert_eq!(notice_text(None, "stopped"), "stopped");
        assert!(notice_text(Some(&"é".repeat(5000)), "").len() <= 4003);
    }
}

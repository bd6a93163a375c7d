//! The error codes that cross process and IPC boundaries as `{code, message}`.
//! Clients match on the code, never on the message text.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The run, gate or workspace does not exist.
    NotFound,
    /// The action is not allowed in the current state.
    InvalidTransition,
    /// The gate was already decided; nothing changed.
    AlreadyDecided,
    /// The work cannot be merged as it is (conflict, dirty checkout).
    Conflict,
    /// The request itself is wrong (missing reason, unknown option, ...).
    InvalidInput,
    /// The database could not be read or written (locked, full, newer version).
    Storage,
    /// No engine is reachable (or it has too many connections open).
    EngineUnavailable,
    /// The caller may not ask this: a process inside a run talking to the
    /// engine (a run can ask and report only through its agent's protocol).
    Forbidden,
    /// The caller has no credential, or one that is unknown, expired or
    /// revoked (a browser that is not paired): pair it and retry.
    Unauthorized,
    /// Too many requests or wrong tries: wait and retry.
    RateLimited,
    /// A bug: something that should not happen did.
    Internal,
}

/// An error as it crosses a boundary: a stable code and a human message that
/// says what went wrong and what to do next. An `invalid_input` refusal of
/// settings also names each setting in error, so a form can show the
/// message under its field; absent (and not sent) otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error, ts_rs::TS)]
#[error("{message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<FieldError>>", optional)]
    pub fields: Vec<FieldError>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            fields: Vec::new(),
        }
    }

    /// An `invalid_input` refusal of the settings in error: the message
    /// lists every field's, so a client that shows only the message still
    /// says what to fix.
    pub fn invalid_fields(fields: Vec<FieldError>) -> Self {
        let message = match fields.as_slice() {
            [one] => one.message.clone(),
            many => many
                .iter()
                .map(|f| format!("{}: {}", f.field, f.message))
                .collect::<Vec<_>>()
                .join("; "),
        };
        ApiError {
            code: ErrorCode::InvalidInput,
            message,
            fields,
        }
    }
}

/// One setting in error, and what to do about it.
///
/// `field` is the setting's path as the window's forms know it: the part of
/// the settings it belongs to (`policy`, `rules`, `sensors`, `auto_advance`,
/// `notifications`; `settings` for a task start's settings, `agents.NAME`
/// for a profile in overseer.toml), then the serde names of the fields
/// inside it joined by `.`, and a list item as `[i]` (its index in the list
/// as sent, from 0): `policy.timeout_seconds`,
/// `policy.gate_authority.deviation`, `policy.evaluator.api_key_env`,
/// `rules.allow[2]`, `sensors[0]`, `notifications.muted[1]`,
/// `settings.retry.max_attempts`, `agents.claude.pass_env[1]`. Core checks
/// return paths relative to the value they check; [`FieldError::under`]
/// puts the part in front.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// This error inside `prefix`: `timeout_seconds` under `policy` is
    /// `policy.timeout_seconds`, `[2]` under `rules.allow` is `rules.allow[2]`.
    pub fn under(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() {
            prefix.to_owned()
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

/// Every error of `errors` inside `prefix` (see [`FieldError::under`]).
pub fn under(prefix: &str, errors: Vec<FieldError>) -> Vec<FieldError> {
    errors.into_iter().map(|e| e.under(prefix)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_nest_with_dots_and_list_items_with_brackets() {
        let e = FieldError::new("evaluator.api_key_env", "m").under("policy");
        assert_eq!(e.field, "policy.evaluator.api_key_env");
        assert_eq!(
            FieldError::new("[2]", "m").under("rules.allow").field,
            "rules.allow[2]"
        );
        assert_eq!(
            FieldError::new("", "m").under("auto_advance").field,
            "auto_advance"
        );
    }

    #[test]
    fn fields_are_left_out_of_the_wire_when_empty_and_read_back_when_absent() {
        let plain = ApiError::new(ErrorCode::NotFound, "no run 3");
        let text = serde_json::to_string(&plain).expect("json");
        assert_eq!(text, r#"{"code":"not_found","message":"no run 3"}"#);
        let back: ApiError = serde_json::from_str(&text).expect("read");
        assert_eq!(back, plain);
        let refused = ApiError::invalid_fields(vec![
            FieldError::new("policy.timeout_seconds", "give 1 to 3600 seconds"),
            FieldError::new("policy.evaluator.model", "name the model"),
        ]);
        assert_eq!(refused.code, ErrorCode::InvalidInput);
        assert_eq!(
            refused.message,
            "policy.timeout_seconds: give 1 to 3600 seconds; policy.evaluator.model: name the model"
        );
        let text = serde_json::to_value(&refused).expect("json");
        assert_eq!(text["fields"][1]["field"], "policy.evaluator.model");
    }
}

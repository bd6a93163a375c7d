//! Questions as the asker sets them: how long they wait (their expiry) and
//! what answers them when nobody does (their defaults), and what the audit
//! says when a question expires.

use crate::gate_payload::QuestionGate;
use crate::session::{AskQuestion, QUESTION_EXPIRY_MAX, QUESTION_EXPIRY_MIN};
use serde_json::{Map, Value};

/// How long a question from an external session (an MCP `ask_user`) waits
/// when neither the asker nor its task set an expiry: one day. `0` in
/// `[questions] expiry_seconds` makes such questions wait for the user.
pub const DEFAULT_EXPIRY_SECONDS: u64 = 24 * 3600;

/// An asker's expiry, checked: within [`QUESTION_EXPIRY_MIN`] and
/// [`QUESTION_EXPIRY_MAX`] seconds, else what to give instead.
pub fn check_expiry(seconds: u64) -> Result<u64, String> {
    if (QUESTION_EXPIRY_MIN..=QUESTION_EXPIRY_MAX).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(format!(
            "expires_in_seconds is {seconds}; give {QUESTION_EXPIRY_MIN} to {QUESTION_EXPIRY_MAX} seconds (10 s to 7 days), or leave it out to use the task's or the global default"
        ))
    }
}

/// A question's default, checked: one of its options when it has options,
/// else free words (it must not be blank).
pub fn check_default(q: &AskQuestion) -> Result<(), String> {
    let Some(d) = q.default.as_deref() else {
        return Ok(());
    };
    if d.trim().is_empty() {
        return Err(format!(
            "the default of {:?} is empty; give the answer to take when nobody answers, or leave it out",
            q.header
        ));
    }
    if !q.options.is_empty() && !q.options.iter().any(|o| o.label == d) {
        let labels: Vec<String> = q.options.iter().map(|o| format!("{:?}", o.label)).collect();
        return Err(format!(
            "the default of {:?} is {d:?}, which is not one of its options; give one of {}",
            q.header,
            labels.join(", ")
        ));
    }
    Ok(())
}

/// The defaults of a batch of questions as the form content the inbox sends
/// (`question_N`, `question_N_custom`): `None` when no question has one.
pub fn default_content(questions: &[AskQuestion]) -> Option<Value> {
    let mut content = Map::new();
    for (i, q) in questions.iter().enumerate() {
        let Some(d) = q.default.clone() else { continue };
        if q.options.is_empty() {
            content.insert(format!("question_{i}_custom"), Value::String(d));
        } else if q.multiple {
            content.insert(
                format!("question_{i}"),
                Value::Array(vec![Value::String(d)]),
            );
        } else {
            content.insert(format!("question_{i}"), Value::String(d));
        }
    }
    (!content.is_empty()).then_some(Value::Object(content))
}

/// Each default of a question gate, as `field: value` (an external
/// session's questions by header, an elicitation's form by field).
fn defaults_of(q: &QuestionGate) -> Vec<String> {
    if !q.questions.is_empty() {
        return q
            .questions
            .iter()
            .filter_map(|x| x.default.as_ref().map(|d| format!("{}: {d}", x.header)))
            .collect();
    }
    q.schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter_map(|(k, p)| {
                    let d = p.get("default").filter(|d| !d.is_null())?;
                    let shown = d.as_str().map(str::to_owned).unwrap_or(d.to_string());
                    Some(format!("{k}: {shown}"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What the audit and the timeline say when a question's timer fires:
/// it expired, and the default applied (naming it) or it was declined.
pub fn expiry_note(q: &QuestionGate, option: &str, waited_seconds: i64) -> String {
    let head = format!("expired: nobody answered within {waited_seconds} s");
    match option {
        "default" => {
            let defaults = defaults_of(q);
            if defaults.is_empty() {
                format!("{head}; the defaults applied")
            } else {
                format!("{head}; default applied: {}", defaults.join("; "))
            }
        }
        "decline" => format!("{head}; declined (no default was set)"),
        other => format!("{head}; the gate's timer chose '{other}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::AskOption;

    fn q(options: &[&str], default: Option<&str>) -> AskQuestion {
        AskQuestion {
            header: "Tone".to_owned(),
            question: "Which tone?".to_owned(),
            options: options
                .iter()
                .map(|l| AskOption {
                    label: (*l).to_owned(),
                    description: None,
                })
                .collect(),
            multiple: false,
            custom: true,
            default: default.map(str::to_owned),
        }
    }

    #[test]
    fn expiry_is_bounded_and_the_error_says_the_range() {
        assert_eq!(check_expiry(10), Ok(10));
        assert_eq!(check_expiry(QUESTION_EXPIRY_MAX), Ok(QUESTION_EXPIRY_MAX));
        let e = check_expiry(9).expect_err("too short");
        assert!(e.contains("10 to 604800 seconds"), "{e}");
        assert!(check_expiry(QUESTION_EXPIRY_MAX + 1).is_err());
    }

    #[test]
    fn a_default_must_be_one_of_the_options_when_there_are_options() {
        assert!(check_default(&q(&["Formal", "Friendly"], Some("Formal"))).is_ok());
        let e =
            check_default(&q(&["Formal", "Friendly"], Some("Rude"))).expect_err("not an option");
        assert!(e.contains("\"Formal\", \"Friendly\""), "{e}");
        assert!(check_default(&q(&[], Some("Keep it short"))).is_ok());
        assert!(check_default(&q(&[], Some("  "))).is_err());
    }

    #[test]
    fn defaults_become_the_form_content_and_the_expiry_note_names_them() {
        let qs = vec![q(&["Formal", "Friendly"], Some("Friendly")), q(&[], None)];
        assert_eq!(
            default_content(&qs),
            Some(serde_json::json!({"question_0": "Friendly"}))
        );
        assert_eq!(default_content(&[q(&[], None)]), None);
        let gate = QuestionGate {
            message: "Which tone?".to_owned(),
            schema: Value::Null,
            questions: qs,
            ask_kind: None,
            notice: None,
        };
        assert_eq!(
            expiry_note(&gate, "default", 30),
            "expired: nobody answered within 30 s; default applied: Tone: Friendly"
        );
        assert!(expiry_note(&gate, "decline", 30).contains("declined"));
    }
}

//! Asks in the shapes the inbox and the permission rules read: questions
//! as the form the inbox renders and back, a hook's tool call as a request.

use super::*;
use overseer_core::ToolKind;

/// The questions as the form the inbox renders (the shape Claude's
/// elicitation uses): `question_N` with its options, `question_N_custom`.
pub(crate) fn question_schema(questions: &[AskQuestion]) -> Value {
    let mut props = serde_json::Map::new();
    for (i, q) in questions.iter().enumerate() {
        let choices: Vec<Value> = q
            .options
            .iter()
            .map(|o| json!({ "const": o.label, "title": o.label, "description": o.description }))
            .collect();
        if !choices.is_empty() {
            let mut field = if q.multiple {
                json!({ "type": "array", "title": q.header, "description": q.question, "items": { "anyOf": choices } })
            } else {
                json!({ "type": "string", "title": q.header, "description": q.question, "oneOf": choices })
            };
            if let (Some(d), Some(f)) = (&q.default, field.as_object_mut()) {
                let d = Value::String(d.clone());
                f.insert("default".into(), if q.multiple { json!([d]) } else { d });
            }
            props.insert(format!("question_{i}"), field);
        }
        if q.custom || choices.is_empty() {
            let (title, description) = if choices.is_empty() {
                (q.header.clone(), q.question.clone())
            } else {
                ("Other".to_owned(), "Your own answer (optional)".to_owned())
            };
            props.insert(
                format!("question_{i}_custom"),
                json!({ "type": "string", "title": title, "description": description }),
            );
        }
    }
    json!({ "type": "object", "properties": props })
}

/// The form content (or plain text) an answer carried, per question.
pub(crate) fn answers_of(questions: &[AskQuestion], context: &str) -> Vec<QuestionAnswer> {
    let content = serde_json::from_str::<Value>(context)
        .ok()
        .filter(Value::is_object);
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let (selected, custom) = match &content {
                Some(c) => {
                    let selected = match &c[format!("question_{i}")] {
                        Value::String(s) => vec![s.clone()],
                        Value::Array(a) => a
                            .iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect(),
                        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => {
                            Vec::new()
                        }
                    };
                    // Only labels the question offered count as chosen.
                    let selected = selected
                        .into_iter()
                        .filter(|s| q.options.iter().any(|o| &o.label == s))
                        .collect();
                    let custom = c[format!("question_{i}_custom")]
                        .as_str()
                        .filter(|s| !s.trim().is_empty())
                        .map(str::to_owned);
                    (selected, custom)
                }
                // Plain text answers the first question.
                None if i == 0 && !context.trim().is_empty() => {
                    (Vec::new(), Some(context.trim().to_owned()))
                }
                None => (Vec::new(), None),
            };
            QuestionAnswer {
                header: q.header.clone(),
                question: q.question.clone(),
                selected,
                custom,
            }
        })
        .collect()
}

/// What the permission rules see of a hook's tool call. The tool name is
/// the agent's own (Claude Code's names are the rules' names).
pub(crate) fn hook_tool_request(tool: &str, input: &Value, cwd: &str) -> ToolRequest {
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| input.get(*n).and_then(Value::as_str).map(str::to_owned))
    };
    let kind = match tool {
        "Bash" | "BashOutput" | "KillShell" | "KillBash" | "shell" | "exec_command"
        | "local_shell" => ToolKind::Execute,
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" | "apply_patch" => ToolKind::Edit,
        "Read" | "NotebookRead" | "LS" => ToolKind::Read,
        "Glob" | "Grep" => ToolKind::Search,
        "WebFetch" | "WebSearch" => ToolKind::Fetch,
        "TodoWrite" | "Task" | "Agent" | "ExitPlanMode" | "EnterPlanMode" | "ListAgents"
        | "ToolSearch" => ToolKind::Think,
        _ => ToolKind::Other,
    };
    let command = field(&["command", "cmd"]).or_else(|| {
        input.get("command").and_then(Value::as_array).map(|argv| {
            argv.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
    });
    let mut paths = Vec::new();
    if let Some(p) = field(&["file_path", "path", "notebook_path"]) {
        paths.push(p);
    }
    // Codex's apply_patch names its files inside the patch text.
    if tool == "apply_patch" {
        let patch = command.clone().or_else(|| field(&["input", "patch"]));
        for line in patch.as_deref().unwrap_or_default().lines() {
            let named = [
                "*** Update File: ",
                "*** Add File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|p| line.strip_prefix(p));
            if let Some(p) = named.map(str::trim).filter(|p| !p.is_empty()) {
                if !paths.iter().any(|q| q == p) {
                    paths.push(p.to_owned());
                }
            }
        }
    }
    let resolved = match std::fs::canonicalize(cwd) {
        Ok(root) => paths
            .iter()
            .map(|p| overseer_acp::resolve_for_rules(&root, p))
            .collect(),
        Err(_) => Vec::new(),
    };
    let (tool, command) = match tool {
        "shell" | "exec_command" | "local_shell" => ("Bash", command),
        // A patch is an edit of the files it names, not a command.
        "apply_patch" => ("Edit", None),
        other => (other, command),
    };
    ToolRequest {
        tool: tool.to_owned(),
        kind,
        command,
        paths,
        resolved,
    }
}

pub(super) fn check_questions(questions: &[AskQuestion]) -> Result<(), ApiError> {
    let bad = |m: String| Err(ApiError::new(ErrorCode::InvalidInput, m));
    if questions.is_empty() || questions.len() > 8 {
        return bad("ask between 1 and 8 questions at a time".into());
    }
    for (i, q) in questions.iter().enumerate() {
        if q.question.trim().is_empty() {
            return bad(format!("question {} has no text", i + 1));
        }
        if q.header.chars().count() > 30 {
            return bad(format!(
                "question {}'s header '{}' is longer than 30 characters: shorten it",
                i + 1,
                q.header
            ));
        }
        if q.options.is_empty() && !q.custom {
            return bad(format!(
                "question {} has no options and no free-text answer: give options or allow custom",
                i + 1
            ));
        }
        overseer_core::questions::check_default(q).map_err(|e| {
            ApiError::new(ErrorCode::InvalidInput, format!("question {}: {e}", i + 1))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_core::session::AskOption;

    fn q(header: &str, options: &[&str], multiple: bool) -> AskQuestion {
        AskQuestion {
            header: header.into(),
            question: format!("{header}?"),
            options: options
                .iter()
                .map(|l| AskOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multiple,
            custom: true,
            default: None,
        }
    }

    #[test]
    fn a_form_answer_comes_back_per_question_with_only_offered_labels() {
        let qs = [
            q("Tone", &["Formal", "Friendly"], false),
            q("Parts", &["Install", "Usage"], true),
        ];
        let schema = question_schema(&qs);
        assert_eq!(
            schema["properties"]["question_0"]["oneOf"][1]["const"],
            "Friendly"
        );
        assert_eq!(schema["properties"]["question_1"]["type"], "array");
        let answers = answers_of(
            &qs,
            r#"{"question_0": "Friendly", "question_1": ["Usage", "Injected"], "question_1_custom": "a FAQ"}"#,
        );
        assert_eq!(answers[0].selected, vec!["Friendly"]);
        assert_eq!(
            answers[1].selected,
            vec!["Usage"],
            "a label nobody offered is not an answer"
        );
        assert_eq!(answers[1].custom.as_deref(), Some("a FAQ"));
        let plain = answers_of(&qs, "just do it");
        assert_eq!(plain[0].custom.as_deref(), Some("just do it"));
    }

    #[test]
    fn hook_tool_calls_read_as_the_rules_see_them() {
        let r = hook_tool_request("Bash", &json!({"command": "rm -rf build"}), "/nonexistent");
        assert_eq!(
            (r.kind.as_str(), r.command.as_deref()),
            ("execute", Some("rm -rf build"))
        );
        let r = hook_tool_request(
            "Write",
            &json!({"file_path": "/p/a.txt", "content": "x"}),
            "/p",
        );
        assert_eq!(
            (r.kind.as_str(), r.paths.clone()),
            ("edit", vec!["/p/a.txt".to_owned()])
        );
        let r = hook_tool_request("mcp__db__drop", &json!({}), "/p");
        assert_eq!(
            (r.tool.as_str(), r.kind.as_str()),
            ("mcp__db__drop", "other")
        );
        let r = hook_tool_request("exec_command", &json!({"cmd": "ls"}), "/p");
        assert_eq!(
            (r.tool.as_str(), r.command.as_deref()),
            ("Bash", Some("ls"))
        );
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: docs/new.md\n+hi\n*** End Patch";
        let r = hook_tool_request("apply_patch", &json!({"command": patch}), "/p");
        assert_eq!(r.tool, "Edit", "a patch is an edit for the rules");
        assert_eq!(
            r.paths,
            vec!["src/a.rs".to_owned(), "docs/new.md".to_owned()]
        );
    }

    #[test]
    fn questions_are_checked_before_anyone_is_asked() {
        assert!(check_questions(&[]).is_err());
        let long = q(
            "a header that is far longer than thirty characters",
            &["x"],
            false,
        );
        assert!(check_questions(&[long])
            .expect_err("too long")
            .message
            .contains("shorten"));
        let mut closed = q("Pick", &[], false);
        closed.custom = false;
        assert!(check_questions(&[closed]).is_err());
        assert!(check_questions(&[q("Pick", &["a"], false)]).is_ok());
    }
}

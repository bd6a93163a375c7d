//! `overseer questions`, `overseer messages`, `overseer sessions`: the
//! inbox and the hub from a terminal, with the window's parity (every
//! listing also as `--json`).

use crate::output::{age, inert};
use crate::{act, now_ms};
use anyhow::Context;
use overseer_core::message::{MessageStatus, MessageTo, MessageView};
use overseer_core::{GateChoice, GateKind, GateView, QuestionChoice, RunView};
use overseer_engine::Paths;
use overseer_server::api::op;
use serde_json::{json, Map, Value};
use std::fmt::Write;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum QuestionsCommand {
    /// Questions waiting for you (agents' asks, notices), from every run and session
    List {
        /// Answered ones too
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Answer a question: pick options per question, add your own words, or decline
    Answer {
        gate: overseer_core::GateId,
        /// An option of question N (1-based), by its label: `--choose 1=Friendly` (repeat for several)
        #[arg(long = "choose", value_name = "N=LABEL")]
        choose: Vec<String>,
        /// Your own words for question N: `--text 2="also a FAQ"`; for a notice or a plain question, just the text
        #[arg(long = "text", value_name = "[N=]TEXT")]
        text: Vec<String>,
        /// Do not answer (the agent is told you declined); for a notice: dismiss it
        #[arg(long, conflicts_with_all = ["choose", "text"])]
        decline: bool,
    },
}

#[derive(clap::Subcommand)]
pub enum MessagesCommand {
    /// Messages through the hub, oldest first (held-back ones marked)
    List {
        /// Only those a run sent or received (and broadcasts)
        #[arg(long)]
        run: Option<overseer_core::RunId>,
        #[arg(long)]
        json: bool,
    },
    /// Send a message to a run, or to every run (of a workspace, of a task)
    Send {
        #[arg(
            long,
            conflicts_with_all = ["broadcast", "workspace", "task"],
            required_unless_present_any = ["broadcast", "workspace", "task"]
        )]
        run: Option<overseer_core::RunId>,
        /// To every run (with --workspace or --task: every run there)
        #[arg(long)]
        broadcast: bool,
        /// To every run of this workspace (its name)
        #[arg(long, conflicts_with = "task")]
        workspace: Option<String>,
        /// To every run of this task
        #[arg(long)]
        task: Option<overseer_core::TaskId>,
        /// Answer message ID: the reply carries its correlation id
        #[arg(long, value_name = "ID")]
        reply_to: Option<i64>,
        /// The conversation this message belongs to
        #[arg(long, conflicts_with = "reply_to")]
        correlation_id: Option<String>,
        text: String,
    },
}

#[derive(clap::Subcommand)]
pub enum SessionsCommand {
    /// Agents that reached Overseer from outside (hooks, MCP) and launched runs, live ones
    List {
        /// Ended and stopped sessions too
        #[arg(long)]
        all: bool,
        /// Only sessions from outside Overseer
        #[arg(long)]
        external: bool,
        #[arg(long)]
        json: bool,
    },
}

pub async fn questions(paths: &Paths, cmd: QuestionsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        QuestionsCommand::List { all, json } => {
            // Every page: questions are among the gates.
            let (gates, _) = crate::gates::list_gates(paths, !all, Some(0), None).await?;
            let questions: Vec<GateView> = gates
                .into_iter()
                .filter(|g| g.kind() == GateKind::Question)
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&questions)?);
            } else {
                print!("{}", questions_table(&questions, now_ms()));
            }
        }
        QuestionsCommand::Answer {
            gate,
            choose,
            text,
            decline,
        } => {
            let g: GateView = act(paths, op::ShowGate { gate }).await?;
            if g.kind() != GateKind::Question {
                anyhow::bail!(
                    "gate {gate} is a {} gate, not a question: decide it with `overseer gates decide {gate} OPTION`",
                    g.kind().as_str()
                );
            }
            let (option, context) = if decline {
                (QuestionChoice::Decline, None)
            } else {
                (
                    QuestionChoice::Answer,
                    Some(answer_content(&g, &choose, &text)?),
                )
            };
            let decided: GateView = act(
                paths,
                op::DecideGate {
                    gate,
                    option: GateChoice::Question(option).into(),
                    context,
                },
            )
            .await?;
            print!("{}", crate::output::gate_detail(&decided));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The answer's form content from `--choose N=LABEL` and `--text [N=]TEXT`,
/// checked against the question's options.
fn answer_content(g: &GateView, choose: &[String], text: &[String]) -> anyhow::Result<String> {
    let props = g
        .body
        .question()
        .and_then(|q| q.schema["properties"].as_object());
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        // A notice or a plain question: the reply is text.
        let reply = text
            .iter()
            .map(|t| {
                t.split_once('=')
                    .filter(|(n, _)| n.parse::<usize>().is_ok())
                    .map_or(t.as_str(), |(_, v)| v)
            })
            .collect::<Vec<_>>()
            .join("\n");
        if reply.trim().is_empty() {
            anyhow::bail!("say what to answer: --text \"...\" (or --decline)");
        }
        return Ok(reply);
    };
    let mut content = Map::new();
    for c in choose {
        let (n, label) = numbered(c, "--choose")?;
        let field = format!("question_{}", n - 1);
        let spec = props.get(&field).with_context(|| {
            format!("question {n} has no options to choose from; use --text {n}=\"...\"")
        })?;
        let offered: Vec<&str> = spec["oneOf"]
            .as_array()
            .or_else(|| spec["items"]["anyOf"].as_array())
            .map(|a| a.iter().filter_map(|o| o["const"].as_str()).collect())
            .unwrap_or_default();
        if !offered.contains(&label) {
            anyhow::bail!(
                "question {n} offers {}; '{}' is not one of them",
                offered
                    .iter()
                    .map(|o| format!("'{}'", inert(o)))
                    .collect::<Vec<_>>()
                    .join(", "),
                inert(label)
            );
        }
        if spec["type"] == "array" {
            let list = content.entry(field).or_insert_with(|| json!([]));
            if let Some(a) = list.as_array_mut() {
                a.push(json!(label));
            }
        } else if content.insert(field, json!(label)).is_some() {
            anyhow::bail!("question {n} takes one option; choose once");
        }
    }
    for t in text {
        let (n, words) = numbered(t, "--text")?;
        let field = if props.contains_key(&format!("question_{}_custom", n - 1)) {
            format!("question_{}_custom", n - 1)
        } else {
            anyhow::bail!("question {n} does not take your own words; --choose one of its options")
        };
        content.insert(field, json!(words));
    }
    if content.is_empty() {
        anyhow::bail!("answer with --choose N=LABEL and/or --text N=TEXT (see `overseer questions list`), or --decline");
    }
    Ok(Value::Object(content).to_string())
}

fn numbered<'a>(arg: &'a str, flag: &str) -> anyhow::Result<(usize, &'a str)> {
    let (n, rest) = arg.split_once('=').with_context(|| {
        format!("{flag} takes N=VALUE, the question's number first (1 for the first)")
    })?;
    let n: usize = n
        .trim()
        .parse()
        .ok()
        .filter(|n| *n >= 1)
        .with_context(|| format!("{flag} {arg}: the question's number comes first, from 1"))?;
    Ok((n, rest))
}

fn questions_table(gates: &[GateView], now: i64) -> String {
    let mut out = String::new();
    for g in gates {
        let _ = writeln!(
            out,
            "gate {:>4}  run {:>4}  {:<8} {:>5}  {}",
            g.id,
            g.run_id,
            g.ask_kind.as_str(),
            age(g.opened_at, now),
            inert(&g.title)
        );
        let question = g.body.question();
        if let Some(props) = question.and_then(|q| q.schema["properties"].as_object()) {
            let mut n = 0;
            for (key, spec) in props {
                if key.ends_with("_custom") {
                    continue;
                }
                n += 1;
                let offered: Vec<String> = spec["oneOf"]
                    .as_array()
                    .or_else(|| spec["items"]["anyOf"].as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|o| o["const"].as_str().map(inert))
                            .collect()
                    })
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "    {n}. {}{}: {}",
                    inert(spec["description"].as_str().unwrap_or_default()),
                    if spec["type"] == "array" {
                        " (several)"
                    } else {
                        ""
                    },
                    offered.join(" | ")
                );
            }
        } else if let Some(m) = question
            .map(|q| q.message.as_str())
            .filter(|m| !m.is_empty() && *m != g.title)
        {
            let _ = writeln!(out, "    {}", inert(m));
        }
    }
    if gates.is_empty() {
        out.push_str("no questions wait for you\n");
    } else {
        out.push_str("answer: overseer questions answer GATE --choose 1=LABEL [--text 1=\"...\"] | --decline\n");
    }
    out
}

pub async fn messages(paths: &Paths, cmd: MessagesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        MessagesCommand::List { run, json } => {
            let list: Vec<MessageView> = act(paths, op::ListMessages { run, after: None }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                print!("{}", messages_table(&list, now_ms()));
            }
        }
        MessagesCommand::Send {
            run,
            broadcast,
            workspace,
            task,
            reply_to,
            correlation_id,
            text,
        } => {
            let to = match (run, broadcast, workspace, task) {
                (Some(run), false, None, None) => MessageTo::Run { run },
                (None, _, Some(workspace), None) => MessageTo::Workspace { workspace },
                (None, _, None, Some(task)) => MessageTo::Task { task },
                (None, true, None, None) => MessageTo::Broadcast,
                _ => anyhow::bail!(
                    "send to one run (--run N), to every run (--broadcast), or to every run of a workspace (--workspace W) or of a task (--task T)"
                ),
            };
            let correlation_id = match reply_to {
                Some(id) => {
                    let all: Vec<MessageView> = act(
                        paths,
                        op::ListMessages {
                            run: None,
                            after: Some(id - 1),
                        },
                    )
                    .await?;
                    let original = all.into_iter().find(|m| m.id == id).with_context(|| {
                        format!("no message {id}: see `overseer messages list`")
                    })?;
                    Some(
                        original
                            .correlation_id
                            .unwrap_or_else(|| format!("message-{id}")),
                    )
                }
                None => correlation_id,
            };
            let sent: MessageView = act(
                paths,
                op::SendMessage {
                    to,
                    body: text,
                    correlation_id,
                },
            )
            .await?;
            println!("message {} sent to {}", sent.id, recipient(&sent.to));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn recipient(to: &MessageTo) -> String {
    match to {
        MessageTo::Supervisor => "the supervisor".into(),
        MessageTo::User => "you".into(),
        MessageTo::Broadcast => "every run".into(),
        MessageTo::Workspace { workspace } => {
            format!("every run of workspace {}", inert(workspace))
        }
        MessageTo::Task { task } => format!("every run of task {task}"),
        MessageTo::Run { run } => format!("run {run}"),
    }
}

fn messages_table(list: &[MessageView], now: i64) -> String {
    let mut out = String::new();
    for m in list {
        let from = match m.from_run {
            Some(run) => format!("run {run}"),
            None => inert(&m.from),
        };
        let held = match (m.status, &m.blocked_reason) {
            (MessageStatus::Blocked, Some(why)) => format!("  HELD BACK: {}", inert(why)),
            (MessageStatus::Blocked, None) => "  HELD BACK".into(),
            (MessageStatus::Delivered, _) => String::new(),
        };
        let _ = writeln!(
            out,
            "{:>5}  {:>5}  {} -> {}{}{}",
            m.id,
            age(m.at, now),
            from,
            recipient(&m.to),
            m.correlation_id
                .as_deref()
                .map(|c| format!(" [{}]", inert(c)))
                .unwrap_or_default(),
            held
        );
        for line in m.body.lines() {
            let _ = writeln!(out, "         {}", inert(line));
        }
    }
    if list.is_empty() {
        out.push_str("no messages\n");
    }
    out
}

pub async fn sessions(paths: &Paths, cmd: SessionsCommand) -> anyhow::Result<ExitCode> {
    let SessionsCommand::List {
        all,
        external,
        json,
    } = cmd;
    let runs: Vec<RunView> = act(paths, op::ListRuns {}).await?;
    let shown: Vec<RunView> = runs
        .into_iter()
        .filter(|r| all || !r.state.is_released())
        .filter(|r| !external || r.origin.is_external())
        .collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
        return Ok(ExitCode::SUCCESS);
    }
    let now = now_ms();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<10} {:<13} {:<14} {:<24} WHERE",
        "RUN", "", "FROM", "AGENT", "STATE"
    );
    for r in &shown {
        let place = match &r.session {
            Some(s) => format!("{} (session {})", inert(&s.cwd), inert(&s.session_id)),
            None => format!("{}: {}", inert(&r.workspace), inert(&r.task_title)),
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<10} {:<13} {:<14} {:<24} {}",
            r.id,
            if r.needs_you { "NEEDS YOU" } else { "" },
            r.origin.label(),
            inert(&r.agent),
            format!(
                "{} {}",
                crate::output::state_label(r),
                age(r.state_since, now)
            ),
            place
        );
    }
    if shown.is_empty() {
        out.push_str(
            "no sessions: launch a run, or install the hooks (`overseer hook install claude`)\n",
        );
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use overseer_core::{AskKind, GateBody, GateStatus, QuestionGate};

    pub(crate) fn question_gate() -> GateView {
        GateView {
            id: overseer_core::GateId(4),
            run_id: overseer_core::RunId(2),
            body: GateBody::Question(QuestionGate {
                message: "Which tone?".into(),
                schema: json!({"type": "object", "properties": {
                    "question_0": {"type": "string", "description": "Which tone?", "oneOf": [{"const": "Formal"}, {"const": "Friendly"}]},
                    "question_0_custom": {"type": "string"},
                    "question_1": {"type": "array", "description": "Parts?", "items": {"anyOf": [{"const": "Install"}, {"const": "Usage"}]}}
                }}),
                questions: Vec::new(),
                ask_kind: None,
                notice: None,
            }),
            unreadable_payload: None,
            status: GateStatus::Pending,
            title: "Which tone?".into(),
            options: vec![],
            opened_at: 0,
            decision: None,
            auto_at: None,
            auto_option: None,
            authority: None,
            effected: false,
            ask_kind: AskKind::Blocking,
            batch_option: None,
            pending_effect: None,
            snoozed_until: None,
            advice: None,
        }
    }

    #[test]
    fn answers_are_built_from_numbered_choices_and_checked_against_the_options() {
        let g = question_gate();
        let content = answer_content(
            &g,
            &["1=Friendly".into(), "2=Install".into(), "2=Usage".into()],
            &["1=and short".into()],
        )
        .expect("answer");
        let v: Value = serde_json::from_str(&content).expect("json");
        assert_eq!(v["question_0"], "Friendly");
        assert_eq!(v["question_1"], json!(["Install", "Usage"]));
        assert_eq!(v["question_0_custom"], "and short");
        let err = answer_content(&g, &["1=Rude".into()], &[]).expect_err("not offered");
        assert!(err.to_string().contains("'Formal', 'Friendly'"), "{err}");
        assert!(
            answer_content(&g, &["Friendly".into()], &[]).is_err(),
            "the number comes first"
        );
        assert!(
            answer_content(&g, &[], &["2=words".into()]).is_err(),
            "question 2 takes no words"
        );
    }

    #[test]
    fn a_notice_is_answered_with_plain_text() {
        let mut g = question_gate();
        g.body = GateBody::Question(QuestionGate {
            message: "Claude finished".into(),
            schema: serde_json::Value::Null,
            questions: Vec::new(),
            ask_kind: Some(AskKind::Info),
            notice: None,
        });
        assert_eq!(
            answer_content(&g, &[], &["go on with the tests".into()]).expect("reply"),
            "go on with the tests"
        );
        assert!(answer_content(&g, &[], &[]).is_err());
    }
}

//! The tools `overseer mcp` offers: their schemas and descriptions (what a
//! model reads), the checks on a call's arguments (each failure says what to
//! fix), and the rendering of Overseer's answer as a tool result (text for
//! the model and `structuredContent` matching the output schema).
//!
//! Pure: no I/O, so every rule here is unit tested.

use overseer_core::message::{MessageStatus, MessageTo, MessageView};
use overseer_core::session::{
    AskOption, AskQuestion, PlanStepInput, PlanVerdict, QuestionsAction, SessionAnswer, SessionAsk,
    StepVerdict, CONSULT_TIMEOUT_MAX, CONSULT_TIMEOUT_MIN, QUESTION_EXPIRY_MAX,
    QUESTION_EXPIRY_MIN,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub const ASK_USER: &str = "ask_user";
pub const REQUEST_PLAN_APPROVAL: &str = "request_plan_approval";
pub const REPORT_STEP: &str = "report_step";
pub const SEND_MESSAGE: &str = "send_message";
pub const READ_MESSAGES: &str = "read_messages";
pub const CONSULT: &str = "consult";

/// Longest question header: a tab label in the inbox.
pub const MAX_HEADER: usize = 30;
pub const MAX_QUESTIONS: usize = 8;
pub const MAX_OPTIONS: usize = 20;
/// Longest free text in any one field (a question, a goal, a summary, a
/// message body); the engine's line limit is far above what this allows.
pub const MAX_TEXT: usize = 20_000;
pub const MAX_LIST: usize = 200;

/// One tool as listed: name, title, description, input and output schemas,
/// and whether it only reads.
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input: Value,
    pub output: Value,
    pub read_only: bool,
}

fn nullable(t: &str) -> Value {
    json!({"type": [t, "null"]})
}

fn message_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer", "description": "The message id (pass the last one you saw as read_messages' `after`)."},
            "from_run": {"type": ["integer", "null"], "description": "The run that sent it; null for the user or the supervisor."},
            "from": {"type": "string", "description": "Who sent it: agent:<name>, user:<where>, supervisor."},
            "to": {
                "type": "object",
                "properties": {
                    "to": {"type": "string", "enum": ["supervisor", "user", "broadcast", "run"]},
                    "run": {"type": "integer"}
                },
                "required": ["to"]
            },
            "body": {"type": "string"},
            "correlation_id": nullable("string"),
            "status": {"type": "string", "enum": ["delivered", "blocked"]},
            "blocked_reason": nullable("string"),
            "at": {"type": "integer", "description": "Milliseconds since the Unix epoch."}
        },
        "required": ["id", "from", "to", "body", "status", "at"]
    })
}

/// Every tool, in the order they are listed.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: ASK_USER,
            title: "Ask the user",
            description: "Ask the user one or more questions through Overseer (the app that supervises coding agents) \
and wait for the answers. Use it when you need a decision or information only the user has: which approach, \
which name, whether something may be removed. Batch related questions in one call (each becomes a tab); give \
each a short header (at most 30 characters, e.g. \"Database\"), the full question, and the likely answers as \
options (label plus an optional one-line description). Set multiple: true when several options may be chosen, \
custom: false when only the options are acceptable (by default the user may also answer in their own words). \
The call blocks until the user answers; this can take minutes. The result says for each question which option \
labels were chosen and any words the user typed; action is \"declined\" when the user chose not to answer \
(go on with your best judgment and say so) and \"cancelled\" when nobody answered. Questions expire (after \
expires_in_seconds, else after the task's or Overseer's default): give a question a default (one of its option \
labels) and an unanswered question takes it (action \"defaulted\"); without defaults it is declined.",
            input: schema_of::<AskUserArgs>(),
            output: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["answered", "declined", "cancelled", "defaulted"]},
                    "answers": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "header": {"type": "string"},
                                "question": {"type": "string"},
                                "selected": {"type": "array", "items": {"type": "string"}, "description": "The labels of the options chosen."},
                                "custom": {"type": ["string", "null"], "description": "The user's own words, if any."}
                            },
                            "required": ["header", "question", "selected"]
                        }
                    }
                },
                "required": ["action", "answers"]
            }),
            read_only: false,
        },
        ToolSpec {
            name: REQUEST_PLAN_APPROVAL,
            title: "Request plan approval",
            description: "Ask the user (through Overseer) to approve your plan before you change anything, and wait \
for the verdict. Give the goal in one or two sentences, the steps in order (a short title each), and optionally \
the files you expect to touch and the risks you see. The call blocks until the user decides. The verdict is \
\"approved\" (carry out this plan), \"changes_requested\" with feedback (revise the plan accordingly and call \
this tool again) or \"rejected\" with an optional reason (do not carry it out; stop or ask what to do instead).",
            input: json!({
                "type": "object",
                "properties": {
                    "goal": {"type": "string", "minLength": 1, "description": "What the plan achieves, in one or two sentences."},
                    "steps": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_LIST,
                        "description": "The steps in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "title": {"type": "string", "minLength": 1, "description": "What the step does, in a short sentence."},
                                "agent": {"type": "string", "description": "Who does it, if not you (another agent's name)."}
                            },
                            "required": ["title"]
                        }
                    },
                    "files": {"type": "array", "maxItems": MAX_LIST, "items": {"type": "string"}, "description": "Paths you expect to create or change."},
                    "risks": {"type": "array", "maxItems": MAX_LIST, "items": {"type": "string"}, "description": "What could go wrong, one risk per entry."}
                },
                "required": ["goal", "steps"]
            }),
            output: json!({
                "type": "object",
                "properties": {
                    "verdict": {"type": "string", "enum": ["approved", "changes_requested", "rejected"]},
                    "feedback": {"type": "string", "description": "With changes_requested: what to change."},
                    "reason": {"type": ["string", "null"], "description": "With rejected: why, if the user said."}
                },
                "required": ["verdict"]
            }),
            read_only: false,
        },
        ToolSpec {
            name: REPORT_STEP,
            title: "Report a finished step",
            description: "Report a step of your work you just finished (or could not finish) to Overseer and wait for \
the supervisor's verdict before going on. Give the step's title, its status (done, failed or blocked), a short \
summary of what you did and found, and the files you touched. The verdict is CONTINUE (go on with the next \
step), REORIENT with a correction (follow the correction before going on) or PAUSE with a reason (stop working \
and wait for the user; tell them why you stopped).",
            input: json!({
                "type": "object",
                "properties": {
                    "step": {"type": "string", "minLength": 1, "description": "The step's title (as in your plan)."},
                    "status": {"type": "string", "minLength": 1, "maxLength": 40, "description": "done, failed or blocked."},
                    "summary": {"type": "string", "minLength": 1, "description": "What you did and what you found, briefly."},
                    "files_touched": {"type": "array", "maxItems": MAX_LIST, "items": {"type": "string"}, "description": "Paths you created or changed in this step."}
                },
                "required": ["step", "status", "summary"]
            }),
            output: json!({
                "type": "object",
                "properties": {
                    "verdict": {"type": "string", "enum": ["CONTINUE", "REORIENT", "PAUSE"]},
                    "correction": {"type": "string", "description": "With REORIENT: what to do differently."},
                    "reason": {"type": "string", "description": "With PAUSE: why to stop."}
                },
                "required": ["verdict"]
            }),
            read_only: false,
        },
        ToolSpec {
            name: SEND_MESSAGE,
            title: "Send a message",
            description: "Send a message through Overseer's hub to the supervisor, to the user, or as a broadcast to \
every agent Overseer runs in your workspace (never beyond it). You cannot address another agent directly. To reply to a message, pass its \
correlation_id (or, if it has none, its id as a string). Returns the stored message at once (it does not wait \
for a reply; read replies with read_messages); status \"blocked\" means Overseer's policy held it back, with the \
reason.",
            input: json!({
                "type": "object",
                "properties": {
                    "to": {"type": "string", "enum": ["supervisor", "user", "broadcast"], "description": "Who the message is for."},
                    "body": {"type": "string", "minLength": 1, "description": "The message."},
                    "correlation_id": {"type": "string", "description": "The conversation this belongs to (a reply carries the id of what it answers)."}
                },
                "required": ["to", "body"]
            }),
            output: json!({
                "type": "object",
                "properties": {"message": message_schema()},
                "required": ["message"]
            }),
            read_only: false,
        },
        ToolSpec {
            name: READ_MESSAGES,
            title: "Read messages",
            description: "Read the messages addressed to you (replies from the user or the supervisor, and \
broadcasts), oldest first. Returns at once. Pass after (the id of the last message you have seen) to get only \
newer ones.",
            input: json!({
                "type": "object",
                "properties": {
                    "after": {"type": "integer", "minimum": 0, "description": "Only messages with a greater id."}
                }
            }),
            output: json!({
                "type": "object",
                "properties": {"messages": {"type": "array", "items": message_schema()}},
                "required": ["messages"]
            }),
            read_only: true,
        },
        ToolSpec {
            name: CONSULT,
            title: "Consult another agent",
            description: "Ask another agent (an agent profile the user configured in Overseer, e.g. a reviewer or a \
specialist) a question about your work, and wait for its answer. It works read-only on a snapshot of your \
repository as it is now, uncommitted changes included: it can read and search but not change files, and its \
shell commands wait for the user's permission. Ask one self-contained question (it does not see this \
conversation: say what you are doing and what you need to know). The call blocks until it answers, at most \
timeout_seconds (default 600); the result is its answer as it said it, the run that answered (the user sees it \
as a child of yours in Overseer) and what it cost when its agent reports a cost. timed_out true means no \
answer came in time: it was stopped; go on without it. Only agents Overseer launched can consult, and a \
consulted agent cannot consult in turn.",
            input: schema_of::<ConsultArgs>(),
            output: schema_of::<ConsultResult>(),
            read_only: false,
        },
    ]
}

/// Whether the tool's ask waits for a human (and so has a key and shows a
/// gate) rather than answering at once.
pub fn blocks(tool: &str) -> bool {
    matches!(
        tool,
        ASK_USER | REQUEST_PLAN_APPROVAL | REPORT_STEP | CONSULT
    )
}

/// Whether asking again after a lost connection is safe: a keyed ask finds
/// its gate again, reading changes nothing; a message sent twice would be
/// stored twice, and a consultation asked again starts another.
pub fn retryable(tool: &str) -> bool {
    tool != SEND_MESSAGE && tool != CONSULT
}

/// A tool's input or output schema, derived from its Rust type (nested
/// types inline, as models read them best).
fn schema_of<T: schemars::JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = schema.to_value();
    if let Some(o) = v.as_object_mut() {
        o.remove("title");
    }
    v
}

fn yes() -> bool {
    true
}

/// `ask_user`'s arguments (its input schema is derived from this type).
#[derive(Deserialize, schemars::JsonSchema)]
struct AskUserArgs {
    /// The questions, asked together (one tab each).
    #[schemars(length(min = 1, max = MAX_QUESTIONS))]
    questions: Vec<AskUserQuestion>,
    /// How long the questions wait for the user, in seconds: 10 to 604800
    /// (7 days). When it passes unanswered, the questions' defaults are the
    /// answers (action "defaulted"), or they are declined when none has a
    /// default. Leave it out to use the task's or Overseer's default expiry.
    #[serde(default)]
    #[schemars(range(min = QUESTION_EXPIRY_MIN, max = QUESTION_EXPIRY_MAX))]
    expires_in_seconds: Option<u64>,
}

/// One question of `ask_user`.
#[derive(Deserialize, schemars::JsonSchema)]
struct AskUserQuestion {
    /// A short label for the question's tab, at most 30 characters, unique in this call.
    #[schemars(length(min = 1, max = MAX_HEADER))]
    header: String,
    /// The full question, as you would ask it.
    #[schemars(length(min = 1))]
    question: String,
    /// The likely answers. May be empty when the question wants the user's own words.
    #[serde(default)]
    #[schemars(length(max = MAX_OPTIONS))]
    options: Vec<AskUserOption>,
    /// Several options may be chosen.
    #[serde(default)]
    multiple: bool,
    /// The user may answer in their own words as well.
    #[serde(default = "yes")]
    custom: bool,
    /// The answer taken if the question expires unanswered: one of the
    /// options' labels (or, without options, the words to use).
    #[serde(default)]
    default: Option<String>,
}

/// One likely answer.
#[derive(Deserialize, schemars::JsonSchema)]
struct AskUserOption {
    /// What the user picks (returned in `selected`).
    #[schemars(length(min = 1))]
    label: String,
    /// One line on what picking it means.
    #[serde(default)]
    description: Option<String>,
}

/// `consult`'s arguments (its input schema is derived from this type).
#[derive(Deserialize, schemars::JsonSchema)]
struct ConsultArgs {
    /// The agent profile to ask: a name from the user's Overseer
    /// configuration (the user tells you which exist; a wrong name is
    /// answered with the list).
    #[schemars(length(min = 1, max = 64))]
    profile: String,
    /// The question, self-contained: what you are doing, what you need to
    /// know, and where to look.
    #[schemars(length(min = 1, max = MAX_TEXT))]
    question: String,
    /// How long to wait for the answer, in seconds: 5 to 3600. Leave it out
    /// for 600. When it passes, the consulted agent is stopped and
    /// timed_out is true.
    #[serde(default)]
    #[schemars(range(min = CONSULT_TIMEOUT_MIN, max = CONSULT_TIMEOUT_MAX))]
    timeout_seconds: Option<u64>,
}

/// `consult`'s result (its output schema is derived from this type).
#[derive(Serialize, schemars::JsonSchema)]
struct ConsultResult {
    /// The consulted agent's answer, as it said it (or, when timed_out,
    /// that none came).
    text: String,
    /// The Overseer run that answered: a child of yours, with its own
    /// timeline and cost.
    run: i64,
    /// What the consultation cost, when its agent reports a cost.
    cost: Option<ConsultCost>,
    /// No answer came in time: the consulted agent was stopped.
    timed_out: bool,
}

/// A cost as the consulted agent reported it.
#[derive(Serialize, schemars::JsonSchema)]
struct ConsultCost {
    amount: f64,
    /// An ISO 4217 code such as USD, or another unit such as credits.
    currency: String,
}

#[derive(Deserialize)]
struct PlanArgs {
    goal: String,
    steps: Vec<PlanStepInput>,
    #[serde(default)]
    files: Option<Vec<String>>,
    #[serde(default)]
    risks: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct StepArgs {
    step: String,
    status: String,
    summary: String,
    #[serde(default)]
    files_touched: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct SendArgs {
    to: String,
    body: String,
    #[serde(default)]
    correlation_id: Option<String>,
}

#[derive(Deserialize)]
struct ReadArgs {
    #[serde(default)]
    after: Option<i64>,
}

/// Some models send an array argument as a JSON string (`"[{...}]"`): read
/// such a string as the array it spells, so the call is not wasted.
fn unquote_arrays(args: &mut Map<String, Value>) {
    for v in args.values_mut() {
        if let Value::String(s) = v {
            if s.trim_start().starts_with('[') {
                if let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(s) {
                    *v = parsed;
                }
            }
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: Option<Map<String, Value>>,
) -> Result<T, String> {
    let mut args = args.unwrap_or_default();
    unquote_arrays(&mut args);
    serde_json::from_value(Value::Object(args)).map_err(|e| {
        format!("{tool}: the arguments do not match its input schema: {e}. Fix them and call {tool} again.")
    })
}

fn text(tool: &str, field: &str, value: &str) -> Result<String, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(format!(
            "{tool}: {field} is empty; say it in words and call {tool} again."
        ));
    }
    let n = trimmed.chars().count();
    if n > MAX_TEXT {
        return Err(format!(
            "{tool}: {field} is {n} characters; keep it under {MAX_TEXT} (summarize, or point to a file) and call {tool} again."
        ));
    }
    Ok(trimmed.to_owned())
}

fn list(tool: &str, field: &str, items: Option<Vec<String>>) -> Result<Vec<String>, String> {
    let items = items.unwrap_or_default();
    if items.len() > MAX_LIST {
        return Err(format!(
            "{tool}: {field} has {} entries; give at most {MAX_LIST} and call {tool} again.",
            items.len()
        ));
    }
    items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.chars().count() > MAX_TEXT {
                Err(format!("{tool}: an entry of {field} is too long; keep each under {MAX_TEXT} characters."))
            } else {
                Ok(s)
            }
        })
        .collect()
}

/// The engine ask for a call of `tool` with `args`, or what to fix.
/// `key` is the call's own id (for the asks that open a gate).
pub fn to_ask(
    tool: &str,
    args: Option<Map<String, Value>>,
    key: String,
) -> Result<SessionAsk, String> {
    match tool {
        ASK_USER => {
            let a: AskUserArgs = parse(tool, args)?;
            if let Some(secs) = a.expires_in_seconds {
                overseer_core::questions::check_expiry(secs)
                    .map_err(|e| format!("{tool}: {e}; fix it and call {tool} again."))?;
            }
            Ok(SessionAsk::Questions {
                key: Some(key),
                questions: questions(a.questions)?,
                expires_in_seconds: a.expires_in_seconds,
            })
        }
        REQUEST_PLAN_APPROVAL => plan_ask(tool, args, key),
        REPORT_STEP => step_ask(tool, args, key),
        SEND_MESSAGE => message_ask(tool, args),
        READ_MESSAGES => {
            let a: ReadArgs = parse(tool, args)?;
            if a.after.is_some_and(|n| n < 0) {
                return Err(format!("{tool}: after must be a message id (0 or more); leave it out to read from the start."));
            }
            Ok(SessionAsk::ReadMessages { after: a.after })
        }
        CONSULT => {
            let a: ConsultArgs = parse(tool, args)?;
            let profile = text(tool, "profile", &a.profile)?;
            if let Some(secs) = a.timeout_seconds {
                overseer_core::session::check_consult_timeout(secs)
                    .map_err(|e| format!("{tool}: {e}; fix it and call {tool} again."))?;
            }
            Ok(SessionAsk::Consult {
                profile,
                question: text(tool, "question", &a.question)?,
                timeout_seconds: a.timeout_seconds,
            })
        }
        other => Err(format!(
            "there is no tool named {other:?}; the tools are {ASK_USER}, {REQUEST_PLAN_APPROVAL}, {REPORT_STEP}, {SEND_MESSAGE}, {READ_MESSAGES} and {CONSULT}."
        )),
    }
}

/// A plan to approve: its goal, each step's title (and agent), files and
/// risks, checked.
fn plan_ask(
    tool: &str,
    args: Option<Map<String, Value>>,
    key: String,
) -> Result<SessionAsk, String> {
    let a: PlanArgs = parse(tool, args)?;
    if a.steps.is_empty() {
        return Err(format!("{tool}: steps is empty; list the plan's steps in order (a title each) and call {tool} again."));
    }
    if a.steps.len() > MAX_LIST {
        return Err(format!(
            "{tool}: the plan has {} steps; group them into at most {MAX_LIST} and call {tool} again.",
            a.steps.len()
        ));
    }
    let steps = a
        .steps
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            Ok(PlanStepInput {
                agent: s
                    .agent
                    .map(|a| a.trim().to_owned())
                    .filter(|a| !a.is_empty()),
                title: text(tool, &format!("steps[{i}].title"), &s.title)?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(SessionAsk::Plan {
        key: Some(key),
        goal: text(tool, "goal", &a.goal)?,
        steps,
        files: list(tool, "files", a.files)?,
        risks: list(tool, "risks", a.risks)?,
    })
}

/// A step reported done, failed or blocked, with its summary and files.
fn step_ask(
    tool: &str,
    args: Option<Map<String, Value>>,
    key: String,
) -> Result<SessionAsk, String> {
    let a: StepArgs = parse(tool, args)?;
    let status = text(tool, "status", &a.status)?;
    if status.chars().count() > 40 {
        return Err(format!("{tool}: status is a word or two (done, failed or blocked); put the details in summary and call {tool} again."));
    }
    Ok(SessionAsk::ReportStep {
        key: Some(key),
        step: text(tool, "step", &a.step)?,
        status,
        summary: text(tool, "summary", &a.summary)?,
        files_touched: list(tool, "files_touched", a.files_touched)?,
    })
}

/// A message to the supervisor, the user or the workspace's agents.
fn message_ask(tool: &str, args: Option<Map<String, Value>>) -> Result<SessionAsk, String> {
    let a: SendArgs = parse(tool, args)?;
    let to = match a.to.trim().to_ascii_lowercase().as_str() {
        "supervisor" => MessageTo::Supervisor,
        "user" => MessageTo::User,
        "broadcast" => MessageTo::Broadcast,
        other => {
            return Err(format!(
                "{tool}: to is {other:?}; it must be \"supervisor\", \"user\" or \"broadcast\" (you cannot address another agent directly; broadcast reaches every agent of your workspace)."
            ))
        }
    };
    Ok(SessionAsk::SendMessage {
        to,
        body: text(tool, "body", &a.body)?,
        correlation_id: a
            .correlation_id
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty()),
    })
}

fn questions(qs: Vec<AskUserQuestion>) -> Result<Vec<AskQuestion>, String> {
    let tool = ASK_USER;
    if qs.is_empty() {
        return Err(format!(
            "{tool}: questions is empty; give at least one question and call {tool} again."
        ));
    }
    if qs.len() > MAX_QUESTIONS {
        return Err(format!(
            "{tool}: {} questions in one call; ask at most {MAX_QUESTIONS} (the most important first) and call {tool} again.",
            qs.len()
        ));
    }
    let mut headers: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(qs.len());
    for (i, q) in qs.into_iter().enumerate() {
        let header = text(tool, &format!("questions[{i}].header"), &q.header)?;
        let n = header.chars().count();
        if n > MAX_HEADER {
            return Err(format!(
                "{tool}: questions[{i}].header {header:?} is {n} characters; a header is a tab label of at most {MAX_HEADER} characters (e.g. \"Database\"). Shorten it, keep the detail in question, and call {tool} again."
            ));
        }
        if headers.iter().any(|h| h.eq_ignore_ascii_case(&header)) {
            return Err(format!(
                "{tool}: two questions have the header {header:?}; give each question its own header and call {tool} again."
            ));
        }
        headers.push(header.clone());
        let question = text(tool, &format!("questions[{i}].question"), &q.question)?;
        if q.options.len() > MAX_OPTIONS {
            return Err(format!(
                "{tool}: questions[{i}] has {} options; offer at most {MAX_OPTIONS} and call {tool} again.",
                q.options.len()
            ));
        }
        let mut options = Vec::with_capacity(q.options.len());
        for (j, o) in q.options.into_iter().enumerate() {
            let label = text(
                tool,
                &format!("questions[{i}].options[{j}].label"),
                &o.label,
            )?;
            if options.iter().any(|p: &AskOption| p.label == label) {
                return Err(format!(
                    "{tool}: questions[{i}] offers the option {label:?} twice; make the labels distinct and call {tool} again."
                ));
            }
            options.push(AskOption {
                label,
                description: o
                    .description
                    .map(|d| d.trim().to_owned())
                    .filter(|d| !d.is_empty()),
            });
        }
        if options.is_empty() && !q.custom {
            return Err(format!(
                "{tool}: questions[{i}] has no options and does not allow a custom answer, so it cannot be answered; add options or set custom to true, and call {tool} again."
            ));
        }
        let q = AskQuestion {
            header,
            question,
            options,
            multiple: q.multiple,
            custom: q.custom,
            default: q.default.map(|d| d.trim().to_owned()),
        };
        overseer_core::questions::check_default(&q)
            .map_err(|e| format!("{tool}: questions[{i}]: {e}; fix it and call {tool} again."))?;
        out.push(q);
    }
    Ok(out)
}

/// A tool's result: text for the model, the structured answer (absent on
/// errors), and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub text: String,
    pub structured: Option<Value>,
    pub is_error: bool,
}

impl Outcome {
    pub fn error(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            structured: None,
            is_error: true,
        }
    }
}

/// The answer as `structuredContent`: the engine's answer without its tag.
fn structured(answer: &SessionAnswer) -> Option<Value> {
    let mut v = serde_json::to_value(answer).ok()?;
    v.as_object_mut()?.remove("answer");
    Some(v)
}

fn quote(s: &str) -> String {
    // The user's words, set apart from ours for the model.
    format!("\"{}\"", s.replace('"', "\\\""))
}

fn describe_message(m: &MessageView) -> String {
    let to = match &m.to {
        MessageTo::Supervisor => "the supervisor".to_owned(),
        MessageTo::User => "the user".to_owned(),
        MessageTo::Broadcast => "everyone".to_owned(),
        MessageTo::Workspace { workspace } => format!("every run of workspace {workspace}"),
        MessageTo::Task { task } => format!("every run of task {task}"),
        MessageTo::Run { run } => format!("run {run}"),
    };
    let corr = m
        .correlation_id
        .as_deref()
        .map(|c| format!(" (correlation_id {c})"))
        .unwrap_or_default();
    format!("#{} from {} to {to}{corr}: {}", m.id, m.from, m.body)
}

/// The tool result for `tool` given Overseer's `answer`.
pub fn render(tool: &str, answer: SessionAnswer) -> Outcome {
    let data = structured(&answer);
    let text = match (tool, &answer) {
        (ASK_USER, SessionAnswer::Questions { action, answers }) => match action {
            QuestionsAction::Answered | QuestionsAction::Defaulted => answered(*action, answers),
            QuestionsAction::Declined => "The user declined to answer these questions. Do not ask them again; go on with your best judgment and say which assumptions you made.".to_owned(),
            QuestionsAction::Cancelled => "Nobody answered (the questions were withdrawn or expired without defaults). Go on with your best judgment and say which assumptions you made, or ask again later.".to_owned(),
        },
        (REQUEST_PLAN_APPROVAL, SessionAnswer::Plan { verdict }) => match verdict {
            PlanVerdict::Approved => "The plan was approved. Carry it out.".to_owned(),
            PlanVerdict::ChangesRequested { feedback } => format!(
                "Changes were requested: {}\nRevise the plan accordingly and call request_plan_approval again before changing anything.",
                quote(feedback)
            ),
            PlanVerdict::Rejected { reason } => match reason.as_deref().filter(|r| !r.trim().is_empty()) {
                Some(r) => format!("The plan was rejected: {}\nDo not carry it out.", quote(r)),
                None => "The plan was rejected. Do not carry it out.".to_owned(),
            },
        },
        (REPORT_STEP, SessionAnswer::Step { verdict }) => match verdict {
            StepVerdict::Continue => "CONTINUE: go on with the next step.".to_owned(),
            StepVerdict::Reorient { correction } => format!(
                "REORIENT: {}\nFollow this correction before going on.",
                quote(correction)
            ),
            StepVerdict::Pause { reason } => format!(
                "PAUSE: {}\nStop working now and wait for the user; tell them why you stopped.",
                quote(reason)
            ),
        },
        (SEND_MESSAGE, SessionAnswer::Message { message }) => match message.status {
            MessageStatus::Delivered => {
                format!("Sent: {}", describe_message(message))
            }
            MessageStatus::Blocked => format!(
                "Overseer's policy held this message back ({}). It was stored for the user but not delivered: {}",
                message.blocked_reason.as_deref().unwrap_or("no reason given"),
                describe_message(message)
            ),
        },
        (READ_MESSAGES, SessionAnswer::Messages { messages }) => messages_read(messages),
        (
            CONSULT,
            SessionAnswer::Consult {
                text,
                run,
                cost,
                timed_out,
            },
        ) => return consulted(text, run, cost.as_ref(), *timed_out),
        _ => {
            return Outcome::error(format!(
                "Overseer answered {tool} with something else ({}); this is a bug in Overseer. Ask the user directly instead.",
                data.as_ref().map(|d| d.to_string()).unwrap_or_default()
            ))
        }
    };
    Outcome {
        text,
        structured: data,
        is_error: false,
    }
}

/// What the agent is told of the answers to its questions, given by the
/// user or defaulted.
fn answered(action: QuestionsAction, answers: &[overseer_core::session::QuestionAnswer]) -> String {
    let mut t = String::from(if action == QuestionsAction::Answered {
        "The user answered:"
    } else {
        "Nobody answered before the questions expired; your defaults apply (the user did not choose them):"
    });
    for a in answers {
        t.push_str(&format!("\n- {} ({}): ", a.header, a.question));
        let mut parts = Vec::new();
        if !a.selected.is_empty() {
            parts.push(format!(
                "chose {}",
                a.selected
                    .iter()
                    .map(|s| quote(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if let Some(c) = a.custom.as_deref().filter(|c| !c.trim().is_empty()) {
            parts.push(format!("wrote {}", quote(c)));
        }
        if parts.is_empty() {
            parts.push("no answer".to_owned());
        }
        t.push_str(&parts.join("; "));
    }
    t
}

/// What the agent is told of the messages it read.
fn messages_read(messages: &[MessageView]) -> String {
    if messages.is_empty() {
        "No new messages.".to_owned()
    } else {
        let mut t = format!("{} message(s), oldest first:", messages.len());
        for m in messages {
            t.push('\n');
            t.push_str(&describe_message(m));
        }
        if let Some(last) = messages.last() {
            t.push_str(&format!(
                "\nNext time pass after: {} to read only newer ones.",
                last.id
            ));
        }
        t
    }
}

/// What the agent is told of the agent it consulted: its answer, or that
/// it took too long.
fn consulted(
    text: &str,
    run: &overseer_core::RunId,
    cost: Option<&overseer_core::usage::RunCost>,
    timed_out: bool,
) -> Outcome {
    let result = ConsultResult {
        text: text.to_owned(),
        run: run.0,
        cost: cost.map(|c| ConsultCost {
            amount: c.amount,
            currency: c.currency.clone(),
        }),
        timed_out,
    };
    let spent = cost
        .map(|c| format!(", cost {}", overseer_core::format_cost(c)))
        .unwrap_or_default();
    let said = if timed_out {
        format!("{text} Go on without it (run {run}{spent}).")
    } else {
        format!("The consulted agent (run {run}{spent}) answered:\n{text}")
    };
    Outcome {
        text: said,
        structured: serde_json::to_value(result).ok(),
        is_error: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_core::session::QuestionAnswer;

    fn args(v: Value) -> Option<Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    #[test]
    fn ask_user_is_checked_with_what_to_fix() {
        let long = to_ask(
            ASK_USER,
            args(
                json!({"questions": [{"header": "A header much longer than thirty chars", "question": "Q?"}]}),
            ),
            "k".into(),
        );
        let err = long.expect_err("too long");
        assert!(err.contains("at most 30 characters"), "{err}");
        let err = to_ask(ASK_USER, args(json!({"questions": []})), "k".into()).expect_err("empty");
        assert!(err.contains("at least one question"), "{err}");
        let err = to_ask(ASK_USER, args(json!({})), "k".into()).expect_err("missing");
        assert!(err.contains("missing field `questions`"), "{err}");
        let err = to_ask(
            ASK_USER,
            args(json!({"questions": [{"header": "H", "question": "Q?", "options": [], "custom": false}]})),
            "k".into(),
        )
        .expect_err("unanswerable");
        assert!(err.contains("cannot be answered"), "{err}");
        let err = to_ask(
            ASK_USER,
            args(json!({"questions": [
                {"header": "Tone", "question": "Q1?"},
                {"header": "tone", "question": "Q2?"}
            ]})),
            "k".into(),
        )
        .expect_err("duplicate header");
        assert!(err.contains("own header"), "{err}");
    }

    #[test]
    fn ask_user_maps_to_a_keyed_questions_ask_with_defaults() {
        let ask = to_ask(
            ASK_USER,
            // As some models send it: the array as a JSON string.
            args(json!({"questions": "[{\"header\": \" Tone \", \"question\": \"Which tone?\", \"options\": [{\"label\": \"Formal\"}, {\"label\": \"Casual\", \"description\": \"\"}]}]"})),
            "mcp-1".into(),
        )
        .expect("valid");
        let SessionAsk::Questions { key, questions, .. } = ask else {
            panic!("not questions: {ask:?}")
        };
        assert_eq!(key.as_deref(), Some("mcp-1"));
        assert_eq!(questions[0].header, "Tone");
        assert!(questions[0].custom && !questions[0].multiple);
        assert_eq!(questions[0].options[1].description, None);
    }

    #[test]
    fn the_other_tools_map_and_check() {
        let plan = to_ask(
            REQUEST_PLAN_APPROVAL,
            args(json!({"goal": "Add a greeting", "steps": [{"title": "Write it"}], "risks": ["none", " "]})),
            "k".into(),
        )
        .expect("plan");
        assert!(
            matches!(&plan, SessionAsk::Plan { steps, risks, files, .. } if steps.len() == 1 && risks == &["none"] && files.is_empty()),
            "{plan:?}"
        );
        let err = to_ask(
            REQUEST_PLAN_APPROVAL,
            args(json!({"goal": "x", "steps": []})),
            "k".into(),
        )
        .expect_err("no steps");
        assert!(err.contains("steps is empty"), "{err}");
        let err = to_ask(
            SEND_MESSAGE,
            args(json!({"to": "run 3", "body": "hi"})),
            "k".into(),
        )
        .expect_err("peer");
        assert!(err.contains("cannot address another agent"), "{err}");
        let sent = to_ask(
            SEND_MESSAGE,
            args(json!({"to": "Supervisor", "body": "done?"})),
            "k".into(),
        )
        .expect("send");
        assert!(matches!(
            sent,
            SessionAsk::SendMessage {
                to: MessageTo::Supervisor,
                correlation_id: None,
                ..
            }
        ));
        assert_eq!(
            to_ask(READ_MESSAGES, None, "k".into()).expect("read"),
            SessionAsk::ReadMessages { after: None }
        );
        let err = to_ask("ask", None, "k".into()).expect_err("unknown");
        assert!(err.contains("ask_user"), "{err}");
        let err = to_ask(
            REPORT_STEP,
            args(json!({"step": "s", "status": "", "summary": "x"})),
            "k".into(),
        )
        .expect_err("empty status");
        assert!(err.contains("status is empty"), "{err}");
    }

    #[test]
    fn consult_is_checked_and_its_answer_rendered() {
        let ask = to_ask(
            CONSULT,
            args(json!({"profile": " expert ", "question": " Is the cache safe? "})),
            "k".into(),
        )
        .expect("consult");
        assert_eq!(
            ask,
            SessionAsk::Consult {
                profile: "expert".into(),
                question: "Is the cache safe?".into(),
                timeout_seconds: None,
            }
        );
        let err = to_ask(
            CONSULT,
            args(json!({"profile": "expert", "question": "Q?", "timeout_seconds": 4})),
            "k".into(),
        )
        .expect_err("too short");
        assert!(err.contains("5 to 3600"), "{err}");
        let err = to_ask(CONSULT, args(json!({"profile": "expert"})), "k".into())
            .expect_err("no question");
        assert!(err.contains("missing field `question`"), "{err}");
        let out = render(
            CONSULT,
            SessionAnswer::Consult {
                text: "ANSWER: yes".into(),
                run: overseer_core::RunId(7),
                cost: Some(overseer_core::RunCost {
                    amount: 0.5,
                    currency: "USD".into(),
                }),
                timed_out: false,
            },
        );
        assert!(!out.is_error);
        assert!(out.text.contains("run 7, cost 0.50 USD"), "{}", out.text);
        assert!(out.text.ends_with("ANSWER: yes"), "{}", out.text);
        assert_eq!(
            out.structured,
            Some(json!({"text": "ANSWER: yes", "run": 7,
                "cost": {"amount": 0.5, "currency": "USD"}, "timed_out": false}))
        );
    }

    #[test]
    fn answers_render_as_text_and_structured_content() {
        let out = render(
            ASK_USER,
            SessionAnswer::Questions {
                action: QuestionsAction::Answered,
                answers: vec![QuestionAnswer {
                    header: "Tone".into(),
                    question: "Which tone?".into(),
                    selected: vec!["Formal".into()],
                    custom: Some("but warm".into()),
                }],
            },
        );
        assert!(!out.is_error);
        assert!(
            out.text.contains("chose \"Formal\"; wrote \"but warm\""),
            "{}",
            out.text
        );
        assert_eq!(
            out.structured,
            Some(json!({"action": "answered", "answers": [
                {"header": "Tone", "question": "Which tone?", "selected": ["Formal"], "custom": "but warm"}
            ]}))
        );
        let out = render(
            REQUEST_PLAN_APPROVAL,
            SessionAnswer::Plan {
                verdict: PlanVerdict::ChangesRequested {
                    feedback: "smaller".into(),
                },
            },
        );
        assert_eq!(
            out.structured,
            Some(json!({"verdict": "changes_requested", "feedback": "smaller"}))
        );
        let out = render(
            REPORT_STEP,
            SessionAnswer::Plan {
                verdict: PlanVerdict::Approved,
            },
        );
        assert!(out.is_error && out.structured.is_none(), "{out:?}");
    }
}

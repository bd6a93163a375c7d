// Generated from the Rust contract (crates/overseer-api) and types (ts-rs): do not edit by hand.
// Regenerate with `make types`; crates/overseer-server/tests/contract.rs fails when they drift.

export type Activity = { "kind": "message", "payload": { text: string, } } | { "kind": "thought", "payload": { text: string, } } | { "kind": "plan", "payload": { entries: Array<ProgressEntry>, } } | { "kind": "plan_proposed", "payload": PlanProposal } | { "kind": "tool_call", "payload": ToolCallEntry } | { "kind": "tool_allowed", "payload": RuleDecision } | { "kind": "tool_denied", "payload": RuleDecision } | { "kind": "rule_added", "payload": { text: string, } } | { "kind": "sensor", "payload": SensorRun } | { "kind": "step_started", "payload": { step: number, text: string, } } | { "kind": "step_finished", "payload": StepRecord } | { "kind": "deviation", "payload": { text: string, cause: string, } } | { "kind": "verdict", "payload": { verdict: Verdict, 
/**
 * Its rationale.
 */
text: string, correction: string | null, } } | { "kind": "user_instruction", "payload": { text: string, 
/**
 * The actor, as its string (`user:app`, `user:cli`).
 */
by: string, } } | { "kind": "error", "payload": { text: string, } } | { "kind": "protocol_error", "payload": { text: string, } } | { "kind": "file_read", "payload": { path: string, } } | { "kind": "file_written", "payload": { path: string, bytes: number, } } | { "kind": "file_refused", "payload": { path: string, text: string, } } | { "kind": "drift", "payload": { text: string, files: Array<string>, } } | { "kind": "log", "payload": { text: string, lines: number, } } | { "kind": "mode", "payload": { mode: string, text: string, } } | { "kind": "security", "payload": SecurityEntry } | { "kind": "session", "payload": { text: string, 
/**
 * The modes it offers.
 */
modes: Array<AgentMode>, } } | { "kind": "plan_skipped", "payload": { text: string, } } | { "kind": "plan_answer", "payload": { text: string, } } | { "kind": "session_started", "payload": { text: string, } } | { "kind": "notice", "payload": { text: string, title: string | null, } } | { "kind": "turn_ended", "payload": { text: string, title: string | null, } } | { "kind": "steering_delivered", "payload": { text: string, } } | { "kind": "step_reported", "payload": { step: string, status: string, summary: string, files_touched: Array<string>, } } | { "kind": "gate_withdrawn", "payload": { text: string, } } | { "kind": "message_sent", "payload": MessageEntry } | { "kind": "message_received", "payload": MessageEntry } | { "kind": "retry_queued", "payload": { text: string, attempt: number, wait_ms: number, 
/**
 * The failure's tail.
 */
error: string, } } | { "kind": "carried_on", "payload": { text: string, } } | { "kind": "question_again", "payload": { text: string, } } | { "kind": "merge", "payload": { text: string, outcome?: MergeOutcome, } } | { "kind": "cosign", "payload": { gate_id: GateId, 
/**
 * The approver, as its actor string.
 */
by: string, text: string, } } | { "kind": "decided", "payload": { gate_id: GateId, option: string, 
/**
 * The person, as its actor string (`user:ana`).
 */
by: string, device: DeviceRef, text: string, } } | { "kind": "unrecognized", "payload": UnrecognizedEntry };

export type ActivityView = { id: number, run_id: RunId, at: number, } & ({ "kind": "message", "payload": { text: string, } } | { "kind": "thought", "payload": { text: string, } } | { "kind": "plan", "payload": { entries: Array<ProgressEntry>, } } | { "kind": "plan_proposed", "payload": PlanProposal } | { "kind": "tool_call", "payload": ToolCallEntry } | { "kind": "tool_allowed", "payload": RuleDecision } | { "kind": "tool_denied", "payload": RuleDecision } | { "kind": "rule_added", "payload": { text: string, } } | { "kind": "sensor", "payload": SensorRun } | { "kind": "step_started", "payload": { step: number, text: string, } } | { "kind": "step_finished", "payload": StepRecord } | { "kind": "deviation", "payload": { text: string, cause: string, } } | { "kind": "verdict", "payload": { verdict: Verdict, 
/**
 * Its rationale.
 */
text: string, correction: string | null, } } | { "kind": "user_instruction", "payload": { text: string, 
/**
 * The actor, as its string (`user:app`, `user:cli`).
 */
by: string, } } | { "kind": "error", "payload": { text: string, } } | { "kind": "protocol_error", "payload": { text: string, } } | { "kind": "file_read", "payload": { path: string, } } | { "kind": "file_written", "payload": { path: string, bytes: number, } } | { "kind": "file_refused", "payload": { path: string, text: string, } } | { "kind": "drift", "payload": { text: string, files: Array<string>, } } | { "kind": "log", "payload": { text: string, lines: number, } } | { "kind": "mode", "payload": { mode: string, text: string, } } | { "kind": "security", "payload": SecurityEntry } | { "kind": "session", "payload": { text: string, 
/**
 * The modes it offers.
 */
modes: Array<AgentMode>, } } | { "kind": "plan_skipped", "payload": { text: string, } } | { "kind": "plan_answer", "payload": { text: string, } } | { "kind": "session_started", "payload": { text: string, } } | { "kind": "notice", "payload": { text: string, title: string | null, } } | { "kind": "turn_ended", "payload": { text: string, title: string | null, } } | { "kind": "steering_delivered", "payload": { text: string, } } | { "kind": "step_reported", "payload": { step: string, status: string, summary: string, files_touched: Array<string>, } } | { "kind": "gate_withdrawn", "payload": { text: string, } } | { "kind": "message_sent", "payload": MessageEntry } | { "kind": "message_received", "payload": MessageEntry } | { "kind": "retry_queued", "payload": { text: string, attempt: number, wait_ms: number, 
/**
 * The failure's tail.
 */
error: string, } } | { "kind": "carried_on", "payload": { text: string, } } | { "kind": "question_again", "payload": { text: string, } } | { "kind": "merge", "payload": { text: string, outcome?: MergeOutcome, } } | { "kind": "cosign", "payload": { gate_id: GateId, 
/**
 * The approver, as its actor string.
 */
by: string, text: string, } } | { "kind": "decided", "payload": { gate_id: GateId, option: string, 
/**
 * The person, as its actor string (`user:ana`).
 */
by: string, device: DeviceRef, text: string, } } | { "kind": "unrecognized", "payload": UnrecognizedEntry });

export type Actor = { "kind": "user", "name": string } | { "kind": "supervisor", "name": string } | { "kind": "engine" } | { "kind": "agent", "name": string };

export type AgentInfo = { name: string, command: string, 
/**
 * Where the command was found, if it was.
 */
found?: string, 
/**
 * The supervised mode (None: the agent offers no modes).
 */
mode?: string, 
/**
 * What that mode lets the agent do, in words.
 */
mode_effect: string, plan: PlanStrategy, 
/**
 * What the profile still needs before it can run (empty: ready).
 */
needs: Array<string>, 
/**
 * True when `overseer.toml` defines it (else it is built in).
 */
from_file: boolean, 
/**
 * What this machine can do to contain its runs.
 */
containment: Containment, 
/**
 * Whether its runs would be contained: false when the machine cannot
 * and the profile allows running uncontained (else it is a need).
 */
contained: boolean, 
/**
 * Its sandbox's network.
 */
network: NetworkMode, };

export type AgentMode = { id: string, name: string, description: string | null, };

export type AgentOption = { 
/**
 * The agent's id for it (they differ between agents).
 */
option_id: string, 
/**
 * Its label, as the agent wrote it.
 */
name: string, 
/**
 * `allow_once`, `allow_always`, `reject_once` or `reject_always`.
 */
kind: string, };

export type AgentToolCall = { 
/**
 * The agent's id for the call (a hook's: the ask's key).
 */
id: string | null, title: string | null, 
/**
 * ACP tool kind (`read`, `edit`, `delete`, `execute`... on the wire).
 */
kind: ToolKind | null, 
/**
 * How far it went; None when the agent said nothing this version knows.
 */
status?: ToolCallStatus, 
/**
 * The tool's input as the agent sent it (an edit's new content...).
 */
raw_input: JsonValue | null, 
/**
 * Files the call touches, as the agent named them.
 */
locations?: Array<string>, 
/**
 * Text the agent attached.
 */
text?: string, 
/**
 * The agent's own tool name (`Bash`, `mcp__server__tool`...).
 */
name?: string, };

export type AlwaysGated = "delete_files" | "drop_tables" | "production_config" | "install_packages" | "destructive_shell" | "secret_files";

export type ApiError = { code: ErrorCode, message: string, fields?: Array<FieldError>, };

export type ApprovalMode = { "mode": "auto" } | { "mode": "manual" } | { "mode": "confidence_threshold", threshold: number, };

export type AskKind = "blocking" | "question" | "info";

export type AskOption = { label: string, description: string | null, };

export type AskQuestion = { 
/**
 * A short tab label (at most 30 characters).
 */
header: string, question: string, options: Array<AskOption>, 
/**
 * Several options may be chosen.
 */
multiple: boolean, 
/**
 * A free-text answer is allowed (default true).
 */
custom: boolean, 
/**
 * The answer taken when the question expires unanswered: one of the
 * options' labels when it has options, else the words to use.
 */
default?: string, };

export type AuditProblem = { "problem": "seq_gap", found: number, } | { "problem": "chain_broken" } | { "problem": "payload_edited" } | { "problem": "fields_edited" } | { "problem": "bad_signature" } | { "problem": "truncated", checkpoint_count: number, found: number, } | { "problem": "checkpoint_mismatch", checkpoint_count: number, } | { "problem": "bad_checkpoint_signature", checkpoint_count: number, };

export type AuditRecord = { seq: number, prev_hash: string, 
/**
 * Canonical JSON: serde_json's `Value` keeps object keys sorted.
 */
payload: string, payload_hash: string, actor: string, at: number, record_hash: string, signature: string, };

export type AutoRunFile = { path: string, change: PathChange, 
/**
 * What runs or loads it, and what it can make run.
 */
runs: string, };

export type Autonomy = "advisory" | "cosign" | "autonomous";

export type CgroupStatus = { "state": "available", root: string, } | { "state": "missing", why: string, };

export type CheckedRecord = { record: AuditRecord, 
/**
 * `None` when the record is intact and its signature verifies, linked to
 * the record before it; otherwise what is wrong, loudly.
 */
problem: AuditProblem | null, };

export type Containment = { sandbox: SandboxStatus, cgroups: CgroupStatus, scopes: ScopeStatus, limits: LimitsStatus, private_network: NetStatus, };

export type DecisionMismatch = { table: DecisionTable, 
/**
 * The row's id (for `gates`, the gate id).
 */
row_id: number, gate_id: number | null, run_id: number | null, 
/**
 * The record the row names, or the one that should back it.
 */
audit_seq: number | null, 
/**
 * What the row claims, in words (`'approve' by user:cli at 1700000000000`).
 */
claim: string, } & ({ "problem": "no_record" } | { "problem": "record_not_verified", why: AuditProblem, } | { "problem": "wrong_record", detail: string, } | { "problem": "differs", field: string, row: string, record: string, } | { "problem": "record_reused", other_row_id: number, } | { "problem": "decision_erased", option: string, by: string, });

export type DecisionRecord = { id: number, run_id: RunId, gate_id: GateId | null, actor: Actor, verdict: Verdict, 
/**
 * The gate option this decision chose, when it chose one.
 */
option: string | null, rationale: string | null, correction: string | null, rule_ref: string | null, 
/**
 * For a permission rule's allow or denial: the rules that decided and
 * their layers. None for every other decision, and for decisions
 * recorded before it was kept (their rationale names the layer).
 */
provenance: Provenance | null, model_id: string | null, prompt_version: string | null, confidence: number | null, 
/**
 * What triggered the decision, e.g. `gate_opened:12` or `step_finished:3`.
 */
source_event: string | null, audit_seq: number, at: number, 
/**
 * A supervisor's vote that did not stand: the human who decided the
 * gate otherwise (first, or by overriding it). Worked out when the
 * story is read, never stored.
 */
overruled_by?: Actor, 
/**
 * The paired device a person decided through (`actor` is that
 * person); absent otherwise.
 */
device?: DeviceRef, };

export type DecisionTable = "gates" | "gate_decisions" | "decisions";

export type DeliveryStatus = "pending" | "delivered" | "failed";

export type DeviationCause = "turn_failed" | "mode_breach" | "merge_failed" | "flood" | "budget";

export type DeviationChoice = "retry" | "replan" | "stop";

export type DeviationGate = { cause: DeviationCause, 
/**
 * The failure, in words (may quote the agent: untrusted).
 */
error: string, 
/**
 * A mode breach: the mode the agent switched itself to.
 */
mode?: string, 
/**
 * Retries so far (none for a failed merge).
 */
attempts?: number, 
/**
 * Retries allowed before retry is no longer offered.
 */
max_attempts?: number, };

export type DeviceId = number;

export type DeviceRef = { id: DeviceId, name: string, };

export type DeviceView = { id: DeviceId, 
/**
 * Who it acts for: its decisions are recorded as `user:<person>`.
 */
person: string, 
/**
 * What the owner called it when pairing ("Ana's phone").
 */
name: string, created_at: number, 
/**
 * When it last made a request (refreshed at most once a minute).
 */
last_seen_at: number | null, 
/**
 * When it was revoked: from then on it is refused.
 */
revoked_at: number | null, 
/**
 * What its person may do (the owner gives it; a person with none
 * recorded only reads).
 */
grant: Grant, };

export type EngineEvent = { "type": "run_changed", run: RunView, } | { "type": "gate_opened", gate_id: GateId, run_id: RunId, kind: GateKind, } | { "type": "gate_decided", gate_id: GateId, run_id: RunId, kind: GateKind, } | { "type": "run_activity", activity: ActivityView, } | { "type": "orchestration_aborted", run_id: RunId, killed: Array<number>, } | { "type": "message_posted", message: MessageView, } | { "type": "workspace_changed", name: string, } | { "type": "task_changed", task_id: TaskId, } | { "type": "device_changed", device: DeviceView, } | { "type": "pairing_codes_burned", codes: number, } | { "type": "web_serving_changed", status: WebStatus, };

export type ErrorCode = "not_found" | "invalid_transition" | "already_decided" | "conflict" | "invalid_input" | "storage" | "engine_unavailable" | "forbidden" | "unauthorized" | "rate_limited" | "internal";

export type EvaluatorConfig = { "type": "rules" } | { "type": "command", command: string, args: Array<string>, } | { "type": "openai", base_url: string, model: string, 
/**
 * Name of the environment variable holding the API key, if any. The key
 * itself is never stored.
 */
api_key_env: string | null, };

export type ExternalSession = { session_id: string, cwd: string, };

export type FieldError = { field: string, message: string, };

export type FileChange = { path: string, additions: number, deletions: number, };

export type FleetCounts = { queued: number, claimed: number, running: number, retry_queued: number, pending_review: number, released: number, needs_you: number, };

export type GateBody = { "kind": "plan", "payload": PlanProposal } | { "kind": "tool_call", "payload": ToolCallGate } | { "kind": "step_review", "payload": StepRecord } | { "kind": "supervisor_pause", "payload": SupervisorPauseGate } | { "kind": "deviation", "payload": DeviationGate } | { "kind": "merge_review", "payload": MergeReviewGate } | { "kind": "question", "payload": QuestionGate };

export type GateChoice = { "kind": "plan", "choice": PlanChoice } | { "kind": "tool_call", "choice": ToolCallChoice } | { "kind": "step_review", "choice": StepReviewChoice } | { "kind": "supervisor_pause", "choice": SupervisorPauseChoice } | { "kind": "deviation", "choice": DeviationChoice } | { "kind": "merge_review", "choice": MergeReviewChoice } | { "kind": "question", "choice": QuestionChoice };

export type GateDecision = { option: string, context: string | null, actor: Actor, at: number, 
/**
 * The paired device a person decided through (`actor` is that
 * person); absent for the local owner, the supervisor, the engine.
 */
device?: DeviceRef, };

export type GateId = number;

export type GateKind = "plan" | "tool_call" | "step_review" | "supervisor_pause" | "deviation" | "merge_review" | "question";

export type GateOption = { 
/**
 * Stable identifier, e.g. `approve`.
 */
id: string, 
/**
 * What the user sees, e.g. `Approve and merge`.
 */
label: string, 
/**
 * True when choosing this option requires a non-empty context (a reason).
 */
requires_context: boolean, };

export type GatePage = { gates: Array<GateView>, 
/**
 * How many gates match in all (pending ones, or every gate).
 */
total: number, 
/**
 * How many match after this page: ask again with `after` set to
 * [`GatePage::next_after`] for them.
 */
remaining: number, 
/**
 * The id to pass as `after` for the next page (null: this is the last).
 */
next_after: GateId | null, };

export type GateStatus = "pending" | "decided";

export type GateStory = { gate: GateView, 
/**
 * Every decision on the gate (votes, timers), in order, with rationale.
 */
decisions: Array<DecisionRecord>, 
/**
 * Every audit record about the gate, each checked on its own.
 */
records: Array<CheckedRecord>, 
/**
 * Decision rows about the gate (its decision, its history, its votes)
 * that no verifying signed record backs: written outside Overseer.
 */
decision_problems: Array<DecisionMismatch>, 
/**
 * True when every record's signature, hashes and chain link verify and
 * every decision row is backed by its signed record.
 */
verified: boolean, 
/**
 * A human approved this co-signed gate and it waits for the
 * supervisor's approval: the window says "waiting for the co-sign".
 */
awaiting_cosign?: boolean, };

export type GateView = { id: GateId, run_id: RunId, 
/**
 * The payload as stored, when it does not fit its kind's type (written
 * by an older version): `payload` is then empty and this is shown.
 */
unreadable_payload?: JsonValue, status: GateStatus, title: string, options: Array<GateOption>, opened_at: number, decision: GateDecision | null, 
/**
 * When a timer decides the gate if nobody has (step_review auto-proceed,
 * an expiring question's default, an unanswered supervisor pause).
 */
auto_at: number | null, 
/**
 * The option the timer picks.
 */
auto_option: string | null, 
/**
 * The supervisor's authority on this gate (None: no supervisor).
 */
authority: Autonomy | null, 
/**
 * The engine acted on the decision: nobody can override it any more.
 */
effected: boolean, 
/**
 * Blocking, question or info ([`crate::gate::ask_kind`]).
 */
ask_kind: AskKind, 
/**
 * The option approving it in a batch picks ([`batch_choice`]), or
 * None: it must be decided on its own.
 */
batch_option?: string | null, 
/**
 * An autonomous supervisor's decision waiting for its grace period to
 * end (only while the gate is pending): the card counts down to its
 * `at`, and a human may decide otherwise until then.
 */
pending_effect?: PendingEffect, 
/**
 * Snoozed by the user until then: out of the inbox and "needs you"
 * until it wakes (and notifies again).
 */
snoozed_until?: number, 
/**
 * The supervisor's latest vote on the gate (advice, a vote awaiting a
 * co-sign, an escalation), shown on its card as it arrives.
 */
advice?: SupervisorAdvice, } & ({ "kind": "plan", "payload": PlanProposal } | { "kind": "tool_call", "payload": ToolCallGate } | { "kind": "step_review", "payload": StepRecord } | { "kind": "supervisor_pause", "payload": SupervisorPauseGate } | { "kind": "deviation", "payload": DeviationGate } | { "kind": "merge_review", "payload": MergeReviewGate } | { "kind": "question", "payload": QuestionGate });

export type Grant = { role: Role, 
/**
 * Workspace names; `None`: all of them.
 */
workspaces: Array<string> | null, };

export type HostEvent = { host: string, event: EngineEvent, };

export type HostLinkState = { "status": "connecting" } | { "status": "live", engine: string, version: string, resync: number, } | { "status": "down", since_ms: number, retry_at_ms: number, reason: string, };

export type HostLinkView = { name: string, 
/**
 * `ssh://[user@]host[:port]`.
 */
url: string, 
/**
 * The fingerprint of the host engine's pinned signing key.
 */
fingerprint: string, state: HostLinkState, };

export type HostRemoved = { host: string, };

export type HostSetupStep = { host: string, 
/**
 * What was done or found, said for the user ("copied overseer 0.1.0
 * to ...", "the host lacks slirp4netns ...").
 */
line: string, };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

export type LimitsStatus = { "state": "available", controllers: Array<string>, how: string, } | { "state": "missing", why: string, leaves_open: string, };

export type MergeOutcome = { "outcome": "merged", commit: string, } | { "outcome": "already_merged", commit: string | null, } | { "outcome": "merged_outside" } | { "outcome": "nothing_to_merge" } | { "outcome": "no_repository" };

export type MergeReviewChoice = "approve" | "reject" | "abort";

export type MergeReviewGate = { auto_run?: Array<AutoRunFile>, };

export type MessageEntry = { 
/**
 * The body.
 */
text: string, to: MessageTo, 
/**
 * The sender, as an actor string.
 */
from: string, status: MessageStatus, blocked_reason: string | null, correlation_id: string | null, message_id: number, };

export type MessageStatus = "delivered" | "blocked";

export type MessageTo = { "to": "supervisor" } | { "to": "user" } | { "to": "broadcast" } | { "to": "workspace", workspace: string, } | { "to": "task", task: TaskId, } | { "to": "run", run: RunId, };

export type MessageView = { id: number, 
/**
 * The run that sent it (None: the user or the supervisor).
 */
from_run: RunId | null, 
/**
 * Who sent it, as an actor string (`agent:claude`, `user:app`, `supervisor`).
 */
from: string, to: MessageTo, 
/**
 * Untrusted text when an agent wrote it.
 */
body: string, correlation_id: string | null, status: MessageStatus, 
/**
 * Why the policy held it back.
 */
blocked_reason: string | null, at: number, };

export type NetStatus = { "state": "available", helper: string, } | { "state": "missing", why: string, leaves_open: string, };

export type NetworkMode = "private" | "none" | "host";

export type NoticeKind = "notification" | "stop";

export type NotificationKind = "agent_question_pending" | "agent_question_blocking" | "run_pending_review" | "run_failed" | "supervisor_escalated" | "supervisor_failed" | "security_event" | "agent_message_blocked" | "disk_full";

export type NotificationSettings = { 
/**
 * Kinds muted on the desktop.
 */
muted: Array<NotificationKind>, 
/**
 * The desktop muted whole: every kind that can be muted is.
 */
desktop_muted: boolean, 
/**
 * Kinds muted on webhooks (any kind but `test`).
 */
webhook_muted: Array<WebhookEvent>, 
/**
 * Webhooks muted whole: nothing is queued for any hook (a test still
 * goes out: the user asked for it).
 */
webhooks_muted: boolean, 
/**
 * How loudly each kind of inbox item is told (on the desktop and on
 * webhooks); unset: `[notifications.urgency]` in `overseer.toml`, else
 * as the notification's kind says. Blocking asks are always critical.
 */
urgency: UrgencySettings, };

export type OpenRun = { run_id: RunId, 
/**
 * The host whose run it is; absent for this machine's engine.
 */
host?: string, };

export type Pairing = { 
/**
 * The one-time code as shown: `ABCD-EFGH` (typed in any case, with or
 * without the dash).
 */
code: string, 
/**
 * When the code stops working (5 minutes after it was issued).
 */
expires_at: number, 
/**
 * Where the engine serves browsers, when it does: the page to open (a
 * QR code of it) and type the code into.
 */
url: string | null, };

export type PathChange = "added" | "changed" | "deleted";

export type PendingEffect = { 
/**
 * The gate option the supervisor chose.
 */
option: string, 
/**
 * Approve or reject.
 */
verdict: Verdict, 
/**
 * The supervisor that voted.
 */
by: Actor, 
/**
 * When it takes effect (ms since the epoch): the window counts down to it.
 */
at: number, 
/**
 * The supervisor's reason, as it gave it.
 */
rationale: string | null, };

export type PendingGate = { id: GateId, kind: GateKind, 
/**
 * An `info` item alone does not make the run need you.
 */
ask_kind: AskKind, };

export type PersonView = { person: string, grant: Grant, 
/**
 * Who set it (`user:cli`, or `engine` for the people paired before
 * roles existed).
 */
set_by: string, set_at: number, 
/**
 * Paired before roles existed: made an approver of every workspace
 * by the upgrade, until the owner says otherwise.
 */
migrated: boolean, };

export type PlanChoice = "approve" | "request_changes" | "reject";

export type PlanProposal = { goal: string, steps: Array<PlanStep>, files: Array<string>, risks: Array<string>, 
/**
 * The agent's own words for the plan (markdown, untrusted: rendered
 * inertly), when it came from a plan mode or from prose.
 */
markdown?: string, 
/**
 * How the plan reached Overseer.
 */
source: PlanSource, };

export type PlanSource = "block" | "agent_mode" | "progress_list" | "prose" | "skipped" | "requested";

export type PlanStep = { title: string, agent?: string, };

export type PlanStrategy = "auto" | "mode" | "prompt" | "skip";

export type PolicyStatus = { scope: Scope, 
/**
 * Set at this scope (None: inherited).
 */
own: SupervisorPolicy | null, 
/**
 * What applies at this scope.
 */
effective: SupervisorPolicy, };

export type ProgressEntry = { content: string, 
/**
 * `high`, `medium` or `low`.
 */
priority: string, 
/**
 * `pending`, `in_progress` or `completed` (the agent may say anything).
 */
status: string, };

export type Provenance = Array<RuleProvenance>;

export type QuestionChoice = "answer" | "default" | "decline";

export type QuestionGate = { 
/**
 * The question, as the agent wrote it.
 */
message: string, 
/**
 * The form's JSON Schema (the agent's; `null` for free text).
 */
schema?: JsonValue, 
/**
 * An external session's questions, one form field each.
 */
questions?: Array<AskQuestion>, 
/**
 * `question` when a timer answers it, `info` for a notice, else
 * `blocking`.
 */
ask_kind?: AskKind, 
/**
 * A notice: what raised it.
 */
notice?: NoticeKind, };

export type ReleaseReason = "merged" | "human_rejected" | "aborted_by_user" | "plan_rejected" | "failed" | "interrupted" | "supervisor_rejected" | "ended";

export type RequestedChoice = { "kind": "plan", "choice": PlanChoice } | { "kind": "tool_call", "choice": ToolCallChoice } | { "kind": "step_review", "choice": StepReviewChoice } | { "kind": "supervisor_pause", "choice": SupervisorPauseChoice } | { "kind": "deviation", "choice": DeviationChoice } | { "kind": "merge_review", "choice": MergeReviewChoice } | { "kind": "question", "choice": QuestionChoice };

export type Resolved = { "leads": "inside", path: string, } | { "leads": "outside", path: string, } | { "leads": "unresolved", why: string, };

export type RetryPolicy = { 
/**
 * Retries of one step, 1 to 10.
 */
max_attempts: number, 
/**
 * The wait before the first retry; it doubles for each next one (at
 * most an hour).
 */
backoff_seconds: number, };

export type Risk = { level: RiskLevel, why: string, };

export type RiskLevel = "low" | "medium" | "high" | "critical";

export type Role = "owner" | "approver" | "observer";

export type RuleDecision = { 
/**
 * The call's title (matches its `tool_call` entry's).
 */
title: string, 
/**
 * ACP tool kind.
 */
kind: ToolKind, 
/**
 * The rule or reason, and its layer.
 */
text: string, 
/**
 * The rules that decided and their layers (absent in entries written
 * before it was kept: their `text` names the layer).
 */
provenance?: Provenance, };

export type RuleLayer = "built_in" | "run" | "task" | "workspace";

export type RuleProvenance = { layer: RuleLayer, 
/**
 * The rule's text (`Edit(src/**)`), or the built-in rule's words
 * (`confinement`, `default: read-only kind read`, ...).
 */
rule: string, };

export type RuleSet = { allow: Array<string>, ask: Array<string>, deny: Array<string>, };

export type RuleTexts = { allow: Array<string>, ask: Array<string>, deny: Array<string>, };

export type RunActions = { 
/**
 * Approve its review (merge): a launched run pending review.
 */
approve: boolean, 
/**
 * Reject its review: a launched run pending review.
 */
reject: boolean, 
/**
 * Stop it: abort a launched run (its agent is killed), or stop an
 * external session (its later tool calls are refused). Any run not
 * released yet.
 */
abort: boolean, 
/**
 * The run has a repository of its own whose diff can be shown (an
 * external session has none).
 */
diff: boolean, 
/**
 * The agent is working and can take an instruction for its next turn:
 * neither released nor done (pending review).
 */
steer: boolean, };

export type RunCost = { amount: number, currency: string, };

export type RunDiff = { files: Array<FileChange>, diff: string, 
/**
 * The diff's files that other tools run or load on their own, with
 * what would run them (never merged without a human).
 */
auto_run: Array<AutoRunFile>, };

export type RunId = number;

export type RunOrigin = "launched" | "claude_code" | "codex" | "mcp";

export type RunState = { "state": "queued" } | { "state": "claimed" } | { "state": "running" } | { "state": "retry_queued" } | { "state": "pending_review" } | { "state": "released", reason: ReleaseReason, };

export type RunStory = { run: RunView, 
/**
 * Every decision recorded on the run or one of its gates, oldest first.
 */
decisions: Array<DecisionRecord>, 
/**
 * Every audit record about the run or one of its gates, in log order,
 * each checked on its own.
 */
records: Array<CheckedRecord>, 
/**
 * Decision rows about the run that no verifying signed record backs.
 */
decision_problems: Array<DecisionMismatch>, 
/**
 * Every record verifies and every decision row is backed.
 */
verified: boolean, };

export type RunUsage = { 
/**
 * Tokens in the agent's context now.
 */
used: number, 
/**
 * The context window's size in tokens.
 */
size: number, 
/**
 * The session's cumulative cost, when the agent reports one.
 */
cost?: RunCost | null, };

export type RunView = { id: RunId, task_id: TaskId, task_title: string, workspace: string, agent: string, state: RunState, 
/**
 * When the run entered its current state.
 */
state_since: number, created_at: number, 
/**
 * True when the run waits on a human: pending review, or an open gate
 * that asks something (an `info` item only tells). The store decides it
 * in one SQL definition for rows, counts and order alike.
 */
needs_you: boolean, 
/**
 * The run's place in the dashboard's default order ([`attention_rank`]):
 * smaller first, ties by id. Every client sorts by it; none re-derives it.
 */
attention_rank: number, 
/**
 * The human's reason, for rejected runs.
 */
release_note: string | null, pending_gate: PendingGate | null, 
/**
 * The step the agent works on: the first unfinished entry of its latest
 * plan (as the agent reported it: untrusted text).
 */
current_step?: string | null, 
/**
 * The latest result of each sensor (check command), once any ran.
 */
sensors?: SensorSummary | null, 
/**
 * The run's latest gate, pending or decided: where "Why?" starts for a
 * run whose decision is made.
 */
last_gate?: PendingGate | null, 
/**
 * Where the run came from: launched by Overseer, or an agent outside it
 * (a terminal Claude Code or Codex session, an MCP client).
 */
origin: RunOrigin, 
/**
 * For an external session: its own id and where it works.
 */
session?: ExternalSession | null, 
/**
 * What a human can do with the run now ([`run_actions`]): the row, the
 * run page and the keyboard show exactly these, and the engine refuses
 * the rest.
 */
actions: RunActions, 
/**
 * The agent's latest report of its context and cumulative cost
 * (untrusted figures, checked to be possible), once it sent one.
 */
usage?: RunUsage | null, 
/**
 * The budget this run's cost is held to (its task's `max_cost`, else
 * its workspace's), when one is set.
 */
max_cost?: number | null, 
/**
 * For a consultation (a read-only child run answering another run's
 * `consult`): the run that asked.
 */
parent?: RunId | null, };

export type RunsHead = { rows: Array<RunView>, total: number, counts: FleetCounts, };

export type SandboxStatus = { "state": "available", bwrap: string, } | { "state": "missing", why: string, fix: string, };

export type Scope = { workspace: string, 
/**
 * A task of the workspace: its settings override the workspace's.
 */
task: TaskId | null, };

export type ScopeStatus = { "state": "available", abi: number, } | { "state": "missing", why: string, leaves_open: string, };

export type SecurityEntry = { text: string, 
/**
 * Which event, for the ones others look for again (None for the rest).
 */
event?: SecurityEvent, 
/**
 * The mode an agent switched itself to, which acts unasked.
 */
mode?: string, 
/**
 * The gate whose decision had no record.
 */
gate_id?: GateId, 
/**
 * An unrecorded merge: the base branch, the commit it was at, and the
 * run's commits found on it.
 */
base?: string, base_commit?: string, found?: Array<string>, 
/**
 * The tool call the agent carried out without asking.
 */
tool_call?: string, 
/**
 * Files the event is about (agent configuration that grants permissions).
 */
files?: Array<string>, 
/**
 * The process that reached Overseer's socket from inside a run.
 */
pid?: number, };

export type SecurityEvent = "decision_without_record" | "unrecorded_merge" | "flood" | "unasked_action" | "agent_config_grants";

export type SensorResult = { command: string, passed: boolean, };

export type SensorRun = { command: string, 
/**
 * None when it did not exit (killed, not started).
 */
exit_code: number | null, passed: boolean, 
/**
 * Its output (the tail).
 */
output: string, };

export type SensorSummary = { passed: number, failed: number, 
/**
 * Each command's latest result, in the order they first ran (the
 * user's own commands: shown on hover).
 */
results: Array<SensorResult>, };

export type SessionMode = "normal" | "read_only";

export type SettingsChange = { "kind": "workspace_checks", workspace: string, sensors: Array<string>, auto_advance: boolean | null, } | { "kind": "supervisor", scope: Scope, policy: SupervisorPolicy | null, } | { "kind": "permissions", scope: Scope, rules: RuleTexts, } | { "kind": "notifications", settings: NotificationSettings, };

export type StepRecord = { 
/**
 * The step's number in the plan (1-based).
 */
step: number, 
/**
 * The plan the step belongs to.
 */
plan: PlanProposal | null, 
/**
 * Files changed outside the plan's declared files.
 */
drift: Array<string>, 
/**
 * The step made destructive tool calls.
 */
destructive: boolean, checks_passed: number, checks_total: number, 
/**
 * Each sensor (check command) run after the step.
 */
sensors: Array<StepSensor>, 
/**
 * Turns retried for this step.
 */
retries: number, tool_calls_ok: number, tool_calls_total: number, 
/**
 * The end of the agent's transcript for the step (untrusted).
 */
summary: string, 
/**
 * The step's confidence score (0 to 1), once scored.
 */
confidence?: number, 
/**
 * How the score came about, in words.
 */
explain?: string, 
/**
 * What the step's turns cost (the agent's cumulative cost at the
 * step's end less at its start), when the agent reports a cost and
 * the step's start was seen by this engine.
 */
cost?: RunCost, };

export type StepReviewChoice = "proceed" | "stop";

export type StepSensor = { command: string, passed: boolean, 
/**
 * None when the command did not exit (timed out, killed).
 */
exit_code: number | null, };

export type SupervisorAdvice = { verdict: Verdict, 
/**
 * The gate option it would choose (or chose), when it named one.
 */
option: string | null, rationale: string | null, 
/**
 * Which supervisor (`supervisor:rules`, `supervisor:openai:MODEL`).
 */
by: string, at: number, };

export type SupervisorPauseChoice = "proceed" | "modify" | "abort";

export type SupervisorPauseGate = { 
/**
 * The supervisor's reason.
 */
rationale: string, 
/**
 * The step it paused after (a run's step; none for a session's).
 */
step?: StepRecord, 
/**
 * After this long unanswered, the run is aborted.
 */
timeout_seconds?: number, 
/**
 * Declared by external sessions (`blocking`); absent otherwise.
 */
ask_kind?: AskKind, };

export type SupervisorPolicy = { 
/**
 * Off by default: a fresh install behaves exactly as without a supervisor.
 */
enabled: boolean, autonomy: Autonomy, 
/**
 * Per-gate-kind authority, e.g. advisory on plans, autonomous on merges.
 */
gate_authority: { [key in GateKind]?: Autonomy }, evaluator: EvaluatorConfig, 
/**
 * REORIENT verdicts on the same step before it becomes PAUSE.
 */
max_reorient_attempts: number, 
/**
 * How long an evaluator may take before it counts as failed.
 */
timeout_seconds: number, 
/**
 * Evaluate every step, not only those the confidence model flags.
 */
always_supervise: boolean, 
/**
 * How long a supervisor_pause gate waits for a human before the run is
 * terminated (and the termination logged).
 */
pause_timeout_seconds: number, 
/**
 * How long an autonomous supervisor's approve or reject waits before it
 * takes effect: the gate stays open to humans meanwhile, and a human's
 * decision within it wins. 0: at once.
 */
grace_seconds: number, };

export type TaskId = number;

export type TaskInfo = { task_id: TaskId, workspace: string, title: string, stage: string, settings: TaskSettings, };

export type TaskSettings = { 
/**
 * Rules checked before the workspace's.
 */
permissions?: RuleSet, 
/**
 * When a finished step may proceed without a human.
 */
approval: ApprovalMode, 
/**
 * Seconds a medium-confidence step waits before it proceeds on its own.
 */
auto_proceed_seconds?: number | null, 
/**
 * A read-only consultation: writes denied, shell asks, known-safe allowed.
 */
session: SessionMode, 
/**
 * Replaces the workspace's supervisor policy for this task.
 */
supervisor?: SupervisorPolicy | null, 
/**
 * Replaces the agent profile's planning strategy for this task.
 */
plan?: PlanStrategy, 
/**
 * Replaces the agent profile's supervised mode for this task (checked
 * like the profile's: a mode that acts unasked is refused).
 */
mode?: string, 
/**
 * An agent's question waits this long, then takes its defaults (or is
 * declined when it has none), so an unattended run does not stall.
 * None: questions wait for the user (they are blocking).
 */
question_timeout_seconds?: number, 
/**
 * Replaces the workspace's retry policy for this task.
 */
retry?: RetryPolicy, 
/**
 * The most this task's runs may cost each (in the currency their agent
 * reports): reaching it pauses the run. Replaces the workspace's.
 */
max_cost?: number, };

export type ToolCallChoice = "yes" | "always" | "no";

export type ToolCallEntry = { id: string, title: string | null, 
/**
 * ACP tool kind (`read`, `edit`, `execute`, ... on the wire).
 */
kind: ToolKind | null, 
/**
 * How far it went; None when the agent said nothing this version knows.
 */
status: ToolCallStatus | null, 
/**
 * The call's input, verbatim (any JSON the agent sent).
 */
raw_input: JsonValue | null, 
/**
 * Files the call touches, as the agent named them.
 */
locations: Array<string>, 
/**
 * The text content the agent attached.
 */
text?: string, 
/**
 * The agent's own tool name, when it says it.
 */
name?: string, };

export type ToolCallGate = { 
/**
 * The call as the agent described it: untrusted, shown as given.
 */
tool_call: AgentToolCall, 
/**
 * The call as the permission rules saw it.
 */
request: ToolRequest, 
/**
 * Why no rule decided it: why a human is asked.
 */
reason: string, 
/**
 * The rule that sent it to a human, when one did (e.g. `confinement`).
 */
rule: string | null, 
/**
 * The always-gated category it falls in: a human sees it every time.
 */
always_gated: AlwaysGated | null, 
/**
 * That category in words.
 */
always_gated_why: string | null, 
/**
 * The answers the agent offered (ACP permission options).
 */
agent_options: Array<AgentOption>, 
/**
 * Declared by external sessions (`blocking`); absent otherwise.
 */
ask_kind?: AskKind, 
/**
 * How much it can harm ([`crate::rules::risk_of`]); absent on gates
 * opened before risk was assessed.
 */
risk?: Risk, };

export type ToolCallStatus = "pending" | "in_progress" | "completed" | "failed";

export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "switch_mode" | "other";

export type ToolRequest = { 
/**
 * Claude-Code-style tool name: `Bash`, `Read`, `Edit`, `Write`, `Delete`,
 * `Move`, `Grep`, `Glob`, `WebFetch`, `mcp__server__tool`, ...
 */
tool: string, 
/**
 * ACP tool kind (`read`, `edit`, `execute`, ... on the wire).
 */
kind: ToolKind, 
/**
 * The shell command of a `Bash` / `execute` call.
 */
command: string | null, 
/**
 * Paths the call touches, as the agent gave them (relative to the
 * worktree or absolute).
 */
paths: Array<string>, 
/**
 * Where each of `paths` leads on disk, in the same order, as the engine
 * resolved it (symlinks followed, `..` applied). Empty when nobody
 * resolved them: the rules then see the paths as given.
 */
resolved?: Array<Resolved>, };

export type UnrecognizedEntry = { kind: string, payload: JsonValue, };

export type Urgency = "silent" | "low" | "normal" | "critical";

export type UrgencySettings = { blocking: Urgency | null, question: Urgency | null, info: Urgency | null, };

export type Verdict = "approve" | "reject" | "escalate" | "advise" | "continue" | "reorient" | "pause";

export type WebSettings = { 
/**
 * Serve browsers (at start too, until switched off).
 */
enabled: boolean, 
/**
 * `IP:PORT` to listen on: a loopback address (`127.0.0.1:8765`), or any
 * other only with `tls_cert` and `tls_key`.
 */
addr: string, 
/**
 * The TLS certificate chain, a PEM file's path.
 */
tls_cert: string | null, 
/**
 * The TLS certificate's private key, a PEM file's path.
 */
tls_key: string | null, 
/**
 * Where a TLS-terminating proxy (`tailscale serve`, Caddy, nginx) serves
 * this engine, such as `https://box.tailnet.ts.net`: its pages are
 * answered too, and the first is the URL pairing shows.
 */
public_origins: Array<string>, };

export type WebStatus = { 
/**
 * As the owner set it.
 */
settings: WebSettings, 
/**
 * Whether the engine serves browsers now.
 */
serving: boolean, 
/**
 * The page a browser opens, when it serves (what a pairing shows, with
 * its QR code); null when it does not, or when it listens on every
 * address and no public origin names it.
 */
url: string | null, 
/**
 * Why it does not serve as set: the address is in use, a certificate
 * cannot be used, this engine's host cannot serve browsers.
 */
error: ApiError | null, };

export type Webhook = { id: number, url: string, events: Array<WebhookEvent>, enabled: boolean, created_at: number, };

export type WebhookAdded = { webhook: Webhook, 
/**
 * The key of the hook's signatures (64 hex characters).
 */
secret: string, };

export type WebhookAttempt = { at: number, 
/**
 * The receiver's HTTP status, when it answered.
 */
status_code: number | null, 
/**
 * Why it did not answer (or why its answer is a failure).
 */
error: string | null, duration_ms: number, };

export type WebhookDelivery = { id: number, webhook_id: number, event: WebhookEvent, 
/**
 * The notification's title, as in the body.
 */
title: string, status: DeliveryStatus, attempts: Array<WebhookAttempt>, next_at: number | null, 
/**
 * Why it was given up on.
 */
note: string | null, created_at: number, };

export type WebhookEvent = "agent_question_pending" | "agent_question_blocking" | "run_pending_review" | "run_failed" | "supervisor_escalated" | "supervisor_failed" | "security_event" | "agent_message_blocked" | "disk_full" | "run_finished" | "test";

export type Workspace = { id: number, name: string, path: string, settings: WorkspaceSettings, };

export type WorkspaceSettings = { 
/**
 * Check commands run in the worktree after the agent ends its work.
 */
sensors: Array<string>, 
/**
 * Merge without review when every sensor passes. `None`: the global default.
 */
auto_advance: boolean | null, 
/**
 * Permission rules for every task of the workspace.
 */
permissions?: RuleSet, 
/**
 * The delegated supervisor for the workspace (off when absent).
 */
supervisor?: SupervisorPolicy | null, 
/**
 * Unattended retries of a failed step (off when absent).
 */
retry?: RetryPolicy, 
/**
 * The most each run of the workspace may cost (in the currency its
 * agent reports), unless its task sets its own: reaching it pauses the run.
 */
max_cost?: number, 
/**
 * Two-person merges: a run merges into the base branch only on the
 * approval of a person who neither started it nor is the supervisor.
 */
two_person_merge: boolean, };

// What the cards show of a gate's payload, read from the generated types
// (core's `GateBody`: the payload narrows by the gate's `kind`). The payload
// is untrusted agent text: the cards render the results as text. Blank text
// reads as absent. A payload an older version wrote that did not fit its
// type arrives empty, with the stored JSON in `unreadable_payload`.
import type {
  DeviationCause,
  DeviationGate,
  GateView,
  JsonValue,
  NoticeKind,
  PlanProposal,
  PlanSource,
  Risk,
  StepRecord,
  SupervisorPauseGate,
  ToolCallGate,
} from "../types";

const str = (v: string | null | undefined): string | null => (typeof v === "string" && v.trim() !== "" ? v : null);

export interface PlanView {
  goal: string | null;
  steps: { title: string; agent: string | null }[];
  files: string[];
  risks: string[];
  /** The agent's own words for the plan (untrusted markdown). */
  markdown: string | null;
  source: PlanSource | null;
}

export function planOf(p: PlanProposal): PlanView {
  return {
    goal: str(p.goal),
    steps: p.steps.flatMap((s) => {
      const title = str(s.title);
      return title === null ? [] : [{ title, agent: str(s.agent) }];
    }),
    files: p.files,
    risks: p.risks,
    markdown: str(p.markdown),
    source: p.source,
  };
}

export interface ToolCallView {
  /** ACP tool kind: edit, execute, delete, read... */
  kind: string | null;
  /** The rule tool name: Bash, Edit... */
  tool: string | null;
  command: string | null;
  paths: string[];
  /** New file content of an edit, when the agent sent it. */
  content: string | null;
  reason: string | null;
  rule: string | null;
  alwaysGated: string | null;
  alwaysGatedWhy: string | null;
  /** How much it can harm, as the engine assessed it (null on gates from
   * before risk was assessed). */
  risk: Risk | null;
}

/** A text field of the agent's raw tool input (its shape is the agent's). */
function inputText(input: JsonValue | null, key: string): string | null {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return null;
  const v = input[key];
  return typeof v === "string" ? v : null;
}

export function toolCallOf(p: ToolCallGate): ToolCallView {
  const { request: req, tool_call: call } = p;
  return {
    kind: str(req.kind) ?? str(call.kind),
    tool: str(req.tool) ?? str(call.name),
    command: str(req.command),
    paths: req.paths,
    content: inputText(call.raw_input, "content") ?? inputText(call.raw_input, "new_string"),
    reason: str(p.reason),
    rule: str(p.rule),
    alwaysGated: p.always_gated,
    alwaysGatedWhy: str(p.always_gated_why),
    risk: p.risk ?? null,
  };
}

export interface DeviationView {
  cause: DeviationCause;
  /** A mode breach: the mode the agent switched itself to. */
  mode: string | null;
  error: string | null;
  attempts: number | null;
  maxAttempts: number | null;
}

export function deviationOf(p: DeviationGate): DeviationView {
  return { cause: p.cause, mode: str(p.mode), error: str(p.error), attempts: p.attempts ?? null, maxAttempts: p.max_attempts ?? null };
}

export interface StepView {
  step: number | null;
  confidence: number | null;
  explain: string | null;
  summary: string | null;
  drift: string[];
  destructive: boolean;
  sensors: { command: string; passed: boolean; exitCode: number | null }[];
  retries: number | null;
  rationale: string | null;
  timeoutSeconds: number | null;
}

const NO_STEP: StepView = { step: null, confidence: null, explain: null, summary: null, drift: [], destructive: false, sensors: [], retries: null, rationale: null, timeoutSeconds: null };

function stepView(s: StepRecord): StepView {
  return {
    step: s.step,
    confidence: s.confidence ?? null,
    explain: str(s.explain),
    summary: str(s.summary),
    drift: s.drift,
    destructive: s.destructive,
    sensors: s.sensors.map((x) => ({ command: x.command, passed: x.passed, exitCode: x.exit_code })),
    retries: s.retries,
    rationale: null,
    timeoutSeconds: null,
  };
}

/** A step review's payload, or a supervisor pause's (its step is nested;
 * a session's pause has none). */
export function stepOf(g: { kind: "step_review"; payload: StepRecord } | { kind: "supervisor_pause"; payload: SupervisorPauseGate }): StepView {
  if (g.kind === "step_review") return stepView(g.payload);
  const p = g.payload;
  return { ...(p.step ? stepView(p.step) : NO_STEP), rationale: str(p.rationale), timeoutSeconds: p.timeout_seconds ?? null };
}

export interface InfoView {
  /** What the agent told the user (untrusted text). */
  message: string | null;
  /** What raised it: a session's notification, or the end of its turn. */
  notice: NoticeKind | null;
}

/** An info item (`ask_kind: "info"`): a notice from an external session, a
 * question gate. A reply to it becomes steering for the session. */
export function infoOf(g: GateView): InfoView {
  if (g.kind !== "question") return { message: null, notice: null };
  return { message: str(g.payload.message), notice: g.payload.notice ?? null };
}

/** The stored JSON of a payload that did not fit its kind's type, as text
 * to show instead (null when the payload was read). */
export function unreadableText(g: GateView): string | null {
  if (g.unreadable_payload === undefined) return null;
  return JSON.stringify(g.unreadable_payload, null, 2);
}

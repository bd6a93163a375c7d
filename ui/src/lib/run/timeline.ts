// A run's activity entries as timeline items, and the plan they carry. Pure.
//
// Folding keeps the timeline readable: a tool call's updates (pending, in
// progress, completed) and the rule decision on it become one item; runs of
// plan updates and of file reads become one item each. Payloads are agent or
// engine JSON: every field is read defensively and only ever shown as text.
import type { ActivityView, JsonValue, MessageView, PlanSource } from "../types";
import { planSourceOf } from "../plan/source";

export type Tone = "neutral" | "good" | "bad" | "attention" | "info";

export interface TimelineItem {
  /** Stable across refolds: the first entry's id. */
  key: number;
  /** The last folded entry's id. */
  lastId: number;
  at: number;
  kind: string;
  label: string;
  tone: Tone;
  /** One line. */
  title: string;
  /** Free text (a message, a thought, a reason), or null. */
  text: string | null;
  /** Verbatim output for a <pre> (sensor output, tool input), or null. */
  output: string | null;
  /** Tool calls: how the call was decided and how it went. */
  decision: string | null;
  status: string | null;
  /** Entries folded into this item. */
  count: number;
}

export interface PlanStep {
  content: string;
  priority: string;
  status: "pending" | "in_progress" | "completed" | "other";
}

export interface Proposal {
  goal: string;
  steps: Array<{ title: string; agent: string | null }>;
  files: string[];
  risks: string[];
  /** The agent's own words for the plan (untrusted markdown). */
  markdown: string | null;
  source: PlanSource | null;
}

type Obj = { [key: string]: JsonValue };

function obj(v: JsonValue | undefined): Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {};
}
function str(v: JsonValue | undefined): string | null {
  return typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : null;
}
function num(v: JsonValue | undefined): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}
function list(v: JsonValue | undefined): JsonValue[] {
  return Array.isArray(v) ? v : [];
}
function strings(v: JsonValue | undefined): string[] {
  return list(v).map((x) => str(x) ?? JSON.stringify(x));
}

/** A JSON value for a <pre>; null when there is nothing worth showing. */
export function pretty(v: JsonValue | undefined): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "object" && Object.keys(v).length === 0) return null;
  return JSON.stringify(v, null, 2);
}

const LABELS: Record<string, string> = {
  message: "message",
  thought: "thought",
  plan: "plan",
  plan_proposed: "plan proposed",
  tool_call: "tool call",
  tool_allowed: "allowed",
  tool_denied: "denied",
  rule_added: "rule",
  sensor: "check",
  step_finished: "step",
  deviation: "deviation",
  verdict: "supervisor",
  user_instruction: "you",
  error: "error",
  protocol_error: "protocol",
  file_read: "read",
  file_written: "write",
  file_refused: "refused",
  drift: "drift",
  log: "log",
  step_started: "step",
  mode: "mode",
  security: "security",
  session: "session",
  plan_skipped: "plan",
  plan_answer: "plan",
  session_started: "session",
  notice: "notice",
  turn_ended: "turn",
  steering_delivered: "steering",
  step_reported: "step",
  gate_withdrawn: "withdrawn",
  message_sent: "message",
  message_received: "message",
  retry_queued: "retry",
  carried_on: "restart",
  question_again: "asked again",
};

function planSteps(payload: JsonValue): PlanStep[] {
  return list(obj(payload).entries).map((e) => {
    const o = obj(e);
    const s = str(o.status);
    return {
      content: str(o.content) ?? "",
      priority: str(o.priority) ?? "",
      status: s === "pending" || s === "in_progress" || s === "completed" ? s : "other",
    };
  });
}

/** The agent's latest progress plan (from "plan" entries), or null. */
export function latestPlan(entries: readonly ActivityView[]): PlanStep[] | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.kind === "plan") return planSteps(e.payload);
  }
  return null;
}

/** The latest plan put up for approval ("plan_proposed"), or null. */
export function latestProposal(entries: readonly ActivityView[]): Proposal | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.kind !== "plan_proposed") continue;
    const p = obj(e.payload);
    return {
      goal: str(p.goal) ?? "",
      steps: list(p.steps).map((s) => ({ title: str(obj(s).title) ?? "", agent: str(obj(s).agent) })),
      files: strings(p.files),
      risks: strings(p.risks),
      markdown: typeof p.markdown === "string" && p.markdown.trim() !== "" ? p.markdown : null,
      source: planSourceOf(p.source),
    };
  }
  return null;
}

function item(e: ActivityView, fields: Partial<TimelineItem>): TimelineItem {
  return {
    key: e.id,
    lastId: e.id,
    at: e.at,
    kind: e.kind,
    label: LABELS[e.kind] ?? e.kind.replace(/_/g, " "),
    tone: "neutral",
    title: "",
    text: null,
    output: null,
    decision: null,
    status: null,
    count: 1,
    ...fields,
  };
}

/** One entry on its own, before folding. */
export function describe(e: ActivityView): TimelineItem {
  const p = obj(e.payload);
  const text = str(p.text);
  switch (e.kind) {
    case "message":
      return item(e, { title: "The agent says", text });
    case "thought":
      return item(e, { title: "The agent thinks", text, tone: "info" });
    case "plan": {
      const steps = planSteps(e.payload);
      const done = steps.filter((s) => s.status === "completed").length;
      const now = steps.find((s) => s.status === "in_progress");
      return item(e, { title: `Plan: ${done} of ${steps.length} done${now ? `; now: ${now.content}` : ""}` });
    }
    case "plan_proposed": {
      const prop = latestProposal([e])!;
      const lines = prop.steps.map((s, i) => `${i + 1}. ${s.title}${s.agent ? ` (${s.agent})` : ""}`);
      if (prop.files.length) lines.push(`Files: ${prop.files.join(", ")}`);
      if (prop.risks.length) lines.push(`Risks: ${prop.risks.join("; ")}`);
      return item(e, { title: `Proposed plan: ${prop.goal}`, text: lines.join("\n"), tone: "attention" });
    }
    case "tool_call": {
      const status = str(p.status);
      return item(e, {
        title: str(p.title) ?? `${str(p.kind) ?? "a"} tool call`,
        status,
        tone: status === "failed" ? "bad" : status === "completed" ? "good" : "neutral",
        output: pretty(p.raw_input),
      });
    }
    case "tool_allowed":
      return item(e, { title: str(p.title) ?? "tool call", decision: `allowed by rule ${text ?? ""}`.trim(), tone: "good" });
    case "tool_denied":
      return item(e, { title: str(p.title) ?? "tool call", decision: `denied: ${text ?? ""}`, tone: "bad" });
    case "rule_added":
      return item(e, { title: text ?? "rule added" });
    case "sensor": {
      const passed = p.passed === true;
      const code = num(p.exit_code);
      return item(e, {
        title: `${str(p.command) ?? "check"}: ${passed ? "passed" : "failed"}${code === null ? "" : ` (exit ${code})`}`,
        tone: passed ? "good" : "bad",
        output: str(p.output),
      });
    }
    case "step_finished": {
      const conf = num(p.confidence);
      const step = num(p.step);
      return item(e, {
        title: `Step ${step ?? "?"} finished${conf === null ? "" : `, confidence ${conf.toFixed(2)}`}`,
        text: str(p.explain),
        tone: conf === null ? "neutral" : conf >= 0.8 ? "good" : conf >= 0.5 ? "attention" : "bad",
      });
    }
    case "step_started": {
      const step = num(p.step);
      return item(e, { title: `Step ${step ?? "?"}: ${text ?? "(untitled)"}`, tone: "info" });
    }
    case "mode": {
      const mode = str(p.mode);
      return item(e, { title: mode === null ? "Mode" : `Mode: ${mode}`, text });
    }
    case "security": {
      const mode = str(p.mode);
      return item(e, {
        title: `The agent switched itself to mode ${mode === null ? "?" : `“${mode}”`}, which acts unasked`,
        text,
        tone: "bad",
      });
    }
    case "session": {
      const modes = list(p.modes).flatMap((m) => {
        const o = obj(m);
        const id = str(o.id);
        if (id === null) return [];
        const name = str(o.name);
        return [name && name !== id ? `${id} (${name})` : id];
      });
      return item(e, { title: text ?? "Agent session", text: modes.length ? `Modes it offers: ${modes.join(", ")}` : null });
    }
    case "plan_skipped":
      return item(e, { title: "Planning skipped", text });
    case "plan_answer":
      return item(e, { title: text ?? "Answered the agent's plan request" });
    case "session_started":
      return item(e, { title: text ?? "The session reached Overseer", tone: "info" });
    case "notice":
      return item(e, { title: str(p.title) ?? "The session says", text, tone: "info" });
    case "turn_ended":
      return item(e, { title: "The agent finished its turn", text });
    case "steering_delivered":
      return item(e, { title: "Your steering reached the agent", text, tone: "info" });
    case "step_reported": {
      const status = str(p.status);
      const files = strings(p.files_touched);
      const summary = str(p.summary);
      const lines = [summary, files.length ? `Files: ${files.join(", ")}` : null].filter((l): l is string => l !== null && l !== "");
      return item(e, {
        title: `Step: ${str(p.step) ?? "(untitled)"}${status ? ` (${status.replace(/_/g, " ")})` : ""}`,
        text: lines.length ? lines.join("\n") : null,
        status,
        tone: status === "failed" || status === "blocked" ? "bad" : status === "done" || status === "completed" ? "good" : "neutral",
      });
    }
    case "retry_queued": {
      const attempt = num(p.attempt);
      const wait = num(p.wait_ms);
      return item(e, {
        title: `Retry${attempt === null ? "" : ` ${attempt}`} queued${wait === null ? "" : ` (in ${Math.round(wait / 1000)} s)`}: ${text ?? "the step failed"}`,
        output: str(p.error),
        tone: "attention",
      });
    }
    case "gate_withdrawn":
      return item(e, { title: text ?? "A question was withdrawn", tone: "attention" });
    case "carried_on":
      return item(e, { title: text ?? "The engine restarted: the run carries on", tone: "attention" });
    case "question_again":
      return item(e, { title: text ?? "The agent asked its question again", tone: "info" });
    case "message_sent":
    case "message_received": {
      // The engine's entry ({text, from, to, status, blocked_reason,
      // correlation_id, message_id}), or a message itself ({body, ...}).
      const body = str(p.body) ?? text;
      const to = messageTarget(p.to);
      const from = str(p.from);
      const blocked = str(p.status) === "blocked";
      const reason = str(p.blocked_reason);
      const corr = str(p.correlation_id);
      return item(e, {
        title: `Message${from ? ` from ${from}` : ""}${to ? ` to ${to}` : ""}${corr ? ` · ${corr}` : ""}${blocked ? ": held back" : ""}`,
        text: [body, blocked ? `Held back by the hub${reason ? `: ${reason}` : ""}` : null].filter((l): l is string => l !== null).join("\n\n") || null,
        tone: blocked ? "bad" : "info",
      });
    }
    case "deviation":
      return item(e, { title: `Deviation${str(p.cause) ? `: ${str(p.cause)}` : ""}`, text, tone: "bad" });
    case "verdict": {
      const v = str(p.verdict) ?? "?";
      const correction = str(p.correction);
      return item(e, {
        title: `Supervisor: ${v.toUpperCase()}`,
        text: correction ? `${text ?? ""}\nCorrection: ${correction}`.trim() : text,
        tone: v === "continue" ? "good" : v === "pause" ? "bad" : "attention",
      });
    }
    case "user_instruction":
      return item(e, { title: `Instruction${str(p.by) ? ` from ${str(p.by)}` : ""}`, text, tone: "info" });
    case "error":
    case "protocol_error":
      return item(e, { title: e.kind === "error" ? "Error" : "Protocol error", text, tone: "bad" });
    case "file_read":
      return item(e, { title: `Read ${str(p.path) ?? "a file"}` });
    case "file_written": {
      const bytes = num(p.bytes);
      return item(e, { title: `Wrote ${str(p.path) ?? "a file"}${bytes === null ? "" : ` (${bytes} bytes)`}` });
    }
    case "file_refused":
      return item(e, { title: `Refused ${str(p.path) ?? "a file"}`, text, tone: "bad" });
    case "drift":
      return item(e, { title: "Changed files outside the plan", text, tone: "attention" });
    case "log": {
      const lines = num(p.lines);
      return item(e, { title: `Agent log${lines === null ? "" : ` (${lines} ${lines === 1 ? "line" : "lines"})`}`, output: text });
    }
    default:
      return item(e, { title: text ?? e.kind.replace(/_/g, " "), output: text ? null : pretty(e.payload) });
  }
}

/** Who a message is addressed to, in words ("the user", "run 4"), or null. */
export function messageTarget(to: JsonValue | undefined): string | null {
  const t = obj(to);
  switch (str(t.to)) {
    case "supervisor":
      return "the supervisor";
    case "user":
      return "the user";
    case "broadcast":
      return "everyone";
    case "run": {
      const run = num(t.run);
      return run === null ? "a run" : `run ${run}`;
    }
    default:
      return null;
  }
}

/** Activity entries (in id order) as timeline items, folded. */
export function foldActivity(entries: readonly ActivityView[]): TimelineItem[] {
  const out: TimelineItem[] = [];
  /** Tool call id -> its item. */
  const calls = new Map<string, TimelineItem>();
  /** Title -> calls with that title and no decision yet, newest last. */
  const undecided = new Map<string, TimelineItem[]>();
  for (const e of entries) {
    const d = describe(e);
    const prev = out[out.length - 1];
    if (e.kind === "tool_call") {
      const id = str(obj(e.payload).id);
      const open = id === null ? undefined : calls.get(id);
      if (open) {
        const before = open.title;
        mergeCall(open, d);
        if (open.title !== before && open.decision === null) {
          // Named late: file it under its real title.
          const old = undecided.get(before);
          if (old?.includes(open)) {
            old.splice(old.indexOf(open), 1);
            file(undecided, open);
          }
        }
        continue;
      }
      out.push(d);
      if (id !== null) calls.set(id, d);
      file(undecided, d);
      continue;
    }
    if (e.kind === "tool_allowed" || e.kind === "tool_denied") {
      // The decision on the latest undecided call with that title.
      const call = undecided.get(d.title)?.pop();
      if (call) {
        call.decision = d.decision;
        call.tone = callTone(call);
        call.lastId = e.id;
        call.count++;
        continue;
      }
      out.push(d);
      continue;
    }
    if (prev && prev.kind === e.kind && (e.kind === "plan" || e.kind === "file_read")) {
      if (e.kind === "file_read") {
        const first = prev.count === 1 ? prev.title.slice("Read ".length) : prev.text;
        prev.text = `${first}\n${str(obj(e.payload).path) ?? "?"}`;
        prev.title = `Read ${prev.count + 1} files`;
      } else {
        prev.title = d.title;
      }
      prev.lastId = e.id;
      prev.at = e.at;
      prev.count++;
      continue;
    }
    out.push(d);
  }
  return out;
}

function file(undecided: Map<string, TimelineItem[]>, call: TimelineItem): void {
  const same = undecided.get(call.title);
  if (same) same.push(call);
  else undecided.set(call.title, [call]);
}

function mergeCall(into: TimelineItem, next: TimelineItem): void {
  if (next.status) into.status = next.status;
  if (next.output) into.output = next.output;
  if (next.title && !/ call$/.test(next.title)) into.title = next.title;
  into.tone = callTone(into);
  into.lastId = next.lastId;
  into.count++;
}

function callTone(c: TimelineItem): Tone {
  if (c.status === "failed" || c.decision?.startsWith("denied")) return "bad";
  return c.status === "completed" ? "good" : "neutral";
}

/** Text longer than this is folded behind "Show all". */
export const TEXT_FOLD = 1_200;
/** Output longer than this shows its first part until asked for all of it. */
export const OUTPUT_FOLD = 20_000;

/** The first `max` characters and how many were left out. */
export function clip(text: string, max: number): { text: string; hidden: number } {
  if (text.length <= max) return { text, hidden: 0 };
  return { text: text.slice(0, max), hidden: text.length - max };
}

/** A message the run sent or received, as a timeline item. Its key is
 * negative so it never meets an activity entry's. */
export function messageItem(m: MessageView, run: number): TimelineItem {
  const kind = m.from_run === run ? "message_sent" : "message_received";
  const e: ActivityView = { id: -m.id, run_id: run, at: m.at, kind, payload: m as unknown as JsonValue };
  return describe(e);
}

/** The run's timeline with its messages among the activity, by time. The
 * engine records a run's own messages and those addressed to it as activity
 * (`message_sent`, `message_received`, naming the message id): those are not
 * shown twice; what remains are broadcasts the run received. */
export function withMessages(items: readonly TimelineItem[], entries: readonly ActivityView[], messages: readonly MessageView[], run: number): TimelineItem[] {
  if (messages.length === 0) return items as TimelineItem[];
  const recorded = new Set<number>();
  for (const e of entries) {
    if (e.kind !== "message_sent" && e.kind !== "message_received") continue;
    const id = num(obj(e.payload).message_id);
    if (id !== null) recorded.add(id);
  }
  const extra = messages.filter((m) => !recorded.has(m.id)).map((m) => messageItem(m, run));
  if (extra.length === 0) return items as TimelineItem[];
  return [...items, ...extra].sort((a, b) => a.at - b.at);
}

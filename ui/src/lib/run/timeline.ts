// A run's activity entries as timeline items, and the plan they carry. Pure.
//
// Folding keeps the timeline readable: a tool call's updates (pending, in
// progress, completed) and the rule decision on it become one item; runs of
// plan updates and of file reads become one item each. Payloads are typed by
// kind (the engine decodes every stored entry; one it cannot read arrives as
// "unrecognized", with its raw kind and JSON); agents' text is only ever
// shown as text.
import type { Activity, ActivityView, JsonValue, MessageTo, MessageView, PlanProposal, PlanSource, ProgressEntry } from "../types";
import { planSourceOf } from "../plan/source";
import { formatCost } from "../fleet/fleet";

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

/** A JSON value for a <pre>; null when there is nothing worth showing. */
export function pretty(v: JsonValue | undefined): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "object" && Object.keys(v).length === 0) return null;
  return JSON.stringify(v, null, 2);
}

/** An entry the engine could not read (an unknown kind, an older shape):
 * its `text` when it has one, as the timeline showed every entry before. */
function rawText(v: JsonValue): string | null {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return null;
  const t = v.text;
  return typeof t === "string" ? t : typeof t === "number" || typeof t === "boolean" ? String(t) : null;
}

/** The kind as stored: an unrecognized entry keeps its own. */
export function kindOf(e: ActivityView): string {
  return e.kind === "unrecognized" ? e.payload.kind : e.kind;
}

const LABELS: Record<Activity["kind"], string> = {
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
  merge: "merge",
  cosign: "cosign",
  decided: "decided",
  unrecognized: "entry",
};

function planSteps(entries: readonly ProgressEntry[]): PlanStep[] {
  return entries.map((e) => {
    const s = e.status;
    return {
      content: e.content,
      priority: e.priority,
      status: s === "pending" || s === "in_progress" || s === "completed" ? s : "other",
    };
  });
}

/** The agent's latest progress plan (from "plan" entries), or null. */
export function latestPlan(entries: readonly ActivityView[]): PlanStep[] | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.kind === "plan") return planSteps(e.payload.entries);
  }
  return null;
}

function proposal(p: PlanProposal): Proposal {
  return {
    goal: p.goal,
    steps: p.steps.map((s) => ({ title: s.title, agent: s.agent ?? null })),
    files: p.files,
    risks: p.risks,
    markdown: typeof p.markdown === "string" && p.markdown.trim() !== "" ? p.markdown : null,
    source: planSourceOf(p.source),
  };
}

/** The latest plan put up for approval ("plan_proposed"), or null. */
export function latestProposal(entries: readonly ActivityView[]): Proposal | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.kind === "plan_proposed") return proposal(e.payload);
  }
  return null;
}

function item(e: ActivityView, fields: Partial<TimelineItem>): TimelineItem {
  const kind = kindOf(e);
  return {
    key: e.id,
    lastId: e.id,
    at: e.at,
    kind,
    label: e.kind === "unrecognized" ? kind.replace(/_/g, " ") : LABELS[e.kind],
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
  switch (e.kind) {
    case "message":
      return item(e, { title: "The agent says", text: e.payload.text });
    case "thought":
      return item(e, { title: "The agent thinks", text: e.payload.text, tone: "info" });
    case "plan": {
      const steps = planSteps(e.payload.entries);
      const done = steps.filter((s) => s.status === "completed").length;
      const now = steps.find((s) => s.status === "in_progress");
      return item(e, { title: `Plan: ${done} of ${steps.length} done${now ? `; now: ${now.content}` : ""}` });
    }
    case "plan_proposed": {
      const prop = proposal(e.payload);
      const lines = prop.steps.map((s, i) => `${i + 1}. ${s.title}${s.agent ? ` (${s.agent})` : ""}`);
      if (prop.files.length) lines.push(`Files: ${prop.files.join(", ")}`);
      if (prop.risks.length) lines.push(`Risks: ${prop.risks.join("; ")}`);
      return item(e, { title: `Proposed plan: ${prop.goal}`, text: lines.join("\n"), tone: "attention" });
    }
    case "tool_call": {
      const { status, title, kind, raw_input } = e.payload;
      return item(e, {
        title: title ?? `${kind ?? "a"} tool call`,
        status,
        tone: status === "failed" ? "bad" : status === "completed" ? "good" : "neutral",
        output: pretty(raw_input ?? undefined),
      });
    }
    case "tool_allowed":
      return item(e, { title: e.payload.title, decision: `allowed by rule ${e.payload.text}`.trim(), tone: "good" });
    case "tool_denied":
      return item(e, { title: e.payload.title, decision: `denied: ${e.payload.text}`, tone: "bad" });
    case "rule_added":
      return item(e, { title: e.payload.text || "rule added" });
    case "sensor": {
      const { passed, exit_code: code, command, output } = e.payload;
      return item(e, {
        title: `${command}: ${passed ? "passed" : "failed"}${code === null ? "" : ` (exit ${code})`}`,
        tone: passed ? "good" : "bad",
        output: output || null,
      });
    }
    case "step_finished": {
      const conf = e.payload.confidence ?? null;
      const cost = e.payload.cost ? `, cost ${formatCost(e.payload.cost)}` : "";
      return item(e, {
        title: `Step ${e.payload.step} finished${conf === null ? "" : `, confidence ${conf.toFixed(2)}`}${cost}`,
        text: e.payload.explain ?? null,
        tone: conf === null ? "neutral" : conf >= 0.8 ? "good" : conf >= 0.5 ? "attention" : "bad",
      });
    }
    case "step_started":
      return item(e, { title: `Step ${e.payload.step}: ${e.payload.text || "(untitled)"}`, tone: "info" });
    case "mode":
      return item(e, { title: `Mode: ${e.payload.mode}`, text: e.payload.text });
    case "security": {
      const { mode, text } = e.payload;
      // A mode breach names the mode; the other events say it in words.
      return item(e, {
        title: mode === undefined ? "Security event" : `The agent switched itself to mode “${mode}”, which acts unasked`,
        text,
        tone: "bad",
      });
    }
    case "session": {
      const modes = e.payload.modes.map((m) => (m.name && m.name !== m.id ? `${m.id} (${m.name})` : m.id));
      return item(e, { title: e.payload.text || "Agent session", text: modes.length ? `Modes it offers: ${modes.join(", ")}` : null });
    }
    case "plan_skipped":
      return item(e, { title: "Planning skipped", text: e.payload.text });
    case "plan_answer":
      return item(e, { title: e.payload.text || "Answered the agent's plan request" });
    case "session_started":
      return item(e, { title: e.payload.text || "The session reached Overseer", tone: "info" });
    case "notice":
      return item(e, { title: e.payload.title ?? "The session says", text: e.payload.text, tone: "info" });
    case "turn_ended":
      return item(e, { title: "The agent finished its turn", text: e.payload.text });
    case "steering_delivered":
      return item(e, { title: "Your steering reached the agent", text: e.payload.text, tone: "info" });
    case "step_reported": {
      const { status, files_touched: files, summary, step } = e.payload;
      const lines = [summary, files.length ? `Files: ${files.join(", ")}` : null].filter((l): l is string => l !== null && l !== "");
      return item(e, {
        title: `Step: ${step || "(untitled)"}${status ? ` (${status.replace(/_/g, " ")})` : ""}`,
        text: lines.length ? lines.join("\n") : null,
        status: status || null,
        tone: status === "failed" || status === "blocked" ? "bad" : status === "done" || status === "completed" ? "good" : "neutral",
      });
    }
    case "retry_queued": {
      const { attempt, wait_ms: wait, text, error } = e.payload;
      return item(e, {
        title: `Retry ${attempt} queued (in ${Math.round(wait / 1000)} s): ${text || "the step failed"}`,
        output: error || null,
        tone: "attention",
      });
    }
    case "gate_withdrawn":
      return item(e, { title: e.payload.text || "A question was withdrawn", tone: "attention" });
    case "carried_on":
      return item(e, { title: e.payload.text || "The engine restarted: the run carries on", tone: "attention" });
    case "question_again":
      return item(e, { title: e.payload.text || "The agent asked its question again", tone: "info" });
    case "message_sent":
    case "message_received": {
      const { text: body, from, status, blocked_reason: reason, correlation_id: corr } = e.payload;
      const to = messageTarget(e.payload.to);
      const blocked = status === "blocked";
      return item(e, {
        title: `Message${from ? ` from ${from}` : ""}${to ? ` to ${to}` : ""}${corr ? ` · ${corr}` : ""}${blocked ? ": held back" : ""}`,
        text: [body, blocked ? `Held back by the hub${reason ? `: ${reason}` : ""}` : null].filter((l): l is string => l !== null).join("\n\n") || null,
        tone: blocked ? "bad" : "info",
      });
    }
    case "deviation":
      return item(e, { title: `Deviation${e.payload.cause ? `: ${e.payload.cause}` : ""}`, text: e.payload.text, tone: "bad" });
    case "verdict": {
      const { verdict: v, correction, text } = e.payload;
      return item(e, {
        title: `Supervisor: ${v.toUpperCase()}`,
        text: correction ? `${text}\nCorrection: ${correction}`.trim() : text,
        tone: v === "continue" ? "good" : v === "pause" ? "bad" : "attention",
      });
    }
    case "user_instruction":
      return item(e, { title: `Instruction${e.payload.by ? ` from ${e.payload.by}` : ""}`, text: e.payload.text, tone: "info" });
    case "error":
      return item(e, { title: "Error", text: e.payload.text, tone: "bad" });
    case "protocol_error":
      return item(e, { title: "Protocol error", text: e.payload.text, tone: "bad" });
    case "file_read":
      return item(e, { title: `Read ${e.payload.path}` });
    case "file_written":
      return item(e, { title: `Wrote ${e.payload.path} (${e.payload.bytes} bytes)` });
    case "file_refused":
      return item(e, { title: `Refused ${e.payload.path}`, text: e.payload.text, tone: "bad" });
    case "drift":
      return item(e, { title: "Changed files outside the plan", text: e.payload.text, tone: "attention" });
    case "log": {
      const lines = e.payload.lines;
      return item(e, { title: `Agent log (${lines} ${lines === 1 ? "line" : "lines"})`, output: e.payload.text });
    }
    case "merge":
      return item(e, { title: e.payload.text || "merge" });
    case "cosign":
      return item(e, { title: e.payload.text || "Approved; the merge waits for the supervisor's co-sign" });
    case "decided":
      return item(e, { title: e.payload.text || `Decided by ${e.payload.by} through ${e.payload.device.name}`, tone: "info" });
    case "unrecognized": {
      // Shown as every entry was before it was typed: its text, else its kind
      // and its JSON.
      const text = rawText(e.payload.payload);
      return item(e, { title: text ?? e.payload.kind.replace(/_/g, " "), output: text ? null : pretty(e.payload.payload) });
    }
    default: {
      const unhandled: never = e;
      return unhandled;
    }
  }
}

/** Who a message is addressed to, in words ("the user", "run 4"). */
export function messageTarget(to: MessageTo): string {
  switch (to.to) {
    case "supervisor":
      return "the supervisor";
    case "user":
      return "the user";
    case "broadcast":
      return "everyone";
    case "run":
      return `run ${to.run}`;
    case "workspace":
      return `every run of workspace ${to.workspace}`;
    case "task":
      return `every run of task ${to.task}`;
    default: {
      const unhandled: never = to;
      return unhandled;
    }
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
      const id = e.payload.id;
      const open = calls.get(id);
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
      calls.set(id, d);
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
    if (prev && prev.kind === e.kind && e.kind === "file_read") {
      const first = prev.count === 1 ? prev.title.slice("Read ".length) : prev.text;
      prev.text = `${first}\n${e.payload.path}`;
      prev.title = `Read ${prev.count + 1} files`;
      prev.lastId = e.id;
      prev.at = e.at;
      prev.count++;
      continue;
    }
    if (prev && prev.kind === e.kind && e.kind === "plan") {
      prev.title = d.title;
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
  const payload = {
    text: m.body,
    to: m.to,
    from: m.from,
    status: m.status,
    blocked_reason: m.blocked_reason,
    correlation_id: m.correlation_id,
    message_id: m.id,
  };
  const e: ActivityView =
    m.from_run === run
      ? { id: -m.id, run_id: run, at: m.at, kind: "message_sent", payload }
      : { id: -m.id, run_id: run, at: m.at, kind: "message_received", payload };
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
    if (e.kind === "message_sent" || e.kind === "message_received") recorded.add(e.payload.message_id);
  }
  const extra = messages.filter((m) => !recorded.has(m.id)).map((m) => messageItem(m, run));
  if (extra.length === 0) return items as TimelineItem[];
  return [...items, ...extra].sort((a, b) => a.at - b.at);
}

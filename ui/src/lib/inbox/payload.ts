// Typed views of a gate's payload, as the engine writes it for each kind
// (crates/overseer-engine/src/orchestrator.rs). The payload is untrusted agent
// text: these only pick fields and check their types; the cards render the
// results as text. A missing or mistyped field reads as absent.
import type { JsonValue, PlanSource } from "../types";
import { planSourceOf } from "../plan/source";

type Obj = { [key: string]: JsonValue };
const obj = (v: JsonValue | undefined): Obj => (typeof v === "object" && v !== null && !Array.isArray(v) ? v : {});
const str = (v: JsonValue | undefined): string | null => (typeof v === "string" && v.trim() !== "" ? v : null);
const num = (v: JsonValue | undefined): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const strs = (v: JsonValue | undefined): string[] => (Array.isArray(v) ? v.flatMap((x) => (typeof x === "string" ? [x] : [])) : []);

export interface PlanView {
  goal: string | null;
  steps: { title: string; agent: string | null }[];
  files: string[];
  risks: string[];
  /** The agent's own words for the plan (untrusted markdown). */
  markdown: string | null;
  source: PlanSource | null;
}

export function planOf(payload: JsonValue): PlanView {
  const p = obj(payload);
  const steps = Array.isArray(p["steps"])
    ? p["steps"].flatMap((s) => {
        if (typeof s === "string") return [{ title: s, agent: null }];
        const o = obj(s);
        const title = str(o["title"]);
        return title === null ? [] : [{ title, agent: str(o["agent"]) }];
      })
    : [];
  return {
    goal: str(p["goal"]),
    steps,
    files: strs(p["files"]),
    risks: strs(p["risks"]),
    markdown: str(p["markdown"]),
    source: planSourceOf(p["source"]),
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
}

export function toolCallOf(payload: JsonValue): ToolCallView {
  const p = obj(payload);
  const req = obj(p["request"]);
  const call = obj(p["tool_call"]);
  const raw = obj(call["raw_input"]);
  return {
    kind: str(req["kind"]) ?? str(call["kind"]),
    tool: str(req["tool"]) ?? str(call["name"]),
    command: str(req["command"]),
    paths: strs(req["paths"]),
    content: typeof raw["content"] === "string" ? raw["content"] : typeof raw["new_string"] === "string" ? raw["new_string"] : null,
    reason: str(p["reason"]),
    rule: str(p["rule"]),
    alwaysGated: str(p["always_gated"]),
    alwaysGatedWhy: str(p["always_gated_why"]),
  };
}

export interface DeviationView {
  cause: string | null;
  /** A mode breach: the mode the agent switched itself to. */
  mode: string | null;
  error: string | null;
  attempts: number | null;
  maxAttempts: number | null;
}

export function deviationOf(payload: JsonValue): DeviationView {
  const p = obj(payload);
  return { cause: str(p["cause"]), mode: str(p["mode"]), error: str(p["error"]), attempts: num(p["attempts"]), maxAttempts: num(p["max_attempts"]) };
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

/** A step review's payload, or a supervisor pause's (its step is nested). */
export function stepOf(payload: JsonValue): StepView {
  const p = obj(payload);
  const s = p["step"] !== undefined && typeof p["step"] === "object" ? obj(p["step"]) : p;
  const sensors = Array.isArray(s["sensors"])
    ? s["sensors"].flatMap((x) => {
        const o = obj(x);
        const command = str(o["command"]);
        return command === null ? [] : [{ command, passed: o["passed"] === true, exitCode: num(o["exit_code"]) }];
      })
    : [];
  return {
    step: num(s["step"]),
    confidence: num(s["confidence"]) ?? num(p["confidence"]),
    explain: str(s["explain"]) ?? str(p["explain"]),
    summary: str(s["summary"]),
    drift: strs(s["drift"]),
    destructive: s["destructive"] === true,
    sensors,
    retries: num(s["retries"]),
    rationale: str(p["rationale"]),
    timeoutSeconds: num(p["timeout_seconds"]),
  };
}

export interface InfoView {
  /** What the agent told the user (untrusted text). */
  message: string | null;
  /** What raised it: a session's notification, or the end of its turn. */
  notice: "notification" | "stop" | null;
}

/** An info item's payload (`ask_kind: "info"`): a notice from an external
 * session. A reply to it becomes steering for the session. */
export function infoOf(payload: JsonValue): InfoView {
  const p = obj(payload);
  const n = p["notice"];
  return { message: str(p["message"]), notice: n === "notification" || n === "stop" ? n : null };
}

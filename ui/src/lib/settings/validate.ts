// The settings forms as the user edits them, turned into the requests the
// engine takes: numbers parsed from text, one rule or argument per line.
// Only form handling lives here: whether a setting is allowed (ranges, rule
// syntax, a key pasted for a variable name, ...) is the engine's to say,
// through a dry run as the user types (./check.svelte.ts) and the refusal
// of a save, each under the field it names (FieldError in core).
import type {
  Autonomy,
  EvaluatorConfig,
  FieldError,
  GateKind,
  NotificationKind,
  RuleSet,
  SupervisorPolicy,
} from "../types";

export type { FieldError };

export type Result<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

export const AUTONOMY_LEVELS: readonly Autonomy[] = ["advisory", "cosign", "autonomous"];

/** The gate kinds the form offers authority over (the engine refuses
 * entries for supervisor pauses and deviations: they exist to ask a human). */
export const SUPERVISED_GATES: readonly { kind: GateKind; label: string; note?: string }[] = [
  { kind: "plan", label: "Plans" },
  { kind: "tool_call", label: "Tool calls" },
  { kind: "step_review", label: "Step reviews" },
  { kind: "merge_review", label: "Merge reviews" },
  { kind: "question", label: "Questions", note: "Questions are yours to answer: the supervisor only advises on them, whatever is set here." },
];

export type AuthorityChoice = "inherit" | Autonomy;

export type EvaluatorType = EvaluatorConfig["type"];

/** The supervisor form as the user edits it: numbers as typed text. */
export interface PolicyForm {
  enabled: boolean;
  autonomy: Autonomy;
  authority: Record<string, AuthorityChoice>;
  evaluator: EvaluatorType;
  command: string;
  /** One argument per line. */
  args: string;
  baseUrl: string;
  model: string;
  apiKeyEnv: string;
  maxReorient: string;
  timeout: string;
  pauseTimeout: string;
  /** Seconds an autonomous decision waits before it takes effect. */
  grace: string;
  alwaysSupervise: boolean;
}

/** Where each input of the policy form sits in the engine's field paths. */
export const POLICY_FIELDS = {
  maxReorient: "policy.max_reorient_attempts",
  timeout: "policy.timeout_seconds",
  pauseTimeout: "policy.pause_timeout_seconds",
  grace: "policy.grace_seconds",
  command: "policy.evaluator.command",
  baseUrl: "policy.evaluator.base_url",
  model: "policy.evaluator.model",
  apiKeyEnv: "policy.evaluator.api_key_env",
} as const;

export function policyForm(p: SupervisorPolicy): PolicyForm {
  const authority: Record<string, AuthorityChoice> = {};
  for (const g of SUPERVISED_GATES) authority[g.kind] = p.gate_authority[g.kind] ?? "inherit";
  const ev = p.evaluator;
  return {
    enabled: p.enabled,
    autonomy: p.autonomy,
    authority,
    evaluator: ev.type,
    command: ev.type === "command" ? ev.command : "",
    args: ev.type === "command" ? ev.args.join("\n") : "",
    baseUrl: ev.type === "openai" ? ev.base_url : "http://127.0.0.1:11434/v1",
    model: ev.type === "openai" ? ev.model : "",
    apiKeyEnv: ev.type === "openai" ? (ev.api_key_env ?? "") : "",
    maxReorient: String(p.max_reorient_attempts),
    timeout: String(p.timeout_seconds),
    pauseTimeout: String(p.pause_timeout_seconds),
    grace: String(p.grace_seconds),
    alwaysSupervise: p.always_supervise,
  };
}

function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

/** Builds the policy the engine takes; only text that is not a number at
 * all is an error here (its range is the engine's to check). */
export function toPolicy(f: PolicyForm): Result<SupervisorPolicy> {
  const errors: FieldError[] = [];
  const num = (input: keyof typeof POLICY_FIELDS, what: string): number => {
    const t = f[input].trim();
    if (/^\d+$/.test(t) && Number.isSafeInteger(Number(t))) return Number(t);
    errors.push({ field: POLICY_FIELDS[input], message: `${what} must be a whole number, e.g. 30` });
    return 0;
  };
  const max_reorient_attempts = num("maxReorient", "Max reorient attempts");
  const timeout_seconds = num("timeout", "Evaluator timeout");
  const pause_timeout_seconds = num("pauseTimeout", "Pause timeout");
  const grace_seconds = num("grace", "Grace period");

  const gate_authority: SupervisorPolicy["gate_authority"] = {};
  for (const [kind, choice] of Object.entries(f.authority)) {
    if (choice !== "inherit") gate_authority[kind as GateKind] = choice;
  }

  let evaluator: EvaluatorConfig = { type: "rules" };
  if (f.evaluator === "command") {
    evaluator = { type: "command", command: f.command.trim(), args: lines(f.args) };
  } else if (f.evaluator === "openai") {
    const env = f.apiKeyEnv.trim();
    evaluator = { type: "openai", base_url: f.baseUrl.trim(), model: f.model.trim(), api_key_env: env || null };
  }

  if (errors.length) return { ok: false, errors };
  return {
    ok: true,
    value: {
      enabled: f.enabled,
      autonomy: f.autonomy,
      gate_authority,
      evaluator,
      max_reorient_attempts,
      timeout_seconds,
      always_supervise: f.alwaysSupervise,
      pause_timeout_seconds,
      grace_seconds,
    },
  };
}

/** A task id typed as text: empty means the workspace itself. */
export function parseTaskId(text: string): Result<number | null> {
  const t = text.trim();
  if (t === "") return { ok: true, value: null };
  if (!/^\d+$/.test(t) || Number(t) < 1 || !Number.isSafeInteger(Number(t))) {
    return { ok: false, errors: [{ field: "task", message: `Task '${t}' is not a task id: give its number (e.g. 12), or leave it empty for the whole workspace` }] };
  }
  return { ok: true, value: Number(t) };
}

// ---- Permission rules (one per line) ----

export interface RulesForm {
  allow: string;
  ask: string;
  deny: string;
}

export function rulesForm(r: RuleSet | undefined): RulesForm {
  return { allow: (r?.allow ?? []).join("\n"), ask: (r?.ask ?? []).join("\n"), deny: (r?.deny ?? []).join("\n") };
}

/** The three textareas as rule texts (one per line, blank lines ignored);
 * the engine parses them. */
export function toRuleTexts(f: RulesForm): RuleSet {
  return { allow: lines(f.allow), ask: lines(f.ask), deny: lines(f.deny) };
}

/** The textarea line (from 1) of the rule the engine names `rules.<list>[i]`
 * (blank lines are not sent, so the index counts only the others). */
export function ruleLine(f: RulesForm, list: keyof RulesForm, index: number): number | null {
  let seen = -1;
  const all = f[list].split("\n");
  for (let line = 0; line < all.length; line++) {
    if (all[line]!.trim() !== "" && ++seen === index) return line + 1;
  }
  return null;
}

// ---- Workspace checks ----

export type AutoAdvanceChoice = "default" | "on" | "off";

export function autoAdvanceChoice(v: boolean | null): AutoAdvanceChoice {
  return v === null ? "default" : v ? "on" : "off";
}

export function autoAdvanceValue(c: AutoAdvanceChoice): boolean | null {
  return c === "default" ? null : c === "on";
}

// ---- Notifications ----

/** Every kind the engine sends, in words: a Record, so a kind the engine
 * adds fails the type check until it has a label here. `blocking`: the
 * switch is shown on and disabled (the engine refuses muting it). */
const NOTIFICATION_LABELS: Record<NotificationKind, { label: string; blocking: boolean }> = {
  agent_question_blocking: { label: "An agent is stopped until you answer (question, permission, plan, problem)", blocking: true },
  agent_question_pending: { label: "A step waits for review and proceeds by itself if you do nothing", blocking: false },
  run_pending_review: { label: "A run is ready for review", blocking: false },
  run_failed: { label: "A run failed", blocking: false },
  supervisor_escalated: { label: "The supervisor handed a decision to you", blocking: false },
  supervisor_failed: { label: "The supervisor failed (timeout, error) and you decide", blocking: false },
  security_event: {
    label: "A security event: a run tried to reach Overseer, or main moved outside a recorded merge",
    blocking: true,
  },
  agent_message_blocked: { label: "An agent's message was held back by the hub (it addressed another agent directly)", blocking: false },
  disk_full: { label: "The disk is nearly full: runs are paused until there is room", blocking: true },
};

export const NOTIFICATION_KINDS: readonly { kind: NotificationKind; label: string; blocking: boolean }[] = (
  Object.entries(NOTIFICATION_LABELS) as [NotificationKind, { label: string; blocking: boolean }][]
).map(([kind, v]) => ({ kind, ...v }));

/** The muted list after switching `kind` on (notify) or off (muted).
 * Blocking asks cannot be muted: they stay on whatever is asked. */
export function withNotification(muted: readonly NotificationKind[], kind: NotificationKind, on: boolean): NotificationKind[] {
  const blocking = NOTIFICATION_KINDS.find((k) => k.kind === kind)?.blocking ?? false;
  const rest = muted.filter((k) => k !== kind);
  if (on || blocking) return rest;
  return [...rest, kind];
}

// Pure checks of the settings forms, run before anything is sent. They mirror
// the engine's own (crates/overseer-core/src/supervision.rs, rules.rs) so the
// user learns what to fix without a round trip; the engine still checks
// everything and its typed error is shown when it disagrees.
import type {
  Autonomy,
  EvaluatorConfig,
  GateKind,
  NotificationKind,
  RuleSet,
  SupervisorPolicy,
} from "../types";

/** One problem in a form: which field, and what to do about it. */
export interface FieldError {
  field: string;
  message: string;
}

export type Result<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** The longest an evaluator may take (MAX_EVALUATOR_TIMEOUT_SECONDS). */
export const MAX_EVALUATOR_TIMEOUT_SECONDS = 3600;

export const AUTONOMY_LEVELS: readonly Autonomy[] = ["advisory", "cosign", "autonomous"];

/** The gate kinds the supervisor may be given authority over. Supervisor
 * pauses and deviations exist to ask a human: the engine refuses entries
 * for them. */
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
  alwaysSupervise: boolean;
}

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
    alwaysSupervise: p.always_supervise,
  };
}

/** A whole number in [min, max] typed as text, or an error message. */
function wholeNumber(text: string, what: string, min: number, max: number, hint: string): number | string {
  const t = text.trim();
  if (!/^\d+$/.test(t)) return `${what} must be a whole number: ${hint}`;
  const n = Number(t);
  if (n < min || n > max) return `${what} = ${t} is out of range: ${hint}`;
  return n;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Looks like a secret rather than the name of a variable holding one. */
function looksLikeKey(s: string): boolean {
  return /^(sk-|sk_|ghp_|xox|AIza)/.test(s) || (s.length >= 32 && /\d/.test(s) && /[a-z]/.test(s) && /[A-Z]/.test(s));
}

function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

/** Checks the form and builds the policy the engine takes. */
export function toPolicy(f: PolicyForm): Result<SupervisorPolicy> {
  const errors: FieldError[] = [];
  const num = (field: string, text: string, what: string, min: number, max: number, hint: string) => {
    const v = wholeNumber(text, what, min, max, hint);
    if (typeof v === "string") {
      errors.push({ field, message: v });
      return min;
    }
    return v;
  };
  const max_reorient_attempts = num("maxReorient", f.maxReorient, "Max reorient attempts", 1, 4_294_967_295,
    "give 1 or more (1 pauses at the first drift)");
  const timeout_seconds = num("timeout", f.timeout, "Evaluator timeout", 1, MAX_EVALUATOR_TIMEOUT_SECONDS,
    `give 1 to ${MAX_EVALUATOR_TIMEOUT_SECONDS} seconds`);
  const pause_timeout_seconds = num("pauseTimeout", f.pauseTimeout, "Pause timeout", 1, Number.MAX_SAFE_INTEGER,
    "give how many seconds a paused run waits for you (1 or more)");

  if (!AUTONOMY_LEVELS.includes(f.autonomy)) {
    errors.push({ field: "autonomy", message: `autonomy must be one of ${AUTONOMY_LEVELS.join(", ")}` });
  }
  const gate_authority: SupervisorPolicy["gate_authority"] = {};
  for (const [kind, choice] of Object.entries(f.authority)) {
    if (choice === "inherit") continue;
    const known = SUPERVISED_GATES.find((g) => g.kind === kind);
    if (!known) {
      errors.push({ field: `authority.${kind}`, message: `the supervisor has no authority over ${kind} gates: only a human decides them` });
      continue;
    }
    if (!AUTONOMY_LEVELS.includes(choice)) {
      errors.push({ field: `authority.${kind}`, message: `${known.label}: choose inherit, advisory, cosign or autonomous` });
      continue;
    }
    gate_authority[known.kind] = choice;
  }

  let evaluator: EvaluatorConfig = { type: "rules" };
  switch (f.evaluator) {
    case "rules":
      break;
    case "command": {
      const command = f.command.trim();
      if (!command) errors.push({ field: "command", message: "The supervisor command is empty: give the program to run" });
      evaluator = { type: "command", command, args: lines(f.args) };
      break;
    }
    case "openai": {
      const base_url = f.baseUrl.trim();
      const model = f.model.trim();
      const env = f.apiKeyEnv.trim();
      if (!/^https?:\/\/\S+$/.test(base_url)) {
        errors.push({ field: "baseUrl", message: `Base URL '${base_url}' must start with http:// or https://, e.g. http://127.0.0.1:11434/v1` });
      }
      if (!model) errors.push({ field: "model", message: "The model is empty: name the model the endpoint serves" });
      if (env && looksLikeKey(env)) {
        errors.push({ field: "apiKeyEnv", message: "This looks like a key: give the NAME of the environment variable that holds it (e.g. OPENAI_API_KEY), never the key itself" });
      } else if (env && !ENV_NAME.test(env)) {
        errors.push({ field: "apiKeyEnv", message: `'${env}' is not an environment variable name: letters, digits and _, e.g. OPENAI_API_KEY` });
      }
      evaluator = { type: "openai", base_url, model, api_key_env: env || null };
      break;
    }
    default:
      errors.push({ field: "evaluator", message: "choose an evaluator: rules, command or OpenAI-compatible" });
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

// ---- Permission rules (Claude Code syntax) ----

const PATH_TOOLS = new Set(["Edit", "Write", "MultiEdit", "NotebookEdit", "Read", "Grep", "Glob", "Delete", "Move"]);

function validToolName(tool: string): boolean {
  const plain = (t: string) => /^[A-Za-z0-9_]+$/.test(t);
  if (tool.endsWith("__*")) {
    const server = tool.slice(0, -3);
    if (server.startsWith("mcp__")) return plain(server);
  }
  return plain(tool);
}

/** Why a path glob would not compile, as the engine's glob crate sees it. */
function globProblem(spec: string): string | null {
  let body = spec.startsWith("//") ? spec.slice(2) : spec.startsWith("./") ? spec.slice(2) : spec;
  if (body.endsWith("/")) body += "**";
  for (let i = 0; i < body.length; i++) {
    if (body[i] === "[") {
      const close = body.indexOf("]", i + 2);
      if (close < 0) return "a '[' is never closed";
      i = close;
    } else if (body.startsWith("**", i)) {
      const before = i === 0 || body[i - 1] === "/";
      let j = i;
      while (body[j] === "*") j++;
      const after = j === body.length || body[j] === "/";
      if (!before || !after || j - i > 2) return "** must be a whole path component, e.g. src/**/x";
      i = j - 1;
    }
  }
  return null;
}

/** Checks one rule's text like the engine's Rule::parse; null when valid. */
export function ruleProblem(text: string): string | null {
  const t = text.trim();
  const eg = "write Tool or Tool(specifier), e.g. Bash(npm test:*)";
  if (!t) return `an empty rule: ${eg}`;
  let tool = t;
  let spec: string | null = null;
  const open = t.indexOf("(");
  if (open < 0) {
    if (t.includes(")")) return `rule '${t}' does not start with a tool name (letters, digits, _): ${eg}`;
  } else {
    if (!t.endsWith(")")) {
      return t.slice(open).includes(")")
        ? `rule '${t}' has text after its closing ')': ${eg}`
        : `rule '${t}' is missing its closing ')': ${eg}`;
    }
    spec = t.slice(open + 1, -1).trim();
    if (!spec) return `rule '${t}' has an empty specifier: write the tool alone to match every call of it, or Tool(specifier), e.g. Edit(src/**)`;
    tool = t.slice(0, open).trim();
  }
  if (!validToolName(tool)) return `rule '${t}' does not start with a tool name (letters, digits, _): write Tool or Tool(specifier), e.g. Edit(src/**)`;
  if (spec !== null) {
    if (tool === "Bash" && spec.endsWith(":*") && !spec.slice(0, -2).trim()) {
      return `rule '${t}' has an empty specifier: write Bash(command:*), e.g. Bash(npm test:*)`;
    }
    if (tool === "WebFetch") {
      if (spec.startsWith("domain:") && !spec.slice(7).trim().replace(/^\*\./, "")) {
        return `rule '${t}' names no host: write WebFetch(domain:example.com)`;
      }
    } else if (PATH_TOOLS.has(tool)) {
      const why = globProblem(spec);
      if (why) return `rule '${t}' has an invalid path pattern (${why}): * matches within a folder and ** across folders, e.g. Edit(src/**)`;
    }
  }
  return null;
}

export interface RulesForm {
  allow: string;
  ask: string;
  deny: string;
}

export function rulesForm(r: RuleSet | undefined): RulesForm {
  return { allow: (r?.allow ?? []).join("\n"), ask: (r?.ask ?? []).join("\n"), deny: (r?.deny ?? []).join("\n") };
}

/** Parses the three textareas (one rule per line, blank lines ignored). */
export function toRuleSet(f: RulesForm): Result<RuleSet> {
  const errors: FieldError[] = [];
  const list = (field: keyof RulesForm) => {
    const out = lines(f[field]);
    out.forEach((rule, i) => {
      const why = ruleProblem(rule);
      if (why) errors.push({ field, message: `${field}, line ${i + 1}: ${why}` });
    });
    return out;
  };
  const value = { allow: list("allow"), ask: list("ask"), deny: list("deny") };
  return errors.length ? { ok: false, errors } : { ok: true, value };
}

// ---- Workspace checks ----

export type AutoAdvanceChoice = "default" | "on" | "off";

export function autoAdvanceChoice(v: boolean | null): AutoAdvanceChoice {
  return v === null ? "default" : v ? "on" : "off";
}

export function autoAdvanceValue(c: AutoAdvanceChoice): boolean | null {
  return c === "default" ? null : c === "on";
}

/** Checks the sensor commands: none empty, none twice. */
export function toSensors(list: string[]): Result<string[]> {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  const out: string[] = [];
  list.forEach((raw, i) => {
    const s = raw.trim();
    if (!s) {
      errors.push({ field: `sensor.${i}`, message: `Check ${i + 1} is empty: give a command such as npm test, or remove it` });
      return;
    }
    if (seen.has(s)) {
      errors.push({ field: `sensor.${i}`, message: `Check ${i + 1} ('${s}') is listed twice: remove one` });
      return;
    }
    seen.add(s);
    out.push(s);
  });
  return errors.length ? { ok: false, errors } : { ok: true, value: out };
}

// ---- Notifications ----

/** Every kind the engine sends, in words: a Record, so a kind the engine
 * adds fails the type check until it has a label here. */
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

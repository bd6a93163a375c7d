// A question gate's form: the agent's ACP elicitation schema turned into the
// batched-question model of PRODUCT.md item 1 (one tab per question, a
// header of at most 30 characters, options with descriptions, single or
// multiple choice, free text), and the user's answers turned back into the
// JSON object the engine hands to the agent. Pure: no DOM, no backend.
import type { GateView, JsonValue } from "../types";

/** Longest tab label, in characters (PRODUCT.md item 1). */
export const HEADER_MAX = 30;

export interface Choice {
  /** What is sent back (`const` or the `enum` value). */
  value: string;
  label: string;
  description: string | null;
}

export type QuestionType = "single" | "multiple" | "text" | "boolean" | "number";

/** One question of a batch. */
export interface Question {
  /** The property name: the key of its answer. */
  key: string;
  /** The tab label, at most {@link HEADER_MAX} characters. */
  header: string;
  /** The question as the agent wrote it (title, and description if any). */
  question: string;
  detail: string | null;
  type: QuestionType;
  /** `integer` properties: whole numbers only. */
  integer: boolean;
  choices: Choice[];
  /** Free text is accepted besides the choices (an "Other" answer). */
  custom: boolean;
  /** Where the "Other" text goes when the schema gives it a property of
   * its own (`<key>_custom`, as external sessions' questions do); null: it
   * goes in the answer itself (ACP elicitation). */
  customKey: string | null;
  required: boolean;
  minimum: number | null;
  maximum: number | null;
  minItems: number | null;
  maxItems: number | null;
}

/** What the user has entered for one question, in every shape a question can
 * take; only the fields of its type are read. */
export interface Draft {
  /** Single choice: the chosen value, or {@link OTHER} for the free text. */
  choice: string | null;
  /** Multiple choice: the chosen values. */
  choices: string[];
  /** Multiple choice: an extra free-text value is given too. */
  otherOn: boolean;
  /** The "Other" free text (single or multiple choice). */
  other: string;
  /** Text and number questions. */
  text: string;
  bool: boolean | null;
}

/** The single-choice value that stands for "Other (free text)". */
export const OTHER = "\u0000other";

type Obj = { [key: string]: JsonValue };
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v : null);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** Cuts `s` to `max` characters, with an ellipsis when cut. */
export function truncate(s: string, max = HEADER_MAX): string {
  const chars = [...s.trim()];
  if (chars.length <= max) return chars.join("");
  return chars.slice(0, max - 1).join("").trimEnd() + "…";
}

function choicesOf(p: Obj): Choice[] {
  const oneOf = p["oneOf"] ?? p["anyOf"];
  if (Array.isArray(oneOf)) {
    return oneOf.filter(isObj).flatMap((o) => {
      const value = typeof o["const"] === "string" ? o["const"] : null;
      if (value === null) return [];
      return [{ value, label: str(o["title"]) ?? value, description: str(o["description"]) }];
    });
  }
  const values = p["enum"];
  if (Array.isArray(values)) {
    const names = Array.isArray(p["enumNames"]) ? p["enumNames"] : [];
    return values.flatMap((v, i) => (typeof v === "string" ? [{ value: v, label: str(names[i]) ?? v, description: null }] : []));
  }
  return [];
}

/** The questions of an elicitation schema, in the order the agent gave them.
 * Anything that is not a schema gives no questions (the form then falls
 * back to one free-text answer). */
export function parseSchema(schema: unknown): Question[] {
  if (!isObj(schema) || !isObj(schema["properties"])) return [];
  const required = new Set(Array.isArray(schema["required"]) ? schema["required"].filter((r) => typeof r === "string") : []);
  const props = schema["properties"];
  const out: Question[] = [];
  /** `<key>_custom` text properties that are the "Other" of `<key>`. */
  const folded = new Set<string>();
  for (const [key, raw] of Object.entries(props)) {
    const other = props[`${key}_custom`];
    if (isObj(raw) && isObj(other) && other["type"] === "string" && (raw["type"] === "array" ? isObj(raw["items"]) && choicesOf(raw["items"]).length > 0 : choicesOf(raw).length > 0)) {
      folded.add(`${key}_custom`);
    }
  }
  for (const [key, raw] of Object.entries(props)) {
    if (!isObj(raw) || folded.has(key)) continue;
    const customKey = folded.has(`${key}_custom`) ? `${key}_custom` : null;
    const title = str(raw["title"]);
    const description = str(raw["description"]);
    const question = title ?? description ?? key;
    const base = {
      key,
      header: truncate(title ?? key),
      question,
      detail: title !== null && description !== null ? description : null,
      integer: false,
      choices: [] as Choice[],
      custom: false,
      customKey,
      required: required.has(key),
      minimum: num(raw["minimum"]),
      maximum: num(raw["maximum"]),
      minItems: num(raw["minItems"]),
      maxItems: num(raw["maxItems"]),
    };
    const type = raw["type"];
    if (type === "boolean") {
      out.push({ ...base, type: "boolean" });
    } else if (type === "number" || type === "integer") {
      out.push({ ...base, type: "number", integer: type === "integer" });
    } else if (type === "array") {
      const items = isObj(raw["items"]) ? raw["items"] : {};
      out.push({ ...base, type: "multiple", choices: choicesOf(items), custom: true });
    } else {
      const choices = choicesOf(raw);
      if (choices.length > 0) out.push({ ...base, type: "single", choices, custom: true });
      else out.push({ ...base, type: "text", custom: true });
    }
  }
  return out;
}

/** A draft holding the schema's defaults, or nothing chosen. */
export function initialDraft(q: Question, schema: unknown): Draft {
  const d: Draft = { choice: null, choices: [], otherOn: false, other: "", text: "", bool: null };
  const props = isObj(schema) && isObj(schema["properties"]) ? schema["properties"] : {};
  const p = props[q.key];
  const def = isObj(p) ? p["default"] : undefined;
  if (def === undefined || def === null) return d;
  switch (q.type) {
    case "boolean":
      if (typeof def === "boolean") d.bool = def;
      break;
    case "number":
      if (typeof def === "number") d.text = String(def);
      break;
    case "multiple":
      if (Array.isArray(def)) d.choices = def.filter((v): v is string => typeof v === "string");
      break;
    case "single":
      if (typeof def === "string") {
        if (q.choices.some((c) => c.value === def)) d.choice = def;
        else {
          d.choice = OTHER;
          d.other = def;
        }
      }
      break;
    case "text":
      if (typeof def === "string") d.text = def;
      break;
  }
  return d;
}

/** Why one answer cannot be sent, in words for the user. */
export interface Problem {
  key: string;
  header: string;
  message: string;
}

/** The answer of one question, `undefined` when not answered, or a problem. */
export function answerOf(q: Question, d: Draft): { value: JsonValue | undefined } | { problem: string } {
  switch (q.type) {
    case "boolean":
      return { value: d.bool ?? undefined };
    case "text": {
      const t = d.text.trim();
      return { value: t === "" ? undefined : t };
    }
    case "number": {
      const t = d.text.trim();
      if (t === "") return { value: undefined };
      const n = Number(t);
      if (!Number.isFinite(n)) return { problem: `"${t}" is not a number` };
      if (q.integer && !Number.isInteger(n)) return { problem: `give a whole number, not ${t}` };
      if (q.minimum !== null && n < q.minimum) return { problem: `give at least ${q.minimum}` };
      if (q.maximum !== null && n > q.maximum) return { problem: `give at most ${q.maximum}` };
      return { value: n };
    }
    case "single": {
      if (d.choice === null) return { value: undefined };
      if (d.choice === OTHER) {
        const t = d.other.trim();
        if (t === "") return { problem: "you chose Other: type your answer, or pick an option" };
        return { value: t };
      }
      return { value: d.choice };
    }
    case "multiple": {
      const values = q.choices.map((c) => c.value).filter((v) => d.choices.includes(v));
      if (d.otherOn) {
        const t = d.other.trim();
        if (t === "") return { problem: "you ticked Other: type your answer, or untick it" };
        values.push(t);
      }
      if (values.length === 0) return { value: undefined };
      if (q.minItems !== null && values.length < q.minItems) return { problem: `choose at least ${q.minItems}` };
      if (q.maxItems !== null && values.length > q.maxItems) return { problem: `choose at most ${q.maxItems}` };
      return { value: values };
    }
  }
}

/** The answer's properties: for a question whose "Other" text has a
 * property of its own, the chosen options under its key and the text under
 * that one. */
function splitCustom(q: Question, d: Draft, value: JsonValue): Obj {
  if (q.customKey === null) return { [q.key]: value };
  if (q.type === "single") return d.choice === OTHER ? { [q.customKey]: value } : { [q.key]: value };
  if (q.type === "multiple" && Array.isArray(value)) {
    const chosen = value.filter((v) => typeof v === "string" && q.choices.some((c) => c.value === v));
    const out: Obj = {};
    if (chosen.length > 0) out[q.key] = chosen;
    if (d.otherOn && d.other.trim() !== "") out[q.customKey] = d.other.trim();
    return out;
  }
  return { [q.key]: value };
}

/** True when the question has an answer (valid or not). */
export function isAnswered(q: Question, d: Draft): boolean {
  const a = answerOf(q, d);
  return "problem" in a || a.value !== undefined;
}

/** Every answer as the JSON object the engine parses (context of `answer`),
 * or the problems that keep it from being sent: required questions without
 * an answer, and answers that are not valid. Unanswered optional questions
 * are left out. */
export function buildAnswers(questions: Question[], drafts: Record<string, Draft>): { ok: true; json: string; answers: Obj } | { ok: false; problems: Problem[] } {
  const answers: Obj = {};
  const problems: Problem[] = [];
  for (const q of questions) {
    const d = drafts[q.key];
    const a = d ? answerOf(q, d) : { value: undefined };
    if ("problem" in a) problems.push({ key: q.key, header: q.header, message: a.problem });
    else if (a.value !== undefined) Object.assign(answers, splitCustom(q, d!, a.value));
    else if (q.required) problems.push({ key: q.key, header: q.header, message: "needs an answer" });
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, json: JSON.stringify(answers), answers };
}

/** One sentence for the user about what is missing. */
export function problemSummary(problems: Problem[]): string {
  const missing = problems.filter((p) => p.message === "needs an answer").map((p) => p.header);
  const invalid = problems.filter((p) => p.message !== "needs an answer");
  const parts: string[] = [];
  if (missing.length === 1) parts.push(`Answer "${missing[0]}" first: it is required`);
  else if (missing.length > 1) parts.push(`Answer the required questions first: ${missing.map((m) => `"${m}"`).join(", ")}`);
  for (const p of invalid) parts.push(`"${p.header}": ${p.message}`);
  return parts.join(". ") + ".";
}

/** The message and form schema of a question gate (nulls for other kinds). */
export function questionPayload(g: GateView): { message: string | null; schema: JsonValue | null } {
  if (g.kind !== "question") return { message: null, schema: null };
  return { message: str(g.payload.message), schema: g.payload.schema ?? null };
}

// A gate's or a run's story for the "Why?" drawers: every audit record about
// it in order, each with the decision record it carries (verdict, rationale,
// rule, model, prompt version, confidence, source event), what kind of
// decision it was (a step verdict, a rule's allow or denial, a supervisor
// vote, a timer, a human...), and what its check found.
// Pure: the drawers render what this returns, as text.
import type { Actor, AuditProblem, CheckedRecord, DecisionMismatch, DecisionRecord, DeviceRef, GateStory, JsonValue, RuleLayer, RunStory } from "../types";

type Obj = { [key: string]: JsonValue };

/** What a story is built from: a gate's story or a run's (same fields). */
export type StoryInput = Pick<GateStory, "decisions" | "records" | "decision_problems" | "verified">;

/** What a record decided, or what it is when it decided nothing. */
export type RecordKind =
  | "step_verdict"
  | "rule_allow"
  | "rule_deny"
  | "supervisor_vote"
  | "timer"
  | "retry"
  | "human"
  | "gate"
  | "run"
  | "security"
  | "other";

/** One word or two for each kind, as the drawers label records. */
export const RECORD_KIND_LABELS: Record<RecordKind, string> = {
  step_verdict: "Step verdict",
  rule_allow: "Rule allowed",
  rule_deny: "Rule denied",
  supervisor_vote: "Supervisor vote",
  timer: "Timer fired",
  retry: "Retry",
  human: "Human decision",
  gate: "Gate",
  run: "Run",
  security: "Security",
  other: "Record",
};

/** The kinds that decided something, in the order a summary names them. */
export const DECIDING_KINDS: RecordKind[] = ["step_verdict", "rule_allow", "rule_deny", "supervisor_vote", "timer", "retry", "human"];

export interface StoryEntry {
  seq: number;
  at: number;
  /** Who wrote the record, e.g. `agent:demo`, `user:app`, `engine`. */
  actor: string;
  /** The paired device a person acted through, as the signed record names
   * it (null: none, as for the local owner). */
  device: DeviceRef | null;
  /** The record's type: gate_opened, gate_terms, decision, gate_decided... */
  type: string;
  /** What it decided (a step verdict, a rule's allow...), or what it is. */
  kind: RecordKind;
  /** One line saying what happened. */
  headline: string;
  /** Label/value pairs worth showing (empty values left out). */
  facts: [string, string][];
  decision: DecisionRecord | null;
  hash: string;
  signature: string;
  problem: AuditProblem | null;
  /** The record is intact, signed, chained, and the whole story verifies. */
  verified: boolean;
}

export interface Story {
  entries: StoryEntry[];
  /** Decisions about the gate whose audit record is not in the story. */
  unrecorded: DecisionRecord[];
  /**
   * Decision rows in the database (the gate's decision, its history, its
   * votes) that no verifying signed record backs, each in words.
   */
  problems: { mismatch: DecisionMismatch; text: string }[];
  /** The gate's own decision, as the database holds it, is not backed by its signed record. */
  decisionUnverified: boolean;
  /** Security events about the gate: decisions found without their record. */
  tampering: StoryEntry[];
  verified: boolean;
  /** One sentence for the summary. */
  summary: string;
}

/** The first `n` hex digits of a hash or signature. */
export const prefix = (hex: string, n = 12): string => (hex.length > n ? `${hex.slice(0, n)}…` : hex);

/** ` through Ana's phone (device 3)`, or nothing: what follows an actor
 * where a decision is shown (the engine's own wording). */
export function through(device: DeviceRef | null | undefined): string {
  return device ? ` through ${device.name} (device ${device.id})` : "";
}

/** An actor as a person reads it, with the device it acted through when the
 * engine names one: `user:ana through Ana's phone (device 3)`, `user:app`. */
export function actorText(a: Actor, device?: DeviceRef | null): string {
  return `${actorName(a)}${through(device)}`;
}

function actorName(a: Actor): string {
  switch (a.kind) {
    case "user":
      return `user:${a.name}`;
    case "supervisor":
      return `supervisor:${a.name}`;
    case "agent":
      return `agent:${a.name}`;
    case "engine":
      return "engine";
  }
}

/** What a failed check found, in words that say what it means. */
export function describeProblem(p: AuditProblem): string {
  switch (p.problem) {
    case "seq_gap":
      return `sequence gap: expected the next record, found #${p.found} (records were deleted)`;
    case "chain_broken":
      return "chain broken: this record does not link to the one before it (records were removed or reordered)";
    case "payload_edited":
      return "payload edited: the content no longer matches its hash";
    case "fields_edited":
      return "fields edited: the actor, time or hashes were changed after signing";
    case "bad_signature":
      return "bad signature: the record was not signed by this installation's key";
    case "truncated":
      return `log truncated: the checkpoint vouches for ${p.checkpoint_count} records, found ${p.found}`;
    case "checkpoint_mismatch":
      return `checkpoint mismatch: the log differs from what the checkpoint of ${p.checkpoint_count} records signed`;
    case "bad_checkpoint_signature":
      return `bad checkpoint signature (checkpoint of ${p.checkpoint_count} records)`;
  }
}

const TABLE_WORDS: Record<DecisionMismatch["table"], string> = {
  gates: "the gate's decision",
  gate_decisions: "a row of the gate's decision history",
  decisions: "a vote or note",
};

/** A decision row its signed record does not back, in words that say what it means. */
export function describeMismatch(m: DecisionMismatch): string {
  const what = `${TABLE_WORDS[m.table]} (${m.claim})`;
  const at = m.audit_seq === null ? "" : ` (audit record #${m.audit_seq})`;
  switch (m.problem) {
    case "no_record":
      return `${what} has no signed audit record: it was written into the database outside Overseer and is not acted on`;
    case "record_not_verified":
      return `${what}${at}: its audit record does not verify (${describeProblem(m.why)})`;
    case "wrong_record":
      return `${what}${at} names a record about something else (${m.detail}): written outside Overseer`;
    case "differs":
      return `${what}${at}: the database says ${m.field} = ${m.row}, the signed record says ${m.record}: changed outside Overseer`;
    case "record_reused":
      return `${what}${at}: row ${m.other_row_id} already claims that record: copied outside Overseer`;
    case "decision_erased":
      return `${what}${at}: the database says pending, the signed record says “${m.option}” by ${m.by}: erased outside Overseer`;
  }
}

const text = (v: JsonValue | undefined): string | null => {
  if (v === undefined || v === null) return null;
  if (typeof v === "string") return v.trim() === "" ? null : v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
};

function parse(payload: string): Obj {
  try {
    const v: unknown = JSON.parse(payload);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : {};
  } catch {
    return {};
  }
}

function facts(pairs: [string, string | null][]): [string, string][] {
  return pairs.filter((p): p is [string, string] => p[1] !== null);
}

/** Each layer of rules in words, as the engine's decision records say it. */
export const RULE_LAYER_LABELS: Record<RuleLayer, string> = {
  built_in: "built-in rule",
  run: "this run's rule, from an “always” answer",
  task: "task rule",
  workspace: "workspace rule",
};

/**
 * The layers a rule's decision came from, each once (`task rule + workspace
 * rule` for a compound command allowed part by part), from its typed
 * provenance (the decision row's, or its signed record's JSON). Null when
 * it names none: other decisions, and those recorded before layers were
 * typed (their rationale names the layer in words).
 */
export function layersText(provenance: JsonValue | undefined): string | null {
  if (!Array.isArray(provenance)) return null;
  const layers: string[] = [];
  for (const p of provenance) {
    const layer = typeof p === "object" && p !== null && !Array.isArray(p) ? p["layer"] : null;
    const label = typeof layer === "string" && Object.hasOwn(RULE_LAYER_LABELS, layer) ? RULE_LAYER_LABELS[layer as RuleLayer] : null;
    if (label === null) return null;
    if (!layers.includes(label)) layers.push(label);
  }
  return layers.length > 0 ? layers.join(" + ") : null;
}

function decisionFacts(d: DecisionRecord): [string, string][] {
  return facts([
    ["actor", actorText(d.actor, d.device)],
    ["verdict", d.verdict],
    ["option", d.option],
    ["rationale", d.rationale],
    ["correction", d.correction],
    ["rule", d.rule_ref],
    ["layer", layersText(d.provenance)],
    ["model", d.model_id],
    ["prompt version", d.prompt_version],
    ["confidence", d.confidence === null ? null : d.confidence.toFixed(2)],
    ["source event", d.source_event],
    ["audit record", `#${d.audit_seq}`],
  ]);
}

function describe(type: string, p: Obj, actor: string, decision: DecisionRecord | null): { headline: string; facts: [string, string][] } {
  switch (type) {
    case "gate_opened": {
      const opts = Array.isArray(p["options"])
        ? p["options"].map((o) => (typeof o === "object" && o !== null && !Array.isArray(o) ? text(o["label"]) ?? text(o["id"]) : null)).filter((o) => o !== null)
        : [];
      return {
        headline: `Asked by ${actor}: ${text(p["title"]) ?? "a gate"}`,
        facts: facts([
          ["kind", text(p["kind"])],
          ["options", opts.length > 0 ? opts.join(" / ") : null],
        ]),
      };
    }
    case "gate_terms":
      return {
        headline: "Terms set",
        facts: facts([
          ["supervisor authority", text(p["authority"])],
          ["timer", p["auto_at"] ? `chooses “${text(p["auto_option"]) ?? "?"}” at ${new Date(Number(p["auto_at"])).toLocaleTimeString()}` : null],
        ]),
      };
    case "decision": {
      const verdict = decision?.verdict ?? text(p["verdict"]) ?? "?";
      const option = decision?.option ?? text(p["option"]);
      return {
        headline: `Decision by ${actor}: ${verdict}${option ? `, option “${option}”` : ""}`,
        facts: decision
          ? decisionFacts(decision)
          : facts([
              ["verdict", text(p["verdict"])],
              ["option", text(p["option"])],
              ["rationale", text(p["rationale"])],
              ["correction", text(p["correction"])],
              ["rule", text(p["rule_ref"])],
              ["layer", layersText(p["provenance"])],
              ["model", text(p["model_id"])],
              ["prompt version", text(p["prompt_version"])],
              ["confidence", typeof p["confidence"] === "number" ? p["confidence"].toFixed(2) : null],
              ["source event", text(p["source_event"])],
            ]),
      };
    }
    case "gate_decided": {
      const over = typeof p["overrides"] === "object" && p["overrides"] !== null && !Array.isArray(p["overrides"]) ? p["overrides"] : null;
      return {
        headline: `Decided by ${actor}: ${text(p["option"]) ?? "?"}`,
        facts: facts([
          ["context", text(p["context"])],
          ["overrides", over ? `${text(over["option"]) ?? "?"} by ${text(over["by"]) ?? "?"}` : null],
        ]),
      };
    }
    case "security_event": {
      const found = typeof p["found"] === "object" && p["found"] !== null && !Array.isArray(p["found"]) ? p["found"] : null;
      const restored = typeof p["restored"] === "object" && p["restored"] !== null && !Array.isArray(p["restored"]) ? p["restored"] : null;
      const event = text(p["event"]) ?? "security event";
      return {
        headline:
          event === "decision_without_record"
            ? "SECURITY: a decision written into the database outside Overseer, without its signed record, was not acted on"
            : `SECURITY: ${event.replaceAll("_", " ")}`,
        facts: facts([
          ["found in the database", found ? `${text(found["option"]) ?? text(found["status"]) ?? "?"} by ${text(found["by"]) ?? "?"}` : null],
          ["put back to", restored ? (text(restored["status"]) === "pending" ? "pending: waiting for a real decision" : `${text(restored["option"]) ?? "?"} by ${text(restored["by"]) ?? "?"} (the signed decision)`) : null],
          ["details", text(p["text"])],
        ]),
      };
    }
    case "gate_timer_stopped":
      return { headline: `Timer stopped by ${actor}: the gate waits for a human`, facts: [] };
    case "gate_snoozed": {
      const until = typeof p["until"] === "number" ? new Date(p["until"]).toLocaleString() : "?";
      return { headline: `Snoozed by ${actor} until ${until}: out of the inbox until then`, facts: [] };
    }
    default:
      return { headline: `${type.replaceAll("_", " ")} by ${actor}`, facts: [] };
  }
}

const startsWith = (v: string | null | undefined, p: string): boolean => typeof v === "string" && v.startsWith(p);

/**
 * What a record decided. Decision records are told apart by what they carry:
 * a step's verdict names the step that finished (`step_finished:RUN:N`), a
 * rule's allow or denial the tool call (`tool_call:ID`), a timer its rule
 * (`timer`), a retry the retry policy; a supervisor's vote on a gate is by
 * the supervisor; anything a person decided is by `user:NAME`.
 */
export function recordKind(type: string, p: Obj, actor: string, decision: DecisionRecord | null): RecordKind {
  const human = actor.startsWith("user:");
  switch (type) {
    case "decision": {
      const source = decision?.source_event ?? text(p["source_event"]);
      const rule = decision?.rule_ref ?? text(p["rule_ref"]);
      const verdict = decision?.verdict ?? text(p["verdict"]);
      if (human) return "human";
      if (rule === "timer" || startsWith(source, "timer:")) return "timer";
      if (rule === "retry_policy") return "retry";
      if (startsWith(source, "step_finished:")) return "step_verdict";
      if (startsWith(source, "tool_call:") && actor === "engine") return verdict === "reject" ? "rule_deny" : "rule_allow";
      if (actor.startsWith("supervisor:")) return "supervisor_vote";
      return "other";
    }
    case "gate_decided":
    case "gate_timer_stopped":
    case "gate_snoozed":
      return human ? "human" : "gate";
    case "gate_opened":
    case "gate_terms":
      return "gate";
    case "user_instruction":
      return "human";
    case "security_event":
      return "security";
    case "run_created":
      return "run";
    case "run_transition":
    case "run_worktree":
    case "run_reviewed_tip":
    case "session_opened":
    case "merge_intent":
    case "merge_commit":
    case "merge_done":
      return human ? "human" : "run";
    default:
      return human ? "human" : "other";
  }
}

/** The step a step verdict is about, from its source event `step_finished:RUN:N`. */
export function stepOf(source: string | null | undefined): number | null {
  if (!startsWith(source, "step_finished:")) return null;
  const n = Number(String(source).split(":")[2]);
  return Number.isInteger(n) ? n : null;
}

/** A headline saying what a deciding record decided, or null to keep the record's own. */
function kindHeadline(kind: RecordKind, p: Obj, actor: string, decision: DecisionRecord | null): string | null {
  const verdict = (decision?.verdict ?? text(p["verdict"]) ?? "?").toUpperCase();
  const rule = decision?.rule_ref ?? text(p["rule_ref"]);
  const option = decision?.option ?? text(p["option"]);
  switch (kind) {
    case "step_verdict": {
      const step = stepOf(decision?.source_event ?? text(p["source_event"]));
      return `${step === null ? "Step" : `Step ${step}`}: ${verdict} by ${actor}${rule ? ` (${rule})` : ""}`;
    }
    case "rule_allow":
      return `Allowed by the rule ${rule ?? "?"}`;
    case "rule_deny":
      return `Denied by the rule ${rule ?? "?"}`;
    case "timer":
      return `Timer fired: chose “${option ?? "?"}”`;
    case "retry":
      return `Retried by the retry policy`;
    case "supervisor_vote":
      // A vote that came after (or was overridden by) a human's decision.
      return decision?.overruled_by
        ? `${actor} voted ${verdict}${option ? ` (“${option}”)` : ""}: overruled, ${actorText(decision.overruled_by)} decided otherwise`
        : null;
    default:
      return null;
  }
}

/** A record payload's device (`{id, name}`), when it names a well-formed one. */
function deviceOf(v: JsonValue | undefined): DeviceRef | null {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const { id, name } = v;
  return typeof id === "number" && typeof name === "string" ? { id, name } : null;
}

function entry(r: CheckedRecord, bySeq: Map<number, DecisionRecord>, storyVerified: boolean): StoryEntry {
  const p = parse(r.record.payload);
  const type = text(p["type"]) ?? "record";
  const decision = bySeq.get(r.record.seq) ?? null;
  // A person's record names the device they acted through (signed with it).
  const device = decision?.device ?? deviceOf(p["device"]);
  const who = `${r.record.actor}${through(device)}`;
  const described = describe(type, p, who, decision);
  const kind = recordKind(type, p, r.record.actor, decision);
  const headline = kindHeadline(kind, p, who, decision) ?? described.headline;
  const f = described.facts;
  return {
    seq: r.record.seq,
    at: r.record.at,
    actor: r.record.actor,
    device,
    type,
    kind,
    headline,
    facts: f,
    decision,
    hash: r.record.record_hash,
    signature: r.record.signature,
    problem: r.problem,
    verified: r.problem === null && storyVerified,
  };
}

/** The story in order of the audit log, decisions joined to their records.
 * `about` names what the story is about in its summary. */
export function buildStory(s: StoryInput | GateStory | RunStory, about: "gate" | "run" = "gate"): Story {
  const bySeq = new Map(s.decisions.map((d) => [d.audit_seq, d] as const));
  const entries = [...s.records].sort((a, b) => a.record.seq - b.record.seq).map((r) => entry(r, bySeq, s.verified));
  const seqs = new Set(entries.map((e) => e.seq));
  const unrecorded = s.decisions.filter((d) => !seqs.has(d.audit_seq));
  const bad = entries.filter((e) => e.problem !== null);
  const mismatches = s.decision_problems ?? [];
  const problems = mismatches.map((mismatch) => ({ mismatch, text: describeMismatch(mismatch) }));
  const decisionUnverified = mismatches.some((m) => m.table === "gates");
  const tampering = entries.filter((e) => e.type === "security_event");
  const verified =
    s.verified && bad.length === 0 && entries.length > 0 && unrecorded.length === 0 && problems.length === 0 && tampering.length === 0;
  let summary: string;
  if (entries.length === 0) summary = `No audit records about this ${about} were found: nothing here can be verified.`;
  else if (verified) summary = entries.length === 1 ? "Verified: the 1 record is signed, intact and chained." : `Verified: all ${entries.length} records are signed, intact and chained.`;
  else if (bad.length > 0) {
    const first = bad[0];
    summary = `VERIFICATION FAILED: ${bad.length} of ${entries.length} ${entries.length === 1 ? "record" : "records"} did not verify (first: #${first?.seq}, ${first?.problem ? describeProblem(first.problem) : "?"}). Run \`overseer audit verify\`.`;
  } else if (problems.length > 0) {
    summary = decisionUnverified
      ? `NOT VERIFIED: the decision shown was written into the database outside Overseer; no signed record backs it (${problems.length} decision row${problems.length === 1 ? "" : "s"} without a matching signed record). Run \`overseer audit verify\`.`
      : `NOT VERIFIED: ${problems.length} decision row${problems.length === 1 ? "" : "s"} about this ${about} ${problems.length === 1 ? "has" : "have"} no matching signed record. Run \`overseer audit verify\`.`;
  } else if (unrecorded.length > 0) summary = `VERIFICATION FAILED: ${unrecorded.length} decision(s) have no audit record in this story.`;
  else if (tampering.length > 0)
    summary = `TAMPERING DETECTED: a decision was written into the database outside Overseer (record #${tampering[0]?.seq}); it was not acted on. The records themselves verify.`;
  else summary = "VERIFICATION FAILED: the engine could not verify this story. Run `overseer audit verify`.";
  return { entries, unrecorded, problems, decisionUnverified, tampering, verified, summary };
}

export { decisionFacts };

/** How many records of each deciding kind a story holds, as a line for its
 * summary: "2 step verdicts · 1 rule allowed · 1 timer fired". Kinds with none are left out. */
export function kindCounts(entries: StoryEntry[]): { kind: RecordKind; label: string; count: number }[] {
  return DECIDING_KINDS.map((kind) => ({ kind, label: RECORD_KIND_LABELS[kind], count: entries.filter((e) => e.kind === kind).length })).filter(
    (c) => c.count > 0,
  );
}

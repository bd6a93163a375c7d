import { describe, expect, it } from "vitest";
import type { CheckedRecord, DecisionRecord, EngineEvent, RunStory, RunView } from "../types";
import { buildStory, kindCounts, recordKind, stepOf } from "../inbox/story";
import { decidedLine, touchesRunStory } from "./why";

const rec = (seq: number, payload: object, actor: string, problem: CheckedRecord["problem"] = null): CheckedRecord => ({
  record: { seq, prev_hash: "0".repeat(64), payload: JSON.stringify(payload), payload_hash: "1".repeat(64), actor, at: seq * 1000, record_hash: "2".repeat(64), signature: "f".repeat(128) },
  problem,
});
const dec = (audit_seq: number, d: Partial<DecisionRecord>): DecisionRecord => ({
  id: audit_seq, run_id: 4, gate_id: null, actor: { kind: "engine" }, verdict: "advise", option: null, rationale: null, correction: null, rule_ref: null, provenance: null,
  model_id: null, prompt_version: null, confidence: null, source_event: null, audit_seq, at: audit_seq * 1000, ...d,
});

// What a real run's story holds (the shapes the engine writes: see
// crates/overseer-engine/tests/run_story.rs).
const decisions: DecisionRecord[] = [
  dec(2, { gate_id: 9, verdict: "reject", option: "decline", rule_ref: "timer", source_event: "timer:9", rationale: "nobody answered within 1 s: the gate's timer chose 'decline'" }),
  dec(4, { gate_id: 10, actor: { kind: "supervisor", name: "rules" }, verdict: "advise", option: "approve", rule_ref: "rules:plan_complete", source_event: "gate_opened:10" }),
  dec(6, { verdict: "approve", rule_ref: "Edit(src/greeting.txt)", source_event: "tool_call:t1", rationale: "allowed by rule (task rule): Edit src/greeting.txt" }),
  dec(7, { verdict: "continue", rule_ref: "confidence:proceed", confidence: 0.93, source_event: "step_finished:4:1" }),
  dec(8, { actor: { kind: "supervisor", name: "rules" }, verdict: "reorient", rationale: "stay within the plan", source_event: "step_finished:4:2" }),
  dec(9, { verdict: "reject", rule_ref: "Edit(NOTES.md)", source_event: "tool_call:t2", rationale: "denied by the rule Edit(NOTES.md) (workspace rule): Edit NOTES.md" }),
  dec(10, { verdict: "continue", rule_ref: "retry_policy", source_event: "turn_failed:4:1" }),
];
const asRecord = (d: DecisionRecord, actor: string) => rec(d.audit_seq, { type: "decision", run_id: 4, gate_id: d.gate_id, verdict: d.verdict, rule_ref: d.rule_ref, source_event: d.source_event }, actor);
const records: CheckedRecord[] = [
  rec(1, { type: "gate_opened", gate_id: 9, run_id: 4, kind: "question", title: "Which framework?" }, "agent:demo"),
  asRecord(decisions[0]!, "engine"),
  rec(3, { type: "gate_decided", gate_id: 9, run_id: 4, option: "decline" }, "engine"),
  asRecord(decisions[1]!, "supervisor:rules"),
  rec(5, { type: "gate_decided", gate_id: 10, run_id: 4, option: "approve" }, "user:cli"),
  asRecord(decisions[2]!, "engine"),
  asRecord(decisions[3]!, "engine"),
  asRecord(decisions[4]!, "supervisor:rules"),
  asRecord(decisions[5]!, "engine"),
  asRecord(decisions[6]!, "engine"),
  rec(11, { type: "run_transition", run_id: 4, from: "running", to: "pending_review", event: "finish" }, "engine"),
];
const run = { id: 4, task_title: "Update the greeting" } as RunView;
const story: RunStory = { run, decisions, records, decision_problems: [], verified: true };

describe("a run's story", () => {
  it("tells each kind of decision apart, with what it decided", () => {
    const s = buildStory(story, "run");
    expect(s.entries.map((e) => [e.seq, e.kind])).toEqual([
      [1, "gate"],
      [2, "timer"],
      [3, "gate"],
      [4, "supervisor_vote"],
      [5, "human"],
      [6, "rule_allow"],
      [7, "step_verdict"],
      [8, "step_verdict"],
      [9, "rule_deny"],
      [10, "retry"],
      [11, "run"],
    ]);
    const headline = (seq: number) => s.entries.find((e) => e.seq === seq)?.headline;
    expect(headline(2)).toBe("Timer fired: chose “decline”");
    expect(headline(4)).toBe("Decision by supervisor:rules: advise, option “approve”");
    expect(headline(6)).toBe("Allowed by the rule Edit(src/greeting.txt)");
    expect(headline(7)).toBe("Step 1: CONTINUE by engine (confidence:proceed)");
    expect(headline(8)).toBe("Step 2: REORIENT by supervisor:rules");
    expect(headline(9)).toBe("Denied by the rule Edit(NOTES.md)");
    expect(headline(10)).toBe("Retried by the retry policy");
    // The layer is in the signed rationale, shown with the record.
    expect(Object.fromEntries(s.entries.find((e) => e.seq === 9)!.facts)).toMatchObject({
      rule: "Edit(NOTES.md)",
      rationale: "denied by the rule Edit(NOTES.md) (workspace rule): Edit NOTES.md",
    });
    expect(s.verified).toBe(true);
    expect(s.summary).toBe("Verified: all 11 records are signed, intact and chained.");
  });

  it("names the layer a rule came from, typed, and an older record's by its rationale alone", () => {
    const allow = dec(6, {
      verdict: "approve", rule_ref: "Bash(cargo test:*) + Bash(tail:*)", source_event: "tool_call:t1",
      provenance: [{ layer: "task", rule: "Bash(cargo test:*)" }, { layer: "workspace", rule: "Bash(tail:*)" }],
      rationale: "allowed by rule (task rule + workspace rule): cargo test | tail",
    });
    const signed = { type: "decision", run_id: 4, gate_id: null, verdict: "approve", rule_ref: allow.rule_ref, source_event: "tool_call:t1", provenance: allow.provenance };
    const typed = buildStory({ ...story, decisions: [allow], records: [rec(6, signed, "engine")] }, "run");
    expect(Object.fromEntries(typed.entries[0]!.facts)).toMatchObject({ rule: "Bash(cargo test:*) + Bash(tail:*)", layer: "task rule + workspace rule" });
    // Its signed record alone (no row joined) says the same.
    const recordOnly = buildStory({ ...story, decisions: [], records: [rec(6, signed, "engine")] }, "run");
    expect(Object.fromEntries(recordOnly.entries[0]!.facts)).toMatchObject({ layer: "task rule + workspace rule" });
    // Recorded before layers were typed: no layer fact, the rationale says it.
    const old = buildStory(story, "run").entries.find((e) => e.seq === 6)!;
    expect(old.facts.map(([k]) => k)).not.toContain("layer");
    expect(Object.fromEntries(old.facts)).toMatchObject({ rationale: "allowed by rule (task rule): Edit src/greeting.txt" });
    // A layer the window does not know is not guessed at.
    const odd = buildStory({ ...story, decisions: [], records: [rec(6, { ...signed, provenance: [{ layer: "profile", rule: "x" }] }, "engine")] }, "run");
    expect(odd.entries[0]!.facts.map(([k]) => k)).not.toContain("layer");
  });

  it("sums up what decided things, by kind", () => {
    const s = buildStory(story, "run");
    expect(kindCounts(s.entries).map((c) => [c.kind, c.count])).toEqual([
      ["step_verdict", 2],
      ["rule_allow", 1],
      ["rule_deny", 1],
      ["supervisor_vote", 1],
      ["timer", 1],
      ["retry", 1],
      ["human", 1],
    ]);
    expect(decidedLine(s.entries)).toBe("2 Step verdicts · 1 Rule allowed · 1 Rule denied · 1 Supervisor vote · 1 Timer fired · 1 Retry · 1 Human decision");
    expect(decidedLine(buildStory({ ...story, decisions: [], records: records.slice(0, 1) }, "run").entries)).toBe("Nothing decided yet");
  });

  it("says what is wrong with a run's story, about the run", () => {
    const bad = buildStory({ ...story, records: [...records.slice(0, 5), { ...records[5]!, problem: { problem: "payload_edited" } }, ...records.slice(6)], verified: false }, "run");
    expect(bad.verified).toBe(false);
    expect(bad.entries.find((e) => e.seq === 6)?.problem).toEqual({ problem: "payload_edited" });
    expect(bad.summary).toMatch(/^VERIFICATION FAILED: 1 of 11 records did not verify \(first: #6, payload edited/);
    expect(buildStory({ ...story, decisions: [], records: [] }, "run").summary).toBe("No audit records about this run were found: nothing here can be verified.");
  });

  it("knows a human by the actor, whatever the record", () => {
    expect(recordKind("decision", {}, "user:app", null)).toBe("human");
    expect(recordKind("gate_timer_stopped", {}, "user:app", null)).toBe("human");
    expect(recordKind("gate_snoozed", {}, "user:cli", null)).toBe("human");
    expect(recordKind("run_transition", {}, "user:cli", null)).toBe("human");
    expect(recordKind("decision", { source_event: "tool_call:x", verdict: "approve" }, "engine", null)).toBe("rule_allow");
    // A supervisor's step verdict is a step verdict, not a vote on a gate.
    expect(recordKind("decision", { source_event: "step_finished:4:3" }, "supervisor:llm", null)).toBe("step_verdict");
    expect(stepOf("step_finished:4:3")).toBe(3);
    expect(stepOf("tool_call:3")).toBeNull();
  });
});

describe("touchesRunStory", () => {
  it("reloads on the run's own events that may carry a record, not on its chatter", () => {
    const ev = (e: EngineEvent) => touchesRunStory(e, 4);
    expect(ev({ type: "run_changed", run })).toBe(true);
    expect(ev({ type: "run_changed", run: { ...run, id: 5 } })).toBe(false);
    expect(ev({ type: "gate_decided", gate_id: 1, run_id: 4, kind: "plan" })).toBe(true);
    expect(ev({ type: "gate_opened", gate_id: 1, run_id: 5, kind: "plan" })).toBe(false);
    expect(ev({ type: "run_activity", activity: { id: 1, run_id: 4, at: 0, kind: "tool_allowed", payload: { title: "Read a", kind: "read", text: "default" } } })).toBe(true);
    expect(ev({ type: "run_activity", activity: { id: 2, run_id: 4, at: 0, kind: "message", payload: { text: "hi" } } })).toBe(false);
    expect(ev({ type: "run_activity", activity: { id: 3, run_id: 4, at: 0, kind: "tool_call", payload: { id: "c1", title: null, kind: null, status: null, raw_input: null, locations: [] } } })).toBe(false);
    expect(ev({ type: "workspace_changed", name: "demo" })).toBe(false);
  });
});

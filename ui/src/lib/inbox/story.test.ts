import { describe, expect, it } from "vitest";
import type { CheckedRecord, DecisionRecord, GateStory, GateView } from "../types";
import { actorText, buildStory, describeMismatch, describeProblem, prefix } from "./story";

const gate: GateView = {
  id: 7, run_id: 3, kind: "plan", ask_kind: "blocking", status: "decided", title: "Approve the plan: x",
  options: [{ id: "approve", label: "Approve", requires_context: false }], payload: { goal: "x", steps: [], files: [], risks: [], source: "requested" }, opened_at: 1_000,
  decision: { option: "approve", context: null, actor: { kind: "user", name: "app" }, at: 3_000 },
  auto_at: null, auto_option: null, authority: "advisory", effected: true,
};
const rec = (seq: number, payload: object, actor: string, problem: CheckedRecord["problem"] = null): CheckedRecord => ({
  record: { seq, prev_hash: "0".repeat(64), payload: JSON.stringify(payload), payload_hash: "1".repeat(64), actor, at: seq * 1000, record_hash: `${seq}abcdef0123456789`.padEnd(64, "0"), signature: "f".repeat(128) },
  problem,
});
const advice: DecisionRecord = {
  id: 1, run_id: 3, gate_id: 7, actor: { kind: "supervisor", name: "rules" }, verdict: "approve", option: "approve",
  rationale: "small plan, two text files", correction: null, rule_ref: "plan:small", provenance: null, model_id: "gpt-x", prompt_version: "v3",
  confidence: 0.9, source_event: "gate_opened:7", audit_seq: 2, at: 2_000,
};
const records = [
  rec(3, { type: "gate_decided", gate_id: 7, option: "approve", context: "ship it" }, "user:app"),
  rec(1, { type: "gate_opened", gate_id: 7, title: "Approve the plan: x", kind: "plan", options: [{ id: "approve", label: "Approve" }, { id: "reject", label: "Reject" }] }, "agent:demo"),
  rec(2, { type: "decision", gate_id: 7, verdict: "approve" }, "supervisor:rules"),
];

describe("buildStory", () => {
  it("tells the story in audit order, the supervisor's decision joined to its record", () => {
    const s = buildStory({ gate, decisions: [advice], records, decision_problems: [], verified: true });
    expect(s.entries.map((e) => [e.seq, e.type])).toEqual([[1, "gate_opened"], [2, "decision"], [3, "gate_decided"]]);
    expect(s.entries[0]?.headline).toBe("Asked by agent:demo: Approve the plan: x");
    expect(s.entries[0]?.facts).toContainEqual(["options", "Approve / Reject"]);
    const d = s.entries[1]!;
    expect(d.decision).toBe(advice);
    expect(Object.fromEntries(d.facts)).toMatchObject({
      actor: "supervisor:rules", verdict: "approve", rationale: "small plan, two text files", rule: "plan:small",
      model: "gpt-x", "prompt version": "v3", confidence: "0.90", "source event": "gate_opened:7", "audit record": "#2",
    });
    expect(s.entries[2]?.headline).toBe("Decided by user:app: approve");
    expect(s.entries[2]?.facts).toEqual([["context", "ship it"]]);
    expect(s.entries.every((e) => e.verified)).toBe(true);
    expect(s.verified).toBe(true);
    expect(s.summary).toBe("Verified: all 3 records are signed, intact and chained.");
  });

  it("names the device a person decided through, as the signed records say", () => {
    const phone = { id: 3, name: "Ana's phone" };
    const vote: DecisionRecord = { ...advice, actor: { kind: "user", name: "ana" }, device: phone, rationale: null, model_id: null, prompt_version: null, confidence: null };
    const s = buildStory({
      gate: { ...gate, decision: { option: "approve", context: null, actor: { kind: "user", name: "ana" }, at: 3_000, device: phone } },
      decisions: [vote],
      records: [
        records[1]!,
        rec(2, { type: "decision", gate_id: 7, verdict: "approve", device: phone }, "user:ana"),
        rec(3, { type: "gate_decided", gate_id: 7, option: "approve", context: null, device: phone }, "user:ana"),
      ],
      decision_problems: [],
      verified: true,
    });
    expect(Object.fromEntries(s.entries[1]!.facts).actor).toBe("user:ana through Ana's phone (device 3)");
    expect(s.entries[2]?.headline).toBe("Decided by user:ana through Ana's phone (device 3): approve");
    expect(s.entries[2]?.device).toEqual(phone);
    // The local owner's records name no device.
    expect(buildStory({ gate, decisions: [advice], records, decision_problems: [], verified: true }).entries[2]?.device).toBeNull();
    expect(actorText({ kind: "user", name: "ana" }, phone)).toBe("user:ana through Ana's phone (device 3)");
    expect(actorText({ kind: "user", name: "app" })).toBe("user:app");
  });

  it("flags a tampered record loudly and marks the whole story unverified", () => {
    const bad = [...records.slice(0, 2), rec(2, { type: "decision" }, "supervisor:rules", { problem: "bad_signature" })];
    const s = buildStory({ gate, decisions: [advice], records: bad, decision_problems: [], verified: false });
    expect(s.verified).toBe(false);
    expect(s.entries.map((e) => e.verified)).toEqual([false, false, false]);
    expect(s.entries[1]?.problem).toEqual({ problem: "bad_signature" });
    expect(s.summary).toMatch(/^VERIFICATION FAILED: 1 of 3 records did not verify \(first: #2, bad signature/);
  });

  it("does not call a story verified when it is empty or a decision has no record", () => {
    expect(buildStory({ gate, decisions: [], records: [], decision_problems: [], verified: true }).verified).toBe(false);
    const lost = buildStory({ gate, decisions: [{ ...advice, audit_seq: 99 }], records, decision_problems: [], verified: true } satisfies GateStory);
    expect(lost.verified).toBe(false);
    expect(lost.unrecorded).toHaveLength(1);
    expect(lost.summary).toMatch(/no audit record/);
  });

  it("calls a decision written into the database without its signed record NOT VERIFIED, loudly", () => {
    // What `UPDATE gates SET decided_option = 'approve' ...` leaves: the
    // records all verify, but none of them says the gate was decided.
    const forged = buildStory({
      gate,
      decisions: [],
      records: records.filter((r) => r.record.seq === 1),
      decision_problems: [
        { table: "gates", row_id: 7, gate_id: 7, run_id: 3, audit_seq: null, claim: "'approve' by user:cli at 3000", problem: "no_record" },
      ],
      verified: false,
    });
    expect(forged.verified).toBe(false);
    expect(forged.decisionUnverified).toBe(true);
    expect(forged.summary).toMatch(/^NOT VERIFIED: the decision shown was written into the database outside Overseer/);
    expect(forged.problems[0]?.text).toMatch(/the gate's decision \('approve' by user:cli at 3000\) has no signed audit record/);
    // Even if the engine's own flag said otherwise, a problem is never "verified".
    expect(buildStory({ gate, decisions: [], records, verified: true, decision_problems: [{ table: "decisions", row_id: 4, gate_id: 7, run_id: 3, audit_seq: 2, claim: "approve by supervisor:rules", problem: "differs", field: "rationale", row: "'x'", record: "'y'" }] }).verified).toBe(false);
  });

  it("describes each kind of mismatch and keeps a story with a security event unverified", () => {
    const m = (problem: object) => ({ table: "gate_decisions" as const, row_id: 1, gate_id: 7, run_id: null, audit_seq: 5, claim: "'yes' by user:app at 1", ...problem }) as Parameters<typeof describeMismatch>[0];
    expect(describeMismatch(m({ problem: "record_not_verified", why: { problem: "payload_edited" } }))).toMatch(/does not verify \(payload edited/);
    expect(describeMismatch(m({ problem: "wrong_record", detail: "a gate_opened record" }))).toMatch(/something else/);
    expect(describeMismatch(m({ problem: "record_reused", other_row_id: 3 }))).toMatch(/row 3 already claims/);
    expect(describeMismatch(m({ problem: "decision_erased", option: "no", by: "user:app" }))).toMatch(/erased outside Overseer/);
    const event = rec(4, {
      type: "security_event", event: "decision_without_record", gate_id: 7,
      found: { status: "decided", option: "approve", by: "user:cli" }, restored: { status: "pending" }, text: "gate 7's decision has no signed audit record",
    }, "engine");
    const s = buildStory({ gate, decisions: [advice], records: [...records, event], decision_problems: [], verified: true });
    expect(s.verified).toBe(false);
    expect(s.tampering.map((e) => e.seq)).toEqual([4]);
    expect(s.summary).toMatch(/^TAMPERING DETECTED/);
    const e = s.entries.find((x) => x.seq === 4)!;
    expect(e.headline).toMatch(/^SECURITY: a decision written into the database outside Overseer/);
    expect(Object.fromEntries(e.facts)).toMatchObject({ "found in the database": "approve by user:cli", "put back to": "pending: waiting for a real decision" });
  });

  it("names every audit problem in words", () => {
    expect(describeProblem({ problem: "seq_gap", found: 9 })).toMatch(/found #9/);
    expect(describeProblem({ problem: "truncated", checkpoint_count: 10, found: 8 })).toMatch(/10 records, found 8/);
    for (const p of ["chain_broken", "payload_edited", "fields_edited", "bad_signature"] as const) {
      expect(describeProblem({ problem: p })).toMatch(p.split("_")[0]!);
    }
    expect(prefix("abcdef", 4)).toBe("abcd…");
    expect(actorText({ kind: "engine" })).toBe("engine");
    expect(actorText({ kind: "agent", name: "demo" })).toBe("agent:demo");
  });

  it("keeps untrusted text as text", () => {
    const s = buildStory({ gate, decisions: [], records: [rec(1, { type: "gate_opened", title: "<img src=x onerror=alert(1)>" }, "agent:evil")], decision_problems: [], verified: true });
    expect(s.entries[0]?.headline).toBe("Asked by agent:evil: <img src=x onerror=alert(1)>");
  });
});

describe("decision headlines", () => {
  it("name the actor, the verdict and the option", () => {
    const s = buildStory({ gate, decisions: [advice], records, decision_problems: [], verified: true });
    expect(s.entries[1]?.headline).toBe("Decision by supervisor:rules: approve, option “approve”");
  });

  it("say a supervisor's vote that a human decided otherwise was overruled, and by whom", () => {
    const late: DecisionRecord = { ...advice, verdict: "reject", option: "reject", audit_seq: 4, at: 4_000, overruled_by: { kind: "user", name: "app" } };
    const s = buildStory({
      gate,
      decisions: [advice, late],
      records: [...records, rec(4, { type: "decision", gate_id: 7, verdict: "reject", option: "reject" }, "supervisor:rules")],
      decision_problems: [],
      verified: true,
    });
    expect(s.entries.find((e) => e.seq === 4)?.headline).toBe("supervisor:rules voted REJECT (“reject”): overruled, user:app decided otherwise");
    // The vote that stood keeps its own headline.
    expect(s.entries[1]?.headline).toBe("Decision by supervisor:rules: approve, option “approve”");
  });
});

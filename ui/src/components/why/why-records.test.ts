// The records of a "Why?" story as the drawers render them (the gate's and
// the run's share WhyRecords), and the run page's Why? button.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import WhyRecords from "./WhyRecords.svelte";
import RunHeader from "../run/RunHeader.svelte";
import { buildStory } from "../../lib/inbox/story";
import type { CheckedRecord } from "../../lib/types";
import { Fleet } from "../../lib/fleet/fleet.svelte";
import { demoBackend } from "../../lib/backend/mock";

const NOW = 1_700_000_000_000;
const rec = (seq: number, payload: object, actor: string, problem: CheckedRecord["problem"] = null): CheckedRecord => ({
  record: { seq, prev_hash: "0".repeat(64), payload: JSON.stringify(payload), payload_hash: "1".repeat(64), actor, at: NOW, record_hash: "2".repeat(64), signature: "f".repeat(128) },
  problem,
});
const records = [
  rec(1, { type: "decision", run_id: 4, verdict: "approve", rule_ref: "Edit(src/**)", source_event: "tool_call:a" }, "engine"),
  rec(2, { type: "decision", run_id: 4, verdict: "continue", source_event: "step_finished:4:1" }, "supervisor:rules"),
  rec(3, { type: "gate_decided", run_id: 4, gate_id: 2, option: "approve" }, "user:app"),
];

describe("WhyRecords", () => {
  it("marks each record with its kind and verified", () => {
    const view = buildStory({ decisions: [], records, decision_problems: [], verified: true }, "run");
    const body = render(WhyRecords, { props: { view, now: NOW, showKinds: true } }).body;
    for (const kind of ["rule_allow", "step_verdict", "human"]) expect(body).toContain(`data-kind="${kind}"`);
    expect(body.match(/data-testid="why-record-verified"/g)).toHaveLength(3);
    expect(body).toContain("Rule allowed");
    expect(body).toContain("Step verdict");
    expect(body).toContain("Human decision");
    expect(body).toMatch(/data-testid="why-verified"[^>]*data-verified="true"/);
  });

  it("shows a broken record's problem instead of a verified mark", () => {
    const bad = [records[0]!, rec(2, { type: "decision", run_id: 4 }, "supervisor:rules", { problem: "bad_signature" }), records[2]!];
    const view = buildStory({ decisions: [], records: bad, decision_problems: [], verified: false }, "run");
    const body = render(WhyRecords, { props: { view, now: NOW, showKinds: true } }).body;
    expect(body).not.toContain('data-testid="why-record-verified"');
    expect(body).toMatch(/data-testid="why-problem">NOT VERIFIED: bad signature/);
    expect(body).toMatch(/data-testid="why-verified"[^>]*data-verified="false"/);
  });

  it("leaves the kinds out of a gate's story", () => {
    const view = buildStory({ decisions: [], records, decision_problems: [], verified: true });
    expect(render(WhyRecords, { props: { view, now: NOW } }).body).not.toContain('data-testid="why-kind"');
  });
});

describe("the run page's Why?", () => {
  it("is a button in the run's header when the page can open the drawer", async () => {
    const backend = demoBackend(NOW);
    const fleet = new Fleet(backend);
    await fleet.start();
    const run = [...fleet.rows.values()][0]!;
    expect(render(RunHeader, { props: { run, fleet, now: NOW, onwhy: () => {} } }).body).toMatch(/<button type="button" class="why"[^>]*data-testid="run-why"[^>]*>Why\?<\/button>/);
    expect(render(RunHeader, { props: { run, fleet, now: NOW } }).body).not.toContain("run-why");
  });
});

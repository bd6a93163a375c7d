import { describe, expect, it } from "vitest";
import { GATE_PAGE, Gates } from "./gates.svelte";
import { Fleet } from "../fleet/fleet.svelte";
import { MockBackend, demoBackend, toolCallGate } from "../backend/mock";
import type { EngineEvent, GateView, RequestedChoice } from "../types";
import { buildAnswers, initialDraft, parseSchema, questionPayload } from "./questions";

const flush = () => new Promise((r) => setTimeout(r, 0));
const NOW = 1_700_000_000_000;

async function started(backend: MockBackend = demoBackend(NOW)) {
  const fleet = new Fleet(backend);
  const gates = new Gates(backend, fleet);
  await Promise.all([fleet.start(), gates.start()]);
  return { backend, gates };
}

describe("Gates", () => {
  it("lists every pending gate once, blocking first, with its run's task", async () => {
    const { backend, gates } = await started();
    expect(gates.ready).toBe(true);
    expect(gates.sorted.map((g) => g.kind)).toEqual(["plan", "tool_call", "question", "deviation", "merge_review", "step_review"]);
    expect(gates.runs.get(4)?.task_title).toBe("Pick a framework for the greeting");
    expect(backend.calls.filter((c) => c === "listGates")).toHaveLength(1);
    expect(gates.forRun(5)?.kind).toBe("deviation");
  });

  it("adds a gate when the engine says it opened, and learns its run from run_changed", async () => {
    const { backend, gates } = await started();
    const run = { ...backend.runs.get(7)!, id: 8, task_title: "A new task", state: { state: "running" as const } };
    backend.push({ type: "run_changed", run });
    const g: GateView = { ...backend.gates.get(6)!, id: 40, run_id: 8, title: "Review step 1" };
    backend.openGate(g);
    await flush();
    expect(gates.pending.get(40)?.title).toBe("Review step 1");
    expect(gates.runs.get(8)?.task_title).toBe("A new task");
  });

  it("sends a decision as a choice of the gate's kind, and the engine refuses one of another kind", async () => {
    const backend = demoBackend(NOW);
    const sent: RequestedChoice[] = [];
    const decide = backend.decideGate.bind(backend);
    backend.decideGate = (id, choice, context) => {
      sent.push(choice);
      return decide(id, choice, context);
    };
    const { gates } = await started(backend);
    const plan = gates.sorted.find((g) => g.kind === "plan")!;
    expect(await gates.decide(plan.id, "approve", null)).toBe(true);
    expect(sent).toEqual([{ kind: "plan", choice: "approve" }]);
    // A gate no longer in the inbox: its kind is asked for, not guessed.
    const review = gates.sorted.find((g) => g.kind === "merge_review")!;
    // Gone from the inbox (as when its page was not loaded): the kind is not at hand.
    (gates.pending as Map<number, GateView>).delete(review.id);
    expect(await gates.decide(review.id, "approve", null)).toBe(true);
    expect(sent[1]).toEqual({ kind: "merge_review", choice: "approve" });
    const tool = gates.sorted.find((g) => g.kind === "tool_call")!;
    await expect(backend.decideGate(tool.id, { kind: "merge_review", choice: "approve" }, null)).rejects.toMatchObject({ code: "invalid_input" });
  });

  it("changes nothing when a decision is accepted until the gate_decided event arrives", async () => {
    const backend = demoBackend(NOW);
    const held: EngineEvent[] = [];
    const push = backend.push.bind(backend);
    backend.push = (e) => void held.push(e);
    const { gates } = await started(backend);

    expect(await gates.decide(2, "approve", null)).toBe(true);
    await flush();
    expect(gates.pending.has(2)).toBe(true);
    expect(backend.calls).toContain("decideGate 2 approve");
    for (const e of held) push(e);
    expect(gates.pending.has(2)).toBe(false);
  });

  it("answers a question gate with the JSON object of answers built from its schema", async () => {
    const { backend, gates } = await started();
    const g = gates.pending.get(4)!;
    const { schema } = questionPayload(g);
    const qs = parseSchema(schema);
    const drafts = Object.fromEntries(qs.map((q) => [q.key, initialDraft(q, schema)]));
    drafts["framework"]!.choice = "vue";
    drafts["add_tests"]!.bool = true;
    const built = buildAnswers(qs, drafts);
    expect(built.ok).toBe(true);
    if (!built.ok) return;
    expect(await gates.decide(4, "answer", built.json)).toBe(true);
    expect(JSON.parse(backend.gates.get(4)!.decision!.context!)).toEqual({ framework: "vue", add_tests: true });
    await flush();
    expect(gates.pending.has(4)).toBe(false);
  });

  it("shows a refused decision as a typed error, on the banner and on the card, and keeps the gate", async () => {
    const { gates } = await started();
    expect(await gates.decide(2, "request_changes", null)).toBe(false);
    expect(gates.error?.code).toBe("invalid_input");
    expect(gates.errors.get(2)?.message).toMatch(/needs a reason/);
    expect(gates.pending.has(2)).toBe(true);
    expect(gates.busy.size).toBe(0);

    expect(await gates.decide(2, "request_changes", "split payments first")).toBe(true);
    expect(gates.error).toBeNull();
    expect(gates.errors.has(2)).toBe(false);
  });

  it("approves a batch with each gate's low-risk option and skips the rest", async () => {
    const backend = demoBackend(NOW);
    backend.gates.set(3, { ...backend.gates.get(3)!, kind: "tool_call", payload: toolCallGate({ tool: "Edit", kind: "edit", paths: ["a.txt"] }), batch_option: "yes" });
    const { gates } = await started(backend);
    const ok = await gates.approveAll([6, 3, 2, 1, 99]);
    expect(ok).toBe(2);
    expect(backend.calls.filter((c) => c.startsWith("decideGate"))).toEqual(["decideGate 6 proceed", "decideGate 3 yes"]);
    await flush();
    expect([...gates.pending.keys()].sort()).toEqual([1, 2, 4, 5]);
  });

  it("never batch-approves an always-gated tool call", async () => {
    const { backend, gates } = await started();
    expect(await gates.approveAll([3])).toBe(0);
    expect(backend.calls.some((c) => c.startsWith("decideGate"))).toBe(false);
  });

  it("stops a step review's timer: the gate now waits for a human", async () => {
    const { backend, gates } = await started();
    expect(gates.pending.get(6)?.auto_at).not.toBeNull();
    expect(await gates.hold(6)).toBe(true);
    expect(backend.calls).toContain("holdGate 6");
    expect(gates.pending.get(6)?.auto_at).toBeNull();
    expect(gates.pending.get(6)?.auto_option).toBeNull();
  });

  it("does not resurrect a gate decided while it was being fetched", async () => {
    const { backend, gates } = await started();
    const g: GateView = { ...backend.gates.get(6)!, id: 41, status: "decided" };
    backend.gates.set(41, g);
    backend.push({ type: "gate_opened", gate_id: 41, run_id: 6, kind: "step_review" });
    await flush();
    expect(gates.pending.has(41)).toBe(false);
  });

  it("says when a co-signed gate the human approved waits for the supervisor's co-sign", async () => {
    const backend = demoBackend(NOW);
    backend.gates.set(1, { ...backend.gates.get(1)!, authority: "cosign" });
    let voted = false;
    const story = backend.gateStory.bind(backend);
    backend.gateStory = async (id) => ({ ...(await story(id)), awaiting_cosign: id === 1 && voted });
    // The engine records the human's vote; the gate stays pending.
    backend.decideGate = async (id) => {
      voted = true;
      return backend.gates.get(id)!;
    };
    const { gates } = await started(backend);
    expect(gates.awaitingCosign.has(1)).toBe(false);
    expect(await gates.decide(1, "approve", null)).toBe(true);
    expect(gates.pending.has(1)).toBe(true);
    expect(gates.awaitingCosign.has(1)).toBe(true);
    // The supervisor co-signs: the gate is decided and leaves the inbox.
    backend.push({ type: "gate_decided", gate_id: 1, run_id: 1, kind: "merge_review" });
    await flush();
    expect(gates.pending.has(1)).toBe(false);
    expect(gates.awaitingCosign.has(1)).toBe(false);
  });

  it("keeps the latest co-sign answer when an older one arrives after it", async () => {
    const backend = demoBackend(NOW);
    backend.gates.set(1, { ...backend.gates.get(1)!, authority: "cosign" });
    let voted = false;
    const story = backend.gateStory.bind(backend);
    // The story asked before the vote is answered last.
    let releaseStale: () => void = () => {};
    const staleHeld = new Promise<void>((r) => (releaseStale = r));
    let asked = 0;
    const { gates } = await started(backend);
    backend.gateStory = async (id) => {
      asked += 1;
      const before = { ...(await story(id)), awaiting_cosign: id === 1 && voted };
      if (asked === 1) await staleHeld;
      return before;
    };
    backend.decideGate = async (id) => {
      voted = true;
      return backend.gates.get(id)!;
    };
    // A change to the run (before the vote) asks; its answer is held back.
    backend.push({ type: "run_changed", run: backend.runs.get(1)! });
    await flush();
    expect(await gates.decide(1, "approve", null)).toBe(true);
    expect(gates.awaitingCosign.has(1)).toBe(true);
    releaseStale();
    await flush();
    await flush();
    expect(gates.awaitingCosign.has(1)).toBe(true);
  });

  it("learns of an approval given elsewhere (the CLI) from its run's change", async () => {
    const backend = demoBackend(NOW);
    backend.gates.set(1, { ...backend.gates.get(1)!, authority: "cosign" });
    let voted = false;
    const story = backend.gateStory.bind(backend);
    backend.gateStory = async (id) => ({ ...(await story(id)), awaiting_cosign: id === 1 && voted });
    const { gates } = await started(backend);
    voted = true;
    backend.push({ type: "run_changed", run: backend.runs.get(1)! });
    await flush();
    await flush();
    expect(gates.awaitingCosign.has(1)).toBe(true);
    // A gate without a co-signing supervisor never asks.
    expect(backend.calls.filter((c) => c.startsWith("gateStory")).every((c) => c === "gateStory 1")).toBe(true);
  });

  it("lists a flood a page at a time and counts the rest as more", async () => {
    const backend = demoBackend(NOW);
    const template = backend.gates.get(6)!;
    const first = Math.max(...backend.gates.keys()) + 1;
    const pending = [...backend.gates.values()].filter((g) => g.status === "pending").length;
    for (let i = 0; i < 250; i++) {
      const id = first + i;
      backend.gates.set(id, { ...template, id, run_id: 7, title: `Ask ${i}`, status: "pending", decision: null });
    }
    const { gates } = await started(backend);
    expect(gates.pending.size).toBe(GATE_PAGE);
    expect(gates.more).toBe(pending + 250 - GATE_PAGE);
    // One not listed is decided elsewhere; one opens after the list.
    const unlisted = first + 249;
    backend.gates.set(unlisted, { ...backend.gates.get(unlisted)!, status: "decided" });
    backend.push({ type: "gate_decided", gate_id: unlisted, run_id: 7, kind: "step_review" });
    backend.openGate({ ...template, id: first + 300, run_id: 7, title: "Late", status: "pending", decision: null });
    await flush();
    expect(gates.more).toBe(pending + 250 - GATE_PAGE - 1);
    expect(gates.pending.has(first + 300)).toBe(true);
    // A run's view asks for its run's gate, not listed yet.
    await gates.fetch(first + 240);
    expect(gates.pending.get(first + 240)?.title).toBe("Ask 240");
    expect(gates.more).toBe(pending + 250 - GATE_PAGE - 2);
    await gates.loadMore();
    expect(gates.more).toBe(0);
    expect(gates.pending.size).toBe(pending + 250 - 1 + 1);
    expect(gates.pending.has(unlisted)).toBe(false);
  });

  it("keeps events that arrive while it lists, and stops listening when stopped", async () => {
    const backend = demoBackend(NOW);
    const list = backend.listGates.bind(backend);
    backend.listGates = async (p, limit, after) => {
      const out = await list(p, limit, after);
      backend.push({ type: "gate_decided", gate_id: 1, run_id: 1, kind: "merge_review" });
      return out;
    };
    const { gates } = await started(backend);
    expect(gates.pending.has(1)).toBe(false);
    gates.stop();
    backend.push({ type: "gate_decided", gate_id: 2, run_id: 2, kind: "plan" });
    expect(gates.pending.has(2)).toBe(true);
  });

  it("shows an autonomous supervisor's pending decision when the engine pushes its run's change, and drops it once held", async () => {
    const demo = demoBackend(NOW);
    demo.gates.set(2, { ...demo.gates.get(2)!, authority: "autonomous" });
    const { backend, gates } = await started(demo);
    const run = backend.runs.get(backend.gates.get(2)!.run_id)!;
    backend.push({ type: "run_changed", run });
    await flush();
    expect(gates.pending.get(2)?.pending_effect).toBeUndefined();
    // The supervisor voted: its decision waits for its grace.
    const effect = { option: "approve", verdict: "approve" as const, by: { kind: "supervisor" as const, name: "rules" }, at: NOW + 10_000, rationale: "complete" };
    backend.gates.set(2, { ...backend.gates.get(2)!, pending_effect: effect });
    const asked = backend.calls.filter((c) => c === "showGate 2").length;
    backend.push({ type: "run_changed", run });
    await flush();
    expect(gates.pending.get(2)?.pending_effect).toEqual(effect);
    expect(backend.calls.filter((c) => c === "showGate 2")).toHaveLength(asked + 1);
    // Nothing is polled: no event, no call.
    await new Promise((r) => setTimeout(r, 50));
    expect(backend.calls.filter((c) => c === "showGate 2")).toHaveLength(asked + 1);
    // Held: the decision never takes effect, the gate waits for a human.
    expect(await gates.hold(2)).toBe(true);
    expect(gates.pending.get(2)?.pending_effect).toBeUndefined();
  });

  it("shows an advisory supervisor's advice as soon as the engine pushes its run's change, without polling", async () => {
    const demo = demoBackend(NOW);
    demo.gates.set(2, { ...demo.gates.get(2)!, authority: "advisory" });
    const { backend, gates } = await started(demo);
    const run = backend.runs.get(backend.gates.get(2)!.run_id)!;
    expect(gates.pending.get(2)?.advice).toBeUndefined();
    const advice = { verdict: "advise" as const, option: "approve", rationale: "the plan is small", by: "supervisor:rules", at: NOW };
    backend.gates.set(2, { ...backend.gates.get(2)!, advice });
    const asked = backend.calls.filter((c) => c === "showGate 2").length;
    backend.push({ type: "run_changed", run });
    await flush();
    expect(gates.pending.get(2)?.advice).toEqual(advice);
    expect(backend.calls.filter((c) => c === "showGate 2")).toHaveLength(asked + 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(backend.calls.filter((c) => c === "showGate 2")).toHaveLength(asked + 1);
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MockBackend, WORKING } from "../backend/mock";
import type { ActivityView, RunView } from "../types";
import { RunActivity } from "./activity.svelte";
import { RunDiffView } from "./diff.svelte";

const run = (id: number, state: RunView["state"] = { state: "running" }): RunView => ({
  id,
  task_id: id,
  task_title: `task ${id}`,
  workspace: "w",
  agent: "demo",
  state,
  state_since: 0,
  created_at: 0,
  needs_you: false,
  attention_rank: 0,
  release_note: null,
  origin: "launched",
  actions: WORKING,
  pending_gate: null,
});
const flush = () => new Promise((r) => setTimeout(r, 0));
const entry = (id: number, run_id = 1): ActivityView => ({ id, run_id, at: id, kind: "message", payload: { text: `e${id}` } });

describe("RunActivity", () => {
  it("loads once, then grows only from this run's pushed events", async () => {
    const backend = new MockBackend([run(1), run(2)], () => 5);
    backend.activity.set(1, [entry(1), entry(2)]);
    const act = new RunActivity(backend, 1);
    await act.start();
    expect(act.entries.map((e) => e.id)).toEqual([1, 2]);

    backend.push({ type: "run_activity", activity: entry(3) });
    backend.push({ type: "run_activity", activity: entry(4, 2) }); // another run
    backend.push({ type: "run_activity", activity: entry(3) }); // a duplicate
    expect(act.entries.map((e) => e.id)).toEqual([1, 2, 3]);
    expect(backend.calls.filter((c) => c.startsWith("runActivity"))).toHaveLength(1);
    act.stop();
    backend.push({ type: "run_activity", activity: entry(5) });
    expect(act.entries).toHaveLength(3);
  });

  it("keeps what was pushed while the first load was under way", async () => {
    const backend = new MockBackend([run(1)], () => 5);
    backend.activity.set(1, [entry(1)]);
    const slow = backend.runActivity.bind(backend);
    backend.runActivity = async (id, after) => {
      const r = await slow(id, after);
      backend.push({ type: "run_activity", activity: entry(2) });
      return r;
    };
    const act = new RunActivity(backend, 1);
    await act.start();
    expect(act.entries.map((e) => e.id)).toEqual([1, 2]);
  });

  it("shows a steering instruction only when the engine records it", async () => {
    const backend = new MockBackend([run(1)], () => 5);
    const act = new RunActivity(backend, 1);
    await act.start();
    const held: Parameters<MockBackend["push"]>[0][] = [];
    const push = backend.push.bind(backend);
    backend.push = (e) => void held.push(e);
    await backend.steerRun(1, "also update the docs");
    await flush();
    expect(act.items).toHaveLength(0);
    for (const e of held) push(e);
    expect(act.items.map((i) => [i.kind, i.text])).toEqual([["user_instruction", "also update the docs"]]);
  });

  it("says what went wrong when the load fails", async () => {
    const backend = new MockBackend([], () => 5);
    const act = new RunActivity(backend, 9);
    await act.start();
    expect(act.ready).toBe(true);
    expect(act.error?.code).toBe("not_found");
  });

  it("merges lists by id, in order", async () => {
    const backend = new MockBackend([run(1)], () => 5);
    backend.activity.set(1, [entry(3), entry(1)]);
    const act = new RunActivity(backend, 1);
    await act.start();
    backend.push({ type: "run_activity", activity: entry(2) });
    backend.push({ type: "run_activity", activity: entry(3) });
    expect(act.entries.map((e) => e.id)).toEqual([1, 2, 3]);
  });
});

describe("RunDiffView", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const DIFF = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-1\n+2\n";

  it("loads on open, then reloads once per burst of events for its run, never on its own", async () => {
    const backend = new MockBackend([run(1), run(2)], () => 5);
    backend.diffs.set(1, { files: [{ path: "a", additions: 1, deletions: 1 }], diff: DIFF, auto_run: [] });
    const view = new RunDiffView(backend, 1, 300);
    await view.start();
    expect(view.files.map((f) => f.path)).toEqual(["a"]);
    const loads = () => backend.calls.filter((c) => c === "runDiff 1").length;
    expect(loads()).toBe(1);

    await vi.advanceTimersByTimeAsync(10_000);
    expect(loads()).toBe(1); // no timer of its own

    for (let i = 0; i < 5; i++) backend.push({ type: "run_activity", activity: entry(10 + i) });
    backend.push({ type: "run_changed", run: run(1, { state: "pending_review" }) });
    backend.push({ type: "run_changed", run: run(2) }); // another run
    expect(loads()).toBe(1);
    await vi.advanceTimersByTimeAsync(300);
    expect(loads()).toBe(2);

    view.stop();
    backend.push({ type: "run_changed", run: run(1) });
    await vi.advanceTimersByTimeAsync(1000);
    expect(loads()).toBe(2);
  });

  it("keeps the last diff when a reload fails, with the error", async () => {
    const backend = new MockBackend([run(1)], () => 5);
    backend.diffs.set(1, { files: [], diff: DIFF, auto_run: [] });
    const view = new RunDiffView(backend, 1, 10);
    await view.start();
    backend.failNext = { code: "storage", message: "disk full" };
    backend.push({ type: "run_changed", run: run(1) });
    await vi.advanceTimersByTimeAsync(20);
    expect(view.error).toEqual({ code: "storage", message: "disk full" });
    expect(view.files).toHaveLength(1);
    view.stop();
  });
});

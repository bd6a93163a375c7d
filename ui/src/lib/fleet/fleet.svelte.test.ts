import { describe, expect, it } from "vitest";
import { Fleet } from "./fleet.svelte";
import { MockBackend } from "../backend/mock";
import type { RunView } from "../types";

const review = (id: number): RunView => ({
  id,
  task_id: id,
  task_title: `task ${id}`,
  workspace: "w",
  agent: "demo",
  state: { state: "pending_review" },
  state_since: 0,
  created_at: 0,
  needs_you: true,
  release_note: null,
  pending_gate: { id: 100 + id, kind: "merge_review" },
});

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("Fleet", () => {
  it("loads once and then changes only by pushed events", async () => {
    const backend = new MockBackend([review(1)], () => 42);
    const fleet = new Fleet(backend);
    await fleet.start();
    expect(fleet.ready).toBe(true);
    expect(fleet.rows.get(1)?.state.state).toBe("pending_review");

    backend.push({ type: "run_changed", run: { ...review(2), state: { state: "running" }, needs_you: false } });
    expect(fleet.rows.get(2)?.state.state).toBe("running");
    expect(backend.calls.filter((c) => c === "listRuns")).toHaveLength(1);
  });

  it("does not change a row when an action succeeds until the event arrives", async () => {
    const backend = new MockBackend([review(1)], () => 42);
    // Hold events back to see the state between the reply and the push.
    const held: Parameters<MockBackend["push"]>[0][] = [];
    const push = backend.push.bind(backend);
    backend.push = (e) => void held.push(e);
    const fleet = new Fleet(backend);
    await fleet.start();

    expect(await fleet.approve(1)).toBe(true);
    await flush();
    expect(fleet.rows.get(1)?.state.state).toBe("pending_review");
    expect(held).toHaveLength(1);

    push(held[0]!);
    expect(fleet.rows.get(1)?.state).toEqual({ state: "released", reason: "merged" });
    expect(fleet.rows.get(1)?.needs_you).toBe(false);
  });

  it("shows a refused action as a typed error and leaves the row alone", async () => {
    const backend = new MockBackend([review(1)], () => 42);
    const fleet = new Fleet(backend);
    await fleet.start();
    backend.failNext = { code: "already_decided", message: "gate 101 was already decided" };
    expect(await fleet.approve(1)).toBe(false);
    expect(fleet.error).toEqual({ code: "already_decided", message: "gate 101 was already decided" });
    expect(fleet.rows.get(1)?.state.state).toBe("pending_review");
    expect(fleet.busy.size).toBe(0);
    fleet.dismissError();
    expect(fleet.error).toBeNull();
  });

  it("keeps events that arrive while the first list is loading", async () => {
    const backend = new MockBackend([review(1)], () => 42);
    const list = backend.listRuns.bind(backend);
    backend.listRuns = async () => {
      const rows = await list();
      backend.push({ type: "run_changed", run: { ...review(3), state: { state: "queued" }, needs_you: false } });
      return rows;
    };
    const fleet = new Fleet(backend);
    await fleet.start();
    expect([...fleet.rows.keys()].sort()).toEqual([1, 3]);
  });

  it("a reject without a reason is refused by the engine with invalid_input", async () => {
    const backend = new MockBackend([review(1)], () => 42);
    const fleet = new Fleet(backend);
    await fleet.start();
    expect(await fleet.reject(1, "   ")).toBe(false);
    expect(fleet.error?.code).toBe("invalid_input");
  });
});

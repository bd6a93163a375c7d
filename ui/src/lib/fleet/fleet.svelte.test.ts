import { describe, expect, it } from "vitest";
import { Fleet, HEAD_ROWS } from "./fleet.svelte";
import { MockBackend, IN_REVIEW, demoBackend } from "../backend/mock";
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
  // As the engine ranks them: a run that needs you before every other.
  attention_rank: 0,
  release_note: null,
  origin: "launched",
  actions: IN_REVIEW,
  pending_gate: { id: 100 + id, kind: "merge_review", ask_kind: "question" },
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
    // A fleet that fits on the first screen is listed once, by its head.
    expect(backend.calls.filter((c) => c.startsWith("listRuns"))).toEqual([`listRunsHead ${HEAD_ROWS}`]);
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
    const head = backend.listRunsHead.bind(backend);
    backend.listRunsHead = async (limit) => {
      const h = await head(limit);
      backend.push({ type: "run_changed", run: { ...review(3), state: { state: "queued" }, needs_you: false } });
      return h;
    };
    const fleet = new Fleet(backend);
    await fleet.start();
    expect([...fleet.rows.keys()].sort()).toEqual([1, 3]);
  });

  it("shows a big fleet's first screen before the whole list, then the whole list with the events since", async () => {
    const rows = Array.from({ length: 500 }, (_, i) => running(i + 1));
    rows.push(review(501));
    const backend = new MockBackend(rows, () => 42);
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const list = backend.listRuns.bind(backend);
    backend.listRuns = async () => {
      const all = await list();
      await gate;
      return all;
    };
    const fleet = new Fleet(backend);
    const started = fleet.start();
    // The first screen is ready (what else the window asks for waits for
    // it) while the whole list is still on its way.
    await fleet.firstScreen;
    expect(fleet.partial).toBe(true);
    // The first screen: the head of the default order, counted in full.
    expect(fleet.ready).toBe(true);
    expect(fleet.total).toBe(501);
    expect(fleet.shown).toHaveLength(HEAD_ROWS);
    expect(fleet.shown[0]!.id).toBe(501);
    expect(fleet.shown[1]!.id).toBe(500);
    expect(fleet.counts.running).toBe(500);
    expect(fleet.counts.needs_you).toBe(1);
    // An event while the whole list is on its way applies on top of it.
    backend.push({ type: "run_changed", run: { ...running(7), state: { state: "queued" } } });
    release();
    await started;
    expect(fleet.partial).toBe(false);
    expect(fleet.total).toBe(501);
    expect(fleet.shown).toHaveLength(501);
    expect(fleet.rows.get(7)?.state.state).toBe("queued");
    expect(fleet.counts.running).toBe(499);
    expect(backend.calls.filter((c) => c.startsWith("listRuns"))).toEqual([`listRunsHead ${HEAD_ROWS}`, "listRuns"]);
  });

  it("shows the counts the engine sent with the fleet, then keeps them in step with each change", async () => {
    const backend = new MockBackend([review(1), running(2)], () => 42);
    // The engine's counts (here of rows the window never receives: what it
    // shows is what the engine sent, not a count of its own).
    const counts = { queued: 0, claimed: 0, running: 1, retry_queued: 0, pending_review: 5, released: 3, needs_you: 5 };
    const head = backend.listRunsHead.bind(backend);
    backend.listRunsHead = async (limit) => ({ ...(await head(limit)), counts });
    const fleet = new Fleet(backend);
    await fleet.start();
    expect(fleet.counts).toEqual(counts);
    backend.push({ type: "run_changed", run: running(1) });
    expect(fleet.counts).toMatchObject({ running: 2, pending_review: 4, needs_you: 4 });
  });

  it("a reject without a reason is refused by the engine with invalid_input", async () => {
    const backend = new MockBackend([review(1)], () => 42);
    const fleet = new Fleet(backend);
    await fleet.start();
    expect(await fleet.reject(1, "   ")).toBe(false);
    expect(fleet.error?.code).toBe("invalid_input");
  });
});

const running = (id: number, over: Partial<RunView> = {}): RunView => ({
  ...review(id),
  state: { state: "running" },
  needs_you: false,
  pending_gate: null,
  state_since: id,
  // As the engine ranks running runs: the most recent change first.
  attention_rank: 2 ** 45 - id,
  ...over,
});

describe("Fleet: what the user looks at", () => {
  async function started(rows: RunView[]) {
    const backend = new MockBackend(rows, () => 42);
    const fleet = new Fleet(backend);
    await fleet.start();
    return { backend, fleet };
  }

  it("shows needs-you first, then filters and sorts as asked, and clears back", async () => {
    const { fleet } = await started([
      running(1, { workspace: "web" }),
      review(2),
      running(3, { workspace: "web", task_title: "alpha" }),
    ]);
    expect(fleet.shown.map((r) => r.id)).toEqual([2, 3, 1]);
    expect(fleet.workspaces).toEqual(["w", "web"]);

    fleet.setFilter({ workspace: "web" });
    expect(fleet.shown.map((r) => r.id)).toEqual([3, 1]);
    expect(fleet.filtered).toBe(true);
    fleet.setFilter({ query: "alpha" });
    expect(fleet.shown.map((r) => r.id)).toEqual([3]);

    fleet.clearFilter();
    fleet.sortBy("id");
    expect(fleet.shown.map((r) => r.id)).toEqual([1, 2, 3]);
    fleet.sortBy("id");
    expect(fleet.shown.map((r) => r.id)).toEqual([3, 2, 1]);
    expect(fleet.filtered).toBe(false);
  });

  it("moves the row in and out of the filtered view as events arrive", async () => {
    const { backend, fleet } = await started([running(1), running(2)]);
    fleet.setFilter({ needsYou: true });
    expect(fleet.shown).toEqual([]);
    backend.openGate({
      id: 50,
      run_id: 2,
      kind: "plan",
      status: "pending",
      title: "Approve the plan",
      options: [],
      payload: null,
      opened_at: 42,
      decision: null,
      auto_at: null,
      auto_option: null,
    } as unknown as Parameters<MockBackend["openGate"]>[0]);
    expect(fleet.shown.map((r) => r.id)).toEqual([2]);
    expect(fleet.counts.needs_you).toBe(1);
    backend.push({ type: "run_changed", run: running(2, { current_step: "Write the code" }) });
    expect(fleet.shown).toEqual([]);
  });

  it("moves the selection through the rows as shown", async () => {
    const { fleet } = await started([running(1), running(2), running(3)]);
    fleet.sortBy("id");
    expect(fleet.move(1)).toBe(1);
    expect(fleet.move(1)).toBe(2);
    expect(fleet.move(5)).toBe(3);
    expect(fleet.move(-1)).toBe(2);
    fleet.setFilter({ query: "task 3" });
    expect(fleet.move(1)).toBe(3);
  });

  it("keeps 10,000 rows live without re-listing", async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => running(i + 1));
    const { backend, fleet } = await started(rows);
    expect(fleet.shown.length).toBe(10_000);
    fleet.setFilter({ state: "pending_review" });
    expect(fleet.shown.length).toBe(0);
    backend.push({ type: "run_changed", run: review(5_000) });
    expect(fleet.shown.map((r) => r.id)).toEqual([5_000]);
    expect(fleet.counts.pending_review).toBe(1);
    expect(fleet.counts.running).toBe(9_999);
    expect(backend.calls.filter((c) => c.startsWith("listRuns"))).toEqual([`listRunsHead ${HEAD_ROWS}`, "listRuns"]);
  });
});

describe("Fleet on the recorded demo", () => {
  it("after an approval shows the engine's row: the run leaves the runs that need you for its place among released ones", async () => {
    const NOW = 1_700_000_000_000;
    const backend = demoBackend(NOW);
    const fleet = new Fleet(backend);
    await fleet.start();
    const needs = () => fleet.shown.filter((r) => r.needs_you).map((r) => r.id);
    expect(needs()).toContain(1);
    expect(await fleet.approve(1)).toBe(true);
    await flush();
    const row = fleet.rows.get(1)!;
    expect(row.state).toEqual({ state: "released", reason: "merged" });
    expect(row.needs_you).toBe(false);
    expect(row.actions.approve).toBe(false);
    expect(needs()).not.toContain(1);
    // Every active run now comes before it, as the engine orders them.
    const at = fleet.shown.findIndex((r) => r.id === 1);
    expect(fleet.shown.slice(at + 1).every((r) => r.state.state === "released")).toBe(true);
    expect(fleet.shown.slice(0, at).every((r) => r.state.state !== "released" || r.attention_rank < row.attention_rank)).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { applyEvent, countRuns, formatAge, sortRuns, stateLabel, stateTone } from "./fleet";
import { toApiError } from "../backend/errors";
import type { RunView } from "../types";

function run(id: number, over: Partial<RunView> = {}): RunView {
  return {
    id,
    task_id: id,
    task_title: `task ${id}`,
    workspace: "w",
    agent: "demo",
    state: { state: "running" },
    state_since: 1_000 * id,
    created_at: 0,
    needs_you: false,
    release_note: null,
    pending_gate: null,
    ...over,
  };
}

describe("labels", () => {
  it("names released runs with their reason", () => {
    expect(stateLabel({ state: "released", reason: "merged" })).toBe("released · merged");
    expect(stateLabel({ state: "released", reason: "human_rejected" })).toBe("released · rejected");
    expect(stateLabel({ state: "pending_review" })).toBe("pending review");
  });

  it("gives review the attention colour and failures the bad one", () => {
    expect(stateTone({ state: "pending_review" })).toBe("attention");
    expect(stateTone({ state: "released", reason: "failed" })).toBe("bad");
    expect(stateTone({ state: "released", reason: "merged" })).toBe("good");
  });

  it("says ages the way a person would", () => {
    expect(formatAge(0, 59_000)).toBe("59s");
    expect(formatAge(0, 61_000)).toBe("1m");
    expect(formatAge(0, 7_200_000)).toBe("2h");
    expect(formatAge(0, 3 * 86_400_000)).toBe("3d");
    expect(formatAge(5_000, 0)).toBe("0s");
  });
});

describe("ordering and counts", () => {
  it("puts runs that need the user first, longest waiting first", () => {
    const rows = [
      run(1),
      run(2, { needs_you: true, state: { state: "pending_review" }, state_since: 50 }),
      run(3, { needs_you: true, state: { state: "pending_review" }, state_since: 10 }),
      run(4, { state: { state: "released", reason: "merged" } }),
    ];
    expect(sortRuns(rows).map((r) => r.id)).toEqual([3, 2, 1, 4]);
  });

  it("counts runs per state and those that need the user", () => {
    const c = countRuns([
      run(1),
      run(2, { needs_you: true, state: { state: "pending_review" } }),
      run(3, { state: { state: "released", reason: "failed" } }),
    ]);
    expect(c).toMatchObject({ running: 1, pending_review: 1, released: 1, needs_you: 1, queued: 0 });
  });
});

describe("pushed events", () => {
  it("replaces a known row and inserts an unknown one", () => {
    const rows = new Map([[1, run(1)]]);
    const changed = applyEvent(rows, { type: "run_changed", run: run(1, { state: { state: "pending_review" } }) });
    expect(changed.get(1)?.state.state).toBe("pending_review");
    const added = applyEvent(changed, { type: "run_changed", run: run(7) });
    expect([...added.keys()]).toEqual([1, 7]);
    expect(rows.get(1)?.state.state).toBe("running");
  });

  it("ignores gate notices: the run_changed of the same commit carries the row", () => {
    const rows = new Map([[1, run(1)]]);
    expect(applyEvent(rows, { type: "gate_decided", gate_id: 3, run_id: 1, kind: "merge_review" })).toBe(rows);
  });
});

describe("unknown events", () => {
  it("keeps the rows when a newer engine sends an event this build does not know", () => {
    const rows = new Map([[1, run(1)]]);
    const unknown = { type: "from_the_future", x: 1 } as unknown as Parameters<typeof applyEvent>[1];
    expect(applyEvent(rows, unknown)).toBe(rows);
  });
});

describe("errors", () => {
  it("keeps typed errors and wraps anything else as internal", () => {
    expect(toApiError({ code: "already_decided", message: "gate 3 was already decided" })).toEqual({
      code: "already_decided",
      message: "gate 3 was already decided",
    });
    expect(toApiError({ code: "bogus", message: "x" }).code).toBe("internal");
    expect(toApiError(new Error("boom"))).toEqual({ code: "internal", message: "boom" });
    expect(toApiError("plain string")).toEqual({ code: "internal", message: "plain string" });
  });
});

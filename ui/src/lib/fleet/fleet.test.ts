import { describe, expect, it } from "vitest";
import {
  NO_FILTER,
  adjustCounts,
  checksCell,
  comparator,
  replaceSorted,
  withWorkspace,
  countRuns,
  filterRuns,
  formatAge,
  isFiltered,
  keyCommand,
  moveSelection,
  needsYouLabel,
  revealRow,
  runChange,
  runActions,
  runStateLabel,
  sessionBadge,
  shortPath,
  sortRuns,
  stateLabel,
  stateTone,
  toggleSort,
  visibleRange,
  workspacesOf,
} from "./fleet";
import { toApiError } from "../backend/errors";
import { IN_REVIEW, WORKING } from "../backend/mock";
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
    attention_rank: 0,
    release_note: null,
  origin: "launched",
  actions: WORKING,
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
  it("puts runs in the engine's attention order: by the rank each row carries, ties by id", () => {
    // Ranks as the engine sends them (core's attention_rank: needs-you rows
    // first, longest waiting first, then by state); the window only compares.
    const rows = [
      run(1, { attention_rank: 2 * 2 ** 44 }),
      run(2, { needs_you: true, state: { state: "pending_review" }, state_since: 50, attention_rank: 50 }),
      run(3, { needs_you: true, state: { state: "pending_review" }, state_since: 10, attention_rank: 10 }),
      run(4, { state: { state: "released", reason: "merged" }, attention_rank: 7 * 2 ** 44 - 1 }),
      run(5, { attention_rank: 2 * 2 ** 44 }),
    ];
    expect(sortRuns(rows).map((r) => r.id)).toEqual([3, 2, 1, 5, 4]);
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
  it("puts the row a run_changed carries (by id: a known row is replaced, an unknown one added)", () => {
    const row = run(1, { state: { state: "pending_review" } });
    expect(runChange({ type: "run_changed", run: row })).toEqual({ put: [row] });
  });

  it("ignores gate notices: the run_changed of the same commit carries the row", () => {
    expect(runChange({ type: "gate_decided", gate_id: 3, run_id: 1, kind: "merge_review" })).toBeNull();
  });
});

describe("unknown events", () => {
  it("keeps the rows when a newer engine sends an event this build does not know", () => {
    const unknown = { type: "from_the_future", x: 1 } as unknown as Parameters<typeof runChange>[0];
    expect(runChange(unknown)).toBeNull();
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

const ids = (rows: RunView[]) => rows.map((r) => r.id);

function fleetOf(): RunView[] {
  return [
    run(1, { task_title: "Fix the billing module", workspace: "web-app", agent: "claude-code" }),
    run(2, {
      task_title: "Refactor auth",
      workspace: "api-server",
      agent: "gemini",
      state: { state: "pending_review" },
      needs_you: true,
      pending_gate: { id: 9, kind: "merge_review", ask_kind: "question" },
      sensors: { passed: 3, failed: 0, results: [] },
    }),
    run(3, {
      task_title: "Speed up the CI cache",
      workspace: "web-app",
      agent: "codex",
      needs_you: true,
      pending_gate: { id: 10, kind: "tool_call", ask_kind: "blocking" },
      current_step: "Run the test suite",
      sensors: { passed: 1, failed: 2, results: [] },
    }),
    run(4, { task_title: "Document the public API", workspace: "mobile", state: { state: "released", reason: "merged" } }),
    run(5, {
      task_title: "Test the settings page",
      workspace: "mobile",
      state: { state: "released", reason: "failed" },
      release_note: "sensor failed",
    }),
    run(6, { task_title: "Upgrade deps", workspace: "api-server", state: { state: "queued" } }),
  ];
}

describe("filtering", () => {
  it("keeps everything with no filter", () => {
    expect(ids(filterRuns(fleetOf(), NO_FILTER))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(isFiltered(NO_FILTER)).toBe(false);
  });

  it("filters by state, active runs, and release reason", () => {
    expect(ids(filterRuns(fleetOf(), { ...NO_FILTER, state: "pending_review" }))).toEqual([2]);
    expect(ids(filterRuns(fleetOf(), { ...NO_FILTER, state: "active" }))).toEqual([1, 2, 3, 6]);
    expect(ids(filterRuns(fleetOf(), { ...NO_FILTER, state: "released" }))).toEqual([4, 5]);
    expect(ids(filterRuns(fleetOf(), { ...NO_FILTER, state: "released:failed" }))).toEqual([5]);
  });

  it("filters by workspace and by needs-you, combined", () => {
    expect(ids(filterRuns(fleetOf(), { ...NO_FILTER, workspace: "web-app" }))).toEqual([1, 3]);
    expect(ids(filterRuns(fleetOf(), { ...NO_FILTER, needsYou: true }))).toEqual([2, 3]);
    const f = { ...NO_FILTER, workspace: "web-app", needsYou: true };
    expect(ids(filterRuns(fleetOf(), f))).toEqual([3]);
    expect(isFiltered(f)).toBe(true);
  });

  it("searches title, workspace, agent, step, note and #id, every word, any case", () => {
    const q = (query: string) => ids(filterRuns(fleetOf(), { ...NO_FILTER, query }));
    expect(q("BILLING")).toEqual([1]);
    expect(q("api")).toEqual([2, 4, 6]);
    expect(q("gemini")).toEqual([2]);
    expect(q("test suite")).toEqual([3]);
    expect(q("sensor failed")).toEqual([5]);
    expect(q("#6")).toEqual([6]);
    expect(q("web-app ci")).toEqual([3]);
    expect(q("   ")).toEqual([1, 2, 3, 4, 5, 6]);
    expect(q("nothing like this")).toEqual([]);
  });

  it("sees a changed row's new text (rows are replaced, never mutated)", () => {
    const rows = fleetOf();
    const f = { ...NO_FILTER, query: "lint" };
    expect(ids(filterRuns(rows, f))).toEqual([]);
    rows[0] = { ...rows[0]!, current_step: "Run the linter" };
    expect(ids(filterRuns(rows, f))).toEqual([1]);
  });

  it("lists the workspaces present, sorted", () => {
    expect(workspacesOf(fleetOf())).toEqual(["api-server", "mobile", "web-app"]);
  });
});

describe("sorting by column", () => {
  it("sorts by each column, ties broken by id, both directions", () => {
    const rows = fleetOf();
    expect(ids(sortRuns(rows, { key: "task", dir: "asc" }))).toEqual([4, 1, 2, 3, 5, 6]);
    expect(ids(sortRuns(rows, { key: "task", dir: "desc" }))).toEqual([6, 5, 3, 2, 1, 4]);
    expect(ids(sortRuns(rows, { key: "workspace", dir: "asc" }))).toEqual([2, 6, 4, 5, 1, 3]);
    expect(ids(sortRuns(rows, { key: "id", dir: "desc" }))).toEqual([6, 5, 4, 3, 2, 1]);
    expect(ids(sortRuns(rows, { key: "state", dir: "asc" }))).toEqual([2, 1, 3, 6, 4, 5]);
    // Longest in its state first.
    expect(ids(sortRuns(rows, { key: "waiting", dir: "asc" }))).toEqual([1, 2, 3, 4, 5, 6]);
    // Failing checks first, then by passes, runs without checks last.
    expect(ids(sortRuns(rows, { key: "sensors", dir: "asc" }))).toEqual([3, 2, 1, 4, 5, 6]);
    expect(ids(sortRuns(rows, { key: "step", dir: "asc" }))[0]).toBe(3);
  });

  it("sorts numbers inside titles the way people count", () => {
    const rows = [run(1, { task_title: "Fix (#10)" }), run(2, { task_title: "Fix (#9)" })];
    expect(ids(sortRuns(rows, { key: "task", dir: "asc" }))).toEqual([2, 1]);
  });

  it("flips direction on the same column, starts ascending on a new one", () => {
    expect(toggleSort({ key: "task", dir: "asc" }, "task")).toEqual({ key: "task", dir: "desc" });
    expect(toggleSort({ key: "task", dir: "desc" }, "task")).toEqual({ key: "task", dir: "asc" });
    expect(toggleSort({ key: "task", dir: "desc" }, "agent")).toEqual({ key: "agent", dir: "asc" });
  });

  it("does not change the input array", () => {
    const rows = fleetOf();
    sortRuns(rows, { key: "id", dir: "desc" });
    expect(ids(rows)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

const pick = (a: ReturnType<typeof runActions>) => ({ approve: a.approve, reject: a.reject, abort: a.abort });

describe("external sessions", () => {
  const ext = (over: Partial<RunView> = {}) =>
    run(9, {
      origin: "claude_code",
      session: { session_id: "e2e-1", cwd: "/home/ada/src/projects/web-app/packages/server" },
      state: { state: "running" },
      ...over,
    });

  it("wear a badge with their agent family, cwd and session id", () => {
    const b = sessionBadge(ext())!;
    expect(b.label).toBe("Claude Code · external");
    expect(b.sessionId).toBe("e2e-1");
    expect(b.shortCwd).toBe("…/web-app/packages/server");
    expect(b.tooltip).toContain("e2e-1");
    expect(b.tooltip).toContain("/home/ada/src/projects/web-app/packages/server");
    expect(sessionBadge(ext({ origin: "codex" }))!.family).toBe("Codex");
    expect(sessionBadge(ext({ origin: "mcp", session: null }))!.label).toBe("MCP · external");
    expect(sessionBadge(run(1))).toBeNull();
  });

  it("offer what the engine allows and stop as a session", () => {
    // The engine decides what a run allows (core's run_actions) and ships
    // it; the window adds the words and never widens it.
    const allowed = { approve: false, reject: false, abort: true, diff: false, steer: true };
    const a = runActions(ext({ actions: allowed }));
    expect(pick(a)).toEqual({ approve: false, reject: false, abort: true });
    expect(a.diff).toBe(false);
    expect(a.steer).toBe(true);
    expect(a.abortLabel).toBe("Stop session");
    expect(a.abortExplain).toContain("tool calls are refused");
    // Even in a (never expected) review state, no merge unless the engine says so.
    expect(pick(runActions(ext({ state: { state: "pending_review" }, actions: allowed })))).toEqual({ approve: false, reject: false, abort: true });
    const launched = runActions(run(1, { actions: IN_REVIEW, state: { state: "pending_review" } }));
    expect(launched.abortLabel).toBe("Abort");
    expect(pick(launched)).toEqual({ approve: true, reject: true, abort: true });
    expect(launched.steer).toBe(false);
  });

  it("say 'info' when they wait on an info item", () => {
    const waiting = ext({ needs_you: true, pending_gate: { id: 9, kind: "question", ask_kind: "blocking" } });
    expect(needsYouLabel(waiting, "info")).toBe("info");
    expect(needsYouLabel(waiting, "blocking")).toBe("question");
    expect(needsYouLabel(waiting)).toBe("question");
    // As the engine sends it: an info item alone does not need you, and
    // the row still says there is one.
    const told = ext({ needs_you: false, pending_gate: { id: 9, kind: "question", ask_kind: "info" } });
    expect(needsYouLabel(told)).toBe("info");
    expect(needsYouLabel(ext({ needs_you: false, pending_gate: null }))).toBeNull();
  });

  it("read as stopped, not aborted, once the user stopped them", () => {
    expect(runStateLabel(ext({ state: { state: "released", reason: "aborted_by_user" } }))).toBe("released · session stopped");
    expect(runStateLabel(ext({ state: { state: "released", reason: "ended" } }))).toBe("released · session ended");
    expect(runStateLabel(run(1, { state: { state: "released", reason: "aborted_by_user" } }))).toBe("released · aborted");
  });

  it("are found by family, session id and cwd", () => {
    const rows = [run(1), ext()];
    expect(filterRuns(rows, { ...NO_FILTER, query: "claude code external" }).map((r) => r.id)).toEqual([9]);
    expect(filterRuns(rows, { ...NO_FILTER, query: "e2e-1" }).map((r) => r.id)).toEqual([9]);
    expect(filterRuns(rows, { ...NO_FILTER, query: "packages/server" }).map((r) => r.id)).toEqual([9]);
  });

  it("shorten paths to their last segments", () => {
    expect(shortPath("/tmp/x")).toBe("/tmp/x");
    expect(shortPath("/a/very/long/path/that/goes/on/and/on/forever", 20)).toBe("…/on/and/on/forever");
    expect(shortPath("/" + "x".repeat(40), 20)).toBe("/" + "x".repeat(40));
  });
});

describe("row actions and markers", () => {
  it("says what the run waits for", () => {
    const [r1, r2, r3] = fleetOf();
    expect(needsYouLabel(r1!)).toBeNull();
    expect(needsYouLabel(r2!)).toBe("review");
    expect(needsYouLabel(r3!)).toBe("tool call");
  });
});

describe("the virtual window", () => {
  const v = { rowHeight: 36, overscan: 5, height: 360, count: 10_000 };

  it("renders the rows in view plus the overscan, never past either end", () => {
    expect(visibleRange({ ...v, scrollTop: 0 })).toEqual({ start: 0, end: 16 });
    // Row 100 at the top: rows 95..(100 + 11 + 5).
    expect(visibleRange({ ...v, scrollTop: 3600 })).toEqual({ start: 95, end: 116 });
    expect(visibleRange({ ...v, scrollTop: 36 * 10_000 - 360 })).toEqual({ start: 9985, end: 10_000 });
  });

  it("copes with overscrolling, empty lists and short lists", () => {
    expect(visibleRange({ ...v, scrollTop: -50 })).toEqual({ start: 0, end: 16 });
    expect(visibleRange({ ...v, scrollTop: 10_000_000 })).toEqual({ start: 9994, end: 10_000 });
    expect(visibleRange({ ...v, count: 0, scrollTop: 0 })).toEqual({ start: 0, end: 0 });
    expect(visibleRange({ ...v, count: 3, scrollTop: 0 })).toEqual({ start: 0, end: 3 });
    expect(visibleRange({ ...v, height: 0, scrollTop: 0 })).toEqual({ start: 0, end: 6 });
  });

  it("holds a bounded number of rows whatever the list length", () => {
    for (const count of [10, 1_000, 100_000]) {
      const r = visibleRange({ ...v, count, scrollTop: 36 * Math.floor(count / 2) });
      expect(r.end - r.start).toBeLessThanOrEqual(Math.ceil(v.height / v.rowHeight) + 1 + 2 * v.overscan);
    }
  });

  it("scrolls only as far as needed to show the selected row", () => {
    // Rows 0..9 fully visible at scrollTop 0 with 360px.
    expect(revealRow(5, 0, 360, 36)).toBeNull();
    expect(revealRow(9, 0, 360, 36)).toBeNull();
    expect(revealRow(10, 0, 360, 36)).toBe(36);
    expect(revealRow(3, 200, 360, 36)).toBe(108);
    expect(revealRow(9_999, 0, 360, 36)).toBe(36 * 10_000 - 360);
    expect(revealRow(0, 0, 10, 36)).toBeNull();
  });
});

describe("keyboard", () => {
  it("moves the selection through the rows as shown and stops at the ends", () => {
    const rows = fleetOf();
    expect(moveSelection(rows, null, 1)).toBe(1);
    expect(moveSelection(rows, 1, 1)).toBe(2);
    expect(moveSelection(rows, 2, -1)).toBe(1);
    expect(moveSelection(rows, 1, -1)).toBe(1);
    expect(moveSelection(rows, 6, 1)).toBe(6);
    // The selected run was filtered out: start again at the top.
    expect(moveSelection(rows.slice(2), 1, 1)).toBe(3);
    expect(moveSelection([], 1, 1)).toBeNull();
  });

  it("maps keys to commands, and leaves text fields and modified keys alone", () => {
    expect(keyCommand({ key: "j" })).toBe("down");
    expect(keyCommand({ key: "k" })).toBe("up");
    expect(keyCommand({ key: "ArrowDown" })).toBe("down");
    expect(keyCommand({ key: "Enter" })).toBe("open");
    expect(keyCommand({ key: "a" })).toBe("approve");
    expect(keyCommand({ key: "r" })).toBe("reject");
    expect(keyCommand({ key: "x" })).toBe("abort");
    expect(keyCommand({ key: "?" })).toBe("help");
    expect(keyCommand({ key: "/" })).toBe("search");
    expect(keyCommand({ key: "q" })).toBeNull();
    expect(keyCommand({ key: "a", inField: true })).toBeNull();
    expect(keyCommand({ key: "r", ctrlKey: true })).toBeNull();
    expect(keyCommand({ key: "Escape", inField: true })).toBe("escape");
  });
});

describe("10,000 runs", () => {
  it("filters, searches and sorts a large fleet correctly", () => {
    const states = [
      { state: "running" },
      { state: "pending_review" },
      { state: "released", reason: "merged" },
      { state: "queued" },
    ] as const;
    const big = Array.from({ length: 10_000 }, (_, i) =>
      run(i + 1, {
        task_title: `Fix thing (#${i})`,
        workspace: ["web-app", "api-server", "mobile"][i % 3]!,
        state: states[i % 4]!,
        needs_you: i % 4 === 1,
        state_since: (i * 7919) % 10_007,
        // As the engine ranks a run that needs you: by how long it waits.
        attention_rank: (i * 7919) % 10_007,
      }),
    );
    const f = { ...NO_FILTER, state: "pending_review" as const, workspace: "mobile" };
    const out = filterRuns(sortRuns(big), f);
    expect(out.length).toBe(big.filter((r) => r.state.state === "pending_review" && r.workspace === "mobile").length);
    for (let i = 1; i < out.length; i++) expect(out[i - 1]!.state_since).toBeLessThanOrEqual(out[i]!.state_since);
    expect(ids(filterRuns(big, { ...NO_FILTER, query: "(#9999)" }))).toEqual([10_000]);
    const byTask = sortRuns(big, { key: "task", dir: "desc" });
    expect(byTask[0]!.id).toBe(10_000);
  });
});

describe("keeping the order row by row", () => {
  it("moves a changed row to its new place, inserts a new one, and leaves the input alone", () => {
    const cmp = comparator({ key: "id", dir: "asc" });
    const rows = fleetOf();
    const moved = replaceSorted(rows, rows[0], { ...rows[0]!, id: 1 }, cmp);
    expect(ids(moved)).toEqual([1, 2, 3, 4, 5, 6]);
    const added = replaceSorted(rows, undefined, run(0), cmp);
    expect(ids(added)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(ids(rows)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("agrees with a full sort after any sequence of changes, for every order", () => {
    // A small deterministic generator: the same "random" changes every run.
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n);
    const states = [
      { state: "running" },
      { state: "pending_review" },
      { state: "queued" },
      { state: "released", reason: "merged" },
      { state: "released", reason: "failed" },
    ] as const;
    const sorts = ["attention", "id", "task", "workspace", "agent", "state", "step", "waiting", "sensors"] as const;
    for (const key of sorts) {
      for (const dir of ["asc", "desc"] as const) {
        const sort = { key, dir };
        const cmp = comparator(sort);
        const all = new Map<number, RunView>();
        let sorted: RunView[] = [];
        for (let i = 0; i < 300; i++) {
          const id = 1 + rand(60);
          const st = states[rand(states.length)]!;
          const next = run(id, {
            task_title: `task ${rand(20)}`,
            workspace: ["a", "b", "c"][rand(3)]!,
            agent: ["x", "y"][rand(2)]!,
            state: st,
            needs_you: st.state === "pending_review" || rand(4) === 0,
            state_since: rand(50),
            attention_rank: rand(50),
            current_step: rand(3) === 0 ? null : `step ${rand(5)}`,
            sensors: rand(3) === 0 ? null : { passed: rand(4), failed: rand(3), results: [] },
          });
          sorted = replaceSorted(sorted, all.get(id), next, cmp);
          all.set(id, next);
        }
        expect(ids(sorted), `${key} ${dir}`).toEqual(ids(sortRuns([...all.values()], sort)));
      }
    }
  });

  it("adjusts counts for a changed or new row", () => {
    const [r1, r2] = fleetOf();
    const c = countRuns([r1!, r2!]);
    const after = adjustCounts(c, r2!, { ...r2!, state: { state: "released", reason: "merged" }, needs_you: false });
    expect(after).toMatchObject({ running: 1, pending_review: 0, released: 1, needs_you: 0 });
    expect(adjustCounts(after, undefined, run(9))).toMatchObject({ running: 2 });
    expect(c).toMatchObject({ pending_review: 1, needs_you: 1 });
  });

  it("adds a new workspace in order and keeps the list when it is known", () => {
    const list = ["api", "web"];
    expect(withWorkspace(list, "web")).toBe(list);
    expect(withWorkspace(list, "mobile")).toEqual(["api", "mobile", "web"]);
  });
});

describe("the CHECKS cell", () => {
  it("says no checks ran when none did", () => {
    expect(checksCell(null)).toEqual({ state: "none", failed: null, passed: null, title: "No checks ran" });
    expect(checksCell(undefined).state).toBe("none");
    expect(checksCell({ passed: 0, failed: 0, results: [] }).state).toBe("none");
  });

  it("shows every check passed as n/n", () => {
    expect(checksCell({ passed: 2, failed: 0, results: [] })).toEqual({ state: "passed", failed: null, passed: "✓ 2/2", title: "Checks: 2 passed, none failed" });
    expect(checksCell({ passed: 1, failed: 0, results: [] }).passed).toBe("✓ 1/1");
  });

  it("puts failures first, with what passed beside them", () => {
    expect(checksCell({ passed: 1, failed: 1, results: [] })).toEqual({ state: "failed", failed: "✗ 1", passed: "✓ 1", title: "Checks: 1 failed, 1 passed" });
    expect(checksCell({ passed: 0, failed: 3, results: [] })).toEqual({ state: "failed", failed: "✗ 3", passed: null, title: "Checks: 3 failed, 0 passed" });
  });

  it("names each command on hover, failed first", () => {
    const cell = checksCell({
      passed: 1,
      failed: 1,
      results: [
        { command: "npm test", passed: true },
        { command: "npm run lint", passed: false },
      ],
    });
    expect(cell.title).toBe("Checks: 1 failed, 1 passed\n✗ npm run lint\n✓ npm test");
  });
});

// An engine in memory, for unit tests and for `npm run dev` in a plain browser.
// It answers like the real one: actions change nothing locally in the caller;
// the change arrives as a pushed run_changed event.
import type { Backend } from "./backend";
import type { ApiError, EngineEvent, ReleaseReason, RunView } from "../types";

export class MockBackend implements Backend {
  private runs = new Map<number, RunView>();
  private listeners = new Set<(e: EngineEvent) => void>();
  /** Calls made, for tests. */
  calls: string[] = [];
  /** When set, the next call fails with this error. */
  failNext: ApiError | null = null;

  constructor(runs: RunView[] = [], private now: () => number = Date.now) {
    for (const r of runs) this.runs.set(r.id, structuredClone(r));
  }

  async listRuns(): Promise<RunView[]> {
    this.calls.push("listRuns");
    return [...this.runs.values()].map((r) => structuredClone(r));
  }

  approveRun(runId: number) {
    return this.release(`approveRun ${runId}`, runId, "merged", null);
  }

  rejectRun(runId: number, reason: string) {
    if (!reason.trim()) {
      return Promise.reject<RunView>({ code: "invalid_input", message: "rejecting a run needs a reason" });
    }
    return this.release(`rejectRun ${runId}`, runId, "human_rejected", reason);
  }

  abortRun(runId: number) {
    return this.release(`abortRun ${runId}`, runId, "aborted_by_user", null, true);
  }

  async subscribe(onEvent: (e: EngineEvent) => void) {
    this.listeners.add(onEvent);
    return () => this.listeners.delete(onEvent);
  }

  /** Pushes an event as the engine would after a commit. */
  push(e: EngineEvent) {
    if (e.type === "run_changed") this.runs.set(e.run.id, structuredClone(e.run));
    for (const l of this.listeners) l(structuredClone(e));
  }

  private async release(
    call: string,
    runId: number,
    reason: ReleaseReason,
    note: string | null,
    anyActive = false,
  ): Promise<RunView> {
    this.calls.push(call);
    if (this.failNext) {
      const e = this.failNext;
      this.failNext = null;
      throw e;
    }
    const run = this.runs.get(runId);
    if (!run) throw { code: "not_found", message: `run ${runId} does not exist` } satisfies ApiError;
    const active = run.state.state !== "released";
    if (!(run.state.state === "pending_review" || (anyActive && active))) {
      throw { code: "invalid_transition", message: `cannot change a run that is ${run.state.state}` } satisfies ApiError;
    }
    const next: RunView = {
      ...run,
      state: { state: "released", reason },
      state_since: this.now(),
      needs_you: false,
      pending_gate: null,
      release_note: note ?? run.release_note,
    };
    // Pushed asynchronously, like the real engine's event after commit.
    queueMicrotask(() => this.push({ type: "run_changed", run: next }));
    return structuredClone(next);
  }
}

/** A few rows so a plain browser shows something. */
export function demoRuns(now: number): RunView[] {
  const base = { task_id: 0, created_at: now - 3_600_000, release_note: null, pending_gate: null };
  return [
    { ...base, id: 1, task_title: "Add rate limiting to the public API", workspace: "web-app", agent: "claude-code", state: { state: "pending_review" }, state_since: now - 720_000, needs_you: true },
    { ...base, id: 2, task_title: "Refactor the billing module", workspace: "web-app", agent: "gemini", state: { state: "running" }, state_since: now - 480_000, needs_you: false },
    { ...base, id: 3, task_title: "Write the migration for user settings", workspace: "api-server", agent: "codex", state: { state: "running" }, state_since: now - 1_260_000, needs_you: true, pending_gate: { id: 9, kind: "tool_call" } },
    { ...base, id: 4, task_title: "Bump version to 0.4.2", workspace: "web-app", agent: "demo", state: { state: "released", reason: "merged" }, state_since: now - 10_800_000, needs_you: false },
  ];
}

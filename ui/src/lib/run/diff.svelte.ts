// One run's diff: loaded when the page opens, and again (debounced) when the
// engine says something happened to the run: a `run_changed` or
// `run_activity` event for it. Never on a timer of its own. The previous diff
// stays on screen while the next one loads, so nothing jumps.
import type { Backend } from "../backend";
import { LiveValue } from "../live.svelte";
import { parseDiff, type FileDiff } from "../diff/parse";
import type { ApiError, RunDiff } from "../types";

export class RunDiffView {
  files = $state.raw<FileDiff[]>([]);
  /** How long the last parse took, in ms (shown for big diffs). */
  parseMs = $state(0);

  readonly #live: LiveValue<RunDiff>;

  constructor(
    backend: Backend,
    readonly runId: number,
    debounceMs = 500,
  ) {
    this.#live = new LiveValue(backend, {
      fetch: () => backend.runDiff(runId),
      touches: (e) =>
        (e.type === "run_changed" && e.run.id === runId) || (e.type === "run_activity" && e.activity.run_id === runId),
      debounceMs,
      answered: (d) => {
        if (d.diff === this.diff?.diff) return;
        const t0 = performance.now();
        this.files = parseDiff(d.diff);
        this.parseMs = performance.now() - t0;
      },
    });
  }

  get diff(): RunDiff | null {
    return this.#live.value;
  }
  get loading(): boolean {
    return this.#live.loading;
  }
  get error(): ApiError | null {
    return this.#live.error;
  }

  start(): Promise<void> {
    return this.#live.start();
  }

  stop(): void {
    this.#live.stop();
  }

  load(): Promise<void> {
    return this.#live.refetch();
  }
}

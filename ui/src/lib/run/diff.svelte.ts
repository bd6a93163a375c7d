// One run's diff: loaded when the page opens, and again (debounced) when the
// engine says something happened to the run: a `run_changed` or
// `run_activity` event for it. Never on a timer of its own. The previous diff
// stays on screen while the next one loads, so nothing jumps.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import { parseDiff, type FileDiff } from "../diff/parse";
import type { ApiError, EngineEvent, RunDiff } from "../types";

export class RunDiffView {
  diff = $state.raw<RunDiff | null>(null);
  files = $state.raw<FileDiff[]>([]);
  loading = $state(false);
  error = $state<ApiError | null>(null);
  /** How long the last parse took, in ms (shown for big diffs). */
  parseMs = $state(0);

  private unsubscribe: (() => void) | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private seq = 0;
  private stopped = false;

  constructor(
    private backend: Backend,
    readonly runId: number,
    private debounceMs = 500,
  ) {}

  async start(): Promise<void> {
    const unsubscribe = await this.backend.subscribe((e) => this.onEvent(e));
    if (this.stopped) {
      unsubscribe();
      return;
    }
    this.unsubscribe = unsubscribe;
    await this.load();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  async load(): Promise<void> {
    const seq = ++this.seq;
    this.loading = true;
    try {
      const d = await this.backend.runDiff(this.runId);
      if (seq !== this.seq || this.stopped) return; // a newer load answers
      if (d.diff !== this.diff?.diff) {
        const t0 = performance.now();
        this.files = parseDiff(d.diff);
        this.parseMs = performance.now() - t0;
      }
      this.diff = d;
      this.error = null;
    } catch (e) {
      if (seq === this.seq) this.error = toApiError(e);
    } finally {
      if (seq === this.seq) this.loading = false;
    }
  }

  private onEvent(e: EngineEvent): void {
    const mine =
      (e.type === "run_changed" && e.run.id === this.runId) ||
      (e.type === "run_activity" && e.activity.run_id === this.runId);
    if (!mine || this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.load();
    }, this.debounceMs);
  }
}

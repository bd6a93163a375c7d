// The dashboard's view of the fleet: filled once from listRuns, then kept in
// step only by pushed events. It never polls and never changes a row on its
// own: an action's result arrives as an event like any other change.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, EngineEvent, RunView } from "../types";
import { applyEvent, countRuns, sortRuns } from "./fleet";

export class Fleet {
  rows = $state(new Map<number, RunView>());
  ready = $state(false);
  error = $state<ApiError | null>(null);
  /** Run ids with a call in flight. */
  busy = $state(new Set<number>());

  sorted = $derived(sortRuns([...this.rows.values()]));
  counts = $derived(countRuns(this.rows.values()));

  private unsubscribe: (() => void) | null = null;
  private pending: EngineEvent[] | null = [];

  constructor(private backend: Backend) {}

  /** Subscribes first, then lists, so no event between the two is lost. */
  async start(): Promise<void> {
    this.unsubscribe = await this.backend.subscribe((e) => this.onEvent(e));
    try {
      const runs = await this.backend.listRuns();
      let rows = new Map(runs.map((r) => [r.id, r] as const));
      for (const e of this.pending ?? []) rows = applyEvent(rows, e);
      this.rows = rows;
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      this.pending = null;
      this.ready = true;
    }
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private onEvent(e: EngineEvent): void {
    if (this.pending) {
      this.pending.push(e);
      return;
    }
    this.rows = applyEvent(this.rows, e);
  }

  approve(id: number) {
    return this.act(id, () => this.backend.approveRun(id));
  }

  reject(id: number, reason: string) {
    return this.act(id, () => this.backend.rejectRun(id, reason));
  }

  abort(id: number) {
    return this.act(id, () => this.backend.abortRun(id));
  }

  dismissError(): void {
    this.error = null;
  }

  /** True when the call succeeded. The row itself changes by event only. */
  private async act(id: number, call: () => Promise<unknown>): Promise<boolean> {
    this.busy = new Set(this.busy).add(id);
    try {
      await call();
      this.error = null;
      return true;
    } catch (e) {
      this.error = toApiError(e);
      return false;
    } finally {
      const next = new Set(this.busy);
      next.delete(id);
      this.busy = next;
    }
  }
}

// One run's activity: loaded once, then extended only by pushed
// `run_activity` events for that run. Never polled. Entries are kept in id
// order without duplicates, whatever order the load and the events arrive in.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ActivityView, ApiError, EngineEvent } from "../types";
import { foldActivity, latestPlan, latestProposal } from "./timeline";

export class RunActivity {
  entries = $state.raw<ActivityView[]>([]);
  ready = $state(false);
  error = $state<ApiError | null>(null);

  items = $derived(foldActivity(this.entries));
  plan = $derived(latestPlan(this.entries));
  proposal = $derived(latestProposal(this.entries));

  private unsubscribe: (() => void) | null = null;
  private early: ActivityView[] | null = [];
  private stopped = false;

  constructor(
    private backend: Backend,
    readonly runId: number,
  ) {}

  /** Subscribes first, then loads, so nothing recorded in between is lost. */
  async start(): Promise<void> {
    const unsubscribe = await this.backend.subscribe((e) => this.onEvent(e));
    if (this.stopped) {
      unsubscribe();
      return;
    }
    this.unsubscribe = unsubscribe;
    await this.load();
  }

  /** Loads everything again (after an error). */
  async load(): Promise<void> {
    try {
      const all = await this.backend.runActivity(this.runId, 0);
      if (this.stopped) return;
      this.entries = merge(all, this.early ?? [], this.entries);
      this.error = null;
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      this.early = null;
      this.ready = true;
    }
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private onEvent(e: EngineEvent): void {
    if (e.type !== "run_activity" || e.activity.run_id !== this.runId) return;
    if (this.early) {
      this.early.push(e.activity);
      return;
    }
    const last = this.entries[this.entries.length - 1];
    if (!last || e.activity.id > last.id) this.entries = [...this.entries, e.activity];
    else this.entries = merge(this.entries, [e.activity]);
  }
}

/** The union of entry lists by id, in id order. */
export function merge(...lists: ActivityView[][]): ActivityView[] {
  const byId = new Map<number, ActivityView>();
  for (const l of lists) for (const a of l) byId.set(a.id, a);
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

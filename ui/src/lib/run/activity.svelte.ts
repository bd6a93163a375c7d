// One run's activity: loaded once, then extended only by pushed
// `run_activity` events for that run. Never polled. Entries are kept in id
// order without duplicates, whatever order the load and the events arrive in.
import type { Backend } from "../backend";
import type { ActivityView, ApiError } from "../types";
import { LiveCollection } from "../live.svelte";
import { foldActivity, latestPlan, latestProposal } from "./timeline";

export class RunActivity {
  readonly #live: LiveCollection<number, ActivityView>;

  constructor(
    backend: Backend,
    readonly runId: number,
  ) {
    this.#live = new LiveCollection(backend, {
      key: (a) => a.id,
      load: () => backend.runActivity(runId, 0),
      change: (e) => (e.type === "run_activity" && e.activity.run_id === runId ? { put: [e.activity] } : null),
      order: (a, b) => a.id - b.id,
    });
  }

  /** Every entry, in id order without duplicates. */
  get entries(): readonly ActivityView[] {
    return this.#live.list;
  }
  get ready(): boolean {
    return this.#live.ready;
  }
  get error(): ApiError | null {
    return this.#live.error;
  }

  items = $derived(foldActivity(this.entries));
  plan = $derived(latestPlan(this.entries));
  proposal = $derived(latestProposal(this.entries));

  /** Subscribes first, then loads, so nothing recorded in between is lost. */
  start(): Promise<void> {
    return this.#live.start();
  }

  /** Loads everything again (after an error). */
  async load(): Promise<void> {
    await this.#live.load();
  }

  stop(): void {
    this.#live.stop();
  }
}

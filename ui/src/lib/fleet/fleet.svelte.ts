// The dashboard's view of the fleet: filled once from listRuns, then kept in
// step only by pushed events. It never polls and never changes a row on its
// own: an action's result arrives as an event like any other change.
// It also keeps what the user chose to look at (filter, sort, selected row),
// so leaving the dashboard for a run and coming back loses nothing.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, EngineEvent, RunView } from "../types";
import type { Counts, Filter, Sort, SortKey } from "./fleet";
import {
  DEFAULT_SORT,
  NO_FILTER,
  adjustCounts,
  applyEvent,
  comparator,
  countRuns,
  filterRuns,
  isFiltered,
  moveSelection,
  replaceSorted,
  sortRuns,
  toggleSort,
  withWorkspace,
  workspacesOf,
} from "./fleet";

export class Fleet {
  /** Every run by id; replaced (never mutated) on each change. */
  rows = $state.raw(new Map<number, RunView>());
  ready = $state(false);
  error = $state<ApiError | null>(null);
  /** Run ids with a call in flight. */
  busy = $state(new Set<number>());

  filter = $state.raw<Filter>(NO_FILTER);
  /** The run the keyboard acts on (j/k move it). */
  selected = $state<number | null>(null);

  // Kept up to date row by row as events arrive, not recomputed from all
  // rows: one pushed event costs a binary search and an array copy, not a
  // sort of 10,000 rows.
  /** Every row in the chosen order. */
  sorted = $state.raw<readonly RunView[]>([]);
  counts = $state.raw<Counts>(countRuns([]));
  workspaces = $state.raw<readonly string[]>([]);

  filtered = $derived(isFiltered(this.filter));
  /** The rows as shown: sorted, then filtered (filtering keeps the order,
   * so typing in the search box never re-sorts). */
  shown: readonly RunView[] = $derived(this.filtered ? filterRuns(this.sorted, this.filter) : this.sorted);

  #sort = $state.raw<Sort>(DEFAULT_SORT);
  private unsubscribe: (() => void) | null = null;
  private pending: EngineEvent[] | null = [];

  constructor(private backend: Backend) {}

  get sort(): Sort {
    return this.#sort;
  }

  set sort(s: Sort) {
    this.#sort = s;
    this.sorted = sortRuns([...this.rows.values()], s);
  }

  /** Subscribes first, then lists, so no event between the two is lost. */
  async start(): Promise<void> {
    this.unsubscribe = await this.backend.subscribe((e) => this.onEvent(e));
    try {
      const runs = await this.backend.listRuns();
      let rows = new Map(runs.map((r) => [r.id, r] as const));
      for (const e of this.pending ?? []) rows = applyEvent(rows, e);
      this.load(rows);
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      this.pending = null;
      this.ready = true;
    }
  }

  private load(rows: Map<number, RunView>): void {
    this.rows = rows;
    this.sorted = sortRuns([...rows.values()], this.#sort);
    this.counts = countRuns(rows.values());
    this.workspaces = workspacesOf(rows.values());
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
    const rows = applyEvent(this.rows, e);
    if (rows === this.rows || e.type !== "run_changed") return;
    const prev = this.rows.get(e.run.id);
    const next = rows.get(e.run.id)!;
    this.rows = rows;
    this.sorted = replaceSorted(this.sorted, prev, next, comparator(this.#sort));
    this.counts = adjustCounts(this.counts, prev, next);
    this.workspaces = withWorkspace(this.workspaces, next.workspace);
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

  setFilter(patch: Partial<Filter>): void {
    this.filter = { ...this.filter, ...patch };
  }

  clearFilter(): void {
    this.filter = NO_FILTER;
  }

  sortBy(key: SortKey): void {
    this.sort = toggleSort(this.sort, key);
  }

  /** Moves the selection `delta` rows through the rows as shown; returns the
   * newly selected id. */
  move(delta: number): number | null {
    this.selected = moveSelection(this.shown, this.selected, delta);
    return this.selected;
  }

  select(id: number | null): void {
    this.selected = id;
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

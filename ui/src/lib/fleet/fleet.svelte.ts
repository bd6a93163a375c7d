// The dashboard's view of the fleet: filled once from listRuns, then kept in
// step only by pushed events. It never polls and never changes a row on its
// own: an action's result arrives as an event like any other change.
// It also keeps what the user chose to look at (filter, sort, selected row),
// so leaving the dashboard for a run and coming back loses nothing.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, EngineEvent, RunView, RunsHead } from "../types";
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

/** A performance mark for the window benchmarks (tests/e2e/bench): where a
 * page load's time goes. Cheap, and says nothing the page does not know. */
function mark(name: string): void {
  if (typeof performance !== "undefined" && typeof performance.mark === "function") performance.mark(name);
}

/** Rows asked for the first screen: more than a tall window shows (rows of
 * 36 px plus the grid's overscan). */
export const HEAD_ROWS = 100;

/** Resolves after the next frame (at once where there are no frames). */
function nextFrame(): Promise<void> {
  if (typeof requestAnimationFrame !== "function") return Promise.resolve();
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

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

  /** Until the whole list has arrived: the head's fleet size (the rows
   * hold only the first screen, see start). */
  #headTotal = $state<number | null>(null);

  /** True while only the first screen of rows is here (the whole list is
   * on its way; filters and sorts apply to it when it arrives). */
  get partial(): boolean {
    return this.#headTotal !== null;
  }

  /** How many runs there are in all. */
  get total(): number {
    return this.#headTotal ?? this.rows.size;
  }

  /** Subscribes first, then lists, so no event between the two is lost.
   * A big fleet comes in two steps: the first screen of the default order
   * (the engine sorts; a few dozen rows cross IPC), painted at once, then
   * the whole list for filters, search, sorts and scrolling. Events wait
   * until the whole list is here, then apply on top of it. */
  async start(): Promise<void> {
    try {
      await this.fill();
    } finally {
      this.#firstScreen();
    }
  }

  #firstScreen: () => void = () => {};
  /** Resolves once the first screen of rows is painted (or the load ended):
   * what else the window asks for at start waits for it, so the rows go
   * first. */
  readonly firstScreen: Promise<void> = new Promise((resolve) => (this.#firstScreen = resolve));

  private async fill(): Promise<void> {
    this.unsubscribe = await this.backend.subscribe((e) => this.onEvent(e));
    try {
      mark("fleet-list-start");
      let runs: RunView[];
      const head = this.backend.listRunsHead ? await this.backend.listRunsHead(HEAD_ROWS) : null;
      mark("fleet-head-received");
      if (head && head.rows.length >= head.total) {
        runs = head.rows;
      } else {
        if (head) {
          this.showHead(head);
          // Let the first screen paint before the whole list's parse.
          await nextFrame();
          this.#firstScreen();
        }
        runs = await this.backend.listRuns();
      }
      mark("fleet-list-received");
      let rows = new Map(runs.map((r) => [r.id, r] as const));
      for (const e of this.pending ?? []) rows = applyEvent(rows, e);
      this.#headTotal = null;
      this.load(rows);
      mark("fleet-loaded");
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      this.#headTotal = null;
      this.pending = null;
      this.ready = true;
    }
  }

  private showHead(head: RunsHead): void {
    this.#headTotal = head.total;
    this.rows = new Map(head.rows.map((r) => [r.id, r] as const));
    this.sorted = this.#sort.key === DEFAULT_SORT.key ? head.rows : sortRuns(head.rows, this.#sort);
    this.counts = head.counts;
    this.workspaces = workspacesOf(head.rows);
    this.ready = true;
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

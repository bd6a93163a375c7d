// The dashboard's view of the fleet: filled once from listRuns, then kept in
// step only by pushed events. It never polls and never changes a row on its
// own: an action's result arrives as an event like any other change.
// It also keeps what the user chose to look at (filter, sort, selected row),
// so leaving the dashboard for a run and coming back loses nothing.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, RunView, RunsHead } from "../types";
import { LiveCollection } from "../live.svelte";
import type { Counts, Filter, Sort, SortKey } from "./fleet";
import {
  DEFAULT_SORT,
  NO_FILTER,
  adjustCounts,
  comparator,
  countRuns,
  filterRuns,
  isFiltered,
  moveSelection,
  replaceSorted,
  runChange,
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
  /** A refused action (the banner); a failed load shows here too. */
  #error = $state<ApiError | null>(null);
  readonly #live: LiveCollection<number, RunView>;
  /** The counts the engine sent with the rows being loaded. */
  #shipped: Counts | null = null;

  constructor(private backend: Backend) {
    this.#live = new LiveCollection(backend, {
      key: (r) => r.id,
      load: () => this.#list(),
      change: runChange,
      loaded: (rows) => {
        this.sorted = sortRuns([...rows.values()], this.#sort);
        // The engine's counts when it sent the whole fleet with them;
        // otherwise the tally of the rows it sent.
        this.counts = this.#shipped ?? countRuns(rows.values());
        this.#shipped = null;
        this.workspaces = workspacesOf(rows.values());
      },
      changed: (prev, next) => {
        if (!next) return;
        this.sorted = replaceSorted(this.sorted, prev, next, comparator(this.#sort));
        this.counts = adjustCounts(this.counts, prev, next);
        this.workspaces = withWorkspace(this.workspaces, next.workspace);
      },
    });
  }

  /** Every run by id; replaced (never mutated) on each change. */
  get rows(): ReadonlyMap<number, RunView> {
    return this.#live.items;
  }
  get ready(): boolean {
    return this.#live.ready;
  }
  get error(): ApiError | null {
    return this.#error ?? this.#live.error;
  }
  set error(e: ApiError | null) {
    this.#error = e;
    if (e === null) this.#live.error = null;
  }

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
      await this.#live.start();
      mark("fleet-loaded");
    } finally {
      this.#headTotal = null;
      this.#firstScreen();
    }
  }

  #firstScreen: () => void = () => {};
  /** Resolves once the first screen of rows is painted (or the load ended):
   * what else the window asks for at start waits for it, so the rows go
   * first. */
  readonly firstScreen: Promise<void> = new Promise((resolve) => (this.#firstScreen = resolve));

  /** The whole list, after showing the first screen when the fleet is
   * bigger than it. */
  async #list(): Promise<RunView[]> {
    try {
      mark("fleet-list-start");
      const head = await this.backend.listRunsHead(HEAD_ROWS);
      mark("fleet-head-received");
      if (head.rows.length >= head.total) {
        mark("fleet-list-received");
        this.#shipped = head.counts;
        return head.rows;
      }
      this.showHead(head);
      // Let the first screen paint before the whole list's parse.
      await nextFrame();
      this.#firstScreen();
      const runs = await this.backend.listRuns();
      mark("fleet-list-received");
      return runs;
    } finally {
      this.#headTotal = null;
    }
  }

  private showHead(head: RunsHead): void {
    this.#headTotal = head.total;
    this.#live.replace(new Map(head.rows.map((r) => [r.id, r] as const)));
    // The engine's counts of the whole fleet, not of the rows here.
    this.counts = head.counts;
    this.#live.ready = true;
  }

  stop(): void {
    this.#live.stop();
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

// The dashboard's view of the fleet: filled once from listRuns, then kept in
// step only by pushed events. It never polls and never changes a row on its
// own: an action's result arrives as an event like any other change.
// It also keeps what the user chose to look at (filter, sort, selected row),
// so leaving the dashboard for a run and coming back loses nothing.
import type { Backend, LinkState } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, RunView, RunsHead } from "../types";
import { LiveCollection } from "../live.svelte";
import { hostTrouble } from "../hosts/link";
import type { Counts, Filter, FleetRun, RowKey, Sort, SortKey } from "./fleet";
import {
  parseRowKey,
  rowKey,
  sumCounts,
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

/** What a run's page and the inbox need of one engine's runs (this
 * machine's: the Fleet itself; a host's: {@link Fleet.forHost}). */
export interface RunFleet {
  readonly rows: ReadonlyMap<number, RunView>;
  /** The rows were read (a missing run is not there). */
  readonly ready: boolean;
  /** Why nothing can be sent to its engine now (a host that cannot be
   * reached); absent or null: actions go. */
  readonly trouble?: string | null;
  readonly busy: { has(id: number): boolean };
  approve(id: number): Promise<boolean>;
  reject(id: number, reason: string): Promise<boolean>;
  abort(id: number): Promise<boolean>;
}

/** A host's runs, followed over its own backend. */
interface HostSource {
  backend: Backend;
  live: LiveCollection<number, RunView>;
  /** Its rows as the fleet holds them (tagged with the host), by run id. */
  tagged: Map<number, FleetRun>;
}

export class Fleet {
  /** Row keys (this machine's run ids; `host/id`) with a call in flight. */
  busy = $state(new Set<RowKey>());

  filter = $state.raw<Filter>(NO_FILTER);
  /** The row the keyboard acts on (j/k move it). */
  selected = $state<RowKey | null>(null);

  // Kept up to date row by row as events arrive, not recomputed from all
  // rows: one pushed event costs a binary search and an array copy, not a
  // sort of 10,000 rows.
  /** Every row in the chosen order. */
  sorted = $state.raw<readonly FleetRun[]>([]);
  workspaces = $state.raw<readonly string[]>([]);

  /** The hosts whose runs are in the fleet, by name (empty: this machine's
   * engine only, exactly as before hosts). */
  hosts = $state.raw<readonly string[]>([]);
  /** Each host's link, as its backend reports it. */
  hostStates = $state.raw(new Map<string, LinkState>());
  /** This machine's counts, and each host's. */
  #localCounts = $state.raw<Counts>(countRuns([]));
  #hostCounts = $state.raw(new Map<string, Counts>());
  /** Every host's rows, by row key. */
  #hostRows = $state.raw(new Map<RowKey, FleetRun>());
  #sources = new Map<string, HostSource>();

  /** The counts of every engine's runs together. */
  #counts = $derived(this.hosts.length === 0 ? this.#localCounts : sumCounts([this.#localCounts, ...this.#hostCounts.values()]));
  get counts(): Counts {
    return this.#counts;
  }
  set counts(c: Counts) {
    this.#localCounts = c;
  }

  filtered = $derived(isFiltered(this.filter));
  /** The rows as shown: sorted, then filtered (filtering keeps the order,
   * so typing in the search box never re-sorts). */
  shown: readonly FleetRun[] = $derived(this.filtered ? filterRuns(this.sorted, this.filter) : this.sorted);

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
        const hostRows = this.#hostRows;
        this.sorted = sortRuns(hostRows.size === 0 ? [...rows.values()] : [...rows.values(), ...hostRows.values()], this.#sort);
        // The engine's counts when it sent the whole fleet with them;
        // otherwise the tally of the rows it sent.
        this.counts = this.#shipped ?? countRuns(rows.values());
        this.#shipped = null;
        this.workspaces = workspacesOf(hostRows.size === 0 ? rows.values() : [...rows.values(), ...hostRows.values()]);
      },
      changed: (prev, next) => {
        if (!next) return;
        this.sorted = replaceSorted(this.sorted, prev, next, comparator(this.#sort));
        this.#localCounts = adjustCounts(this.#localCounts, prev, next);
        this.workspaces = withWorkspace(this.workspaces, next.workspace);
      },
    });
  }

  /** This machine's runs by id; replaced (never mutated) on each change. */
  get rows(): ReadonlyMap<number, RunView> {
    return this.#live.items;
  }
  /** Every row of every engine by key (this machine's runs by id, as in
   * {@link rows}); replaced (never mutated) on each change. */
  get all(): ReadonlyMap<RowKey, FleetRun> {
    return this.#all;
  }
  #all: ReadonlyMap<RowKey, FleetRun> = $derived(this.#allRows());
  #allRows(): ReadonlyMap<RowKey, FleetRun> {
    return this.hosts.length === 0 ? this.#live.items : new Map<RowKey, FleetRun>([...this.#live.items, ...this.#hostRows]);
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
    this.sorted = sortRuns([...this.all.values()], s);
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
    return (this.#headTotal ?? this.#live.items.size) + this.#hostRows.size;
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
    for (const s of this.#sources.values()) s.live.stop();
    for (const un of this.#hostUnwatch.values()) un();
    this.#hostUnwatch.clear();
  }

  /** Adds a host's runs to the fleet: followed over its backend (loaded,
   * then kept by its pushed events; read again after each reconnection). */
  addHost(name: string, backend: Backend): Promise<void> {
    if (this.#sources.has(name)) return Promise.resolve();
    const source: HostSource = {
      backend,
      tagged: new Map(),
      live: new LiveCollection<number, RunView>(backend, {
        key: (r) => r.id,
        load: () => backend.listRuns(),
        change: runChange,
        loaded: (rows) => this.#hostLoaded(name, rows),
        changed: (_prev, next) => {
          // A run gone from a reload was dropped by the load itself.
          if (next) this.#hostChanged(name, next);
        },
      }),
    };
    this.#sources.set(name, source);
    this.hosts = [...this.hosts, name].sort();
    const link = backend.link;
    if (link) {
      this.hostStates = new Map(this.hostStates).set(name, link.state);
      this.#hostUnwatch.set(
        name,
        link.onState((s) => (this.hostStates = new Map(this.hostStates).set(name, s))),
      );
    }
    return source.live.start();
  }

  #hostUnwatch = new Map<string, () => void>();

  /** Drops a host that was removed: its rows, counts and link, its rows'
   * calls in flight and selection, and a filter on it. Nothing more is
   * read from it. */
  removeHost(name: string): void {
    const source = this.#sources.get(name);
    if (!source) return;
    source.live.stop();
    this.#hostUnwatch.get(name)?.();
    this.#hostUnwatch.delete(name);
    this.#sources.delete(name);
    const mine = (key: RowKey) => parseRowKey(key).host === name;
    this.#hostRows = new Map([...this.#hostRows].filter(([key]) => !mine(key)));
    const counts = new Map(this.#hostCounts);
    counts.delete(name);
    this.#hostCounts = counts;
    const states = new Map(this.hostStates);
    states.delete(name);
    this.hostStates = states;
    this.hosts = this.hosts.filter((h) => h !== name);
    this.sorted = this.sorted.filter((r) => r.host !== name);
    this.workspaces = workspacesOf(this.all.values());
    if ([...this.busy].some(mine)) this.busy = new Set([...this.busy].filter((k) => !mine(k)));
    if (this.selected !== null && mine(this.selected)) this.selected = null;
    if (this.filter.host === name) this.setFilter({ host: "" });
    // A workspace only that host had is no longer one to filter on.
    if (this.filter.workspace !== "" && !this.workspaces.includes(this.filter.workspace)) this.setFilter({ workspace: "" });
  }

  /** Tries to reach a host now instead of waiting for its next retry. */
  retryHost(name: string): void {
    this.#sources.get(name)?.backend.link?.retryNow();
  }

  /** The backend a row's engine answers on. */
  backendOf(r: FleetRun): Backend {
    return r.host === undefined ? this.backend : (this.#sources.get(r.host)?.backend ?? this.backend);
  }

  /** Why a row's actions cannot be sent now (its host is not reachable),
   * or null. */
  blocked(r: FleetRun): string | null {
    if (r.host === undefined) return null;
    const s = this.hostStates.get(r.host);
    return s ? hostTrouble(r.host, s) : null;
  }

  /** One host's runs as a run's page and the inbox use them. */
  forHost(name: string): RunFleet {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const fleet = this;
    const key = (id: number) => `${name}/${id}`;
    return {
      get rows() {
        return fleet.#sources.get(name)?.live.items ?? new Map<number, RunView>();
      },
      get ready() {
        return fleet.#sources.get(name)?.live.ready ?? false;
      },
      get trouble() {
        const s = fleet.hostStates.get(name);
        return s ? hostTrouble(name, s) : null;
      },
      busy: { has: (id) => fleet.busy.has(key(id)) },
      approve: (id) => fleet.approve(key(id)),
      reject: (id, reason) => fleet.reject(key(id), reason),
      abort: (id) => fleet.abort(key(id)),
    };
  }

  #hostLoaded(name: string, rows: ReadonlyMap<number, RunView>): void {
    const source = this.#sources.get(name);
    if (!source) return;
    source.tagged = new Map([...rows.values()].map((r) => [r.id, { ...r, host: name }] as const));
    const all = new Map<RowKey, FleetRun>();
    for (const s of this.#sources.values()) for (const r of s.tagged.values()) all.set(rowKey(r), r);
    this.#hostRows = all;
    this.#hostCounts = new Map(this.#hostCounts).set(name, countRuns(source.tagged.values()));
    this.sorted = sortRuns([...this.sorted.filter((r) => r.host !== name), ...source.tagged.values()], this.#sort);
    this.workspaces = workspacesOf(this.all.values());
  }

  #hostChanged(name: string, next: RunView): void {
    const source = this.#sources.get(name);
    if (!source) return;
    const prev = source.tagged.get(next.id);
    const row: FleetRun = { ...next, host: name };
    source.tagged.set(next.id, row);
    this.#hostRows = new Map(this.#hostRows).set(rowKey(row), row);
    this.sorted = replaceSorted(this.sorted, prev, row, comparator(this.#sort));
    this.#hostCounts = new Map(this.#hostCounts).set(name, adjustCounts(this.#hostCounts.get(name) ?? countRuns([]), prev, row));
    this.workspaces = withWorkspace(this.workspaces, row.workspace);
  }

  /** The engine a row key's run lives on, and its id there. */
  #target(key: RowKey): { backend: Backend; id: number } {
    const { host, id } = parseRowKey(key);
    if (host === null) return { backend: this.backend, id };
    const source = this.#sources.get(host);
    if (!source) throw { code: "not_found", message: `${host} is not one of this machine's hosts: \`overseer hosts list\` shows them` } satisfies ApiError;
    return { backend: source.backend, id };
  }

  approve(key: RowKey) {
    return this.act(key, () => {
      const { backend, id } = this.#target(key);
      return backend.approveRun(id);
    });
  }

  reject(key: RowKey, reason: string) {
    return this.act(key, () => {
      const { backend, id } = this.#target(key);
      return backend.rejectRun(id, reason);
    });
  }

  abort(key: RowKey) {
    return this.act(key, () => {
      const { backend, id } = this.#target(key);
      return backend.abortRun(id);
    });
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
  move(delta: number): RowKey | null {
    this.selected = moveSelection(this.shown, this.selected, delta);
    return this.selected;
  }

  select(id: RowKey | null): void {
    this.selected = id;
  }

  dismissError(): void {
    this.error = null;
  }

  /** True when the call succeeded. The row itself changes by event only. */
  private async act(id: RowKey, call: () => Promise<unknown>): Promise<boolean> {
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

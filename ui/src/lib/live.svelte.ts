// The one way the window keeps engine data live. Every store follows the
// engine the same way: subscribe first, then load, so nothing pushed between
// the two is lost; events that arrive before the load has finished are held
// and applied after it, in order; nothing is polled; stopping unsubscribes,
// also when it comes while the subscription is still being made. When the
// line to the engine can break (a browser's), events are missed while it is
// down: on each reconnection the link asks every store to read the engine's
// truth again, holding the new connection's events the same way.
//
// Two shapes sit on that one lifecycle ({@link Follow}):
// - {@link LiveCollection}: items by key, loaded once, then changed item by
//   item as events say (the fleet's runs, the inbox's gates, messages, a
//   run's activity);
// - {@link LiveValue}: one answer, asked again when an event touches it,
//   the latest answer winning (a task, a diff, the workspaces, a story).
import type { Backend } from "./backend/backend";
import { toApiError } from "./backend/errors";
import type { ApiError, EngineEvent } from "./types";

type Subscribe = Pick<Backend, "subscribe" | "link">;

/** Subscribe-then-load, with the events of the load's time held back. */
export class Follow {
  #unsubscribe: (() => void) | null = null;
  #unresync: (() => void) | null = null;
  #held: EngineEvent[] | null = [];
  /** Loads running (a resync can come during the first load): events are
   * held until the last one ends. */
  #loading = 0;
  /** Which load started last, and whether it succeeded: it decides whether
   * the held events apply (an older one is overtaken). */
  #newest = 0;
  #newestOk = false;
  #stopped = false;

  /** `onEvent` sees each event once the load is done (held ones first, in
   * the order they came). `catchingUp` is told when a load starts (true)
   * and when the events held during it have been applied (false). */
  constructor(
    private backend: Subscribe,
    private onEvent: (e: EngineEvent) => void | Promise<void>,
    private catchingUp?: (on: boolean) => void,
  ) {}

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Subscribes, then runs `load`. When it succeeds (resolves true), the
   * events held meanwhile are applied; when it fails they are dropped (the
   * next load reads them from the engine). After each reconnection of the
   * backend's link, `reload` (default: `load`) runs the same way. */
  async start(load: () => Promise<boolean>, reload: () => Promise<boolean> = load): Promise<void> {
    const unsubscribe = await this.backend.subscribe((e) => this.#event(e));
    if (this.#stopped) {
      unsubscribe();
      return;
    }
    this.#unsubscribe = unsubscribe;
    this.#unresync = this.backend.link?.onResync(() => this.#catchUp(reload)) ?? null;
    await this.#catchUp(load);
  }

  /** Subscribes without a load of its own: events apply as they come (and
   * `reload`, when given, runs after each reconnection). */
  async listen(reload?: () => Promise<boolean>): Promise<void> {
    return this.start(async () => true, reload ?? (async () => true));
  }

  stop(): void {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#unresync?.();
    this.#unresync = null;
  }

  /** Runs a load with events held; applies them after the last load ends,
   * when it succeeded. */
  async #catchUp(load: () => Promise<boolean>): Promise<boolean> {
    if (this.#stopped) return false;
    this.#held ??= [];
    this.#loading += 1;
    const mine = ++this.#newest;
    if (this.#loading === 1) this.catchingUp?.(true);
    let ok = false;
    try {
      ok = await load();
    } finally {
      if (mine === this.#newest) this.#newestOk = ok;
      this.#loading -= 1;
      if (this.#loading === 0) {
        const held = this.#held ?? [];
        this.#held = null;
        try {
          if (this.#newestOk) for (const e of held) if (!this.#stopped) await this.onEvent(e);
        } finally {
          this.catchingUp?.(false);
        }
      }
    }
    return ok;
  }

  /** Applied at once (synchronously, when `onEvent` is), or held. */
  #event(e: EngineEvent): void {
    if (this.#stopped) return;
    if (this.#held) {
      this.#held.push(e);
      return;
    }
    void this.onEvent(e);
  }
}

/** What one event does to a collection. */
export interface Change<K, V> {
  /** Items added or replaced, by their key. */
  put?: readonly V[];
  /** Keys removed. */
  remove?: readonly K[];
}

export interface CollectionSpec<K, V> {
  key: (v: V) => K;
  /** The whole collection, as the engine has it now. */
  load: () => Promise<V[]>;
  /** What an event does (null: nothing). May ask the engine first: an
   * event may carry only an id. */
  change: (e: EngineEvent) => Change<K, V> | null | Promise<Change<K, V> | null>;
  /** Keeps {@link LiveCollection.list} in this order (a total order). */
  order?: (a: V, b: V) => number;
  /** Told after a load replaced every item. */
  loaded?: (items: ReadonlyMap<K, V>) => void;
  /** Told after one item changed (`prev` absent: new; `next` absent: removed,
   * also when a reload after a reconnection no longer finds it). */
  changed?: (prev: V | undefined, next: V | undefined) => void;
  /** Told when a load starts (true) and when the events held during it have
   * been applied (false). */
  catchingUp?: (on: boolean) => void;
}

/** Items by key, loaded once and then kept in step by pushed events only. */
export class LiveCollection<K, V> {
  /** Every item by key; replaced (never mutated) on each change. */
  items = $state.raw(new Map<K, V>());
  /** The items in the spec's order (empty without one). */
  list = $state.raw<readonly V[]>([]);
  ready = $state(false);
  error = $state<ApiError | null>(null);

  #follow: Follow;
  /** Counts loads: only the newest one's answer is taken. */
  #loads = 0;

  constructor(
    backend: Subscribe,
    private spec: CollectionSpec<K, V>,
  ) {
    this.#follow = new Follow(backend, (e) => this.#apply(e), spec.catchingUp);
  }

  get stopped(): boolean {
    return this.#follow.stopped;
  }

  /** Subscribes, then loads; after each reconnection, loads again. */
  async start(): Promise<void> {
    await this.#follow.start(
      () => this.load(),
      () => this.#reload(),
    );
  }

  /** After a reconnection: the engine's list replaces every item (events
   * were missed, so what is here may be stale: a gate decided meanwhile
   * must not stay). Events are held meanwhile, so nothing newer is lost. */
  async #reload(): Promise<boolean> {
    const mine = ++this.#loads;
    try {
      const all = await this.spec.load();
      if (this.stopped || mine !== this.#loads) return false;
      const next = new Map(all.map((v) => [this.spec.key(v), v] as const));
      const gone = [...this.items].filter(([k]) => !next.has(k));
      this.replace(next);
      for (const [, prev] of gone) this.spec.changed?.(prev, undefined);
      this.error = null;
      return true;
    } catch (e) {
      if (mine === this.#loads) this.error = toApiError(e);
      return false;
    }
  }

  /** Loads every item again (after an error); items pushed meanwhile stay.
   * True when the load succeeded. */
  async load(): Promise<boolean> {
    const mine = ++this.#loads;
    try {
      const all = await this.spec.load();
      if (this.stopped || mine !== this.#loads) return false;
      const next = new Map(all.map((v) => [this.spec.key(v), v] as const));
      // What events put in before a reload finished is newer than the list.
      for (const [k, v] of this.items) if (!next.has(k)) next.set(k, v);
      this.replace(next);
      this.error = null;
      return true;
    } catch (e) {
      if (mine === this.#loads) this.error = toApiError(e);
      return false;
    } finally {
      this.ready = true;
    }
  }

  /** Sets every item at once (a first screen shown before the whole list). */
  replace(items: Map<K, V>): void {
    this.items = items;
    const order = this.spec.order;
    if (order) this.list = [...items.values()].sort(order);
    this.spec.loaded?.(items);
  }

  /** Puts items in as the engine answered them (a call's result that pushes
   * no event of its own). */
  put(...values: V[]): void {
    this.#change({ put: values });
  }

  /** Takes items out as a call's answer says (one that pushes no event of
   * its own saying so). */
  remove(...keys: K[]): void {
    this.#change({ remove: keys });
  }

  stop(): void {
    this.#follow.stop();
  }

  /** Synchronous when the spec's `change` is: an event shows at once. */
  #apply(e: EngineEvent): void | Promise<void> {
    const fail = (err: unknown) => {
      this.error = toApiError(err);
    };
    try {
      const c = this.spec.change(e);
      if (c instanceof Promise) {
        return c.then((c) => {
          if (c && !this.stopped) this.#change(c);
        }, fail);
      }
      if (c) this.#change(c);
    } catch (err) {
      fail(err);
    }
  }

  #change(c: Change<K, V>): void {
    const removed = (c.remove ?? []).filter((k) => this.items.has(k));
    const put = c.put ?? [];
    if (removed.length === 0 && put.length === 0) return;
    const items = new Map(this.items);
    const order = this.spec.order;
    let list = this.list;
    for (const k of removed) {
      const prev = items.get(k);
      items.delete(k);
      if (order && prev !== undefined) list = list.filter((v) => v !== prev);
      this.spec.changed?.(prev, undefined);
    }
    for (const v of put) {
      const k = this.spec.key(v);
      const prev = items.get(k);
      items.set(k, v);
      if (order) list = placed(list, prev, v, order);
      this.spec.changed?.(prev, v);
    }
    this.items = items;
    if (order) this.list = list;
  }
}

/** `list` with `prev` (if there) taken out and `next` in its place by
 * `order`: an append when it sorts last (a new message, a new entry). */
function placed<V>(list: readonly V[], prev: V | undefined, next: V, order: (a: V, b: V) => number): readonly V[] {
  const out = prev === undefined ? list.slice() : list.filter((v) => v !== prev);
  const last = out[out.length - 1];
  if (last === undefined || order(last, next) < 0) {
    out.push(next);
    return out;
  }
  let lo = 0;
  let hi = out.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (order(out[mid]!, next) < 0) lo = mid + 1;
    else hi = mid;
  }
  out.splice(lo, 0, next);
  return out;
}

export interface ValueSpec<T> {
  /** Asks the engine. */
  fetch: () => Promise<T>;
  /** Whether an event may change the answer. */
  touches: (e: EngineEvent) => boolean;
  /** Ask once per burst of events, this long after the last one. */
  debounceMs?: number;
  /** One question at a time: an event during a fetch asks once more after
   * it (for answers that are costly to build). Otherwise each event asks at
   * once and only the latest answer counts. */
  oneAtATime?: boolean;
  /** Told each answer that counts, before it is shown. */
  answered?: (value: T) => void;
}

/** One answer of the engine, asked again whenever an event touches it. */
export class LiveValue<T> {
  value = $state.raw<T | null>(null);
  error = $state<ApiError | null>(null);
  loading = $state(false);

  #follow: Follow;
  #generation = 0;
  #inFlight = false;
  #again = false;
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    backend: Subscribe,
    private spec: ValueSpec<T>,
  ) {
    this.#follow = new Follow(backend, (e) => {
      if (spec.touches(e)) this.#touched();
    });
  }

  /** Subscribes, then asks; after each reconnection, asks again. */
  async start(): Promise<void> {
    await this.#follow.start(() => this.#ask());
  }

  /** Subscribes only (the first question is asked elsewhere); after each
   * reconnection, asks again. */
  async listen(): Promise<void> {
    await this.#follow.listen(() => this.#ask());
  }

  async #ask(): Promise<boolean> {
    await this.refetch();
    return true;
  }

  stop(): void {
    this.#follow.stop();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Asks the engine now; an older answer arriving late never replaces a
   * newer one. */
  async refetch(): Promise<void> {
    if (this.spec.oneAtATime && this.#inFlight) {
      this.#again = true;
      return;
    }
    this.#inFlight = true;
    const mine = ++this.#generation;
    this.loading = true;
    try {
      const v = await this.spec.fetch();
      if (mine !== this.#generation || this.#follow.stopped) return;
      this.spec.answered?.(v);
      this.value = v;
      this.error = null;
    } catch (e) {
      if (mine === this.#generation) this.error = toApiError(e);
    } finally {
      this.#inFlight = false;
      if (mine === this.#generation) this.loading = false;
      if (this.#again && !this.#follow.stopped) {
        this.#again = false;
        void this.refetch();
      }
    }
  }

  #touched(): void {
    const wait = this.spec.debounceMs;
    if (wait === undefined) {
      void this.refetch();
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.refetch();
    }, wait);
  }
}

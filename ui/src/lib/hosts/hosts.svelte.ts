// The hosts this machine knows, each with its link and a Backend to its
// engine. Listed once (`host_links`), then kept up to date by the app's
// reports of each link's change only (nothing is polled): the link of a
// host reported first is the one its backend follows.
import type { Backend, LinkState } from "../backend/backend";
import { toApiError } from "../backend/errors";
import type { ApiError, EngineEvent } from "../types";
import { HostLink, hostBackend, type HostTransport } from "./link";
import type { HostLinkView } from "./types";

export type HostBackend = Backend & { link: HostLink };

export class Hosts {
  /** Every host by name, as the app last reported it. */
  list = $state.raw<readonly HostLinkView[]>([]);
  /** Each host's link as its stores see it (with `resyncing`). */
  states = $state.raw(new Map<string, LinkState>());
  ready = $state(false);
  error = $state<ApiError | null>(null);

  #backends = new Map<string, HostBackend>();
  #listeners = new Map<string, Set<(e: EngineEvent) => void>>();
  #added = new Set<(name: string, backend: HostBackend) => void>();
  #stops: (() => void)[] = [];
  #stopped = false;

  constructor(private transport: HostTransport) {}

  /** Listens first (every host's events, each link's changes), then lists:
   * a change reported while listing applies after the list. */
  async start(): Promise<void> {
    const unEvent = await this.transport.onEvent((host, e) => {
      for (const on of [...(this.#listeners.get(host) ?? [])]) on(e);
    });
    let held: HostLinkView[] | null = [];
    const unLink = await this.transport.onLink((v) => (held ? held.push(v) : this.#report(v)));
    this.#stops.push(unEvent, unLink);
    if (this.#stopped) return this.stop();
    try {
      for (const v of await this.transport.links()) this.#report(v);
      this.error = null;
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      const later = held ?? [];
      held = null;
      for (const v of later) this.#report(v);
      this.ready = true;
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const s of this.#stops) s();
    this.#stops = [];
  }

  /** The backend of a host's engine (undefined: no such host). */
  backend(name: string): HostBackend | undefined {
    return this.#backends.get(name);
  }

  /** Told of every host, those known now included; returns the unsubscribe. */
  onAdded(on: (name: string, backend: HostBackend) => void): () => void {
    this.#added.add(on);
    for (const [name, b] of this.#backends) on(name, b);
    return () => this.#added.delete(on);
  }

  /** Asks the app to reach a host now. */
  retry(name: string): void {
    this.#backends.get(name)?.link.retryNow();
  }

  #report(v: HostLinkView): void {
    const at = this.list.findIndex((h) => h.name === v.name);
    this.list = at < 0 ? [...this.list, v].sort((a, b) => (a.name < b.name ? -1 : 1)) : this.list.map((h, i) => (i === at ? v : h));
    const known = this.#backends.get(v.name);
    if (known) {
      known.link.report(v.state);
      return;
    }
    const link = new HostLink(v.name, v.state, (h) => this.transport.retry(h));
    const backend = hostBackend(link, this.transport, async (on) => {
      let set = this.#listeners.get(v.name);
      if (!set) this.#listeners.set(v.name, (set = new Set()));
      const mine = (e: EngineEvent) => on(e);
      set.add(mine);
      return () => set.delete(mine);
    });
    this.#backends.set(v.name, backend);
    this.states = new Map(this.states).set(v.name, link.state);
    this.#stops.push(link.onState((s) => (this.states = new Map(this.states).set(v.name, s))));
    for (const on of [...this.#added]) on(v.name, backend);
  }
}

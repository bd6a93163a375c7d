// The hosts this machine knows, each with its link and a Backend to its
// engine. Listed once (`host_links`), then kept up to date by the app's
// reports of each link's change only (nothing is polled): the link of a
// host reported first is the one its backend follows. A host reported
// removed (`host-removed`, from the window or a terminal) leaves: its link
// closes and whoever follows it (`onRemoved`) drops what it holds of it.
// Adding, upgrading and removing a host are the app's to do; the steps it
// tells (`host-setup`) are kept per host as they come, for Settings.
import type { Backend, LinkState } from "../backend/backend";
import { toApiError } from "../backend/errors";
import type { ApiError, EngineEvent } from "../types";
import { HostLink, hostBackend, type HostTransport } from "./link";
import type { HostLinkView, HostSetupStep } from "./types";

export type HostBackend = Backend & { link: HostLink };

/** What the window asked of a host's engine setup. */
export type SetupAction = "add" | "upgrade" | "remove";

/** The steps told for one host, as they came. */
export interface HostSetup {
  host: string;
  /** What the window asked; null: the steps come from elsewhere (`overseer
   * hosts ...` in a terminal), so the window does not know when it ends. */
  action: SetupAction | null;
  lines: readonly string[];
  /** The window's call is under way. */
  running: boolean;
  /** The app's refusal, as it returned it. */
  error: ApiError | null;
  /** No more steps belong here: the host was removed or has just joined,
   * so a later step starts a new log. */
  ended: boolean;
}

export class Hosts {
  /** Every host by name, as the app last reported it. */
  list = $state.raw<readonly HostLinkView[]>([]);
  /** Each host's link as its stores see it (with `resyncing`). */
  states = $state.raw(new Map<string, LinkState>());
  ready = $state(false);
  error = $state<ApiError | null>(null);
  /** Each host's last setup steps (add, upgrade or remove), by host name. */
  setups = $state.raw(new Map<string, HostSetup>());

  #backends = new Map<string, HostBackend>();
  #listeners = new Map<string, Set<(e: EngineEvent) => void>>();
  #added = new Set<(name: string, backend: HostBackend) => void>();
  #removed = new Set<(name: string) => void>();
  /** What to undo when a host leaves (its link's watcher). */
  #hostStops = new Map<string, () => void>();
  /** Hosts removed and not set up again since. */
  #gone = new Set<string>();
  #stops: (() => void)[] = [];
  #stopped = false;

  constructor(private transport: HostTransport) {}

  /** Listens first (every host's events, each link's changes), then lists:
   * a change reported while listing applies after the list. */
  async start(): Promise<void> {
    const unEvent = await this.transport.onEvent((host, e) => {
      for (const on of [...(this.#listeners.get(host) ?? [])]) on(e);
    });
    // Reports that come while the list is on its way apply after it, in
    // the order they came.
    let held: (() => void)[] | null = [];
    const hold = (f: () => void) => (held ? held.push(f) : f());
    const unLink = await this.transport.onLink((v) => hold(() => this.#report(v)));
    const unRemoved = await this.transport.onRemoved((host) => hold(() => this.#drop(host)));
    const unSetup = await this.transport.onSetup((step) => this.#step(step));
    this.#stops.push(unEvent, unLink, unRemoved, unSetup);
    if (this.#stopped) return this.stop();
    try {
      for (const v of await this.transport.links()) this.#report(v);
      this.error = null;
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      const later = held ?? [];
      held = null;
      for (const f of later) f();
      this.ready = true;
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const s of this.#stops) s();
    this.#stops = [];
    for (const s of this.#hostStops.values()) s();
    this.#hostStops.clear();
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

  /** Told of every host that leaves (removed here or from a terminal);
   * returns the unsubscribe. */
  onRemoved(on: (name: string) => void): () => void {
    this.#removed.add(on);
    return () => this.#removed.delete(on);
  }

  /** True while the window's add, upgrade or remove of `name` runs. */
  busy(name: string): boolean {
    return this.setups.get(name)?.running ?? false;
  }

  /** Adds host `name` at `url` (with `sshConfig` instead of the user's
   * ~/.ssh/config when given; the app checks the machine, installs, starts
   * its engine and pins its key); its steps are told as they happen. The
   * app's refusal, or null once the host is added (it is then listed with
   * its link, as the app reported it). */
  add(name: string, url: string, sshConfig: string | null = null): Promise<ApiError | null> {
    return this.#setup(name, "add", async () => {
      const view = await this.transport.addHost(name, url, sshConfig);
      // Its link's own reports may have come first (and be newer).
      if (!this.#backends.has(view.name)) this.#report(view);
    });
  }

  /** Installs this version on host `name` and restarts its engine there. */
  upgrade(name: string): Promise<ApiError | null> {
    // The restarted engine's link comes as the link's own reports.
    return this.#setup(name, "upgrade", async () => {
      await this.transport.upgradeHost(name);
    });
  }

  /** Stops host `name`'s engine and forgets the host (its files stay there). */
  remove(name: string): Promise<ApiError | null> {
    return this.#setup(name, "remove", async () => {
      await this.transport.removeHost(name);
      // The app forgot it: as its `host-removed` says (whichever comes first).
      this.#drop(name);
    });
  }

  /** Forgets a finished setup's steps. */
  dismissSetup(name: string): void {
    const s = this.setups.get(name);
    if (!s || s.running) return;
    const next = new Map(this.setups);
    next.delete(name);
    this.setups = next;
  }

  async #setup(host: string, action: SetupAction, work: () => Promise<void>): Promise<ApiError | null> {
    if (this.busy(host)) return { code: "conflict", message: `${host} is being set up already: wait for its steps to finish.` };
    this.#gone.delete(host);
    this.#putSetup({ host, action, lines: [], running: true, error: null, ended: false });
    try {
      await work();
      this.#patchSetup(host, { running: false });
      return null;
    } catch (e) {
      const error = toApiError(e);
      this.#patchSetup(host, { running: false, error });
      return error;
    }
  }

  #step({ host, line }: HostSetupStep): void {
    this.#gone.delete(host);
    const s = this.setups.get(host);
    // The window cannot tell where a terminal's steps end, except when the
    // host leaves or joins: steps go on the host's log until then.
    if (s && (s.running || !s.ended)) this.#patchSetup(host, { lines: [...s.lines, line] });
    else this.#putSetup({ host, action: null, lines: [line], running: false, error: null, ended: false });
  }

  /** A host left or joined: its log (unless the window's call still runs)
   * takes no more steps. */
  #endSetup(host: string): void {
    const s = this.setups.get(host);
    if (s && !s.running && !s.ended) this.#putSetup({ ...s, ended: true });
  }

  #putSetup(s: HostSetup): void {
    this.setups = new Map(this.setups).set(s.host, s);
  }

  #patchSetup(host: string, patch: Partial<HostSetup>): void {
    const s = this.setups.get(host);
    if (s) this.#putSetup({ ...s, ...patch });
  }

  /** Host `name` was forgotten: it leaves the list, its link closes, and
   * every follower drops what it holds of it. */
  #drop(name: string): void {
    const backend = this.#backends.get(name);
    if (!backend) return;
    this.#gone.add(name);
    this.#backends.delete(name);
    this.#listeners.delete(name);
    this.#hostStops.get(name)?.();
    this.#hostStops.delete(name);
    backend.link.close();
    this.list = this.list.filter((h) => h.name !== name);
    this.#endSetup(name);
    const states = new Map(this.states);
    states.delete(name);
    this.states = states;
    for (const on of [...this.#removed]) on(name);
  }

  /** Asks the app to reach a host now. */
  retry(name: string): void {
    this.#backends.get(name)?.link.retryNow();
  }

  #report(v: HostLinkView): void {
    // A removed host's link may still report as it closes: the host stays
    // gone until it is set up again (from here: its steps come first) or a
    // new link to it starts (from a terminal: its first report is
    // "connecting").
    if (this.#gone.has(v.name)) {
      if (v.state.status !== "connecting") return;
      this.#gone.delete(v.name);
    }
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
    this.#endSetup(v.name);
    this.states = new Map(this.states).set(v.name, link.state);
    this.#hostStops.set(
      v.name,
      link.onState((s) => (this.states = new Map(this.states).set(v.name, s))),
    );
    for (const on of [...this.#added]) on(v.name, backend);
  }
}

// A host's engine as a Backend: the same generated operations and events as
// this machine's (../generated/client.ts), carried by the app (one SSH link
// per host, kept by the Rust side). Only the app's transport differs:
// - a call is `host_call {host, command, args}`, with exactly the args the
//   window passes to that command locally;
// - events come on one channel for every host (`overseer://host-event`),
//   handed here to the host they name;
// - the link's state comes as `overseer://host-link` on each change. A live
//   link whose `resync` grew reconnected: events were missed, so every store
//   reads that host again (`onResync`) before it is live again.
// While a host is not live, a call that decides or changes something is
// refused here with why (never queued): the engine there cannot be reached,
// and the app would refuse it too.
import type { Backend, Link, LinkState } from "../backend/backend";
import { toApiError } from "../backend/errors";
import { events, operations, WRITES } from "../generated/client";
import type { ApiError, EngineEvent, JsonValue } from "../types";
import type { HostLinkState, HostLinkView, HostSetupStep } from "./types";

/** What the window needs of the app to reach its hosts (the app's Tauri
 * commands and events; tests and the dev server give their own). */
export interface HostTransport {
  /** Every host this machine knows, with its link (`host_links`). */
  links(): Promise<HostLinkView[]>;
  /** One operation on a host's engine (`host_call`). */
  call(host: string, command: string, args: Record<string, unknown>): Promise<unknown>;
  /** Tries to reach a host now (`host_retry`). */
  retry(host: string): Promise<void>;
  /** Every host's events (`overseer://host-event`). */
  onEvent(on: (host: string, event: EngineEvent) => void): Promise<() => void>;
  /** Each change of a host's link (`overseer://host-link`). */
  onLink(on: (view: HostLinkView) => void): Promise<() => void>;
  /** Adds a host (`host_add`): checks the machine, installs, starts its
   * engine, pins its key; each step comes on `onSetup`. Its new link. */
  addHost(name: string, url: string, sshConfig: string | null): Promise<HostLinkView>;
  /** Installs this version on a host and restarts its engine (`host_upgrade`). */
  upgradeHost(host: string): Promise<HostLinkView>;
  /** Stops a host's engine and forgets the host (`host_remove`). */
  removeHost(host: string): Promise<void>;
  /** Each step of adding, upgrading or removing a host, from the window or
   * from a terminal (`overseer://host-setup`). */
  onSetup(on: (step: HostSetupStep) => void): Promise<() => void>;
  /** A host was forgotten: its link is closed (`overseer://host-removed`). */
  onRemoved(on: (host: string) => void): Promise<() => void>;
}

/** The app's hosts as its commands and events carry them (the window's
 * Tauri backend; a mock app in tests). */
export function backendHosts(b: Backend): HostTransport {
  return {
    links: () => b.hostLinks(),
    call: (host, command, args) => b.hostCall(host, command, args as JsonValue),
    retry: async (host) => {
      await b.hostRetry(host);
    },
    onEvent: (on) => b.onHostEvent((e) => on(e.host, e.event)),
    onLink: (on) => b.onHostLink(on),
    addHost: (name, url, sshConfig) => b.hostAdd(name, url, sshConfig),
    upgradeHost: (host) => b.hostUpgrade(host),
    removeHost: async (host) => {
      await b.hostRemove(host);
    },
    onSetup: (on) => b.onHostSetup(on),
    onRemoved: (on) => b.onHostRemoved((r) => on(r.host)),
  };
}

/** "14:02" (with seconds when `seconds`). */
export function clockOf(ms: number, seconds = false): string {
  return new Date(ms).toTimeString().slice(0, seconds ? 8 : 5);
}

/** What a host's rows and Settings say of its link; null when live. */
export function hostTrouble(host: string, state: LinkState): string | null {
  switch (state.status) {
    case "live":
      return null;
    case "connecting":
      return `${host}: connecting`;
    case "resyncing":
      return `${host}: reconnected, reading its runs again`;
    case "down":
      return `${host} unreachable since ${clockOf(state.since)}, retrying`;
    case "unpaired":
      return `${host}: ${state.reason}`;
  }
}

/** Why a decision to a host is refused in this state (null: it goes). */
export function hostRefusal(host: string, state: LinkState): ApiError | null {
  switch (state.status) {
    case "live":
      return null;
    case "connecting":
      return { code: "engine_unavailable", message: `Still connecting to ${host}: nothing was sent. Try again once it is connected.` };
    case "resyncing":
      return {
        code: "engine_unavailable",
        message: `Reconnected to ${host}; its runs are being read again: nothing was sent. Look again once it has caught up (what you saw may have changed).`,
      };
    case "down":
      return {
        code: "engine_unavailable",
        message: `${host} unreachable since ${clockOf(state.since, true)} (${state.reason}): nothing was sent. Decide again once it is reachable (Settings → Hosts: Retry now).`,
      };
    case "unpaired":
      return { code: "unauthorized", message: state.reason };
  }
}

/** The window's link state for a host's (as the app reports it). */
export function linkStateOf(s: HostLinkState): LinkState {
  switch (s.status) {
    case "connecting":
      return { status: "connecting" };
    case "live":
      return { status: "live", engine: s.engine };
    case "down":
      return { status: "down", since: s.since_ms, retryAt: s.retry_at_ms, reason: s.reason };
  }
}

/** A host's link as the window's stores see it: they resync on it exactly
 * as on a browser's. Fed the app's reports by {@link HostLink.report}. */
export class HostLink implements Link {
  #state: LinkState;
  #watchers = new Set<(s: LinkState) => void>();
  #resyncers = new Set<() => Promise<unknown>>();
  /** The `resync` of the last live report (null: never live yet). */
  #resync: number | null;
  /** Counts resyncs: an older one finishing does not make a newer one live. */
  #generation = 0;

  constructor(
    readonly host: string,
    first: HostLinkState,
    private retryHost: (host: string) => Promise<void>,
  ) {
    this.#state = linkStateOf(first);
    this.#resync = first.status === "live" ? first.resync : null;
  }

  get state(): LinkState {
    return this.#state;
  }

  /** Set once the host was removed: nothing is sent to it any more. */
  get closed(): boolean {
    return this.#closed;
  }
  #closed = false;

  /** The host was forgotten: its stores stop following it and no call
   * goes to it. */
  close(): void {
    this.#closed = true;
    this.#generation += 1;
    this.#watchers.clear();
    this.#resyncers.clear();
  }

  onState(on: (state: LinkState) => void): () => void {
    this.#watchers.add(on);
    return () => this.#watchers.delete(on);
  }

  onResync(on: () => Promise<unknown>): () => void {
    this.#resyncers.add(on);
    return () => this.#resyncers.delete(on);
  }

  retryNow(): void {
    if (this.#state.status === "live" || this.#state.status === "resyncing") return;
    void this.retryHost(this.host).catch(() => {
      // The next report says how the retry went.
    });
  }

  /** The app's report of a change. Going live after anything but live (or
   * with a grown `resync`) rereads every store before the link is live. */
  report(s: HostLinkState): void {
    if (this.#closed) return;
    if (s.status !== "live") {
      this.#generation += 1;
      this.#set(linkStateOf(s));
      return;
    }
    const wasLive = this.#state.status === "live" || this.#state.status === "resyncing";
    const again = this.#resync !== s.resync || !wasLive;
    this.#resync = s.resync;
    if (!again) {
      if (this.#state.status === "live" && this.#state.engine !== s.engine) this.#set({ status: "live", engine: s.engine });
      return;
    }
    const generation = ++this.#generation;
    const restarted = this.#state.status === "live" && this.#state.engine !== s.engine;
    this.#set({ status: "resyncing", engine: s.engine, restarted });
    const all = [...this.#resyncers].map((f) => {
      try {
        return f();
      } catch (e) {
        return Promise.reject(e);
      }
    });
    void Promise.allSettled(all).then(() => {
      if (generation === this.#generation && this.#state.status === "resyncing") this.#set({ status: "live", engine: s.engine });
    });
  }

  #set(state: LinkState): void {
    this.#state = state;
    for (const w of [...this.#watchers]) w(state);
  }
}

/** A host's engine as a Backend over the app's transport. `listen` is the
 * host's own share of the events (see {@link HostHub}). */
export function hostBackend(
  link: HostLink,
  transport: Pick<HostTransport, "call">,
  listen: (on: (event: EngineEvent) => void) => Promise<() => void>,
): Backend & { link: HostLink } {
  const host = link.host;
  const call = async <T>(command: string, args?: Record<string, unknown>): Promise<T> => {
    if (link.closed) throw { code: "not_found", message: `${host} was removed from this machine's hosts: nothing was sent` } satisfies ApiError;
    if (WRITES.has(command)) {
      const refused = hostRefusal(host, link.state);
      if (refused) throw refused;
    }
    try {
      return (await transport.call(host, command, args ?? {})) as T;
    } catch (e) {
      throw toApiError(e);
    }
  };
  const on = <T>(channel: string, handler: (payload: T) => void): Promise<() => void> => {
    // Only engine events come from a host; a click on a notification is
    // this machine's (the app names the host in what it opens).
    if (channel !== "overseer://event") return Promise.resolve(() => {});
    return listen((e) => handler(e as T));
  };
  return { ...operations(call), ...events(on), link };
}

// A browser's line to an engine's web server: the same generated operations
// and events as the app window (../generated/client.ts), over HTTP and one
// WebSocket instead of Tauri's IPC. Only the transport is here.
//
// - A call is `POST /api/call/<command>` with the args object as JSON; an
//   error answer's body is the contract's `{code, message}`.
// - Every listener shares one WebSocket (`/api/events`), whose frames are
//   `{channel, payload}`; the first is `overseer://hello`, naming the engine
//   process.
// - The server sends a heartbeat frame (`overseer://heartbeat`) at the
//   interval its hello names (`heartbeat`, ms). Silence for SILENCE times
//   that (a phone that left the network, a proxy that lost the connection
//   without closing it) is taken as a drop.
// - The socket can drop and the engine can restart. The link then retries
//   with a growing delay; each new connection asks every store to read the
//   engine's truth again (`onResync`), and only once they all have is it
//   live again. Until then a call that decides or changes something (the
//   contract's `write` operations) is refused with the reason, never queued:
//   it would be made on a view the page cannot vouch for.
// - Who this browser is takes two halves: the device cookie (HttpOnly: no
//   script reads it, but browsers share a host's cookies among its ports)
//   and the device key, which pairing gives this page and which it keeps in
//   its own origin's localStorage (no other port reads it). Every call sends
//   the key as DEVICE_HEADER, and the socket offers it as a protocol
//   (`overseer-device.<key>`, beside `overseer`): a page cannot set a
//   WebSocket's headers. A cookie another local port planted does not go
//   with this key: the engine refuses it, and the page shows the pairing
//   screen rather than act as someone else's device.
import type { Backend, Link, LinkState } from "./backend";
import { toApiError } from "./errors";
import { events, operations, WRITES } from "../generated/client";
import type { ApiError, ErrorCode } from "../types";

/** The channel of the server's first frame on each connection. */
export const HELLO = "overseer://hello";
/** The channel of the server's heartbeat frames. */
export const HEARTBEAT = "overseer://heartbeat";
/** Heartbeat intervals of silence after which the connection is taken for dead. */
export const SILENCE = 2.5;
/** The close code the server uses when this browser's device is revoked. */
export const REVOKED = 4401;
/** The header that carries this page's device key on every call. */
export const DEVICE_HEADER = "X-Overseer-Device";
/** The protocol the events socket speaks; the key is offered beside it as
 * `DEVICE_PROTOCOL + key`. */
export const PROTOCOL = "overseer";
export const DEVICE_PROTOCOL = "overseer-device.";
/** Where this origin's localStorage keeps the device key. */
export const DEVICE_KEY = "overseer.deviceKey";

/** Where the page keeps its device key (tests give their own). */
export interface DeviceKey {
  get(): string | null;
  set(key: string): void;
}

/** Waits between tries after a drop (ms); the last one repeats. */
export const BACKOFF: readonly number[] = [250, 1_000, 2_000, 5_000, 10_000, 15_000];

/** What the transport needs of a browser (tests give their own). */
export interface WebDeps {
  fetch: (url: string, init?: RequestInit) => Promise<Response>;
  socket: (url: string, protocols: string[]) => SocketLike;
  /** This page's half of its device credential. */
  deviceKey: DeviceKey;
  /** The page's origin, e.g. `https://box.example:8443`. */
  origin: string;
  now: () => number;
  setTimeout: (f: () => void, ms: number) => unknown;
  clearTimeout: (t: unknown) => void;
}

/** The part of a WebSocket the link uses. */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(code?: number, reason?: string): void;
}

type Handler = (payload: unknown) => void;

const STATUS_CODES: Record<number, ErrorCode> = {
  400: "invalid_input",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "invalid_input",
  429: "rate_limited",
  503: "engine_unavailable",
};

/** An HTTP answer that is not a success, as the contract's error: its body
 * when it is one, else what the status says. */
export async function errorOf(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON (a proxy's page): the status says what it can.
  }
  if (typeof body === "object" && body !== null && typeof (body as ApiError).code === "string" && typeof (body as ApiError).message === "string") {
    return toApiError(body);
  }
  const code = STATUS_CODES[res.status] ?? (res.status >= 500 ? "engine_unavailable" : "internal");
  return { code, message: `The engine's web server answered ${res.status}${res.statusText ? ` ${res.statusText}` : ""}.` };
}

/** The headers that say which device this page is (its key; the cookie
 * goes by itself). */
function keyHeaders(key: DeviceKey): Record<string, string> {
  const k = key.get();
  return k ? { [DEVICE_HEADER]: k } : {};
}

/** The fetch failed: no answer at all. */
function unreachable(e: unknown): ApiError {
  const why = e instanceof Error ? e.message : String(e);
  return { code: "engine_unavailable", message: `Cannot reach the engine (${why}). Check that it is running and this network reaches it.` };
}

function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

/** Why a decision is refused in this state (null: it goes through). */
export function refusal(state: LinkState): ApiError | null {
  switch (state.status) {
    case "live":
      return null;
    case "connecting":
      return { code: "engine_unavailable", message: "Still connecting to the engine: nothing was decided. Try again once the page says it is connected." };
    case "resyncing":
      return {
        code: "engine_unavailable",
        message: "Reconnected; the page is still reading the engine's current state: nothing was decided. Look again once it has caught up (what you saw may have changed).",
      };
    case "down":
      return {
        code: "engine_unavailable",
        message: `Not connected to the engine since ${clock(state.since)} (${state.reason}): nothing was decided. Decide again once the page says it is connected.`,
      };
    case "unpaired":
      return { code: "unauthorized", message: state.reason };
  }
}

/** The link: one WebSocket for every listener, reconnected with backoff. */
export class WebLink implements Link {
  #state: LinkState = { status: "connecting" };
  #watchers = new Set<(s: LinkState) => void>();
  #resyncers = new Set<() => Promise<unknown>>();
  #handlers = new Map<string, Set<Handler>>();
  #socket: SocketLike | null = null;
  #timer: unknown = null;
  #tries = 0;
  /** The engine process the last hello named. */
  #engine: string | null = null;
  /** Resolves once the first connection attempt ended (hello or failure):
   * listeners wait for it so that their subscription is real before they
   * load. Any hello after it means events may have been missed. */
  #first: Promise<void>;
  #firstDone = false;
  #settleFirst: () => void = () => {};
  /** Counts connections: a resync of an older one does not make a newer
   * one live. */
  #generation = 0;
  /** How long the socket may be silent (ms; null: the server sends no
   * heartbeat), when it last heard anything, and the timer watching it. */
  #silence: number | null = null;
  #heard = 0;
  #watchdog: unknown = null;

  constructor(private deps: WebDeps) {
    this.#first = new Promise((resolve) => (this.#settleFirst = resolve));
  }

  get state(): LinkState {
    return this.#state;
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
    // Only when a retry is waiting (not while one is under way).
    if (this.#state.status !== "down" || this.#timer === null) return;
    this.deps.clearTimeout(this.#timer);
    this.#timer = null;
    void this.#connect();
  }

  /** Listens on a channel of the shared socket (opening it at first use);
   * resolves once the first connection attempt has ended. */
  async listen(channel: string, handler: Handler): Promise<() => void> {
    let set = this.#handlers.get(channel);
    if (!set) {
      set = new Set();
      this.#handlers.set(channel, set);
    }
    const mine: Handler = (p) => handler(p);
    set.add(mine);
    if (this.#socket === null && this.#timer === null && this.#state.status === "connecting" && !this.#firstDone) void this.#connect();
    await this.#first;
    return () => {
      set.delete(mine);
    };
  }

  /** A call of a command: refused while decisions would be blind. */
  async call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
    if (WRITES.has(command)) {
      const refused = refusal(this.#state);
      if (refused) throw refused;
    }
    let res: Response;
    try {
      res = await this.deps.fetch(`${this.deps.origin}/api/call/${command}`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", ...keyHeaders(this.deps.deviceKey) },
        body: JSON.stringify(args ?? {}),
      });
    } catch (e) {
      // No answer: the socket may be dead without having said so (a phone
      // that slept); reconnecting rereads what is true.
      this.#suspect();
      if (!WRITES.has(command)) throw unreachable(e);
      const why = e instanceof Error ? e.message : String(e);
      throw {
        code: "engine_unavailable",
        message: `The engine did not answer (${why}): this may or may not have been done. The page shows which once it has reconnected.`,
      } satisfies ApiError;
    }
    if (!res.ok) {
      const err = await errorOf(res);
      if (res.status === 401) this.#unpaired(err.message);
      throw err;
    }
    return (await res.json()) as T;
  }

  #set(state: LinkState): void {
    this.#state = state;
    for (const w of [...this.#watchers]) w(state);
  }

  #unpaired(reason: string): void {
    this.#unwatch();
    if (this.#timer !== null) this.deps.clearTimeout(this.#timer);
    this.#timer = null;
    const socket = this.#socket;
    this.#socket = null;
    if (socket) {
      socket.onclose = null;
      socket.close();
    }
    this.#set({ status: "unpaired", reason });
    this.#firstSettled();
  }

  /** A call got no answer while the socket looked alive: drop it, so that
   * the reconnection (and its resync) starts now rather than whenever the
   * socket notices. */
  #suspect(reason = "a call got no answer"): void {
    const socket = this.#socket;
    if (!socket || this.#state.status === "unpaired") return;
    this.#socket = null;
    socket.onclose = null;
    socket.onmessage = null;
    socket.close();
    this.#dropped(reason);
  }

  /** Watches the socket for silence longer than the heartbeat allows. */
  #watch(): void {
    this.#unwatch();
    const silence = this.#silence;
    const socket = this.#socket;
    if (silence === null || socket === null) return;
    const quiet = this.deps.now() - this.#heard;
    this.#watchdog = this.deps.setTimeout(() => {
      this.#watchdog = null;
      if (this.#socket !== socket) return;
      // A timer of a page in the background may fire late: only the time
      // since the last frame counts.
      if (this.deps.now() - this.#heard < silence) {
        this.#watch();
        return;
      }
      this.#suspect(`no word from the engine for ${Math.round(silence / 1000)} s`);
    }, Math.max(0, silence - quiet));
  }

  #unwatch(): void {
    if (this.#watchdog !== null) this.deps.clearTimeout(this.#watchdog);
    this.#watchdog = null;
  }

  #firstSettled(): void {
    if (this.#firstDone) return;
    this.#firstDone = true;
    this.#settleFirst();
  }

  /** Opens a socket (after asking who this browser is, so that a revoked
   * pairing is told apart from a dead engine). */
  async #connect(): Promise<void> {
    const generation = ++this.#generation;
    if (this.#tries > 0) {
      let res: Response;
      try {
        res = await this.deps.fetch(`${this.deps.origin}/api/me`, { credentials: "same-origin", headers: keyHeaders(this.deps.deviceKey) });
      } catch (e) {
        this.#dropped(unreachable(e).message);
        return;
      }
      if (generation !== this.#generation) return;
      if (res.status === 401) {
        this.#unpaired((await errorOf(res)).message);
        return;
      }
      if (!res.ok) {
        this.#dropped(`the engine answered ${res.status}`);
        return;
      }
    }
    const url = this.deps.origin.replace(/^http/, "ws") + "/api/events";
    let socket: SocketLike;
    try {
      const key = this.deps.deviceKey.get();
      socket = this.deps.socket(url, key ? [PROTOCOL, DEVICE_PROTOCOL + key] : [PROTOCOL]);
    } catch (e) {
      this.#dropped(e instanceof Error ? e.message : String(e));
      return;
    }
    this.#socket = socket;
    socket.onmessage = (ev) => {
      if (this.#socket !== socket) return;
      this.#heard = this.deps.now();
      this.#frame(ev.data, generation);
    };
    socket.onclose = (ev) => {
      if (this.#socket !== socket) return;
      this.#socket = null;
      if (ev.code === REVOKED) {
        this.#unpaired(ev.reason || "This browser's pairing was revoked. Pair it again to go on.");
        return;
      }
      this.#dropped(ev.reason || (ev.code === 1006 ? "the connection was lost" : `closed (${ev.code})`));
    };
    socket.onerror = () => {
      // A close follows every error; it is handled there.
    };
  }

  #frame(data: unknown, generation: number): void {
    if (typeof data !== "string") return;
    let frame: { channel?: unknown; payload?: unknown };
    try {
      frame = JSON.parse(data) as { channel?: unknown; payload?: unknown };
    } catch {
      return;
    }
    if (typeof frame !== "object" || frame === null || typeof frame.channel !== "string") return;
    if (frame.channel === HELLO) {
      const hello = frame.payload as { engine?: unknown; heartbeat?: unknown } | null;
      const beat = hello?.heartbeat;
      this.#silence = typeof beat === "number" && beat > 0 ? beat * SILENCE : null;
      this.#watch();
      this.#hello(typeof hello?.engine === "string" ? hello.engine : "", generation);
      return;
    }
    if (frame.channel === HEARTBEAT) return;
    for (const h of [...(this.#handlers.get(frame.channel) ?? [])]) h(frame.payload);
  }

  #hello(engine: string, generation: number): void {
    this.#tries = 0;
    const restarted = this.#engine !== null && this.#engine !== engine;
    this.#engine = engine;
    if (!this.#firstDone) {
      // The first connection: the listeners load after it, nothing was missed.
      this.#set({ status: "live", engine });
      this.#firstSettled();
      return;
    }
    this.#set({ status: "resyncing", engine, restarted });
    const all = [...this.#resyncers].map((f) => {
      try {
        return f();
      } catch (e) {
        return Promise.reject(e);
      }
    });
    void Promise.allSettled(all).then(() => {
      if (generation === this.#generation && this.#state.status === "resyncing") this.#set({ status: "live", engine });
    });
  }

  #dropped(reason: string): void {
    this.#unwatch();
    if (this.#state.status === "unpaired") return;
    const wait = BACKOFF[Math.min(this.#tries, BACKOFF.length - 1)]!;
    this.#tries += 1;
    const now = this.deps.now();
    const since = this.#state.status === "down" ? this.#state.since : now;
    this.#set({ status: "down", since, retryAt: now + wait, reason });
    this.#firstSettled();
    if (this.#timer !== null) this.deps.clearTimeout(this.#timer);
    this.#timer = this.deps.setTimeout(() => {
      this.#timer = null;
      void this.#connect();
    }, wait);
  }
}

/** A backend over the link: the generated operations and events, as the
 * app window has them. */
export function webBackend(deps: WebDeps): Backend & { link: WebLink } {
  const link = new WebLink(deps);
  const call = <T>(command: string, args?: Record<string, unknown>) => link.call<T>(command, args);
  const on = <T>(channel: string, handler: (payload: T) => void) => link.listen(channel, (p) => handler(p as T));
  return { ...operations(call), ...events(on), link };
}

/** This origin's localStorage (per scheme, host and port: a page on another
 * port of this host has its own); the page's memory when storage is
 * refused (the key then lasts as long as the page). */
let kept: string | null = null;
export function browserKey(): DeviceKey {
  return {
    get: () => {
      try {
        return localStorage.getItem(DEVICE_KEY) ?? kept;
      } catch {
        return kept;
      }
    },
    set: (key) => {
      kept = key;
      try {
        localStorage.setItem(DEVICE_KEY, key);
      } catch {
        // Kept in memory only.
      }
    },
  };
}

/** The browser's own fetch, WebSocket, device key and clock. */
export function browserDeps(): WebDeps {
  return {
    fetch: (url, init) => fetch(url, init),
    socket: (url, protocols) => new WebSocket(url, protocols) as unknown as SocketLike,
    deviceKey: browserKey(),
    origin: location.origin,
    now: () => Date.now(),
    setTimeout: (f, ms) => setTimeout(f, ms),
    clearTimeout: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
  };
}

/** The page's backend when an engine serves it: retries at once when the
 * device comes back online or the page is shown again (a phone waking). */
export function browserBackend(): Backend & { link: WebLink } {
  const backend = webBackend(browserDeps());
  window.addEventListener("online", () => backend.link.retryNow());
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") backend.link.retryNow();
  });
  return backend;
}

/** Who this browser is: its device, or null when it is not paired (the
 * pairing screen shows). */
export async function whoAmI(deps: Pick<WebDeps, "fetch" | "origin" | "deviceKey">): Promise<unknown> {
  let res: Response;
  try {
    res = await deps.fetch(`${deps.origin}/api/me`, { credentials: "same-origin", headers: keyHeaders(deps.deviceKey) });
  } catch (e) {
    throw unreachable(e);
  }
  if (res.status === 401) return null;
  if (!res.ok) throw await errorOf(res);
  return ((await res.json()) as { device: unknown }).device;
}

/** Exchanges a pairing code for this browser's device: its cookie (set by
 * the answer) and its key (in the answer's body, kept in this origin's
 * storage). */
export async function pair(deps: Pick<WebDeps, "fetch" | "origin" | "deviceKey">, code: string): Promise<unknown> {
  let res: Response;
  try {
    res = await deps.fetch(`${deps.origin}/api/pair`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code }),
    });
  } catch (e) {
    throw unreachable(e);
  }
  if (!res.ok) throw await errorOf(res);
  const body = (await res.json()) as { device: unknown; key?: unknown };
  if (typeof body.key !== "string" || body.key === "") {
    throw {
      code: "internal",
      message: "The engine paired this browser but sent no device key: it is older or newer than this page. Reload the page and pair again.",
    } satisfies ApiError;
  }
  deps.deviceKey.set(body.key);
  return body.device;
}

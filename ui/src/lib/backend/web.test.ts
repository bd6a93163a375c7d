// The browser's transport against a fake web server that follows the
// protocol (POST /api/call/<command>, one WebSocket of {channel, payload}
// frames starting with a hello) in front of the in-memory engine. The stores
// on top are the real ones: these tests show what a user of a browser sees
// when the connection drops or the engine restarts.
import { describe, expect, it } from "vitest";
import { BACKOFF, DEVICE_HEADER, DEVICE_PROTOCOL, HEARTBEAT, HELLO, PROTOCOL, REVOKED, webBackend, whoAmI, pair, type SocketLike, type WebDeps } from "./web";
import { demoBackend, MockBackend } from "./mock";
import { Gates } from "../inbox/gates.svelte";
import { Fleet } from "../fleet/fleet.svelte";
import { LiveValue } from "../live.svelte";
import { readNowAndOnResync } from "../settings/submit.svelte";
import type { EngineEvent, GateView } from "../types";

/** `decide_gate` -> `decideGate`. */
const camel = (snake: string) => snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

const NOW = 1_700_000_000_000;
const flush = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 0));
};

class FakeSocket implements SocketLike {
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  closed = false;
  constructor(
    readonly url: string,
    readonly protocols: string[] = [],
  ) {}
  frame(channel: string, payload: unknown): void {
    if (!this.closed) this.onmessage?.({ data: JSON.stringify({ channel, payload }) });
  }
  close(): void {
    this.closed = true;
  }
  /** The server side closes (or the network drops it). */
  drop(code = 1006, reason = ""): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.({ code, reason });
  }
}

/** A web server in front of an in-memory engine, with a switch for the
 * network and a way to restart the engine process. */
class FakeServer {
  engine: MockBackend;
  engineId = "engine-1";
  /** The heartbeat interval the hello names (ms; null: none). */
  heartbeat: number | null = null;
  up = true;
  paired = true;
  /** The device key the engine knows for the cookie this browser holds. */
  key = "k-ana";
  /** What the page keeps in its origin's storage. */
  stored: string | null = "k-ana";
  sockets: FakeSocket[] = [];
  posts: { command: string; body: unknown }[] = [];
  timers: { f: () => void; ms: number; id: number }[] = [];
  clock = NOW;
  #nextTimer = 1;

  constructor(engine: MockBackend = demoBackend(NOW)) {
    this.engine = engine;
    void engine.subscribe((e) => this.#broadcast(e));
  }

  get socket(): FakeSocket | undefined {
    return this.sockets.at(-1);
  }

  #broadcast(e: EngineEvent): void {
    // Events reach only an open socket: while it is down they are missed.
    for (const s of this.sockets) s.frame("overseer://event", e);
  }

  /** Accepts the browser's socket and says hello (when the network is up). */
  accept(): FakeSocket {
    const s = this.socket!;
    s.frame(HELLO, this.heartbeat === null ? { engine: this.engineId } : { engine: this.engineId, heartbeat: this.heartbeat });
    return s;
  }

  /** The network fails: the socket drops and requests fail until `heal`. */
  cut(): void {
    this.up = false;
    for (const s of this.sockets) s.drop();
  }

  heal(): void {
    this.up = true;
  }

  /** Runs every waiting timer whose time has come. */
  advance(ms: number): void {
    this.clock += ms;
    const due = this.timers.filter((t) => t.ms <= this.clock);
    this.timers = this.timers.filter((t) => t.ms > this.clock);
    for (const t of due) t.f();
  }

  deps(): WebDeps {
    return {
      origin: "https://box.test:8443",
      now: () => this.clock,
      setTimeout: (f, ms) => {
        const id = this.#nextTimer++;
        this.timers.push({ f, ms: this.clock + ms, id });
        return id;
      },
      clearTimeout: (id) => {
        this.timers = this.timers.filter((t) => t.id !== id);
      },
      deviceKey: {
        get: () => this.stored,
        set: (key) => {
          this.stored = key;
        },
      },
      socket: (url, protocols) => {
        const s = new FakeSocket(url, protocols);
        this.sockets.push(s);
        if (!this.up) queueMicrotask(() => s.drop());
        return s;
      },
      fetch: async (url, init) => {
        if (!this.up) throw new TypeError("Failed to fetch");
        expect(url.startsWith("https://box.test:8443/api/")).toBe(true);
        const path = url.slice("https://box.test:8443".length);
        const key = new Headers(init?.headers).get(DEVICE_HEADER);
        if (!this.paired || key !== this.key) return json(401, { code: "unauthorized", message: "This browser is not paired." });
        if (path === "/api/me") return json(200, { device: { id: 1, person: "ana", name: "Ana's phone" } });
        const command = path.replace("/api/call/", "");
        expect(init?.method).toBe("POST");
        expect(init?.credentials).toBe("same-origin");
        const body = JSON.parse(String(init?.body)) as Record<string, unknown>;
        this.posts.push({ command, body });
        // The args object's keys are in the operation's parameter order.
        const method = (this.engine as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[camel(command)];
        if (!method) return json(404, { code: "not_found", message: `no operation ${command}` });
        try {
          return json(200, await method.apply(this.engine, Object.values(body)));
        } catch (e) {
          return json(409, e);
        }
      },
    };
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** A browser's page: the web backend and the inbox and fleet on it. */
async function page(server: FakeServer) {
  const backend = webBackend(server.deps());
  const fleet = new Fleet(backend);
  const gates = new Gates(backend, fleet);
  const started = Promise.all([fleet.start(), gates.start()]);
  await flush();
  server.accept();
  await started;
  await flush();
  return { backend, fleet, gates };
}

describe("the web backend", () => {
  it("posts a call's args as JSON to /api/call/<command> and turns an error body into the typed error", async () => {
    const server = new FakeServer();
    const { backend, gates } = await page(server);
    expect(backend.link.state).toMatchObject({ status: "live", engine: "engine-1" });
    expect(server.socket?.url).toBe("wss://box.test:8443/api/events");
    const tool = gates.sorted.find((g) => g.kind === "tool_call")!;
    await backend.decideGate(tool.id, { kind: "tool_call", choice: "yes" }, null);
    expect(server.posts.at(-1)).toEqual({ command: "decide_gate", body: { gateId: tool.id, option: { kind: "tool_call", choice: "yes" }, context: null } });
    await flush();
    // The decision shows when its event comes over the socket.
    expect(gates.pending.has(tool.id)).toBe(false);
    await expect(backend.decideGate(tool.id, { kind: "tool_call", choice: "yes" }, null)).rejects.toEqual({
      code: "already_decided",
      message: `gate ${tool.id} was already decided`,
    });
  });

  it("shares one socket between listeners, by channel", async () => {
    const server = new FakeServer();
    const { backend } = await page(server);
    const seen: EngineEvent[] = [];
    const stop = await backend.subscribe((e) => seen.push(e));
    const opened: number[] = [];
    await backend.onOpenRequest((o) => opened.push(o.run_id));
    server.socket!.frame("overseer://open", { run_id: 3 });
    server.engine.push({ type: "gate_decided", gate_id: 99, run_id: 1, kind: "plan" });
    expect(server.sockets).toHaveLength(1);
    expect(opened).toEqual([3]);
    expect(seen.map((e) => e.type)).toEqual(["gate_decided"]);
    stop();
    server.engine.push({ type: "gate_decided", gate_id: 98, run_id: 1, kind: "plan" });
    expect(seen).toHaveLength(1);
  });

  it("after a drop, says so, refuses decisions with the reason instead of queueing them, reconnects with backoff and rereads the truth", async () => {
    const server = new FakeServer();
    const { backend, gates, fleet } = await page(server);
    const tool = gates.sorted.find((g) => g.kind === "tool_call")!;
    const plan = gates.sorted.find((g) => g.kind === "plan")!;

    server.cut();
    await flush();
    expect(backend.link.state).toMatchObject({ status: "down", since: NOW, retryAt: NOW + BACKOFF[0]! });
    // Refused at once, with why, and nothing was sent.
    const posts = server.posts.length;
    expect(await gates.decide(tool.id, "yes", null)).toBe(false);
    expect(gates.errors.get(tool.id)).toMatchObject({ code: "engine_unavailable" });
    expect(gates.errors.get(tool.id)?.message).toMatch(/^Not connected to the engine since .*: nothing was decided/);
    expect(server.posts.length).toBe(posts);

    // Meanwhile someone else decides the plan and an agent asks a new
    // question: this page hears neither.
    await server.engine.decideGate(plan.id, { kind: "plan", choice: "approve" }, null);
    const fresh: GateView = { ...server.engine.gates.get(tool.id)!, id: 77, title: "Run the migration?" };
    server.engine.openGate(fresh);
    await flush();
    expect(gates.pending.has(plan.id)).toBe(true);
    expect(gates.pending.has(77)).toBe(false);

    // The first retry fails too (still cut): the wait grows, the "since" stays.
    server.advance(BACKOFF[0]!);
    await flush();
    expect(backend.link.state).toMatchObject({ status: "down", since: NOW, retryAt: NOW + BACKOFF[0]! + BACKOFF[1]! });

    server.heal();
    server.advance(BACKOFF[1]!);
    await flush();
    expect(server.sockets).toHaveLength(2);
    server.accept();
    // Resyncing: still refused until every store has read the truth.
    expect(backend.link.state).toMatchObject({ status: "resyncing", restarted: false });
    expect((await backend.decideGate(tool.id, { kind: "tool_call", choice: "yes" }, null).catch((e) => e)).message).toMatch(/still reading/);
    await flush();
    expect(backend.link.state).toMatchObject({ status: "live", engine: "engine-1" });
    expect(gates.pending.has(plan.id)).toBe(false);
    expect(gates.pending.get(77)?.title).toBe("Run the migration?");
    // The tool call is still pending: deciding it again now goes through,
    // and its card's refusal goes.
    expect(await gates.decide(tool.id, "yes", null)).toBe(true);
    expect(gates.errors.has(tool.id)).toBe(false);
    expect(fleet.rows.get(plan.run_id)?.pending_gate?.id).not.toBe(plan.id);
  });

  it("resyncs after an engine restart (a new engine id in the hello) and says it restarted", async () => {
    const server = new FakeServer();
    const { backend, gates } = await page(server);
    const states: string[] = [];
    backend.link.onState((s) => states.push(s.status === "resyncing" ? `resyncing${s.restarted ? " (restarted)" : ""}` : s.status));
    // kill -9: the socket drops; the new process has decided nothing but
    // its database lost a gate the old one had open (decided on restart).
    const plan = gates.sorted.find((g) => g.kind === "plan")!;
    server.socket!.drop();
    server.engine.gates.set(plan.id, { ...server.engine.gates.get(plan.id)!, status: "decided" });
    server.engineId = "engine-2";
    server.advance(BACKOFF[0]!);
    await flush();
    server.accept();
    await flush();
    expect(states).toEqual(["down", "resyncing (restarted)", "live"]);
    expect(gates.pending.has(plan.id)).toBe(false);
  });

  it("reads a Settings section's value again after an engine restart", async () => {
    const server = new FakeServer();
    const backend = webBackend(server.deps());
    // The page's live stores hold the socket open.
    const unsubscribe = backend.subscribe(() => {});
    const seen: string[][] = [];
    const stop = readNowAndOnResync(backend.link, () =>
      backend.notificationSettings().then((s) => seen.push([...s.muted])),
    );
    await flush();
    server.accept();
    await flush();
    expect(seen).toEqual([[]]);
    // Muted from another client while this browser was away: never pushed.
    server.socket!.drop();
    const settings = await server.engine.notificationSettings();
    await server.engine.setNotificationSettings({ ...settings, muted: ["run_failed"] });
    server.engineId = "engine-2";
    server.advance(BACKOFF[0]!);
    await flush();
    server.accept();
    await flush();
    expect(seen).toEqual([[], ["run_failed"]]);
    expect(backend.link.state.status).toBe("live");
    stop();
    server.socket!.drop();
    server.advance(BACKOFF[0]!);
    await flush();
    server.accept();
    await flush();
    expect(seen).toHaveLength(2);
    (await unsubscribe)();
  });

  it("keeps events that come during the resync and applies them after the reread", async () => {
    const server = new FakeServer();
    const { gates } = await page(server);
    server.socket!.drop();
    server.advance(BACKOFF[0]!);
    await flush();
    const s = server.accept();
    // The reread is under way (its list_gates answer not yet read): a gate
    // opens now, and comes over the new socket.
    const fresh: GateView = { ...[...server.engine.gates.values()].find((g) => g.kind === "tool_call")!, id: 88, title: "Delete the cache?" };
    server.engine.openGate(fresh);
    expect(s.closed).toBe(false);
    await flush();
    expect(gates.pending.get(88)?.title).toBe("Delete the cache?");
  });

  it("a call that gets no answer says it may or may not have been done, and reconnects at once", async () => {
    const server = new FakeServer();
    const { backend, gates } = await page(server);
    const tool = gates.sorted.find((g) => g.kind === "tool_call")!;
    // The network goes, but the socket has not noticed (a phone that slept).
    server.up = false;
    const err = await backend.decideGate(tool.id, { kind: "tool_call", choice: "yes" }, null).catch((e) => e);
    expect(err).toMatchObject({ code: "engine_unavailable" });
    expect(err.message).toMatch(/may or may not have been done/);
    expect(backend.link.state).toMatchObject({ status: "down", reason: "a call got no answer" });
    expect(server.socket!.closed).toBe(true);
    server.heal();
    server.advance(BACKOFF[0]!);
    await flush();
    server.accept();
    await flush();
    expect(backend.link.state.status).toBe("live");
  });

  it("takes a socket silent for 2.5 heartbeats for dropped: refuses decisions, reconnects and rereads the truth", async () => {
    const server = new FakeServer();
    server.heartbeat = 15_000;
    const { backend, gates } = await page(server);
    const tool = gates.sorted.find((g) => g.kind === "tool_call")!;
    const plan = gates.sorted.find((g) => g.kind === "plan")!;
    // Heartbeats keep it live, however long.
    for (let i = 0; i < 4; i++) {
      server.advance(15_000);
      server.socket!.frame(HEARTBEAT, null);
    }
    await flush();
    expect(backend.link.state.status).toBe("live");
    expect(server.sockets).toHaveLength(1);

    // The network goes without the socket closing (a phone off its wifi):
    // nothing more comes, not even a close. Someone decides the plan
    // meanwhile; this page does not hear it.
    server.up = false;
    server.sockets.length = 0;
    await server.engine.decideGate(plan.id, { kind: "plan", choice: "approve" }, null);
    server.advance(37_000);
    await flush();
    expect(backend.link.state.status).toBe("live");
    server.advance(500);
    await flush();
    expect(backend.link.state).toMatchObject({ status: "down", reason: "no word from the engine for 38 s" });
    // Never acting on the stale view: refused, nothing sent.
    const posts = server.posts.length;
    expect(await gates.decide(tool.id, "yes", null)).toBe(false);
    expect(gates.errors.get(tool.id)?.message).toMatch(/^Not connected to the engine since .*: nothing was decided/);
    expect(server.posts.length).toBe(posts);

    server.heal();
    server.advance(BACKOFF[0]!);
    await flush();
    expect(server.sockets).toHaveLength(1);
    server.accept();
    await flush();
    expect(backend.link.state.status).toBe("live");
    expect(gates.pending.has(plan.id)).toBe(false);
  });

  it("asks a live value again after a reconnection", async () => {
    const server = new FakeServer();
    const backend = webBackend(server.deps());
    const value = new LiveValue(backend, { fetch: () => backend.listWorkspaces(), touches: () => false });
    const started = value.start();
    await flush();
    server.accept();
    await started;
    await flush();
    const asked = () => server.posts.filter((p) => p.command === "list_workspaces").length;
    expect(asked()).toBe(1);
    server.socket!.drop();
    server.advance(BACKOFF[0]!);
    await flush();
    server.accept();
    await flush();
    expect(asked()).toBe(2);
    value.stop();
  });

  it("a revoked device (close 4401, or a 401 on a call) stops retrying and asks to pair", async () => {
    const server = new FakeServer();
    const { backend } = await page(server);
    server.socket!.drop(REVOKED, "This device was revoked by ana.");
    await flush();
    expect(backend.link.state).toEqual({ status: "unpaired", reason: "This device was revoked by ana." });
    expect(server.timers).toHaveLength(0);

    const other = new FakeServer();
    const b2 = (await page(other)).backend;
    other.paired = false;
    await expect(b2.listRuns()).rejects.toMatchObject({ code: "unauthorized" });
    expect(b2.link.state.status).toBe("unpaired");
    await expect(b2.decideGate(1, { kind: "plan", choice: "approve" }, null)).rejects.toMatchObject({ code: "unauthorized" });
  });

  it("tells a dead engine from a revoked pairing when reconnecting", async () => {
    const server = new FakeServer();
    const { backend } = await page(server);
    server.socket!.drop();
    server.paired = false;
    server.advance(BACKOFF[0]!);
    await flush();
    expect(backend.link.state.status).toBe("unpaired");
    expect(server.sockets).toHaveLength(1);
  });

  it("starts even when the engine cannot be reached, and catches up once it can", async () => {
    const server = new FakeServer();
    server.up = false;
    const backend = webBackend(server.deps());
    const gates = new Gates(backend);
    await gates.start();
    expect(backend.link.state.status).toBe("down");
    expect(gates.error?.code).toBe("engine_unavailable");
    server.heal();
    server.advance(BACKOFF[0]!);
    await flush();
    server.accept();
    await flush();
    expect(backend.link.state.status).toBe("live");
    expect(gates.error).toBeNull();
    expect(gates.pending.size).toBeGreaterThan(0);
  });
});

describe("pairing", () => {
  it("reads who this browser is, and exchanges a code for a device", async () => {
    const server = new FakeServer();
    server.paired = false;
    const deps = server.deps();
    expect(await whoAmI(deps)).toBeNull();
    const wrong = async () => json(401, { code: "unauthorized", message: "That code is wrong or has expired." });
    await expect(pair({ ...deps, fetch: wrong }, "AAAA-BBBB")).rejects.toEqual({ code: "unauthorized", message: "That code is wrong or has expired." });
    const locked = async () => new Response("Too Many Requests", { status: 429, statusText: "Too Many Requests" });
    await expect(pair({ ...deps, fetch: locked }, "AAAA-BBBB")).rejects.toMatchObject({ code: "rate_limited" });
    server.paired = true;
    expect(await whoAmI(deps)).toMatchObject({ person: "ana" });
  });

  it("keeps the key pairing gives in the origin's storage and sends it on every call and the socket", async () => {
    const server = new FakeServer();
    server.stored = null;
    const deps = server.deps();
    const noKey = async () => json(200, { device: { id: 2, person: "ana" } });
    await expect(pair({ ...deps, fetch: noKey }, "AAAA-BBBB")).rejects.toMatchObject({ code: "internal" });
    expect(server.stored).toBeNull();
    const paired = async () => json(200, { device: { id: 2, person: "ana" }, key: "k-ana" });
    expect(await pair({ ...deps, fetch: paired }, "AAAA-BBBB")).toMatchObject({ id: 2 });
    expect(server.stored).toBe("k-ana");
    expect(await whoAmI(deps)).toMatchObject({ person: "ana" });
    const backend = webBackend(deps);
    const listening = backend.subscribe(() => {});
    await flush();
    expect(server.socket?.protocols).toEqual([PROTOCOL, DEVICE_PROTOCOL + "k-ana"]);
    server.accept();
    await listening;
    await backend.listRuns();
    expect(backend.link.state.status).toBe("live");
  });

  it("a cookie another port planted does not go with this page's key: the page is unpaired, not someone else", async () => {
    const server = new FakeServer();
    const backend = webBackend(server.deps());
    const listening = backend.subscribe(() => {});
    await flush();
    server.accept();
    await listening;
    // The cookie is now another device's: the engine knows another key for it.
    server.key = "k-planted";
    await expect(backend.listRuns()).rejects.toMatchObject({ code: "unauthorized" });
    expect(backend.link.state.status).toBe("unpaired");
    expect(await whoAmI(server.deps())).toBeNull();
  });
});

import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import { Messages } from "./messages.svelte";
import { Fleet } from "../fleet/fleet.svelte";
import { Nav } from "../nav.svelte";
import { demoBackend, withExternalSessions } from "../backend/mock";
import MessagesView from "../../components/messages/MessagesView.svelte";

const NOW = 1_700_000_000_000;
const flush = () => new Promise((r) => setTimeout(r, 0));

async function engine() {
  const backend = withExternalSessions(demoBackend(NOW), NOW);
  await flush(); // the seeded messages' own events
  return backend;
}

describe("Messages", () => {
  it("loads once, then grows only by pushed message_posted events", async () => {
    const backend = await engine();
    const messages = new Messages(backend);
    await messages.start();
    expect(messages.list.map((m) => m.id)).toEqual([1, 2, 3]);
    const loads = backend.calls.filter((c) => c.startsWith("listMessages")).length;
    backend.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "supervisor" }, body: "done?", correlation_id: null });
    await flush();
    expect(messages.list.map((m) => m.id)).toEqual([1, 2, 3, 4]);
    // Nothing was asked again: the event carried it.
    expect(backend.calls.filter((c) => c.startsWith("listMessages"))).toHaveLength(loads);
    messages.stop();
  });

  it("keeps one run's messages only (its own, to it, delivered broadcasts), for its page", async () => {
    const backend = await engine();
    const messages = new Messages(backend, 8);
    await messages.start();
    // Its own message and run 9's delivered broadcast; not run 3's held-back one.
    expect(messages.list.map((m) => m.from_run)).toEqual([8, 9]);
    backend.postMessage({ from_run: 9, from: "agent:mcp", to: { to: "user" }, body: "not for run 8", correlation_id: null });
    backend.postMessage({ from_run: null, from: "user:app", to: { to: "run", run: 8 }, body: "for run 8", correlation_id: "lockfile" });
    await flush();
    expect(messages.list.map((m) => m.body)).toEqual(["The lockfile is stale; I will regenerate it unless you object.", "Import finished: 12,408 rows.", "for run 8"]);
  });

  it("sends through the backend and shows the message when the engine posts it", async () => {
    const backend = await engine();
    const held: unknown[] = [];
    const messages = new Messages(backend);
    await messages.start();
    const push = backend.push.bind(backend);
    backend.push = (e) => void held.push(e);
    expect(await messages.send({ to: "run", run: 8 }, "keep the lockfile", "lockfile")).toBe(true);
    await flush();
    expect(messages.list).toHaveLength(3);
    expect(backend.calls).toContain("sendMessage run 8");
    for (const e of held) push(e as never);
    expect(messages.list.at(-1)).toMatchObject({ body: "keep the lockfile", correlation_id: "lockfile", from: "user:app" });
  });

  it("reads every page of a long history on load", async () => {
    const backend = await engine();
    for (let i = 0; i < 1_200; i++) backend.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "user" }, body: `m${i}`, correlation_id: null });
    await flush();
    const page = backend.listMessages.bind(backend);
    backend.listMessages = (run, after) => page(run, after).then((l) => l.slice(0, 500));
    const messages = new Messages(backend);
    await messages.start();
    expect(messages.list).toHaveLength(1_203);
    expect(backend.calls.filter((c) => c.startsWith("listMessages"))).toHaveLength(4);
  });

  it("keeps a refused send's error for the compose box", async () => {
    const backend = await engine();
    const messages = new Messages(backend);
    await messages.start();
    expect(await messages.send({ to: "broadcast" }, "  ", null)).toBe(false);
    expect(messages.sendError?.code).toBe("invalid_input");
  });

  it("renders held-back messages with their reason, replies where a run wrote, and bodies as text", async () => {
    const backend = await engine();
    backend.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "user" }, body: '<img src=x onerror="alert(1)">', correlation_id: null });
    await flush();
    const messages = new Messages(backend);
    const fleet = new Fleet(backend);
    await Promise.all([messages.start(), fleet.start()]);
    const body = render(MessagesView, { props: { messages, fleet, nav: new Nav(), now: NOW } }).body;
    const ids = [...body.matchAll(/data-message-id="(\d+)" data-status="(\w+)"/g)].map((m) => `${m[1]}:${m[2]}`);
    expect(ids).toEqual(["4:delivered", "3:blocked", "2:delivered", "1:delivered"]);
    expect(body).toContain("broadcasts from runs need the supervisor");
    expect(body).toContain('data-testid="messages-blocked"');
    expect(body.match(/data-action="reply"/g)).toHaveLength(4);
    expect(body).not.toContain("<img");
    // Live runs are the addressees the compose box offers, besides everyone.
    expect(body).toContain("Everyone (broadcast)");
    expect(body).toContain("Run 8: Claude Code in ~/src/web-app");
    expect(body).not.toContain("Run 7:");
  });

  it("renders the newest 200 of a long history, with a way to the earlier ones", async () => {
    const backend = await engine();
    for (let i = 0; i < 300; i++) backend.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "user" }, body: `m${i}`, correlation_id: null });
    await flush();
    const messages = new Messages(backend);
    const fleet = new Fleet(backend);
    await Promise.all([messages.start(), fleet.start()]);
    const body = render(MessagesView, { props: { messages, fleet, nav: new Nav(), now: NOW } }).body;
    expect(body.match(/data-testid="message"/g)).toHaveLength(200);
    expect(body).toContain("m299");
    expect(body).not.toContain(">m99<");
    expect(body).toMatch(/data-testid="messages-more"[^>]*>Show 103 earlier \(103 not shown\)/);
    expect(body).toContain('data-testid="messages-held-only"');
  });
});

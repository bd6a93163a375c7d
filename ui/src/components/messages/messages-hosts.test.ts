// The messages page over hosts, rendered from the real component: each
// host's messages beside this machine's, each named by its host, and the
// compose box able to write on a host (to that host's runs).
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import MessagesView from "./MessagesView.svelte";
import { Fleet } from "../../lib/fleet/fleet.svelte";
import { Nav } from "../../lib/nav.svelte";
import { Messages } from "../../lib/messages/messages.svelte";
import { Hosts } from "../../lib/hosts/hosts.svelte";
import { HostInboxes } from "../../lib/hosts/inboxes.svelte";
import { HostMessages } from "../../lib/hosts/messages.svelte";
import { followHosts } from "../../lib/hosts/follow";
import { MockBackend, MockHosts, demoRuns } from "../../lib/backend/mock";

const NOW = 1_700_000_000_000;
const flush = async () => {
  for (let i = 0; i < 8; i++) await new Promise((r) => setTimeout(r, 0));
};

describe("messages over hosts", () => {
  it("lists every host's messages named by host, replies and run links on each", async () => {
    let clock = NOW;
    const tick = () => (clock += 1_000);
    const local = new MockBackend(demoRuns(NOW), tick);
    const transport = new MockHosts(() => NOW);
    const build1 = transport.add("build1", new MockBackend(demoRuns(NOW), tick));
    local.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "user" }, body: "from here", correlation_id: null });
    build1.postMessage({ from_run: 8, from: "agent:codex", to: { to: "user" }, body: "from build1", correlation_id: "c1" });
    await flush();
    const fleet = new Fleet(local);
    const messages = new Messages(local);
    const hosts = new Hosts(transport);
    const hostMessages = new HostMessages();
    const stop = followHosts(hosts, { fleet, inboxes: new HostInboxes(), messages: hostMessages });
    await Promise.all([fleet.start(), messages.start(), hosts.start()]);
    await flush();

    const body = render(MessagesView, { props: { messages, fleet, nav: new Nav(), now: NOW, hosts: hostMessages.list } }).body;
    // Newest first; the same message id 1 on both engines, told apart by host.
    const rows = [...body.matchAll(/data-message-id="(\d+)"( data-host="([^"]+)")?/g)].map((m) => `${m[3] ?? "here"}:${m[1]}`);
    expect(rows).toEqual(["build1:1", "here:1"]);
    expect(body).toMatch(/data-testid="message-host"><bdi>build1<\/bdi>[^]*from build1/);
    expect(body).toMatch(/data-testid="message-host"><bdi>this machine<\/bdi>[^]*from here/);
    expect(body.match(/data-action="reply"/g)).toHaveLength(2);
    expect(body.match(/data-action="open-run"/g)).toHaveLength(2);
    expect(body).toContain('data-testid="messages-count">2 messages');
    // Where to write: this machine or the host.
    expect(body).toMatch(/data-testid="compose-host"[^]*<option value=""[^>]*>this machine<\/option>[^]*<option value="build1">build1<\/option>/);
    stop();
    hostMessages.stop();
    messages.stop();
    fleet.stop();
  });

  it("is as before without hosts: no host names, no host choice", async () => {
    const local = new MockBackend(demoRuns(NOW), () => NOW);
    local.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "user" }, body: "from here", correlation_id: null });
    await flush();
    const fleet = new Fleet(local);
    const messages = new Messages(local);
    await Promise.all([fleet.start(), messages.start()]);
    const body = render(MessagesView, { props: { messages, fleet, nav: new Nav(), now: NOW } }).body;
    expect(body).not.toContain('data-testid="message-host"');
    expect(body).not.toContain('data-testid="compose-host"');
    expect(body).not.toContain("data-host=");
    messages.stop();
    fleet.stop();
  });
});

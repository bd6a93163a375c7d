// Adding, upgrading and removing hosts from the window, against the mock app
// (MockHosts: each host's engine in memory, the app's steps told as
// `host-setup`, its removal as `host-removed`), through the same stores and
// the same wiring (followHosts) as the window.
import { describe, expect, it } from "vitest";
import { Fleet } from "../fleet/fleet.svelte";
import { rowKey } from "../fleet/fleet";
import { Gates } from "../inbox/gates.svelte";
import { Messages } from "../messages/messages.svelte";
import { Nav } from "../nav.svelte";
import { MockBackend, MockHosts, pendingToolGate, reviewRun } from "../backend/mock";
import { followHosts } from "./follow";
import { HostAddForm } from "./form.svelte";
import { Hosts } from "./hosts.svelte";
import { HostInboxes, waitingTotal } from "./inboxes.svelte";
import { HostMessages, everyMessage, hubOf } from "./messages.svelte";
import { hostFormProblems, parseHostUrl } from "./setup";
import { backendHosts } from "./link";

const flush = async () => {
  for (let i = 0; i < 8; i++) await new Promise((r) => setTimeout(r, 0));
};

/** The window over this machine and hosts build1 and build2 (each with a
 * run 1, a pending gate 3 and a message), wired as App.svelte wires them. */
async function window_() {
  const local = new MockBackend([reviewRun(1, "here")], () => 42);
  local.gates.set(3, pendingToolGate(3, 1));
  const transport = new MockHosts(() => Date.UTC(2026, 10, 27, 14, 2, 0));
  const engines: Record<string, MockBackend> = {};
  for (const name of ["build1", "build2"]) {
    const engine = new MockBackend([reviewRun(1, `on ${name}`)], () => 42, [pendingToolGate(3, 1)]);
    engine.postMessage({ from_run: 1, from: "agent:claude", to: { to: "user" }, body: `hello from ${name}`, correlation_id: null });
    engines[name] = transport.add(name, engine);
  }
  const fleet = new Fleet(local);
  const gates = new Gates(local, fleet);
  const hosts = new Hosts(transport);
  const inboxes = new HostInboxes();
  const messages = new HostMessages();
  const nav = new Nav();
  const unfollow = followHosts(hosts, { fleet, inboxes, messages, nav });
  await Promise.all([fleet.start(), gates.start(), hosts.start()]);
  await flush();
  const stop = () => {
    unfollow();
    hosts.stop();
    inboxes.stop();
    messages.stop();
    gates.stop();
    fleet.stop();
  };
  return { local, transport, engines, fleet, gates, hosts, inboxes, messages, nav, stop };
}

describe("the add-a-host form's own checks", () => {
  it("reads addresses as `overseer hosts add` does", () => {
    expect(parseHostUrl("ssh://me@box.lan:2222")).toEqual({ ok: true, user: "me", address: "box.lan", port: 2222 });
    expect(parseHostUrl("ssh://box")).toEqual({ ok: true, user: null, address: "box", port: null });
    expect(parseHostUrl("ssh://u@[fd00::1]:22")).toEqual({ ok: true, user: "u", address: "fd00::1", port: 22 });
    // The ones the CLI refuses (an option-like part is never passed to ssh).
    for (const bad of ["box", "ssh://-oProxyCommand=x", "ssh://me@-box", "ssh://me@box:0", "ssh://me@box:x", "ssh://m e@box", "ssh://", "ssh://me@box:70000"]) {
      expect(parseHostUrl(bad).ok, bad).toBe(false);
    }
  });

  it("says what is wrong with each field, in words that say what to write", () => {
    expect(hostFormProblems("build1", "ssh://me@build1.lan", [])).toEqual([]);
    expect(hostFormProblems("", "", [])).toEqual([
      { field: "name", message: "Give the host a name, such as build1: it names the host in the fleet and with --host." },
      { field: "url", message: "The address is empty: write ssh://user@host or ssh://user@host:port." },
    ]);
    expect(hostFormProblems("build 1", "me@build1.lan", [])).toEqual([
      { field: "name", message: "“build 1” may only have letters, digits, “.”, “_” and “-”." },
      { field: "url", message: "“me@build1.lan” does not start with ssh://: write ssh://user@host or ssh://user@host:port." },
    ]);
    expect(hostFormProblems("build1", "ssh://me@build1.lan:0", ["build1"])).toEqual([
      { field: "name", message: "build1 is already a host: upgrade or remove it below, or pick another name." },
      { field: "url", message: "“0” is not a port: give a number from 1 to 65535, or leave “:port” out for 22." },
    ]);
  });

  it("sends nothing while a field is wrong, and shows the app's refusal as it returned it", async () => {
    const { transport, hosts, stop } = await window_();
    const form = new HostAddForm(hosts);
    form.name = "-x";
    form.url = "ssh://me@-box";
    expect(await form.submit()).toBe(false);
    expect(form.problems.map((p) => p.field)).toEqual(["name", "url"]);
    expect(hosts.setups.size).toBe(0);
    expect(transport.views.has("-x")).toBe(false);

    // Valid here, refused by the app: a machine without bubblewrap.
    transport.machines.set("bare", { lacks: ["bubblewrap"] });
    form.name = " bare ";
    form.url = "ssh://me@bare.lan";
    form.edited();
    expect(form.problems).toEqual([]);
    expect(await form.submit()).toBe(false);
    expect(form.error).toEqual({
      code: "invalid_input",
      message: "bare lacks bubblewrap: install with `sudo apt-get install bubblewrap` there, then add it again; nothing was installed",
    });
    // The steps up to the refusal stay, with it; the host is not listed.
    expect(hosts.setups.get("bare")).toMatchObject({ action: "add", running: false, lines: ["checking me@bare.lan over ssh", "bare runs Linux x86_64 but lacks bubblewrap"] });
    expect(hosts.setups.get("bare")?.error).toEqual(form.error);
    expect(hosts.list.map((h) => h.name)).toEqual(["build1", "build2"]);
    // What the user typed stays, to fix and send again.
    expect([form.name, form.url]).toEqual([" bare ", "ssh://me@bare.lan"]);
    stop();
  });

  it("passes an ssh config file to the app as given, and refuses a relative one in the form", async () => {
    const { transport, hosts, stop } = await window_();
    const seen: (string | null)[] = [];
    const addHost = transport.addHost.bind(transport);
    transport.addHost = (name, url, sshConfig) => {
      seen.push(sshConfig);
      return addHost(name, url, sshConfig);
    };
    const form = new HostAddForm(hosts);
    form.name = "build3";
    form.url = "ssh://me@build3.lan";
    form.sshConfig = "ssh/build.conf";
    expect(await form.submit()).toBe(false);
    expect(form.problems.map((p) => p.field)).toEqual(["ssh_config"]);
    expect(seen).toEqual([]);
    form.sshConfig = " /home/me/.ssh/build.conf ";
    expect(await form.submit()).toBe(true);
    expect(seen).toEqual(["/home/me/.ssh/build.conf"]);
    expect(form.sshConfig).toBe("");
    // Left empty: the user's own ~/.ssh/config (null to the app).
    form.name = "build4";
    form.url = "ssh://me@build4.lan";
    expect(await form.submit()).toBe(true);
    expect(seen).toEqual(["/home/me/.ssh/build.conf", null]);
    stop();
  });
});

describe("adding, upgrading and removing a host from the window", () => {
  it("shows the add's steps as they come, then the host with its link, its runs, asks and messages", async () => {
    const { transport, fleet, gates, hosts, inboxes, messages, stop } = await window_();
    const engine = new MockBackend([reviewRun(1, "on build3"), reviewRun(2, "also on build3")], () => 42, [pendingToolGate(5, 2)]);
    engine.postMessage({ from_run: 2, from: "agent:codex", to: { to: "user" }, body: "ready on build3", correlation_id: null });
    transport.machines.set("build3", { engine });
    const form = new HostAddForm(hosts);
    form.name = "build3";
    form.url = "ssh://me@build3.lan:2222";
    const done = form.submit();

    // While it runs: the steps so far, the form and the host busy.
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setTimeout(r, 0));
    const partway = hosts.setups.get("build3")!;
    expect(partway.running).toBe(true);
    expect(partway.lines.length).toBeGreaterThan(0);
    expect(partway.lines.length).toBeLessThan(5);
    expect(form.running).toBe(true);
    expect(hosts.busy("build3")).toBe(true);
    expect(hosts.list.map((h) => h.name)).not.toContain("build3");

    expect(await done).toBe(true);
    expect(form.error).toBeNull();
    expect([form.name, form.url]).toEqual(["", ""]);
    expect(form.running).toBe(false);
    expect(hosts.setups.get("build3")).toMatchObject({
      action: "add",
      running: false,
      error: null,
      lines: [
        "checking me@build3.lan over ssh",
        "build3 runs Linux x86_64 with bubblewrap, cgroup v2, sha256sum, setsid and nohup",
        "copied overseer 0.1.0 to ~/.local/share/overseer/versions/0.1.0 (SHA-256 checked there)",
        "current -> versions/0.1.0",
        "started the engine detached (no systemd user session there); its log is ~/.local/share/overseer/serve.log",
        `pinned the engine's key ${transport.views.get("build3")!.fingerprint}`,
      ],
    });
    expect(hosts.list.find((h) => h.name === "build3")).toMatchObject({ url: "ssh://me@build3.lan:2222", state: { status: "live" } });
    expect(hosts.states.get("build3")?.status).toBe("live");
    await flush();
    // It joined the fleet, the inbox and the messages.
    expect(fleet.hosts).toEqual(["build1", "build2", "build3"]);
    expect(fleet.all.get("build3/2")?.task_title).toBe("also on build3");
    expect(inboxes.get("build3")?.pending.has(5)).toBe(true);
    expect(waitingTotal(gates, inboxes)).toBe(4);
    expect(messages.get("build3")?.list.map((m) => m.body)).toEqual(["ready on build3"]);
    stop();
  });

  it("upgrades a host: its steps, busy meanwhile, then its runs read again from the restarted engine", async () => {
    const { transport, engines, fleet, hosts, stop } = await window_();
    const listed = engines.build1!.calls.filter((c) => c === "listRuns").length;
    const done = hosts.upgrade("build1");
    expect(hosts.busy("build1")).toBe(true);
    expect(hosts.busy("build2")).toBe(false);
    // A second setup of the same host is refused while the first runs.
    expect(await hosts.remove("build1")).toMatchObject({ code: "conflict" });
    expect(await done).toBeNull();
    expect(hosts.busy("build1")).toBe(false);
    expect(hosts.setups.get("build1")).toMatchObject({
      action: "upgrade",
      error: null,
      lines: [
        "copied overseer 0.1.0 to ~/.local/share/overseer/versions/0.1.0 (SHA-256 checked there)",
        "current -> versions/0.1.0",
        "restarted the engine",
        `its key is still the pinned one (${transport.views.get("build1")!.fingerprint})`,
      ],
    });
    await flush();
    expect(hosts.list.find((h) => h.name === "build1")?.state).toMatchObject({ status: "live", engine: "build1-2", resync: 1 });
    expect(engines.build1!.calls.filter((c) => c === "listRuns").length).toBe(listed + 1);
    expect(fleet.hostStates.get("build1")?.status).toBe("live");
    stop();
  });

  it("removes a host: its rows, cards, messages, counts, filter, selection and drawer leave; nothing more goes to it", async () => {
    const { transport, engines, fleet, gates, hosts, inboxes, messages, nav, stop } = await window_();
    expect(fleet.sorted.map(rowKey)).toEqual([1, "build1/1", "build2/1"]);
    expect(waitingTotal(gates, inboxes)).toBe(3);
    // Every host's runs count toward "needs you".
    expect(fleet.counts.needs_you).toBe(3);
    expect(everyMessage([], messages.list).map((m) => m.host)).toEqual(["build1", "build2"]);
    engines.build1!.push({ type: "run_changed", run: { ...reviewRun(2, "only on build1"), workspace: "build1-only" } });
    await flush();
    expect(fleet.workspaces).toContain("build1-only");
    fleet.setFilter({ host: "build1", workspace: "build1-only" });
    fleet.select("build1/1");
    nav.openWhy(3, "build1");
    const backend = hosts.backend("build1")!;

    expect(await hosts.remove("build1")).toBeNull();
    expect(hosts.list.map((h) => h.name)).toEqual(["build2"]);
    expect(hosts.states.has("build1")).toBe(false);
    expect(hosts.backend("build1")).toBeUndefined();
    expect(hosts.setups.get("build1")).toMatchObject({
      action: "remove",
      running: false,
      lines: ["stopped the engine on build1", "forgot build1; its files stay there (~/.local/share/overseer, and the engine's key in ~/.config/overseer)"],
    });
    // Fleet: its rows, counts and state gone; the filter on it and the
    // selection of its row dropped.
    expect(fleet.hosts).toEqual(["build2"]);
    expect(fleet.sorted.map(rowKey)).toEqual([1, "build2/1"]);
    expect([...fleet.all.keys()]).toEqual([1, "build2/1"]);
    expect(fleet.total).toBe(2);
    expect(fleet.counts.needs_you).toBe(2);
    expect(fleet.hostStates.has("build1")).toBe(false);
    expect(fleet.filter.host).toBe("");
    expect(fleet.filter.workspace).toBe("");
    expect(fleet.workspaces).not.toContain("build1-only");
    expect(fleet.selected).toBeNull();
    // Inbox and messages: its cards and messages gone, the badge lower.
    expect(inboxes.get("build1")).toBeUndefined();
    expect(waitingTotal(gates, inboxes)).toBe(2);
    expect(messages.get("build1")).toBeUndefined();
    expect(everyMessage([], messages.list).map((m) => m.host)).toEqual(["build2"]);
    // A "Why?" drawer about its gate closed (this machine's gate 3 is another).
    expect(nav.why).toBeNull();
    // Its old backend sends nothing more.
    await expect(backend.approveRun(1)).rejects.toMatchObject({ code: "not_found", message: "build1 was removed from this machine's hosts: nothing was sent" });
    await expect(backend.listRuns()).rejects.toMatchObject({ code: "not_found" });
    expect(engines.build1!.calls.filter((c) => c.startsWith("approveRun"))).toEqual([]);
    stop();
  });

  it("keeps a removed host gone when its closing link still reports, until it is added again here or from a terminal", async () => {
    const { transport, fleet, hosts, stop } = await window_();
    expect(await hosts.remove("build1")).toBeNull();
    // The app's last word from the closed link, after host-removed.
    transport.setState("build1", { status: "down", since_ms: 0, retry_at_ms: 1_000, reason: "the link was closed here" });
    await flush();
    expect(hosts.list.map((h) => h.name)).toEqual(["build2"]);
    expect(fleet.hosts).toEqual(["build2"]);
    transport.views.delete("build1");
    // Added again here (its steps come first): it is back.
    transport.machines.set("build1", { engine: new MockBackend([reviewRun(4, "new build1")], () => 42) });
    expect(await hosts.add("build1", "ssh://me@build1.lan")).toBeNull();
    await flush();
    expect(hosts.list.map((h) => h.name)).toEqual(["build1", "build2"]);
    expect([...fleet.forHost("build1").rows.keys()]).toEqual([4]);

    // Removed, then added again from a terminal: the app only sees hosts.json
    // change and starts a new link, whose first report is "connecting".
    expect(await hosts.remove("build1")).toBeNull();
    transport.add("build1", new MockBackend([reviewRun(5, "terminal build1")], () => 42), { status: "connecting" });
    transport.restore("build1");
    await flush();
    expect(hosts.list.map((h) => h.name)).toEqual(["build1", "build2"]);
    expect(hosts.states.get("build1")?.status).toBe("live");
    expect([...fleet.forHost("build1").rows.keys()]).toEqual([5]);
    stop();
  });

  it("refuses to remove a host it cannot reach, and keeps it", async () => {
    const { transport, fleet, hosts, stop } = await window_();
    transport.cut("build2", "ssh: connect to host build2.lan port 22: No route to host");
    const refused = await hosts.remove("build2");
    expect(refused).toEqual({
      code: "engine_unavailable",
      message:
        "build2 cannot be reached (ssh: connect to host build2.lan port 22: No route to host): it is not forgotten (its entry stays in hosts.json; delete it there when the machine is gone)",
    });
    expect(hosts.setups.get("build2")?.error).toEqual(refused);
    expect(hosts.list.map((h) => h.name)).toEqual(["build1", "build2"]);
    expect(fleet.all.has("build2/1")).toBe(true);
    stop();
  });
});

describe("hosts set up from a terminal", () => {
  it("shows their steps, and a host removed there leaves the window as one removed here", async () => {
    const { transport, fleet, hosts, inboxes, stop } = await window_();
    // `overseer hosts remove build2` in a terminal: the app tells its steps
    // and that it was removed; the window asked nothing.
    await transport.removeHost("build2");
    expect(hosts.setups.get("build2")).toMatchObject({ action: null, running: false, error: null, lines: ["stopped the engine on build2", expect.stringMatching(/^forgot build2/)] });
    expect(hosts.list.map((h) => h.name)).toEqual(["build1"]);
    expect(fleet.hosts).toEqual(["build1"]);
    expect(inboxes.get("build2")).toBeUndefined();

    // `overseer hosts add build2 ...` again: the same name, a new engine.
    transport.machines.set("build2", { engine: new MockBackend([reviewRun(7, "after reinstall")], () => 42) });
    await transport.addHost("build2", "ssh://me@build2.lan", null);
    await flush();
    expect(hosts.setups.get("build2")?.lines).toHaveLength(6);
    expect(hosts.setups.get("build2")?.action).toBeNull();
    expect(fleet.hosts).toEqual(["build1", "build2"]);
    expect([...fleet.forHost("build2").rows.keys()]).toEqual([7]);
    expect(fleet.all.has("build2/1")).toBe(false);
    expect(inboxes.get("build2")?.pending.size).toBe(0);
    stop();
  });

  it("goes through the app's commands and events (the window's transport over its backend)", async () => {
    // The app as a Backend (what tauri.ts adapts): its host commands and events.
    const app = new MockBackend([], () => 42);
    const hosts = new Hosts(backendHosts(app));
    const removed: string[] = [];
    hosts.onRemoved((h) => removed.push(h));
    await hosts.start();
    expect(await hosts.add("gpu", "ssh://me@gpu.lan")).toBeNull();
    expect(hosts.list.map((h) => h.name)).toEqual(["gpu"]);
    expect(hosts.setups.get("gpu")?.lines.at(-1)).toMatch(/^pinned the engine's key SHA256:/);
    expect(await hosts.backend("gpu")!.listRuns()).toEqual([]);
    expect(await hosts.remove("gpu")).toBeNull();
    expect(removed).toEqual(["gpu"]);
    expect(hosts.list).toEqual([]);
    expect(await hosts.add("gpu", "ssh://me@gpu.lan")).toBeNull();
    expect(await hosts.add("gpu", "ssh://me@gpu.lan")).toMatchObject({ code: "conflict" });
    hosts.stop();
  });
});

describe("messages over hosts", () => {
  it("lists a host's messages beside this machine's, and a reply to one goes to that host's engine", async () => {
    const { local, engines, messages, stop } = await window_();
    local.postMessage({ from_run: 1, from: "agent:demo", to: { to: "user" }, body: "hello from here", correlation_id: null });
    await flush();
    const localMessages = new Messages(local);
    await localMessages.start();
    const all = everyMessage(localMessages.list, messages.list);
    expect(all.map((m) => [m.host ?? "here", m.id, m.body])).toEqual([
      ["here", 1, "hello from here"],
      ["build1", 1, "hello from build1"],
      ["build2", 1, "hello from build2"],
    ]);
    // A reply to build1's run 1 goes to build1's engine only.
    const fromBuild1 = all.find((m) => m.host === "build1")!;
    const hub = hubOf(fromBuild1.host, localMessages, messages.list)!;
    expect(await hub.send({ to: "run", run: 1 }, "go on", "msg-1")).toBe(true);
    expect(engines.build1!.calls).toContain("sendMessage run 1");
    expect(engines.build2!.calls).not.toContain("sendMessage run 1");
    expect(local.calls).not.toContain("sendMessage run 1");
    await flush();
    expect(messages.get("build1")?.list.at(-1)).toMatchObject({ body: "go on", correlation_id: "msg-1" });
    // This machine's message, to this machine's hub.
    expect(hubOf(undefined, localMessages, messages.list)).toBe(localMessages);
    // A host's held-back messages count toward the window's badge.
    engines.build2!.postMessage({ from_run: 1, from: "agent:claude", to: { to: "broadcast" }, body: "all stop", correlation_id: null, status: "blocked", blocked_reason: "broadcasts need approval" });
    await flush();
    expect(messages.blocked).toBe(1);
    localMessages.stop();
    stop();
  });
});

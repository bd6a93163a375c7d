// One fleet over this machine's engine and its hosts': each host's engine
// in memory behind a link a test cuts and restores (MockHosts), reached as
// the app reaches it (by command name and args, its events on one channel).
import { describe, expect, it } from "vitest";
import { Fleet } from "../fleet/fleet.svelte";
import { Hosts } from "./hosts.svelte";
import { HostInboxes, waitingTotal } from "./inboxes.svelte";
import { Gates } from "../inbox/gates.svelte";
import { MockBackend, MockHosts, pendingToolGate, reviewRun } from "../backend/mock";
import { LOCAL_HOST, rowKey } from "../fleet/fleet";

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
};

/** This machine with run 1, and two hosts each with a run 1 of its own. */
async function twoHosts() {
  const local = new MockBackend([reviewRun(1, "here")], () => 42);
  const transport = new MockHosts(() => Date.UTC(2026, 10, 27, 14, 2, 0));
  const build1 = transport.add("build1", new MockBackend([reviewRun(1, "on build1")], () => 42));
  const build2 = transport.add("build2", new MockBackend([reviewRun(1, "on build2"), reviewRun(2, "also on build2")], () => 42));
  const fleet = new Fleet(local);
  const hosts = new Hosts(transport);
  const started: Promise<void>[] = [];
  hosts.onAdded((name, backend) => started.push(fleet.addHost(name, backend)));
  await fleet.start();
  await hosts.start();
  await Promise.all(started);
  return { local, transport, build1, build2, fleet, hosts };
}

describe("one fleet over hosts", () => {
  it("keeps rows of two hosts with the same run id apart", async () => {
    const { fleet, build1 } = await twoHosts();
    expect(fleet.hosts).toEqual(["build1", "build2"]);
    expect(fleet.sorted.map(rowKey)).toEqual([1, "build1/1", "build2/1", "build2/2"]);
    expect(fleet.all.get("build1/1")?.task_title).toBe("on build1");
    expect(fleet.all.get("build2/1")?.task_title).toBe("on build2");
    // This machine's rows stay where they always were.
    expect(fleet.rows.get(1)?.task_title).toBe("here");
    expect(fleet.total).toBe(4);
    expect(fleet.counts.pending_review).toBe(4);
    expect(fleet.counts.needs_you).toBe(4);

    // An event of build1's run 1 changes that row only.
    build1.push({ type: "run_changed", run: { ...reviewRun(1, "on build1"), state: { state: "running" }, needs_you: false, attention_rank: 5 } });
    expect(fleet.all.get("build1/1")?.state.state).toBe("running");
    expect(fleet.all.get("build2/1")?.state.state).toBe("pending_review");
    expect(fleet.rows.get(1)?.state.state).toBe("pending_review");
    expect(fleet.counts).toMatchObject({ running: 1, pending_review: 3, needs_you: 3 });
    expect(fleet.sorted.map(rowKey)).toEqual([1, "build2/1", "build2/2", "build1/1"]);

    // The host filter: one host, or this machine.
    fleet.setFilter({ host: "build2" });
    expect(fleet.shown.map(rowKey)).toEqual(["build2/1", "build2/2"]);
    fleet.setFilter({ host: LOCAL_HOST });
    expect(fleet.shown.map(rowKey)).toEqual([1]);
    fleet.setFilter({ host: "" });
    expect(fleet.shown).toHaveLength(4);

    // The keyboard walks every row, each once.
    fleet.select(null);
    const seen = [fleet.move(1), fleet.move(1), fleet.move(1), fleet.move(1)];
    expect(seen).toEqual([1, "build2/1", "build2/2", "build1/1"]);
    fleet.stop();
  });

  it("sends a row's action to its own host", async () => {
    const { fleet, local, build1, build2, transport } = await twoHosts();
    expect(await fleet.approve("build2/1")).toBe(true);
    expect(transport.calls).toContain("build2 approve_run");
    expect(build2.calls).toContain("approveRun 1");
    expect(build1.calls).not.toContain("approveRun 1");
    expect(local.calls).not.toContain("approveRun 1");
    await flush();
    // Its result came back as that host's event, to that row only.
    expect(fleet.all.get("build2/1")?.state).toEqual({ state: "released", reason: "merged" });
    expect(fleet.all.get("build1/1")?.state.state).toBe("pending_review");
    expect(fleet.rows.get(1)?.state.state).toBe("pending_review");
    // This machine's run, by its id as always.
    expect(await fleet.reject(1, "no")).toBe(true);
    expect(local.calls).toContain("rejectRun 1");
    expect(build1.calls.some((c) => c.startsWith("rejectRun"))).toBe(false);
    fleet.stop();
  });

  it("greys a host's rows while it is down and refuses their actions with the reason, nothing sent", async () => {
    const { fleet, transport, build1 } = await twoHosts();
    transport.cut("build1", "ssh: connect to host build1.lan port 22: Connection refused");
    const row = fleet.all.get("build1/1")!;
    // Still shown as last read, with why it cannot be acted on.
    expect(row.task_title).toBe("on build1");
    expect(fleet.blocked(row)).toMatch(/^build1 unreachable since \d\d:\d\d, retrying$/);
    expect(fleet.blocked(fleet.all.get("build2/1")!)).toBeNull();
    expect(fleet.blocked(fleet.rows.get(1)!)).toBeNull();
    // The run's page says the same.
    expect(fleet.forHost("build1").trouble).toBe(fleet.blocked(row));
    expect(fleet.forHost("build2").trouble).toBeNull();

    expect(await fleet.approve("build1/1")).toBe(false);
    expect(fleet.error?.code).toBe("engine_unavailable");
    expect(fleet.error?.message).toMatch(/build1 unreachable since \d\d:\d\d:\d\d \(ssh: connect to host build1\.lan port 22: Connection refused\): nothing was sent/);
    expect(build1.calls.some((c) => c.startsWith("approveRun"))).toBe(false);
    expect(transport.calls.filter((c) => c.startsWith("build1 approve"))).toEqual([]);
    // The other host's actions still go.
    expect(await fleet.approve("build2/2")).toBe(true);
    fleet.stop();
  });

  it("reads a host again when its link comes back, and is live only after", async () => {
    const { fleet, transport, build1, hosts } = await twoHosts();
    transport.cut("build1");
    // Missed while down: the run was merged there.
    build1.push({ type: "run_changed", run: { ...reviewRun(1, "on build1"), state: { state: "released", reason: "merged" }, needs_you: false } });
    build1.runs.set(5, reviewRun(5, "new on build1"));
    expect(fleet.all.get("build1/1")?.state.state).toBe("pending_review");
    const listed = build1.calls.filter((c) => c === "listRuns").length;

    const states: string[] = [];
    hosts.backend("build1")!.link.onState((s) => states.push(s.status));
    transport.restore("build1");
    await flush();
    expect(build1.calls.filter((c) => c === "listRuns").length).toBe(listed + 1);
    expect(fleet.all.get("build1/1")?.state).toEqual({ state: "released", reason: "merged" });
    expect(fleet.all.get("build1/5")?.task_title).toBe("new on build1");
    expect(fleet.blocked(fleet.all.get("build1/1")!)).toBeNull();
    expect(states).toEqual(["resyncing", "live"]);
    expect(fleet.counts).toMatchObject({ released: 1, pending_review: 4 });
    fleet.stop();
  });

  it("sends a decision on a host's card to that host", async () => {
    const { fleet, hosts, local, build1, build2 } = await twoHosts();
    build1.gates.set(7, pendingToolGate(7, 1));
    const backend = hosts.backend("build1")!;
    const gates = new Gates(backend, fleet.forHost("build1"));
    await gates.start();
    expect([...gates.pending.keys()]).toEqual([7]);
    // The card reads its run from its host's rows, not this machine's.
    expect(gates.runs.get(1)?.task_title).toBe("on build1");
    expect(await gates.decide(7, "yes", null)).toBe(true);
    expect(build1.calls).toContain("decideGate 7 yes");
    expect(local.calls.some((c) => c.startsWith("decideGate"))).toBe(false);
    expect(build2.calls.some((c) => c.startsWith("decideGate"))).toBe(false);
    gates.stop();
    fleet.stop();
  });

  it("leaves a fleet without hosts as it was", async () => {
    const local = new MockBackend([reviewRun(1), reviewRun(2)], () => 42);
    const fleet = new Fleet(local);
    const hosts = new Hosts(new MockHosts());
    hosts.onAdded((name, backend) => void fleet.addHost(name, backend));
    await Promise.all([fleet.start(), hosts.start()]);
    expect(hosts.list).toEqual([]);
    expect(fleet.hosts).toEqual([]);
    // The same map as this machine's rows, keyed by run id.
    expect(fleet.all).toBe(fleet.rows);
    expect(fleet.sorted.map(rowKey)).toEqual([1, 2]);
    expect(fleet.move(1)).toBe(1);
    expect(fleet.blocked(fleet.rows.get(1)!)).toBeNull();
    expect(await fleet.approve(2)).toBe(true);
    expect(local.calls).toContain("approveRun 2");
    fleet.stop();
  });
});

describe("one inbox over hosts", () => {
  it("counts every host's waiting items and refuses a down host's decision on its card", async () => {
    const { fleet, hosts, transport, local, build1, build2 } = await twoHosts();
    local.gates.set(3, pendingToolGate(3, 1));
    build1.gates.set(3, pendingToolGate(3, 1));
    build2.gates.set(3, pendingToolGate(3, 1));
    build2.gates.set(4, pendingToolGate(4, 2));
    const gates = new Gates(local, fleet);
    const inboxes = new HostInboxes();
    await Promise.all([gates.start(), inboxes.add("build1", hosts.backend("build1")!, fleet.forHost("build1")), inboxes.add("build2", hosts.backend("build2")!, fleet.forHost("build2"))]);
    // The same gate id on three engines: three cards, four items in all.
    expect(waitingTotal(gates, inboxes)).toBe(4);
    expect(inboxes.get("build2")?.sorted.map((g) => g.id).sort()).toEqual([3, 4]);

    // A gate opened on build2 while the window looks: counted at once.
    build2.runs.set(9, reviewRun(9));
    build2.openGate(pendingToolGate(9, 9));
    await flush();
    expect(waitingTotal(gates, inboxes)).toBe(5);

    // build1 drops: its card's decision is refused with why, nothing sent.
    transport.cut("build1", "ssh: Connection reset by peer");
    const build1Gates = inboxes.get("build1")!;
    expect(await build1Gates.decide(3, "yes", null)).toBe(false);
    expect(build1Gates.errors.get(3)?.message).toMatch(/^build1 unreachable since \d\d:\d\d:\d\d \(ssh: Connection reset by peer\): nothing was sent/);
    expect(build1.calls.some((c) => c.startsWith("decideGate"))).toBe(false);
    // Its card stays (it still waits there) and is still counted.
    expect(waitingTotal(gates, inboxes)).toBe(5);
    // The same id on this machine is this machine's to decide.
    expect(await gates.decide(3, "yes", null)).toBe(true);
    expect(local.calls).toContain("decideGate 3 yes");
    await flush();
    expect(waitingTotal(gates, inboxes)).toBe(4);
    inboxes.stop();
    gates.stop();
    fleet.stop();
  });
});

describe("the hosts store", () => {
  it("lists the hosts once, then follows the app's link reports only", async () => {
    const transport = new MockHosts();
    transport.add("build1", new MockBackend([reviewRun(1)], () => 42));
    let listed = 0;
    const links = transport.links.bind(transport);
    transport.links = () => {
      listed += 1;
      // A change reported while the list is on its way applies after it.
      transport.cut("build1", "reported during the listing");
      return links();
    };
    const hosts = new Hosts(transport);
    const fleet = new Fleet(new MockBackend([], () => 42));
    const added: string[] = [];
    hosts.onAdded((name, backend) => {
      added.push(name);
      void fleet.addHost(name, backend);
    });
    await Promise.all([fleet.start(), hosts.start()]);
    expect(hosts.states.get("build1")).toMatchObject({ status: "down", reason: "reported during the listing" });

    // A host added with the CLI while the window is open joins by its report.
    transport.add("build2", new MockBackend([reviewRun(1, "on build2")], () => 42));
    await flush();
    expect(hosts.list.map((h) => h.name)).toEqual(["build1", "build2"]);
    expect(added).toEqual(["build1", "build2"]);
    expect(fleet.all.get("build2/1")?.task_title).toBe("on build2");
    expect(hosts.list.find((h) => h.name === "build2")).toMatchObject({ url: "ssh://me@build2.lan", state: { status: "live" } });
    expect(listed).toBe(1);

    // Retry now asks the app to reach that host.
    hosts.retry("build1");
    expect(transport.retries).toEqual(["build1"]);
    hosts.stop();
    fleet.stop();
  });
});

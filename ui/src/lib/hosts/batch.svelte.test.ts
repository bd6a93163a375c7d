// "Approve selected" over every engine's inbox: this machine's low-risk
// gates and each host's, ticked together, each approved by its own engine
// (the same gate id on two machines is two cards); a host whose link is
// down refuses its share and the count says so.
import { describe, expect, it } from "vitest";
import { Fleet } from "../fleet/fleet.svelte";
import { Gates } from "../inbox/gates.svelte";
import { MockBackend, MockHosts, pendingToolGate, reviewRun } from "../backend/mock";
import { approveBatch, batchables } from "../inbox/batch";
import { followHosts } from "./follow";
import { Hosts } from "./hosts.svelte";
import { HostInboxes } from "./inboxes.svelte";
import { HostMessages } from "./messages.svelte";
import { Nav } from "../nav.svelte";

const flush = async () => {
  for (let i = 0; i < 8; i++) await new Promise((r) => setTimeout(r, 0));
};

/** A tool call the user may approve in a batch (not always gated). */
const lowRisk = (id: number, run: number) => ({ ...pendingToolGate(id, run), batch_option: "yes" });

async function window_() {
  const local = new MockBackend([reviewRun(1, "here")], () => 42);
  local.gates.set(3, lowRisk(3, 1));
  const transport = new MockHosts(() => 42);
  const engines = {} as Record<"build1" | "build2", MockBackend>;
  for (const name of ["build1", "build2"] as const) {
    engines[name] = transport.add(name, new MockBackend([reviewRun(1, `on ${name}`)], () => 42, [lowRisk(3, 1), pendingToolGate(4, 1)]));
  }
  const fleet = new Fleet(local);
  const gates = new Gates(local, fleet);
  const hosts = new Hosts(transport);
  const inboxes = new HostInboxes();
  const unfollow = followHosts(hosts, { fleet, inboxes, messages: new HostMessages(), nav: new Nav() });
  await Promise.all([fleet.start(), gates.start(), hosts.start()]);
  await flush();
  const stop = () => {
    unfollow();
    hosts.stop();
    inboxes.stop();
    gates.stop();
    fleet.stop();
  };
  return { local, transport, engines, gates, inboxes, stop };
}

describe("approving low-risk gates across hosts", () => {
  it("lists this machine's and every host's, keyed by engine, and approves each on its own engine", async () => {
    const { local, engines, gates, inboxes, stop } = await window_();
    const items = batchables(gates, inboxes.list);
    expect(items.map((b) => b.key)).toEqual(["#3", "build1#3", "build2#3"]);
    expect(await approveBatch(items)).toBe(3);
    await flush();
    for (const engine of [local, engines.build1, engines.build2]) {
      expect(engine.gates.get(3)?.status).toBe("decided");
      expect(engine.gates.get(3)?.decision?.option).toBe("yes");
    }
    // The gates not ticked, and not low-risk, still wait.
    expect(engines.build1.gates.get(4)?.status).toBe("pending");
    stop();
  });

  it("counts a host that is down as not approved, and approves the rest", async () => {
    const { local, transport, engines, gates, inboxes, stop } = await window_();
    const items = batchables(gates, inboxes.list);
    transport.cut("build2");
    await flush();
    expect(await approveBatch(items)).toBe(2);
    await flush();
    expect(local.gates.get(3)?.status).toBe("decided");
    expect(engines.build1.gates.get(3)?.status).toBe("decided");
    expect(engines.build2.gates.get(3)?.status).toBe("pending");
    stop();
  });
});

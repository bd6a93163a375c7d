// The fleet table with and without hosts, rendered from the real component:
// without hosts it has no Host column and no host filter (as before hosts);
// with them, both, and a line for a host that cannot be reached.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import FleetTable from "./FleetTable.svelte";
import { Fleet } from "../../lib/fleet/fleet.svelte";
import { Hosts } from "../../lib/hosts/hosts.svelte";
import { MockBackend, MockHosts, demoRuns } from "../../lib/backend/mock";

async function fleetWith(hostNames: string[]) {
  const now = Date.UTC(2026, 10, 27, 14, 0, 0);
  const fleet = new Fleet(new MockBackend(demoRuns(now), () => now));
  const transport = new MockHosts(() => now);
  for (const h of hostNames) transport.add(h, new MockBackend(demoRuns(now), () => now));
  const hosts = new Hosts(transport);
  const started: Promise<void>[] = [];
  hosts.onAdded((name, backend) => started.push(fleet.addHost(name, backend)));
  await Promise.all([fleet.start(), hosts.start()]);
  await Promise.all(started);
  return { fleet, transport, now };
}

describe("the fleet table over hosts", () => {
  it("has no Host column or filter without hosts", async () => {
    const { fleet, now } = await fleetWith([]);
    const { body } = render(FleetTable, { props: { fleet, now } });
    expect(body).not.toContain('data-sort="host"');
    expect(body).not.toContain('data-testid="filter-host"');
    expect(body).not.toContain('data-testid="host-trouble"');
    expect(body).toContain('data-sort="id"');
    fleet.stop();
  });

  it("has a Host column, a host filter, and a line for a host that is down", async () => {
    const { fleet, transport, now } = await fleetWith(["build1", "build2"]);
    transport.cut("build2");
    const { body } = render(FleetTable, { props: { fleet, now } });
    expect(body).toContain('data-sort="host"');
    expect(body).toContain('data-testid="filter-host"');
    expect(body).toContain('<option value="build1">build1</option>');
    expect(body).toContain('<option value="@local">this machine</option>');
    expect(body).toMatch(/data-testid="host-trouble" data-host="build2"[^]*build2 unreachable since \d\d:\d\d, retrying/);
    expect(body).not.toMatch(/data-testid="host-trouble" data-host="build1"/);
    expect(body).toContain(`of ${(demoRuns(now).length * 3).toLocaleString("en-US")} runs`);
    fleet.stop();
  });
});

// The "Browsers and phones" list follows the engine's device_changed events;
// a pairing's code gives way to "Paired" when the device it became arrives.
import { describe, expect, it } from "vitest";
import { Devices, grantText, workspaceList, type DevicesBackend } from "./devices.svelte";
import type { DeviceView, EngineEvent, Pairing } from "../types";

const flush = () => new Promise((r) => setTimeout(r, 0));

function device(id: number, fields: Partial<DeviceView> = {}): DeviceView {
  return {
    id,
    person: "ana",
    name: `Device ${id}`,
    created_at: 1_000 * id,
    last_seen_at: null,
    revoked_at: null,
    grant: { role: "approver", workspaces: null },
    ...fields,
  };
}

/** An engine with devices: pairing and revoking push device_changed. */
function engine(initial: DeviceView[]) {
  const devices = new Map(initial.map((d) => [d.id, d]));
  const listeners = new Set<(e: EngineEvent) => void>();
  const push = (d: DeviceView) => {
    devices.set(d.id, d);
    for (const l of listeners) l({ type: "device_changed", device: d });
  };
  const burn = (codes: number) => {
    for (const l of listeners) l({ type: "pairing_codes_burned", codes });
  };
  const calls: string[] = [];
  const backend: DevicesBackend = {
    subscribe: async (on) => {
      listeners.add(on);
      return () => listeners.delete(on);
    },
    listDevices: async () => [...devices.values()],
    listPeople: async () => [],
    pairDevice: async (person: string, name: string, role: string | null, workspaces: string[] | null): Promise<Pairing> => {
      calls.push(`pair ${person} ${name}` + (role ? ` ${role}` : "") + (workspaces ? ` ${workspaces.join(",")}` : ""));
      return { code: "ABCD-EFGH", expires_at: 9_000_000, url: "http://127.0.0.1:8765/" };
    },
    setPersonRole: async (person: string, role: "approver" | "observer", workspaces: string[] | null) => {
      calls.push(`role ${person} ${role}` + (workspaces ? ` ${workspaces.join(",")}` : ""));
      const changed = [...devices.values()].filter((d) => d.person === person);
      setTimeout(() => changed.forEach((d) => push({ ...d, grant: { role, workspaces } })), 0);
      return { person, grant: { role, workspaces }, set_by: "user:app", set_at: 1, migrated: false };
    },
    revokeDevice: async (id: number) => {
      calls.push(`revoke ${id}`);
      const d = { ...devices.get(id)!, revoked_at: 5_000 };
      queueMicrotask(() => push(d));
      return d;
    },
  } as DevicesBackend;
  return { backend, push, burn, calls };
}

describe("Devices", () => {
  it("lists live devices first, newest first, then the revoked ones", async () => {
    const { backend } = engine([device(1), device(2, { revoked_at: 9 }), device(3)]);
    const d = new Devices(backend);
    await d.start();
    expect(d.list.map((x) => x.id)).toEqual([3, 1, 2]);
  });

  it("shows a pairing's code until the device it became arrives, then says it paired", async () => {
    const { backend, push, calls } = engine([device(1, { name: "Ana's phone" })]);
    const d = new Devices(backend);
    await d.start();
    expect(await d.startPairing("ana", "Ana's phone")).toBe(true);
    expect(calls).toEqual(["pair ana Ana's phone"]);
    expect(d.pairing?.code).toBe("ABCD-EFGH");
    // The old device of the same name changing is not the pairing.
    push(device(1, { name: "Ana's phone", last_seen_at: 7 }));
    expect(d.pairing).not.toBeNull();
    push(device(4, { name: "Ana's phone" }));
    expect(d.pairing).toBeNull();
    expect(d.paired?.id).toBe(4);
    expect(d.list.map((x) => x.id)).toEqual([4, 1]);
  });

  it("a shown code the engine burned says so, and a new pairing shows its code again", async () => {
    const { backend, burn } = engine([]);
    const d = new Devices(backend);
    await d.start();
    burn(1);
    expect(d.burned).toBe(false); // no code shown: nothing to mark
    expect(await d.startPairing("ana", "Ana's phone")).toBe(true);
    burn(2);
    expect(d.burned).toBe(true);
    expect(d.pairing?.code).toBe("ABCD-EFGH");
    expect(await d.startPairing("ana", "Ana's phone")).toBe(true);
    expect(d.burned).toBe(false);
  });

  it("a revocation shows when the engine says so", async () => {
    const { backend, calls } = engine([device(1)]);
    const d = new Devices(backend);
    await d.start();
    expect(await d.revoke(1)).toBe(true);
    expect(calls).toEqual(["revoke 1"]);
    await flush();
    expect(d.list[0]?.revoked_at).toBe(5_000);
  });

  it("pairs with the role chosen and shows a role change when the engine pushes it", async () => {
    const { backend, calls } = engine([device(1, { name: "Ana's phone" }), device(2, { person: "bo" })]);
    const d = new Devices(backend);
    await d.start();
    expect(await d.startPairing("cy", "Cy's phone", "approver", ["web-app"])).toBe(true);
    // An observer's workspaces mean nothing: not sent.
    expect(await d.startPairing("dee", "Dee's tablet", "observer", ["web-app"])).toBe(true);
    expect(calls).toEqual(["pair cy Cy's phone approver web-app", "pair dee Dee's tablet observer"]);
    expect(await d.setRole("ana", "observer")).toBe(true);
    // Not before the engine says so.
    expect(d.list.find((x) => x.id === 1)?.grant.role).toBe("approver");
    await flush();
    expect(d.list.find((x) => x.id === 1)?.grant.role).toBe("observer");
    expect(d.list.find((x) => x.id === 2)?.grant.role).toBe("approver");
  });

  it("reads grants and typed workspace lists as the engine words them", () => {
    expect(grantText({ role: "approver", workspaces: null })).toBe("approver of every workspace");
    expect(grantText({ role: "approver", workspaces: ["web", "api"] })).toBe("approver of web, api");
    expect(grantText({ role: "observer", workspaces: null })).toBe("observer");
    expect(workspaceList(" web, ,api ")).toEqual(["web", "api"]);
    expect(workspaceList("  ")).toBeNull();
  });
});

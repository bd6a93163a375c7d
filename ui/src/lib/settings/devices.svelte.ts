// The paired browsers and phones, as Settings lists them: loaded once, then
// kept in step by the engine's device_changed events (a pairing redeemed, a
// revocation, from this window or the CLI alike). Never polled; "last seen"
// is as fresh as the last event or load. The code shown is marked dead when
// the engine says the outstanding codes were burned (pairing_codes_burned).
import type { Backend } from "../backend";
import { toApiError } from "../backend/errors";
import { LiveCollection } from "../live.svelte";
import type { ApiError, DeviceView, EngineEvent, Grant, Pairing, PersonView, Role } from "../types";

/** What the section asks of the engine. */
export type DevicesBackend = Pick<
  Backend,
  "subscribe" | "link" | "pairDevice" | "listDevices" | "revokeDevice" | "setPersonRole" | "listPeople"
>;

/** A grant as a person reads it (the engine's own wording, `Grant::describe`). */
export function grantText(g: Grant): string {
  if (g.role === "approver") {
    if (g.workspaces === null) return "approver of every workspace";
    if (g.workspaces.length === 0) return "approver of no workspace";
    return `approver of ${g.workspaces.join(", ")}`;
  }
  return g.role;
}

/** Workspace names as typed (comma-separated); empty: every workspace. */
export function workspaceList(text: string): string[] | null {
  const names = text
    .split(",")
    .map((w) => w.trim())
    .filter((w) => w !== "");
  return names.length === 0 ? null : names;
}

/** Live devices first (newest first), then the revoked ones. */
export function deviceOrder(a: DeviceView, b: DeviceView): number {
  const ra = a.revoked_at !== null ? 1 : 0;
  const rb = b.revoked_at !== null ? 1 : 0;
  return ra - rb || b.created_at - a.created_at || b.id - a.id;
}

export function deviceChanged(e: EngineEvent): DeviceView | null {
  return e.type === "device_changed" ? e.device : null;
}

export class Devices {
  /** The pairing shown (its code and expiry), until it is redeemed. */
  pairing = $state<Pairing | null>(null);
  /** The device the shown pairing became (it was redeemed). */
  paired = $state<DeviceView | null>(null);
  /** The shown pairing's code was burned (too many wrong codes typed). */
  burned = $state(false);
  starting = $state(false);
  /** Device ids with a revocation under way. */
  busy = $state(new Set<number>());
  /** The last refused call. */
  error = $state<ApiError | null>(null);
  /** The people paired before roles existed, who were made approvers of
   * every workspace by the upgrade (until the owner gives them a role). */
  migrated = $state<string[]>([]);

  readonly #live: LiveCollection<number, DeviceView>;
  /** The devices known when the shown pairing started, and its name: a new
   * device of that name is the one it became. */
  #known = new Set<number>();
  #name = "";

  constructor(private backend: DevicesBackend) {
    this.#live = new LiveCollection(backend, {
      key: (d) => d.id,
      load: () => backend.listDevices(),
      change: (e) => {
        // Every code outstanding was burned, the shown one with them.
        if (e.type === "pairing_codes_burned" && this.pairing) this.burned = true;
        const d = deviceChanged(e);
        if (d === null) return null;
        // A role given changes the person's devices: read who is left from before.
        void this.#readPeople();
        if (this.pairing && d.revoked_at === null && d.name === this.#name && !this.#known.has(d.id)) {
          this.paired = d;
          this.pairing = null;
        }
        return { put: [d] };
      },
      order: deviceOrder,
    });
  }

  get list(): readonly DeviceView[] {
    return this.#live.list;
  }
  get ready(): boolean {
    return this.#live.ready;
  }
  get loadError(): ApiError | null {
    return this.#live.error;
  }

  async start(): Promise<void> {
    await Promise.all([this.#live.start(), this.#readPeople()]);
  }

  async #readPeople(): Promise<void> {
    try {
      const people: PersonView[] = await this.backend.listPeople();
      this.migrated = people.filter((p) => p.migrated).map((p) => p.person);
    } catch {
      // A browser's page may not see every person: it shows no notice.
      this.migrated = [];
    }
  }

  stop(): void {
    this.#live.stop();
  }

  /** Asks the engine for a one-time code for `person`'s device `name`, giving
   * the person `role` (in `workspaces`, null: every one). */
  async startPairing(
    person: string,
    name: string,
    role: Role | null = null,
    workspaces: string[] | null = null,
  ): Promise<boolean> {
    this.starting = true;
    try {
      this.#known = new Set(this.#live.items.keys());
      this.#name = name;
      this.pairing = await this.backend.pairDevice(person, name, role, role === "approver" ? workspaces : null);
      this.paired = null;
      this.burned = false;
      this.error = null;
      return true;
    } catch (e) {
      this.error = toApiError(e);
      return false;
    } finally {
      this.starting = false;
    }
  }

  /** Hides the code (it still expires on its own). */
  dismissPairing(): void {
    this.pairing = null;
    this.paired = null;
    this.burned = false;
  }

  /** Revokes a device; the list changes when the engine says so. */
  async revoke(id: number): Promise<boolean> {
    this.busy = new Set(this.busy).add(id);
    try {
      // The list changes when the engine's device_changed event says so.
      await this.backend.revokeDevice(id);
      this.error = null;
      return true;
    } catch (e) {
      this.error = toApiError(e);
      return false;
    } finally {
      const next = new Set(this.busy);
      next.delete(id);
      this.busy = next;
    }
  }

  /** Gives `person` a role; their devices change when the engine says so. */
  async setRole(person: string, role: Role, workspaces: string[] | null = null): Promise<boolean> {
    try {
      await this.backend.setPersonRole(person, role, role === "approver" ? workspaces : null);
      this.error = null;
      return true;
    } catch (e) {
      this.error = toApiError(e);
      return false;
    }
  }
}

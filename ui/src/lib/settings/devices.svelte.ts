// The paired browsers and phones, as Settings lists them: loaded once, then
// kept in step by the engine's device_changed events (a pairing redeemed, a
// revocation, from this window or the CLI alike). Never polled; "last seen"
// is as fresh as the last event or load. The code shown is marked dead when
// the engine says the outstanding codes were burned (pairing_codes_burned).
import type { Backend } from "../backend";
import { toApiError } from "../backend/errors";
import { LiveCollection } from "../live.svelte";
import type { ApiError, DeviceView, EngineEvent, Pairing } from "../types";

/** What the section asks of the engine. */
export type DevicesBackend = Pick<Backend, "subscribe" | "link" | "pairDevice" | "listDevices" | "revokeDevice">;

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

  start(): Promise<void> {
    return this.#live.start();
  }

  stop(): void {
    this.#live.stop();
  }

  /** Asks the engine for a one-time code for `person`'s device `name`. */
  async startPairing(person: string, name: string): Promise<boolean> {
    this.starting = true;
    try {
      this.#known = new Set(this.#live.items.keys());
      this.#name = name;
      this.pairing = await this.backend.pairDevice(person, name);
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
}

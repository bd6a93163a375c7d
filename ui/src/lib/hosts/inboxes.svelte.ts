// Every host's inbox: each host's pending gates, followed over its own
// backend (a decision on a card goes to the engine that asked), beside this
// machine's. The window's "needs you" count is theirs added up.
import type { Backend } from "../backend/backend";
import type { RunFleet } from "../fleet/fleet.svelte";
import { Gates } from "../inbox/gates.svelte";

export interface HostInbox {
  host: string;
  gates: Gates;
}

export class HostInboxes {
  /** Each host's inbox, by host name. */
  list = $state.raw<readonly HostInbox[]>([]);

  /** Follows a host's gates (its runs, for the cards, from `fleet`). */
  add(host: string, backend: Backend, fleet: RunFleet): Promise<void> {
    if (this.get(host)) return Promise.resolve();
    const gates = new Gates(backend, fleet);
    this.list = [...this.list, { host, gates }].sort((a, b) => (a.host < b.host ? -1 : 1));
    return gates.start();
  }

  /** Stops following a host that was removed: its cards leave the inbox
   * and its items the count. */
  remove(host: string): void {
    const gone = this.list.find((h) => h.host === host);
    if (!gone) return;
    gone.gates.stop();
    this.list = this.list.filter((h) => h !== gone);
  }

  get(host: string): Gates | undefined {
    return this.list.find((h) => h.host === host)?.gates;
  }

  /** Items waiting on every host (listed or not yet). */
  get count(): number {
    let n = 0;
    for (const h of this.list) n += h.gates.pending.size + h.gates.more;
    return n;
  }

  stop(): void {
    for (const h of this.list) h.gates.stop();
  }
}

/** What the window's inbox badge (and the app's tray) count: the items
 * waiting for a person on this machine's engine and on every host's. */
export function waitingTotal(local: { pending: { size: number }; more: number }, hosts: { count: number } | null): number {
  return local.pending.size + local.more + (hosts?.count ?? 0);
}

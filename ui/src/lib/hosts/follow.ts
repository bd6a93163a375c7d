// What the window does with its hosts: each host reported (at start, or
// added later from the window or a terminal) joins the fleet, the inbox and
// the messages over its own backend; a host removed (here or with `overseer
// hosts remove`) leaves all three, and a "Why?" drawer about it closes.
import type { Fleet } from "../fleet/fleet.svelte";
import type { Nav } from "../nav.svelte";
import type { Hosts } from "./hosts.svelte";
import type { HostInboxes } from "./inboxes.svelte";
import type { HostMessages } from "./messages.svelte";

export interface HostFollowers {
  fleet: Fleet;
  inboxes: HostInboxes;
  messages: HostMessages;
  nav?: Nav;
}

/** Follows every host into the window's stores; returns the unsubscribe. */
export function followHosts(hosts: Hosts, { fleet, inboxes, messages, nav }: HostFollowers): () => void {
  const unAdded = hosts.onAdded((name, backend) => {
    void fleet.addHost(name, backend);
    void inboxes.add(name, backend, fleet.forHost(name));
    void messages.add(name, backend);
  });
  const unRemoved = hosts.onRemoved((name) => {
    fleet.removeHost(name);
    inboxes.remove(name);
    messages.remove(name);
    nav?.hostRemoved(name);
  });
  return () => {
    unAdded();
    unRemoved();
  };
}

// Every host's agent messages beside this machine's: each host's engine is
// a hub of its own, followed over that host's backend (loaded once, then
// grown by its pushed events, read again after a reconnection). A reply to
// a host's agent goes to that host's engine.
import type { Backend } from "../backend/backend";
import { Messages } from "../messages/messages.svelte";
import type { MessageView } from "../types";

export interface HostMessageList {
  host: string;
  messages: Messages;
}

/** A message with the host whose engine holds it (absent: this machine's).
 * Message ids repeat across hosts; {@link messageKey} does not. */
export type HostedMessage = MessageView & { readonly host?: string };

export function messageKey(m: HostedMessage): string {
  return m.host === undefined ? String(m.id) : `${m.host}/${m.id}`;
}

export class HostMessages {
  /** Each host's messages, by host name. */
  list = $state.raw<readonly HostMessageList[]>([]);

  /** Follows a host's messages. */
  add(host: string, backend: Backend): Promise<void> {
    if (this.get(host)) return Promise.resolve();
    const messages = new Messages(backend);
    this.list = [...this.list, { host, messages }].sort((a, b) => (a.host < b.host ? -1 : 1));
    return messages.start();
  }

  /** Stops following a host that was removed: its messages leave. */
  remove(host: string): void {
    const gone = this.list.find((h) => h.host === host);
    if (!gone) return;
    gone.messages.stop();
    this.list = this.list.filter((h) => h !== gone);
  }

  get(host: string): Messages | undefined {
    return this.list.find((h) => h.host === host)?.messages;
  }

  /** Messages the hubs of every host held back. */
  get blocked(): number {
    let n = 0;
    for (const h of this.list) for (const m of h.messages.list) if (m.status === "blocked") n += 1;
    return n;
  }

  stop(): void {
    for (const h of this.list) h.messages.stop();
  }
}

/** This machine's messages and every host's, oldest first (by when each
 * was posted; a host's run ids and message ids are its own). */
export function everyMessage(local: readonly MessageView[], hosts: readonly HostMessageList[]): HostedMessage[] {
  if (hosts.length === 0) return [...local];
  const all: HostedMessage[] = [...local];
  for (const h of hosts) for (const m of h.messages.list) all.push({ ...m, host: h.host });
  return all.sort((a, b) => a.at - b.at || (a.host ?? "").localeCompare(b.host ?? "") || a.id - b.id);
}

/** The hub a message to a run of `host` goes to (undefined: this
 * machine's), or null when that host is no longer followed. */
export function hubOf(host: string | undefined, local: Messages, hosts: readonly HostMessageList[]): Messages | null {
  return host === undefined ? local : (hosts.find((h) => h.host === host)?.messages ?? null);
}

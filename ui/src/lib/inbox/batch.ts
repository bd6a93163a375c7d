// "Select all low-risk" and "Approve selected" over every engine's inbox:
// this machine's and each host's. A card is keyed by its engine and gate id
// (the same id can wait on two machines); approving sends each engine its
// own gates, through its own backend, one engine after the other. A host
// whose link is down refuses its share, said on its cards as any refusal.
import type { GateView } from "../types";
import { batchOption } from "./order";

/** What a batch needs of an engine's inbox (`Gates`). */
export interface BatchInbox {
  sorted: readonly GateView[];
  approveAll(gateIds: Iterable<number>): Promise<number>;
}

/** A low-risk gate a batch can approve, on this machine (`host` null) or a host. */
export interface Batchable {
  key: string;
  host: string | null;
  id: number;
  inbox: BatchInbox;
}

export function batchKey(host: string | null, id: number): string {
  return `${host ?? ""}#${id}`;
}

/** Every batchable gate: this machine's first, then each host's. */
export function batchables(local: BatchInbox, hosts: readonly { host: string; gates: BatchInbox }[]): Batchable[] {
  const of = (host: string | null, inbox: BatchInbox): Batchable[] =>
    inbox.sorted.filter((g) => batchOption(g) !== null).map((g) => ({ key: batchKey(host, g.id), host, id: g.id, inbox }));
  return [...of(null, local), ...hosts.flatMap((h) => of(h.host, h.gates))];
}

/** Approves `items`, each engine its own; how many were approved. */
export async function approveBatch(items: readonly Batchable[]): Promise<number> {
  const byInbox = new Map<BatchInbox, number[]>();
  for (const item of items) byInbox.set(item.inbox, [...(byInbox.get(item.inbox) ?? []), item.id]);
  let ok = 0;
  for (const [inbox, ids] of byInbox) ok += await inbox.approveAll(ids);
  return ok;
}

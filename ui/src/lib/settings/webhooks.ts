// Webhooks in Settings: the words for what the engine sends about them.
// The engine decides everything (which URLs it takes, which kinds a hook
// gets, when a delivery is tried again); this only says it.
import type { WebhookAttempt, WebhookDelivery, WebhookEvent } from "../types";
import { NOTIFICATION_KINDS } from "./validate";

/** Every event a hook can subscribe to, in words: a Record, so a kind the
 * engine adds fails the type check until it has a label here. */
const EVENT_LABELS: Record<Exclude<WebhookEvent, "test">, string> = {
  ...(Object.fromEntries(NOTIFICATION_KINDS.map((k) => [k.kind, k.label])) as Record<
    (typeof NOTIFICATION_KINDS)[number]["kind"],
    string
  >),
  run_finished: "A run finished (merged, rejected, aborted, failed, interrupted or ended)",
};

export const WEBHOOK_EVENTS: readonly { kind: Exclude<WebhookEvent, "test">; label: string }[] = (
  Object.entries(EVENT_LABELS) as [Exclude<WebhookEvent, "test">, string][]
).map(([kind, label]) => ({ kind, label }));

/** What a disabled hook's row says. */
export const DISABLED_HINT = "off: gets nothing until turned on (what was pending is not sent)";

/** The events a hook gets, in short: "every kind" when it gets them all. */
export function eventsSummary(events: readonly WebhookEvent[]): string {
  if (WEBHOOK_EVENTS.every((e) => events.includes(e.kind))) return "every kind";
  return events.join(", ");
}

/** `list` with `kind` switched on or off. */
export function withEvent<K extends WebhookEvent>(list: readonly K[], kind: K, on: boolean): K[] {
  const rest = list.filter((k) => k !== kind);
  return on ? [...rest, kind] : rest;
}

/** What one attempt got: "HTTP 200", "HTTP 500: the receiver answered 500",
 * or the error that kept the receiver from answering. */
export function attemptAnswer(a: WebhookAttempt): string {
  if (a.status_code !== null && a.error === null) return `HTTP ${a.status_code}`;
  if (a.status_code !== null) return `HTTP ${a.status_code}: ${a.error}`;
  return a.error ?? "no answer";
}

/** Where a delivery stands, in words. */
export function deliveryState(d: WebhookDelivery, now: number): string {
  switch (d.status) {
    case "delivered":
      return "delivered";
    case "failed":
      return d.note ?? "failed";
    case "pending":
      if (d.next_at !== null && d.next_at > now) return `pending: tried again in ${Math.ceil((d.next_at - now) / 1000)} s`;
      return "pending";
  }
}

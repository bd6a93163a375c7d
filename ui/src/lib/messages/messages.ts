// Agent-to-agent messages, hub and spoke: an agent writes to the supervisor,
// the user or everyone (a broadcast), and to a run only as a reply (matched
// by its correlation id). Pure helpers behind the messages view and the run
// page: who a message is for, in words, which run it concerns, folding a
// pushed message into a list, and what a reply is addressed to. Message
// bodies are untrusted agent text: shown as text only.
import type { EngineEvent, MessageTo, MessageView } from "../types";

/** The message an event carries, when it is a `message_posted`. */
export function postedMessage(e: EngineEvent): MessageView | null {
  return e.type === "message_posted" ? e.message : null;
}

/** Who a message is addressed to, in words. */
export function targetLabel(to: MessageTo): string {
  switch (to.to) {
    case "supervisor":
      return "the supervisor";
    case "user":
      return "you";
    case "broadcast":
      return "everyone";
    case "run":
      return `run ${to.run}`;
  }
}

/** Who wrote it, in words: the user, the supervisor, or the agent of a run. */
export function senderLabel(m: MessageView): string {
  if (m.from_run !== null) return `run ${m.from_run} (${m.from})`;
  if (m.from.startsWith("user:")) return "you";
  return m.from;
}

/** True when the message concerns `run`, as the engine's list of a run's
 * messages counts it: sent by it, addressed to it, or a delivered broadcast. */
export function concernsRun(m: MessageView, run: number): boolean {
  return m.from_run === run || (m.to.to === "run" && m.to.run === run) || (m.to.to === "broadcast" && m.status === "delivered");
}

/** Where a reply to `m` goes and the correlation id it carries, or null
 * when it cannot be answered from here (a message the user wrote, or one
 * no run sent). The reply goes back to the run that wrote it, in the same
 * conversation: its correlation id, else `msg-<id>` of the message itself
 * (what the agent reads back with the reply). */
export function replyTo(m: MessageView): { to: MessageTo; correlationId: string } | null {
  if (m.from_run === null) return null;
  return { to: { to: "run", run: m.from_run }, correlationId: m.correlation_id ?? `msg-${m.id}` };
}

/** What the compose box may address (the hub's targets the user can pick). */
export type ComposeTarget = { kind: "broadcast" } | { kind: "run"; run: number };

export function composeTo(t: ComposeTarget): MessageTo {
  return t.kind === "broadcast" ? { to: "broadcast" } : { to: "run", run: t.run };
}

export interface Counts {
  total: number;
  blocked: number;
}

export function countMessages(list: readonly MessageView[]): Counts {
  let blocked = 0;
  for (const m of list) if (m.status === "blocked") blocked++;
  return { total: list.length, blocked };
}

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
    case "workspace":
      return `every run of workspace ${to.workspace}`;
    case "task":
      return `every run of task ${to.task}`;
  }
}

/** Who wrote it, in words: the user, the supervisor, or the agent of a run. */
export function senderLabel(m: MessageView): string {
  if (m.from_run !== null) return `run ${m.from_run} (${m.from})`;
  if (m.from.startsWith("user:")) return "you";
  return m.from;
}

/** Where a run is: what a broadcast scoped to a workspace or a task reaches. */
export interface RunScope {
  workspace: string;
  task: number;
}

/** True when the message concerns `run`, as the engine's list of a run's
 * messages counts it: sent by it, addressed to it, or a delivered broadcast
 * (to everyone, or to the run's workspace or task when `scope` says where
 * the run is). */
export function concernsRun(m: MessageView, run: number, scope?: RunScope): boolean {
  if (m.from_run === run || (m.to.to === "run" && m.to.run === run)) return true;
  if (m.status !== "delivered") return false;
  switch (m.to.to) {
    case "broadcast":
      return true;
    case "workspace":
      return scope !== undefined && scope.workspace === m.to.workspace;
    case "task":
      return scope !== undefined && scope.task === m.to.task;
    default:
      return false;
  }
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

/** What the compose box may address (the hub's targets the user can pick):
 * everyone, every run of a workspace or of a task, or one run. */
export type ComposeTarget =
  | { kind: "broadcast" }
  | { kind: "workspace"; workspace: string }
  | { kind: "task"; task: number }
  | { kind: "run"; run: number };

export function composeTo(t: ComposeTarget): MessageTo {
  switch (t.kind) {
    case "broadcast":
      return { to: "broadcast" };
    case "workspace":
      return { to: "workspace", workspace: t.workspace };
    case "task":
      return { to: "task", task: t.task };
    case "run":
      return { to: "run", run: t.run };
  }
}

/** The compose box's choice, as its select's value says it
 * (`broadcast`, `workspace:NAME`, `task:N`, or a run's id). */
export function composeTarget(value: string): ComposeTarget {
  if (value === "broadcast") return { kind: "broadcast" };
  if (value.startsWith("workspace:")) return { kind: "workspace", workspace: value.slice("workspace:".length) };
  if (value.startsWith("task:")) return { kind: "task", task: Number(value.slice("task:".length)) };
  return { kind: "run", run: Number(value) };
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

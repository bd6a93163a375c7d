// How the inbox orders and classifies what waits for the user, and which
// gates may be approved in a batch.
import type { AskKind, GateKind, GateView, StepReviewChoice, ToolCallChoice } from "../types";

/** The three kinds of ask (PRODUCT.md, unified inbox): blocking (the agent
 * is paused until answered), question (it proceeds on its own: a default, an
 * expiry, an auto-proceed) and info (never waits). The engine decides which
 * (core's `ask_kind`) and ships it with the gate; the window only reads it. */
export type { AskKind } from "../types";

export function askKind(g: GateView): AskKind {
  return g.ask_kind;
}

export const ASK_LABELS: Record<AskKind, string> = {
  blocking: "Blocking",
  question: "Question",
  info: "Info",
};

/** What the agent is waiting for, in words. */
export const KIND_LABELS: Record<GateKind, string> = {
  plan: "Plan",
  tool_call: "Tool call",
  step_review: "Step review",
  supervisor_pause: "Supervisor pause",
  deviation: "Deviation",
  merge_review: "Review",
  question: "Questions",
};

const RANK: Record<AskKind, number> = { blocking: 0, question: 1, info: 2 };

/** Blocking first, then newest first. */
export function sortGates(gates: GateView[]): GateView[] {
  return [...gates].sort((a, b) => RANK[askKind(a)] - RANK[askKind(b)] || b.opened_at - a.opened_at || b.id - a.id);
}

/** The option a batch approval picks for `g`, or null when `g` must be
 * decided on its own.
 *
 * Batchable (low risk, and nothing to read beyond the title):
 * - `step_review`: "proceed" (the step already passed its checks; the
 *   confidence model only asked for a glance);
 * - `tool_call` that is not always-gated: "yes" (once: a batch never adds an
 *   "always" rule).
 *
 * Never batchable: info items (nothing to approve: read, reply or
 * dismiss), plans (the point is to read them), questions (they need
 * answers), deviations (retry/replan/stop is a judgement), supervisor pauses
 * (the supervisor asked for a human), merge reviews (the diff deserves a
 * look), always-gated tool calls (destructive by definition) and gates
 * whose payload could not be read. An option
 * that needs context is never picked. */
export function batchOption(g: GateView): string | null {
  if (g.status !== "pending") return null;
  // An info item is read and replied to (or dismissed), never approved.
  if (askKind(g) === "info") return null;
  // A payload an older version wrote that could not be read: look at it.
  if (g.unreadable_payload !== undefined) return null;
  let wanted: StepReviewChoice | ToolCallChoice;
  if (g.kind === "step_review") wanted = "proceed" satisfies StepReviewChoice;
  else if (g.kind === "tool_call") {
    if (g.payload.always_gated !== null) return null;
    wanted = "yes" satisfies ToolCallChoice;
  } else return null;
  const opt = g.options.find((o) => o.id === wanted);
  return opt && !opt.requires_context ? opt.id : null;
}

/** The label of an option id on a gate (the id itself if not offered). */
export function optionLabel(g: GateView, id: string | null): string {
  if (id === null) return "";
  return g.options.find((o) => o.id === id)?.label ?? id;
}

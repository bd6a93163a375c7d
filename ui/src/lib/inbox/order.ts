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
 * decided on its own: the engine's (core's `batch_choice`, shipped in
 * `GateView.batch_option`), never worked out here. */
export function batchOption(g: GateView): string | null {
  return g.status === "pending" ? (g.batch_option ?? null) : null;
}

/** The label of an option id on a gate (the id itself if not offered). */
export function optionLabel(g: GateView, id: string | null): string {
  if (id === null) return "";
  return g.options.find((o) => o.id === id)?.label ?? id;
}

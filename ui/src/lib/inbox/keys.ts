// The inbox's answer keys: y / a / n on a focused tool-call card answer it
// yes / always / no (n opens the reason box first). What a key may pick is
// what the gate offers: a destructive call offers no "always", so `a` does
// nothing there. Keys typed into a text field are the user's text.
import type { GateView } from "../types";

export type GateKey = { choice: "yes" | "always"; reason: false } | { choice: "no"; reason: true };

const KEYS: Record<string, GateKey> = {
  y: { choice: "yes", reason: false },
  a: { choice: "always", reason: false },
  n: { choice: "no", reason: true },
};

/** The answer key `e` stands for on `gate`, or null. */
export function gateKey(
  e: { key: string; ctrlKey?: boolean; metaKey?: boolean; altKey?: boolean; inField?: boolean },
  gate: GateView,
): GateKey | null {
  if (e.ctrlKey || e.metaKey || e.altKey || e.inField) return null;
  if (gate.kind !== "tool_call" || gate.status !== "pending" || gate.ask_kind === "info") return null;
  const k = KEYS[e.key];
  if (!k) return null;
  return gate.options.some((o) => o.id === k.choice) ? k : null;
}

/** Whether a key press came from a place the user types into. */
export function typedIntoField(target: EventTarget | null): boolean {
  const t = target as HTMLElement | null;
  const tag = t?.tagName ?? "";
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || Boolean(t?.isContentEditable);
}

/** The inbox's keys, for the `?` help. */
export const INBOX_KEYS: readonly [string[], string][] = [
  [["j", "k"], "Next / previous card"],
  [["y"], "Yes: allow this tool call once"],
  [["a"], "Always: allow it for the rest of this run (when offered)"],
  [["n"], "No: opens the reason box; Enter sends, Esc cancels"],
  [["?"], "Show or hide this help"],
];

// Pure functions behind the fleet dashboard: labels, ordering, counts, and
// folding pushed events into the row list.
import type { EngineEvent, ReleaseReason, RunState, RunView, StateName } from "../types";

export const STATE_ORDER: readonly StateName[] = [
  "pending_review",
  "running",
  "retry_queued",
  "claimed",
  "queued",
  "released",
];

const STATE_LABELS: Record<StateName, string> = {
  queued: "queued",
  claimed: "claimed",
  running: "running",
  retry_queued: "retry queued",
  pending_review: "pending review",
  released: "released",
};

const REASON_LABELS: Record<ReleaseReason, string> = {
  merged: "merged",
  human_rejected: "rejected",
  aborted_by_user: "aborted",
  plan_rejected: "plan rejected",
  failed: "failed",
  interrupted: "interrupted",
  supervisor_rejected: "rejected by supervisor",
};

export function stateLabel(s: RunState): string {
  return s.state === "released" ? `released · ${REASON_LABELS[s.reason]}` : STATE_LABELS[s.state];
}

/** A colour family for the state pill. */
export function stateTone(s: RunState): "attention" | "active" | "idle" | "good" | "bad" | "muted" {
  switch (s.state) {
    case "pending_review":
      return "attention";
    case "running":
    case "claimed":
      return "active";
    case "queued":
    case "retry_queued":
      return "idle";
    case "released":
      switch (s.reason) {
        case "merged":
          return "good";
        case "failed":
        case "interrupted":
          return "bad";
        case "human_rejected":
        case "aborted_by_user":
        case "plan_rejected":
        case "supervisor_rejected":
          return "muted";
      }
  }
}

/** "42s", "3m", "2h", "4d". */
export function formatAge(since: number, now: number): string {
  const s = Math.max(0, Math.floor((now - since) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** Needs-you first (oldest wait first), then by state, then most recent change. */
export function sortRuns(runs: RunView[]): RunView[] {
  return [...runs].sort((a, b) => {
    if (a.needs_you !== b.needs_you) return a.needs_you ? -1 : 1;
    if (a.needs_you) return a.state_since - b.state_since || a.id - b.id;
    const sa = STATE_ORDER.indexOf(a.state.state);
    const sb = STATE_ORDER.indexOf(b.state.state);
    return sa - sb || b.state_since - a.state_since || a.id - b.id;
  });
}

export type Counts = Record<StateName, number> & { needs_you: number };

export function countRuns(runs: Iterable<RunView>): Counts {
  const c: Counts = { queued: 0, claimed: 0, running: 0, retry_queued: 0, pending_review: 0, released: 0, needs_you: 0 };
  for (const r of runs) {
    c[r.state.state] += 1;
    if (r.needs_you) c.needs_you += 1;
  }
  return c;
}

/** Folds one pushed event into the rows (by id). Returns the same map when
 * nothing changed, so callers can skip a re-render. */
export function applyEvent(rows: Map<number, RunView>, e: EngineEvent): Map<number, RunView> {
  switch (e.type) {
    case "run_changed": {
      const next = new Map(rows);
      next.set(e.run.id, e.run);
      return next;
    }
    case "gate_opened":
    case "gate_decided":
    case "run_activity":
    case "orchestration_aborted":
      // The row itself arrives as the run_changed of the same commit.
      return rows;
    default:
      // An event this build does not know (a newer engine): keep the rows.
      return rows;
  }
}

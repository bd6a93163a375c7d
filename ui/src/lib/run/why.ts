// The run page's "Why?": which pushed events change a run's story (so the
// drawer reloads on them, never on a timer), and the line summing up what
// decided things on the run. Pure.
import type { EngineEvent } from "../types";
import { kindCounts, type StoryEntry } from "../inbox/story";

/** Timeline entries that never come with a signed record (what the agent
 * says, thinks, reads or calls, its log): the drawer does not reload on them,
 * however fast an agent streams. */
const CHATTER: ReadonlySet<string> = new Set(["message", "thought", "tool_call", "plan", "file_read", "log"]);

/** True when `e` may have added a signed record to run `runId`'s story: its
 * state changed, one of its gates opened or was decided, or something
 * happened on its timeline (a rule's allow or denial, a step verdict). */
export function touchesRunStory(e: EngineEvent, runId: number): boolean {
  switch (e.type) {
    case "run_changed":
      return e.run.id === runId;
    case "gate_opened":
    case "gate_decided":
    case "orchestration_aborted":
      return e.run_id === runId;
    case "run_activity":
      return e.activity.run_id === runId && !CHATTER.has(e.activity.kind);
    default:
      return false;
  }
}

const PLURAL: Record<string, string> = {
  "Step verdict": "Step verdicts",
  "Rule allowed": "Rules allowed",
  "Rule denied": "Rules denied",
  "Supervisor vote": "Supervisor votes",
  "Timer fired": "Timers fired",
  Retry: "Retries",
  "Human decision": "Human decisions",
};

/** "2 Step verdicts · 1 Rule allowed": what decided things on the run, by
 * kind; "Nothing decided yet" when no record decided anything. */
export function decidedLine(entries: StoryEntry[]): string {
  const counts = kindCounts(entries);
  if (counts.length === 0) return "Nothing decided yet";
  return counts.map((c) => `${c.count} ${c.count === 1 ? c.label : (PLURAL[c.label] ?? c.label)}`).join(" · ");
}

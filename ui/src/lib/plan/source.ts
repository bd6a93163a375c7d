// Where a proposed plan came from (PlanProposal.source), in words. Pure.
import type { PlanSource } from "../types";

const SOURCES: readonly PlanSource[] = ["block", "agent_mode", "progress_list", "prose", "skipped", "requested"];

/** The source field of a payload, or null when it is not one we know. */
export function planSourceOf(v: unknown): PlanSource | null {
  return typeof v === "string" && (SOURCES as readonly string[]).includes(v) ? (v as PlanSource) : null;
}

/** The agents whose own plan mode has a name people know. */
const NAMED: Record<string, string> = { claude: "Claude", codex: "Codex", gemini: "Gemini" };

/** "from Claude's plan mode", "from its message", ... `agent` is the run's
 * agent profile name, when known. */
export function planSourceText(source: PlanSource, agent: string | null = null): string {
  switch (source) {
    case "agent_mode": {
      const name = agent === null ? undefined : NAMED[agent.toLowerCase()];
      return name ? `from ${name}'s plan mode` : "from the agent's plan mode";
    }
    case "block":
      return "from the plan block it wrote";
    case "progress_list":
      return "from its progress list";
    case "prose":
      return "from its message";
    case "skipped":
      return "no plan: planning was skipped";
    case "requested":
      return "asked for by the agent";
  }
}

// Agent profiles (AgentInfo) in words, for the Settings page. Pure.
import type { AgentInfo, PlanStrategy } from "../types";

/** How runs of a profile plan, in words. */
export function planStrategyText(plan: PlanStrategy): string {
  switch (plan) {
    case "auto":
      return "in its own plan mode when it has one, else by a planning prompt";
    case "mode":
      return "in its own plan mode";
    case "prompt":
      return "by a planning prompt in plain words (read-only)";
    case "skip":
      return "no planning: the task is one step";
  }
}

/** Ready when the engine says it needs nothing (a missing command is one of
 * its needs): the window does not judge for itself. */
export function agentReady(a: AgentInfo): boolean {
  return a.needs.length === 0;
}

/** Ready ones first, then by name. */
export function sortAgents(list: readonly AgentInfo[]): AgentInfo[] {
  return [...list].sort((a, b) => Number(agentReady(b)) - Number(agentReady(a)) || a.name.localeCompare(b.name));
}

// Short human descriptions of settings, for "what applies here" lines.
import type { EvaluatorConfig, PolicyStatus, SupervisorPolicy } from "../types";

export function describeEvaluator(e: EvaluatorConfig): string {
  switch (e.type) {
    case "rules":
      return "built-in rules";
    case "command":
      return `command ${[e.command, ...e.args].join(" ")}`;
    case "openai":
      return `${e.model} at ${e.base_url}${e.api_key_env ? ` (key in $${e.api_key_env})` : ""}`;
  }
}

/** One line: on/off, autonomy, per-kind overrides, evaluator. */
export function describePolicy(p: SupervisorPolicy): string {
  if (!p.enabled) return "off";
  const kinds = Object.entries(p.gate_authority).map(([k, a]) => `${k} ${a}`);
  return [`on, ${p.autonomy}`, ...kinds, describeEvaluator(p.evaluator)].join(" · ");
}

/** Where the policy in effect at a scope comes from: set there, inherited
 * from the workspace (a task without an override), or the defaults. */
export function policySource(s: PolicyStatus): "own" | "workspace" | "default" {
  if (s.own) return "own";
  return s.scope.task !== null ? "workspace" : "default";
}

// Agent profiles (AgentInfo) in words, for the Settings page. Pure.
import type { AgentInfo, Containment, PlanStrategy } from "../types";

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

/** What this machine does to contain runs, in words; `ok` is false when it
 * cannot (the window must say so plainly, with the fix). */
export function containmentText(c: Containment): { ok: boolean; text: string } {
  const cgroups =
    c.cgroups.state === "available"
      ? `each run in its own cgroup (cgroup v2 at ${c.cgroups.root})`
      : `no cgroup per run (${c.cgroups.why})`;
  if (c.sandbox.state === "available") {
    const layers = [`a bubblewrap sandbox around every agent and sensor`, cgroups];
    if (c.scopes.state === "available") layers.push(`no reach to the desktop's sockets or your processes (Landlock ABI ${c.scopes.abi})`);
    if (c.limits.state === "available") layers.push(`limits on processes, memory and CPU per run (${c.limits.how})`);
    if (c.private_network.state === "available") layers.push("a network of its own for every run (slirp4netns)");
    const gaps = containmentGaps(c);
    return {
      ok: true,
      text: `Runs are contained: ${layers.join(", ")}.` + (gaps.length ? ` Missing here: ${gaps.join(" ")}` : ""),
    };
  }
  return {
    ok: false,
    text:
      `This machine cannot contain runs: ${c.sandbox.why}. Fix: ${c.sandbox.fix}. ` +
      `Until then an agent starts only if its profile sets allow_uncontained = true, and then it can reach ` +
      `everything you can, Overseer's key and socket included.`,
  };
}

/** What a layer besides the sandbox cannot do on this machine, and what that
 * leaves open, one sentence each (empty: every layer holds). */
export function containmentGaps(c: Containment): string[] {
  const out: string[] = [];
  if (c.scopes.state === "missing") out.push(`No Landlock scopes (${c.scopes.why}): ${c.scopes.leaves_open}.`);
  if (c.limits.state === "missing") out.push(`No resource limits per run (${c.limits.why}): ${c.limits.leaves_open}.`);
  if (c.private_network.state === "missing")
    out.push(`No private networks (${c.private_network.why}): ${c.private_network.leaves_open}.`);
  return out;
}

/** How one profile's runs are contained, in words. */
export function agentContainmentText(a: AgentInfo): string {
  if (a.contained) {
    switch (a.network) {
      case "private":
        return "sandboxed (bubblewrap)";
      case "none":
        return "sandboxed (bubblewrap), no network";
      case "host":
        return "sandboxed (bubblewrap), this machine's network (its loopback services in reach)";
    }
  }
  if (a.needs.some((n) => n.startsWith("a sandbox"))) return "cannot start: this machine cannot contain it";
  return "NOT CONTAINED (allow_uncontained = true)";
}

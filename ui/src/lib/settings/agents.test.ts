import { describe, expect, it } from "vitest";
import type { AgentInfo, Containment } from "../types";
import { agentContainmentText, agentReady, containmentText, planStrategyText, sortAgents } from "./agents";

const contained: Containment = {
  sandbox: { state: "available", bwrap: "/usr/bin/bwrap" },
  cgroups: { state: "available", root: "/sys/fs/cgroup/unified" },
  scopes: { state: "available", abi: 7 },
  limits: { state: "available", controllers: ["pids", "memory", "cpu"], how: "cgroup v2" },
  private_network: { state: "available", helper: "/usr/bin/slirp4netns" },
};
const uncontainable: Containment = {
  sandbox: { state: "missing", why: "bubblewrap (bwrap) is not installed", fix: "apt-get install bubblewrap" },
  cgroups: { state: "missing", why: "no cgroup v2 mount" },
  scopes: { state: "missing", why: "no Landlock", leaves_open: "abstract sockets" },
  limits: { state: "missing", why: "no cgroup per run", leaves_open: "fork storms" },
  private_network: { state: "missing", why: "slirp4netns is not installed", leaves_open: "loopback" },
};

const info = (name: string, over: Partial<AgentInfo> = {}): AgentInfo => ({
  name,
  command: name,
  found: `/usr/bin/${name}`,
  mode: "default",
  mode_effect: "asks before every edit and command",
  plan: "auto",
  needs: [],
  from_file: false,
  containment: contained,
  contained: true,
  network: "private",
  ...over,
});

describe("agent profiles in words", () => {
  it("is ready only when the engine says it needs nothing", () => {
    expect(agentReady(info("demo"))).toBe(true);
    expect(agentReady(info("codex", { found: undefined, needs: ["codex-acp on PATH"] }))).toBe(false);
    expect(agentReady(info("claude", { needs: ["an API key"] }))).toBe(false);
    // A command not found is always one of the engine's needs.
    expect(agentReady(info("gemini", { found: undefined, needs: ["`gemini` on PATH (not found)"] }))).toBe(false);
  });

  it("lists ready agents first", () => {
    const list = [info("codex", { found: undefined, needs: ["`codex-acp` on PATH (not found)"] }), info("zed"), info("claude")];
    expect(sortAgents(list).map((a) => a.name)).toEqual(["claude", "zed", "codex"]);
  });

  it("says each planning strategy", () => {
    expect(planStrategyText("skip")).toMatch(/no planning/);
    expect(planStrategyText("mode")).toMatch(/plan mode/);
    expect(planStrategyText("prompt")).toMatch(/prompt/);
    expect(planStrategyText("auto")).toMatch(/plan mode.*else/);
  });

  it("says plainly when the machine cannot contain, with the fix", () => {
    expect(containmentText(contained)).toEqual({
      ok: true,
      text: expect.stringMatching(/contained: a bubblewrap sandbox.*cgroup v2 at \/sys\/fs\/cgroup\/unified/),
    });
    expect(containmentText(contained).text).not.toMatch(/Missing here/);
    const gaps = containmentText({
      ...contained,
      scopes: uncontainable.scopes,
      limits: uncontainable.limits,
      private_network: uncontainable.private_network,
    });
    expect(gaps.ok).toBe(true);
    expect(gaps.text).toMatch(/Missing here: No Landlock scopes \(no Landlock\): abstract sockets\. No resource limits per run \(no cgroup per run\): fork storms\. No private networks \(slirp4netns is not installed\): loopback\./);
    const bad = containmentText(uncontainable);
    expect(bad.ok).toBe(false);
    expect(bad.text).toMatch(/cannot contain runs: bubblewrap \(bwrap\) is not installed\. Fix: apt-get install bubblewrap/);
    expect(bad.text).toMatch(/allow_uncontained = true/);
  });

  it("says how each profile's runs are contained", () => {
    expect(agentContainmentText(info("a"))).toBe("sandboxed (bubblewrap)");
    expect(agentContainmentText(info("a", { network: "none" }))).toBe("sandboxed (bubblewrap), no network");
    expect(agentContainmentText(info("a", { network: "host" }))).toBe(
      "sandboxed (bubblewrap), this machine's network (its loopback services in reach)",
    );
    expect(
      agentContainmentText(info("a", { containment: uncontainable, contained: false, needs: ["a sandbox: ..."] })),
    ).toMatch(/cannot start/);
    expect(agentContainmentText(info("a", { containment: uncontainable, contained: false }))).toMatch(/NOT CONTAINED/);
  });
});

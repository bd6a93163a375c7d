import { describe, expect, it } from "vitest";
import type { AgentInfo } from "../types";
import { agentReady, planStrategyText, sortAgents } from "./agents";

const info = (name: string, over: Partial<AgentInfo> = {}): AgentInfo => ({
  name,
  command: name,
  found: `/usr/bin/${name}`,
  mode: "default",
  mode_effect: "asks before every edit and command",
  plan: "auto",
  needs: [],
  from_file: false,
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
});

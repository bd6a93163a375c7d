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
  it("is ready only when found and needing nothing", () => {
    expect(agentReady(info("demo"))).toBe(true);
    expect(agentReady(info("codex", { found: undefined, needs: ["codex-acp on PATH"] }))).toBe(false);
    expect(agentReady(info("claude", { needs: ["an API key"] }))).toBe(false);
    // As the engine sends it over IPC: null, not absent.
    expect(agentReady(info("gemini", { found: null as unknown as undefined }))).toBe(false);
  });

  it("lists ready agents first", () => {
    const list = [info("codex", { found: undefined }), info("zed"), info("claude")];
    expect(sortAgents(list).map((a) => a.name)).toEqual(["claude", "zed", "codex"]);
  });

  it("says each planning strategy", () => {
    expect(planStrategyText("skip")).toMatch(/no planning/);
    expect(planStrategyText("mode")).toMatch(/plan mode/);
    expect(planStrategyText("prompt")).toMatch(/prompt/);
    expect(planStrategyText("auto")).toMatch(/plan mode.*else/);
  });
});

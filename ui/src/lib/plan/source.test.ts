import { describe, expect, it } from "vitest";
import { planSourceOf, planSourceText } from "./source";

describe("where a plan came from", () => {
  it("names Claude's plan mode, and any other agent's", () => {
    expect(planSourceText("agent_mode", "claude")).toBe("from Claude's plan mode");
    expect(planSourceText("agent_mode", "gemini")).toBe("from Gemini's plan mode");
    expect(planSourceText("agent_mode", "demo")).toBe("from the agent's plan mode");
    expect(planSourceText("agent_mode")).toBe("from the agent's plan mode");
  });

  it("says the other sources in words", () => {
    expect(planSourceText("prose")).toBe("from its message");
    expect(planSourceText("progress_list")).toBe("from its progress list");
    expect(planSourceText("block")).toBe("from the plan block it wrote");
    expect(planSourceText("skipped")).toBe("no plan: planning was skipped");
  });

  it("reads only the sources it knows", () => {
    expect(planSourceOf("prose")).toBe("prose");
    expect(planSourceOf("<b>x</b>")).toBeNull();
    expect(planSourceOf(3)).toBeNull();
  });
});

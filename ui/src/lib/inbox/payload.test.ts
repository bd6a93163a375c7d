import { describe, expect, it } from "vitest";
import { deviationOf, infoOf, planOf, stepOf, toolCallOf } from "./payload";

describe("gate payloads", () => {
  it("reads a plan: goal, steps with their agent role, files, risks", () => {
    const p = planOf({ goal: "Split billing", steps: [{ title: "Extract invoices", agent: "coder" }, { title: "Extract payments" }, "Tidy up", 4], files: ["a.ts"], risks: ["cycles", 3] });
    expect(p).toEqual({
      goal: "Split billing",
      steps: [
        { title: "Extract invoices", agent: "coder" },
        { title: "Extract payments", agent: null },
        { title: "Tidy up", agent: null },
      ],
      files: ["a.ts"],
      risks: ["cycles"],
      markdown: null,
      source: null,
    });
    expect(planOf(null)).toEqual({ goal: null, steps: [], files: [], risks: [], markdown: null, source: null });
    // The agent's own words and where the plan came from; an unknown source
    // reads as absent.
    expect(planOf({ goal: "g", markdown: "# Plan\n<img src=x>", source: "agent_mode" })).toMatchObject({ markdown: "# Plan\n<img src=x>", source: "agent_mode" });
    expect(planOf({ goal: "g", markdown: "  ", source: "<b>" })).toMatchObject({ markdown: null, source: null });
  });

  it("reads a tool call: the exact command, the paths, why it asks", () => {
    const t = toolCallOf({
      tool_call: { id: "c1", title: "Run rm -rf build/", kind: "execute", raw_input: { command: "rm -rf build/" } },
      request: { tool: "Bash", kind: "execute", command: "rm -rf build/", paths: ["/w/build"] },
      reason: "destructive shell commands always ask",
      rule: null,
      always_gated: "destructive_shell",
      always_gated_why: "a destructive shell command",
    });
    expect(t).toMatchObject({ kind: "execute", tool: "Bash", command: "rm -rf build/", paths: ["/w/build"], alwaysGated: "destructive_shell", alwaysGatedWhy: "a destructive shell command", rule: null, content: null });
    const edit = toolCallOf({ tool_call: { raw_input: { path: "a.txt", content: "hi\n" } }, request: { kind: "edit", paths: ["a.txt"] }, always_gated: null });
    expect(edit).toMatchObject({ kind: "edit", command: null, paths: ["a.txt"], content: "hi\n", alwaysGated: null });
  });

  it("reads a deviation: error and attempts", () => {
    expect(deviationOf({ cause: "turn_failed", error: "step 2 failed", attempts: 3, max_attempts: 10 })).toEqual({ cause: "turn_failed", mode: null, error: "step 2 failed", attempts: 3, maxAttempts: 10 });
    // The agent switched itself to a mode that acts unasked.
    expect(deviationOf({ cause: "mode_breach", error: "mode `auto` acts unasked", mode: "auto", attempts: 0, max_attempts: 10 })).toMatchObject({ cause: "mode_breach", mode: "auto", error: "mode `auto` acts unasked" });
  });

  it("reads a step review, and the step nested in a supervisor pause", () => {
    const record = { step: 2, confidence: 0.64, explain: "one retry", drift: ["x.toml"], destructive: true, sensors: [{ command: "npm test", passed: false, exit_code: 1 }], retries: 1, summary: "did it" };
    expect(stepOf(record)).toMatchObject({ step: 2, confidence: 0.64, explain: "one retry", drift: ["x.toml"], destructive: true, retries: 1, summary: "did it", sensors: [{ command: "npm test", passed: false, exitCode: 1 }] });
    expect(stepOf({ rationale: "out of scope", step: record, timeout_seconds: 600 })).toMatchObject({ step: 2, rationale: "out of scope", timeoutSeconds: 600, confidence: 0.64 });
  });
});

describe("external sessions' payloads", () => {
  it("read an info item's message and what raised it", () => {
    expect(infoOf({ message: "Done.", ask_kind: "info", notice: "stop" })).toEqual({ message: "Done.", notice: "stop" });
    expect(infoOf({ message: "Hi", notice: "bogus" })).toEqual({ message: "Hi", notice: null });
    expect(infoOf(null)).toEqual({ message: null, notice: null });
  });

  it("take a hook's tool name when the request has none", () => {
    const t = toolCallOf({ tool_call: { id: "k1", title: "Run `ls`", kind: "execute", raw_input: { command: "ls" }, name: "Bash" }, request: { kind: "execute", command: "ls", paths: [] } });
    expect(t).toMatchObject({ tool: "Bash", command: "ls", kind: "execute" });
  });
});

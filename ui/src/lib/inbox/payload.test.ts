import { describe, expect, it } from "vitest";
import type { GateView } from "../types";
import { deviationOf, infoOf, planOf, stepOf, toolCallOf, unreadableText } from "./payload";
import { stepRecord, toolCallGate } from "../backend/mock";

const base = { id: 1, run_id: 1, status: "pending" as const, title: "t", options: [], opened_at: 0, decision: null, auto_at: null, auto_option: null, authority: null, effected: false, ask_kind: "blocking" as const };

describe("gate payloads", () => {
  it("reads a plan: goal, steps with their agent role, files, risks", () => {
    const p = planOf({ goal: "Split billing", steps: [{ title: "Extract invoices", agent: "coder" }, { title: "Extract payments" }, { title: "  " }], files: ["a.ts"], risks: ["cycles"], source: "block" });
    expect(p).toEqual({
      goal: "Split billing",
      steps: [
        { title: "Extract invoices", agent: "coder" },
        { title: "Extract payments", agent: null },
      ],
      files: ["a.ts"],
      risks: ["cycles"],
      markdown: null,
      source: "block",
    });
    // The agent's own words and where the plan came from; blank words read
    // as absent.
    const plan = { goal: "g", steps: [], files: [], risks: [] };
    expect(planOf({ ...plan, markdown: "# Plan\n<img src=x>", source: "agent_mode" })).toMatchObject({ markdown: "# Plan\n<img src=x>", source: "agent_mode" });
    expect(planOf({ ...plan, markdown: "  ", source: "prose" })).toMatchObject({ goal: "g", markdown: null, source: "prose" });
  });

  it("reads a tool call: the exact command, the paths, why it asks", () => {
    const t = toolCallOf(
      toolCallGate(
        { tool: "Bash", kind: "execute", command: "rm -rf build/", paths: ["/w/build"] },
        {
          tool_call: { id: "c1", title: "Run rm -rf build/", kind: "execute", raw_input: { command: "rm -rf build/" } },
          reason: "destructive shell commands always ask",
          always_gated: "destructive_shell",
          always_gated_why: "a destructive shell command",
          risk: { level: "critical", why: "runs a destructive shell command" },
        },
      ),
    );
    expect(t).toMatchObject({ kind: "execute", tool: "Bash", command: "rm -rf build/", paths: ["/w/build"], alwaysGated: "destructive_shell", alwaysGatedWhy: "a destructive shell command", rule: null, content: null, risk: { level: "critical", why: "runs a destructive shell command" } });
    const edit = toolCallOf(toolCallGate({ tool: "Edit", kind: "edit", paths: ["a.txt"] }, { tool_call: { id: null, title: null, kind: null, raw_input: { path: "a.txt", content: "hi\n" } } }));
    expect(edit).toMatchObject({ kind: "edit", command: null, paths: ["a.txt"], content: "hi\n", alwaysGated: null, risk: null });
  });

  it("reads a deviation: error and attempts", () => {
    expect(deviationOf({ cause: "turn_failed", error: "step 2 failed", attempts: 3, max_attempts: 10 })).toEqual({ cause: "turn_failed", mode: null, error: "step 2 failed", attempts: 3, maxAttempts: 10 });
    // The agent switched itself to a mode that acts unasked.
    expect(deviationOf({ cause: "mode_breach", error: "mode `auto` acts unasked", mode: "auto", attempts: 0, max_attempts: 10 })).toMatchObject({ cause: "mode_breach", mode: "auto", error: "mode `auto` acts unasked" });
    // A failed merge counts no attempts.
    expect(deviationOf({ cause: "merge_failed", error: "conflict" })).toMatchObject({ attempts: null, maxAttempts: null });
  });

  it("reads a step review, and the step nested in a supervisor pause", () => {
    const record = stepRecord({ step: 2, confidence: 0.64, explain: "one retry", drift: ["x.toml"], destructive: true, sensors: [{ command: "npm test", passed: false, exit_code: 1 }], retries: 1, summary: "did it" });
    expect(stepOf({ kind: "step_review", payload: record })).toMatchObject({ step: 2, confidence: 0.64, explain: "one retry", drift: ["x.toml"], destructive: true, retries: 1, summary: "did it", sensors: [{ command: "npm test", passed: false, exitCode: 1 }] });
    expect(stepOf({ kind: "supervisor_pause", payload: { rationale: "out of scope", step: record, timeout_seconds: 600 } })).toMatchObject({ step: 2, rationale: "out of scope", timeoutSeconds: 600, confidence: 0.64 });
    // A session's pause has no step.
    expect(stepOf({ kind: "supervisor_pause", payload: { rationale: "risky", ask_kind: "blocking" } })).toMatchObject({ step: null, rationale: "risky", timeoutSeconds: null, sensors: [] });
  });

  it("shows a payload an older version wrote, as stored, when it did not fit its type", () => {
    const old: GateView = { ...base, kind: "tool_call", payload: toolCallGate({ tool: "", kind: "other" }), unreadable_payload: { tool: "Bash", command: "npm install pg-migrate" } };
    expect(unreadableText(old)).toContain('"command": "npm install pg-migrate"');
    expect(unreadableText({ ...base, kind: "merge_review", payload: {} })).toBeNull();
  });
});

describe("external sessions' payloads", () => {
  it("read an info item's message and what raised it", () => {
    expect(infoOf({ ...base, kind: "question", payload: { message: "Done.", ask_kind: "info", notice: "stop" } })).toEqual({ message: "Done.", notice: "stop" });
    expect(infoOf({ ...base, kind: "question", payload: { message: "Hi" } })).toEqual({ message: "Hi", notice: null });
    expect(infoOf({ ...base, kind: "merge_review", payload: {} })).toEqual({ message: null, notice: null });
  });

  it("take a hook's tool name when the request has none", () => {
    const t = toolCallOf(toolCallGate({ tool: "", kind: "execute", command: "ls" }, { tool_call: { id: "k1", title: "Run `ls`", kind: "execute", raw_input: { command: "ls" }, name: "Bash" } }));
    expect(t).toMatchObject({ tool: "Bash", command: "ls", kind: "execute" });
  });
});

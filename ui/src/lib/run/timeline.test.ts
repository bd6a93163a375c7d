import { describe, expect, it } from "vitest";
import type { Activity, ActivityView, MessageEntry, MessageView, StepRecord, ToolCallEntry } from "../types";
import { clip, describe as describeEntry, foldActivity, latestPlan, latestProposal, withMessages } from "./timeline";

let nextId = 1;
type Payload<K extends Activity["kind"]> = Extract<Activity, { kind: K }>["payload"];
const a = <K extends Activity["kind"]>(kind: K, payload: Payload<K>, at = 1000): ActivityView => ({ id: nextId++, run_id: 1, at, kind, payload }) as ActivityView;
/** A tool call's state as the engine records it: what the agent left out is null. */
const call = (over: Partial<ToolCallEntry> & { id: string }): ToolCallEntry => ({ title: null, kind: null, status: null, raw_input: null, locations: [], ...over });
const step = (over: Partial<StepRecord>): StepRecord => ({
  step: 1, plan: { goal: "g", steps: [], files: [], risks: [], source: "block" }, drift: [], destructive: false, checks_passed: 0, checks_total: 0,
  sensors: [], retries: 0, tool_calls_ok: 0, tool_calls_total: 0, summary: "", ...over,
});

describe("foldActivity", () => {
  it("folds a tool call's updates and its rule decision into one item", () => {
    const items = foldActivity([
      a("tool_call", call({ id: "c1", title: "Edit src/a.ts", kind: "edit", status: "pending", raw_input: {} })),
      a("tool_call", call({ id: "c1", title: "Edit src/a.ts", kind: "edit", status: "pending", raw_input: { path: "src/a.ts" } })),
      a("tool_allowed", { title: "Edit src/a.ts", kind: "edit", text: "Edit(src/**)" }),
      a("tool_call", call({ id: "c1", title: null, status: "in_progress" })),
      a("tool_call", call({ id: "c1", title: null, status: "completed" })),
    ]);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      kind: "tool_call",
      title: "Edit src/a.ts",
      status: "completed",
      decision: "allowed by rule Edit(src/**)",
      tone: "good",
      count: 5,
    });
    expect(items[0]!.output).toContain('"path": "src/a.ts"');
  });

  it("shows a denied call as denied, and a failed one as failed", () => {
    const items = foldActivity([
      a("tool_call", call({ id: "c2", title: "rm -rf build/", status: "pending" })),
      a("tool_denied", { title: "rm -rf build/", kind: "execute", text: "destructive shell (Bash(rm:*))" }),
      a("tool_call", call({ id: "c2", status: "failed" })),
      a("tool_call", call({ id: "c3", title: "Edit x", status: "in_progress" })),
      a("tool_call", call({ id: "c3", status: "failed" })),
    ]);
    expect(items.map((i) => [i.title, i.decision, i.status, i.tone])).toEqual([
      ["rm -rf build/", "denied: destructive shell (Bash(rm:*))", "failed", "bad"],
      ["Edit x", null, "failed", "bad"],
    ]);
  });

  it("matches a decision to a call named only in a later update", () => {
    const items = foldActivity([
      a("tool_call", call({ id: "c9", title: null, kind: "edit", status: "pending" })),
      a("tool_call", call({ id: "c9", title: "Edit README.md", status: "pending" })),
      a("tool_allowed", { title: "Edit README.md", kind: "edit", text: "Edit(**)" }),
    ]);
    expect(items.map((i) => [i.title, i.decision])).toEqual([["Edit README.md", "allowed by rule Edit(**)"]]);
  });

  it("folds thousands of tool calls quickly", () => {
    const many: ActivityView[] = [];
    for (let k = 0; k < 3000; k++) {
      many.push(a("tool_call", call({ id: `m${k}`, title: `Read f${k % 7}`, status: "pending" })));
      many.push(a("tool_allowed", { title: `Read f${k % 7}`, kind: "read", text: "default" }));
      many.push(a("tool_call", call({ id: `m${k}`, status: "completed" })));
    }
    const t0 = performance.now();
    const items = foldActivity(many);
    expect(items).toHaveLength(3000);
    expect(items.every((i) => i.decision === "allowed by rule default" && i.status === "completed")).toBe(true);
    expect(performance.now() - t0).toBeLessThan(500);
  });

  it("keeps a decision with no matching call as its own item", () => {
    const items = foldActivity([a("tool_allowed", { title: "Read README.md", kind: "read", text: "default: reads" })]);
    expect(items[0]).toMatchObject({ kind: "tool_allowed", decision: "allowed by rule default: reads" });
  });

  it("folds runs of plan updates and of file reads, not other kinds", () => {
    const plan = (statuses: string[]) => ({ entries: statuses.map((s, i) => ({ content: `step ${i + 1}`, priority: "medium", status: s })) });
    const items = foldActivity([
      a("plan", plan(["pending", "pending"])),
      a("plan", plan(["in_progress", "pending"])),
      a("file_read", { path: "README.md" }),
      a("file_read", { path: "src/a.ts" }),
      a("message", { text: "one" }),
      a("message", { text: "two" }),
      a("plan", plan(["completed", "in_progress"])),
    ]);
    expect(items.map((i) => [i.kind, i.count, i.title])).toEqual([
      ["plan", 2, "Plan: 0 of 2 done; now: step 1"],
      ["file_read", 2, "Read 2 files"],
      ["message", 1, "The agent says"],
      ["message", 1, "The agent says"],
      ["plan", 1, "Plan: 1 of 2 done; now: step 2"],
    ]);
    expect(items[1]!.text).toBe("README.md\nsrc/a.ts");
  });

  it("keeps keys stable when entries are appended", () => {
    const entries = [a("message", { text: "hi" }), a("tool_call", call({ id: "k", title: "T", status: "pending" }))];
    const before = foldActivity(entries).map((i) => i.key);
    const after = foldActivity([...entries, a("tool_call", call({ id: "k", status: "completed" })), a("error", { text: "x" })]);
    expect(after.slice(0, 2).map((i) => i.key)).toEqual(before);
  });
});

describe("describe", () => {
  it("describes sensors with their verdict and output", () => {
    const pass = describeEntry(a("sensor", { command: "npm test", exit_code: 0, passed: true, output: "ok\n" }));
    expect(pass).toMatchObject({ title: "npm test: passed (exit 0)", tone: "good", output: "ok\n" });
    const fail = describeEntry(a("sensor", { command: "cargo test", exit_code: null, passed: false, output: "timed out after 600 s" }));
    expect(fail).toMatchObject({ title: "cargo test: failed", tone: "bad" });
  });

  it("shows the agent's log as folded output with its line count", () => {
    const log = describeEntry(a("log", { text: "starting\n<b>not bold</b>", lines: 2 }));
    expect(log).toMatchObject({ title: "Agent log (2 lines)", label: "log", output: "starting\n<b>not bold</b>", text: null });
    expect(describeEntry(a("log", { text: "one", lines: 1 })).title).toBe("Agent log (1 line)");
  });

  it("describes steps, verdicts, instructions, deviations and errors", () => {
    expect(describeEntry(a("step_finished", step({ step: 2, confidence: 0.64, explain: "one retry used" })))).toMatchObject({
      title: "Step 2 finished, confidence 0.64",
      text: "one retry used",
      tone: "attention",
    });
    expect(describeEntry(a("step_finished", step({ step: 1, confidence: 0.9, cost: { amount: 0.0123, currency: "USD" } }))).title).toBe(
      "Step 1 finished, confidence 0.90, cost 0.01 USD",
    );
    expect(describeEntry(a("verdict", { verdict: "reorient", text: "off scope", correction: "stay in src/" }))).toMatchObject({
      title: "Supervisor: REORIENT",
      text: "off scope\nCorrection: stay in src/",
    });
    expect(describeEntry(a("user_instruction", { text: "also update docs", by: "user:app" }))).toMatchObject({
      title: "Instruction from user:app",
      text: "also update docs",
    });
    expect(
      describeEntry(a("decided", { gate_id: 4, option: "yes", by: "user:ana", device: { id: 3, name: "Ana's phone" }, text: "Run npm test: 'yes' chosen by user:ana through Ana's phone (device 3)" })),
    ).toMatchObject({ title: "Run npm test: 'yes' chosen by user:ana through Ana's phone (device 3)", tone: "info" });
    expect(describeEntry(a("deviation", { text: "npm test failed", cause: "sensor_failed" })).tone).toBe("bad");
    expect(describeEntry(a("protocol_error", { text: "bad json" }))).toMatchObject({ title: "Protocol error", tone: "bad" });
  });

  it("describes the step turns, modes, sessions and security events", () => {
    expect(describeEntry(a("step_started", { step: 2, text: "Note the change in NOTES.md" }))).toMatchObject({
      label: "step",
      title: "Step 2: Note the change in NOTES.md",
      tone: "info",
    });
    expect(describeEntry(a("mode", { mode: "default", text: "the agent works in mode `default`: it asks" }))).toMatchObject({
      label: "mode",
      title: "Mode: default",
      text: "the agent works in mode `default`: it asks",
    });
    const sec = describeEntry(a("security", { mode: "auto", text: "mode `auto` acts unasked; Overseer stopped the turn" }));
    expect(sec).toMatchObject({ label: "security", tone: "bad", text: "mode `auto` acts unasked; Overseer stopped the turn" });
    expect(sec.title).toMatch(/switched itself to mode “auto”/);
    expect(
      describeEntry(a("session", { text: "the agent started session s1", modes: [{ id: "default", name: "Default", description: null }, { id: "plan", name: "plan", description: null }] })),
    ).toMatchObject({ label: "session", title: "the agent started session s1", text: "Modes it offers: default (Default), plan" });
    expect(describeEntry(a("session", { text: "resumed", modes: [] })).text).toBeNull();
    expect(describeEntry(a("plan_skipped", { text: "no plan gate" }))).toMatchObject({ title: "Planning skipped", text: "no plan gate" });
    expect(describeEntry(a("plan_answer", { text: "answered the agent's exit-plan request" })).title).toBe("answered the agent's exit-plan request");
  });

  it("shows an entry the engine could not read as before, by its own kind and text", () => {
    expect(describeEntry(a("unrecognized", { kind: "brand_new_kind", payload: { x: 1 } }))).toMatchObject({
      kind: "brand_new_kind",
      label: "brand new kind",
      title: "brand new kind",
      output: '{\n  "x": 1\n}',
    });
    // A known kind of an older shape: its text, under its own kind.
    expect(describeEntry(a("unrecognized", { kind: "message", payload: { text: "from an old build", body: 1 } }))).toMatchObject({
      kind: "message",
      title: "from an old build",
      output: null,
    });
    expect(describeEntry(a("unrecognized", { kind: "sensor", payload: null }))).toMatchObject({ title: "sensor", output: null });
    expect(describeEntry(a("unrecognized", { kind: "plan", payload: "nonsense" })).title).toBe("plan");
  });

  it("says a security event in words when it names no mode", () => {
    const sec = describeEntry(a("security", { text: "a process of this run connected to Overseer's socket", pid: 42 }));
    expect(sec).toMatchObject({ title: "Security event", text: "a process of this run connected to Overseer's socket", tone: "bad" });
  });
});

describe("plans", () => {
  it("gives the latest progress plan and the latest proposal", () => {
    const entries = [
      a("plan_proposed", { goal: "Old", steps: [], files: [], risks: [], source: "block" }),
      a("plan", { entries: [{ content: "a", priority: "high", status: "completed" }] }),
      a("plan_proposed", { goal: "Add a greeting", steps: [{ title: "Write it", agent: "demo" }, { title: "Note it" }], files: ["src/greeting.txt"], risks: ["none"], source: "block" }),
      a("plan", { entries: [{ content: "a", priority: "high", status: "completed" }, { content: "b", priority: "low", status: "in_progress" }, { content: "c", priority: "low", status: "weird" }] }),
    ];
    expect(latestPlan(entries)?.map((s) => s.status)).toEqual(["completed", "in_progress", "other"]);
    expect(latestProposal(entries)).toEqual({
      goal: "Add a greeting",
      steps: [
        { title: "Write it", agent: "demo" },
        { title: "Note it", agent: null },
      ],
      files: ["src/greeting.txt"],
      risks: ["none"],
      markdown: null,
      source: "block",
    });
    const words = a("plan_proposed", { goal: "G", steps: [], files: [], risks: [], markdown: "# G\n\n1. do it", source: "prose" });
    expect(latestProposal([...entries, words])).toMatchObject({ markdown: "# G\n\n1. do it", source: "prose" });
    expect(latestPlan([])).toBeNull();
    expect(latestProposal([])).toBeNull();
  });
});

describe("clip", () => {
  it("cuts long text and says how much is hidden", () => {
    expect(clip("abcdef", 4)).toEqual({ text: "abcd", hidden: 2 });
    expect(clip("abc", 4)).toEqual({ text: "abc", hidden: 0 });
  });
});

describe("external sessions and messages in the timeline", () => {
  it("reads each new kind as a sentence, the agent's text kept as text", () => {
    const evil = '<img src=x onerror="alert(1)">';
    const items = foldActivity([
      a("session_started", { text: "Claude Code reached Overseer from /w (session e2e-1)" }),
      a("notice", { text: evil, title: "Needs your attention" }),
      a("turn_ended", { text: "Done with the refactor", title: null }),
      a("user_instruction", { text: "use tabs", by: "user:app" }),
      a("steering_delivered", { text: "use tabs" }),
      a("step_reported", { step: "Extract the parser", status: "done", summary: "moved parse() out", files_touched: ["src/parse.ts"] }),
      a("step_reported", { step: "Run the tests", status: "blocked", summary: "", files_touched: [] }),
      a("gate_withdrawn", { text: "Run `ls`: withdrawn (the asker left)" }),
    ]);
    expect(items.map((i) => [i.kind, i.label, i.title, i.tone])).toEqual([
      ["session_started", "session", "Claude Code reached Overseer from /w (session e2e-1)", "info"],
      ["notice", "notice", "Needs your attention", "info"],
      ["turn_ended", "turn", "The agent finished its turn", "neutral"],
      ["user_instruction", "you", "Instruction from user:app", "info"],
      ["steering_delivered", "steering", "Your steering reached the agent", "info"],
      ["step_reported", "step", "Step: Extract the parser (done)", "good"],
      ["step_reported", "step", "Step: Run the tests (blocked)", "bad"],
      ["gate_withdrawn", "withdrawn", "Run `ls`: withdrawn (the asker left)", "attention"],
    ]);
    expect(items[1]!.text).toBe(evil);
    expect(items[2]!.text).toBe("Done with the refactor");
    expect(items[5]!.text).toBe("moved parse() out\nFiles: src/parse.ts");
    expect(items[6]!.text).toBeNull();
  });

  it("says when the engine restarted and carried the run on", () => {
    const items = foldActivity([
      a("carried_on", { text: "the engine restarted: the run carries on from step 2 of 3, waiting again on gate 7 (step_review)" }),
      a("question_again", { text: "asked again after the restart: gate 9, still pending" }),
    ]);
    expect(items.map((i) => [i.label, i.title, i.tone])).toEqual([
      ["restart", "the engine restarted: the run carries on from step 2 of 3, waiting again on gate 7 (step_review)", "attention"],
      ["asked again", "asked again after the restart: gate 9, still pending", "info"],
    ]);
  });

  it("shows an unattended retry with its attempt, wait and the failure", () => {
    const [r] = foldActivity([a("retry_queued", { text: "retry policy: 1 of 3", attempt: 1, wait_ms: 2000, error: "npm test exited 1" })]);
    expect(r).toMatchObject({ label: "retry", title: "Retry 1 queued (in 2 s): retry policy: 1 of 3", output: "npm test exited 1", tone: "attention" });
  });

  it("shows a message with its addressee, and a held-back one with the hub's reason", () => {
    // As the engine records them: the sender's entry and the addressee's.
    const entry = (over: Partial<MessageEntry>): MessageEntry => ({
      text: "tests are green", from: "agent:claude", to: { to: "user" }, status: "delivered", blocked_reason: null,
      correlation_id: null, message_id: 1, ...over,
    });
    const [ok, held, toRun] = foldActivity([
      a("message_sent", entry({})),
      a("message_sent", entry({ to: { to: "run", run: 4 }, status: "blocked", blocked_reason: "agents talk through the hub", message_id: 2 })),
      a("message_received", entry({ from: "user:app", to: { to: "run", run: 1 }, correlation_id: "req-1", message_id: 3 })),
    ]);
    expect(ok).toMatchObject({ label: "message", title: "Message from agent:claude to the user", text: "tests are green", tone: "info" });
    expect(held).toMatchObject({ title: "Message from agent:claude to run 4: held back", tone: "bad" });
    expect(held!.text).toBe("tests are green\n\nHeld back by the hub: agents talk through the hub");
    expect(toRun!.title).toBe("Message from user:app to run 1 · req-1");
  });

  it("adds the run's other messages (broadcasts) by time, never one the activity already shows", () => {
    const m = (id: number, at: number, over: Partial<MessageView> = {}): MessageView => ({
      id, from_run: 1, from: "agent:claude", to: { to: "user" }, body: `m${id}`, correlation_id: null, status: "delivered", blocked_reason: null, at, ...over,
    });
    const entries = [a("gate_withdrawn", { text: "one" }, 100), a("message_sent", { text: "m1", from: "agent:claude", to: { to: "user" }, status: "delivered", blocked_reason: null, correlation_id: null, message_id: 1 }, 200), a("gate_withdrawn", { text: "two" }, 400)];
    const items = withMessages(foldActivity(entries), entries, [m(1, 200), m(2, 300, { from_run: 5, from: "agent:codex", to: { to: "broadcast" } })], 1);
    expect(items.map((i) => i.title)).toEqual(["one", "Message from agent:claude to the user", "Message from agent:codex to everyone", "two"]);
    expect(items[2]!.key).toBe(-2);
    expect(items[2]!.kind).toBe("message_received");
  });
});

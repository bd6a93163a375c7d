import { describe, expect, it } from "vitest";
import { OTHER, buildAnswers, initialDraft, isAnswered, parseSchema, problemSummary, questionPayload, truncate, type Draft } from "./questions";

// The demo agent's form (crates/overseer-demo-agent/src/turn.rs), as the
// engine stores it: serde writes the properties in key order.
const demo = {
  type: "object",
  title: "Before I plan",
  required: ["framework", "add_tests"],
  properties: {
    add_tests: { type: "boolean", title: "Add tests?" },
    framework: { type: "string", title: "Framework", enum: ["svelte", "react", "vue"] },
    notes: { type: "string", title: "Anything else I should know?" },
  },
};

const drafts = (schema: unknown, fill: Record<string, Partial<Draft>> = {}) => {
  const qs = parseSchema(schema);
  return { qs, ds: Object.fromEntries(qs.map((q) => [q.key, { ...initialDraft(q, schema), ...fill[q.key] }])) };
};

describe("parseSchema", () => {
  it("makes one question per property, in the agent's order, with required flags", () => {
    const qs = parseSchema(demo);
    expect(qs.map((q) => [q.key, q.type, q.required])).toEqual([
      ["add_tests", "boolean", true],
      ["framework", "single", true],
      ["notes", "text", false],
    ]);
    expect(qs[1]?.choices.map((c) => c.value)).toEqual(["svelte", "react", "vue"]);
    expect(qs[1]?.custom).toBe(true);
    expect(qs[0]?.header).toBe("Add tests?");
  });

  it("cuts tab labels to 30 characters and keeps the whole question", () => {
    const title = "Which database should the service use in production?";
    const [q] = parseSchema({ properties: { db: { type: "string", title } } });
    expect(q?.header.length).toBeLessThanOrEqual(30);
    expect(q?.header.endsWith("…")).toBe(true);
    expect(q?.question).toBe(title);
    expect(truncate("short")).toBe("short");
    expect([...truncate("x".repeat(31))]).toHaveLength(30);
  });

  it("reads oneOf options with their titles and descriptions", () => {
    const [q] = parseSchema({
      properties: {
        mode: {
          type: "string",
          title: "Mode",
          description: "How strict?",
          oneOf: [
            { const: "fast", title: "Fast", description: "skip the slow checks" },
            { const: "safe", title: "Safe" },
          ],
        },
      },
    });
    expect(q?.type).toBe("single");
    expect(q?.detail).toBe("How strict?");
    expect(q?.choices).toEqual([
      { value: "fast", label: "Fast", description: "skip the slow checks" },
      { value: "safe", label: "Safe", description: null },
    ]);
  });

  it("reads multi-select arrays (enum or anyOf items), numbers and integers", () => {
    const qs = parseSchema({
      properties: {
        langs: { type: "array", title: "Languages", items: { enum: ["ts", "rust"] }, minItems: 1 },
        tags: { type: "array", items: { anyOf: [{ const: "a", title: "Alpha" }] } },
        ratio: { type: "number", minimum: 0, maximum: 1 },
        count: { type: "integer" },
      },
    });
    expect(qs.map((q) => q.type)).toEqual(["multiple", "multiple", "number", "number"]);
    expect(qs[0]?.choices.map((c) => c.value)).toEqual(["ts", "rust"]);
    expect(qs[1]?.choices[0]?.label).toBe("Alpha");
    expect(qs[1]?.header).toBe("tags");
    expect(qs[3]?.integer).toBe(true);
  });

  it("gives no questions for something that is not a schema", () => {
    expect(parseSchema(null)).toEqual([]);
    expect(parseSchema("text")).toEqual([]);
    expect(parseSchema({ type: "object" })).toEqual([]);
  });
});

describe("buildAnswers", () => {
  it("refuses to send while a required question has no answer, naming it", () => {
    const { qs, ds } = drafts(demo, { framework: { choice: "react" } });
    const r = buildAnswers(qs, ds);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.key)).toEqual(["add_tests"]);
    expect(problemSummary(r.problems)).toBe('Answer "Add tests?" first: it is required.');
  });

  it("names every missing required question", () => {
    const { qs, ds } = drafts(demo);
    const r = buildAnswers(qs, ds);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(problemSummary(r.problems)).toBe('Answer the required questions first: "Add tests?", "Framework".');
  });

  it("builds the JSON object of answers the engine parses, leaving out unanswered optional ones", () => {
    const { qs, ds } = drafts(demo, { framework: { choice: "react" }, add_tests: { bool: false } });
    const r = buildAnswers(qs, ds);
    expect(r.ok && JSON.parse(r.json)).toEqual({ framework: "react", add_tests: false });
  });

  it("sends trimmed free text and an Other answer in place of a choice", () => {
    const { qs, ds } = drafts(demo, {
      framework: { choice: OTHER, other: "  solid  " },
      add_tests: { bool: true },
      notes: { text: " keep it short " },
    });
    const r = buildAnswers(qs, ds);
    expect(r.ok && r.answers).toEqual({ framework: "solid", add_tests: true, notes: "keep it short" });
  });

  it("wants text when Other is chosen", () => {
    const { qs, ds } = drafts(demo, { framework: { choice: OTHER, other: " " }, add_tests: { bool: true } });
    const r = buildAnswers(qs, ds);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(problemSummary(r.problems)).toMatch(/"Framework": you chose Other/);
  });

  it("sends multiple choices as an array in the schema's order, plus Other", () => {
    const schema = { required: ["langs"], properties: { langs: { type: "array", title: "Languages", items: { enum: ["ts", "rust", "go"] }, maxItems: 3 } } };
    const { qs, ds } = drafts(schema, { langs: { choices: ["go", "ts"], otherOn: true, other: "zig" } });
    const r = buildAnswers(qs, ds);
    expect(r.ok && r.answers).toEqual({ langs: ["ts", "go", "zig"] });
    const none = buildAnswers(qs, drafts(schema).ds);
    expect(none.ok).toBe(false);
    const tooMany = buildAnswers(qs, drafts(schema, { langs: { choices: ["ts", "rust", "go"], otherOn: true, other: "zig" } }).ds);
    expect(!tooMany.ok && tooMany.problems[0]?.message).toBe("choose at most 3");
  });

  it("checks numbers: parse, whole numbers, bounds", () => {
    const schema = { properties: { n: { type: "integer", title: "N", minimum: 1, maximum: 5 }, x: { type: "number" } } };
    const { qs } = drafts(schema);
    const run = (n: string, x = "") => buildAnswers(qs, drafts(schema, { n: { text: n }, x: { text: x } }).ds);
    expect(run("3", "0.5")).toMatchObject({ ok: true, answers: { n: 3, x: 0.5 } });
    expect(run("2.5")).toMatchObject({ ok: false, problems: [{ message: "give a whole number, not 2.5" }] });
    expect(run("9")).toMatchObject({ ok: false, problems: [{ message: "give at most 5" }] });
    expect(run("abc")).toMatchObject({ ok: false, problems: [{ message: '"abc" is not a number' }] });
    expect(run("")).toMatchObject({ ok: true, answers: {} });
  });

  it("starts from the schema's defaults", () => {
    const schema = {
      required: ["a", "b"],
      properties: {
        a: { type: "boolean", default: true },
        b: { type: "string", enum: ["x", "y"], default: "y" },
        c: { type: "string", enum: ["x"], default: "custom" },
        d: { type: "integer", default: 4 },
      },
    };
    const { qs, ds } = drafts(schema);
    expect(qs.every((q) => isAnswered(q, ds[q.key]!))).toBe(true);
    const r = buildAnswers(qs, ds);
    expect(r.ok && r.answers).toEqual({ a: true, b: "y", c: "custom", d: 4 });
  });
});

describe("questionPayload", () => {
  it("reads the message and the schema of a question gate", () => {
    const base = { id: 1, run_id: 1, status: "pending" as const, title: "Which?", options: [], opened_at: 0, decision: null, auto_at: null, auto_option: null, authority: null, effected: false, ask_kind: "blocking" as const };
    expect(questionPayload({ ...base, kind: "question", payload: { message: "Which?", schema: demo } })).toEqual({ message: "Which?", schema: demo });
    expect(questionPayload({ ...base, kind: "question", payload: { message: "Which?" } })).toEqual({ message: "Which?", schema: null });
    expect(questionPayload({ ...base, kind: "merge_review", payload: {} })).toEqual({ message: null, schema: null });
  });
});

describe("an external session's questions (question_N with its question_N_custom)", () => {
  // As the engine builds them from Claude Code's AskUserQuestion or `ask_user`.
  const schema = {
    type: "object",
    properties: {
      question_0: { type: "string", title: "Framework", description: "Which framework?", oneOf: [{ const: "Svelte", title: "Svelte", description: null }, { const: "React", title: "React", description: "the usual" }] },
      question_0_custom: { type: "string", title: "Other", description: "Your own answer (optional)" },
      question_1: { type: "array", title: "Extras", description: "Which extras?", items: { anyOf: [{ const: "Tests", title: "Tests" }, { const: "Docs", title: "Docs" }] } },
      question_1_custom: { type: "string", title: "Other", description: "Your own answer (optional)" },
      question_2_custom: { type: "string", title: "Name", description: "What should it be called?" },
    },
  };

  it("shows one tab per question, its Other text folded in", () => {
    const qs = parseSchema(schema);
    expect(qs.map((q) => [q.key, q.type, q.customKey])).toEqual([
      ["question_0", "single", "question_0_custom"],
      ["question_1", "multiple", "question_1_custom"],
      ["question_2_custom", "text", null],
    ]);
    expect(qs[0]!.custom).toBe(true);
  });

  it("sends a chosen option under the question and Other text under its _custom key", () => {
    const qs = parseSchema(schema);
    const d = Object.fromEntries(qs.map((q) => [q.key, initialDraft(q, schema)]));
    d["question_0"]!.choice = OTHER;
    d["question_0"]!.other = "Solid";
    d["question_1"]!.choices = ["Docs"];
    d["question_1"]!.otherOn = true;
    d["question_1"]!.other = "Bench";
    d["question_2_custom"]!.text = "greeter";
    const built = buildAnswers(qs, d);
    expect(built.ok && built.answers).toEqual({ question_0_custom: "Solid", question_1: ["Docs"], question_1_custom: "Bench", question_2_custom: "greeter" });
    d["question_0"]!.choice = "React";
    d["question_1"]!.otherOn = false;
    const again = buildAnswers(qs, d);
    expect(again.ok && again.answers).toEqual({ question_0: "React", question_1: ["Docs"], question_2_custom: "greeter" });
  });
});

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
    expect(questionPayload({ message: "Which?", schema: demo })).toEqual({ message: "Which?", schema: demo });
    expect(questionPayload("nope")).toEqual({ message: null, schema: null });
  });
});

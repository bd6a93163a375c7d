import { describe, expect, it } from "vitest";
import { canPreview, previewOf } from "./preview";
import { keyCommand } from "./fleet";
import { parseDiff } from "../diff/parse";
import { WORKING } from "../backend/mock";
import type { RunView } from "../types";

function run(over: Partial<RunView> = {}): RunView {
  return {
    id: 1,
    task_id: 1,
    task_title: "t",
    workspace: "w",
    agent: "demo",
    state: { state: "pending_review" },
    state_since: 0,
    created_at: 0,
    needs_you: true,
    attention_rank: 0,
    release_note: null,
    origin: "launched",
    actions: WORKING,
    pending_gate: null,
    ...over,
  };
}

/** A diff of `files` files, each with `hunks` hunks of `lines` added lines. */
function diff(files: number, hunks: number, lines: number): string {
  let out = "";
  for (let f = 0; f < files; f++) {
    out += `diff --git a/f${f}.ts b/f${f}.ts\nindex 1111111..2222222 100644\n--- a/f${f}.ts\n+++ b/f${f}.ts\n`;
    for (let h = 0; h < hunks; h++) {
      const start = h * 100 + 1;
      out += `@@ -${start},1 +${start},${lines + 1} @@\n ctx\n`;
      for (let l = 0; l < lines; l++) out += `+line ${f}.${h}.${l}\n`;
    }
  }
  return out;
}

describe("canPreview", () => {
  it("previews a launched run pending review, and nothing else", () => {
    expect(canPreview(run())).toBe(true);
    expect(canPreview(run({ state: { state: "running" } }))).toBe(false);
    expect(canPreview(run({ state: { state: "released", reason: "merged" } }))).toBe(false);
    expect(canPreview(run({ origin: "claude_code", actions: { ...WORKING, diff: false } } as Partial<RunView>))).toBe(false);
    expect(canPreview(undefined)).toBe(false);
    expect(canPreview(null)).toBe(false);
  });
});

describe("previewOf", () => {
  it("keeps every file and its whole counts, but only the first hunks", () => {
    const files = parseDiff(diff(3, 5, 4));
    const p = previewOf(files, 2, 40);
    expect(p.files.map((f) => f.path)).toEqual(["f0.ts", "f1.ts", "f2.ts"]);
    expect(p.files.map((f) => f.hunks.length)).toEqual([2, 2, 2]);
    expect(p.files.map((f) => f.additions)).toEqual([20, 20, 20]);
    expect(p.additions).toBe(60);
    expect(p.deletions).toBe(0);
    expect(p.hiddenHunks).toBe(9);
    expect(p.hiddenLines).toBe(9 * 5);
    // The parsed diff is not touched.
    expect(files[0]!.hunks.length).toBe(5);
  });

  it("cuts a long hunk to its first lines", () => {
    const files = parseDiff(diff(1, 1, 100));
    const p = previewOf(files, 2, 10);
    expect(p.files[0]!.hunks[0]!.lines).toHaveLength(10);
    expect(p.files[0]!.hunks[0]!.lines[0]!.kind).toBe("context");
    expect(p.hiddenLines).toBe(91);
    expect(p.hiddenHunks).toBe(0);
    expect(files[0]!.hunks[0]!.lines).toHaveLength(101);
  });

  it("returns a small diff as it is", () => {
    const files = parseDiff(diff(2, 1, 3));
    const p = previewOf(files);
    expect(p.files[0]).toBe(files[0]);
    expect(p.hiddenHunks).toBe(0);
    expect(p.hiddenLines).toBe(0);
    expect(previewOf([]).files).toEqual([]);
  });
});

describe("the preview key", () => {
  it("is p, and never from a text field or with a modifier", () => {
    expect(keyCommand({ key: "p" })).toBe("preview");
    expect(keyCommand({ key: "p", inField: true })).toBeNull();
    expect(keyCommand({ key: "p", ctrlKey: true })).toBeNull();
    // The keys it must not take.
    expect(keyCommand({ key: "a" })).toBe("approve");
    expect(keyCommand({ key: "r" })).toBe("reject");
    expect(keyCommand({ key: "x" })).toBe("abort");
  });
});

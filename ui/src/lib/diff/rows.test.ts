import { describe, expect, it } from "vitest";
import { parseDiff, type DiffLine } from "./parse";
import { buildRows, fileNote, pairLines } from "./rows";

const l = (kind: DiffLine["kind"], text: string): DiffLine => ({ kind, text, oldNo: null, newNo: null, noNewline: false });
const texts = (pairs: ReturnType<typeof pairLines>) => pairs.map(([a, b]) => [a?.text ?? null, b?.text ?? null]);

describe("pairLines (side by side)", () => {
  it("puts context on both sides", () => {
    expect(texts(pairLines([l("context", "a"), l("context", "b")]))).toEqual([
      ["a", "a"],
      ["b", "b"],
    ]);
  });

  it("pairs a run of deletions with the additions that replace them", () => {
    expect(texts(pairLines([l("del", "x1"), l("del", "x2"), l("add", "y1"), l("add", "y2"), l("context", "z")]))).toEqual([
      ["x1", "y1"],
      ["x2", "y2"],
      ["z", "z"],
    ]);
  });

  it("faces the longer run's rest with a blank", () => {
    expect(texts(pairLines([l("del", "x1"), l("del", "x2"), l("del", "x3"), l("add", "y1")]))).toEqual([
      ["x1", "y1"],
      ["x2", null],
      ["x3", null],
    ]);
    expect(texts(pairLines([l("context", "c"), l("add", "y1"), l("add", "y2")]))).toEqual([
      ["c", "c"],
      [null, "y1"],
      [null, "y2"],
    ]);
  });

  it("does not pair additions with deletions that come after them", () => {
    expect(texts(pairLines([l("add", "y"), l("del", "x")]))).toEqual([
      [null, "y"],
      ["x", null],
    ]);
  });
});

describe("buildRows", () => {
  const files = parseDiff(`diff --git a/a.ts b/a.ts
--- a/a.ts
+++ b/a.ts
@@ -1,2 +1,2 @@
-one
+uno
 two
diff --git a/img.png b/img.png
Binary files a/img.png and b/img.png differ
`);

  it("flattens unified: file header, hunk header, one row per line, notes", () => {
    const { rows, fileStarts } = buildRows(files, "unified");
    expect(rows.map((r) => r.type)).toEqual(["file", "hunk", "line", "line", "line", "file", "note"]);
    expect(fileStarts).toEqual([0, 5]);
    expect(rows[1]).toMatchObject({ type: "hunk", text: "@@ -1,2 +1,2 @@" });
  });

  it("flattens side by side into pairs", () => {
    const { rows, fileStarts } = buildRows(files, "split");
    expect(rows.map((r) => r.type)).toEqual(["file", "hunk", "pair", "pair", "file", "note"]);
    expect(fileStarts).toEqual([0, 4]);
  });

  it("says why a file has no lines", () => {
    expect(fileNote(files[1]!)).toMatch(/Binary/);
    const [mode] = parseDiff("diff --git a/x b/x\nold mode 100644\nnew mode 100755\n");
    expect(fileNote(mode!)).toBe("Mode changed from 100644 to 100755.");
  });
});

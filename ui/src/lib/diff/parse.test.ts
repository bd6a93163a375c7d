import { describe, expect, it } from "vitest";
import { parseDiff, splitGitHeader, unquote } from "./parse";

const MODIFIED = `diff --git a/src/limit.ts b/src/limit.ts
index 3b18e51..a2c4f7d 100644
--- a/src/limit.ts
+++ b/src/limit.ts
@@ -1,4 +1,5 @@ export const NAME
-export const LIMIT = 10;
+export const LIMIT = 100;
+// per minute
 export function allow() {
   return true;
 }
@@ -20,2 +21,2 @@ function tail() {
-old
+new
 end
`;

describe("parseDiff", () => {
  it("reads files, hunks and both line numbers", () => {
    const [f, ...rest] = parseDiff(MODIFIED);
    expect(rest).toHaveLength(0);
    expect(f!.path).toBe("src/limit.ts");
    expect(f!.status).toBe("modified");
    expect(f!.additions).toBe(3);
    expect(f!.deletions).toBe(2);
    expect(f!.hunks).toHaveLength(2);
    const [h1, h2] = f!.hunks;
    expect(h1!.section).toBe("export const NAME");
    expect(h1!.lines.map((l) => [l.kind, l.oldNo, l.newNo])).toEqual([
      ["del", 1, null],
      ["add", null, 1],
      ["add", null, 2],
      ["context", 2, 3],
      ["context", 3, 4],
      ["context", 4, 5],
    ]);
    expect(h2!.lines.map((l) => [l.kind, l.text, l.oldNo, l.newNo])).toEqual([
      ["del", "old", 20, null],
      ["add", "new", null, 21],
      ["context", "end", 21, 22],
    ]);
  });

  it("reads added and deleted files, with /dev/null sides", () => {
    const files = parseDiff(`diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..ce01362
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index ce01362..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
`);
    expect(files.map((f) => [f.path, f.status, f.oldPath, f.newPath, f.additions, f.deletions])).toEqual([
      ["new.txt", "added", null, "new.txt", 2, 0],
      ["gone.txt", "deleted", "gone.txt", null, 0, 1],
    ]);
    expect(files[0]!.newMode).toBe("100644");
    // "@@ -1 +0,0 @@": a missing count means one line.
    expect(files[1]!.hunks[0]!.oldLines).toBe(1);
  });

  it("reads renames, with and without changes", () => {
    const files = parseDiff(`diff --git a/old name.md b/docs/new name.md
similarity index 100%
rename from old name.md
rename to docs/new name.md
diff --git a/a.rs b/b.rs
similarity index 90%
rename from a.rs
rename to b.rs
index 1..2 100644
--- a/a.rs
+++ b/b.rs
@@ -1 +1 @@
-fn a() {}
+fn b() {}
`);
    expect(files[0]).toMatchObject({ status: "renamed", oldPath: "old name.md", newPath: "docs/new name.md", path: "docs/new name.md", similarity: 100, hunks: [] });
    expect(files[1]).toMatchObject({ status: "renamed", oldPath: "a.rs", path: "b.rs", similarity: 90, additions: 1, deletions: 1 });
  });

  it("marks binary files and mode changes", () => {
    const files = parseDiff(`diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..1b2c3d4
Binary files /dev/null and b/logo.png differ
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
`);
    expect(files[0]).toMatchObject({ path: "logo.png", binary: true, status: "added", hunks: [] });
    expect(files[1]).toMatchObject({ path: "run.sh", oldMode: "100644", newMode: "100755", status: "modified" });
  });

  it('keeps "\\ No newline at end of file" on the line it is about', () => {
    const [f] = parseDiff(`diff --git a/x b/x
--- a/x
+++ b/x
@@ -1,2 +1,3 @@
 a
-b
\\ No newline at end of file
+b
+c
\\ No newline at end of file
`);
    const lines = f!.hunks[0]!.lines;
    expect(lines.map((l) => [l.kind, l.text, l.noNewline])).toEqual([
      ["context", "a", false],
      ["del", "b", true],
      ["add", "b", false],
      ["add", "c", true],
    ]);
  });

  it("counts hunk lines, so a deleted line that looks like a header stays a line", () => {
    const [f, g] = parseDiff(`diff --git a/x.sql b/x.sql
--- a/x.sql
+++ b/x.sql
@@ -1,2 +1,1 @@
--- a comment
-++ not a header
+select 1;
diff --git a/y b/y
--- a/y
+++ b/y
@@ -1 +1 @@
-1
+2
`);
    expect(f!.hunks[0]!.lines.map((l) => [l.kind, l.text])).toEqual([
      ["del", "-- a comment"],
      ["del", "++ not a header"],
      ["add", "select 1;"],
    ]);
    expect(g!.path).toBe("y");
  });

  it("treats names as data: markup in a name is just characters", () => {
    const name = "<img src=x onerror=alert(1)>.txt";
    const [f] = parseDiff(`diff --git a/${name} b/${name}
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/${name}\t
@@ -0,0 +1 @@
+<script>alert(1)</script>
`);
    expect(f!.path).toBe(name);
    expect(f!.hunks[0]!.lines[0]!.text).toBe("<script>alert(1)</script>");
  });

  it("reads git's quoted names (tabs, quotes, UTF-8 octal bytes)", () => {
    const [f] = parseDiff(`diff --git "a/caf\\303\\251 \\"x\\"\\t.txt" "b/caf\\303\\251 \\"x\\"\\t.txt"
new file mode 100644
--- /dev/null
+++ "b/caf\\303\\251 \\"x\\"\\t.txt"
@@ -0,0 +1 @@
+ok
`);
    expect(f!.path).toBe('café "x"\t.txt');
  });

  it("reads a plain unified diff without git headers, and survives junk", () => {
    const files = parseDiff(`some preamble
--- a/one.txt
+++ b/one.txt
@@ -1 +1 @@
-a
+b
--- a/two.txt
+++ b/two.txt
@@ -1 +1,2 @@
 x
+y
`);
    expect(files.map((f) => [f.path, f.additions, f.deletions])).toEqual([
      ["one.txt", 1, 1],
      ["two.txt", 1, 0],
    ]);
  });

  it("ends a hunk cut short without losing the next file", () => {
    const files = parseDiff(`diff --git a/a b/a
--- a/a
+++ b/a
@@ -1,5 +1,5 @@
-x
diff --git a/b b/b
--- a/b
+++ b/b
@@ -1 +1 @@
-1
+2
`);
    expect(files.map((f) => f.path)).toEqual(["a", "b"]);
    expect(files[0]!.hunks[0]!.lines).toHaveLength(1);
  });

  it("returns nothing for an empty diff, and parses 5,000 lines quickly", () => {
    expect(parseDiff("")).toEqual([]);
    const body = Array.from({ length: 5000 }, (_, i) => `+line ${i}`).join("\n");
    const text = `diff --git a/big.ts b/big.ts\nnew file mode 100644\n--- /dev/null\n+++ b/big.ts\n@@ -0,0 +1,5000 @@\n${body}\n`;
    const t0 = performance.now();
    const [f] = parseDiff(text);
    const ms = performance.now() - t0;
    expect(f!.additions).toBe(5000);
    expect(f!.hunks[0]!.lines[4999]!.newNo).toBe(5000);
    expect(ms).toBeLessThan(500);
  });
});

describe("splitGitHeader and unquote", () => {
  it("splits the same name with spaces", () => {
    expect(splitGitHeader("a/my file b/x.txt b/my file b/x.txt")).toEqual(["my file b/x.txt", "my file b/x.txt"]);
  });
  it("splits different names", () => {
    expect(splitGitHeader("a/old.txt b/new.txt")).toEqual(["old.txt", "new.txt"]);
    expect(splitGitHeader('a/plain "b/quo\\"ted"')).toEqual(["plain", 'quo"ted']);
  });
  it("leaves unquoted text alone", () => {
    expect(unquote("plain")).toBe("plain");
    expect(unquote('"\\\\back"')).toBe("\\back");
  });
});

// A parser for the unified diffs git writes (`git diff base...branch`): files,
// hunks with their line numbers, renames and copies, mode changes, binary
// files and "\ No newline at end of file". Pure, so it is tested on text
// alone. The diff is agent-made and untrusted: everything here is data that
// the view renders as text, never markup.

export type LineKind = "context" | "add" | "del";

export interface DiffLine {
  kind: LineKind;
  /** The line without its leading marker (" ", "+", "-"). */
  text: string;
  /** In the old file (context and deleted lines). */
  oldNo: number | null;
  /** In the new file (context and added lines). */
  newNo: number | null;
  /** The file ends on this line without a newline. */
  noNewline: boolean;
}

export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** The function or section name git puts after the second "@@". */
  section: string;
  lines: DiffLine[];
}

export type FileStatus = "added" | "deleted" | "modified" | "renamed" | "copied";

export interface FileDiff {
  /** The path to show: the new path, or the old one for a deleted file. */
  path: string;
  oldPath: string | null;
  newPath: string | null;
  status: FileStatus;
  binary: boolean;
  oldMode: string | null;
  newMode: string | null;
  /** Percent, for renames and copies. */
  similarity: number | null;
  hunks: Hunk[];
  additions: number;
  deletions: number;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$/;

/** Parses a whole `git diff` output. Unknown lines between files are skipped;
 * a hunk cut short ends where its counted lines run out. */
export function parseDiff(text: string): FileDiff[] {
  const lines = text.split("\n");
  // A diff ends with a newline: the split leaves one empty string after it.
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const files: FileDiff[] = [];
  let file: FileDiff | null = null;
  let i = 0;

  const finish = () => {
    if (file) files.push(settle(file));
    file = null;
  };

  while (i < lines.length) {
    const line = lines[i]!;
    if (line.startsWith("diff --git ")) {
      finish();
      const [a, b] = splitGitHeader(line.slice("diff --git ".length));
      file = blank(a, b);
      i++;
      continue;
    }
    if (line.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ") && (file === null || file.hunks.length > 0)) {
      // A plain unified diff (no "diff --git" line), or the next file of one.
      finish();
      file = blank(null, null);
    }
    if (file === null) {
      i++;
      continue;
    }
    const f: FileDiff = file;
    if (line.startsWith("@@ ")) {
      const m = HUNK.exec(line);
      if (!m) {
        i++;
        continue;
      }
      const hunk: Hunk = {
        oldStart: Number(m[1]),
        oldLines: m[2] === undefined ? 1 : Number(m[2]),
        newStart: Number(m[3]),
        newLines: m[4] === undefined ? 1 : Number(m[4]),
        section: m[5] ?? "",
        lines: [],
      };
      i = readHunk(lines, i + 1, hunk);
      f.hunks.push(hunk);
      continue;
    }
    if (line.startsWith("--- ")) {
      f.oldPath = labelPath(line.slice(4), "a/");
    } else if (line.startsWith("+++ ")) {
      f.newPath = labelPath(line.slice(4), "b/");
    } else if (line.startsWith("new file mode ")) {
      f.status = "added";
      f.newMode = line.slice("new file mode ".length);
      f.oldPath = null;
    } else if (line.startsWith("deleted file mode ")) {
      f.status = "deleted";
      f.oldMode = line.slice("deleted file mode ".length);
      f.newPath = null;
    } else if (line.startsWith("old mode ")) {
      f.oldMode = line.slice("old mode ".length);
    } else if (line.startsWith("new mode ")) {
      f.newMode = line.slice("new mode ".length);
    } else if (line.startsWith("rename from ")) {
      f.status = "renamed";
      f.oldPath = unquote(line.slice("rename from ".length));
    } else if (line.startsWith("rename to ")) {
      f.status = "renamed";
      f.newPath = unquote(line.slice("rename to ".length));
    } else if (line.startsWith("copy from ")) {
      f.status = "copied";
      f.oldPath = unquote(line.slice("copy from ".length));
    } else if (line.startsWith("copy to ")) {
      f.status = "copied";
      f.newPath = unquote(line.slice("copy to ".length));
    } else if (line.startsWith("similarity index ")) {
      f.similarity = parseInt(line.slice("similarity index ".length), 10);
    } else if (line.startsWith("Binary files ") || line === "GIT binary patch") {
      f.binary = true;
    }
    i++;
  }
  finish();
  return files;
}

/** Reads a hunk's lines from `start`; returns the index after the hunk. */
function readHunk(lines: string[], start: number, hunk: Hunk): number {
  let oldLeft = hunk.oldLines;
  let newLeft = hunk.newLines;
  let oldNo = hunk.oldStart;
  let newNo = hunk.newStart;
  let i = start;
  while (i < lines.length && (oldLeft > 0 || newLeft > 0)) {
    const line = lines[i]!;
    const mark = line[0];
    if (mark === " " || line === "") {
      // Some tools strip the space of an empty context line.
      hunk.lines.push({ kind: "context", text: line.slice(1), oldNo: oldNo++, newNo: newNo++, noNewline: false });
      oldLeft--;
      newLeft--;
    } else if (mark === "-") {
      hunk.lines.push({ kind: "del", text: line.slice(1), oldNo: oldNo++, newNo: null, noNewline: false });
      oldLeft--;
    } else if (mark === "+") {
      hunk.lines.push({ kind: "add", text: line.slice(1), oldNo: null, newNo: newNo++, noNewline: false });
      newLeft--;
    } else if (mark === "\\") {
      markNoNewline(hunk);
    } else {
      break; // a hunk cut short: its counts promised more than there is
    }
    i++;
  }
  // The marker may follow the last counted line.
  if (lines[i]?.startsWith("\\")) {
    markNoNewline(hunk);
    i++;
  }
  return i;
}

function markNoNewline(hunk: Hunk) {
  const last = hunk.lines[hunk.lines.length - 1];
  if (last) last.noNewline = true;
}

function blank(a: string | null, b: string | null): FileDiff {
  return {
    path: "",
    oldPath: a,
    newPath: b,
    status: "modified",
    binary: false,
    oldMode: null,
    newMode: null,
    similarity: null,
    hunks: [],
    additions: 0,
    deletions: 0,
  };
}

function settle(f: FileDiff): FileDiff {
  let additions = 0;
  let deletions = 0;
  for (const h of f.hunks) {
    for (const l of h.lines) {
      if (l.kind === "add") additions++;
      else if (l.kind === "del") deletions++;
    }
  }
  if (f.status === "modified" && f.oldPath === null && f.newPath !== null && f.hunks.length > 0) f.status = "added";
  if (f.status === "modified" && f.newPath === null && f.oldPath !== null && f.hunks.length > 0) f.status = "deleted";
  const path = f.newPath ?? f.oldPath ?? "";
  return { ...f, path, additions, deletions };
}

/** The path of a "---"/"+++" line: null for /dev/null, the prefix removed.
 * Git ends the label with a tab when the name contains a space. */
function labelPath(label: string, prefix: string): string | null {
  let name = label;
  if (!name.startsWith('"')) {
    const tab = name.indexOf("\t");
    if (tab >= 0) name = name.slice(0, tab);
  }
  if (name === "/dev/null") return null;
  name = unquote(name);
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** The two paths of `diff --git a/X b/Y`. With spaces in names the split is
 * ambiguous; git then names the same file twice, which is what we look for. */
export function splitGitHeader(rest: string): [string | null, string | null] {
  const strip = (p: string, prefix: string) => (p.startsWith(prefix) ? p.slice(prefix.length) : p);
  if (rest.startsWith('"')) {
    const end = quotedEnd(rest);
    const a = unquote(rest.slice(0, end));
    const b = unquote(rest.slice(end).trimStart());
    return [strip(a, "a/"), strip(b, "b/")];
  }
  if (rest.endsWith('"')) {
    const start = rest.lastIndexOf(' "');
    if (start >= 0) return [strip(rest.slice(0, start), "a/"), strip(unquote(rest.slice(start + 1)), "b/")];
  }
  // Same name on both sides: "a/" + p + " b/" + p.
  if (rest.length % 2 === 1) {
    const half = (rest.length - 1) / 2;
    const a = rest.slice(0, half);
    const b = rest.slice(half + 1);
    if (rest[half] === " " && a.startsWith("a/") && b.startsWith("b/") && a.slice(2) === b.slice(2)) {
      return [a.slice(2), b.slice(2)];
    }
  }
  const at = rest.lastIndexOf(" b/");
  if (at >= 0) return [strip(rest.slice(0, at), "a/"), rest.slice(at + 3)];
  return [rest, rest];
}

/** Where a C-quoted string that starts at 0 ends (the index after its closing quote). */
function quotedEnd(s: string): number {
  for (let i = 1; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === '"') return i + 1;
  }
  return s.length;
}

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/** Git's C-style quoting of unusual names: `"tab\there"`, octal UTF-8 bytes
 * (`"caf\303\251"`). A name without quotes is returned as it is. */
export function unquote(s: string): string {
  if (!(s.length >= 2 && s.startsWith('"') && s.endsWith('"'))) return s;
  const bytes: number[] = [];
  const body = s.slice(1, -1);
  const enc = new TextEncoder();
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") {
      // Keep any non-ASCII character as its UTF-8 bytes.
      const cp = body.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      bytes.push(...enc.encode(ch));
      i += ch.length - 1;
      continue;
    }
    const next = body[i + 1] ?? "";
    if (/[0-7]/.test(next)) {
      const oct = /^[0-7]{1,3}/.exec(body.slice(i + 1))![0];
      bytes.push(parseInt(oct, 8) & 0xff);
      i += oct.length;
    } else if (next in ESCAPES) {
      bytes.push(ESCAPES[next]!);
      i++;
    } else {
      bytes.push(92);
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

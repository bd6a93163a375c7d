// The diff as one flat list of fixed-height rows, so the viewer can window it
// (render only what is visible) whatever its size. Unified: one row per line.
// Side by side: deletions paired with the additions that replace them.
import type { DiffLine, FileDiff } from "./parse";

export type DiffMode = "unified" | "split";

export type Row =
  | { type: "file"; file: number }
  | { type: "hunk"; file: number; text: string }
  | { type: "line"; file: number; line: DiffLine }
  | { type: "pair"; file: number; left: DiffLine | null; right: DiffLine | null }
  | { type: "note"; file: number; text: string };

export interface Rows {
  rows: Row[];
  /** The row index of each file's header, by file index. */
  fileStarts: number[];
}

/** Pairs a hunk's lines for side-by-side: context on both sides; a run of
 * deletions next to the run of additions that follows it, line by line; the
 * longer run's rest faces a blank. */
export function pairLines(lines: DiffLine[]): Array<[DiffLine | null, DiffLine | null]> {
  const out: Array<[DiffLine | null, DiffLine | null]> = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.kind === "context") {
      out.push([line, line]);
      i++;
      continue;
    }
    const dels: DiffLine[] = [];
    const adds: DiffLine[] = [];
    while (i < lines.length && lines[i]!.kind === "del") dels.push(lines[i++]!);
    while (i < lines.length && lines[i]!.kind === "add") adds.push(lines[i++]!);
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) out.push([dels[k] ?? null, adds[k] ?? null]);
  }
  return out;
}

export function hunkHeader(h: { oldStart: number; oldLines: number; newStart: number; newLines: number; section: string }): string {
  const head = `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`;
  return h.section ? `${head} ${h.section}` : head;
}

/** What to say about a file that has no lines to show. */
export function fileNote(f: FileDiff): string | null {
  if (f.binary) return "Binary file: not shown.";
  if (f.hunks.length > 0) return null;
  if (f.oldMode && f.newMode && f.oldMode !== f.newMode) return `Mode changed from ${f.oldMode} to ${f.newMode}.`;
  if (f.status === "renamed") return "Renamed without changes.";
  if (f.status === "copied") return "Copied without changes.";
  if (f.status === "added") return "Empty file added.";
  if (f.status === "deleted") return "Empty file deleted.";
  return "No changes to show.";
}

export function buildRows(files: FileDiff[], mode: DiffMode): Rows {
  const rows: Row[] = [];
  const fileStarts: number[] = [];
  files.forEach((f, file) => {
    fileStarts.push(rows.length);
    rows.push({ type: "file", file });
    const note = fileNote(f);
    if (note) rows.push({ type: "note", file, text: note });
    for (const h of f.hunks) {
      rows.push({ type: "hunk", file, text: hunkHeader(h) });
      if (mode === "unified") {
        for (const line of h.lines) rows.push({ type: "line", file, line });
      } else {
        for (const [left, right] of pairLines(h.lines)) rows.push({ type: "pair", file, left, right });
      }
    }
  });
  return { rows, fileStarts };
}

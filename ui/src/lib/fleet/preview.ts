// The fleet's diff preview: what a run pending review changed, cut to the
// first hunks of each file so it fits under the table. The diff itself comes
// from the run page's loader (RunDiffView, one `run_diff` call) and parser;
// this only decides which runs have a preview and trims what is shown.
import type { FileDiff } from "../diff/parse";
import type { RunView } from "../types";
import { runActions } from "./fleet";

/** Hunks shown per file in the preview; the run page shows them all. */
export const PREVIEW_HUNKS = 2;
/** Lines shown per hunk in the preview. */
export const PREVIEW_HUNK_LINES = 40;

/** A run has a preview when it waits for review of a diff Overseer can show
 * (its own worktree: never an external session's). */
export function canPreview(r: RunView | undefined | null): boolean {
  if (!r) return false;
  return r.state.state === "pending_review" && runActions(r).diff;
}

export interface Preview {
  /** Every file, with its full +/- counts, and at most `maxHunks` hunks (each
   * at most `maxLines` lines). */
  files: FileDiff[];
  /** Hunks and lines left out, across all files (0 when nothing was cut). */
  hiddenHunks: number;
  hiddenLines: number;
  /** Totals over the whole diff. */
  additions: number;
  deletions: number;
}

/** Cuts a parsed diff to its first hunks. The file list, status and counts
 * stay whole: the preview says what changed everywhere and shows the start. */
export function previewOf(files: readonly FileDiff[], maxHunks = PREVIEW_HUNKS, maxLines = PREVIEW_HUNK_LINES): Preview {
  let hiddenHunks = 0;
  let hiddenLines = 0;
  let additions = 0;
  let deletions = 0;
  const out = files.map((f) => {
    additions += f.additions;
    deletions += f.deletions;
    const kept = f.hunks.slice(0, Math.max(0, maxHunks));
    for (const h of f.hunks.slice(kept.length)) {
      hiddenHunks++;
      hiddenLines += h.lines.length;
    }
    const hunks = kept.map((h) => {
      if (h.lines.length <= maxLines) return h;
      hiddenLines += h.lines.length - maxLines;
      return { ...h, lines: h.lines.slice(0, Math.max(0, maxLines)) };
    });
    return hunks.length === f.hunks.length && hunks.every((h, i) => h === f.hunks[i]) ? f : { ...f, hunks };
  });
  return { files: out, hiddenHunks, hiddenLines, additions, deletions };
}

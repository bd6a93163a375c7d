// The shapes the engine sends, generated from the Rust types (ts-rs) in
// ./generated/types.ts; this module adds the few names the UI derives.
export type * from "./generated/types";
import type { AutoRunFile, FileChange, GateChoice, RunState } from "./generated/types";

export type StateName = RunState["state"];

/** A choice id of any gate kind (the union of the per-kind choice enums). */
export type ChoiceId = GateChoice["choice"];

/** A run's diff against its base: the files with their counts, the
 * unified diff text, and the files other tools run on their own with what
 * would run them (all untrusted: render as text only). */
export interface RunDiff {
  files: FileChange[];
  diff: string;
  auto_run: AutoRunFile[];
}

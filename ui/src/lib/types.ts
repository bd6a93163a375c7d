// The shapes the engine sends, generated from the Rust types (ts-rs) in
// ./generated/types.ts; this module adds the few names the UI derives.
export type * from "./generated/types";
import type { GateChoice, RunState } from "./generated/types";

export type StateName = RunState["state"];

/** A choice id of any gate kind (the union of the per-kind choice enums). */
export type ChoiceId = GateChoice["choice"];

// The shapes the engine sends. They mirror overseer-core's serde types
// (RunView, RunState, EngineEvent, ApiError); keep the two in step.

export type ReleaseReason =
  | "merged"
  | "human_rejected"
  | "aborted_by_user"
  | "plan_rejected"
  | "failed"
  | "interrupted"
  | "supervisor_rejected";

export type RunState =
  | { state: "queued" }
  | { state: "claimed" }
  | { state: "running" }
  | { state: "retry_queued" }
  | { state: "pending_review" }
  | { state: "released"; reason: ReleaseReason };

export type StateName = RunState["state"];

export type GateKind =
  | "plan"
  | "tool_call"
  | "step_review"
  | "supervisor_pause"
  | "deviation"
  | "merge_review"
  | "question";

export interface RunView {
  id: number;
  task_id: number;
  task_title: string;
  workspace: string;
  agent: string;
  state: RunState;
  /** Unix ms when the run entered its current state. */
  state_since: number;
  created_at: number;
  needs_you: boolean;
  release_note: string | null;
  pending_gate: { id: number; kind: GateKind } | null;
}

export interface ActivityView {
  id: number;
  run_id: number;
  at: number;
  kind: string;
  /** What the agent or the engine reported: untrusted, render as text only. */
  payload: unknown;
}

export type EngineEvent =
  | { type: "run_changed"; run: RunView }
  | { type: "gate_opened"; gate_id: number; run_id: number; kind: GateKind }
  | { type: "gate_decided"; gate_id: number; run_id: number; kind: GateKind }
  | { type: "run_activity"; activity: ActivityView }
  | { type: "orchestration_aborted"; run_id: number; killed: number[] };

export type ErrorCode =
  | "not_found"
  | "invalid_transition"
  | "already_decided"
  | "conflict"
  | "invalid_input"
  | "storage"
  | "engine_unavailable"
  | "internal";

export interface ApiError {
  code: ErrorCode;
  message: string;
}

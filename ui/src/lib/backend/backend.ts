import type { EngineEvent, RunView } from "../types";

/** Everything the UI asks of the engine. One implementation talks to Tauri,
 * another (for tests and a plain browser) lives in memory. */
export interface Backend {
  listRuns(): Promise<RunView[]>;
  approveRun(runId: number): Promise<RunView>;
  rejectRun(runId: number, reason: string): Promise<RunView>;
  abortRun(runId: number): Promise<RunView>;
  /** Calls `onEvent` for every event the engine pushes; returns an unsubscribe. */
  subscribe(onEvent: (e: EngineEvent) => void): Promise<() => void>;
}

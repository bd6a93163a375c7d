// The only module that imports @tauri-apps: the window's line to the engine.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type { Backend } from "./backend";
import { toApiError } from "./errors";
import type { EngineEvent, RunView } from "../types";

const EVENT = "overseer://event";

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw toApiError(e);
  }
}

export const tauriBackend: Backend = {
  listRuns: () => call<RunView[]>("list_runs"),
  approveRun: (runId) => call<RunView>("approve_run", { runId }),
  rejectRun: (runId, reason) => call<RunView>("reject_run", { runId, reason }),
  abortRun: (runId) => call<RunView>("abort_run", { runId }),
  subscribe: async (onEvent) => listen<EngineEvent>(EVENT, (e) => onEvent(e.payload)),
};

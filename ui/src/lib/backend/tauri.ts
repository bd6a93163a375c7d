// The only module that imports @tauri-apps: the window's line to the engine.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type { Backend } from "./backend";
import { toApiError } from "./errors";
import type {
  ActivityView,
  AgentInfo,
  EngineEvent,
  FieldError,
  GateStory,
  RunStory,
  GateView,
  MessageView,
  NotificationSettings,
  PolicyStatus,
  RuleSet,
  RunDiff,
  RunView,
  RunsHead,
  TaskInfo,
  Workspace,
} from "../types";

const EVENT = "overseer://event";
const OPEN = "overseer://open";

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw toApiError(e);
  }
}

export const tauriBackend: Backend = {
  listRuns: () => call<RunView[]>("list_runs"),
  listRunsHead: (limit) => call<RunsHead>("list_runs_head", { limit }),
  approveRun: (runId) => call<RunView>("approve_run", { runId }),
  rejectRun: (runId, reason) => call<RunView>("reject_run", { runId, reason }),
  abortRun: (runId) => call<RunView>("abort_run", { runId }),
  runActivity: (runId, after) => call<ActivityView[]>("run_activity", { runId, after }),
  runDiff: (runId) => call<RunDiff>("run_diff", { runId }),
  steerRun: (runId, text) => call<RunView>("steer_run", { runId, text }),

  listGates: (pendingOnly) => call<GateView[]>("list_gates", { pendingOnly }),
  showGate: (gateId) => call<GateView>("show_gate", { gateId }),
  decideGate: (gateId, option, context) => call<GateView>("decide_gate", { gateId, option, context }),
  holdGate: (gateId) => call<GateView>("hold_gate", { gateId }),
  gateStory: (gateId) => call<GateStory>("gate_story", { gateId }),
  runStory: (runId) => call<RunStory>("run_story", { runId }),

  listMessages: (run, after) => call<MessageView[]>("list_messages", { run, after }),
  sendMessage: (to, body, correlationId) => call<MessageView>("send_message", { to, body, correlationId }),

  listWorkspaces: () => call<Workspace[]>("list_workspaces"),
  showTask: (taskId) => call<TaskInfo>("show_task", { taskId }),
  setWorkspaceChecks: (workspace, sensors, autoAdvance) =>
    call<Workspace>("set_workspace_checks", { workspace, sensors, autoAdvance }),
  supervisorStatus: (scope) => call<PolicyStatus>("supervisor_status", { scope }),
  setSupervisor: (scope, policy) => call<PolicyStatus>("set_supervisor", { scope, policy }),
  setPermissions: (scope, rules) => call<RuleSet>("set_permissions", { scope, rules }),
  notificationSettings: () => call<NotificationSettings>("notification_settings"),
  setNotificationSettings: (settings) => call<NotificationSettings>("set_notification_settings", { settings }),
  checkSettings: (change) => call<FieldError[]>("check_settings", { change }),
  agents: () => call<AgentInfo[]>("agents"),

  subscribe: async (onEvent) => listen<EngineEvent>(EVENT, (e) => onEvent(e.payload)),
  onOpenRequest: async (onOpen) => listen<{ run_id: number }>(OPEN, (e) => onOpen(e.payload.run_id)),
};

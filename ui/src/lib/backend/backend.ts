import type {
  ActivityView,
  AgentInfo,
  EngineEvent,
  FieldError,
  GateStory,
  RunStory,
  GateView,
  MessageTo,
  MessageView,
  NotificationSettings,
  PolicyStatus,
  RuleSet,
  RunDiff,
  RunView,
  RunsHead,
  Scope,
  SettingsChange,
  SupervisorPolicy,
  TaskInfo,
  Workspace,
} from "../types";

/** Everything the UI asks of the engine. One implementation talks to Tauri
 * (./tauri.ts, the only module that imports @tauri-apps); another lives in
 * memory (./mock.ts) for unit tests and a plain browser. Every call rejects
 * with an `ApiError` ({code, message}). Nothing here changes UI state: the
 * result of an action arrives as a pushed event like any other change. */
export interface Backend {
  // Runs
  listRuns(): Promise<RunView[]>;
  /** The first `limit` runs in the dashboard's default order (needs-you
   * first), with the fleet's size and counts: the first screen of a big
   * fleet, before the whole list. */
  listRunsHead(limit: number): Promise<RunsHead>;
  approveRun(runId: number): Promise<RunView>;
  rejectRun(runId: number, reason: string): Promise<RunView>;
  abortRun(runId: number): Promise<RunView>;
  /** Activity entries of a run with id > `after` (0: all). */
  runActivity(runId: number, after: number): Promise<ActivityView[]>;
  runDiff(runId: number): Promise<RunDiff>;
  /** An instruction for the running agent's next turn. */
  steerRun(runId: number, text: string): Promise<RunView>;

  // Gates (plan, tool_call, step_review, supervisor_pause, deviation,
  // merge_review, question)
  listGates(pendingOnly: boolean): Promise<GateView[]>;
  showGate(gateId: number): Promise<GateView>;
  /** `context` is the optional free text (reason, feedback, guidance, or
   * for a question the JSON object of answers). */
  decideGate(gateId: number, option: string, context: string | null): Promise<GateView>;
  /** Stops a gate's timer (auto-proceed, expiry): it waits for a human. */
  holdGate(gateId: number): Promise<GateView>;
  /** The chronological story of a gate, each audit record checked. */
  gateStory(gateId: number): Promise<GateStory>;
  /** The whole story of a run: every signed record that decided anything on
   * it or its gates (step verdicts, rules, supervisor votes, timers, humans),
   * each checked. */
  runStory(runId: number): Promise<RunStory>;

  // Messages (hub and spoke: the supervisor, the user, a broadcast; a run
  // only as a reply)
  /** Messages with id > `after` (null: all), of one run (sent by it or to
   * it) or of every run (null). */
  listMessages(run: number | null, after: number | null): Promise<MessageView[]>;
  /** A message from the user; a reply carries the correlation id of what
   * it answers. */
  sendMessage(to: MessageTo, body: string, correlationId: string | null): Promise<MessageView>;

  // Settings
  listWorkspaces(): Promise<Workspace[]>;
  /** A task's own settings as set (rules, approval, supervisor, retries)
   * and its stage. */
  showTask(taskId: number): Promise<TaskInfo>;
  setWorkspaceChecks(workspace: string, sensors: string[], autoAdvance: boolean | null): Promise<Workspace>;
  supervisorStatus(scope: Scope): Promise<PolicyStatus>;
  setSupervisor(scope: Scope, policy: SupervisorPolicy | null): Promise<PolicyStatus>;
  setPermissions(scope: Scope, rules: RuleSet): Promise<RuleSet>;
  notificationSettings(): Promise<NotificationSettings>;
  setNotificationSettings(settings: NotificationSettings): Promise<NotificationSettings>;
  /** A dry run of one of the writes above: the field errors it would be
   * refused with (empty: it would be saved). Writes nothing. */
  checkSettings(change: SettingsChange): Promise<FieldError[]>;
  /** Every agent profile: installed or not, its mode, what it still needs. */
  agents(): Promise<AgentInfo[]>;

  /** Calls `onEvent` for every event the engine pushes; returns an unsubscribe. */
  subscribe(onEvent: (e: EngineEvent) => void): Promise<() => void>;
  /** Calls `onOpen` when the user clicked an OS notification about a run. */
  onOpenRequest(onOpen: (runId: number) => void): Promise<() => void>;
}

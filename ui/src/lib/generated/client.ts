// Generated from the Rust contract (crates/overseer-api) and types (ts-rs): do not edit by hand.
// Regenerate with `make types`; crates/overseer-server/tests/contract.rs fails when they drift.
import type {
  ActivityView,
  AgentInfo,
  DeviceId,
  DeviceView,
  EngineEvent,
  FieldError,
  GateId,
  GatePage,
  GateStory,
  GateView,
  HostEvent,
  HostLinkView,
  HostRemoved,
  HostSetupStep,
  JsonValue,
  MessageTo,
  MessageView,
  NotificationSettings,
  OpenRun,
  Pairing,
  PersonView,
  PolicyStatus,
  RequestedChoice,
  Role,
  RuleSet,
  RuleTexts,
  RunDiff,
  RunId,
  RunStory,
  RunView,
  RunsHead,
  Scope,
  SettingsChange,
  SupervisorPolicy,
  TaskId,
  TaskInfo,
  WebSettings,
  WebStatus,
  Webhook,
  WebhookAdded,
  WebhookDelivery,
  WebhookEvent,
  Workspace,
  WorkspaceSettings,
} from "./types";

/** Everything the window may call: one function per window operation of the
 * contract. Every call rejects with an `ApiError` ({code, message}). */
export interface Operations {
  listRuns(): Promise<Array<RunView>>;
  approveRun(runId: RunId): Promise<RunView>;
  rejectRun(runId: RunId, reason: string): Promise<RunView>;
  abortRun(runId: RunId): Promise<RunView>;
  /**
   * Registers the git repository at `path` (absolute, on the
   * engine's machine) as a workspace, named `name` (default:
   * the repository's directory name). The local owner only
   * (the window, the CLI): a paired device cannot.
   */
  addWorkspace(path: string, name: string | null, settings: WorkspaceSettings): Promise<Workspace>;
  /**
   * Gates oldest first, a page at a time: at most `limit` (null:
   * 200; at most 1,000) after gate `after` (null: from the first),
   * with how many there are in all and after the page. The cost is
   * the page's, not the number pending.
   */
  listGates(pendingOnly: boolean, limit: number | null, after: GateId | null): Promise<GatePage>;
  showGate(gateId: GateId): Promise<GateView>;
  /**
   * Decides a gate. `option` is one of the gate's kind's choices,
   * typed (`{"kind": "tool_call", "choice": "yes"}`; an unknown one
   * is refused when the request is read, one of another kind by
   * the engine; older clients' bare option id is still read).
   * `context` is the optional free text (reason, feedback,
   * guidance, or for a question the JSON object of answers).
   */
  decideGate(gateId: GateId, option: RequestedChoice, context: string | null): Promise<GateView>;
  /** Stop a gate's timer (auto-proceed, expiry): it waits for a human. */
  holdGate(gateId: GateId): Promise<GateView>;
  /**
   * Snooze a pending gate until `until` (ms since the epoch, 5 s to
   * 30 days ahead): out of the inbox and "needs you" until then,
   * when it is told again as opened (and notifies again).
   */
  snoozeGate(gateId: GateId, until: number): Promise<GateView>;
  /** The chronological story of a gate, each record's signature checked. */
  gateStory(gateId: GateId): Promise<GateStory>;
  /**
   * Everything that decided anything on a run (step verdicts,
   * rules' allows and denials, supervisor votes, timers,
   * humans), each record checked.
   */
  runStory(runId: RunId): Promise<RunStory>;
  /** A run's activity entries with id > `after` (0: all). */
  runActivity(runId: RunId, after: number): Promise<Array<ActivityView>>;
  /**
   * The run's diff: files with their counts, the unified diff
   * text, and the files other tools run on their own.
   */
  runDiff(runId: RunId): Promise<RunDiff>;
  /** An instruction for a running agent's next turn; answers the run. */
  steerRun(runId: RunId, text: string): Promise<RunView>;
  /**
   * Messages after `after` (null: all), oldest first: all, or one
   * run's (sent by it, to it, delivered broadcasts).
   */
  listMessages(run: RunId | null, after: number | null): Promise<Array<MessageView>>;
  /**
   * A message from the user to a run, or a broadcast; a reply
   * carries the correlation id of what it answers.
   */
  sendMessage(to: MessageTo, body: string, correlationId: string | null): Promise<MessageView>;
  /** A task and its settings (rules, approval, supervisor, retries, stage). */
  showTask(taskId: TaskId): Promise<TaskInfo>;
  listWorkspaces(): Promise<Array<Workspace>>;
  /** Replace a workspace's sensors and auto-advance override. */
  setWorkspaceChecks(workspace: string, sensors: Array<string>, autoAdvance: boolean | null): Promise<Workspace>;
  /**
   * Two-person merges on or off for a workspace: with it on, a
   * run merges only on the approval of a person who did not
   * start it (never the supervisor's alone).
   */
  setWorkspaceMerge(workspace: string, twoPerson: boolean): Promise<Workspace>;
  supervisorStatus(scope: Scope): Promise<PolicyStatus>;
  /** Set (or with null remove) the supervisor policy at a scope. */
  setSupervisor(scope: Scope, policy: SupervisorPolicy | null): Promise<PolicyStatus>;
  /**
   * Set (or with null remove) the budget at a scope: the most
   * each run may cost (in the currency its agent reports)
   * before it is paused at its next turn.
   */
  setMaxCost(scope: Scope, maxCost: number | null): Promise<number | null>;
  /**
   * Rules as typed, parsed by the engine: a rule that is not one
   * is a typed `invalid_input` naming it.
   */
  setPermissions(scope: Scope, rules: RuleTexts): Promise<RuleSet>;
  /**
   * A settings write checked, not made: the field errors it
   * would be refused with (empty: it would be saved). The
   * window calls it as the user types. Writes nothing.
   */
  checkSettings(change: SettingsChange): Promise<Array<FieldError>>;
  notificationSettings(): Promise<NotificationSettings>;
  setNotificationSettings(settings: NotificationSettings): Promise<NotificationSettings>;
  /** Every agent profile: installed or not, its mode, what it still needs. */
  agents(): Promise<Array<AgentInfo>>;
  /**
   * A one-time code (5 minutes) that pairs a browser or phone
   * named `name` for `person` (a short lowercase name such as
   * `ana`), with the URL to open when the engine serves
   * browsers. Only the local owner may: a paired device is
   * refused `forbidden`.
   */
  pairDevice(person: string, name: string, role: Role | null, workspaces: Array<string> | null): Promise<Pairing>;
  /** Every person with a role (a person sees only their own). */
  listPeople(): Promise<Array<PersonView>>;
  /**
   * Gives a person a role: `approver` (in `workspaces`, null:
   * every one) or `observer`. A signed record; their devices
   * act by it from their next request. Only the owner may.
   */
  setPersonRole(person: string, role: Role, workspaces: Array<string> | null): Promise<PersonView>;
  /**
   * Every paired device, revoked ones too, with when each was
   * last seen; a person through a device sees only their own.
   */
  listDevices(): Promise<Array<DeviceView>>;
  /**
   * Revokes a device: refused from now on, its connections
   * closed. Only the local owner may.
   */
  revokeDevice(deviceId: DeviceId): Promise<DeviceView>;
  /**
   * Whether and where the engine serves browsers, as set and
   * as it stands (its URL, or why it does not serve).
   */
  webServing(): Promise<WebStatus>;
  /**
   * Switches serving browsers on or off, or moves it: a
   * loopback address, or any other with a TLS certificate and
   * key (plain HTTP off loopback is refused with why). Kept
   * across restarts; only the local owner may.
   */
  setWebServing(settings: WebSettings): Promise<WebStatus>;
  /**
   * Every webhook, oldest first (never its secret; to a paired
   * person, each URL cut to its scheme and host).
   */
  listWebhooks(): Promise<Array<Webhook>>;
  /**
   * Adds a webhook: an http(s) URL and the event kinds it gets
   * (empty: every kind). The answer holds its secret, shown
   * this once.
   */
  addWebhook(url: string, events: Array<WebhookEvent>): Promise<WebhookAdded>;
  /** Removes a webhook and its delivery log. */
  removeWebhook(id: number): Promise<Webhook>;
  /**
   * Turns a webhook off (`enabled` false: it gets nothing, and
   * what was pending for it is given up on) or on again; its
   * secret and its log stay. Only the local owner may.
   */
  setWebhookEnabled(id: number, enabled: boolean): Promise<Webhook>;
  /**
   * Sends a test event to a webhook now; answers with its
   * delivery once the first attempt ended (within the
   * receiver's timeout). A write: it sends outside the machine.
   */
  testWebhook(id: number): Promise<WebhookDelivery>;
  /**
   * A webhook's latest deliveries (at most `limit`, null: 50),
   * newest first, each with its attempts.
   */
  webhookDeliveries(id: number, limit: number | null): Promise<Array<WebhookDelivery>>;
  /**
   * The first `limit` rows of the dashboard's default order
   * (needs-you first), with the fleet's size and counts: the
   * first screen of a big fleet, before the whole list (the
   * window's, a host's through its link).
   */
  listRunsHead(limit: number): Promise<RunsHead>;
  /**
   * Every host this machine knows (`overseer hosts add`), with
   * how its link stands: connecting, live (its engine, version,
   * and `resync`, which grows at each reconnection: re-read the
   * host then), or down (since when, why, when it retries).
   */
  hostLinks(): Promise<Array<HostLinkView>>;
  /**
   * One of the window's commands (`command`: its name, such as
   * `decide_gate`; `args`: the arguments the window passes it,
   * camelCase) performed by host `host`'s engine through its
   * link; its answer as that command's. Refused at once while
   * the link is not live (`engine_unavailable`, saying since
   * when and why; nothing was sent). An answer lost as the link
   * dropped is an `engine_unavailable` saying it may have been
   * applied: re-read the host when it is back.
   */
  hostCall(host: string, command: string, args: JsonValue): Promise<JsonValue>;
  /**
   * Reconnects host `host`'s link now instead of at its retry
   * time (a live link is left alone).
   */
  hostRetry(host: string): Promise<null>;
  /**
   * Adds host `name` at `url` (`ssh://[user@]host[:port]`) as
   * `overseer hosts add` does: checks the machine (saying what
   * to install), copies this version's `overseer` there, starts
   * its engine, pins its signing key, and links to it. Each step
   * is told as an `overseer://host-setup` event as it happens;
   * the answer is the new host's link.
   */
  hostAdd(name: string, url: string, sshConfig: string | null): Promise<HostLinkView>;
  /**
   * Installs this version on host `host` and restarts its engine
   * there (`overseer hosts upgrade`); its key must be the pinned
   * one. Steps told as `overseer://host-setup`.
   */
  hostUpgrade(host: string): Promise<HostLinkView>;
  /**
   * Stops host `host`'s engine and forgets the host (`overseer
   * hosts remove`; its files stay there): its link closes and
   * `overseer://host-removed` is pushed.
   */
  hostRemove(host: string): Promise<null>;
}

/** The events the engine pushes to the window. Each listener resolves to
 * its unsubscribe. */
export interface Events {
  /** Every change the engine commits, in commit order. */
  subscribe(on: (payload: EngineEvent) => void): Promise<() => void>;
  /** The user clicked an OS notification about a run: open it. */
  onOpenRequest(on: (payload: OpenRun) => void): Promise<() => void>;
  /** Every event of every host's engine, named by its host. */
  onHostEvent(on: (payload: HostEvent) => void): Promise<() => void>;
  /** A host's link changed state (and at start, once per host). */
  onHostLink(on: (payload: HostLinkView) => void): Promise<() => void>;
  /**
   * One step of adding, upgrading or removing a host, as it
   * happens (from the window or from `overseer hosts` in a terminal).
   */
  onHostSetup(on: (payload: HostSetupStep) => void): Promise<() => void>;
  /**
   * A host was forgotten (from the window or `overseer hosts
   * remove`): its link is closed; drop its rows.
   */
  onHostRemoved(on: (payload: HostRemoved) => void): Promise<() => void>;
}

/** Calls a command by name with its camelCase arguments. */
export type Invoke = <T>(command: string, args?: Record<string, unknown>) => Promise<T>;

/** Listens on a channel; resolves to the unsubscribe. */
export type Listen = <T>(channel: string, on: (payload: T) => void) => Promise<() => void>;

/** The operations, each a call of its command. */
export function operations(invoke: Invoke): Operations {
  return {
    listRuns: () => invoke<Array<RunView>>("list_runs"),
    approveRun: (runId) => invoke<RunView>("approve_run", { runId }),
    rejectRun: (runId, reason) => invoke<RunView>("reject_run", { runId, reason }),
    abortRun: (runId) => invoke<RunView>("abort_run", { runId }),
    addWorkspace: (path, name, settings) => invoke<Workspace>("add_workspace", { path, name, settings }),
    listGates: (pendingOnly, limit, after) => invoke<GatePage>("list_gates", { pendingOnly, limit, after }),
    showGate: (gateId) => invoke<GateView>("show_gate", { gateId }),
    decideGate: (gateId, option, context) => invoke<GateView>("decide_gate", { gateId, option, context }),
    holdGate: (gateId) => invoke<GateView>("hold_gate", { gateId }),
    snoozeGate: (gateId, until) => invoke<GateView>("snooze_gate", { gateId, until }),
    gateStory: (gateId) => invoke<GateStory>("gate_story", { gateId }),
    runStory: (runId) => invoke<RunStory>("run_story", { runId }),
    runActivity: (runId, after) => invoke<Array<ActivityView>>("run_activity", { runId, after }),
    runDiff: (runId) => invoke<RunDiff>("run_diff", { runId }),
    steerRun: (runId, text) => invoke<RunView>("steer_run", { runId, text }),
    listMessages: (run, after) => invoke<Array<MessageView>>("list_messages", { run, after }),
    sendMessage: (to, body, correlationId) => invoke<MessageView>("send_message", { to, body, correlationId }),
    showTask: (taskId) => invoke<TaskInfo>("show_task", { taskId }),
    listWorkspaces: () => invoke<Array<Workspace>>("list_workspaces"),
    setWorkspaceChecks: (workspace, sensors, autoAdvance) => invoke<Workspace>("set_workspace_checks", { workspace, sensors, autoAdvance }),
    setWorkspaceMerge: (workspace, twoPerson) => invoke<Workspace>("set_workspace_merge", { workspace, twoPerson }),
    supervisorStatus: (scope) => invoke<PolicyStatus>("supervisor_status", { scope }),
    setSupervisor: (scope, policy) => invoke<PolicyStatus>("set_supervisor", { scope, policy }),
    setMaxCost: (scope, maxCost) => invoke<number | null>("set_max_cost", { scope, maxCost }),
    setPermissions: (scope, rules) => invoke<RuleSet>("set_permissions", { scope, rules }),
    checkSettings: (change) => invoke<Array<FieldError>>("check_settings", { change }),
    notificationSettings: () => invoke<NotificationSettings>("notification_settings"),
    setNotificationSettings: (settings) => invoke<NotificationSettings>("set_notification_settings", { settings }),
    agents: () => invoke<Array<AgentInfo>>("agents"),
    pairDevice: (person, name, role, workspaces) => invoke<Pairing>("pair_device", { person, name, role, workspaces }),
    listPeople: () => invoke<Array<PersonView>>("list_people"),
    setPersonRole: (person, role, workspaces) => invoke<PersonView>("set_person_role", { person, role, workspaces }),
    listDevices: () => invoke<Array<DeviceView>>("list_devices"),
    revokeDevice: (deviceId) => invoke<DeviceView>("revoke_device", { deviceId }),
    webServing: () => invoke<WebStatus>("web_serving"),
    setWebServing: (settings) => invoke<WebStatus>("set_web_serving", { settings }),
    listWebhooks: () => invoke<Array<Webhook>>("list_webhooks"),
    addWebhook: (url, events) => invoke<WebhookAdded>("add_webhook", { url, events }),
    removeWebhook: (id) => invoke<Webhook>("remove_webhook", { id }),
    setWebhookEnabled: (id, enabled) => invoke<Webhook>("set_webhook_enabled", { id, enabled }),
    testWebhook: (id) => invoke<WebhookDelivery>("test_webhook", { id }),
    webhookDeliveries: (id, limit) => invoke<Array<WebhookDelivery>>("webhook_deliveries", { id, limit }),
    listRunsHead: (limit) => invoke<RunsHead>("list_runs_head", { limit }),
    hostLinks: () => invoke<Array<HostLinkView>>("host_links"),
    hostCall: (host, command, args) => invoke<JsonValue>("host_call", { host, command, args }),
    hostRetry: (host) => invoke<null>("host_retry", { host }),
    hostAdd: (name, url, sshConfig) => invoke<HostLinkView>("host_add", { name, url, sshConfig }),
    hostUpgrade: (host) => invoke<HostLinkView>("host_upgrade", { host }),
    hostRemove: (host) => invoke<null>("host_remove", { host }),
  };
}

/** The commands that decide or change something (the contract's `decide` and `own`). */
export const WRITES: ReadonlySet<string> = new Set([
  "approve_run",
  "reject_run",
  "abort_run",
  "add_workspace",
  "decide_gate",
  "hold_gate",
  "snooze_gate",
  "steer_run",
  "send_message",
  "set_workspace_checks",
  "set_workspace_merge",
  "set_supervisor",
  "set_max_cost",
  "set_permissions",
  "set_notification_settings",
  "pair_device",
  "set_person_role",
  "revoke_device",
  "set_web_serving",
  "add_webhook",
  "remove_webhook",
  "set_webhook_enabled",
  "test_webhook",
  "host_call",
  "host_add",
  "host_upgrade",
  "host_remove",
]);

/** The events, each a listener on its channel. */
export function events(listen: Listen): Events {
  return {
    subscribe: (on) => listen<EngineEvent>("overseer://event", on),
    onOpenRequest: (on) => listen<OpenRun>("overseer://open", on),
    onHostEvent: (on) => listen<HostEvent>("overseer://host-event", on),
    onHostLink: (on) => listen<HostLinkView>("overseer://host-link", on),
    onHostSetup: (on) => listen<HostSetupStep>("overseer://host-setup", on),
    onHostRemoved: (on) => listen<HostRemoved>("overseer://host-removed", on),
  };
}

// An engine in memory, for unit tests and for `npm run dev` in a plain browser.
// It answers like the real one: actions change nothing locally in the caller;
// the change arrives as a pushed event (after the call resolves, as after a
// commit).
import type { Backend } from "./backend";
import fixtures from "./fixtures.json";
import { countRuns, sortRuns } from "../fleet/fleet";
import type { HostTransport } from "../hosts/link";
import type { HostLinkState } from "../hosts/types";
import { hostNameProblem, parseHostUrl } from "../hosts/setup";
import { concernsRun } from "../messages/messages";
import type {
  Activity,
  ActivityView,
  HostEvent,
  HostLinkView,
  HostRemoved,
  HostSetupStep,
  JsonValue,
  DeviceView,
  Grant,
  Pairing,
  PersonView,
  Role,
  RunActions,
  GateBody,
  GateKind,
  StepRecord,
  ToolCallGate,
  ToolRequest,
  AgentInfo,
  ApiError,
  AskKind,
  Containment,
  EngineEvent,
  FieldError,
  GateStory,
  RunStory,
  GateView,
  MessageTo,
  MessageView,
  NotificationSettings,
  OpenRun,
  PolicyStatus,
  RequestedChoice,
  ReleaseReason,
  RuleSet,
  RunDiff,
  RunView,
  RunsHead,
  Scope,
  SettingsChange,
  SupervisorPolicy,
  TaskInfo,
  TaskSettings,
  Workspace,
  WorkspaceSettings,
  WebSettings,
  WebStatus,
  Webhook,
  WebhookDelivery,
  WebhookEvent,
} from "../types";

const fail = (code: ApiError["code"], message: string): ApiError => ({ code, message });

/** Notification settings with nothing muted. */
export const NO_MUTES: NotificationSettings = {
  muted: [],
  desktop_muted: false,
  webhook_muted: [],
  webhooks_muted: false,
  urgency: { blocking: null, question: null, info: null },
};

/** Every event a hook can subscribe to (the engine's order). */
const ALL_EVENTS: WebhookEvent[] = [
  "agent_question_pending",
  "agent_question_blocking",
  "run_pending_review",
  "run_failed",
  "supervisor_escalated",
  "supervisor_failed",
  "security_event",
  "agent_message_blocked",
  "disk_full",
  "run_finished",
];

/** The few refusals the mock engine fakes, one per kind of settings write,
 * so the window's wiring (messages under fields, as typed and on save) runs
 * without the engine. Not the engine's rules (those live in core and reach
 * the window only through its answers): one sample each. */
export function fakeFieldErrors(change: SettingsChange): FieldError[] {
  switch (change.kind) {
    case "workspace_checks":
      return change.sensors.flatMap((s, i) =>
        s.trim() ? [] : [{ field: `sensors[${i}]`, message: `sensor ${i + 1} is empty: give a check command such as \`npm test\`, or remove it` }],
      );
    case "supervisor":
      return change.policy?.timeout_seconds === 0
        ? [{ field: "policy.timeout_seconds", message: "timeout_seconds = 0 is out of range: give 1 to 3600 seconds" }]
        : [];
    case "permissions":
      return change.rules.allow.flatMap((r, i) =>
        r.includes("(") && !r.endsWith(")") ? [{ field: `rules.allow[${i}]`, message: `rule '${r}' is missing its closing ')'` }] : [],
      );
    case "notifications":
      return change.settings.muted.flatMap((k, i) =>
        k === "agent_question_blocking" ? [{ field: `notifications.muted[${i}]`, message: `${k} cannot be muted: an agent is stopped until you answer` }] : [],
      );
  }
}

/** A write refused as the engine refuses it: its fields, and a message. */
function refuse(change: SettingsChange): void {
  const fields = fakeFieldErrors(change);
  if (fields.length > 0) {
    throw { code: "invalid_input", message: fields.map((f) => f.message).join("; "), fields } satisfies ApiError;
  }
}

/** A machine that contains runs (what the demo shows in Settings → Agents). */
const MOCK_CONTAINMENT: Containment = {
  sandbox: { state: "available", bwrap: "/usr/bin/bwrap" },
  cgroups: { state: "available", root: "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice" },
  scopes: { state: "available", abi: 7 },
  limits: { state: "available", controllers: ["pids", "memory", "cpu"], how: "cgroup v2" },
  private_network: { state: "available", helper: "/usr/bin/slirp4netns" },
};

/** The supervisor policy of a scope that sets none: the engine's, recorded. */
export function defaultPolicy(): SupervisorPolicy {
  return structuredClone(RECORDED.default_policy);
}

/** A payload of `kind` with nothing in it (core's `GateBody::empty`). */
export function emptyBody(kind: GateKind): GateBody {
  switch (kind) {
    case "plan":
      return { kind, payload: { goal: "", steps: [], files: [], risks: [], source: "requested" } };
    case "tool_call":
      return { kind, payload: toolCallGate({ tool: "", kind: "other" }) };
    case "step_review":
      return { kind, payload: stepRecord() };
    case "supervisor_pause":
      return { kind, payload: { rationale: "" } };
    case "deviation":
      return { kind, payload: { cause: "turn_failed", error: "" } };
    case "merge_review":
      return { kind, payload: {} };
    case "question":
      return { kind, payload: { message: "" } };
  }
}

/** A step record as the engine writes it, with these fields set. */
export function stepRecord(fields: Partial<StepRecord> = {}): StepRecord {
  return { step: 1, plan: null, drift: [], destructive: false, checks_passed: 0, checks_total: 0, sensors: [], retries: 0, tool_calls_ok: 0, tool_calls_total: 0, summary: "", ...fields };
}

/** A tool call the rules send to a human, as the engine writes it. */
export function toolCallGate(request: Partial<ToolRequest>, fields: Partial<ToolCallGate> = {}): ToolCallGate {
  return {
    tool_call: { id: null, title: null, kind: null, raw_input: null },
    request: { tool: "Bash", kind: "execute", command: null, paths: [], ...request },
    reason: "",
    rule: null,
    always_gated: null,
    always_gated_why: null,
    agent_options: [],
    ...fields,
  };
}

export class MockBackend implements Backend {
  runs = new Map<number, RunView>();
  gates = new Map<number, GateView>();
  activity = new Map<number, ActivityView[]>();
  diffs = new Map<number, RunDiff>();
  workspaces: Workspace[] = [];
  notifications: NotificationSettings = { ...NO_MUTES };
  webhooks: Webhook[] = [];
  deliveries: WebhookDelivery[] = [];
  agentInfos: AgentInfo[] = [];
  policies = new Map<string, SupervisorPolicy | null>();
  /** A task's own settings, by task id (a task without an entry has the
   * defaults). */
  taskSettings = new Map<number, TaskSettings>();
  messages: MessageView[] = [];
  private listeners = new Set<(e: EngineEvent) => void>();
  private openers = new Set<(open: OpenRun) => void>();
  /** Calls made, for tests: `"approveRun 3"`, `"decideGate 7 yes"`. */
  calls: string[] = [];
  /** For the recorded demo: how far its times were moved (its answers to
   * actions come from the recording too). Null for rows a test made. */
  demoShift: number | null = null;
  /** When set, the next call fails with this error. */
  failNext: ApiError | null = null;

  constructor(
    runs: RunView[] = [],
    private now: () => number = Date.now,
    gates: GateView[] = [],
  ) {
    for (const r of runs) this.runs.set(r.id, structuredClone(r));
    for (const g of gates) this.gates.set(g.id, structuredClone(g));
  }

  private async answer<T>(call: string, f: () => T): Promise<T> {
    this.calls.push(call);
    if (this.failNext) {
      const e = this.failNext;
      this.failNext = null;
      throw e;
    }
    return structuredClone(f());
  }

  private run(id: number): RunView {
    const r = this.runs.get(id);
    if (!r) throw fail("not_found", `run ${id} does not exist`);
    return r;
  }

  private gate(id: number): GateView {
    const g = this.gates.get(id);
    if (!g) throw fail("not_found", `gate ${id} does not exist`);
    return g;
  }

  listRuns() {
    return this.answer("listRuns", () => [...this.runs.values()]);
  }

  listRunsHead(limit: number) {
    return this.answer(`listRunsHead ${limit}`, (): RunsHead => {
      const all = [...this.runs.values()];
      return { rows: sortRuns(all).slice(0, limit), total: all.length, counts: countRuns(all) };
    });
  }

  approveRun(runId: number) {
    return this.answer(`approveRun ${runId}`, () => this.release(runId, "merged", null, false, `approve_run ${runId}`));
  }

  rejectRun(runId: number, reason: string) {
    return this.answer(`rejectRun ${runId}`, () => {
      if (!reason.trim()) throw fail("invalid_input", "rejecting a run needs a reason: say what is wrong");
      return this.release(runId, "human_rejected", reason, false, `reject_run ${runId}`);
    });
  }

  abortRun(runId: number) {
    return this.answer(`abortRun ${runId}`, () => this.release(runId, "aborted_by_user", null, true, `abort_run ${runId}`));
  }

  runActivity(runId: number, after: number) {
    return this.answer(`runActivity ${runId}`, () => {
      this.run(runId);
      return (this.activity.get(runId) ?? []).filter((a) => a.id > after);
    });
  }

  runDiff(runId: number) {
    return this.answer(`runDiff ${runId}`, () => {
      this.run(runId);
      return this.diffs.get(runId) ?? { files: [], diff: "", auto_run: [] };
    });
  }

  steerRun(runId: number, text: string) {
    return this.answer(`steerRun ${runId}`, () => {
      const r = this.run(runId);
      if (!r.actions.steer) throw fail("invalid_transition", `run ${runId} is ${r.state.state}; only a run whose agent is still working can be steered`);
      if (!text.trim()) throw fail("invalid_input", "the instruction is empty: say what the agent should do");
      this.addActivity(runId, { kind: "user_instruction", payload: { text, by: "user:app" } });
      return r;
    });
  }

  listGates(pendingOnly: boolean, limit: number | null, after: number | null) {
    return this.answer("listGates", () => {
      const all = [...this.gates.values()]
        .filter((g) => !pendingOnly || g.status === "pending")
        .sort((a, b) => a.id - b.id);
      const rest = all.filter((g) => after === null || g.id > after);
      const gates = rest.slice(0, Math.min(limit ?? 200, 1000));
      const remaining = rest.length - gates.length;
      return {
        gates,
        total: all.length,
        remaining,
        next_after: remaining > 0 ? (gates.at(-1)?.id ?? after) : null,
      };
    });
  }

  showGate(gateId: number) {
    return this.answer(`showGate ${gateId}`, () => this.gate(gateId));
  }

  decideGate(gateId: number, choice: RequestedChoice, context: string | null) {
    const option = choice.choice;
    return this.answer(`decideGate ${gateId} ${option}`, () => {
      const g = this.gate(gateId);
      if (g.status === "decided") throw fail("already_decided", `gate ${gateId} was already decided`);
      if (choice.kind !== g.kind) throw fail("invalid_input", `gate ${gateId}: '${option}' is a choice of ${choice.kind} gates; this is a ${g.kind} gate`);
      const opt = g.options.find((o) => o.id === option);
      if (!opt) throw fail("invalid_input", `option '${option}' is not offered by this gate (offered: ${g.options.map((o) => o.id).join(", ")})`);
      if (opt.requires_context && !context?.trim()) throw fail("invalid_input", `option '${option}' needs a reason: say why`);
      const next: GateView = {
        ...g,
        status: "decided",
        auto_at: null,
        decision: { option, context, actor: { kind: "user", name: "app" }, at: this.now() },
      };
      this.gates.set(gateId, next);
      const run = this.runs.get(g.run_id);
      const events: EngineEvent[] = [{ type: "gate_decided", gate_id: gateId, run_id: g.run_id, kind: g.kind }];
      if (run && run.pending_gate?.id === gateId) {
        const updated: RunView = this.recordedAfter(`decide_gate ${gateId}`, run) ?? { ...run, pending_gate: null, needs_you: false };
        events.push({ type: "run_changed", run: updated });
      }
      this.later(events);
      return next;
    });
  }

  holdGate(gateId: number) {
    return this.answer(`holdGate ${gateId}`, () => {
      const g = this.gate(gateId);
      if (g.status === "decided") throw fail("already_decided", `gate ${gateId} was already decided`);
      // The supervisor's decision waiting for its grace is a timer too.
      const next: GateView = { ...g, auto_at: null, auto_option: null };
      delete next.pending_effect;
      this.gates.set(gateId, next);
      return next;
    });
  }

  snoozeGate(gateId: number, until: number) {
    return this.answer(`snoozeGate ${gateId}`, () => {
      const g = this.gate(gateId);
      if (g.status === "decided") throw fail("already_decided", `gate ${gateId} was already decided`);
      const next = { ...g, snoozed_until: until };
      this.gates.set(gateId, next);
      return next;
    });
  }

  /** "Why?" as the engine recorded it for the demo (the gate as it is now). */
  gateStory(gateId: number) {
    return this.answer(`gateStory ${gateId}`, (): GateStory => {
      const gate = this.gate(gateId);
      const story = RECORDED.gate_stories.find((s) => s.gate.id === gateId);
      if (!story) throw fail("not_found", `no story of gate ${gateId} was recorded (the demo's are)`);
      return { ...story, gate };
    });
  }

  runStory(runId: number) {
    return this.answer(`runStory ${runId}`, (): RunStory => {
      const run = this.run(runId);
      const story = RECORDED.run_stories.find((s) => s.run.id === runId);
      if (!story) throw fail("not_found", `no story of run ${runId} was recorded (the demo's are)`);
      return { ...story, run };
    });
  }

  listMessages(run: number | null, after: number | null) {
    return this.answer(`listMessages ${run ?? "all"}`, () => {
      const where = run !== null ? this.run(run) : null;
      const scope = where ? { workspace: where.workspace, task: where.task_id } : undefined;
      return this.messages.filter((m) => m.id > (after ?? 0) && (run === null || concernsRun(m, run, scope)));
    });
  }

  sendMessage(to: MessageTo, body: string, correlationId: string | null) {
    return this.answer(`sendMessage ${to.to === "run" ? `run ${to.run}` : to.to}`, () => {
      if (!body.trim()) throw fail("invalid_input", "a message needs a body: say something");
      if (to.to === "supervisor" || to.to === "user") throw fail("invalid_input", "from here a message goes to a run or to every run");
      if (to.to === "run" && this.run(to.run).state.state === "released") throw fail("invalid_transition", `run ${to.run} is released; only a live run reads messages`);
      return this.postMessage({ from_run: null, from: "user:app", to, body, correlation_id: correlationId });
    });
  }

  /** Posts a message as the engine would (from an agent, or the user) and
   * pushes its event. */
  postMessage(m: Omit<MessageView, "id" | "at" | "status" | "blocked_reason"> & Partial<Pick<MessageView, "status" | "blocked_reason">>): MessageView {
    const message: MessageView = { status: "delivered", blocked_reason: null, ...m, id: this.messages.length + 1, at: this.now() };
    this.messages.push(message);
    this.later([{ type: "message_posted", message }]);
    return message;
  }

  listWorkspaces() {
    return this.answer("listWorkspaces", () => this.workspaces);
  }

  addWorkspace(path: string, name: string | null, settings: WorkspaceSettings) {
    return this.answer(`addWorkspace ${path}`, () => {
      if (!path.startsWith("/")) throw fail("invalid_input", `${path}: give the repository's absolute path on the engine's machine`);
      const chosen = name?.trim() || path.replace(/\/+$/, "").split("/").pop() || "workspace";
      if (this.workspaces.some((w) => w.name === chosen)) throw fail("conflict", `a workspace named ${chosen} exists already`);
      const ws: Workspace = { id: this.workspaces.length + 1, name: chosen, path, settings };
      this.workspaces.push(ws);
      this.changed({ workspace: chosen, task: null });
      return ws;
    });
  }

  showTask(taskId: number) {
    return this.answer(`showTask ${taskId}`, (): TaskInfo => {
      const run = [...this.runs.values()].find((r) => r.task_id === taskId);
      if (!run) throw fail("not_found", `task ${taskId} does not exist: \`overseer runs list\` shows tasks and runs`);
      const settings = this.taskSettings.get(taskId) ?? { approval: { mode: "manual" }, session: "normal" };
      return { task_id: taskId, workspace: run.workspace, title: run.task_title, stage: "default", settings };
    });
  }

  setWorkspaceChecks(workspace: string, sensors: string[], autoAdvance: boolean | null) {
    return this.answer(`setWorkspaceChecks ${workspace}`, () => {
      const ws = this.workspaces.find((w) => w.name === workspace);
      if (!ws) throw fail("not_found", `workspace ${workspace} does not exist`);
      refuse({ kind: "workspace_checks", workspace, sensors, auto_advance: autoAdvance });
      ws.settings = { ...ws.settings, sensors: sensors.map((s) => s.trim()), auto_advance: autoAdvance };
      this.changed({ workspace, task: null });
      return ws;
    });
  }

  setWorkspaceMerge(workspace: string, twoPerson: boolean) {
    return this.answer(`setWorkspaceMerge ${workspace}`, () => {
      const ws = this.workspaces.find((w) => w.name === workspace);
      if (!ws) throw fail("not_found", `workspace ${workspace} does not exist`);
      ws.settings = { ...ws.settings, two_person_merge: twoPerson };
      this.changed({ workspace, task: null });
      return ws;
    });
  }

  /** What the engine pushes when a scope's settings changed. */
  private changed(scope: Scope) {
    this.later([scope.task === null ? { type: "workspace_changed", name: scope.workspace } : { type: "task_changed", task_id: scope.task }]);
  }

  supervisorStatus(scope: Scope) {
    return this.answer("supervisorStatus", (): PolicyStatus => this.status(scope));
  }

  setSupervisor(scope: Scope, policy: SupervisorPolicy | null) {
    return this.answer("setSupervisor", (): PolicyStatus => {
      refuse({ kind: "supervisor", scope, policy });
      this.policies.set(key(scope), policy);
      this.changed(scope);
      return this.status(scope);
    });
  }

  setMaxCost(scope: Scope, maxCost: number | null) {
    return this.answer(`setMaxCost ${key(scope)}`, () => {
      if (maxCost !== null && !(Number.isFinite(maxCost) && maxCost > 0)) {
        throw fail("invalid_input", `a budget of ${maxCost} cannot be: give an amount above 0, or none`);
      }
      const max_cost = maxCost ?? undefined;
      if (scope.task === null) {
        const ws = this.workspaces.find((w) => w.name === scope.workspace);
        if (ws) ws.settings = { ...ws.settings, max_cost };
      } else {
        const own = this.taskSettings.get(scope.task) ?? { approval: { mode: "manual" }, session: "normal" };
        this.taskSettings.set(scope.task, { ...own, max_cost });
      }
      this.changed(scope);
      return maxCost;
    });
  }

  setPermissions(scope: Scope, rules: RuleSet) {
    return this.answer(`setPermissions ${key(scope)}`, () => {
      refuse({ kind: "permissions", scope, rules });
      if (scope.task === null) {
        const ws = this.workspaces.find((w) => w.name === scope.workspace);
        if (ws) ws.settings = { ...ws.settings, permissions: structuredClone(rules) };
      } else {
        const own = this.taskSettings.get(scope.task) ?? { approval: { mode: "manual" }, session: "normal" };
        this.taskSettings.set(scope.task, { ...own, permissions: structuredClone(rules) });
      }
      this.changed(scope);
      return rules;
    });
  }

  notificationSettings() {
    return this.answer("notificationSettings", () => this.notifications);
  }

  agents() {
    return this.answer("agents", () => this.agentInfos);
  }

  setNotificationSettings(settings: NotificationSettings) {
    return this.answer("setNotificationSettings", () => {
      refuse({ kind: "notifications", settings });
      this.notifications = structuredClone(settings);
      return this.notifications;
    });
  }

  listWebhooks() {
    return this.answer("listWebhooks", () => this.webhooks);
  }

  addWebhook(url: string, events: WebhookEvent[]) {
    return this.answer(`addWebhook ${url}`, () => {
      // One sample of the engine's refusal (its rules live in the engine).
      if (!/^https?:\/\/[^/\s]+/i.test(url.trim())) {
        throw fail("invalid_input", `${JSON.stringify(url)} is not a webhook URL: give an http:// or https:// URL such as https://ntfy.sh/<topic>`);
      }
      const id = (this.webhooks.at(-1)?.id ?? 0) + 1;
      const webhook: Webhook = {
        id,
        url: url.trim(),
        events: events.length === 0 ? [...ALL_EVENTS] : ALL_EVENTS.filter((e) => events.includes(e)),
        enabled: true,
        created_at: this.now(),
      };
      this.webhooks.push(webhook);
      return { webhook, secret: "5ec7e7".padEnd(64, "0") };
    });
  }

  removeWebhook(id: number) {
    return this.answer(`removeWebhook ${id}`, () => {
      const hook = this.webhooks.find((h) => h.id === id);
      if (!hook) throw fail("not_found", `webhook ${id} does not exist: \`overseer webhooks list\` shows the hooks`);
      this.webhooks = this.webhooks.filter((h) => h.id !== id);
      this.deliveries = this.deliveries.filter((d) => d.webhook_id !== id);
      return hook;
    });
  }

  setWebhookEnabled(id: number, enabled: boolean) {
    return this.answer(`setWebhookEnabled ${id} ${enabled}`, () => {
      const hook = this.webhooks.find((h) => h.id === id);
      if (!hook) throw fail("not_found", `webhook ${id} does not exist: \`overseer webhooks list\` shows the hooks`);
      if (hook.enabled && !enabled) {
        for (const d of this.deliveries) {
          if (d.webhook_id === id && d.status === "pending") {
            d.status = "failed";
            d.next_at = null;
            d.note = "not sent: the hook was disabled";
          }
        }
      }
      hook.enabled = enabled;
      return { ...hook };
    });
  }

  testWebhook(id: number) {
    return this.answer(`testWebhook ${id}`, () => {
      const hook = this.webhooks.find((h) => h.id === id);
      if (!hook) throw fail("not_found", `webhook ${id} does not exist: \`overseer webhooks list\` shows the hooks`);
      if (!hook.enabled) throw fail("conflict", `webhook ${id} is disabled and gets nothing, tests included: \`overseer webhooks enable ${id}\` first`);
      const at = this.now();
      const delivery: WebhookDelivery = {
        id: this.deliveries.length + 1,
        webhook_id: id,
        event: "test",
        title: "Overseer test",
        status: "delivered",
        attempts: [{ at, status_code: 200, error: null, duration_ms: 12 }],
        next_at: null,
        note: null,
        created_at: at,
      };
      this.deliveries.unshift(delivery);
      return delivery;
    });
  }

  webhookDeliveries(id: number, limit: number | null) {
    return this.answer(`webhookDeliveries ${id}`, () =>
      this.deliveries.filter((d) => d.webhook_id === id).slice(0, limit ?? 50),
    );
  }

  checkSettings(change: SettingsChange) {
    return this.answer(`checkSettings ${change.kind}`, () => fakeFieldErrors(change));
  }

  /** Paired devices (the engine keeps them; the mock keeps a list). */
  devices: DeviceView[] = [];

  pairDevice(person: string, name: string, _role: Role | null = null, _workspaces: string[] | null = null) {
    return this.answer(`pairDevice ${person}`, (): Pairing => {
      if (!/^[a-z][a-z0-9_-]{0,31}$/.test(person) || person === "app" || person === "cli") {
        throw fail("invalid_input", `person \`${person}\` is not a valid name: a short lowercase name such as \`ana\``);
      }
      if (!name.trim()) throw fail("invalid_input", "name the device, so that it can be told apart when listed");
      return { code: "ABCD-EFGH", expires_at: this.now() + 5 * 60_000, url: null };
    });
  }

  listDevices() {
    return this.answer("listDevices", () => this.devices);
  }

  listPeople() {
    return this.answer("listPeople", (): PersonView[] => {
      const names = [...new Set(this.devices.map((d) => d.person))];
      return names.map((person) => ({
        person,
        grant: this.devices.find((d) => d.person === person)?.grant ?? { role: "observer", workspaces: null },
        set_by: "user:app",
        set_at: 0,
        migrated: false,
      }));
    });
  }

  setPersonRole(person: string, role: Role, workspaces: string[] | null) {
    return this.answer(`setPersonRole ${person} ${role}`, (): PersonView => {
      const grant: Grant = { role, workspaces: role === "approver" ? workspaces : null };
      const changed = this.devices.filter((d) => d.person === person);
      for (const d of changed) d.grant = grant;
      this.later(changed.map((d) => ({ type: "device_changed", device: structuredClone(d) })));
      return { person, grant, set_by: "user:app", set_at: this.now(), migrated: false };
    });
  }

  revokeDevice(deviceId: number) {
    return this.answer(`revokeDevice ${deviceId}`, () => {
      const d = this.devices.find((x) => x.id === deviceId);
      if (!d) throw fail("not_found", `device ${deviceId} does not exist`);
      if (d.revoked_at === null) {
        d.revoked_at = this.now();
        this.later([{ type: "device_changed", device: structuredClone(d) }]);
      }
      return d;
    });
  }

  /** Serving browsers: off on loopback until switched on. */
  web: WebStatus = {
    settings: { enabled: false, addr: "127.0.0.1:8765", tls_cert: null, tls_key: null, public_origins: [] },
    serving: false,
    url: null,
    error: null,
  };

  webServing() {
    return this.answer("webServing", () => this.web);
  }

  setWebServing(settings: WebSettings) {
    return this.answer(`setWebServing ${settings.enabled}`, (): WebStatus => {
      // One sample of the engine's refusal, so the form's wiring runs.
      const loopback = /^(127\.|\[::1\]|localhost)/.test(settings.addr);
      if (settings.enabled && !loopback && !settings.tls_cert) {
        const message = `refusing to serve plain HTTP on ${settings.addr}: it is not a loopback address`;
        throw { ...fail("invalid_input", message), fields: [{ field: "addr", message }] };
      }
      const url = settings.enabled ? `${settings.tls_cert ? "https" : "http"}://${settings.addr}` : null;
      this.web = { settings, serving: settings.enabled, url: settings.public_origins[0] ?? url, error: null };
      this.later([{ type: "web_serving_changed", status: structuredClone(this.web) }]);
      return this.web;
    });
  }

  async subscribe(onEvent: (e: EngineEvent) => void) {
    this.listeners.add(onEvent);
    return () => {
      this.listeners.delete(onEvent);
    };
  }

  /** The app's hosts, when this mock stands for the app (none unless a
   * test or the dev server adds some): its host commands and events are
   * theirs. */
  readonly appHosts: MockHosts = new MockHosts(() => this.now());

  async hostLinks(): Promise<HostLinkView[]> {
    return this.appHosts.links();
  }

  async hostCall(host: string, command: string, args: JsonValue): Promise<JsonValue> {
    const plain = typeof args === "object" && args !== null && !Array.isArray(args) ? args : {};
    return (await this.appHosts.call(host, command, plain)) as JsonValue;
  }

  async hostRetry(host: string): Promise<null> {
    if (!this.appHosts.views.has(host)) throw fail("not_found", `no host named "${host}": \`overseer hosts list\` shows the hosts`);
    await this.appHosts.retry(host);
    return null;
  }

  hostAdd(name: string, url: string, sshConfig: string | null): Promise<HostLinkView> {
    return this.appHosts.addHost(name, url, sshConfig);
  }

  hostUpgrade(host: string): Promise<HostLinkView> {
    return this.appHosts.upgradeHost(host);
  }

  async hostRemove(host: string): Promise<null> {
    await this.appHosts.removeHost(host);
    return null;
  }

  async onHostEvent(on: (e: HostEvent) => void) {
    return this.appHosts.onEvent((host, event) => on({ host, event }));
  }

  async onHostLink(on: (v: HostLinkView) => void) {
    return this.appHosts.onLink(on);
  }

  async onHostSetup(on: (step: HostSetupStep) => void) {
    return this.appHosts.onSetup(on);
  }

  async onHostRemoved(on: (r: HostRemoved) => void) {
    return this.appHosts.onRemoved((host) => on({ host }));
  }

  async onOpenRequest(onOpen: (open: OpenRun) => void) {
    this.openers.add(onOpen);
    return () => {
      this.openers.delete(onOpen);
    };
  }

  /** Pushes an event as the engine would after a commit. */
  push(e: EngineEvent) {
    if (e.type === "run_changed") this.runs.set(e.run.id, structuredClone(e.run));
    for (const l of this.listeners) l(structuredClone(e));
  }

  /** As if the user clicked a notification about `runId`. */
  clickNotification(runId: number) {
    for (const o of this.openers) o({ run_id: runId });
  }

  /** Opens a gate as an agent would, and pushes its events. */
  openGate(gate: GateView) {
    this.gates.set(gate.id, structuredClone(gate));
    const run = this.runs.get(gate.run_id);
    const events: EngineEvent[] = [{ type: "gate_opened", gate_id: gate.id, run_id: gate.run_id, kind: gate.kind }];
    if (run) events.push({ type: "run_changed", run: { ...run, needs_you: true, pending_gate: { id: gate.id, kind: gate.kind, ask_kind: gate.ask_kind } } });
    for (const e of events) this.push(e);
  }

  addActivity(runId: number, activity: Activity) {
    const list = this.activity.get(runId) ?? [];
    const all = [...this.activity.values()].flat();
    const entry: ActivityView = { id: all.length + 1, run_id: runId, at: this.now(), ...activity };
    list.push(entry);
    this.activity.set(runId, list);
    this.later([{ type: "run_activity", activity: entry }]);
  }

  private later(events: EngineEvent[]) {
    // Pushed asynchronously, like the real engine's events after commit.
    queueMicrotask(() => {
      for (const e of events) this.push(e);
    });
  }

  private status(scope: Scope): PolicyStatus {
    const own = this.policies.get(key(scope)) ?? null;
    const inherited = scope.task === null ? null : (this.policies.get(key({ ...scope, task: null })) ?? null);
    return { scope, own, effective: own ?? inherited ?? defaultPolicy() };
  }

  /** The row the engine answered after `op` on the recorded demo (moved to
   * now, the caller's words kept); null on rows a test made itself. */
  private recordedAfter(op: string, run: RunView): RunView | null {
    const shift = this.demoShift;
    const r = shift === null ? undefined : RECORDED.after[op];
    if (r === undefined || shift === null) return null;
    return { ...structuredClone(r), state_since: r.state_since + shift, created_at: r.created_at + shift, release_note: run.release_note };
  }

  private release(runId: number, reason: ReleaseReason, note: string | null, anyActive: boolean, op: string): RunView {
    const run = this.run(runId);
    const active = run.state.state !== "released";
    if (!(run.state.state === "pending_review" || (anyActive && active))) {
      throw fail("invalid_transition", `cannot change a run that is ${run.state.state}`);
    }
    const recorded = this.recordedAfter(op, run);
    const next: RunView = recorded ? { ...recorded, release_note: note ?? run.release_note } : {
      ...run,
      state: { state: "released", reason },
      state_since: this.now(),
      needs_you: false,
      pending_gate: null,
      release_note: note ?? run.release_note,
      actions: released(run.actions),
    };
    const events: EngineEvent[] = [];
    for (const g of this.gates.values()) {
      if (g.run_id === runId && g.status === "pending") {
        this.gates.set(g.id, { ...g, status: "decided", decision: { option: "abort", context: null, actor: { kind: "user", name: "app" }, at: this.now() } });
        events.push({ type: "gate_decided", gate_id: g.id, run_id: runId, kind: g.kind });
      }
    }
    events.push({ type: "run_changed", run: next });
    this.later(events);
    return next;
  }
}

/** What the engine answered about the demo fleet, recorded by the engine's
 * own test (crates/overseer-engine/tests/ui_fixtures.rs; `make types`
 * records it again): runs, gates, workspaces and their "Why?" stories as the
 * contract's read operations return them, and each run's row after the
 * actions the window offers on it. Nothing here invents a row or re-derives a rule. */
const RECORDED = fixtures as unknown as {
  now: number;
  runs: RunView[];
  gates: GateView[];
  workspaces: Workspace[];
  default_policy: SupervisorPolicy;
  gate_stories: GateStory[];
  run_stories: RunStory[];
  /** The run's row after an action on the demo, by `"<operation> <id>"`. */
  after: Record<string, RunView>;
};

const recordedRun = (id: number): RunView => {
  const r = RECORDED.runs.find((r) => r.id === id);
  if (!r) throw new Error(`the recorded demo has no run ${id}: run \`make types\``);
  return r;
};

/** The actions the engine ships (core's `run_actions`) on a launched run
 * that works, one in review, and one released: as recorded. */
export const WORKING: RunActions = recordedRun(2).actions;
export const IN_REVIEW: RunActions = recordedRun(1).actions;
/** Run `id` of the demo agent in workspace `w`, waiting for review: a row
 * for tests. */
export const reviewRun = (id: number, title = `task ${id}`): RunView => ({
  id,
  task_id: id,
  task_title: title,
  workspace: "w",
  agent: "demo",
  state: { state: "pending_review" },
  state_since: 0,
  created_at: 0,
  needs_you: true,
  attention_rank: 0,
  release_note: null,
  origin: "launched",
  actions: IN_REVIEW,
  pending_gate: null,
});

/** A pending tool-call gate `id` of run `runId` (the recorded demo's,
 * renumbered): a card for tests. */
export function pendingToolGate(id: number, runId: number): GateView {
  const g = RECORDED.gates.find((g) => g.kind === "tool_call" && g.status === "pending");
  if (!g) throw new Error("the recorded demo has no pending tool call");
  return { ...structuredClone(g), id, run_id: runId };
}
/** A released run allows nothing but its diff. */
export const released = (a: RunActions): RunActions => ({ ...recordedRun(7).actions, diff: a.diff });

/** The recorded rows and gates, moved in time so the demo happened just
 * before `now` (their attention ranks keep the order: every time moves by
 * the same amount). */
function recorded(now: number, external: boolean): { runs: RunView[]; gates: GateView[] } {
  const d = now - RECORDED.now;
  const mine = (r: RunView) => (r.origin !== "launched") === external;
  const runs = RECORDED.runs.filter(mine).map((r) => ({ ...structuredClone(r), state_since: r.state_since + d, created_at: r.created_at + d }));
  const ids = new Set(runs.map((r) => r.id));
  const gates = RECORDED.gates
    .filter((g) => ids.has(g.run_id))
    .map((g) => ({
      ...structuredClone(g),
      opened_at: g.opened_at + d,
      auto_at: g.auto_at === null ? null : g.auto_at + d,
      decision: g.decision ? { ...g.decision, at: g.decision.at + d } : null,
    }));
  return { runs, gates };
}

function key(scope: Scope): string {
  return `${scope.workspace}/${scope.task ?? "*"}`;
}

/** A small fleet with a gate of every kind, so a plain browser shows every
 * surface (`npm run dev`): the launched runs of the recorded demo. */
export function demoBackend(now: number): MockBackend {
  const { runs, gates } = recorded(now, false);
  const mock = new MockBackend(runs, Date.now, gates);
  mock.demoShift = now - RECORDED.now;
  mock.workspaces = structuredClone(RECORDED.workspaces);
  mock.agentInfos = [
    { name: "claude", command: "claude-agent-acp", found: "/usr/local/bin/claude-agent-acp", mode: "default", mode_effect: "asks before every edit and command", plan: "auto", needs: [], from_file: false, containment: MOCK_CONTAINMENT, contained: true, network: "private" },
    { name: "codex", command: "codex-acp", mode: "read-only", mode_effect: "reads; asks before edits and commands", plan: "prompt", needs: ["`codex-acp` on PATH (not found): npm install -g @zed-industries/codex-acp"], from_file: false, containment: MOCK_CONTAINMENT, contained: true, network: "private" },
    { name: "demo", command: "/opt/overseer/overseer-demo-agent", found: "/opt/overseer/overseer-demo-agent", mode: "default", mode_effect: "asks before every edit and command", plan: "auto", needs: [], from_file: false, containment: MOCK_CONTAINMENT, contained: true, network: "private" },
  ];
  mock.diffs.set(1, {
    files: [{ path: "src/limit.ts", additions: 3, deletions: 1 }],
    diff: "diff --git a/src/limit.ts b/src/limit.ts\n--- a/src/limit.ts\n+++ b/src/limit.ts\n@@ -1,3 +1,5 @@\n-export const LIMIT = 10;\n+export const LIMIT = 100;\n+// per minute\n+export const WINDOW_MS = 60_000;\n export function allow() {\n   return true;\n",
    auto_run: [],
  });
  return mock;
}

/** Adds external sessions to a demo engine: a terminal Claude Code whose
 * tool call waits (run 8), an MCP client with an info item (run 9), and a few
 * agent messages, one held back by the policy. */
export function withExternalSessions(mock: MockBackend, now: number): MockBackend {
  const { runs, gates } = recorded(now, true);
  for (const r of runs) mock.runs.set(r.id, r);
  for (const g of gates) mock.gates.set(g.id, g);
  mock.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "user" }, body: "The lockfile is stale; I will regenerate it unless you object.", correlation_id: "lockfile" });
  mock.postMessage({ from_run: 9, from: "agent:mcp", to: { to: "broadcast" }, body: "Import finished: 12,408 rows.", correlation_id: null });
  mock.postMessage({ from_run: 3, from: "agent:codex", to: { to: "broadcast" }, body: "Everyone: stop touching the migrations folder.", correlation_id: null, status: "blocked", blocked_reason: "broadcasts from runs need the supervisor's approval" });
  return mock;
}

/** The rows of {@link demoBackend}, for tests that only need runs. */
export function demoRuns(now: number): RunView[] {
  return [...demoBackend(now).runs.values()];
}

/** The app's hosts in memory: each host an engine of its own (a
 * {@link MockBackend}) behind a link a test can cut and restore. A call
 * reaches the host's engine as the app's `host_call` does: by command name,
 * with the args the window passes to that command. While a host is not
 * live its calls are refused (nothing sent) and its events are lost, as
 * over a cut SSH link. */
export class MockHosts implements HostTransport {
  engines = new Map<string, MockBackend>();
  views = new Map<string, HostLinkView>();
  /** Calls that reached a host's engine: `"build1 decide_gate"`. */
  calls: string[] = [];
  /** Hosts asked to retry now. */
  retries: string[] = [];
  private eventListeners = new Set<(host: string, e: EngineEvent) => void>();
  private linkListeners = new Set<(v: HostLinkView) => void>();

  constructor(private now: () => number = Date.now) {}

  /** What `addHost` finds at a host's address, by the name it is added
   * as: its engine (a new empty one when absent), the tools it lacks, or
   * that ssh cannot reach it. */
  machines = new Map<string, { engine?: MockBackend; lacks?: string[]; unreachable?: string }>();
  /** Each setup step waits this long before it is told (the dev server
   * shows them arriving; tests leave it at 0). */
  stepMs = 0;
  private setupListeners = new Set<(step: HostSetupStep) => void>();
  private removedListeners = new Set<(host: string) => void>();
  private unsubscribes = new Map<string, Promise<() => void>>();
  private urls = new Map<string, string>();

  /** Adds a host whose engine is `engine` (live unless told otherwise);
   * reported to listeners as the app reports a new host. */
  add(name: string, engine: MockBackend, state: HostLinkState = { status: "live", engine: `${name}-1`, version: "0.1.0", resync: 0 }): MockBackend {
    this.engines.set(name, engine);
    this.unsubscribes.set(
      name,
      engine.subscribe((e) => {
        if (this.views.get(name)?.state.status !== "live") return;
        for (const on of [...this.eventListeners]) on(name, structuredClone(e));
      }),
    );
    this.setState(name, state);
    return engine;
  }

  /** Changes a host's link (and reports it). */
  setState(name: string, state: HostLinkState): void {
    const view: HostLinkView = {
      name,
      url: this.urls.get(name) ?? `ssh://me@${name}.lan`,
      fingerprint: fingerprintOf(name),
      state,
    };
    this.views.set(name, view);
    for (const on of [...this.linkListeners]) on(structuredClone(view));
  }

  /** Cuts a host's link. */
  cut(name: string, reason = "the connection was lost"): void {
    const since = this.now();
    this.setState(name, { status: "down", since_ms: since, retry_at_ms: since + 5_000, reason });
  }

  /** Brings a host's link back: a reconnection (its `resync` grows). */
  restore(name: string): void {
    const prev = this.views.get(name)?.state;
    const resync = prev?.status === "live" ? prev.resync + 1 : (this.resyncs.get(name) ?? 0) + 1;
    this.resyncs.set(name, resync);
    this.setState(name, { status: "live", engine: `${name}-${this.restarts.get(name) ?? 1}`, version: "0.1.0", resync });
  }
  private resyncs = new Map<string, number>();

  async links(): Promise<HostLinkView[]> {
    return structuredClone([...this.views.values()]);
  }

  async call(host: string, command: string, args: Record<string, unknown>): Promise<unknown> {
    const engine = this.engines.get(host);
    const view = this.views.get(host);
    if (!engine || !view) throw fail("not_found", `${host} is not one of this machine's hosts: \`overseer hosts list\` shows them`);
    if (view.state.status === "down") {
      const since = new Date(view.state.since_ms).toTimeString().slice(0, 8);
      throw fail("engine_unavailable", `${host} unreachable since ${since} (${view.state.reason}): nothing was sent`);
    }
    if (view.state.status === "connecting") throw fail("engine_unavailable", `still connecting to ${host}: nothing was sent`);
    this.calls.push(`${host} ${command}`);
    // The window's command names the engine's operation (`decide_gate`:
    // decideGate), and its args are that operation's, in order.
    const method = command.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    const f = (engine as unknown as Record<string, unknown>)[method];
    if (typeof f !== "function") throw fail("invalid_input", `no window command \`${command}\``);
    return (f as (...a: unknown[]) => Promise<unknown>).apply(engine, Object.values(args));
  }

  async retry(host: string): Promise<void> {
    this.retries.push(host);
  }

  async onEvent(on: (host: string, e: EngineEvent) => void): Promise<() => void> {
    this.eventListeners.add(on);
    return () => this.eventListeners.delete(on);
  }

  async onLink(on: (v: HostLinkView) => void): Promise<() => void> {
    this.linkListeners.add(on);
    return () => this.linkListeners.delete(on);
  }

  async onSetup(on: (step: HostSetupStep) => void): Promise<() => void> {
    this.setupListeners.add(on);
    return () => this.setupListeners.delete(on);
  }

  async onRemoved(on: (host: string) => void): Promise<() => void> {
    this.removedListeners.add(on);
    return () => this.removedListeners.delete(on);
  }

  /** Tells one step of a host's setup, as the app does while it works
   * (also for `overseer hosts ...` run in a terminal). */
  async step(host: string, line: string): Promise<void> {
    await new Promise((r) => setTimeout(r, this.stepMs));
    for (const on of [...this.setupListeners]) on({ host, line });
  }

  /** `host_add`, as `overseer hosts add` does it: checks the machine, copies
   * the binary, starts the engine, pins its key, then links to it. */
  async addHost(name: string, url: string, sshConfig: string | null): Promise<HostLinkView> {
    if (sshConfig !== null && !sshConfig.startsWith("/")) throw fail("invalid_input", `${sshConfig}: give the ssh config file's absolute path`);
    const name_ = hostNameProblem(name, [...this.views.keys()]);
    if (name_) throw fail(this.views.has(name) ? "conflict" : "invalid_input", name_);
    const parsed = parseHostUrl(url);
    if (!parsed.ok) throw fail("invalid_input", parsed.message);
    const machine = this.machines.get(name) ?? {};
    const dest = `${parsed.user ? `${parsed.user}@` : ""}${parsed.address}`;
    await this.step(name, `checking ${dest} over ssh`);
    if (machine.unreachable) throw fail("engine_unavailable", `ssh ${dest}: ${machine.unreachable}; nothing was installed`);
    if (machine.lacks && machine.lacks.length > 0) {
      const lacks = machine.lacks.join(", ");
      await this.step(name, `${name} runs Linux x86_64 but lacks ${lacks}`);
      throw fail("invalid_input", `${name} lacks ${lacks}: install with \`sudo apt-get install ${machine.lacks.join(" ")}\` there, then add it again; nothing was installed`);
    }
    await this.step(name, `${name} runs Linux x86_64 with bubblewrap, cgroup v2, sha256sum, setsid and nohup`);
    await this.step(name, "copied overseer 0.1.0 to ~/.local/share/overseer/versions/0.1.0 (SHA-256 checked there)");
    await this.step(name, "current -> versions/0.1.0");
    await this.step(name, "started the engine detached (no systemd user session there); its log is ~/.local/share/overseer/serve.log");
    await this.step(name, `pinned the engine's key ${fingerprintOf(name)}`);
    this.urls.set(name, url);
    this.add(name, machine.engine ?? new MockBackend([], this.now));
    return structuredClone(this.views.get(name)!);
  }

  /** `host_upgrade`: installs this version again and restarts the engine
   * there (a new engine process: the link reconnects, `resync` grown). */
  async upgradeHost(host: string): Promise<HostLinkView> {
    const view = this.reachable(host, "nothing was installed");
    await this.step(host, "copied overseer 0.1.0 to ~/.local/share/overseer/versions/0.1.0 (SHA-256 checked there)");
    await this.step(host, "current -> versions/0.1.0");
    await this.step(host, "restarted the engine");
    await this.step(host, `its key is still the pinned one (${view.fingerprint})`);
    const prev = view.state.status === "live" ? view.state : null;
    const restarts = (this.restarts.get(host) ?? 1) + 1;
    this.restarts.set(host, restarts);
    this.setState(host, { status: "live", engine: `${host}-${restarts}`, version: "0.1.0", resync: (prev?.resync ?? 0) + 1 });
    return structuredClone(this.views.get(host)!);
  }
  private restarts = new Map<string, number>();

  /** `host_remove`: stops the engine there and forgets the host (a host
   * that cannot be reached is not forgotten). */
  async removeHost(host: string): Promise<void> {
    this.reachable(host, "it is not forgotten (its entry stays in hosts.json; delete it there when the machine is gone)");
    await this.step(host, `stopped the engine on ${host}`);
    await this.step(host, `forgot ${host}; its files stay there (~/.local/share/overseer, and the engine's key in ~/.config/overseer)`);
    void this.unsubscribes.get(host)?.then((un) => un());
    this.unsubscribes.delete(host);
    this.engines.delete(host);
    this.views.delete(host);
    this.urls.delete(host);
    for (const on of [...this.removedListeners]) on(host);
  }

  /** A host's view when its engine can be reached now, else the app's refusal. */
  private reachable(host: string, otherwise: string): HostLinkView {
    const view = this.views.get(host);
    if (!view) throw fail("not_found", `no host named "${host}": \`overseer hosts list\` shows the hosts`);
    if (view.state.status === "down") throw fail("engine_unavailable", `${host} cannot be reached (${view.state.reason}): ${otherwise}`);
    return view;
  }
}

/** The demo fingerprint of a host's pinned key. */
function fingerprintOf(name: string): string {
  return `SHA256:${name.padEnd(43, "x").slice(0, 43)}`;
}

/** Demo hosts for the dev server (`npm run dev`, `?hosts`): `build-box`
 * live with the recorded demo's runs (the same ids as this machine's), and
 * `gpu` whose link drops two seconds after the page loads. */
export function demoHosts(now: number): MockHosts {
  const hosts = new MockHosts(Date.now);
  // Adding, upgrading or removing a host shows its steps arriving.
  hosts.stepMs = 400;
  hosts.add("build-box", demoBackend(now));
  hosts.add("gpu", new MockBackend(demoRuns(now).filter((r) => r.state.state === "pending_review"), Date.now));
  // Its link drops a moment after the page loaded, and stays down.
  setTimeout(() => hosts.cut("gpu", "ssh: connect to host gpu.lan port 22: No route to host"), 2_000);
  return hosts;
}

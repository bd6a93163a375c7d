// An engine in memory, for unit tests and for `npm run dev` in a plain browser.
// It answers like the real one: actions change nothing locally in the caller;
// the change arrives as a pushed event (after the call resolves, as after a
// commit).
import type { Backend } from "./backend";
import { countRuns, sortRuns } from "../fleet/fleet";
import type {
  Activity,
  ActivityView,
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
} from "../types";

const fail = (code: ApiError["code"], message: string): ApiError => ({ code, message });

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

export function defaultPolicy(): SupervisorPolicy {
  return {
    enabled: false,
    autonomy: "advisory",
    gate_authority: {},
    evaluator: { type: "rules" },
    max_reorient_attempts: 3,
    timeout_seconds: 30,
    always_supervise: false,
    pause_timeout_seconds: 900,
  };
}

/** The mock engine's copy of core's `gate::ask_kind`, so its gates carry
 * what the engine's do: the kind an opener declared in the typed payload,
 * else a gate with a timer is a question, else by gate kind. */
export function engineAskKind(body: GateBody, autoAt: number | null): AskKind {
  const declared = body.kind === "tool_call" || body.kind === "supervisor_pause" || body.kind === "question" ? body.payload.ask_kind : undefined;
  if (declared !== undefined) return declared;
  if (autoAt !== null) return "question";
  return body.kind === "step_review" || body.kind === "merge_review" ? "question" : "blocking";
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
  notifications: NotificationSettings = { muted: [] };
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
    return this.answer(`approveRun ${runId}`, () => this.release(runId, "merged", null, false));
  }

  rejectRun(runId: number, reason: string) {
    return this.answer(`rejectRun ${runId}`, () => {
      if (!reason.trim()) throw fail("invalid_input", "rejecting a run needs a reason: say what is wrong");
      return this.release(runId, "human_rejected", reason, false);
    });
  }

  abortRun(runId: number) {
    return this.answer(`abortRun ${runId}`, () => this.release(runId, "aborted_by_user", null, true));
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

  decideGate(gateId: number, option: string, context: string | null) {
    return this.answer(`decideGate ${gateId} ${option}`, () => {
      const g = this.gate(gateId);
      if (g.status === "decided") throw fail("already_decided", `gate ${gateId} was already decided`);
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
        const updated: RunView = { ...run, pending_gate: null, needs_you: false };
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
      const next = { ...g, auto_at: null, auto_option: null };
      this.gates.set(gateId, next);
      return next;
    });
  }

  gateStory(gateId: number) {
    return this.answer(`gateStory ${gateId}`, (): GateStory => {
      const gate = this.gate(gateId);
      const rec = (seq: number, payload: object, actor: string, at: number) => ({
        record: {
          seq,
          prev_hash: "0".repeat(64),
          payload: JSON.stringify(payload),
          payload_hash: "a".repeat(64),
          actor,
          at,
          record_hash: "b".repeat(64),
          signature: "c".repeat(128),
        },
        problem: null,
      });
      const records = [rec(gateId * 10, { type: "gate_opened", gate_id: gateId, kind: gate.kind }, "agent:demo", gate.opened_at)];
      if (gate.decision) {
        records.push(rec(gateId * 10 + 1, { type: "gate_decided", gate_id: gateId, option: gate.decision.option }, "user:app", gate.decision.at));
      }
      return { gate, decisions: [], records, decision_problems: [], verified: true };
    });
  }

  runStory(runId: number) {
    return this.answer(`runStory ${runId}`, (): RunStory => {
      const run = this.run(runId);
      let seq = runId * 1000;
      const rec = (payload: object, actor: string, at: number) => ({
        record: {
          seq: ++seq,
          prev_hash: "0".repeat(64),
          payload: JSON.stringify(payload),
          payload_hash: "a".repeat(64),
          actor,
          at,
          record_hash: "b".repeat(64),
          signature: "c".repeat(128),
        },
        problem: null,
      });
      const records = [rec({ type: "run_created", run_id: runId, agent: run.agent }, "user:app", run.created_at)];
      for (const g of [...this.gates.values()].filter((g) => g.run_id === runId)) {
        records.push(rec({ type: "gate_opened", gate_id: g.id, run_id: runId, kind: g.kind, title: g.title }, "agent:demo", g.opened_at));
        if (g.decision) records.push(rec({ type: "gate_decided", gate_id: g.id, run_id: runId, option: g.decision.option }, "user:app", g.decision.at));
      }
      return { run, decisions: [], records, decision_problems: [], verified: true };
    });
  }

  listMessages(run: number | null, after: number | null) {
    return this.answer(`listMessages ${run ?? "all"}`, () => {
      if (run !== null) this.run(run);
      return this.messages.filter(
        (m) =>
          m.id > (after ?? 0) &&
          (run === null || m.from_run === run || (m.to.to === "run" && m.to.run === run) || (m.to.to === "broadcast" && m.status === "delivered")),
      );
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

  checkSettings(change: SettingsChange) {
    return this.answer(`checkSettings ${change.kind}`, () => fakeFieldErrors(change));
  }

  async subscribe(onEvent: (e: EngineEvent) => void) {
    this.listeners.add(onEvent);
    return () => {
      this.listeners.delete(onEvent);
    };
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

  private release(runId: number, reason: ReleaseReason, note: string | null, anyActive: boolean): RunView {
    const run = this.run(runId);
    const active = run.state.state !== "released";
    if (!(run.state.state === "pending_review" || (anyActive && active))) {
      throw fail("invalid_transition", `cannot change a run that is ${run.state.state}`);
    }
    const next: RunView = {
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

/** The actions the engine ships (core's `run_actions`) on a launched run
 * that works, and on one in review: fixture data of this fake engine. */
export const WORKING: RunActions = { approve: false, reject: false, abort: true, diff: true, steer: true };
export const IN_REVIEW: RunActions = { approve: true, reject: true, abort: true, diff: true, steer: false };
/** A released run allows nothing but its diff. */
export const released = (a: RunActions): RunActions => ({ approve: false, reject: false, abort: false, diff: a.diff, steer: false });

function key(scope: Scope): string {
  return `${scope.workspace}/${scope.task ?? "*"}`;
}

/** A small fleet with a gate of every kind, so a plain browser shows every
 * surface (`npm run dev`). */
export function demoBackend(now: number): MockBackend {
  const base = { task_id: 0, created_at: now - 3_600_000, release_note: null, pending_gate: null, origin: "launched" as const, actions: WORKING };
  const runs: RunView[] = [
    { ...base, id: 1, task_title: "Add rate limiting to the public API", workspace: "web-app", agent: "claude-code", state: { state: "pending_review" }, actions: IN_REVIEW, state_since: now - 720_000, needs_you: true, pending_gate: { id: 1, kind: "merge_review", ask_kind: "question" } },
    { ...base, id: 2, task_title: "Refactor the billing module", workspace: "web-app", agent: "gemini", state: { state: "running" }, state_since: now - 480_000, needs_you: true, pending_gate: { id: 2, kind: "plan", ask_kind: "blocking" } },
    { ...base, id: 3, task_title: "Write the migration for user settings", workspace: "api-server", agent: "codex", state: { state: "running" }, state_since: now - 1_260_000, needs_you: true, pending_gate: { id: 3, kind: "tool_call", ask_kind: "blocking" } },
    { ...base, id: 4, task_title: "Pick a framework for the greeting", workspace: "web-app", agent: "demo", state: { state: "running" }, state_since: now - 60_000, needs_you: true, pending_gate: { id: 4, kind: "question", ask_kind: "blocking" } },
    { ...base, id: 5, task_title: "Fix the flaky login test", workspace: "api-server", agent: "demo", state: { state: "running" }, state_since: now - 200_000, needs_you: true, pending_gate: { id: 5, kind: "deviation", ask_kind: "blocking" } },
    { ...base, id: 6, task_title: "Document the CLI", workspace: "web-app", agent: "demo", state: { state: "running" }, state_since: now - 30_000, needs_you: true, pending_gate: { id: 6, kind: "step_review", ask_kind: "question" } },
    { ...base, id: 7, task_title: "Bump version to 0.4.2", workspace: "web-app", agent: "demo", state: { state: "released", reason: "merged" }, actions: released(WORKING), state_since: now - 10_800_000, needs_you: false },
  ];
  // `batch`: the option the engine ships as batch_option (core's batch_choice).
  const gate = (id: number, run_id: number, body: GateBody, title: string, options: GateView["options"], timer: { auto_at: number; auto_option: string } | null = null, batch: string | null = null): GateView => ({
    id, run_id, ...body, status: "pending", title, options, opened_at: now - 60_000 * id, decision: null,
    auto_at: timer?.auto_at ?? null, auto_option: timer?.auto_option ?? null, authority: null, effected: false, ask_kind: engineAskKind(body, timer?.auto_at ?? null), batch_option: batch,
  });
  const opt = (id: string, label: string, requires_context = false) => ({ id, label, requires_context });
  const gates: GateView[] = [
    gate(1, 1, { kind: "merge_review", payload: {} }, "Review run 1", [opt("approve", "Approve and merge"), opt("reject", "Reject", true), opt("abort", "Abort")]),
    gate(2, 2, { kind: "plan", payload: {
      goal: "Split billing into modules", steps: [{ title: "Extract invoices", agent: "coder" }, { title: "Extract payments" }], files: ["src/billing/invoices.ts", "src/billing/payments.ts"], risks: ["Import cycles"],
      source: "agent_mode", markdown: "# Split billing\n\n1. Extract **invoices** into `src/billing/invoices.ts`\n2. Extract payments\n   - keep the public API\n\nSee [the design](https://example.com/billing).\n",
    } }, "Approve the plan: split billing into modules", [opt("approve", "Approve"), opt("request_changes", "Request changes", true), opt("reject", "Reject")]),
    gate(3, 3, { kind: "tool_call", payload: toolCallGate({ command: "npm install pg-migrate" }, { reason: "installing packages is always gated", always_gated: "install_packages" }) },
      "Run `npm install pg-migrate`", [opt("yes", "Yes"), opt("always", "Always for this run"), opt("no", "No")]),
    gate(4, 4, { kind: "question", payload: {
      message: "A few questions before I plan the greeting.",
      schema: { type: "object", title: "Before I plan", required: ["framework", "add_tests"], properties: {
        framework: { type: "string", title: "Framework", enum: ["svelte", "react", "vue"] },
        add_tests: { type: "boolean", title: "Add tests?" },
        notes: { type: "string", title: "Anything else I should know?" },
      } },
    } }, "A few questions before I plan the greeting.", [opt("answer", "Answer", true), opt("decline", "Decline")]),
    gate(5, 5, { kind: "deviation", payload: { cause: "turn_failed", error: "npm test exited with status 1", attempts: 2, max_attempts: 10 } },
      "The agent hit a problem: test failed", [opt("retry", "Retry"), opt("replan", "Replan"), opt("stop", "Stop")]),
    gate(6, 6, { kind: "step_review", payload: stepRecord({ step: 2, confidence: 0.64, explain: "one retry used; sensors passed", retries: 1 }) },
      "Review step 2: confidence 0.64", [opt("proceed", "Proceed"), opt("stop", "Stop")], { auto_at: now + 10_000, auto_option: "proceed" }, "proceed"),
  ];
  const mock = new MockBackend(runs, Date.now, gates);
  mock.workspaces = [
    { id: 1, name: "web-app", path: "~/src/web-app", settings: { sensors: ["npm test"], auto_advance: null } },
    { id: 2, name: "api-server", path: "~/src/api-server", settings: { sensors: [], auto_advance: false } },
  ];
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
  // What the engine allows on a live external session: stop it, steer it; no diff or review.
  const actions = { ...WORKING, diff: false };
  const base = { task_id: 0, created_at: now - 1_800_000, release_note: null, needs_you: true, state: { state: "running" as const }, state_since: now - 90_000, actions };
  const runs: RunView[] = [
    { ...base, id: 8, task_title: "Claude Code in ~/src/web-app", workspace: "web-app", agent: "claude-code", origin: "claude_code", session: { session_id: "5c1e0b7a-2f4d-4e55-9a61-0f3c2d8b1e11", cwd: "/home/ada/src/web-app" }, pending_gate: { id: 8, kind: "tool_call", ask_kind: "blocking" } },
    { ...base, id: 9, task_title: "MCP client in /srv/scripts/nightly", workspace: "external", agent: "mcp", origin: "mcp", session: { session_id: "nightly-42", cwd: "/srv/scripts/nightly" }, pending_gate: { id: 9, kind: "question", ask_kind: "blocking" } },
  ];
  for (const r of runs) mock.runs.set(r.id, r);
  const opt = (id: string, label: string, requires_context = false) => ({ id, label, requires_context });
  const gate = { status: "pending" as const, decision: null, auto_at: null, auto_option: null, authority: null, effected: false };
  const blocking = "blocking" as const;
  const info = "info" as const;
  mock.gates.set(8, {
    ...gate, id: 8, run_id: 8, kind: "tool_call", ask_kind: blocking, title: "Run `rm -rf node_modules && npm ci`", opened_at: now - 45_000,
    options: [opt("yes", "Yes"), opt("always", "Always for this session"), opt("no", "No")],
    payload: {
      tool_call: { id: "toolu_01", title: "Run `rm -rf node_modules && npm ci`", kind: "execute", raw_input: { command: "rm -rf node_modules && npm ci" }, name: "Bash" },
      request: { tool: "Bash", kind: "execute", command: "rm -rf node_modules && npm ci", paths: [] },
      reason: "no rule allows Bash here", rule: null, always_gated: null, always_gated_why: null, agent_options: [], ask_kind: "blocking",
    },
  });
  mock.gates.set(9, {
    ...gate, id: 9, run_id: 9, kind: "question", ask_kind: info, title: "Nightly import finished with 3 warnings", opened_at: now - 20_000,
    options: [opt("answer", "Reply", true), opt("decline", "Dismiss")],
    payload: { message: "Nightly import finished with 3 warnings.\nShall I open an issue for the skipped rows?", ask_kind: "info", notice: "notification" },
  });
  mock.postMessage({ from_run: 8, from: "agent:claude-code", to: { to: "user" }, body: "The lockfile is stale; I will regenerate it unless you object.", correlation_id: "lockfile" });
  mock.postMessage({ from_run: 9, from: "agent:mcp", to: { to: "broadcast" }, body: "Import finished: 12,408 rows.", correlation_id: null });
  mock.postMessage({ from_run: 3, from: "agent:codex", to: { to: "broadcast" }, body: "Everyone: stop touching the migrations folder.", correlation_id: null, status: "blocked", blocked_reason: "broadcasts from runs need the supervisor's approval" });
  return mock;
}

/** The rows of {@link demoBackend}, for tests that only need runs. */
export function demoRuns(now: number): RunView[] {
  return [...demoBackend(now).runs.values()];
}

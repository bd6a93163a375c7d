// A run's task as the engine has it: its own settings (rules, approval,
// supervisor, retries) and stage, read-only on the run page. Loaded once and
// again on each task_changed event for this task (a change from Settings or
// the CLI); never polled.
import type { Backend } from "../backend";
import { LiveValue } from "../live.svelte";
import { describePolicy } from "../settings/describe";
import type { ApiError, ApprovalMode, TaskInfo } from "../types";

export class TaskView {
  readonly #live: LiveValue<TaskInfo>;

  constructor(
    backend: Backend,
    readonly taskId: number,
  ) {
    this.#live = new LiveValue(backend, {
      fetch: () => backend.showTask(taskId),
      touches: (e) => e.type === "task_changed" && e.task_id === taskId,
    });
  }

  get info(): TaskInfo | null {
    return this.#live.value;
  }
  get error(): ApiError | null {
    return this.#live.error;
  }

  start(): Promise<void> {
    return this.#live.start();
  }

  stop(): void {
    this.#live.stop();
  }
}

export function describeApproval(a: ApprovalMode, autoProceed: number | null | undefined): string {
  switch (a.mode) {
    case "auto":
      return "automatic: finished steps proceed";
    case "manual":
      return "manual: every finished step waits for you";
    case "confidence_threshold":
      return `by confidence: proceeds at ${a.threshold.toFixed(2)} or more${autoProceed ? `; medium waits ${autoProceed} s` : ""}`;
  }
}

/** The task's own settings as label / value lines; "workspace's" where the
 * task sets nothing of its own and the workspace's applies. */
export function taskSettingsLines(t: TaskInfo): { key: string; label: string; value: string }[] {
  const s = t.settings;
  const rules = s.permissions;
  const ruleText = (kind: string, list: string[]) => (list.length ? `${kind} ${list.join(", ")}` : null);
  const ownRules = rules ? [ruleText("allow", rules.allow), ruleText("ask", rules.ask), ruleText("deny", rules.deny)].filter((x) => x !== null) : [];
  const retry = s.retry;
  return [
    { key: "stage", label: "Stage", value: t.stage },
    { key: "rules", label: "Rules", value: ownRules.length ? ownRules.join(" · ") : "none of its own (the workspace's apply)" },
    { key: "approval", label: "Approval", value: describeApproval(s.approval, s.auto_proceed_seconds) },
    { key: "supervisor", label: "Supervisor", value: s.supervisor ? describePolicy(s.supervisor) : "the workspace's" },
    {
      key: "retries",
      label: "Retries",
      value: retry ? `up to ${retry.max_attempts} unattended, backoff from ${retry.backoff_seconds} s` : "the workspace's (off unless set)",
    },
    { key: "session", label: "Session", value: s.session === "read_only" ? "read-only consultation" : "normal" },
  ];
}

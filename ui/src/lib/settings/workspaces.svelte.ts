// The workspace list Settings shows, following the engine: every
// workspace_changed event (a workspace added, or its rules, supervisor or
// checks changed, from the window or the CLI) refetches the list once; a
// task_changed event bumps the revision of tasks so a task's view reloads.
// Nothing is polled.
import type { Backend } from "../backend";
import type { EngineEvent, Workspace } from "../types";
import { Submission } from "./submit.svelte";

export class WorkspaceList {
  list = $state.raw<Workspace[] | null>(null);
  /** The last load's failure, shown like a form's refusal. */
  readonly loading = new Submission();
  /** Bumped on each workspace_changed, by workspace name. */
  revisions = $state<Record<string, number>>({});
  /** Bumped on each task_changed, by task id. */
  taskRevisions = $state<Record<number, number>>({});
  private stopEvents: (() => void) | undefined;
  private fetches = 0;
  private stopped = false;

  constructor(private backend: Backend) {}

  /** Subscribes first, then loads, so a change between the two is not lost. */
  async start(): Promise<void> {
    const stop = await this.backend.subscribe((e) => this.apply(e));
    if (this.stopped) stop();
    else this.stopEvents = stop;
    await this.refetch();
  }

  stop(): void {
    this.stopped = true;
    this.stopEvents?.();
    this.stopEvents = undefined;
  }

  apply(e: EngineEvent): void {
    if (e.type === "workspace_changed") {
      this.revisions = { ...this.revisions, [e.name]: (this.revisions[e.name] ?? 0) + 1 };
      void this.refetch();
    } else if (e.type === "task_changed") {
      this.taskRevisions = { ...this.taskRevisions, [e.task_id]: (this.taskRevisions[e.task_id] ?? 0) + 1 };
    }
  }

  /** One listWorkspaces; an older answer arriving late never replaces a newer one. */
  private async refetch(): Promise<void> {
    const mine = ++this.fetches;
    const list = await this.loading.load(() => this.backend.listWorkspaces());
    if (mine === this.fetches && list) this.list = list;
  }
}

// The workspace list Settings shows, following the engine: every
// workspace_changed event (a workspace added, or its rules, supervisor or
// checks changed, from the window or the CLI) refetches the list once; a
// task_changed event bumps the revision of tasks so a task's view reloads.
// Nothing is polled.
import type { Backend } from "../backend";
import type { Workspace } from "../types";
import { LiveValue } from "../live.svelte";
import { Submission } from "./submit.svelte";

export class WorkspaceList {
  /** The last load's failure, shown like a form's refusal. */
  readonly loading = new Submission();
  /** Bumped on each workspace_changed, by workspace name. */
  revisions = $state<Record<string, number>>({});
  /** Bumped on each task_changed, by task id. */
  taskRevisions = $state<Record<number, number>>({});

  readonly #live: LiveValue<Workspace[]>;

  constructor(backend: Backend) {
    this.#live = new LiveValue(backend, {
      fetch: async () => {
        const list = await this.loading.load(() => backend.listWorkspaces());
        // A refusal shows on `loading`; the last list stays.
        if (list === null) throw this.loading.error;
        return list;
      },
      touches: (e) => {
        if (e.type === "workspace_changed") {
          this.revisions = { ...this.revisions, [e.name]: (this.revisions[e.name] ?? 0) + 1 };
          return true;
        }
        if (e.type === "task_changed") {
          this.taskRevisions = { ...this.taskRevisions, [e.task_id]: (this.taskRevisions[e.task_id] ?? 0) + 1 };
        }
        return false;
      },
    });
  }

  get list(): Workspace[] | null {
    return this.#live.value;
  }
  /** A saved workspace as the engine answered it, before its event. */
  set list(list: Workspace[] | null) {
    this.#live.value = list;
  }

  /** Subscribes first, then loads, so a change between the two is not lost. */
  start(): Promise<void> {
    return this.#live.start();
  }

  stop(): void {
    this.#live.stop();
  }
}

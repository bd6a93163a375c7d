// Settings' workspaces over hosts: this machine's and every host's, each
// list following its own engine (loaded, then refetched on its
// workspace_changed events; read again when a host's link comes back). A
// workspace lives on one engine: its forms save through that engine's
// backend. A host that joins is listed; one removed leaves.
import type { Backend } from "../backend/backend";
import { WorkspaceList } from "../settings/workspaces.svelte";
import type { FieldError, Workspace } from "../types";
import type { Hosts } from "./hosts.svelte";
import { workspacePathProblem } from "./setup";

/** One engine's workspaces: this machine's (`host` null) or a host's. */
export interface EngineWorkspaces {
  host: string | null;
  backend: Backend;
  following: WorkspaceList;
}

/** A workspace with the engine it lives on. */
export interface PlacedWorkspace {
  /** `name` for this machine's (as before hosts), `host/name` for a host's
   * (a host name has no `/`). */
  key: string;
  host: string | null;
  workspace: Workspace;
  engine: EngineWorkspaces;
}

export function workspaceKey(host: string | null, name: string): string {
  return host === null ? name : `${host}/${name}`;
}

export class EveryWorkspace {
  /** This machine's first, then each host's by name. */
  engines = $state.raw<readonly EngineWorkspaces[]>([]);
  #stops: (() => void)[] = [];

  constructor(
    local: Backend,
    private hosts: Hosts | null = null,
  ) {
    this.engines = [{ host: null, backend: local, following: new WorkspaceList(local) }];
  }

  get local(): EngineWorkspaces {
    return this.engines[0]!;
  }

  /** Follows this machine's workspaces, and every host's as hosts come and go. */
  start(): Promise<void> {
    const started = this.local.following.start();
    if (this.hosts) {
      this.#stops.push(
        this.hosts.onAdded((host, backend) => void this.#add(host, backend)),
        this.hosts.onRemoved((host) => this.#remove(host)),
      );
    }
    return started;
  }

  stop(): void {
    for (const s of this.#stops) s();
    this.#stops = [];
    for (const e of this.engines) e.following.stop();
  }

  /** The engine of host `host` (null: this machine's), while followed. */
  engine(host: string | null): EngineWorkspaces | undefined {
    return this.engines.find((e) => e.host === host);
  }

  /** Every workspace of every engine (an engine not read yet has none). */
  get all(): PlacedWorkspace[] {
    return this.engines.flatMap((engine) =>
      (engine.following.list ?? []).map((workspace) => ({ key: workspaceKey(engine.host, workspace.name), host: engine.host, workspace, engine })),
    );
  }

  /** True once this machine's list was read (hosts' come as they answer). */
  get loaded(): boolean {
    return this.local.following.list !== null;
  }

  #add(host: string, backend: Backend): Promise<void> {
    if (this.engine(host)) return Promise.resolve();
    const engine: EngineWorkspaces = { host, backend, following: new WorkspaceList(backend) };
    const [local, ...others] = this.engines;
    this.engines = [local!, ...[...others, engine].sort((a, b) => (a.host! < b.host! ? -1 : 1))];
    return engine.following.start();
  }

  #remove(host: string): void {
    const gone = this.engine(host);
    if (!gone || host === null) return;
    gone.following.stop();
    this.engines = this.engines.filter((e) => e !== gone);
  }
}

/** Where "Add a workspace" adds: this machine's engine (`host` null) or a
 * linked host's; a problem with the path or the host is said as a field
 * error and nothing is sent. */
export type WorkspaceAddPlan = { ok: true; engine: Pick<Backend, "addWorkspace"> } | { ok: false; problem: FieldError };

export function workspaceAddTarget(local: Pick<Backend, "addWorkspace">, hosts: Hosts | null, host: string | null, path: string): WorkspaceAddPlan {
  const missing = workspacePathProblem(path, host);
  if (missing) return { ok: false, problem: { field: "path", message: missing } };
  if (host === null) return { ok: true, engine: local };
  const engine = hosts?.backend(host);
  if (!engine) return { ok: false, problem: { field: "host", message: `${host} is no longer linked: pick another machine` } };
  return { ok: true, engine };
}

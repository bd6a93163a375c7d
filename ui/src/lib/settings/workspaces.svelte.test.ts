import { describe, expect, it } from "vitest";
import { MockBackend } from "../backend/mock";
import { WorkspaceList } from "./workspaces.svelte";

const flush = () => new Promise((r) => setTimeout(r, 0));

function backend() {
  const b = new MockBackend([], () => 0);
  b.workspaces = [{ id: 1, name: "web", path: "/src/web", settings: { sensors: [], auto_advance: null, two_person_merge: false } }];
  return b;
}

describe("the workspace list in Settings", () => {
  it("loads once, then refetches once per workspace_changed event", async () => {
    const b = backend();
    const list = new WorkspaceList(b);
    await list.start();
    expect(list.list?.map((w) => w.name)).toEqual(["web"]);
    expect(b.calls.filter((c) => c === "listWorkspaces")).toHaveLength(1);

    // Added from the CLI: the engine pushes the event.
    b.workspaces.push({ id: 2, name: "api", path: "/src/api", settings: { sensors: ["cargo test"], auto_advance: null, two_person_merge: false } });
    b.push({ type: "workspace_changed", name: "api" });
    await flush();
    expect(list.list?.map((w) => w.name)).toEqual(["web", "api"]);
    expect(b.calls.filter((c) => c === "listWorkspaces")).toHaveLength(2);
    expect(list.revisions).toEqual({ api: 1 });

    // Rules changed elsewhere: the refetched workspace carries them.
    b.workspaces[0]!.settings = { ...b.workspaces[0]!.settings, permissions: { allow: ["Bash(npm test:*)"], ask: [], deny: [] } };
    b.push({ type: "workspace_changed", name: "web" });
    await flush();
    expect(list.list?.[0]?.settings.permissions?.allow).toEqual(["Bash(npm test:*)"]);
    expect(b.calls.filter((c) => c === "listWorkspaces")).toHaveLength(3);
  });

  it("does not refetch for other events; task_changed bumps that task's revision", async () => {
    const b = backend();
    const list = new WorkspaceList(b);
    await list.start();
    b.push({ type: "task_changed", task_id: 7 });
    b.push({ type: "message_posted", message: { id: 1, from: { kind: "user" }, to: { kind: "broadcast" }, body: "hi", correlation_id: null, at: 0, status: "delivered", blocked_reason: null } } as never);
    await flush();
    expect(b.calls.filter((c) => c === "listWorkspaces")).toHaveLength(1);
    expect(list.taskRevisions).toEqual({ 7: 1 });
  });

  it("a save in the window comes back as the engine's event, like any other change", async () => {
    const b = backend();
    const list = new WorkspaceList(b);
    await list.start();
    await b.setWorkspaceChecks("web", ["npm test"], true);
    await flush();
    expect(list.list?.[0]?.settings.sensors).toEqual(["npm test"]);
  });

  it("stops following when stopped", async () => {
    const b = backend();
    const list = new WorkspaceList(b);
    await list.start();
    list.stop();
    b.push({ type: "workspace_changed", name: "web" });
    await flush();
    expect(b.calls.filter((c) => c === "listWorkspaces")).toHaveLength(1);
  });
});

// Settings' workspaces over hosts: this machine's and every host's listed
// together, each following its own engine, a host's saved through that
// host's backend; a host added later joins, a removed one leaves. Rendered
// parts: the workspace's host in its header, and the add card's host choice.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import { MockBackend, MockHosts } from "../backend/mock";
import type { Workspace } from "../types";
import { Hosts } from "./hosts.svelte";
import { EveryWorkspace, workspaceAddTarget } from "./workspaces.svelte";
import { workspaceAddCommand, workspacePathProblem } from "./setup";
import WorkspaceSection from "../../components/settings/WorkspaceSection.svelte";
import WorkspaceAdd from "../../components/settings/WorkspaceAdd.svelte";

const flush = async () => {
  for (let i = 0; i < 8; i++) await new Promise((r) => setTimeout(r, 0));
};

const ws = (id: number, name: string, path = `/src/${name}`): Workspace => ({ id, name, path, settings: { sensors: [], auto_advance: null, two_person_merge: false } });

function engine(...workspaces: Workspace[]): MockBackend {
  const b = new MockBackend([], () => 0);
  b.workspaces = workspaces;
  return b;
}

async function settings() {
  const local = engine(ws(1, "app"));
  const transport = new MockHosts(() => 0);
  const build1 = transport.add("build1", engine(ws(1, "app", "/home/me/app"), ws(2, "gpu-jobs")));
  const hosts = new Hosts(transport);
  const every = new EveryWorkspace(local, hosts);
  await Promise.all([every.start(), hosts.start()]);
  await flush();
  return { local, transport, build1, hosts, every };
}

describe("workspaces over hosts", () => {
  it("lists every host's workspaces beside this machine's, each with its host", async () => {
    const { every, hosts } = await settings();
    expect(every.all.map((w) => [w.key, w.host, w.workspace.path])).toEqual([
      ["app", null, "/src/app"],
      ["build1/app", "build1", "/home/me/app"],
      ["build1/gpu-jobs", "build1", "/src/gpu-jobs"],
    ]);
    every.stop();
    hosts.stop();
  });

  it("saves a host's workspace through that host's engine, and follows that engine's changes only", async () => {
    const { every, local, build1, hosts } = await settings();
    const placed = every.all.find((w) => w.key === "build1/app")!;
    await placed.engine.backend.setWorkspaceChecks("app", ["cargo test"], null);
    expect(build1.calls).toContain("setWorkspaceChecks app");
    expect(local.calls).not.toContain("setWorkspaceChecks app");
    await flush();
    // Its engine's workspace_changed refetched that host's list only.
    expect(every.engine("build1")?.following.list?.find((w) => w.name === "app")?.settings.sensors).toEqual(["cargo test"]);
    expect(every.local.following.list?.[0]?.settings.sensors).toEqual([]);
    expect(local.calls.filter((c) => c === "listWorkspaces")).toHaveLength(1);
    every.stop();
    hosts.stop();
  });

  it("lists a host added later and drops a removed one", async () => {
    const { every, transport, hosts } = await settings();
    transport.machines.set("build2", { engine: engine(ws(1, "site")) });
    expect(await hosts.add("build2", "ssh://me@build2.lan")).toBeNull();
    await flush();
    expect(every.all.map((w) => w.key)).toEqual(["app", "build1/app", "build1/gpu-jobs", "build2/site"]);
    expect(await hosts.remove("build1")).toBeNull();
    expect(every.all.map((w) => w.key)).toEqual(["app", "build2/site"]);
    every.stop();
    hosts.stop();
  });

  it("names the host in a workspace's header, only when the window has hosts", () => {
    const props = { backend: new MockBackend(), workspace: ws(1, "app"), onchanged: () => {} };
    expect(render(WorkspaceSection, { props: { ...props, host: "build1" } }).body).toMatch(/data-testid="workspace-where" data-host="build1"[^>]*>on <bdi>build1<\/bdi>/);
    expect(render(WorkspaceSection, { props: { ...props, host: null } }).body).toMatch(/data-testid="workspace-where"[^>]*>on <bdi>this machine<\/bdi>/);
    expect(render(WorkspaceSection, { props }).body).not.toContain('data-testid="workspace-where"');
  });

  it("offers this machine and the live hosts to add a workspace on, with the command that does it", async () => {
    const { local, transport, hosts } = await settings();
    transport.add("down1", engine());
    transport.cut("down1");
    const body = render(WorkspaceAdd, { props: { backend: local, hosts } }).body;
    expect(body).toMatch(/data-testid="workspace-host"[^]*<option value=""[^>]*>this machine<\/option>[^]*<option value="build1">build1<\/option>/);
    expect(body).not.toContain('value="down1"');
    expect(body).toContain('data-testid="workspace-add-command">overseer workspace add PATH</code>');
    // Without hosts: no host choice.
    expect(render(WorkspaceAdd, { props: { backend: local, hosts: null } }).body).not.toContain('data-testid="workspace-host"');
    hosts.stop();
  });

  it("adds a workspace through the chosen machine's engine, and it joins the list from that engine's event", async () => {
    const { local, build1, hosts, every } = await settings();
    const there = workspaceAddTarget(local, hosts, "build1", "/home/me/web");
    if (!there.ok) throw new Error(there.problem.message);
    const added = await there.engine.addWorkspace("/home/me/web", null, { sensors: [], auto_advance: null, two_person_merge: false });
    expect(added.name).toBe("web");
    await flush();
    expect(build1.workspaces.map((w) => w.name)).toContain("web");
    expect(local.workspaces.map((w) => w.name)).toEqual(["app"]);
    expect(every.all.map((p) => p.key)).toContain("build1/web");
    // Here too, by this machine's engine.
    const here = workspaceAddTarget(local, hosts, null, "/src/site");
    if (!here.ok) throw new Error(here.problem.message);
    await here.engine.addWorkspace("/src/site", "site", { sensors: [], auto_advance: null, two_person_merge: false });
    await flush();
    expect(every.all.map((p) => p.key)).toContain("site");
    // A relative path, or a host no longer linked: nothing is sent.
    const relative = workspaceAddTarget(local, hosts, "build1", "src/app");
    expect(relative.ok ? null : relative.problem.field).toBe("path");
    const gone = workspaceAddTarget(local, hosts, "elsewhere", "/src/app");
    expect(gone.ok ? null : gone.problem.message).toMatch(/no longer linked/);
    every.stop();
    hosts.stop();
  });

  it("says the command for a host's repository and checks its path", () => {
    expect(workspaceAddCommand("build1", "/home/me/src/app", "")).toBe("overseer --host build1 workspace add /home/me/src/app");
    expect(workspaceAddCommand(null, "/home/me/my app", "web")).toBe("overseer workspace add '/home/me/my app' --name web");
    expect(workspacePathProblem("src/app", "build1")).toBe("“src/app” is not an absolute path: give the repository's whole path on build1, starting with /.");
    expect(workspacePathProblem("/src/app", null)).toBeNull();
  });
});

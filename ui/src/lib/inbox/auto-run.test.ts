// Files other tools run on their own (the engine's list, sent with the merge
// review's payload and with `run_diff`): the merge review card, the fleet's
// preview and the run page's diff each name every such file and what would
// run it, in a warning block; nothing when the engine sends none.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import GateCard from "../../components/inbox/GateCard.svelte";
import FleetPreview from "../../components/fleet/FleetPreview.svelte";
import DiffView from "../../components/diff/DiffView.svelte";
import { Gates } from "./gates.svelte";
import { Fleet } from "../fleet/fleet.svelte";
import { Nav } from "../nav.svelte";
import { demoBackend } from "../backend/mock";
import { RunDiffView } from "../run/diff.svelte";
import type { AutoRunFile, GateView } from "../types";

const NOW = 1_700_000_000_000;

const AUTO_RUN: AutoRunFile[] = [
  { path: ".vscode/tasks.json", change: "added", runs: "VS Code tasks: a task with `runOptions.runOn: folderOpen` runs its shell command when the folder is opened" },
  { path: "package.json", change: "changed", runs: "npm lifecycle script run by `npm install`: `postinstall`: node evil.js" },
  // Agent-made text: an RTL override stays inside its own isolate.
  { path: "sub/\u202e.envrc", change: "added", runs: "direnv: shell code the user's shell runs on entering the directory" },
];

async function card(gate: GateView) {
  const backend = demoBackend(NOW);
  backend.gates.set(gate.id, gate);
  const fleet = new Fleet(backend);
  const gates = new Gates(backend, fleet);
  await Promise.all([fleet.start(), gates.start()]);
  return render(GateCard, { props: { gate: gates.pending.get(gate.id)!, gates, nav: new Nav(), now: NOW } }).body;
}

function named(body: string) {
  return [...body.matchAll(/data-testid="auto-run-file" data-path="([^"]+)" data-change="([^"]+)"/g)].map((m) => [m[1], m[2]]);
}

function expectEveryFile(body: string) {
  expect(body).toContain('data-testid="auto-run"');
  expect(named(body)).toEqual(AUTO_RUN.map((f) => [f.path, f.change]));
  expect(body).toContain("3 files other tools run on their own");
  expect(body).toContain("runOptions.runOn: folderOpen");
  expect(body).toContain("`postinstall`: node evil.js");
  expect(body).toContain("<bdi>sub/\u202e.envrc</bdi>");
}

describe("auto-run files", () => {
  it("are named on the merge review card with what would run each", async () => {
    const demo = demoBackend(NOW).gates.get(1)!;
    expect(demo.kind).toBe("merge_review");
    const body = await card({ ...demo, kind: "merge_review", payload: { auto_run: AUTO_RUN } });
    expectEveryFile(body);
    // A plain review shows no warning.
    const plain = await card(demo);
    expect(plain).not.toContain('data-testid="auto-run"');
  });

  it("are named in the fleet's preview and the run page's diff, as run_diff sends them", async () => {
    const backend = demoBackend(NOW);
    const diff = backend.diffs.get(1)!;
    backend.diffs.set(1, { ...diff, auto_run: AUTO_RUN });
    const view = new RunDiffView(backend, 1);
    await view.load();
    const run = backend.runs.get(1)!;
    const noop = () => {};
    const preview = render(FleetPreview, {
      props: { backend, run, busy: false, onclose: noop, onopen: noop, onapprove: noop, onreject: noop, onabort: noop, loaded: view },
    }).body;
    expectEveryFile(preview);
    expectEveryFile(render(DiffView, { props: { view } }).body);

    // Without any, neither shows the block.
    backend.diffs.set(1, diff);
    const plain = new RunDiffView(backend, 1);
    await plain.load();
    const props = { backend, run, busy: false, onclose: noop, onopen: noop, onapprove: noop, onreject: noop, onabort: noop, loaded: plain };
    expect(render(FleetPreview, { props }).body).not.toContain('data-testid="auto-run"');
    expect(render(DiffView, { props: { view: plain } }).body).not.toContain('data-testid="auto-run"');
  });
});

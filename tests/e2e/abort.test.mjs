// Aborting a live agent from the window: the real engine, the demo agent's
// `stubborn` scenario (ignores SIGTERM and leaves a setsid grandchild), real
// git worktrees. The run ends aborted_by_user, no process of its tree
// survives, and the worktree is byte-for-byte as it was.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { openApp, eventually, By } from "./lib.mjs";

let app;

before(async () => {
  app = await openApp();
});

after(async () => {
  await app?.quit();
});

/** Live processes of this app's run: its agent marker in their environment,
 * working under this app's data. */
function agentProcesses(runId) {
  const marker = new RegExp(`OVERSEER_AGENT_MARKER=overseer-[^\\0]*-run-${runId}\\0`);
  const found = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (/\)\s+Z/.test(stat)) continue; // a zombie is already dead
      // Ours only: another app's agents may carry the same run number.
      if (!readlinkSync(`/proc/${pid}/cwd`).startsWith(app.work)) continue;
      if (marker.test(readFileSync(`/proc/${pid}/environ`, "latin1"))) found.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

function pendingGate(runId, kind) {
  const gates = JSON.parse(app.cli("gates", "list", "--json"));
  return gates.find((g) => g.run_id === runId && g.kind === kind);
}

test("aborting a running agent in the window kills its whole tree and keeps the worktree", async () => {
  const { driver } = app;
  app.workspace("repo");
  const run = app.startDemo("repo", "stubborn", "Stubborn agent for abort");

  const plan = await eventually(driver, () => pendingGate(run, "plan"), 30_000, "the plan gate");
  app.cli("gates", "decide", String(plan.id), "--option", "approve");
  // The agent sits in its endless turn with a setsid grandchild.
  await eventually(driver, () => agentProcesses(run).length >= 2, 20_000, "the agent and its grandchild");
  const before = agentProcesses(run);

  const [[worktree]] = app.sql("SELECT worktree FROM runs WHERE id = ?", run);
  assert.ok(worktree, "the run has its own worktree");
  const snapshot = () =>
    execFileSync("git", ["-C", worktree, "status", "--porcelain"], { encoding: "utf8" }) +
    execFileSync("git", ["-C", worktree, "rev-parse", "HEAD"], { encoding: "utf8" });
  const worktreeBefore = snapshot();

  const row = await eventually(driver, async () => {
    const rows = await driver.findElements(By.css(`[data-run-id="${run}"][data-state="running"]`));
    return rows[0];
  }, 15_000, `run ${run} running in the window`);
  await row.findElement(By.css('button[data-action="abort"]')).click();
  await app.shot("abort-confirm");
  await driver.findElement(By.css('button[data-testid="abort-confirm"]')).click();

  await eventually(driver, async () => {
    const rows = await driver.findElements(By.css(`[data-run-id="${run}"]`));
    return rows.length === 1 && (await rows[0].getAttribute("data-reason")) === "aborted_by_user";
  }, 20_000, "the row to show aborted");
  assert.deepEqual(app.sql("SELECT state FROM runs WHERE id = ?", run), [["released:aborted_by_user"]]);
  assert.deepEqual(
    app.sql("SELECT actor FROM audit_log WHERE json_extract(payload, '$.run_id') = ? AND json_extract(payload, '$.to') LIKE 'released%'", run),
    [["user:app"]],
  );

  // Zero survivors: SIGTERM, the grace period, then SIGKILL for the rest.
  await eventually(driver, () => agentProcesses(run).length === 0, 20_000, `no survivors of ${before.join(", ")}`);
  assert.equal(snapshot(), worktreeBefore, "the worktree is untouched");
  await app.shot("aborted");
});

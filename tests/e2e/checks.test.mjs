// The fleet's CHECKS column in the real window: a run whose sensors ran
// shows how many passed and failed (never "—"), its state at a glance, and
// the counts on hover. Run by run.sh (Xvfb + session bus + WebKitWebDriver).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openApp, eventually, By, until } from "./lib.mjs";

let app;
let driver;

before(async () => {
  app = await openApp();
  driver = app.driver;
});

after(async () => {
  await app?.quit();
});

const cell = (run) => driver.findElement(By.css(`[role="row"][data-run-id="${run}"] [data-col="sensors"]`));

/** Approves the run's plan and tool calls from the CLI until its sensors ran. */
async function playUntilSensors(run) {
  await eventually(driver, async () => {
    for (const g of JSON.parse(app.cli("gates", "list", "--json")).filter((g) => g.run_id === run && g.status === "pending")) {
      if (g.kind === "plan") app.cli("gates", "decide", String(g.id), "--option", "approve");
      else if (g.kind === "tool_call") app.cli("gates", "decide", String(g.id), "--option", "yes");
    }
    return JSON.parse(app.cli("runs", "show", String(run), "--json")).sensors;
  }, 60_000, `the sensors of run ${run} to run`);
}

test("a run whose checks all passed shows them passed; one with a failing check shows it failed", async () => {
  app.workspace("green", ["true", "test -f README.md"]);
  app.workspace("red", ["true", "false"]);
  const green = app.startDemo("green", "happy", "All checks pass");
  const red = app.startDemo("red", "happy", "A check fails");
  await playUntilSensors(green);
  await playUntilSensors(red);

  await eventually(driver, async () => (await (await cell(green)).getAttribute("data-state")) === "passed", 15_000, "the green row's checks");
  const g = await cell(green);
  assert.match(await g.getText(), /^✓\s*2\/2$/);
  assert.equal(await g.getAttribute("title"), "Checks: 2 passed, none failed\n✓ true\n✓ test -f README.md");

  await eventually(driver, async () => (await (await cell(red)).getAttribute("data-state")) === "failed", 15_000, "the red row's checks");
  const r = await cell(red);
  assert.match(await r.getText(), /^✗\s*1\s*✓\s*1$/);
  assert.equal(await r.getAttribute("title"), "Checks: 1 failed, 1 passed\n✗ false\n✓ true");
  await app.shot("fleet-checks");
});

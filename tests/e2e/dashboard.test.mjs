// The fleet dashboard in the real window, against the real engine it embeds.
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openApp, By, until } from "./lib.mjs";

const { E2E_OUT } = process.env;
let app;
let driver;
const cli = (...args) => app.cli(...args);
const sql = (query, ...params) => app.sql(query, ...params);
const shot = (name) => app.shot(name);

/** A run's row in the fleet grid. */
const row = (id) => By.css(`[role="row"][data-run-id="${id}"]`);

/** Waits until the row of run `id` shows `state` (and `reason` for released). */
async function waitForRow(id, state, reason) {
  await driver.wait(async () => {
    const rows = await driver.findElements(row(id));
    if (rows.length !== 1) return false;
    if ((await rows[0].getAttribute("data-state")) !== state) return false;
    return reason === undefined || (await rows[0].getAttribute("data-reason")) === reason;
  }, 10_000, `run ${id} never showed ${state} ${reason ?? ""}`);
  return driver.findElement(row(id));
}

before(async () => {
  app = await openApp();
  driver = app.driver;
});

after(async () => {
  await app?.quit();
});

test("a fleet seeded from the CLI appears live in the open window", async () => {
  // The app's engine owns the socket: the CLI goes through it, and the rows
  // arrive as pushed events (the window was opened on an empty database).
  assert.match(cli("demo", "seed"), /seeded 15 demo runs/);
  await driver.wait(async () => (await driver.findElements(By.css('[role="row"][data-run-id]'))).length === 15, 10_000);
  const needsYou = await driver.findElements(By.css('[data-testid="needs-you"]'));
  assert.equal(needsYou.length, 4, "three pending reviews and one waiting run need the user");
  await waitForRow(1, "pending_review");
  const count = await driver.findElement(By.css('[data-count="pending_review"]')).getText();
  assert.match(count, /3/);
  await shot("dashboard");
});

test("approving a pending review in the window merges it, on the record as user:app", async () => {
  const r = await driver.findElement(row(1));
  await r.findElement(By.css('button[data-action="approve"]')).click();
  const after = await waitForRow(1, "released", "merged");
  assert.match(await after.findElement(By.css('[data-col="state"]')).getText(), /merged/i);
  assert.equal((await after.findElements(By.css('[data-testid="needs-you"]'))).length, 0);
  assert.deepEqual(sql("SELECT state FROM runs WHERE id = ?", 1), [["released:merged"]]);
  assert.deepEqual(
    sql("SELECT d.option, d.actor FROM gate_decisions d JOIN gates g ON g.id = d.gate_id WHERE g.run_id = ? AND g.kind = 'merge_review'", 1),
    [["approve", "user:app"]],
  );
  await shot("dashboard-approved");
});

test("Why? on a decided row tells who approved it, each record verified", async () => {
  await driver.findElement(row(1)).findElement(By.css('button[data-action="why"]')).click();
  const drawer = await driver.wait(until.elementLocated(By.css('[data-testid="why-drawer"]')), 5_000);
  const [[gate]] = sql("SELECT id FROM gates WHERE run_id = ? AND kind = 'merge_review'", 1);
  assert.equal(await drawer.getAttribute("data-gate-id"), String(gate));
  await driver.wait(async () => (await driver.findElements(By.css('[data-testid="why-record"]'))).length >= 2, 5_000, "the story");
  assert.equal(await drawer.findElement(By.css('[data-testid="why-verified"]')).getAttribute("data-verified"), "true");
  assert.match(await drawer.getText(), /user:app/);
  for (const r of await driver.findElements(By.css('[data-testid="why-record"]'))) {
    assert.equal(await r.getAttribute("data-verified"), "true");
  }
  await shot("dashboard-why");
  await driver.findElement(By.css("body")).sendKeys("\uE00C"); // Escape
  await driver.wait(async () => (await driver.findElements(By.css('[data-testid="why-drawer"]'))).length === 0, 5_000, "the drawer to close");
});

test("rejecting in the window asks for a reason and records it", async () => {
  const r = await driver.findElement(row(2));
  await r.findElement(By.css('button[data-action="reject"]')).click();
  const confirm = await driver.findElement(By.css('button[data-testid="reject-confirm"]'));
  assert.equal(await confirm.isEnabled(), false, "no reason, no reject");
  await driver.findElement(By.css('textarea[data-testid="reject-reason"]')).sendKeys("Breaks the checkout flow on Safari");
  await shot("dashboard-reject-dialog");
  await confirm.click();
  await waitForRow(2, "released", "human_rejected");
  assert.deepEqual(sql("SELECT release_note FROM runs WHERE id = ?", 2), [["Breaks the checkout flow on Safari"]]);
});

test("a locked database shows a clear typed error and loses nothing", async () => {
  // Another process holds the write lock longer than the engine's busy timeout.
  const py = "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(8); c.execute('ROLLBACK')";
  const holder = spawn("python3", ["-c", py, join(app.dataDir, "overseer.db")], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = once(holder, "exit");
  await once(holder.stdout, "data");
  await driver.findElement(row(3)).findElement(By.css('button[data-action="approve"]')).click();
  const banner = await driver.wait(until.elementLocated(By.css('[data-testid="error"]')), 15_000);
  assert.equal(await banner.findElement(By.css('[data-testid="error-code"]')).getText(), "storage");
  assert.match(await banner.getText(), /locked by another process/);
  await shot("dashboard-error");
  await exited;
  await waitForRow(3, "pending_review");
  assert.deepEqual(sql("SELECT state FROM runs WHERE id = ?", 3), [["pending_review"]]);
  await banner.findElement(By.css("button")).click();
  assert.equal((await driver.findElements(By.css('[data-testid="error"]'))).length, 0);
});

test("a change made from the CLI while the window is open shows up without a reload", async () => {
  assert.match(cli("runs", "reject", "3", "--reason", "from the terminal"), /human_rejected/);
  await waitForRow(3, "released", "human_rejected");
  cli("runs", "abort", "5");
  await waitForRow(5, "released", "aborted_by_user");
});

test("errors cross the IPC boundary typed as {code, message}", async () => {
  const err = await driver.executeAsyncScript(`
    const done = arguments[arguments.length - 1];
    window.__TAURI_INTERNALS__.invoke("approve_run", { runId: 9999 }).then(() => done(null), (e) => done(e));
  `);
  assert.equal(err.code, "not_found");
  assert.match(err.message, /run 9999 does not exist/);
});

test("the audit log verifies and the pending reviews produced OS notifications", async () => {
  const out = cli("audit", "verify");
  const n = Number(/audit log OK: (\d+) records/.exec(out)?.[1]);
  assert.ok(n > 50, out);
  // dbus-monitor writes its log as the calls pass; give a slow daemon start
  // (dunst is activated on the first call) a moment.
  const deadline = Date.now() + 15_000;
  let log = "";
  while (Date.now() < deadline) {
    log = readFileSync(join(E2E_OUT, "dbus-notify.log"), "latin1");
    if (/member=Notify/.test(log) && /ready for review/.test(log)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.match(log, /member=Notify/);
  // One per run, or coalesced ("3 runs are ready for review") when they
  // arrive together.
  assert.match(log, /(is|are) ready for review/);
});

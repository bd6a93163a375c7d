// The run page's "Why?": every signed record that decided anything on a run,
// from its page. A real demo agent in a real worktree plays the questions
// scenario with a question nobody answers (its timer fires), an advisory
// supervisor (its vote on the plan, its verdict on each step), a task rule
// that allows an edit and a workspace rule that denies another, and a human
// approving the plan; the drawer shows each as a verified record, by kind,
// the same records the engine's database holds, and follows the engine when
// the run is approved with the drawer open. Keyboard only. Run by run.sh
// (Xvfb + session bus + WebKitWebDriver).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openApp, eventually, By } from "./lib.mjs";

let app;
let driver;
let runId;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const drawer = () => By.css(`[data-testid="run-why-drawer"][data-run-id="${runId}"]`);

function gatesOfRun() {
  return JSON.parse(app.cli("gates", "list", "--all", "--json")).filter((g) => g.run_id === runId);
}

async function press(...keys) {
  const actions = driver.actions({ async: true });
  for (const k of keys) actions.sendKeys(k);
  await actions.perform();
}

/** The drawer's records as shown, in one round trip. */
function shown() {
  return driver.executeScript(`
    return [...document.querySelectorAll('[data-testid=run-why-drawer] [data-testid=why-record]')].map((r) => ({
      seq: Number(r.dataset.seq),
      type: r.dataset.type,
      kind: r.dataset.kind,
      verified: r.dataset.verified,
      mark: r.querySelector('[data-testid=why-record-verified]') ? 'verified' : (r.querySelector('[data-testid=why-problem]')?.textContent ?? null),
      label: r.querySelector('[data-testid=why-kind]')?.textContent,
      text: r.textContent,
    }));`);
}

/** Every audit record about the run or one of its gates, from the database. */
function recordsInDb() {
  return app.sql(
    `SELECT seq FROM audit_log WHERE json_extract(payload, '$.run_id') = ?1
       OR json_extract(payload, '$.gate_id') IN (SELECT id FROM gates WHERE run_id = ?1) ORDER BY seq`,
    runId,
  ).map(([seq]) => seq);
}

before(async () => {
  app = await openApp();
  driver = app.driver;
  app.workspace("web");
  app.cli("workspace", "rules", "--workspace", "web", "--deny", "Edit(NOTES.md)");
  app.cli("supervisor", "configure", "--workspace", "web", "--autonomy", "advisory", "--evaluator", "rules", "--enable");
  const out = app.cli("task", "start", "--workspace", "web", "--agent", "demo", "--scenario", "questions",
    "--title", "Why did it go that way", "--prompt", "Add a greeting", "--question-timeout", "1", "--allow", "Edit(src/greeting.txt)");
  runId = Number(/(\d+)\s*$/.exec(out.trim())?.[1]);
  assert.ok(Number.isFinite(runId), out);

  // Nobody answers the question (its timer declines it); the plan waits for
  // the supervisor's advice, then a human approves it and every later ask.
  const end = Date.now() + 90_000;
  for (;;) {
    const [[state]] = app.sql("SELECT state FROM runs WHERE id = ?", runId);
    if (state === "pending_review") break;
    if (state.startsWith("released") || Date.now() >= end) {
      assert.fail(`run ${runId} did not reach review (state ${state}):\n${app.cli("runs", "why", String(runId))}`);
    }
    for (const g of gatesOfRun().filter((g) => g.status === "pending")) {
      if (g.kind === "plan") {
        const advised = app.sql("SELECT count(*) FROM decisions WHERE gate_id = ? AND actor LIKE 'supervisor:%'", g.id)[0][0] > 0;
        if (advised) app.cli("gates", "decide", String(g.id), "--option", "approve");
        continue;
      }
      const option = { tool_call: "yes", step_review: "proceed", supervisor_pause: "proceed" }[g.kind];
      if (option) app.cli("gates", "decide", String(g.id), "--option", option);
    }
    await sleep(200);
  }
});

after(async () => {
  await app?.quit();
});

test("Why? on the run page: every kind of decision, each a verified signed record, keyboard only", async () => {
  // The run page, the way a user opens it.
  await driver.findElement(By.css('button[data-nav="fleet"]')).click();
  const title = await eventually(driver, async () => (await driver.findElements(By.css(`[data-run-id="${runId}"] .title`)))[0], 10_000, "the fleet row");
  await title.click();
  await driver.wait(async () => (await driver.findElements(By.css(`[data-testid="run-detail"][data-run-id="${runId}"]`))).length > 0, 5_000, "the run page");

  // Focus the Why? button and press Enter: the drawer opens, focus inside it.
  const why = await driver.findElement(By.css('[data-testid="run-why"]'));
  await driver.executeScript("arguments[0].focus()", why);
  await press("\uE007");
  const d = await driver.wait(async () => (await driver.findElements(drawer()))[0], 5_000, "the run's Why? drawer");
  assert.equal(await d.getAttribute("role"), "dialog");
  assert.equal(await driver.executeScript("return document.activeElement?.dataset.action"), "close");
  await eventually(driver, async () => (await shown()).length > 0, 10_000, "the story");
  await app.shot("run-why");

  // By default: what decided something. Each kind is there, each verified.
  const deciding = await shown();
  const kinds = new Set(deciding.map((r) => r.kind));
  for (const k of ["step_verdict", "rule_allow", "rule_deny", "supervisor_vote", "timer", "human"]) {
    assert.ok(kinds.has(k), `a ${k} record: ${JSON.stringify(deciding.map((r) => [r.seq, r.kind, r.type]))}`);
  }
  for (const r of deciding) {
    assert.equal(r.verified, "true", JSON.stringify(r));
    assert.equal(r.mark, "verified", JSON.stringify(r));
    assert.ok(r.label, `a kind label on #${r.seq}`);
  }
  const summary = await d.findElement(By.css('[data-testid="why-verified"]'));
  assert.equal(await summary.getAttribute("data-verified"), "true");
  assert.match(await summary.getText(), /^Verified: all \d+ records are signed, intact and chained\.$/);
  // What each record says comes from the signed record itself.
  const of = (kind) => deciding.filter((r) => r.kind === kind).map((r) => r.text).join("\n");
  assert.match(of("rule_allow"), /Allowed by the rule Edit\(src\/greeting\.txt\)/);
  assert.match(of("rule_allow"), /\(task rule\)/);
  assert.match(of("rule_deny"), /Denied by the rule Edit\(NOTES\.md\)/);
  assert.match(of("rule_deny"), /\(workspace rule\)/);
  assert.match(of("timer"), /Timer fired: chose “decline”/);
  assert.match(of("step_verdict"), /Step 1: (CONTINUE|REORIENT|PAUSE) by /);
  assert.match(of("supervisor_vote"), /supervisor:rules/);
  assert.match(of("human"), /user:cli/);
  assert.match(await d.findElement(By.css('[data-testid="why-decided"]')).getText(), /Step verdicts?.*Rules? allowed.*Rules? denied.*Supervisor votes?.*Timers? fired.*Human decisions?/);

  // Every decision row of the run is shown, at its signed record.
  const seqs = new Set(deciding.map((r) => r.seq));
  for (const [seq] of app.sql("SELECT audit_seq FROM decisions WHERE run_id = ?", runId)) {
    assert.ok(seqs.has(seq), `decision record #${seq} is shown`);
  }

  // Space on the filter (reached with Tab): every record of the run, exactly
  // the database's, in log order.
  const filter = await d.findElement(By.css('[data-testid="why-deciding-only"]'));
  await driver.executeScript("arguments[0].focus()", filter);
  await press(" ");
  const db = recordsInDb();
  const all = await eventually(driver, async () => {
    const s = await shown();
    return s.length === db.length ? s : null;
  }, 5_000, "every record of the run");
  assert.deepEqual(all.map((r) => r.seq), db);
  assert.ok(all.every((r) => r.verified === "true"));
  assert.ok(all.some((r) => r.kind === "run" && r.type === "run_transition"));

  // The engine pushes; the drawer follows: approving the run (from the CLI)
  // adds the human's decision on the merge review while it is open.
  const before = all.length;
  app.cli("runs", "approve", String(runId));
  const last = all[all.length - 1].seq;
  const after = await eventually(driver, async () => {
    const s = await shown();
    const human = s.some((r) => r.kind === "human" && r.type === "gate_decided" && r.seq > last);
    return s.length > before && human && JSON.stringify(s.map((r) => r.seq)) === JSON.stringify(recordsInDb()) ? s : null;
  }, 15_000, "the approval in the open drawer, and every record the database has");
  assert.ok(after.every((r) => r.verified === "true"));
  assert.equal(await summary.getAttribute("data-verified"), "true");

  // Esc closes it, and focus goes back to the Why? button.
  await press("\uE00C");
  await driver.wait(async () => (await driver.findElements(drawer())).length === 0, 5_000, "the drawer to close");
  assert.equal(await driver.executeScript("return document.activeElement?.dataset.testid"), "run-why");
});

// The unified inbox, the gate dialogs and the "Why?" drawer in the real
// window, against demo agents that run for real through the app's engine.
// Two runs play at once: `questions` (a batched form, then a plan that is
// sent back once and approved, then an edit allowed "always") and `flaky`
// (a plan, an edit approved in a batch, a failing step retried with
// guidance), and `destructive` (an always-gated `rm -rf` refused with a
// reason, then a step review stopped), and `happy` (an edit refused, so the
// step's confidence is medium: a step review that counts down to
// auto-proceed, stopped by the user). Every click is checked in the real database and with the CLI.
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { openApp, eventually, By, until } from "./lib.mjs";

let app;
let driver;
let ws;
let runQ; // questions
let runF; // flaky
let runD; // destructive
let runH; // happy, with its edit refused: a step review on a timer
let runS; // happy, in a workspace with an advisory supervisor

const card = (sel) => By.css(`article${sel}`);

/** Waits for the pending card of `kind` on `run` (other than the gate ids
 * in `not`), and returns its gate id. */
async function gateOf(run, kind, not = [], ms = 20_000) {
  return eventually(
    driver,
    async () => {
      for (const el of await driver.findElements(card(`[data-run-id="${run}"][data-kind="${kind}"]`))) {
        const id = Number(await el.getAttribute("data-gate-id"));
        if (!not.includes(id)) return id;
      }
      return null;
    },
    ms,
    `a ${kind} gate of run ${run}`,
  );
}

const cardOf = (id) => driver.findElement(card(`[data-gate-id="${id}"]`));

async function gone(id, what = `gate ${id} to leave the inbox`) {
  await eventually(driver, async () => (await driver.findElements(card(`[data-gate-id="${id}"]`))).length === 0, 10_000, what);
}

/** A screenshot once the page has painted what the DOM holds (WebKit's
 * snapshot can lag a few frames behind the DOM). */
async function shot(name) {
  await driver.executeAsyncScript(`
    const done = arguments[arguments.length - 1];
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 50)));
  `);
  await app.shot(name);
}

/** Clicks an element after scrolling it to the middle of the window, clear
 * of the sticky header and inbox bar. */
async function press(element) {
  const el = await element;
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  await el.click();
}

/** The decisions recorded on a gate, as [option, context, actor]. */
const decisions = (gate) => app.sql("SELECT option, context, actor FROM gate_decisions WHERE gate_id = ? ORDER BY id", gate);

before(async () => {
  app = await openApp();
  driver = app.driver;
  ws = "inbox-demo";
  app.workspace(ws);
  runQ = app.startDemo(ws, "questions", "Pick a greeting framework");
  runF = app.startDemo(ws, "flaky", "Greeting with a flaky step");
  runD = app.startDemo(ws, "destructive", "Start clean");
  runH = app.startDemo(ws, "happy", "Greeting, reviewed");
  app.workspace("supervised");
  app.cli("supervisor", "configure", "--workspace", "supervised", "--autonomy", "advisory", "--evaluator", "rules", "--enable");
  runS = app.startDemo("supervised", "happy", "Greeting, with a supervisor's advice");
  await driver.findElement(By.css('button[data-nav="inbox"]')).click();
  await driver.wait(until.elementLocated(By.css('[data-testid="inbox"]')), 5_000);
});

after(async () => {
  await app?.quit();
});

test("every agent's ask lands in one inbox, blocking first, marked by kind", async () => {
  const q = await gateOf(runQ, "question");
  const p = await gateOf(runF, "plan");
  for (const id of [q, p]) {
    const el = await cardOf(id);
    assert.equal(await el.getAttribute("data-ask"), "blocking");
    assert.match(await el.findElement(By.css('[data-testid="ask-kind"]')).getText(), /^blocking$/i);
    assert.match(await el.findElement(By.css('[data-testid="gate-run"]')).getText(), /^Run #\d+$/);
  }
  assert.match(await (await cardOf(q)).getText(), /Pick a greeting framework/, "the card names its run's task");
  // The badge counts what the database holds as pending (agents are still
  // opening gates: compare the two at the same moment).
  await eventually(driver, async () => {
    const badge = Number(await driver.findElement(By.css('[data-testid="inbox-count"]')).getText());
    const cards = (await driver.findElements(By.css("article[data-gate-id]"))).length;
    const [[pending]] = app.sql("SELECT COUNT(*) FROM gates WHERE status = 'pending'");
    return badge >= 2 && badge === pending && cards === pending;
  }, 10_000, "the inbox to match the database");
  await shot("inbox");
});

test("a batched question is answered all at once; required answers are enforced", async () => {
  const id = await gateOf(runQ, "question");
  const form = () => cardOf(id);
  const tabs = await (await form()).findElements(By.css('[data-testid="question-tab"]'));
  const labels = await Promise.all(tabs.map((t) => t.getText()));
  assert.deepEqual(labels.map((l) => l.replace(/\*$/, "").trim()), ["Add tests?", "Framework", "Anything else I should know?"]);
  for (const l of labels) assert.ok(l.replace(/\*$/, "").trim().length <= 30, l);

  // Nothing chosen yet: Submit refuses, names what is required, sends nothing.
  await press((await form()).findElement(By.css('[data-testid="question-submit"]')));
  const problems = await (await form()).findElement(By.css('[data-testid="question-problems"]'));
  assert.match(await problems.getText(), /required/);
  assert.match(await problems.getText(), /Add tests\?/);
  assert.deepEqual(decisions(id), []);

  const tab = async (key) => press((await form()).findElement(By.css(`[data-testid="question-tab"][data-key="${key}"]`)));
  await tab("framework");
  await press((await form()).findElement(By.css('input[data-choice="react"]')));
  await tab("add_tests");
  await press((await form()).findElement(By.css('input[data-choice="yes"]')));
  await tab("notes");
  await (await form()).findElement(By.css('textarea[data-testid="question-text"]')).sendKeys("keep it short");
  const answered = await (await form()).findElements(By.css('[data-testid="question-tab"][data-answered="true"]'));
  assert.equal(answered.length, 3);
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", await form());
  await shot("question");
  await press((await form()).findElement(By.css('[data-testid="question-submit"]')));
  await gone(id);

  const [[option, context, actor]] = decisions(id);
  assert.equal(option, "answer");
  assert.equal(actor, "user:app");
  assert.deepEqual(JSON.parse(context), { framework: "react", add_tests: true, notes: "keep it short" });
  // The agent got the answers: its plan is shaped by them.
  const plan = await gateOf(runQ, "plan");
  assert.equal(
    await (await cardOf(plan)).findElement(By.css('[data-testid="plan-goal"]')).getText(),
    "Add a react greeting, with tests (notes: keep it short)",
  );
});

test("a plan shows its steps, files and risks; Request changes needs feedback and brings a revised plan back", async () => {
  const first = await gateOf(runQ, "plan");
  const el = await cardOf(first);
  const steps = await el.findElements(By.css('[data-testid="plan-step"]'));
  assert.equal(steps.length, 2);
  assert.match(await steps[0].getText(), /Write the greeting\s+demo/);
  const text = await el.getText();
  assert.match(text, /src\/greeting\.txt/);
  assert.match(text, /NOTES\.md/);
  assert.match(text, /none: two small text files/);
  // The plan came through the agent's plan mode, with its own words for it.
  const source = await el.findElement(By.css('[data-testid="plan-source"]'));
  assert.equal(await source.getAttribute("data-source"), "agent_mode");
  assert.equal(await source.getText(), "Plan from the agent's plan mode");
  const words = await el.findElement(By.css('[data-testid="plan-markdown"]'));
  assert.equal(await words.findElement(By.css("h4")).getText(), "Add a react greeting, with tests (notes: keep it short)");
  assert.deepEqual(await Promise.all((await words.findElements(By.css("ol > li"))).map((li) => li.getText())), ["Write the greeting", "Note the change in NOTES.md"]);
  await shot("plan");

  // No feedback, no request: the card says so and nothing is recorded.
  await press(el.findElement(By.css('button[data-action="request_changes"]')));
  assert.match(await el.findElement(By.css('[data-testid="gate-need-context"]')).getText(), /Request changes/);
  assert.deepEqual(decisions(first), []);

  await el.findElement(By.css('textarea[data-testid="gate-context"]')).sendKeys("Mention the framework in NOTES.md");
  await press(el.findElement(By.css('button[data-action="request_changes"]')));
  await gone(first);
  assert.deepEqual(decisions(first), [["request_changes", "Mention the framework in NOTES.md", "user:app"]]);

  // The agent revises and resubmits: a new plan gate on the same run.
  const revised = await gateOf(runQ, "plan", [first]);
  assert.notEqual(revised, first);
  const again = await cardOf(revised);
  await again.findElement(By.css('textarea[data-testid="gate-context"]')).sendKeys("Looks good");
  await press(again.findElement(By.css('button[data-action="approve"]')));
  await gone(revised);
  assert.deepEqual(decisions(revised), [["approve", "Looks good", "user:app"]]);
});

test("a tool call shows the exact file; 'Always for this run' stops the asking", async () => {
  const id = await gateOf(runQ, "tool_call");
  const el = await cardOf(id);
  assert.match(await el.findElement(By.css('[data-testid="tool-path"]')).getText(), /src\/greeting\.txt$/);
  const offered = await Promise.all((await el.findElements(By.css("button[data-action]"))).map((b) => b.getAttribute("data-action")));
  assert.deepEqual(offered.filter((a) => a !== "why"), ["yes", "always", "no"]);
  assert.equal(await el.findElement(By.css('button[data-action="always"]')).getText(), "Always for this run");
  await press(el.findElement(By.css('button[data-action="always"]')));
  await gone(id);
  assert.deepEqual(decisions(id), [["always", null, "user:app"]]);

  // The second edit (NOTES.md) was not asked again: the run went to review.
  await gateOf(runQ, "merge_review", [], 30_000);
  assert.deepEqual(app.sql("SELECT COUNT(*) FROM gates WHERE run_id = ? AND kind = 'tool_call'", runQ), [[1]]);
  assert.deepEqual(app.sql("SELECT state FROM runs WHERE id = ?", runQ), [["pending_review"]]);
});

test("flaky: approve the plan, batch-approve the edit, retry the failed step with guidance", async () => {
  const plan = await gateOf(runF, "plan");
  await press((await cardOf(plan)).findElement(By.css('button[data-action="approve"]')));
  await gone(plan);
  assert.deepEqual(decisions(plan), [["approve", null, "user:app"]]);

  // An ordinary edit is low risk: it can be ticked and approved in a batch.
  const edit = await gateOf(runF, "tool_call");
  await press((await cardOf(edit)).findElement(By.css('[data-testid="gate-select"]')));
  await press(driver.findElement(By.css('[data-testid="approve-selected"]')));
  await gone(edit);
  assert.deepEqual(decisions(edit), [["yes", null, "user:app"]]);

  const dev = await gateOf(runF, "deviation");
  const el = await cardOf(dev);
  assert.match(await el.findElement(By.css('[data-testid="deviation-error"]')).getText(), /step 2 failed: test timeout/);
  assert.equal(await el.findElement(By.css('[data-testid="attempts"]')).getText(), "attempts 0/10");
  const offered = await Promise.all((await el.findElements(By.css("button[data-action]"))).map((b) => b.getAttribute("data-action")));
  assert.deepEqual(offered.filter((a) => a !== "why"), ["retry", "replan", "stop"]);
  await el.findElement(By.css('textarea[data-testid="gate-context"]')).sendKeys("Give the test more time");
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  await shot("deviation");
  await press(el.findElement(By.css('button[data-action="retry"]')));
  await gone(dev);
  assert.deepEqual(decisions(dev), [["retry", "Give the test more time", "user:app"]]);

  // The retried step carries on where it failed: it asks for the next edit.
  const next = await gateOf(runF, "tool_call", [edit]);
  await press((await cardOf(next)).findElement(By.css('button[data-action="yes"]')));
  await gone(next);
  await gateOf(runF, "merge_review", [], 30_000);
  assert.deepEqual(app.sql("SELECT state FROM runs WHERE id = ?", runF), [["pending_review"]]);
});

test("destructive: an always-gated command offers no Always and no batch, and No carries a reason", async () => {
  const plan = await gateOf(runD, "plan");
  await press((await cardOf(plan)).findElement(By.css('button[data-action="approve"]')));
  await gone(plan);

  const id = await gateOf(runD, "tool_call");
  const el = await cardOf(id);
  assert.equal(await el.findElement(By.css('[data-testid="tool-command"]')).getText(), "rm -rf build/");
  assert.match(await el.findElement(By.css('[data-testid="always-gated"]')).getText(), /Always asks/);
  const offered = await Promise.all((await el.findElements(By.css("button[data-action]"))).map((b) => b.getAttribute("data-action")));
  assert.deepEqual(offered.filter((a) => a !== "why"), ["yes", "no"]);
  assert.equal((await el.findElements(By.css('[data-testid="gate-select"]'))).length, 0, "never in a batch");
  await el.findElement(By.css('textarea[data-testid="gate-context"]')).sendKeys("Keep build/ for now");
  await press(el.findElement(By.css('button[data-action="no"]')));
  await gone(id);
  assert.deepEqual(decisions(id), [["no", "Keep build/ for now", "user:app"]]);

  // The step asked for destructive work: a hard stop for review, no timer.
  const review = await gateOf(runD, "step_review");
  const card = await cardOf(review);
  assert.equal(await card.getAttribute("data-ask"), "question");
  assert.equal((await card.findElements(By.css('[data-testid="gate-countdown"]'))).length, 0);
  await press(card.findElement(By.css('button[data-action="stop"]')));
  assert.match(await card.findElement(By.css('[data-testid="gate-need-context"]')).getText(), /Stop/);
  await card.findElement(By.css('textarea[data-testid="gate-context"]')).sendKeys("Not today");
  await press(card.findElement(By.css('button[data-action="stop"]')));
  await gone(review);
  assert.deepEqual(decisions(review), [["stop", "Not today", "user:app"]]);
  await eventually(driver, async () => app.sql("SELECT state FROM runs WHERE id = ?", runD)[0][0].startsWith("released"), 10_000, "the run to stop");
});

test("a medium-confidence step review counts down live until the user stops the timer", async () => {
  const plan = await gateOf(runH, "plan");
  await press((await cardOf(plan)).findElement(By.css('button[data-action="approve"]')));
  await gone(plan);
  const edit = await gateOf(runH, "tool_call");
  await press((await cardOf(edit)).findElement(By.css('button[data-action="no"]')));
  await gone(edit);

  const id = await gateOf(runH, "step_review");
  const el = await cardOf(id);
  assert.equal(await el.getAttribute("data-ask"), "question");
  const seconds = async () => Number(/Proceeds in (\d+) s/.exec(await (await cardOf(id)).findElement(By.css('[data-testid="gate-countdown"]')).getText())?.[1]);
  const first = await seconds();
  assert.ok(first > 0 && first <= 10, `countdown ${first}`);
  await eventually(driver, async () => (await seconds()) < first, 3_000, "the countdown to tick");
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  await shot("step-review");
  await press(el.findElement(By.css('button[data-action="hold"]')));
  await eventually(driver, async () => (await (await cardOf(id)).findElements(By.css('[data-testid="gate-countdown"]'))).length === 0, 5_000, "the timer to stop");
  assert.deepEqual(app.sql("SELECT auto_at, status FROM gates WHERE id = ?", id), [[null, "pending"]]);
  // Past the original deadline, it still waits for a human.
  await driver.sleep(Math.max(0, first * 1000 - 500));
  assert.deepEqual(app.sql("SELECT status FROM gates WHERE id = ?", id), [["pending"]]);
  await press((await cardOf(id)).findElement(By.css('button[data-action="proceed"]')));
  await gone(id);
  assert.deepEqual(decisions(id), [["proceed", null, "user:app"]]);
});

test("Why? tells a gate's story, verified, and follows a decision made elsewhere", async () => {
  const id = await gateOf(runQ, "merge_review");
  await press((await cardOf(id)).findElement(By.css('button[data-action="why"]')));
  const drawer = await driver.wait(until.elementLocated(By.css('[data-testid="why-drawer"]')), 5_000);
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="why-record"]'))).length > 0, 5_000, "the story");
  assert.equal(await drawer.findElement(By.css('[data-testid="why-verified"]')).getAttribute("data-verified"), "true");

  // Decided from the terminal while the drawer is open: it refreshes on the
  // engine's event, with the new signed record.
  app.cli("gates", "decide", String(id), "--option", "approve");
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="why-record"][data-type="gate_decided"]'))).length === 1, 10_000, "the decision in the story");
  const records = await driver.findElements(By.css('[data-testid="why-record"]'));
  const flags = await Promise.all(records.map((r) => r.getAttribute("data-verified")));
  assert.ok(flags.every((f) => f === "true"), `every record verified: ${flags}`);
  assert.equal(await records[0].getAttribute("data-type"), "gate_opened");
  const summary = await driver.findElement(By.css('[data-testid="why-verified"]'));
  assert.equal(await summary.getAttribute("data-verified"), "true");
  assert.match(await summary.getText(), new RegExp(`all ${records.length} records`));
  assert.match(await driver.findElement(By.css('[data-testid="why-decision"]')).getText(), /Decided: .*by user:/);
  await shot("why-drawer");

  // The CLI tells the same story: same records, all verified.
  const why = app.cli("gates", "why", String(id));
  assert.match(why, new RegExp(`all ${records.length} records verified`));
  const seqs = await Promise.all(records.map((r) => r.getAttribute("data-seq")));
  for (const s of seqs) assert.match(why, new RegExp(`#${s}\\s`));

  // Esc closes it.
  await driver.actions().sendKeys("\uE00C").perform();
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="why-drawer"]'))).length === 0, 5_000, "the drawer to close");
  assert.match(app.cli("audit", "verify"), /audit log OK/);
});

test("Why? shows the supervisor's advice with its rationale, rule and source event", async () => {
  const id = await gateOf(runS, "plan");
  // The advisory supervisor votes after the gate opens: wait for its record.
  await eventually(driver, async () => app.sql("SELECT COUNT(*) FROM decisions WHERE gate_id = ?", id)[0][0] > 0, 10_000, "the supervisor's advice");
  const [[actor, verdict, rule, source]] = app.sql("SELECT actor, verdict, rule_ref, source_event FROM decisions WHERE gate_id = ?", id);
  const el = await cardOf(id);
  assert.match(await el.findElement(By.css('[data-testid="gate-authority"]')).getText(), /advisory/);
  await press(el.findElement(By.css('button[data-action="why"]')));
  const advice = await driver.wait(until.elementLocated(By.css('[data-testid="why-record"][data-type="decision"]')), 5_000);
  const text = await advice.getText();
  assert.match(text, new RegExp(`Decision by ${actor}: ${verdict}`));
  if (rule) assert.ok(text.includes(rule), `rule ${rule} in ${text}`);
  assert.ok(text.includes(source), `source ${source} in ${text}`);
  assert.equal(await advice.getAttribute("data-verified"), "true");
  assert.equal(await driver.findElement(By.css('[data-testid="why-verified"]')).getAttribute("data-verified"), "true");
  await shot("why-supervisor");
  await driver.actions().sendKeys("\uE00C").perform();
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="why-drawer"]'))).length === 0, 5_000, "the drawer to close");
});

test("a record altered in the database is flagged loudly in the drawer and by the CLI", async () => {
  // Someone with write access to the file rewrites what the engine asked.
  const id = await gateOf(runF, "merge_review");
  const py = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); n=c.execute(\"UPDATE audit_log SET payload = replace(payload, 'Review and merge', 'Quietly merge') WHERE json_extract(payload, '$.type') = 'gate_opened' AND json_extract(payload, '$.gate_id') = ?\", (int(sys.argv[2]),)).rowcount; c.commit(); print(n)";
  assert.equal(execFileSync("python3", ["-c", py, join(app.dataDir, "overseer.db"), String(id)], { encoding: "utf8" }).trim(), "1");

  await press((await cardOf(id)).findElement(By.css('button[data-action="why"]')));
  // Looked up afresh on each read: the drawer re-renders as events arrive.
  const said = await eventually(driver, async () => {
    const summary = await driver.findElement(By.css('[data-testid="why-verified"]'));
    return (await summary.getAttribute("data-verified")) === "false" && (await summary.getText());
  }, 5_000, "the story to fail verification");
  assert.match(said, /VERIFICATION FAILED/);
  const bad = await driver.findElement(By.css('[data-testid="why-record"][data-type="gate_opened"]'));
  assert.equal(await bad.getAttribute("data-verified"), "false");
  assert.match(await bad.findElement(By.css('[data-testid="why-problem"]')).getText(), /payload edited/);
  await shot("why-tampered");
  assert.throws(() => app.cli("gates", "why", String(id)), (e) => /VERIFICATION FAILED/.test(String(e.stdout)));
  await press(driver.findElement(By.css('[data-testid="why-drawer"] button[data-action="close"]')));
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="why-drawer"]'))).length === 0, 5_000, "the drawer to close");
});

test("a decision written straight into the database is NOT VERIFIED in Why? and not acted on", async () => {
  // The supervised run's plan waits for a human. Someone with write access
  // to the file (not to the signing key) marks it approved.
  const id = await gateOf(runS, "plan");
  const py = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); n=c.execute(\"UPDATE gates SET status = 'decided', decided_option = 'approve', decided_by = 'user:app', decided_at = 1 WHERE id = ?\", (int(sys.argv[2]),)).rowcount; c.commit(); print(n)";
  assert.equal(execFileSync("python3", ["-c", py, join(app.dataDir, "overseer.db"), String(id)], { encoding: "utf8" }).trim(), "1");

  await press((await cardOf(id)).findElement(By.css('button[data-action="why"]')));
  // The drawer re-renders as events arrive (the sweep below among them), so
  // it is read in one snapshot inside the page, never through element
  // handles that a re-render leaves stale.
  const drawer = await eventually(driver, async () => {
    const seen = await driver.executeScript(`
      const q = (t) => document.querySelector('[data-testid="why-drawer"] [data-testid="' + t + '"]');
      const v = q("why-verified"), d = q("why-decision"), p = q("why-decision-problem");
      return v && {
        verified: v.getAttribute("data-verified"), said: v.innerText.trim(),
        decisionVerified: d && d.getAttribute("data-verified"), decision: d ? d.innerText : "",
        problem: p && p.getAttribute("data-problem"), problemText: p ? p.innerText : "",
      };`);
    return seen && seen.verified === "false" ? seen : null;
  }, 5_000, "the forged decision to fail verification");
  // The engine looks at every waiting gate again each 5 s (FORGED_SWEEP): if
  // it already has, the story says the forged decision was caught, and the
  // rest of this test (the gate pending again, the security event) holds
  // all the same. Otherwise the drawer shows the forgery as not verified.
  if (/^TAMPERING DETECTED: a decision was written into the database outside Overseer/.test(drawer.said)) {
    assert.match(drawer.said, /it was not acted on/);
  } else {
    assert.match(drawer.said, /NOT VERIFIED: the decision shown was written into the database outside Overseer/);
    assert.equal(drawer.decisionVerified, "false");
    assert.match(drawer.decision, /NOT VERIFIED/);
    assert.equal(drawer.problem, "no_record");
    assert.match(drawer.problemText, /has no signed audit record/);
    await shot("why-forged-decision");
  }

  // The next event wakes the run's wait: the engine does not act on it, puts
  // the gate back, and signs a security event; the drawer follows.
  app.cli("runs", "steer", String(runS), "keep the greeting short");
  await eventually(driver, async () => app.sql("SELECT status FROM gates WHERE id = ?", id)[0][0] === "pending", 10_000, "the gate to be pending again");
  const [[events]] = app.sql("SELECT COUNT(*) FROM audit_log WHERE json_extract(payload, '$.type') = 'security_event' AND json_extract(payload, '$.event') = 'decision_without_record' AND json_extract(payload, '$.gate_id') = ?", id);
  assert.equal(events, 1);
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="why-record"][data-type="security_event"]'))).length === 1, 10_000, "the security event in the story");
  await eventually(driver, async () => /TAMPERING DETECTED/.test(await driver.findElement(By.css('[data-testid="why-verified"]')).getText()), 5_000, "the story to say tampering was detected");
  await eventually(driver, async () => /Still waiting for a decision/.test(await driver.findElement(By.css('[data-testid="why-decision"]')).getText()), 5_000, "the decision to be waiting again");
  // Nothing ran past the plan.
  assert.deepEqual(app.sql("SELECT COUNT(*) FROM gates WHERE run_id = ? AND kind = 'tool_call'", runS), [[0]]);
  await press(driver.findElement(By.css('[data-testid="why-drawer"] button[data-action="close"]')));
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="why-drawer"]'))).length === 0, 5_000, "the drawer to close");
  // Still in the inbox, waiting for a real decision.
  await eventually(driver, async () => (await driver.findElements(card(`[data-gate-id="${id}"]`))).length === 1, 10_000, "the plan back in the inbox");
});

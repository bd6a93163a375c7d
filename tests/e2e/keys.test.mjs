// The inbox's answer keys in the real window: y / a / n on a focused
// tool-call card answer it yes / always / no (n opens the reason box: Enter
// sends, Esc cancels), each checked in the decision the engine recorded.
// Three demo runs play `happy`: a plan (approved from the CLI), then an edit
// that asks for permission. Run by run.sh (Xvfb + session bus + WebKitWebDriver).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openApp, eventually, By, until } from "./lib.mjs";

let app;
let driver;
const runs = {};

const card = (sel) => By.css(`article${sel}`);

async function gateOf(run, kind, ms = 30_000) {
  return eventually(driver, async () => {
    const el = (await driver.findElements(card(`[data-run-id="${run}"][data-kind="${kind}"]`)))[0];
    return el ? Number(await el.getAttribute("data-gate-id")) : null;
  }, ms, `a ${kind} gate of run ${run}`);
}

const cardOf = (id) => driver.findElement(card(`[data-gate-id="${id}"]`));
const decisions = (gate) => app.sql("SELECT option, context, actor FROM gate_decisions WHERE gate_id = ? ORDER BY id", gate);
const gone = (id) => eventually(driver, async () => (await driver.findElements(card(`[data-gate-id="${id}"]`))).length === 0, 10_000, `gate ${id} to leave the inbox`);
const keys = (...k) => driver.actions().sendKeys(...k).perform();

/** Focuses the card itself, as a click on it or Tab would. */
async function focus(id) {
  const el = await cardOf(id);
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus()", el);
  assert.equal(await driver.executeScript("return document.activeElement.dataset.gateId"), String(id));
  return el;
}

/** The run's tool-call gate, once its plan is approved from the terminal. */
async function toolCallOf(run) {
  const plan = await gateOf(run, "plan");
  app.cli("gates", "decide", String(plan), "--option", "approve");
  return gateOf(run, "tool_call");
}

before(async () => {
  app = await openApp();
  driver = app.driver;
  app.workspace("keys");
  for (const k of ["yes", "always", "no"]) runs[k] = app.startDemo("keys", "happy", `Answered by key: ${k}`);
  await driver.findElement(By.css('button[data-nav="inbox"]')).click();
  await driver.wait(until.elementLocated(By.css('[data-testid="inbox"]')), 5_000);
});

after(async () => {
  await app?.quit();
});

test("? lists the answer keys", async () => {
  await driver.executeScript("document.activeElement?.blur()");
  await keys("?");
  const help = await driver.wait(until.elementLocated(By.css('[data-testid="inbox-help"]')), 5_000);
  const text = await help.getText();
  assert.match(text, /y\s+Yes/);
  assert.match(text, /a\s+Always/);
  assert.match(text, /n\s+No: opens the reason box; Enter sends, Esc cancels/);
  await app.shot("inbox-keys-help");
  await keys("\uE00C");
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="inbox-help"]'))).length === 0, 5_000, "the help to close");
});

test("y typed into a card's box is text; y on the focused card answers yes", async () => {
  const id = await toolCallOf(runs.yes);
  const el = await focus(id);
  const box = await el.findElement(By.css('textarea[data-testid="gate-context"]'));
  await box.sendKeys("yan");
  assert.equal(await box.getAttribute("value"), "yan");
  await driver.sleep(300);
  assert.deepEqual(decisions(id), [], "keys typed into the box decide nothing");
  await box.sendKeys("\uE003", "\uE003", "\uE003"); // Backspace: an input event, like the user's
  assert.equal(await box.getAttribute("value"), "");
  await focus(id);
  await keys("y");
  await gone(id);
  assert.deepEqual(decisions(id), [["yes", null, "user:app"]]);
});

test("a on the focused card answers always for this run", async () => {
  const id = await toolCallOf(runs.always);
  await focus(id);
  await keys("a");
  await gone(id);
  assert.deepEqual(decisions(id), [["always", null, "user:app"]]);
});

test("n opens the reason box: Esc cancels, Enter sends no with the reason", async () => {
  const id = await toolCallOf(runs.no);
  await focus(id);
  await keys("n");
  const armed = await (await cardOf(id)).findElement(By.css('[data-testid="gate-armed"]'));
  assert.equal(await armed.getAttribute("data-option"), "no");
  assert.equal(await driver.executeScript("return document.activeElement.dataset.testid"), "gate-context");
  await app.shot("inbox-keys-reason");
  // Esc: nothing sent, the box closes, the card has the focus again.
  await keys("\uE00C");
  await eventually(driver, async () => (await (await cardOf(id)).findElements(By.css('[data-testid="gate-armed"]'))).length === 0, 5_000, "the reason box to close");
  assert.equal(await driver.executeScript("return document.activeElement.dataset.gateId"), String(id));
  assert.deepEqual(decisions(id), []);

  await keys("n");
  await (await cardOf(id)).findElement(By.css('[data-testid="gate-armed"]'));
  await keys("not in this file", "\uE007");
  await gone(id);
  assert.deepEqual(decisions(id), [["no", "not in this file", "user:app"]]);
});

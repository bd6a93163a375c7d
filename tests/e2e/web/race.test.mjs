// Two people race for one gate: ana on her phone and bo on his laptop (two
// real Chromiums, each paired for its person) see the same tool call, and
// both tap Yes at the same moment (each page clicks at one agreed instant of
// the machine's clock). The engine records exactly one decision, by one of
// them; the other's page says the gate was already decided, and by whom.
// Run by run.sh.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEngine, openPhone, openDesktop, eventually, By, until } from "./lib.mjs";

let engine;
/** person -> its browser. */
const browsers = new Map();
const WS = "race-demo";

before(async () => {
  engine = await startEngine();
  engine.workspace(WS);
  browsers.set("ana", await openPhone());
  browsers.set("bo", await openDesktop());
});

after(async () => {
  for (const b of browsers.values()) await b.quit();
  if (engine) {
    if (process.exitCode) console.error(engine.log);
    await engine.stop();
  }
});

/** Pairs `driver` for `person` with a code from the CLI, and opens its inbox. */
async function pairAndOpenInbox(driver, person, name) {
  await driver.get(engine.url);
  await driver.wait(until.elementLocated(By.css('[data-testid="pair-code"]')), 15_000);
  await driver.findElement(By.css('[data-testid="pair-code"]')).sendKeys(engine.pairingCode(person, name));
  await driver.findElement(By.css('[data-testid="pair-submit"]')).click();
  await driver.wait(until.elementLocated(By.css('body[data-ready="1"]')), 20_000);
  await driver.findElement(By.css('nav [data-nav="inbox"]')).click();
  await driver.wait(until.elementLocated(By.css('[data-testid="inbox"]')), 5_000);
}

/** The pending card of `kind` on `run` in `driver`'s inbox: its gate id. */
function gateOf(driver, run, kind) {
  return eventually(
    driver,
    async () => {
      const el = (await driver.findElements(By.css(`article[data-run-id="${run}"][data-kind="${kind}"]`)))[0];
      return el ? Number(await el.getAttribute("data-gate-id")) : null;
    },
    30_000,
    `a ${kind} gate of run ${run}`,
  );
}

/** Clicks the card's Yes when the machine's clock reaches `at` (ms since
 * the epoch); resolves with when the click was made, or why it was not. */
function clickYesAt(driver, gateId, at) {
  return driver.executeAsyncScript(
    `const [id, at] = arguments;
     const done = arguments[arguments.length - 1];
     const button = document.querySelector('article[data-gate-id="' + id + '"] button[data-action="yes"]');
     if (!button) return done({ error: "no Yes button on gate " + id });
     setTimeout(() => {
       const clicked = performance.timeOrigin + performance.now();
       button.click();
       done({ clicked });
     }, Math.max(0, at - Date.now()));`,
    gateId,
    at,
  );
}

test("two people tap Yes on one gate at the same moment: one decision, and the other is told by whom", async () => {
  await pairAndOpenInbox(browsers.get("ana").driver, "ana", "Ana's phone");
  await pairAndOpenInbox(browsers.get("bo").driver, "bo", "Bo's laptop");

  const run = engine.startDemo(WS, "destructive", "Race for the tool call");
  // The owner approves the plan from the CLI; the tool call comes next.
  const plan = await gateOf(browsers.get("ana").driver, run, "plan");
  engine.cli("gates", "decide", String(plan), "--option", "approve");
  const seen = await Promise.all([...browsers.values()].map((b) => gateOf(b.driver, run, "tool_call")));
  assert.equal(seen[0], seen[1], "both browsers show the same gate");
  const tool = seen[0];

  // Both pages click at one instant, 800 ms from now (scripts sent in parallel).
  const at = Date.now() + 800;
  const people = [...browsers.keys()];
  const clicks = await Promise.all(people.map((p) => clickYesAt(browsers.get(p).driver, tool, at)));
  for (const [i, c] of clicks.entries()) assert.ok(c.clicked, `${people[i]}'s page did not click: ${JSON.stringify(c)}`);
  const apart = Math.abs(clicks[0].clicked - clicks[1].clicked);
  assert.ok(apart < 50, `the two clicks were ${apart.toFixed(1)} ms apart`);
  console.log(`the two taps were ${apart.toFixed(1)} ms apart`);

  // Through the engine: exactly one decision, by one of them. (Both answers
  // are in once the loser's page shows its refusal, below; checked again
  // after it.)
  const decisions = () => engine.sql("SELECT option, actor FROM gate_decisions WHERE gate_id = ? ORDER BY id", tool);
  await eventually(browsers.get("ana").driver, async () => decisions().length > 0, 15_000, "the decision");
  const [[option, actor]] = decisions();
  assert.equal(option, "yes");
  const winner = people.find((p) => actor === `user:${p}`);
  assert.ok(winner, `decided by ${actor}, neither ana nor bo`);
  const loser = people.find((p) => p !== winner);

  // The other page says it was decided already, and by whom.
  const told = await eventually(
    browsers.get(loser).driver,
    async () => {
      for (const el of await browsers.get(loser).driver.findElements(By.css('[data-testid="error"]'))) {
        const text = await el.getText();
        if (/already.decided/.test(text)) return text;
      }
      return null;
    },
    15_000,
    `${loser}'s page to say the gate was already decided`,
  );
  assert.match(told, new RegExp(`user:${winner}\\b`), `${loser}'s page names the winner: ${told}`);
  assert.doesNotMatch(told, new RegExp(`user:${loser}\\b`));
  await browsers.get(loser).shot(`race-${loser}-lost`);
  // Both cards are gone, and still one decision.
  for (const b of browsers.values()) {
    await eventually(b.driver, async () => (await b.driver.findElements(By.css(`article[data-gate-id="${tool}"]`))).length === 0, 15_000, "the card to leave");
  }
  assert.deepEqual(decisions(), [["yes", `user:${winner}`]]);
  assert.deepEqual(engine.sql("SELECT status, decided_by FROM gates WHERE id = ?", tool), [["decided", `user:${winner}`]]);
});

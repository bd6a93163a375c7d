// A phone answers an agent: a real `overseer serve --web` with a real demo
// agent, and a real Chromium with a phone's viewport (390x844). The phone is
// not trusted until paired (a wrong code is refused with advice), pairs with
// a one-time code from `overseer devices pair`, lands on its inbox, answers a
// plan and a tool call with thumb-sized buttons, and the engine records the
// decision as the device's person; a second person's desktop browser shows
// it as hers, through her phone (the run's timeline and its "Why?"). Then
// the engine is killed with SIGKILL:
// the page says it lost the engine and refuses to decide, and once the
// engine is back it reconnects and shows what happened meanwhile by itself.
// Run by run.sh.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startEngine, openPhone, openDesktop, eventually, By, until } from "./lib.mjs";

let engine;
let phone;
let driver;
/** The run whose tool call the phone answered, and that gate. */
let answered;
const WS = "phone-demo";

const card = (sel) => By.css(`article${sel}`);

/** The pending card of `kind` on `run`: its gate id. */
async function gateOf(run, kind, ms = 30_000) {
  return eventually(
    driver,
    async () => {
      const el = (await driver.findElements(card(`[data-run-id="${run}"][data-kind="${kind}"]`)))[0];
      return el ? Number(await el.getAttribute("data-gate-id")) : null;
    },
    ms,
    `a ${kind} gate of run ${run}`,
  );
}

async function gone(id) {
  await eventually(driver, async () => (await driver.findElements(card(`[data-gate-id="${id}"]`))).length === 0, 15_000, `gate ${id} to leave`);
}

/** Taps a button of a card, as a thumb would (scrolled into view first). */
async function tap(gateId, action) {
  const el = await driver.findElement(card(`[data-gate-id="${gateId}"]`)).findElement(By.css(`button[data-action="${action}"]`));
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  const { height, width } = await el.getRect();
  assert.ok(height >= 44, `the ${action} button is ${height}px tall: too small for a thumb`);
  assert.ok(width >= 44, `the ${action} button is ${width}px wide`);
  await el.click();
}

const decisions = (gate) => engine.sql("SELECT option, actor FROM gate_decisions WHERE gate_id = ? ORDER BY id", gate);

before(async () => {
  engine = await startEngine();
  engine.workspace(WS);
  phone = await openPhone();
  driver = phone.driver;
});

after(async () => {
  await phone?.quit();
  if (engine) {
    if (process.exitCode) console.error(engine.log);
    await engine.stop();
  }
});

test("an unpaired browser gets the pairing screen, and a wrong code is refused with advice", async () => {
  await driver.get(engine.url);
  await driver.wait(until.elementLocated(By.css('[data-testid="pair-screen"]')), 15_000);
  assert.equal((await driver.findElements(By.css('[data-testid="inbox"]'))).length, 0, "nothing of the app before pairing");
  await driver.findElement(By.css('[data-testid="pair-code"]')).sendKeys("AAAA-BBBB");
  await driver.findElement(By.css('[data-testid="pair-submit"]')).click();
  const err = await driver.wait(until.elementLocated(By.css('[data-testid="pair-error"]')), 10_000);
  assert.equal(await err.getAttribute("data-code"), "unauthorized");
  assert.match(await err.getText(), /wrong or has expired/);
  await phone.shot("pair-wrong-code");
});

test("pairs with a one-time code and opens on the inbox, sized for the phone", async () => {
  const code = engine.pairingCode("ana", "Ana's phone");
  const input = await driver.findElement(By.css('[data-testid="pair-code"]'));
  await input.clear();
  await input.sendKeys(code.toLowerCase());
  await driver.findElement(By.css('[data-testid="pair-submit"]')).click();
  await driver.wait(until.elementLocated(By.css('body[data-ready="1"]')), 20_000);
  await driver.wait(until.elementLocated(By.css('[data-testid="inbox"]')), 5_000);
  const first = await driver.findElement(By.css("nav [data-nav]"));
  assert.equal(await first.getAttribute("data-nav"), "inbox", "the inbox is the phone's first tab");
  const [scrollWidth, innerWidth] = await driver.executeScript("return [document.documentElement.scrollWidth, innerWidth]");
  assert.equal(innerWidth, 390);
  assert.ok(scrollWidth <= innerWidth, `the page is ${scrollWidth}px wide: it scrolls sideways`);
  // The code worked once: the device is listed for ana.
  assert.match(engine.cli("devices", "list"), /Ana's phone/);
});

test("answers a plan and a tool call from the phone: recorded as ana", async () => {
  const run = engine.startDemo(WS, "destructive", "Start clean");
  const plan = await gateOf(run, "plan");
  await phone.shot("phone-plan");
  await tap(plan, "approve");
  await gone(plan);
  assert.deepEqual(decisions(plan), [["approve", "user:ana"]]);

  const tool = await gateOf(run, "tool_call");
  assert.equal(await driver.findElement(card(`[data-gate-id="${tool}"]`)).findElement(By.css('[data-testid="tool-command"]')).getText(), "rm -rf build/");
  await phone.shot("phone-tool-call");
  await tap(tool, "yes");
  await gone(tool);
  assert.deepEqual(decisions(tool), [["yes", "user:ana"]]);
  answered = { run, tool };
});

test("another person's desktop browser shows that decision as ana's, through her phone", async () => {
  const desk = await openDesktop();
  const d = desk.driver;
  try {
    await d.get(engine.url);
    await d.wait(until.elementLocated(By.css('[data-testid="pair-code"]')), 15_000);
    await d.findElement(By.css('[data-testid="pair-code"]')).sendKeys(engine.pairingCode("bob", "Bob's laptop"));
    await d.findElement(By.css('[data-testid="pair-submit"]')).click();
    await d.wait(until.elementLocated(By.css('body[data-ready="1"]')), 20_000);
    assert.equal(await d.findElement(By.css("nav [data-nav]")).getAttribute("data-nav"), "fleet", "a desktop opens on the fleet");
    await d.findElement(By.css(`[data-run-id="${answered.run}"] button.title`)).click();
    const phrase = "user:ana through Ana's phone";
    const entry = await eventually(
      d,
      async () => {
        for (const el of await d.findElements(By.css('[data-testid="timeline-entry"][data-kind="decided"] [data-testid="timeline-title"]'))) {
          const t = await el.getText();
          if (t.includes(phrase) && t.includes("'yes'")) return t;
        }
        return null;
      },
      15_000,
      "the timeline's entry for ana's yes to the tool call",
    );
    assert.match(entry, /rm -rf build\/.*'yes' chosen by user:ana through Ana's phone \(device \d+\)/);
    // The run's "Why?": the signed records name the device.
    await d.findElement(By.css('[data-testid="run-why"]')).click();
    const devices = await eventually(d, async () => {
      const els = await d.findElements(By.css('[data-testid="why-record-device"]'));
      return els.length > 0 ? Promise.all(els.map((e) => e.getText())) : null;
    }, 15_000, "a record naming the device");
    assert.ok(devices.every((t) => /through Ana's phone \(device \d+\)/.test(t)), devices.join(" | "));
    await desk.shot("desktop-why-ana");
  } finally {
    await desk.quit();
  }
});

test("after kill -9 of the engine the page says so and refuses; back, it resyncs by itself", async () => {
  const before = engine.startDemo(WS, "destructive", "Clean again");
  const plan = await gateOf(before, "plan");
  await engine.kill9();
  const banner = await driver.wait(until.elementLocated(By.css('[data-testid="link-banner"][data-status="down"]')), 15_000);
  assert.match(await banner.getText(), /Not connected to the engine since/);
  await phone.shot("phone-engine-down");
  // A decision now is refused with the reason, not queued.
  await tap(plan, "approve");
  const err = await eventually(driver, async () => driver.findElement(card(`[data-gate-id="${plan}"]`)).findElement(By.css('[data-testid="gate-error"]')).getText(), 5_000, "the refusal");
  assert.match(err, /nothing was decided/);

  await engine.restart();
  // Decided elsewhere (the CLI, as the owner) as the page comes back: it
  // shows the gate gone whether it hears the event or rereads the inbox.
  engine.cli("gates", "decide", String(plan), "--option", "approve");
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="link-banner"]'))).length === 0, 30_000, "the page to reconnect");
  await gone(plan);
  assert.deepEqual(decisions(plan), [["approve", "user:cli"]], "the refused tap decided nothing");
  await gateOf(before, "tool_call");
});

test("a revoked phone is shown the pairing screen at once, saying why", async () => {
  const [ana] = JSON.parse(engine.cli("devices", "list", "--json")).filter((d) => d.name === "Ana's phone");
  assert.ok(ana, "the phone is listed");
  assert.ok(ana.last_seen_at !== null, "and was seen");
  engine.cli("devices", "revoke", String(ana.id));
  const reason = await driver.wait(until.elementLocated(By.css('[data-testid="pair-reason"]')), 10_000);
  assert.match(await reason.getText(), /revoked/i);
  assert.equal((await driver.findElements(By.css('[data-testid="inbox"]'))).length, 0, "nothing of the app is left");
  await phone.shot("phone-revoked");
  // Its credential (the cookie and the page's key) no longer opens anything.
  const status = await driver.executeAsyncScript(
    "const done = arguments[arguments.length - 1]; fetch('/api/me', {headers: {'X-Overseer-Device': localStorage.getItem('overseer.deviceKey')}}).then((r) => done(r.status), () => done(0));",
  );
  assert.equal(status, 401);
});

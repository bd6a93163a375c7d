// The Settings page in the real window, against the real engine it embeds:
// muting a notification kind really stops its OS notifications (seen on the
// session bus) while other kinds still fire; a supervisor policy, sensors, a budget and
// permission rules set in the page are what the CLI then reads back; a wrong
// value shows the engine's message under its field as it is typed (a dry
// run that writes nothing), and a refused save shows the engine's typed
// error beside the form and its messages under the fields. A webhook added
// in the page shows its secret once and its delivery log shows each attempt
// at a real local receiver.
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Key } from "selenium-webdriver";
import { openApp, eventually, watchNotifications, By, until } from "./lib.mjs";

let app;
let driver;
let bus;


const byTest = (id, extra = "") => By.css(`[data-testid="${id}"]${extra}`);
const toggle = (kind) => byTest("notify-toggle", `[data-kind="${kind}"]`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function openSettings() {
  await click(By.css('button[data-nav="settings"]'));
  await driver.wait(until.elementLocated(By.css('[data-testid="settings"][data-loaded="1"]')), 10_000);
}

/** Brings an element to the middle of the view (the header is sticky). */
async function reveal(el) {
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  return el;
}

/** Picks an option of a <select> by its value. */
async function choose(select, value) {
  const el = await reveal(typeof select === "string" ? await driver.findElement(byTest(select)) : select);
  await el.findElement(By.css(`option[value="${value}"]`)).click();
  assert.equal(await el.getAttribute("value"), value);
}

async function click(locator) {
  await (await reveal(await driver.findElement(locator))).click();
}

async function fill(locator, text) {
  const el = await reveal(await driver.findElement(locator));
  await el.clear();
  // A newline typed as such is dropped by the driver: press Enter instead.
  const keys = text.split("\n").flatMap((line, i) => (i ? [Key.ENTER, line] : [line]));
  if (text) await el.sendKeys(...keys);
  return el;
}

async function waitSaved(section) {
  await driver.wait(until.elementLocated(byTest("saved", `[data-section="${section}"]`)), 10_000, `${section} never said Saved`);
}

/** The engine's message under a field (`policy.timeout_seconds`,
 * `rules.ask[0]`), once one matching `want` shows (the dry run answers a
 * moment after typing pauses). */
async function fieldError(field, want) {
  return eventually(driver, async () => {
    for (const el of await driver.findElements(By.css(`[data-testid="field-error"][data-field="${field}"]`))) {
      const text = await el.getText();
      if (want.test(text)) return text;
    }
    return null;
  }, 10_000, `the message ${want} under ${field}`);
}

async function errorOf(section) {
  const el = await driver.wait(until.elementLocated(byTest("settings-error", `[data-section="${section}"]`)), 10_000);
  return el.getText();
}

const cliJson = (...args) => JSON.parse(app.cli(...args, "--json"));
const workspaceNamed = (name) => cliJson("workspace", "list").find((w) => w.name === name);

before(async () => {
  bus = await watchNotifications();
  app = await openApp();
  driver = app.driver;
  app.workspace("web");
  await openSettings();
});

after(async () => {
  bus?.stop();
  await app?.quit();
});

test("muting 'ready for review' in the page stops those notifications; blocking asks and failures still notify", async () => {
  const review = await driver.findElement(toggle("run_pending_review"));
  assert.equal(await review.getAttribute("aria-checked"), "true");
  const blocking = await driver.findElement(toggle("agent_question_blocking"));
  assert.equal(await blocking.getAttribute("aria-checked"), "true");
  assert.equal(await blocking.isEnabled(), false, "blocking asks cannot be muted");
  assert.match(await driver.findElement(By.id("blocking-note")).getText(), /always on/);

  await (await reveal(review)).click();
  await waitSaved("notifications");
  await eventually(driver, async () => (await driver.findElement(toggle("run_pending_review")).getAttribute("aria-checked")) === "false", 10_000, "the switch to show muted");
  assert.equal(await driver.findElement(toggle("run_failed")).getAttribute("aria-checked"), "true");

  // Three runs enter pending review through the app's engine, beside a run
  // that asks permission and runs that failed.
  const offset = bus.mark();
  assert.match(app.cli("demo", "seed"), /seeded 15 demo runs/);
  const sent = await eventually(driver, async () => {
    const log = bus.since(offset);
    return /asks permission|agents are waiting for you/.test(log) && /failed/.test(log) ? log : null;
  }, 15_000, "the blocking and failure notifications on the session bus");
  assert.match(sent, /member=Notify/);
  // Past the notifier's coalescing window: nothing about reviews came.
  await sleep(2_000);
  const all = bus.since(offset);
  assert.doesNotMatch(all, /ready for review/, "a muted kind must not notify");
  assert.deepEqual(app.sql("SELECT COUNT(*) FROM runs WHERE state = 'pending_review'"), [[3]], "the runs did enter review");

  // Switched back on, it is stored as on.
  await (await reveal(review)).click();
  await waitSaved("notifications");
  await eventually(driver, async () => (await driver.findElement(toggle("run_pending_review")).getAttribute("aria-checked")) === "true", 10_000, "the switch to show on");
});

test("a supervisor policy set in the page is what the CLI reads back", async () => {
  await choose("workspace-picker", "web");
  const source = await driver.findElement(byTest("policy-source"));
  assert.equal(await source.getAttribute("data-source"), "default");

  const enabled = await driver.findElement(byTest("supervisor-enabled"));
  assert.equal(await enabled.isSelected(), false, "off by default");
  await (await reveal(enabled)).click();
  await choose("autonomy", "cosign");
  await choose(await driver.findElement(byTest("gate-authority", '[data-gate="merge_review"]')), "autonomous");
  await choose(await driver.findElement(byTest("gate-authority", '[data-gate="plan"]')), "advisory");
  await choose("evaluator", "openai");
  await fill(byTest("evaluator-base-url"), "http://127.0.0.1:11434/v1");
  await fill(byTest("evaluator-model"), "llama3.1");
  await fill(byTest("evaluator-api-key-env"), "OLLAMA_API_KEY");
  await fill(byTest("timeout"), "45");
  await fill(byTest("max-reorient"), "2");
  await click(byTest("save-supervisor"));
  await waitSaved("supervisor");
  await eventually(driver, async () => (await driver.findElement(byTest("policy-source")).getAttribute("data-source")) === "own", 10_000, "own policy");

  const status = cliJson("supervisor", "status", "--workspace", "web");
  assert.deepEqual(status.own, {
    enabled: true,
    autonomy: "cosign",
    gate_authority: { merge_review: "autonomous", plan: "advisory" },
    evaluator: { type: "openai", base_url: "http://127.0.0.1:11434/v1", model: "llama3.1", api_key_env: "OLLAMA_API_KEY" },
    max_reorient_attempts: 2,
    timeout_seconds: 45,
    always_supervise: false,
    pause_timeout_seconds: 900,
    grace_seconds: 10,
  });
  assert.deepEqual(status.effective, status.own);

  // Wrong values show the engine's messages under their fields as typed,
  // before any save; checking them wrote nothing.
  const audit = app.sql("SELECT COUNT(*) FROM audit_log");
  await fill(byTest("timeout"), "0");
  await fill(byTest("evaluator-api-key-env"), "sk-live-1234567890");
  await fieldError("policy.timeout_seconds", /timeout_seconds = 0 is out of range: give 1 to 3600 seconds/);
  const keyMsg = await fieldError("policy.evaluator.api_key_env", /looks like a key: give the NAME of the environment variable/);
  assert.doesNotMatch(keyMsg, /sk-live/);
  assert.equal(await driver.findElements(byTest("settings-error", '[data-section="supervisor"]')).then((l) => l.length), 0, "nothing saved, nothing refused yet");
  assert.deepEqual(app.sql("SELECT COUNT(*) FROM audit_log"), audit, "a dry run writes nothing to the audit log");
  await reveal(await driver.findElement(byTest("evaluator-api-key-env")));
  await app.shot("settings-field-errors");

  // Saved anyway: the engine refuses it, with the same messages under the fields.
  await click(byTest("save-supervisor"));
  const msg = await errorOf("supervisor");
  assert.match(msg, /timeout_seconds = 0 is out of range/);
  assert.match(msg, /never the key itself/);
  assert.match(await driver.findElement(byTest("settings-error-code")).getText(), /invalid_input/);
  await fieldError("policy.evaluator.api_key_env", /looks like a key/);
  assert.equal(cliJson("supervisor", "status", "--workspace", "web").own.timeout_seconds, 45);
  assert.deepEqual(app.sql("SELECT COUNT(*) FROM audit_log"), audit, "the refused key is nowhere in the audit log");

  // Fixed, the message goes away as typed.
  await fill(byTest("evaluator-api-key-env"), "OLLAMA_API_KEY");
  await eventually(driver, async () => (await driver.findElements(By.css('[data-field="policy.evaluator.api_key_env"]'))).length === 0, 10_000, "the key's message to go");
  await fill(byTest("timeout"), "45");
});

test("a task override shows what it inherits, saves, and is removed back to the workspace's", async () => {
  // Seeded task 1 belongs to web-app; the page lists workspaces when opened.
  await click(By.css('button[data-nav="fleet"]'));
  await openSettings();
  await choose("workspace-picker", "web-app");

  // The engine's typed error for a task that does not exist.
  await fill(byTest("scope-task"), "9999");
  await click(byTest("scope-load"));
  const err = await errorOf("supervisor");
  assert.match(err, /task 9999 does not exist/);
  assert.match(await driver.findElement(byTest("settings-error-code")).getText(), /not_found/);

  await fill(byTest("scope-task"), "1");
  await click(byTest("scope-load"));
  await eventually(driver, async () => (await driver.findElement(byTest("policy-source")).getAttribute("data-source")) === "workspace", 10_000, "inherited policy");
  await click(byTest("supervisor-enabled"));
  await choose("autonomy", "autonomous");
  await click(byTest("save-supervisor"));
  await waitSaved("supervisor");
  const own = cliJson("supervisor", "status", "--workspace", "web-app", "--task", "1");
  assert.equal(own.own?.autonomy, "autonomous");
  assert.equal(own.own?.enabled, true);

  await click(byTest("remove-override"));
  await waitSaved("supervisor");
  await eventually(driver, async () => (await driver.findElement(byTest("policy-source")).getAttribute("data-source")) === "workspace", 10_000, "back to inherited");
  assert.equal(cliJson("supervisor", "status", "--workspace", "web-app", "--task", "1").own, null);
});

test("sensors, auto-advance, a budget and permission rules set in the page are what the CLI reads back", async () => {
  await choose("workspace-picker", "web");
  const sensors = await driver.findElement(byTest("sensors"));
  assert.equal((await sensors.findElements(By.css('[data-testid="sensor"]'))).length, 0);
  await click(byTest("add-sensor"));
  await fill(byTest("sensor", '[data-index="0"]'), "npm test");
  await click(byTest("add-sensor"));
  await fill(byTest("sensor", '[data-index="1"]'), "cargo clippy -- -D warnings");
  await choose("auto-advance", "on");
  await click(byTest("save-workspace"));
  await waitSaved("workspace");
  let ws = workspaceNamed("web");
  assert.deepEqual(ws.settings.sensors, ["npm test", "cargo clippy -- -D warnings"]);
  assert.equal(ws.settings.auto_advance, true);

  // An empty or repeated check: the engine's message under it as typed,
  // and the save refused.
  await click(byTest("add-sensor"));
  await fieldError("sensors[2]", /sensor 3 is empty/);
  await fill(byTest("sensor", '[data-index="2"]'), "npm test");
  await fieldError("sensors[2]", /sensor 3 \(`npm test`\) is the same as sensor 1: remove one/);
  await click(byTest("save-workspace"));
  assert.match(await errorOf("workspace"), /the same as sensor 1/);
  assert.deepEqual(workspaceNamed("web").settings.sensors, ["npm test", "cargo clippy -- -D warnings"], "nothing was saved");
  await click(By.css('[data-testid="remove-sensor"][aria-label="Remove check 3"]'));

  // A budget per run: what the CLI reads back; a negative one refused with
  // the engine's message, text that is no amount refused before sending;
  // emptied, no budget.
  await fill(byTest("workspace-budget"), "2.5");
  await click(byTest("save-budget"));
  await waitSaved("budget");
  assert.equal(workspaceNamed("web").settings.max_cost, 2.5);
  await fill(byTest("workspace-budget"), "-1");
  await click(byTest("save-budget"));
  assert.match(await errorOf("budget"), /a budget of -1 cannot be: give an amount above 0/);
  await fill(byTest("workspace-budget"), "lots");
  await click(byTest("save-budget"));
  assert.match(await errorOf("budget"), /“lots” is not an amount/);
  assert.equal(workspaceNamed("web").settings.max_cost, 2.5, "nothing was saved");
  // Emptied as a user does (the driver's clear() fires no input event).
  await (await fill(byTest("workspace-budget"), "x")).sendKeys(Key.BACK_SPACE);
  await click(byTest("save-budget"));
  await waitSaved("budget");
  assert.equal(workspaceNamed("web").settings.max_cost ?? null, null);

  await fill(byTest("rules-allow"), "Bash(npm test:*)\nEdit(src/**)");
  await fill(byTest("rules-deny"), "Edit(.env)");
  await fill(byTest("rules-ask"), "Bash(npm test");
  await fieldError("rules.ask[0]", /^line 1: rule 'Bash\(npm test' is missing its closing '\)'/);
  await click(byTest("save-rules"));
  assert.match(await errorOf("rules"), /rule 'Bash\(npm test' is missing its closing '\)'/);
  assert.equal(workspaceNamed("web").settings.permissions, undefined, "nothing was saved");

  await fill(byTest("rules-ask"), "Bash(git push:*)");
  await click(byTest("save-rules"));
  await waitSaved("rules");
  ws = workspaceNamed("web");
  assert.deepEqual(ws.settings.permissions, { allow: ["Bash(npm test:*)", "Edit(src/**)"], ask: ["Bash(git push:*)"], deny: ["Edit(.env)"] });
  await reveal(await driver.findElement(byTest("rules-allow")));
  await app.shot("settings-workspace");
  await driver.executeScript("window.scrollTo(0, 0)");
  await app.shot("settings");
});

test("the Agents section lists every profile the engine knows: the demo agent ready, in mode default", async () => {
  await openSettings();
  const section = await driver.wait(until.elementLocated(By.css('[data-testid="agents"][data-loaded="1"]')), 10_000);
  const expected = JSON.parse(app.cli("agents", "list", "--json"));
  const shown = await section.findElements(byTest("agent"));
  const names = await Promise.all(shown.map((el) => el.getAttribute("data-name")));
  assert.deepEqual([...names].sort(), expected.map((a) => a.name).sort(), "the same profiles as `overseer agents list`");

  const demo = await reveal(await section.findElement(By.css('[data-testid="agent"][data-name="demo"]')));
  assert.equal(await demo.getAttribute("data-ready"), "true");
  assert.equal(await demo.getAttribute("data-mode"), "default");
  assert.equal(await demo.findElement(byTest("agent-state")).getText(), "ready");
  const info = expected.find((a) => a.name === "demo");
  assert.ok(info.found, "the CLI finds the demo agent too");
  const command = await demo.findElement(byTest("agent-command")).getText();
  assert.ok(command.includes(`found at ${info.found}`), command);
  const mode = await demo.findElement(byTest("agent-mode")).getText();
  assert.ok(mode.startsWith("default:") && mode.includes(info.mode_effect), mode);
  assert.match(await demo.findElement(byTest("agent-plan")).getText(), /plan mode/);
  assert.equal((await demo.findElements(byTest("agent-need"))).length, 0);
  // Whether this machine contains runs, as the engine measured it (the
  // test machines do: bubblewrap and a cgroup v2 tree).
  const machine = await section.findElement(byTest("containment"));
  const canContain = info.containment.sandbox.state === "available";
  assert.equal(await machine.getAttribute("data-contained"), String(canContain));
  assert.match(await machine.getText(), canContain ? /Runs are contained: a bubblewrap sandbox/ : /cannot contain runs/);
  assert.equal(await demo.findElement(byTest("agent-containment")).getText(), info.contained ? "sandboxed (bubblewrap)" : "cannot start: this machine cannot contain it");
  // Every page says it too when the machine cannot (and nothing when it can).
  const banners = await driver.findElements(byTest("containment-banner"));
  assert.equal(banners.length, canContain ? 0 : 1, "the containment banner matches the engine's verdict");

  // A profile that is not ready says what it needs, as the CLI does.
  for (const a of expected.filter((x) => x.needs.length > 0)) {
    const el = await section.findElement(By.css(`[data-testid="agent"][data-name="${a.name}"]`));
    assert.equal(await el.getAttribute("data-ready"), "false");
    const needs = await Promise.all((await el.findElements(byTest("agent-need"))).map((n) => driver.executeScript("return arguments[0].textContent", n)));
    assert.deepEqual(needs, a.needs);
  }
  await app.shot("settings-agents");
});

test("a webhook added in the page shows its secret once, and a test's attempts show in its delivery log", async () => {
  // A real HTTP receiver on loopback: it fails the first request, then answers 200.
  const { createServer } = await import("node:http");
  const got = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ headers: req.headers, body });
      res.writeHead(got.length === 1 ? 500 : 200).end("ok");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}/hook`;
  try {
    await openSettings();
    const section = await reveal(await driver.findElement(byTest("webhooks")));
    // A URL the engine refuses: its typed error beside the form, nothing added.
    await fill(By.css('[data-testid="webhook-add"] input[type="url"]'), "ftp://example.com/hook");
    await click(By.css('[data-testid="webhook-add"] button[type="submit"]'));
    assert.match(await errorOf("webhooks"), /give an http:\/\/ or https:\/\/ URL/);
    assert.deepEqual(cliJson("webhooks", "list"), []);

    await fill(By.css('[data-testid="webhook-add"] input[type="url"]'), url);
    await click(By.css('[data-testid="webhook-add"] button[type="submit"]'));
    const secret = await driver.wait(until.elementLocated(byTest("webhook-secret")), 10_000);
    const shown = await secret.findElement(By.css("code")).getText();
    assert.match(shown, /^[0-9a-f]{64}$/);
    const listed = cliJson("webhooks", "list");
    assert.equal(listed.length, 1);
    assert.equal(listed[0].url, url);
    assert.ok(!JSON.stringify(listed).includes(shown), "the CLI never lists the secret");

    await click(byTest("webhook-test"));
    const state = await driver.wait(until.elementLocated(byTest("delivery-state")), 15_000);
    assert.match(await state.getText(), /^pending: tried again in \d+ s$/);
    assert.match(await section.getText(), /HTTP 500: the receiver answered 500/);
    assert.equal(got.length, 1);
    assert.equal(got[0].headers["x-overseer-event"], "test");
    assert.match(got[0].headers["x-overseer-signature"], /^t=\d+,v1=[0-9a-f]{64}$/);
    await app.shot("settings-webhooks");

    // The retry (2 s later) delivers; the log says so once reopened.
    await eventually(driver, async () => got.length >= 2, 15_000, "the retry");
    await eventually(driver, async () => {
      await click(byTest("webhook-log")); // hide
      await click(byTest("webhook-log")); // show again, read afresh
      const el = await driver.findElement(byTest("delivery-state"));
      return (await el.getText()) === "delivered";
    }, 10_000, "the delivery log to say delivered");
    assert.match(await section.getText(), /HTTP 200/);

    await click(byTest("webhook-remove"));
    await driver.wait(until.elementLocated(byTest("no-webhooks")), 10_000);
    assert.deepEqual(cliJson("webhooks", "list"), []);
  } finally {
    server.close();
  }
});

// Agent- and user-controlled text is untrusted: task titles, workspace names
// and rejection reasons full of markup must reach the real window as text.
// Each payload is put where it reaches the window (task titles through the
// CLI and the engine, workspace names, the reason of a rejected run), and
// every view that shows it is checked: the text is displayed literally, no
// element the payload describes exists, and none of its script ran.
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openApp, eventually, watchNotifications, By, until } from "./lib.mjs";

let bus;

const LONG = `${"<b>long</b> ".repeat(900)}END`.slice(0, 10_240);
const PAYLOADS = [
  `<img src=x onerror=window.__xss=1>`,
  `<script>window.__xss=1</script>`,
  `"><svg onload=window.__xss=1>`,
  `javascript:window.__xss=1`,
  `{@html x}`,
  `<style>body{display:none}</style>`,
  `<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>`,
  `<a href="javascript:window.__xss=1">click me</a>`,
  `\u202Egnp.exe\u202C right-to-left override \u2067isolate\u2069`,
  `' onmouseover='window.__xss=1' x='`,
  LONG,
];
// Workspace names become folder names here (lib.mjs): no '/'.
const WORKSPACES = [`<img src=x onerror=window.__xss=1>`, `"><svg onload=window.__xss=1>`];
const REASONS = [`<script>window.__xss=1</script> broke <img src=x onerror=window.__xss=1>`, `<style>body{display:none}</style>`];

let app;
let driver;
/** run id -> its title */
const runs = new Map();

const byTest = (id, extra = "") => By.css(`[data-testid="${id}"]${extra}`);

/** What the page must never contain, whatever it shows. */
async function assertInert(where) {
  const found = await driver.executeScript(`
    const root = document.getElementById("app");
    return {
      xss: typeof window.__xss,
      img: root.querySelectorAll("img").length,
      payloadSvg: root.querySelectorAll("svg[onload], svg:not([aria-hidden])").length,
      script: root.querySelectorAll("script, iframe, object, embed, style, link").length,
      handlers: [...root.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
      jsLinks: root.querySelectorAll("a[href^='javascript' i]").length,
      bodyDisplay: getComputedStyle(document.body).display,
      bodyStyles: document.querySelectorAll("body style").length,
    };
  `);
  assert.deepEqual(found, {
    xss: "undefined",
    img: 0,
    payloadSvg: 0,
    script: 0,
    handlers: 0,
    jsLinks: 0,
    bodyDisplay: "block",
    bodyStyles: 0,
  }, `payload markup came alive in ${where}`);
}

/** The text of the app root as the DOM holds it (getText would also do, but
 * it normalises the bidi controls and takes long on 10 KB strings). */
const appText = () => driver.executeScript("return document.getElementById('app').textContent");
/** What the user sees of an element (CSS applied): innerText. */
const shown = (el) => driver.executeScript("return arguments[0].innerText", el);

/** Decides every pending gate of `ids` the way that moves the run on (plan
 * approved, tool calls allowed for the run) until each is in pending review. */
async function driveToReview(ids) {
  const order = ["approve", "always", "yes", "allow_once", "proceed", "continue", "retry"];
  const states = () =>
    app.sql(`SELECT id, state FROM runs WHERE id IN (${ids.map(() => "?").join(",")})`, ...ids);
  try {
    await eventually(driver, () => {
      for (const g of JSON.parse(app.cli("gates", "list", "--json"))) {
        // The review itself is what the test decides (reject).
        if (!ids.includes(g.run_id) || g.kind === "merge_review") continue;
        const option = order.find((o) => g.options.some((x) => x.id === o));
        if (!option) continue;
        try {
          app.cli("gates", "decide", String(g.id), "--option", option);
        } catch {
          // Decided meanwhile (a timer, the supervisor): look again.
        }
      }
      const now = states();
      return now.length === ids.length && now.every(([, s]) => s === "pending_review");
    }, 90_000, `runs ${ids.join(", ")} in pending review`);
  } catch (e) {
    const gates = JSON.parse(app.cli("gates", "list", "--json")).filter((g) => ids.includes(g.run_id));
    const tail = ids.map((id) => app.cli("runs", "activity", String(id)).split("\n").slice(-8).join("\n"));
    throw new Error(`${e.message}\nstates ${JSON.stringify(states())}\ngates ${JSON.stringify(gates.map((g) => [g.id, g.kind, g.title]))}\n${tail.join("\n---\n")}`);
  }
}

async function go(view) {
  await driver.findElement(By.css(`button[data-nav="${view}"]`)).click();
}

before(async () => {
  bus = await watchNotifications();
  app = await openApp();
  driver = app.driver;
  for (const name of WORKSPACES) app.workspace(name);
  PAYLOADS.forEach((title, i) => {
    runs.set(app.startDemo(WORKSPACES[i % WORKSPACES.length], "happy", title), title);
  });
});

after(async () => {
  // Stop the demo agents still waiting on their plans.
  for (const id of runs.keys()) {
    const [[state]] = app.sql("SELECT state FROM runs WHERE id = ?", id);
    if (!state.startsWith("released")) app.cli("runs", "abort", String(id));
  }
  bus?.stop();
  await app?.quit();
});

test("task titles full of markup show as text in the fleet", async () => {
  await go("fleet");
  await eventually(driver, async () => (await driver.findElements(By.css("[data-run-id]"))).length === runs.size, 20_000, "every run in the fleet");
  for (const [id, title] of runs) {
    const row = await driver.findElement(By.css(`[data-run-id="${id}"]`));
    const text = await driver.executeScript("return arguments[0].textContent", row);
    assert.ok(text.includes(title), `run ${id}: the title is in the row as text (${title.slice(0, 40)})`);
    if (title !== LONG) {
      assert.ok((await shown(row)).includes(title), `run ${id}: the row shows ${title}`);
    }
    const workspace = WORKSPACES.find((w) => text.includes(w));
    assert.ok(workspace, `run ${id}: its workspace name is shown literally`);
  }
  await assertInert("the fleet");
});

test("the same titles show as text on the inbox cards and the run page", async () => {
  // Every happy run asks to approve its plan first.
  const gates = await eventually(driver, () => {
    const list = JSON.parse(app.cli("gates", "list", "--json"));
    return list.length >= runs.size ? list : null;
  }, 60_000, "a plan gate per run");
  await go("inbox");
  await driver.wait(until.elementLocated(byTest("inbox")), 10_000);
  await eventually(driver, async () => (await driver.findElements(By.css("[data-gate-id]"))).length >= runs.size, 15_000, "every gate in the inbox");
  const text = await appText();
  for (const title of runs.values()) assert.ok(text.includes(title), `inbox shows ${title.slice(0, 40)}`);
  await assertInert("the inbox");

  // The run page of the first gate's run.
  const first = gates[0];
  await driver.findElement(By.css(`[data-gate-id="${first.id}"] [data-testid="gate-run"]`)).click();
  const title = runs.get(first.run_id);
  await eventually(driver, async () => (await appText()).includes(title), 10_000, "the run page title");
  await assertInert("the run page");
});

test("rejection reasons full of markup show as text on the released rows", async () => {
  const [a, b] = [...runs.keys()];
  await driveToReview([a, b]);
  app.cli("runs", "reject", String(a), "--reason", REASONS[0]);
  app.cli("runs", "reject", String(b), "--reason", REASONS[1]);

  await go("fleet");
  for (const [id, reason] of [[a, REASONS[0]], [b, REASONS[1]]]) {
    const row = await eventually(driver, async () => {
      const r = await driver.findElement(By.css(`[data-run-id="${id}"][data-reason="human_rejected"]`));
      return r;
    }, 15_000, `run ${id} released as rejected`);
    assert.ok((await shown(row)).includes(reason), `run ${id} shows its reason literally`);
  }
  await assertInert("the fleet with release notes");
  await driver.executeScript("window.scrollTo(0, 0)");
  await app.shot("xss");
});

test("workspace names full of markup show as text on the Settings page", async () => {
  await go("settings");
  await driver.wait(until.elementLocated(By.css('[data-testid="settings"][data-loaded="1"]')), 10_000);
  for (const name of WORKSPACES) {
    const picker = await driver.findElement(byTest("workspace-picker"));
    const options = await picker.findElements(By.css("option"));
    let option = null;
    for (const o of options) if ((await o.getAttribute("value")) === name) option = o;
    assert.ok(option, `the picker offers ${name}`);
    await option.click();
    await eventually(driver, async () => (await driver.findElement(By.css('[data-testid="workspace-settings"] h3')).getText()).includes(name), 5_000, `the header shows ${name}`);
    assert.ok((await driver.findElement(byTest("scope-name")).getText()).includes(name));
  }
  await assertInert("the Settings page");
  await app.shot("xss-settings");
});

// The agent's own words for its plan (markdown) reach the window from the
// demo agent's exit-plan request. The `questions` scenario writes the user's
// "anything else?" answer into its plan's goal, and so into that markdown:
// an answer that closes the heading and goes on with HTML, a javascript:
// link and a script makes the plan the agent sends hostile markdown.
const HOSTILE_NOTES = [
  "x)",
  "",
  "<img src=x onerror=window.__xss=1>",
  "",
  "See [click me](javascript:window.__xss=1) <script>window.__xss=1</script> **bold**",
  "",
  "- first <iframe srcdoc=\"<script>parent.__xss=1</script>\"></iframe>",
  "  - [x](javascript:alert(1))",
].join("\n");

test("a plan's markdown full of markup renders inertly in the plan gate and on the run page", async () => {
  const id = app.startDemo(WORKSPACES[0], "questions", "Plan with hostile markdown");
  runs.set(id, "Plan with hostile markdown");
  const question = await eventually(driver, () => JSON.parse(app.cli("gates", "list", "--json")).find((g) => g.run_id === id && g.kind === "question"), 30_000, "the questions before the plan");
  app.cli("gates", "decide", String(question.id), "--option", "answer", "--context", JSON.stringify({ framework: "react", add_tests: true, notes: HOSTILE_NOTES }));
  const plan = await eventually(driver, () => JSON.parse(app.cli("gates", "list", "--json")).find((g) => g.run_id === id && g.kind === "plan"), 30_000, "the plan gate");
  // What the engine holds: the agent's markdown, from its plan mode.
  assert.equal(plan.payload.source, "agent_mode");
  assert.ok(plan.payload.markdown.includes("<img src=x onerror=window.__xss=1>"), plan.payload.markdown);

  await go("inbox");
  const words = await driver.wait(until.elementLocated(By.css(`[data-gate-id="${plan.id}"] [data-testid="plan-markdown"]`)), 15_000);
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", words);
  const card = await driver.findElement(By.css(`[data-gate-id="${plan.id}"]`));
  const source = await card.findElement(byTest("plan-source"));
  assert.equal(await source.getAttribute("data-source"), "agent_mode");
  assert.equal(await source.getText(), "Plan from the agent's plan mode");
  const inWords = await driver.executeScript(`
    const el = arguments[0];
    return {
      text: el.textContent,
      headings: el.querySelectorAll("h4, h5, h6").length,
      lists: el.querySelectorAll("ol, ul").length,
      strong: [...el.querySelectorAll("strong")].map((s) => s.textContent),
      links: [...el.querySelectorAll("[data-testid=md-link]")].map((l) => [l.textContent, l.nextElementSibling?.textContent ?? ""]),
      anchors: el.querySelectorAll("a, [href], [src], [srcdoc]").length,
    };
  `, words);
  // The markdown became elements...
  assert.ok(inWords.headings >= 1, "the goal is a heading");
  assert.ok(inWords.lists >= 2, "the steps and the nested list are lists");
  assert.deepEqual(inWords.strong, ["bold"]);
  // ...and its HTML stayed text, its links words with their URL shown.
  for (const literal of ["<img src=x onerror=window.__xss=1>", "<script>window.__xss=1</script>", '<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>']) {
    assert.ok(inWords.text.includes(literal), `shown literally: ${literal}`);
  }
  assert.deepEqual(inWords.links, [["click me", "(javascript:window.__xss=1)"], ["x", "(javascript:alert(1))"]]);
  assert.equal(inWords.anchors, 0, "nothing to click, nothing loaded");
  assert.ok((await shown(words)).includes("<img src=x onerror=window.__xss=1>"), "the user sees the tag as text");
  await assertInert("the plan gate's markdown");
  await app.shot("xss-plan-markdown");

  // The run page's plan panel shows the same words, as inertly.
  const open = await driver.findElement(By.css(`[data-gate-id="${plan.id}"] [data-testid="gate-run"]`));
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", open);
  await open.click();
  const panel = await driver.wait(until.elementLocated(By.css('[data-testid="proposal"] [data-testid="plan-markdown"]')), 15_000);
  const panelText = await driver.executeScript("return arguments[0].textContent", panel);
  assert.ok(panelText.includes("<img src=x onerror=window.__xss=1>"), panelText);
  assert.equal(await driver.findElement(By.css('[data-testid="proposal"] [data-testid="plan-source"]')).getText(), "from the agent's plan mode");
  await driver.executeScript("document.querySelectorAll('[data-testid=proposal] details').forEach((d) => (d.open = true))");
  await assertInert("the run page's plan panel");
  app.cli("runs", "abort", String(id));
});

test("OS notifications carry task titles as plain text, not as notification markup", () => {
  const log = bus.since(0);
  assert.match(log, /member=Notify/);
  // Every Notify call since this file began, as dbus-monitor printed its
  // arguments: an escaped title would read &lt;img ...
  const raw = ["<img src=x", "<script>", "<svg onload", "<style>", "<b>long</b>"].filter((m) => log.includes(m));
  assert.deepEqual(raw, [], "markup reached the notification server unescaped");
});

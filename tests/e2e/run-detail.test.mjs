// The run detail page in the real window: a real demo agent works in a real
// worktree; the page shows its plan, timeline and diff, steers it, and keeps
// agent-made text inert. Run by run.sh (Xvfb + session bus + WebKitWebDriver).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openApp, eventually, By } from "./lib.mjs";

/** A file name an agent might pick to attack the reviewer's window. */
const XSS_NAME = "<img src=x onerror=window.__xss=1>.txt";
const BIG_LINES = 5000;
const STEER = "Also mention the steering test in the notes";

let app;
let driver;
let runId;

before(async () => {
  app = await openApp();
  driver = app.driver;
});

after(async () => {
  await app?.quit();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The pending gates of the run, from the CLI. */
function pendingGates() {
  return JSON.parse(app.cli("gates", "list", "--json")).filter((g) => g.run_id === runId && g.status === "pending");
}

async function waitGate(kind, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const g = pendingGates().find((x) => x.kind === kind);
    if (g) return g;
    await sleep(150);
  }
  throw new Error(`no ${kind} gate for run ${runId} within ${ms} ms`);
}

const detail = () => By.css(`[data-testid="run-detail"][data-run-id="${runId}"]`);

/** Opens the run page the way a user does: its task title in the fleet. */
async function openRunPage() {
  await driver.findElement(By.css('button[data-nav="fleet"]')).click();
  const title = await eventually(driver, async () => (await driver.findElements(By.css(`[data-run-id="${runId}"] .title`)))[0], 10_000, "the fleet row");
  await title.click();
  await driver.wait(async () => (await driver.findElements(detail())).length > 0, 5_000, "the run page");
}

test("a running agent: plan, gate, timeline, and steering from the page", async () => {
  const repo = app.workspace("web", ["echo all checks passed"]);
  assert.ok(repo);
  runId = app.startDemo("web", "happy", "Add a greeting to the project");

  // Files the agent's own commit will carry (it commits with `git add -A`):
  // a name that is an HTML payload, and a 5,000-line source file.
  const worktree = join(app.dataDir, "worktrees", `web-run-${runId}`);
  await eventually(driver, async () => existsSync(worktree), 20_000, "the run's worktree");
  writeFileSync(join(worktree, XSS_NAME), "<script>window.__xss=2</script>\n<b>not bold</b>\n");
  const big = Array.from({ length: BIG_LINES }, (_, i) => `export const value${i + 1}: number = ${i + 1}; // line ${i + 1}`).join("\n");
  writeFileSync(join(worktree, "big.ts"), `${big}\n`);

  const plan = await waitGate("plan");
  await openRunPage();
  // The pending plan gate is at the top of the page.
  await eventually(driver, async () => (await driver.findElements(By.css(`[data-testid="run-gate"] [data-gate-id="${plan.id}"]`))).length === 1, 10_000, "the plan gate card");
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="timeline-entry"][data-kind="plan_proposed"]'))).length === 1, 10_000, "the proposed plan in the timeline");
  app.cli("gates", "decide", String(plan.id), "--option", "approve");

  // The first edit asks for permission: the run is running and waits.
  const tool = await waitGate("tool_call");
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="plan-step"]'))).length >= 2, 10_000, "the plan steps");
  const statuses = await Promise.all((await driver.findElements(By.css('[data-testid="plan-step"]'))).map((s) => s.getAttribute("data-status")));
  assert.ok(statuses.includes("in_progress") || statuses.includes("pending"), `plan steps: ${statuses}`);
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="timeline-entry"][data-kind="tool_call"]'))).length >= 1, 10_000, "the tool call in the timeline");

  // Steer: the instruction appears when the engine records it.
  await driver.findElement(By.css('[data-testid="steer-text"]')).sendKeys(STEER);
  await driver.findElement(By.css('[data-testid="steer-send"]')).click();
  const steered = await eventually(driver, async () => {
    for (const e of await driver.findElements(By.css('[data-testid="timeline-entry"][data-kind="user_instruction"]'))) {
      if ((await e.getText()).includes(STEER)) return e;
    }
    return null;
  }, 10_000, "the steering instruction in the timeline");
  assert.ok(steered);
  assert.equal(await driver.findElement(By.css('[data-testid="steer-text"]')).getAttribute("value"), "");
  const recorded = app.sql("SELECT kind FROM run_events WHERE run_id = ? AND kind = 'user_instruction'", runId);
  assert.equal(recorded.length, 1, "the instruction is on the run's record once");
  await driver.executeScript("document.querySelector('[data-testid=run-detail] .timeline')?.scrollIntoView({ block: 'end' })");
  await app.shot("run-detail");

  // Let the agent finish: "always" for its edits, then any later gates.
  app.cli("gates", "decide", String(tool.id), "--option", "always");
  const end = Date.now() + 40_000;
  for (;;) {
    const state = await driver.findElement(detail()).getAttribute("data-state");
    if (state === "pending_review") break;
    assert.ok(Date.now() < end, `run ${runId} did not reach review (state ${state})`);
    for (const g of pendingGates()) {
      const option = { tool_call: "yes", step_review: "proceed", plan: "approve", deviation: "retry" }[g.kind];
      if (option) app.cli("gates", "decide", String(g.id), "--option", option);
    }
    await sleep(200);
  }

  // The check's output is in the timeline, folded until asked for.
  const sensor = await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="timeline-entry"][data-kind="sensor"]')))[0], 10_000, "the check in the timeline");
  assert.match(await sensor.getText(), /echo all checks passed: passed \(exit 0\)/);
  assert.equal((await sensor.findElements(By.css("pre"))).length, 0, "output folded");
  await sensor.findElement(By.css("summary")).click();
  const pre = await eventually(driver, async () => (await sensor.findElements(By.css("pre")))[0], 5_000, "the check's output");
  assert.match(await pre.getText(), /all checks passed/);

  // Each step of the approved plan was its own turn, in the agent's
  // supervised mode; the plan came through the agent's plan mode.
  const titles = async (kind) =>
    Promise.all((await driver.findElements(By.css(`[data-testid="timeline-entry"][data-kind="${kind}"] .title`))).map((t) => t.getText()));
  assert.deepEqual(await titles("step_started"), ["Step 1: Write the greeting", "Step 2: Note the change in NOTES.md"]);
  assert.ok((await titles("mode")).includes("Mode: default"), `mode entries: ${await titles("mode")}`);
  assert.match((await titles("session"))[0] ?? "", /the agent started session/);
  assert.equal((await driver.findElements(By.css('[data-testid="timeline-entry"][data-kind="security"]'))).length, 0, "no security event");
  const source = await driver.findElement(By.css('[data-testid="proposal"] [data-testid="plan-source"]'));
  assert.equal(await source.getAttribute("data-source"), "agent_mode");
  assert.equal(await driver.executeScript("return arguments[0].textContent", source), "from the agent's plan mode");
  const words = await driver.executeScript("return document.querySelector('[data-testid=proposal] [data-testid=plan-markdown] h4')?.textContent");
  assert.equal(words, "Add a greeting to the project", "the agent's markdown, its heading rendered as one");
});

test("the diff of the finished run: files, lines, side by side, inert names", async () => {
  // The diff reloads by itself on the run's events (debounced).
  const paths = await eventually(driver, async () => {
    const ps = await Promise.all((await driver.findElements(By.css('[data-testid="diff-file"]'))).map((f) => f.getAttribute("data-path")));
    return ps.includes(XSS_NAME) && ps.includes("big.ts") ? ps : null;
  }, 15_000, "the committed files in the diff");
  console.log(`# diff files: ${JSON.stringify(paths)}`);
  assert.ok(paths.includes("src/greeting.txt"), "the agent's own edit is in the diff");

  // The payload is shown literally, and nothing it describes was created.
  const rows = await driver.findElements(By.css('[data-testid="diff-file"]'));
  let xssRow;
  for (const r of rows) if ((await r.getAttribute("data-path")) === XSS_NAME) xssRow = r;
  // (WebDriver's getText drops text that looks like a tag: read the DOM's.)
  const shown = await driver.executeScript("return arguments[0].querySelector('.path').textContent", xssRow);
  assert.equal(shown, XSS_NAME, "the file name is shown literally, as text");
  const inert = await driver.executeScript(
    "return { imgs: document.querySelectorAll('[data-testid=run-detail] img, [data-testid=run-detail] script').length, xss: window.__xss === undefined, prismManual: !!(window.Prism && window.Prism.manual) }",
  );
  assert.deepEqual(inert, { imgs: 0, xss: true, prismManual: true });

  const lines = await driver.findElements(By.css('[data-testid="diff-line"]'));
  assert.ok(lines.length > 0, "lines are rendered");
  assert.ok(lines.length < 300, `only the visible lines are in the DOM (${lines.length})`);
  await xssRow.click();
  await eventually(driver, () => driver.executeScript(
    "return [...document.querySelectorAll('[data-testid=diff-line]')].some((l) => l.textContent.includes('<script>window.__xss=2</script>'))",
  ), 5_000, "the payload file's content as text");
  await app.shot("diff");

  await driver.findElement(By.css('[data-testid="diff-mode-split"]')).click();
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="diff-line"][data-kind="pair"]'))).length > 0, 5_000, "side-by-side rows");
  assert.equal(await driver.findElement(By.css('[data-testid="diff-mode-split"]')).getAttribute("aria-pressed"), "true");
  await app.shot("diff-split");
  await driver.findElement(By.css('[data-testid="diff-mode-unified"]')).click();
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="diff-line"][data-kind="pair"]'))).length === 0, 5_000, "unified rows");
});

test(`a ${BIG_LINES}-line diff opens at once and scrolls to its end`, async () => {
  await driver.findElement(By.css('button[data-nav="fleet"]')).click();
  await eventually(driver, async () => (await driver.findElements(detail())).length === 0, 5_000, "the fleet page");
  // Time from the click that opens the page to the first diff line drawn.
  const selector = `[data-run-id="${runId}"] .title`;
  await eventually(driver, async () => (await driver.findElements(By.css(selector))).length > 0, 5_000, "the opener");
  const ms = await driver.executeAsyncScript(
    `const [selector, done] = [arguments[0], arguments[arguments.length - 1]];
     const el = document.querySelector(selector);
     const t0 = performance.now();
     el.click();
     const poll = () => {
       if (document.querySelector('[data-testid=run-detail] [data-testid=diff-line]')) done(Math.round(performance.now() - t0));
       else if (performance.now() - t0 > 20000) done(-1);
       else requestAnimationFrame(poll);
     };
     requestAnimationFrame(poll);`,
    selector,
  );
  console.log(`# time to first diff line with a ${BIG_LINES}-line file in the diff: ${ms} ms`);
  assert.ok(ms >= 0 && ms < 5_000, `the diff opened in ${ms} ms`);

  const big = await eventually(driver, async () => {
    for (const f of await driver.findElements(By.css('[data-testid="diff-file"]'))) if ((await f.getAttribute("data-path")) === "big.ts") return f;
    return null;
  }, 5_000, "big.ts in the file list");
  assert.match(await big.getText(), new RegExp(`\\+${BIG_LINES}`));
  await big.click();
  await eventually(driver, async () => {
    for (const l of await driver.findElements(By.css('[data-testid="diff-line"]'))) if ((await l.getText()).includes("value1: number")) return true;
    return false;
  }, 5_000, "the first line of big.ts");
  // Jump to the very end: the last line is drawn, and still only a window of rows.
  await driver.executeScript("const v = document.querySelector('[data-testid=diff-viewport]'); v.scrollTop = v.scrollHeight; v.dispatchEvent(new Event('scroll'));");
  const last = await eventually(driver, async () => {
    for (const l of await driver.findElements(By.css('[data-testid="diff-line"]'))) {
      const t = await l.getText();
      if (t.includes(`line ${BIG_LINES}`) || t.includes(`value${BIG_LINES}:`)) return t;
    }
    return null;
  }, 5_000, "the last line of big.ts");
  assert.ok(last);
  const count = (await driver.findElements(By.css('[data-testid="diff-line"]'))).length;
  assert.ok(count < 300, `rendered rows stay few at the end (${count})`);
});

test("approving from the page merges the run; the page follows", async () => {
  await driver.findElement(By.css('[data-testid="run-approve"]')).click();
  await eventually(driver, async () => (await driver.findElement(detail()).getAttribute("data-state")) === "released", 15_000, "the run released");
  assert.match(await driver.findElement(By.css('[data-testid="run-state"]')).getText(), /merged/);
  assert.equal((await driver.findElements(By.css('[data-testid="steer-text"]'))).length, 0, "no steering a finished run");
  assert.deepEqual(app.sql("SELECT state FROM runs WHERE id = ?", runId), [["released:merged"]]);
  // Merged into its base, the run still shows what it changed (the diff is
  // taken from where its branch started).
  await driver.sleep(800); // past the diff's reload debounce
  const files = await driver.findElements(By.css('[data-testid="diff-file"]'));
  assert.ok(files.length > 0, "the merged run keeps its diff");
  assert.equal((await driver.findElements(By.css('[data-testid="diff-empty"]'))).length, 0);
});

test("an agent that switches itself to a mode that acts unasked: a security warning and a blocking gate that explains", async () => {
  app.workspace("hijacked");
  runId = app.startDemo("hijacked", "hijack", "Greeting, hijacked");
  app.cli("gates", "decide", String((await waitGate("plan")).id), "--option", "approve");
  const end = Date.now() + 30_000;
  let breach;
  while (!breach) {
    assert.ok(Date.now() < end, `no mode_breach gate: ${JSON.stringify(pendingGates())}`);
    for (const g of pendingGates()) {
      if (g.kind === "deviation" && g.payload.cause === "mode_breach") breach = g;
      else if (g.kind === "tool_call") app.cli("gates", "decide", String(g.id), "--option", "yes");
    }
    if (!breach) await sleep(150);
  }
  await openRunPage();
  const card = await eventually(driver, async () => (await driver.findElements(By.css(`[data-testid="run-gate"] [data-gate-id="${breach.id}"]`)))[0], 10_000, "the breach gate on the run page");
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", card);
  assert.equal(await card.findElement(By.css('[data-testid="deviation"]')).getAttribute("data-cause"), "mode_breach");
  const explain = await card.findElement(By.css('[data-testid="mode-breach"]')).getText();
  assert.ok(explain.includes(`switched itself to mode ${breach.payload.mode}`), explain);
  assert.match(explain, /acts? without\s+asking/);
  assert.ok((await card.findElement(By.css('[data-testid="deviation-error"]')).getText()).includes(breach.payload.error));
  const buttons = await card.findElements(By.css("button[data-action]"));
  const offered = [];
  for (const b of buttons) offered.push([await b.getAttribute("data-action"), await b.getText()]);
  assert.deepEqual(offered.filter(([a]) => a !== "why"), [["retry", "Put it back in `default` and go on"], ["stop", "Stop the run"]]);

  // The timeline says it loudly, as a warning.
  const warning = await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="timeline-entry"][data-kind="security"]')))[0], 10_000, "the security event");
  assert.match(await warning.getAttribute("class"), /\bwarning\b/);
  assert.ok((await warning.getText()).includes(`switched itself to mode “${breach.payload.mode}”`));
  await app.shot("run-detail-mode-breach");

  await card.findElement(By.css('button[data-action="stop"]')).click();
  await eventually(driver, async () => app.sql("SELECT state FROM runs WHERE id = ?", runId)[0][0].startsWith("released"), 15_000, "the run to stop");
  assert.deepEqual(app.sql("SELECT option, actor FROM gate_decisions WHERE gate_id = ?", breach.id), [["stop", "user:app"]]);
});

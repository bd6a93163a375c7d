// The diff preview in the fleet: a row pending review opens a panel under the
// table with its files, +/- counts and first hunks, and approving from there
// merges it on the record. Real window, real engine, a real demo agent in a
// real worktree, beside the seeded demo fleet. Run by run.sh (Xvfb + session
// bus + WebKitWebDriver).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openApp, eventually, By } from "./lib.mjs";

const TITLE = "Preview the greeting change";
/** A file name an agent might pick to attack the reviewer's window. */
const XSS_NAME = "<img src=x onerror=window.__xss=1>.txt";
const LONG = 200;

let app;
let driver;
let runId;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const row = () => By.css(`[role="row"][data-run-id="${runId}"]`);
const panel = () => By.css(`[data-testid="fleet-preview"][data-run-id="${runId}"]`);

function pendingGates() {
  return JSON.parse(app.cli("gates", "list", "--json")).filter((g) => g.run_id === runId && g.status === "pending");
}

async function press(...keys) {
  const actions = driver.actions({ async: true });
  for (const k of keys) actions.sendKeys(k);
  await actions.perform();
}

/** The preview's files as shown, read in one round trip. */
function previewFiles() {
  return driver.executeScript(`
    return [...document.querySelectorAll('[data-testid=fleet-preview] [data-testid=preview-file]')].map((f) => ({
      path: f.dataset.path,
      adds: Number(f.dataset.additions),
      dels: Number(f.dataset.deletions),
      text: f.textContent,
    }));`);
}

before(async () => {
  app = await openApp();
  driver = app.driver;
  assert.match(app.cli("demo", "seed"), /seeded 15 demo runs/);

  // A repository with a long file, so the agent's branch has a file with
  // more hunks than the preview shows.
  const repo = app.workspace("web", ["echo all checks passed"]);
  const lines = Array.from({ length: LONG }, (_, i) => `line ${i + 1}`);
  writeFileSync(join(repo, "long.txt"), `${lines.join("\n")}\n`);
  const git = (...a) => execFileSync("git", ["-C", repo, ...a], { encoding: "utf8" });
  git("add", "-A");
  git("-c", "user.name=Overseer", "-c", "user.email=e2e@overseer.invalid", "commit", "-q", "-m", "long file");

  runId = app.startDemo("web", "happy", TITLE);
  const worktree = join(app.dataDir, "worktrees", `web-run-${runId}`);
  // The agent waits on its plan with its worktree checked out: edit it then.
  await eventually(driver, async () => existsSync(join(worktree, "long.txt")) && pendingGates().some((g) => g.kind === "plan"), 30_000, "the run's worktree and plan");
  // The agent commits with `git add -A`: these ride along in its commit.
  for (const n of [10, 60, 110, 160]) lines[n - 1] = `line ${n}, changed by the agent`;
  writeFileSync(join(worktree, "long.txt"), `${lines.join("\n")}\n`);
  writeFileSync(join(worktree, XSS_NAME), "<script>window.__xss=2</script>\n");

  // Let the agent finish: approve its plan and every later gate.
  const end = Date.now() + 60_000;
  for (;;) {
    const [[state]] = app.sql("SELECT state FROM runs WHERE id = ?", runId);
    if (state === "pending_review") break;
    if (state.startsWith("released") || Date.now() >= end) {
      assert.fail(`run ${runId} did not reach review (state ${state}):\n${app.cli("runs", "show", String(runId))}`);
    }
    for (const g of pendingGates()) {
      const option = { tool_call: "always", step_review: "proceed", plan: "approve", deviation: "retry" }[g.kind];
      if (option) app.cli("gates", "decide", String(g.id), "--option", option);
    }
    await sleep(200);
  }
});

after(async () => {
  await app?.quit();
});

test("a row pending review expands to its files, counts and first hunks, inertly", async () => {
  await driver.findElement(By.css('[data-testid="search"]')).sendKeys("preview the greeting");
  const r = await eventually(driver, async () => {
    const el = (await driver.findElements(row()))[0];
    return el && (await el.getAttribute("data-state")) === "pending_review" ? el : null;
  }, 15_000, "the run's row pending review");
  // Nothing is loaded until asked for.
  assert.equal((await driver.findElements(By.css('[data-testid="fleet-preview"]'))).length, 0);

  const toggle = await r.findElement(By.css('[data-testid="preview-toggle"]'));
  assert.equal(await toggle.getAttribute("aria-expanded"), "false");
  const t0 = Date.now();
  await toggle.click();
  // The panel's code loads when a preview is first opened.
  await eventually(driver, async () => (await driver.findElements(panel()))[0], 5_000, "the preview panel");
  const files = await eventually(driver, async () => {
    const fs = await previewFiles();
    return fs.some((f) => f.path === "long.txt") ? fs : null;
  }, 15_000, "the preview's files");
  const firstLine = await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="fleet-preview"] [data-testid="diff-line"]')))[0], 5_000, "a diff line");
  console.log(`# click to first preview line: ${Date.now() - t0} ms (WebDriver round trips included)`);
  assert.ok(firstLine);
  assert.equal(await toggle.getAttribute("aria-expanded"), "true");
  console.log(`# preview files: ${JSON.stringify(files.map((f) => [f.path, f.adds, f.dels]))}`);

  const paths = files.map((f) => f.path);
  assert.ok(paths.includes("src/greeting.txt"), "the agent's own edit is in the preview");
  assert.ok(paths.includes(XSS_NAME), "the hostile file name is listed, as text");
  const long = files.find((f) => f.path === "long.txt");
  assert.deepEqual([long.adds, long.dels], [4, 4], "the whole file's counts, not only the hunks shown");
  assert.match(long.text, /\+4/);
  assert.match(long.text, /−4/);

  // The first two hunks of long.txt are shown, the other two are left to the run page.
  const hunks = await driver.executeScript(
    "return [...document.querySelectorAll('[data-testid=fleet-preview] .row.hunk')].map((h) => h.textContent)",
  );
  assert.ok(hunks.length > 0, "hunk headers shown");
  const text = await driver.executeScript(
    "return [...document.querySelectorAll('[data-testid=fleet-preview] [data-testid=diff-line]')].map((l) => l.textContent).join('\\n')",
  );
  assert.match(text, /line 10, changed by the agent/);
  const more = await driver.findElement(By.css('[data-testid="preview-more"]')).getText();
  assert.match(more, /2 more hunks/);
  assert.ok(await driver.findElement(By.css('[data-testid="preview-open"]')).isDisplayed());

  // Agent text stays text.
  assert.equal(await driver.executeScript("return window.__xss ?? null"), null);
  assert.equal(await driver.executeScript("return document.querySelector('[data-testid=fleet-preview] img')"), null);
  await app.shot("fleet-preview");

  // `p` closes it (the diff goes with it) and opens it again.
  await driver.findElement(By.css('[role="grid"]')).click();
  await press("p");
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="fleet-preview"]'))).length === 0, 5_000, "the preview closed");
  assert.equal(await driver.findElement(row()).findElement(By.css('[data-testid="preview-toggle"]')).getAttribute("aria-expanded"), "false");
  await press("p");
  await eventually(driver, async () => (await previewFiles()).length === files.length, 10_000, "the preview again");
});

test("approving from the preview merges the run, on the record as user:app", async () => {
  await driver.findElement(By.css('[data-testid="preview-approve"]')).click();
  await eventually(driver, async () => {
    const r = await driver.findElement(row());
    return (await r.getAttribute("data-state")) === "released" && (await r.getAttribute("data-reason")) === "merged";
  }, 20_000, "the run released as merged");
  assert.deepEqual(app.sql("SELECT state FROM runs WHERE id = ?", runId), [["released:merged"]]);
  assert.deepEqual(
    app.sql("SELECT d.option, d.actor FROM gate_decisions d JOIN gates g ON g.id = d.gate_id WHERE g.run_id = ? AND g.kind = 'merge_review'", runId),
    [["approve", "user:app"]],
  );
  // Nothing left to review: the panel and the row's disclosure are gone.
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="fleet-preview"]'))).length === 0, 5_000, "the preview gone");
  assert.equal((await driver.findElement(row()).findElements(By.css('[data-testid="preview-toggle"]'))).length, 0);
  await app.shot("fleet-preview-approved");
});

test("a seeded demo run pending review previews as having no changes, and rejects from there with a reason", async () => {
  const search = await driver.findElement(By.css('[data-testid="search"]'));
  await search.clear();
  await driver.executeScript("arguments[0].dispatchEvent(new Event('input', { bubbles: true }))", search);
  await search.sendKeys("rate limiting");
  const r = await eventually(driver, async () => (await driver.findElements(By.css('[role="row"][data-state="pending_review"]')))[0], 10_000, "a demo row pending review");
  await r.findElement(By.css('[data-testid="preview-toggle"]')).click();
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="preview-empty"]'))).length === 1, 10_000, "the empty preview").catch(async (e) => {
    await app.shot("fleet-preview-empty-failed");
    const text = await driver.executeScript("return document.querySelector('[data-testid=fleet-preview]')?.textContent ?? 'no panel'");
    throw new Error(`${e.message}: ${text}`);
  });
  const id = Number(await r.getAttribute("data-run-id"));
  // Reject from the preview: the row's own dialog, a reason required.
  await driver.findElement(By.css('[data-testid="preview-reject"]')).click();
  const confirm = await driver.findElement(By.css('[data-testid="reject-confirm"]'));
  assert.equal(await confirm.getAttribute("disabled"), "true", "no reason, no rejection");
  await driver.findElement(By.css('[data-testid="reject-reason"]')).sendKeys("Not the limits we agreed on");
  await confirm.click();
  await eventually(driver, async () => {
    const el = await driver.findElement(By.css(`[role="row"][data-run-id="${id}"]`));
    return (await el.getAttribute("data-state")) === "released";
  }, 10_000, "the run released as rejected");
  assert.deepEqual(app.sql("SELECT state FROM runs WHERE id = ?", id), [["released:human_rejected"]]);
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="fleet-preview"]'))).length === 0, 5_000, "the preview closed");
});

test("10,000 runs: the preview opens on one row, the table stays a window of fixed rows and scrolls as before", async () => {
  // One WebDriver session at a time: the small fleet's window goes first.
  await app.quit();
  app = null;
  const big = await openApp();
  try {
    const d = big.driver;
    // A bulk seed writes straight through the store (no events): reload.
    assert.match(big.cli("demo", "seed", "--runs", "10000"), /seeded 10000 demo runs/);
    await d.executeScript("location.reload()");
    await eventually(d, async () => /10,000 of 10,000 runs/.test(await d.findElement(By.css('[data-testid="row-count"]')).getText()), 30_000, "10,000 runs");
    const reviewRow = () => eventually(d, async () => (await d.findElements(By.css('[role="row"][data-state="pending_review"]')))[0], 20_000, "a row pending review");
    await reviewRow();

    /** ms per frame over 40 scroll steps through the grid, in the page. */
    const scrollMs = () =>
      d.executeAsyncScript(`
        const done = arguments[0];
        const g = document.querySelector('[role=grid]');
        g.scrollTop = 0;
        let i = 0;
        const t0 = performance.now();
        const step = () => {
          g.scrollTop = i * 900;
          g.dispatchEvent(new Event('scroll'));
          if (++i > 40) return done({ ms: (performance.now() - t0) / 40, rows: document.querySelectorAll('[role=row][data-run-id]').length });
          requestAnimationFrame(step);
        };
        requestAnimationFrame(step);`);
    const closed = await scrollMs();

    await d.executeScript("const g = document.querySelector('[role=grid]'); g.scrollTop = 0; g.dispatchEvent(new Event('scroll'));");
    await (await reviewRow()).findElement(By.css('[data-testid="preview-toggle"]')).click();
    await eventually(d, async () => (await d.findElements(By.css('[data-testid="fleet-preview"]')))[0], 5_000, "the preview panel");
    const open = await scrollMs();
    console.log(`# 10,000 runs, ms per scroll frame: ${closed.ms.toFixed(1)} closed, ${open.ms.toFixed(1)} with the preview open; rows in the DOM: ${closed.rows}, ${open.rows}`);
    assert.ok(open.rows < 100, `${open.rows} row elements with the preview open`);
    assert.equal((await d.findElements(By.css('[data-testid="fleet-preview"]'))).length, 1, "one preview, for the selected run only");
    assert.ok(open.ms < Math.max(100, closed.ms * 3), `scrolling with the preview open: ${open.ms} ms a frame (closed: ${closed.ms})`);
  } finally {
    await big.quit();
  }
});

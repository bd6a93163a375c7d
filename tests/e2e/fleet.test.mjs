// The fleet dashboard as a tool: filters, search, sort, keyboard, help, and a
// 10,000-run fleet that stays a window of rows in the DOM. Real window, real
// engine, real database. Run by run.sh (Xvfb + session bus + WebKitWebDriver).
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { openApp, eventually, By, until } from "./lib.mjs";

const ROW = '[role="row"][data-run-id]';
const row = (id) => By.css(`[role="row"][data-run-id="${id}"]`);

/** The rows in the DOM, in order, read in one round trip. */
function domRows(driver) {
  return driver.executeScript(`
    return [...document.querySelectorAll('${ROW}')].map((r) => ({
      id: Number(r.dataset.runId),
      state: r.dataset.state,
      reason: r.dataset.reason ?? null,
      selected: r.getAttribute("aria-selected") === "true",
      needsYou: r.querySelector('[data-testid="needs-you"]') !== null,
      title: r.querySelector('[data-col="task"] .title')?.textContent ?? "",
      workspace: r.querySelector('[data-col="workspace"]')?.textContent ?? "",
    }));`);
}

async function rowCount(driver) {
  const t = await driver.findElement(By.css('[data-testid="row-count"]')).getText();
  const m = /([\d,]+) of ([\d,]+) runs/.exec(t);
  assert.ok(m, `row count reads "${t}"`);
  return { shown: Number(m[1].replaceAll(",", "")), total: Number(m[2].replaceAll(",", "")) };
}

async function waitForCount(driver, shown, total) {
  await eventually(driver, async () => {
    const c = await rowCount(driver);
    return c.shown === shown && (total === undefined || c.total === total);
  }, 20_000, `row count ${shown} of ${total ?? "?"}`);
}

async function choose(driver, testid, value) {
  const select = await driver.findElement(By.css(`[data-testid="${testid}"]`));
  await select.findElement(By.css(`option[value="${value}"]`)).click();
}

async function press(driver, ...keys) {
  const actions = driver.actions({ async: true });
  for (const k of keys) actions.sendKeys(k);
  await actions.perform();
}

/** Lets the window paint before a screenshot (the capture can lag the DOM). */
async function settle(driver) {
  await driver.executeAsyncScript("const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 150)));");
}

async function waitForRow(driver, id, state, reason) {
  await eventually(driver, async () => {
    const r = await driver.findElement(row(id));
    return (await r.getAttribute("data-state")) === state && (reason === undefined || (await r.getAttribute("data-reason")) === reason);
  }, 15_000, `run ${id} in ${state} ${reason ?? ""}`);
}

describe("the demo fleet", () => {
  let app;
  let driver;

  before(async () => {
    app = await openApp();
    driver = app.driver;
    assert.match(app.cli("demo", "seed"), /seeded 15 demo runs/);
    await waitForCount(driver, 15, 15);
  });

  after(async () => {
    await app?.quit();
  });

  test("filters by state, workspace and needs-you, and counts what it shows", async () => {
    await choose(driver, "filter-state", "pending_review");
    await waitForCount(driver, 3, 15);
    assert.deepEqual([...new Set((await domRows(driver)).map((r) => r.state))], ["pending_review"]);

    await choose(driver, "filter-state", "all");
    await choose(driver, "filter-workspace", "api-server");
    await eventually(driver, async () => (await rowCount(driver)).shown < 15, 5_000, "workspace filter");
    const ws = await domRows(driver);
    assert.deepEqual([...new Set(ws.map((r) => r.workspace))], ["api-server"]);
    assert.equal((await rowCount(driver)).shown, ws.length);

    await choose(driver, "filter-workspace", "");
    await driver.findElement(By.css('[data-testid="filter-needs-you"]')).click();
    await waitForCount(driver, 4, 15);
    assert.ok((await domRows(driver)).every((r) => r.needsYou), "only rows that need the user");
    assert.equal(await driver.findElement(By.css('[data-testid="filter-needs-you"]')).getAttribute("aria-pressed"), "true");
    await app.shot("fleet-needs-you");

    await driver.findElement(By.css('[data-testid="clear-filters"]')).click();
    await waitForCount(driver, 15, 15);
  });

  test("searches titles, and says so when nothing matches, with a way out", async () => {
    const search = await driver.findElement(By.css('[data-testid="search"]'));
    await search.sendKeys("billing");
    await eventually(driver, async () => (await rowCount(driver)).shown === 1, 5_000, "search result");
    assert.match((await domRows(driver))[0].title, /billing/i);

    await search.sendKeys(" nothing-like-this");
    await driver.wait(until.elementLocated(By.css('[data-testid="no-match"]')), 5_000);
    assert.equal((await domRows(driver)).length, 0);
    await app.shot("fleet-no-match");
    await driver.findElement(By.css('[data-testid="empty-clear"]')).click();
    await waitForCount(driver, 15, 15);
    assert.equal(await search.getAttribute("value"), "");
  });

  test("sorts by a column, and flips on a second click", async () => {
    await driver.findElement(By.css('[data-sort="id"]')).click();
    await eventually(driver, async () => (await domRows(driver))[0].id === 1, 5_000, "sorted by id");
    assert.deepEqual((await domRows(driver)).map((r) => r.id), Array.from({ length: 15 }, (_, i) => i + 1));
    await driver.findElement(By.css('[data-sort="id"]')).click();
    await eventually(driver, async () => (await domRows(driver))[0].id === 15, 5_000, "sorted by id, descending");

    await driver.findElement(By.css('[data-sort="task"]')).click();
    await eventually(driver, async () => {
      const titles = (await domRows(driver)).map((r) => r.title.toLowerCase());
      return titles.every((t, i) => i === 0 || titles[i - 1].localeCompare(t) <= 0);
    }, 5_000, "sorted by task");
    const header = await driver.findElement(By.xpath('//*[@data-sort="task"]/ancestor::*[@role="columnheader"]'));
    assert.equal(await header.getAttribute("aria-sort"), "ascending");

    await driver.findElement(By.css('[data-sort="attention"]')).click();
    await eventually(driver, async () => (await domRows(driver)).slice(0, 4).every((r) => r.needsYou), 5_000, "needs-you first");
  });

  test("the keyboard moves, approves, rejects with a reason, and aborts after confirming", async () => {
    // Sort by id so the positions are known: 1, 2, 3 wait for review; 5 runs.
    await driver.findElement(By.css('[data-sort="id"]')).click();
    await eventually(driver, async () => (await domRows(driver))[0].id === 1, 5_000, "sorted by id");
    const grid = await driver.findElement(By.css('[role="grid"]'));
    await grid.click();

    const selected = async () => (await domRows(driver)).find((r) => r.selected)?.id ?? null;
    await press(driver, "j");
    await eventually(driver, async () => (await selected()) !== null, 5_000, "a selection");
    const first = await selected();
    await press(driver, "j", "j");
    await eventually(driver, async () => (await selected()) === first + 2, 5_000, "j moves down");
    await press(driver, "k");
    await eventually(driver, async () => (await selected()) === first + 1, 5_000, "k moves up");

    // Select run 1 (the top) and approve it with `a`.
    await press(driver, "g");
    await eventually(driver, async () => (await selected()) === 1, 5_000, "g selects the first run");
    await press(driver, "a");
    await waitForRow(driver, 1, "released", "merged");
    assert.deepEqual(app.sql("SELECT d.actor FROM gate_decisions d JOIN gates g ON g.id = d.gate_id WHERE g.run_id = 1 AND g.kind = 'merge_review'"), [["user:app"]]);

    // Run 2: `r` asks for a reason; the confirm stays off until there is one.
    await press(driver, "j");
    await eventually(driver, async () => (await selected()) === 2, 5_000, "run 2 selected");
    await press(driver, "r");
    const reason = await driver.wait(until.elementLocated(By.css('textarea[data-testid="reject-reason"]')), 5_000);
    const confirm = await driver.findElement(By.css('button[data-testid="reject-confirm"]'));
    assert.equal(await confirm.isEnabled(), false, "no reason, no reject");
    // Keys typed into the reason are text, not shortcuts.
    await reason.sendKeys("Breaks the build on arm64; a and x are just letters");
    await settle(driver);
    await app.shot("fleet-reject-dialog");
    await confirm.click();
    await waitForRow(driver, 2, "released", "human_rejected");
    assert.deepEqual(app.sql("SELECT release_note FROM runs WHERE id = 2"), [["Breaks the build on arm64; a and x are just letters"]]);
    assert.equal((await driver.findElements(By.css('[data-testid="reject-dialog"]'))).length, 0);

    // Run 5 runs (no review): `a` and `r` do nothing, `x` asks to confirm.
    await press(driver, "j", "j", "j");
    await eventually(driver, async () => (await selected()) === 5, 5_000, "run 5 selected");
    const r5 = await driver.findElement(row(5));
    assert.equal((await r5.findElements(By.css('button[data-action="approve"]'))).length, 0);
    assert.equal((await r5.findElements(By.css('button[data-action="abort"]'))).length, 1, "abort is offered on an active run");
    await press(driver, "a", "r");
    assert.equal((await driver.findElements(By.css('[data-testid="reject-dialog"]'))).length, 0);
    await press(driver, "x");
    const abort = await driver.wait(until.elementLocated(By.css('[data-run-id="5"] button[data-testid="abort-confirm"]')), 5_000);
    await settle(driver);
    await app.shot("fleet-abort-confirm");
    assert.equal((await driver.findElements(By.css('button[data-testid="abort-confirm"]'))).length, 1);
    // Escape keeps the run; x again and the focused confirm takes Enter.
    await press(driver, "\uE00C");
    await eventually(driver, async () => (await driver.findElements(By.css('button[data-testid="abort-confirm"]'))).length === 0, 5_000, "confirm closed");
    assert.equal((await driver.findElement(row(5)).getAttribute("data-state")), "running");
    await press(driver, "x");
    await driver.wait(until.elementLocated(By.css('[data-run-id="5"] button[data-testid="abort-confirm"]')), 5_000);
    await press(driver, "\uE007");
    await waitForRow(driver, 5, "released", "aborted_by_user");
    assert.ok(abort);
  });

  test("? shows the shortcuts and Escape hides them", async () => {
    await driver.findElement(By.css('[role="grid"]')).click();
    await press(driver, "?");
    const help = await driver.wait(until.elementLocated(By.css('[data-testid="help"]')), 5_000);
    assert.match(await help.getText(), /Approve/);
    assert.match(await help.getText(), /Abort/);
    await settle(driver);
    await app.shot("fleet-help");
    await press(driver, "\uE00C");
    await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="help"]'))).length === 0, 5_000, "help closed");
  });

  test("clicking a task title opens its run", async () => {
    await driver.findElement(By.css('[data-run-id="3"] [data-col="task"] .title')).click();
    await driver.wait(until.elementLocated(By.css('[data-testid="run-detail"]')), 5_000, "the run page");
    await driver.findElement(By.css('[data-nav="fleet"]')).click();
    // The filter, sort and selection survive the trip.
    await driver.wait(until.elementLocated(By.css('[aria-selected="true"][data-run-id="3"]')), 5_000);
  });

  test("a change from the CLI moves a row between filtered views live", async () => {
    await choose(driver, "filter-state", "pending_review");
    await eventually(driver, async () => (await domRows(driver)).some((r) => r.id === 3), 5_000, "run 3 under review");
    app.cli("runs", "reject", "3", "--reason", "from the terminal");
    await eventually(driver, async () => !(await domRows(driver)).some((r) => r.id === 3), 10_000, "run 3 leaves the review filter");
    await choose(driver, "filter-state", "all");
  });
});

describe("10,000 runs", () => {
  let app;
  let driver;

  before(async () => {
    app = await openApp();
    driver = app.driver;
    // A bulk seed writes straight through the store (no events): reload.
    assert.match(app.cli("demo", "seed", "--runs", "10000"), /seeded 10000 demo runs/);
    await driver.executeScript("location.reload()");
    await waitForCount(driver, 10_000, 10_000);
    await driver.wait(until.elementLocated(By.css(ROW)), 20_000);
  });

  after(async () => {
    await app?.quit();
  });

  test("the DOM holds only a window of rows, and scrolling reaches the last run", async () => {
    const inDom = (await domRows(driver)).length;
    assert.ok(inDom > 5 && inDom < 100, `${inDom} row elements for 10,000 runs`);
    await app.shot("dashboard-10k");

    await driver.findElement(By.css('[data-sort="id"]')).click();
    await eventually(driver, async () => (await domRows(driver))[0]?.id === 1, 10_000, "sorted by id");
    await driver.executeScript("const g = document.querySelector('[role=grid]'); g.scrollTop = g.scrollHeight;");
    const last = await eventually(driver, async () => {
      const el = await driver.findElement(row(10_000));
      return (await el.isDisplayed()) ? el : null;
    }, 10_000, "the last run in view");
    assert.ok(last);
    const rows = await domRows(driver);
    assert.ok(rows.length < 100, `${rows.length} row elements at the bottom`);
    assert.equal(rows.at(-1).id, 10_000);
    assert.ok(!rows.some((r) => r.id === 1), "the first rows left the DOM");
    await app.shot("dashboard-10k-bottom");

    // The keyboard walks to the top and back without rendering more rows.
    await driver.findElement(By.css('[role="grid"]')).click();
    await press(driver, "g");
    await driver.wait(until.elementLocated(By.css('[aria-selected="true"][data-run-id="1"]')), 10_000);
    await press(driver, "G");
    await driver.wait(until.elementLocated(By.css('[aria-selected="true"][data-run-id="10000"]')), 10_000);
    assert.ok((await domRows(driver)).length < 100);
  });

  test("filters and searches 10,000 runs", async () => {
    await choose(driver, "filter-state", "pending_review");
    // 2 in 10 of the bulk seed wait for review.
    await waitForCount(driver, 2_000, 10_000);
    await choose(driver, "filter-workspace", "mobile");
    const c = await eventually(driver, async () => {
      const n = await rowCount(driver);
      return n.shown < 2_000 ? n : null;
    }, 10_000, "workspace filter");
    assert.ok(c.shown > 0);
    await driver.findElement(By.css('[data-testid="clear-filters"]')).click();
    await waitForCount(driver, 10_000, 10_000);
    await driver.findElement(By.css('[data-testid="search"]')).sendKeys("(#9999)");
    await waitForCount(driver, 1, 10_000);
    assert.equal((await domRows(driver))[0].id, 10_000);
  });
});

describe("agent text cannot spoof the row around it", () => {
  let app;
  let driver;
  let run;
  // A right-to-left override, then text meant to read as something else.
  const title = "\u202Efdp.exe  Approve all";

  before(async () => {
    app = await openApp();
    driver = app.driver;
    app.workspace("bidi");
    run = app.startDemo("bidi", "happy", title);
    await driver.wait(until.elementLocated(row(run)), 15_000);
  });

  after(async () => {
    await app?.quit();
  });

  test("a title with U+202E stays inside its own isolate and its own cell", async () => {
    const seen = await driver.executeScript(`
      const r = document.querySelector('[role="row"][data-run-id="${run}"]');
      const cell = r.querySelector('[data-col="task"]');
      const bdi = cell.querySelector('[data-testid="run-title"]');
      const box = (el) => { const b = el.getBoundingClientRect(); return { left: b.left, right: b.right }; };
      const isolates = [...r.querySelectorAll("bdi")].map((b) => getComputedStyle(b).unicodeBidi);
      return {
        text: bdi.textContent,
        tag: bdi.tagName,
        bidi: getComputedStyle(bdi).unicodeBidi,
        isolates,
        title: box(bdi),
        cell: box(cell),
        workspace: r.querySelector('[data-col="workspace"]').textContent.trim(),
        workspaceBox: box(r.querySelector('[data-col="workspace"]')),
      };`);
    assert.equal(seen.text, title, "the title as the agent wrote it, as text");
    assert.equal(seen.tag, "BDI");
    assert.equal(seen.bidi, "isolate");
    assert.ok(seen.isolates.length >= 4 && seen.isolates.every((b) => b === "isolate"), JSON.stringify(seen.isolates));
    // Laid out inside its cell (ellipsized there), never over the next column.
    assert.ok(seen.title.left >= seen.cell.left - 1, JSON.stringify(seen));
    assert.ok(Math.min(seen.title.right, seen.cell.right) <= seen.workspaceBox.left, JSON.stringify(seen));
    assert.equal(seen.workspace, "bidi", "the next column reads as it is");
    await app.shot("fleet-bidi");
  });
});

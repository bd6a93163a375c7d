// A fleet bigger than one screen loads in two steps: the engine's first
// screen (list_runs_head: the first rows of the default order, the fleet's
// size and counts) is painted first, then the whole list arrives for filters,
// search and scrolling. Real window, real engine, real database.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { openApp, eventually, By } from "./lib.mjs";

const RUNS = 400; // more than the first screen's 100 rows

function domIds(driver) {
  return driver.executeScript(`return [...document.querySelectorAll('[role="row"][data-run-id]')].map((r) => Number(r.dataset.runId));`);
}

function marks(driver) {
  return driver.executeScript(
    `return Object.fromEntries(["fleet-list-start", "fleet-head-received", "fleet-rows-painted", "fleet-list-received", "fleet-loaded"].map((n) => [n, performance.getEntriesByName(n)[0]?.startTime ?? null]))`,
  );
}

async function countText(driver) {
  return driver.findElement(By.css('[data-testid="row-count"]')).getText();
}

describe("a big fleet's first screen", () => {
  let app;
  before(async () => {
    app = await openApp();
    app.cli("demo", "seed", "--runs", String(RUNS));
  });
  after(async () => {
    await app?.quit();
  });

  test("is painted from the head, then the whole list takes over with the same first rows", async () => {
    const { driver } = app;
    await driver.navigate().refresh();
    await eventually(driver, async () => (await countText(driver)) === `${RUNS} of ${RUNS} runs`, 30_000, "the whole list");
    const m = await eventually(driver, async () => {
      const x = await marks(driver);
      return x["fleet-loaded"] !== null && x["fleet-rows-painted"] !== null ? x : null;
    }, 10_000, "the load marks");
    // Two calls: the head first, the whole list after the first screen painted.
    assert.ok(m["fleet-head-received"] >= m["fleet-list-start"], JSON.stringify(m));
    assert.ok(m["fleet-list-received"] >= m["fleet-head-received"], JSON.stringify(m));
    assert.ok(m["fleet-list-received"] >= m["fleet-rows-painted"], `the whole list came after the first paint: ${JSON.stringify(m)}`);

    // The head's rows are the whole list's first rows in the default order.
    const head = await driver.executeAsyncScript(`
      const done = arguments[arguments.length - 1];
      window.__TAURI_INTERNALS__.invoke("list_runs_head", { limit: 20 }).then(done, (e) => done({ error: String(e?.message ?? e) }));`);
    assert.equal(head.error, undefined, head.error);
    assert.equal(head.total, RUNS);
    const { needs_you, ...byState } = head.counts;
    assert.equal(Object.values(byState).reduce((a, b) => a + b, 0), RUNS);
    assert.ok(needs_you > 0 && head.rows[0].needs_you, "needs-you rows first");
    const ids = await domIds(driver);
    assert.deepEqual(ids.slice(0, 15), head.rows.slice(0, 15).map((r) => r.id));

    // Search covers the whole fleet, not only the first screen.
    const search = await driver.findElement(By.css('[data-testid="search"]'));
    await search.sendKeys("billing");
    await eventually(driver, async () => /^\d+ of 400 runs$/.test(await countText(driver)) && (await countText(driver)) !== `${RUNS} of ${RUNS} runs`, 10_000, "search applied");
    const shown = Number((await countText(driver)).split(" ")[0]);
    const expected = app.sql("SELECT count(*) FROM runs r JOIN tasks t ON t.id = r.task_id WHERE lower(t.title) LIKE '%billing%'")[0][0];
    assert.ok(shown >= expected && shown > 0, `search shows ${shown}, titles with 'billing': ${expected}`);
  });
});

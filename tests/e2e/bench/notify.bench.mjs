// From a blocking ask to the user knowing: a demo agent (`questions`
// scenario) opens its first gate (a blocking ask: it waits for the user),
// and we time, from the gate's opened_at in the database (engine clock):
//  - its row showing the needs-you marker in the window (in-page
//    MutationObserver, epoch ms; and the next frame after it);
//  - the Notify call on the session bus (dbus-monitor's own receive time).
// The desktop notifier sends the first notification of a burst at once and
// coalesces only what follows within its window (src-tauri/src/notifier.rs,
// hold_for); rounds are spaced past that window, so each ask is the first of
// its burst. Measured on a small fleet (the summary's figures) and again
// beside 10,000 runs.
import { readFileSync } from "node:fs";
import { openApp, By } from "../lib.mjs";
import { report, writeFigures } from "./common.mjs";

const ROUNDS = Number(process.env.BENCH_NOTIFY_ROUNDS ?? 10);
const LOG = process.env.BENCH_NOTIFY_LOG;

const OBSERVE = `
  window.__seen = {};
  const stamp = () => performance.timeOrigin + performance.now();
  const scan = () => {
    const now = stamp();
    for (const m of document.querySelectorAll('[data-testid="needs-you"]')) {
      const id = m.closest("[data-run-id]")?.dataset.runId;
      if (id && !(id in window.__seen)) {
        const seen = (window.__seen[id] = { dom: now, painted: null });
        requestAnimationFrame(() => setTimeout(() => (seen.painted = stamp()), 0));
      }
    }
  };
  new MutationObserver(scan).observe(document.body, { subtree: true, childList: true });
  scan();
`;

/** Notify calls in the dbus-monitor log: [{ at (epoch ms), text }], text
 * being the whole call (summary "Run 7 …", or coalesced bodies "run 7: …"). */
function notifyCalls() {
  const out = [];
  // A call starts a line; string arguments may span lines.
  for (const b of readFileSync(LOG, "latin1").split(/\n(?=(?:method call|method return|signal|error) time=)/)) {
    const m = /^method call time=(\d+\.\d+) .*member=Notify/.exec(b);
    if (m) out.push({ at: Number(m[1]) * 1000, text: b });
  }
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(f, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function measure(label, seedRuns) {
  const app = await openApp();
  const { driver } = app;
  try {
    if (seedRuns > 0) {
      app.cli("demo", "seed", "--runs", String(seedRuns));
      await driver.navigate().refresh();
    } else {
      app.cli("demo", "seed");
    }
    const total = seedRuns > 0 ? seedRuns : 15;
    await driver.wait(async () => {
      const t = await driver.findElements(By.css('[data-testid="row-count"]'));
      return t.length > 0 && (await t[0].getText()).endsWith(`of ${total.toLocaleString("en-US")} runs`);
    }, 60_000);
    // Newest run on top, whatever else waits for the user.
    await driver.findElement(By.css('[data-sort="id"]')).click();
    await driver.findElement(By.css('[data-sort="id"]')).click();
    await driver.executeScript(OBSERVE);
    app.workspace("bench");

    const toRow = [];
    const toPaint = [];
    const toNotify = [];
    const kinds = new Map();
    for (let i = -1; i < ROUNDS; i++) {
      const run = app.startDemo("bench", "questions", i < 0 ? "Bench warm-up" : `Bench ask ${i + 1}`);
      const [[openedAt, kind]] = await until(() => {
        const rows = app.sql("SELECT opened_at, kind FROM gates WHERE run_id = ? ORDER BY id LIMIT 1", run);
        return rows.length ? rows : null;
      }, 30_000, `run ${run}'s first gate`);
      if (i >= 0) kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      const seen = await until(async () => {
        const s = await driver.executeScript("return window.__seen[arguments[0]]", String(run));
        return s && s.painted ? s : null;
      }, 30_000, `run ${run}'s needs-you marker`);
      const mentions = new RegExp(`\\b[Rr]un ${run}\\b`);
      const call = await until(() => notifyCalls().find((c) => c.at >= openedAt - 5 && mentions.test(c.text)), 15_000, `the Notify for run ${run}`);
      if (i < 0) {
        // A warm-up round: the first Notify also waits for the session bus
        // to start the notification daemon.
        app.cli("runs", "abort", String(run));
        await sleep(900);
        continue;
      }
      toRow.push(seen.dom - openedAt);
      toPaint.push(seen.painted - openedAt);
      toNotify.push(call.at - openedAt);
      // Stop the agent; wait out the coalescing window so rounds stay apart.
      app.cli("runs", "abort", String(run));
      await sleep(900);
    }
    console.log(`  (${label}: first gates opened: ${[...kinds].map(([k, n]) => `${n} ${k}`).join(", ")})`);
    const row = report(`blocking ask opened to its row marked in the DOM, ${label}`, toRow);
    const paint = report(`blocking ask opened to its row painted, ${label}`, toPaint);
    const notify = report(`blocking ask opened to the Notify call on the bus, ${label}`, toNotify);
    return { row, paint, notify };
  } finally {
    await app.quit();
  }
}

const small = await measure("15-run demo fleet", 0);
writeFigures("notify", {
  blocking_ask_to_notify_p99_ms: small.notify.p99,
  blocking_ask_to_row_painted_p99_ms: small.paint.p99,
  blocking_ask_to_row_dom_p99_ms: small.row.p99,
});
const big = await measure("beside 10,000 runs", 10_000);
writeFigures("notify", {
  blocking_ask_to_notify_p99_ms_10k: big.notify.p99,
  blocking_ask_to_row_painted_p99_ms_10k: big.paint.p99,
  blocking_ask_to_row_dom_p99_ms_10k: big.row.p99,
});

// Where a dashboard reload's time goes with 10,000 runs (and 100 beside it),
// measured in the real window from the page's own performance marks
// (Fleet.start and FleetTable.svelte set them) and by calling the list
// command again from the page:
//  - navigation start to the app's first list call (page load, scripts,
//    mount, the event subscription);
//  - the first screen's call (list_runs_head: engine query and sort, IPC);
//  - its rows rendered, and a frame later painted;
//  - then, after the paint, the whole list's call (list_runs) and the store
//    built from it (map, sort, counts);
//  - each list command called again from the page: time, payload (KiB of
//    JSON) and JSON.parse of that payload alone.
import { dropTemplates, launchPrepared, report, waitForMark } from "./common.mjs";

const RELOADS = Number(process.env.BENCH_RELOADS ?? 8);

const MARKS = ["fleet-list-start", "fleet-head-received", "fleet-list-received", "fleet-loaded", "fleet-rows-rendered", "fleet-rows-painted"];

const PROBE = `
  const done = arguments[arguments.length - 1];
  (async () => {
    const cmd = arguments[0];
    const args = arguments[1];
    const t0 = performance.now();
    const r = await window.__TAURI_INTERNALS__.invoke(cmd, args);
    const t1 = performance.now();
    const text = JSON.stringify(r);
    const t2 = performance.now();
    JSON.parse(text);
    const t3 = performance.now();
    done({ call: t1 - t0, bytes: text.length, parse: t3 - t2 });
  })().catch((e) => done({ error: String(e && (e.message ?? JSON.stringify(e))) }));
`;

async function measure(runs) {
  const label = `${runs.toLocaleString("en-US")} runs`;
  const app = await launchPrepared(`runs-${runs}`, (cli) => cli("demo", "seed", "--runs", String(runs)));
  const { driver } = app;
  try {
    await waitForMark(driver, "fleet-loaded");
    const parts = { load: [], head: [], render: [], paint: [], total: [], list: [], build: [] };
    for (let i = 0; i < RELOADS; i++) {
      await driver.navigate().refresh();
      await waitForMark(driver, "fleet-rows-painted");
      await waitForMark(driver, "fleet-loaded");
      const m = await driver.executeScript(
        `return Object.fromEntries(arguments[0].map((n) => [n, performance.getEntriesByName(n)[0]?.startTime ?? null]))`,
        MARKS,
      );
      parts.load.push(m["fleet-list-start"]);
      parts.head.push(m["fleet-head-received"] - m["fleet-list-start"]);
      parts.render.push(m["fleet-rows-rendered"] - m["fleet-head-received"]);
      parts.paint.push(m["fleet-rows-painted"] - m["fleet-rows-rendered"]);
      parts.total.push(m["fleet-rows-painted"]);
      // A fleet the first screen holds whole needs no second call.
      parts.list.push(m["fleet-list-received"] - Math.min(m["fleet-list-received"], Math.max(m["fleet-rows-painted"], m["fleet-head-received"])));
      parts.build.push(m["fleet-loaded"] - m["fleet-list-received"]);
    }
    report(`navigation start to the first list call (page load, scripts, mount, subscribe), ${label}`, parts.load);
    report(`first screen's call (list_runs_head), ${label}`, parts.head);
    report(`its rows rendered, ${label}`, parts.render);
    report(`rendered to painted, ${label}`, parts.paint);
    report(`= navigation start to rows painted, ${label}`, parts.total);
    report(`then the whole list's call (list_runs, after the paint), ${label}`, parts.list);
    report(`store built from it (map, sort, counts), ${label}`, parts.build);
    for (const [cmd, args] of [["list_runs_head", { limit: 100 }], ["list_runs", {}]]) {
      const calls = [];
      let last;
      for (let i = 0; i < 5; i++) {
        last = await driver.executeAsyncScript(PROBE, cmd, args);
        if (last.error) throw new Error(`${cmd}: ${last.error}`);
        calls.push(last.call);
      }
      report(`${cmd} called from the page (${(last.bytes / 1024).toFixed(0)} KiB of JSON; JSON.parse alone ${last.parse.toFixed(1)} ms), ${label}`, calls);
    }
  } finally {
    await app.quit();
  }
}

try {
  await measure(100);
  await measure(10_000);
} finally {
  dropTemplates();
}

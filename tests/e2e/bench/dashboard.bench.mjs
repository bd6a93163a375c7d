// Dashboard load and filter times in the real window, with 10,000 runs and a
// 100-run baseline measured the same way in the same run.
//  - cold start: from asking WebKitWebDriver to start the app (process spawn)
//    to the first rows painted (epoch of the in-page mark);
//  - reload: location reload to the first rows painted (in-page, from the
//    navigation start of the new document);
//  - filter: an input/change event on the search box / state filter to the
//    row count updated in the DOM, and to the next frame (in-page).
import { dropTemplates, idleFrames, launchPrepared, reloadToRows, report, ratio, waitForMark, rowCountText, writeFigures } from "./common.mjs";

const COLD = Number(process.env.BENCH_COLD ?? 5);
const RELOADS = Number(process.env.BENCH_RELOADS ?? 8);
const FILTERS = Number(process.env.BENCH_FILTERS ?? 10);

const FILTER_SCRIPT = `
  const [kind, value] = arguments; const done = arguments[arguments.length - 1];
  const count = document.querySelector('[data-testid="row-count"]');
  const before = count.textContent;
  let tDom = null;
  const mo = new MutationObserver(() => {
    if (tDom !== null || count.textContent === before) return;
    tDom = performance.now();
    mo.disconnect();
    requestAnimationFrame(() => setTimeout(() => done({ dom: tDom - t0, frame: performance.now() - t0, text: count.textContent }), 0));
  });
  mo.observe(count, { characterData: true, childList: true, subtree: true });
  const t0 = performance.now();
  if (kind === "search") {
    const i = document.querySelector('[data-testid="search"]');
    i.value = value;
    i.dispatchEvent(new Event("input", { bubbles: true }));
  } else {
    const s = document.querySelector('[data-testid="filter-state"]');
    s.value = value;
    s.dispatchEvent(new Event("change", { bubbles: true }));
  }
  setTimeout(() => { if (tDom === null) { mo.disconnect(); done({ dom: null, frame: null, text: count.textContent }); } }, 10000);
`;

async function filterTimes(driver, kind, values) {
  const dom = [];
  const frame = [];
  for (let i = 0; i < FILTERS; i++) {
    for (const v of values) {
      const r = await driver.executeAsyncScript(FILTER_SCRIPT, kind, v);
      if (r.dom === null) throw new Error(`${kind} "${v}" did not change the row count (${r.text})`);
      dom.push(r.dom);
      frame.push(r.frame);
    }
  }
  return { dom, frame };
}

async function measure(runs) {
  const label = `${runs.toLocaleString("en-US")} runs`;
  const coldRendered = [];
  const coldPainted = [];
  let app;
  for (let i = 0; i < COLD; i++) {
    app = await launchPrepared(`runs-${runs}`, (cli) => cli("demo", "seed", "--runs", String(runs)));
    const r = await waitForMark(app.driver, "fleet-rows-rendered");
    const p = await waitForMark(app.driver, "fleet-rows-painted");
    coldRendered.push(r.epoch - app.startedAt);
    coldPainted.push(p.epoch - app.startedAt);
    await waitForMark(app.driver, "fleet-loaded");
    if (i < COLD - 1) await app.quit();
  }
  const driver = app.driver;
  console.log(`  (${label}: the window shows "${await rowCountText(driver)}")`);
  const reloadRendered = [];
  const reloadPainted = [];
  for (let i = 0; i < RELOADS; i++) {
    const r = await reloadToRows(driver);
    reloadRendered.push(r.rendered);
    reloadPainted.push(r.painted);
  }
  const frames = await idleFrames(driver);
  const search = await filterTimes(driver, "search", ["billing", "", "auth middleware", ""]);
  const state = await filterTimes(driver, "state", ["pending_review", "all", "released:failed", "all"]);
  await app.quit();
  return {
    coldRendered: report(`cold start (app spawn) to rows in the DOM, ${label}`, coldRendered),
    coldPainted: report(`cold start (app spawn) to rows painted, ${label}`, coldPainted),
    reloadRendered: report(`reload to rows in the DOM, ${label}`, reloadRendered),
    reloadPainted: report(`reload to rows painted, ${label}`, reloadPainted),
    searchDom: report(`search typed to row count updated, ${label}`, search.dom),
    searchFrame: report(`search typed to next frame, ${label}`, search.frame),
    stateDom: report(`state filter changed to row count updated, ${label}`, state.dom),
    stateFrame: report(`state filter changed to next frame, ${label}`, state.frame),
    idleFrame: report(`idle frame interval (the window's cadence, for reference), ${label}`, frames),
  };
}

try {
  const base = await measure(100);
  const big = await measure(10_000);
  console.log("ratios 10,000 runs / 100 runs (p50):");
  for (const k of Object.keys(big)) ratio(`  ${k}`, big[k].p50, base[k].p50);
  writeFigures("dashboard", {
    dashboard_10k_reload_painted_p50_ms: big.reloadPainted.p50,
    dashboard_10k_reload_rendered_p50_ms: big.reloadRendered.p50,
    dashboard_100_reload_painted_p50_ms: base.reloadPainted.p50,
    cold_start_to_rows_painted_p50_ms: base.coldPainted.p50,
    cold_start_to_rows_painted_p50_ms_10k: big.coldPainted.p50,
    dashboard_10k_search_frame_p50_ms: big.searchFrame.p50,
    dashboard_10k_state_filter_frame_p50_ms: big.stateFrame.p50,
  });
} finally {
  dropTemplates();
}

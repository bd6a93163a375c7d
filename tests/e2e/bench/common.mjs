// What the dashboard benchmarks share: percentiles, printing, an app started
// on a data dir seeded before it opens (for cold-start figures), and waiting
// for the performance marks the fleet grid sets (FleetTable.svelte).
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Builder, By, until } from "selenium-webdriver";

const { OVERSEER_APP, OVERSEER_CLI, WEBDRIVER_URL } = process.env;

/** Nearest-rank percentile of `xs` (p in [0, 1]). */
export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
}

export function summary(xs) {
  return { p50: percentile(xs, 0.5), p99: percentile(xs, 0.99), min: Math.min(...xs), max: Math.max(...xs), n: xs.length };
}

const ms = (x) => (Number.isFinite(x) ? `${x.toFixed(x < 10 ? 2 : 1)} ms` : "n/a");

/** Prints one figure as `name: p50 X ms, p99 Y ms (min, max, n)` and returns its summary. */
export function report(name, xs) {
  const s = summary(xs);
  console.log(`${name}: p50 ${ms(s.p50)}, p99 ${ms(s.p99)} (min ${ms(s.min)}, max ${ms(s.max)}, n=${s.n})`);
  return s;
}

export function ratio(name, a, b) {
  console.log(`${name}: ${(a / b).toFixed(2)}x`);
}

/** Where benches leave their figures for `make bench`'s summary
 * (scripts/bench-summary.mjs merges target/bench/*.json). */
const FIGURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "target", "bench");

/** Merges `figures` (numbers, ms unless named otherwise) into
 * target/bench/NAME.json. */
export function writeFigures(name, figures) {
  mkdirSync(FIGURES, { recursive: true });
  const file = join(FIGURES, `${name}.json`);
  let old = {};
  try {
    old = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    // first figures of this bench
  }
  writeFileSync(file, JSON.stringify({ ...old, ...figures }, null, 2) + "\n");
}

const templates = new Map();

/** A data dir + config dir that `prepare(cli)` filled once (the CLI works on
 * the database directly when no app is running); later calls with the same
 * key copy it instead of preparing again. */
async function preparedDirs(key, prepare) {
  if (!templates.has(key)) {
    const t = mkdtempSync(join(tmpdir(), "overseer-bench-template-"));
    const env = { ...process.env, OVERSEER_DATA_DIR: join(t, "data"), OVERSEER_CONFIG_DIR: join(t, "config") };
    prepare((...args) => execFileSync(OVERSEER_CLI, args, { encoding: "utf8", env }));
    await settle(env, join(t, "data", "overseer.db"));
    templates.set(key, t);
  }
  const work = mkdtempSync(join(tmpdir(), "overseer-bench-"));
  cpSync(templates.get(key), work, { recursive: true });
  return work;
}

/** The bulk seed leaves some runs "running" with no agent; an engine that
 * starts marks each one interrupted (one event apiece, about 40 a second).
 * Let a headless engine (`overseer serve`) do that once on the template, so
 * the measured starts are not also doing it. */
async function settle(env, db) {
  const active = () =>
    Number(
      execFileSync("python3", ["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM runs WHERE state IN ('running','claimed','retry_queued')\").fetchone()[0])", db], { encoding: "utf8" }),
    );
  if (active() === 0) return;
  const serve = spawn(OVERSEER_CLI, ["serve"], { env, stdio: "ignore" });
  const exited = once(serve, "exit");
  const deadline = Date.now() + 180_000;
  while (active() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
  serve.kill("SIGTERM");
  await exited;
}

export function dropTemplates() {
  for (const t of templates.values()) if (existsSync(t)) rmSync(t, { recursive: true, force: true });
  templates.clear();
}

/** Opens the app on a copy of a prepared data dir (see preparedDirs).
 * Returns the app and the wall-clock ms at which the app was asked to start. */
export async function launchPrepared(key, prepare) {
  const work = await preparedDirs(key, prepare);
  const dataDir = join(work, "data");
  const configDir = join(work, "config");
  const env = { ...process.env, OVERSEER_DATA_DIR: dataDir, OVERSEER_CONFIG_DIR: configDir };
  const cli = (...args) => execFileSync(OVERSEER_CLI, args, { encoding: "utf8", env });
  const startedAt = Date.now();
  const driver = await new Builder()
    .usingServer(WEBDRIVER_URL)
    .withCapabilities({
      browserName: "wry",
      "webkitgtk:browserOptions": { binary: OVERSEER_APP, args: ["--data-dir", dataDir, "--config-dir", configDir] },
    })
    .build();
  await driver.manage().setTimeouts({ script: 120_000 });
  return {
    driver,
    startedAt,
    cli,
    dataDir,
    async quit() {
      await driver.quit();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

/** The page's idle frame cadence (ms between animation frames), for
 * reading the frame figures: under Xvfb with software rendering on a busy
 * machine, frames come far slower than 60 Hz. */
export async function idleFrames(driver, n = 40) {
  return driver.executeAsyncScript(
    `const n = arguments[0]; const done = arguments[arguments.length - 1]; const ts = [];
     function f() { ts.push(performance.now()); if (ts.length <= n) requestAnimationFrame(f); else done(ts.slice(1).map((x, i) => x - ts[i])); }
     requestAnimationFrame(f);`,
    n,
  );
}

/** Waits in the page for a performance mark; returns its epoch time (ms)
 * and its time since this document's navigation started (ms). */
export async function waitForMark(driver, name) {
  return driver.executeAsyncScript(
    `const name = arguments[0]; const done = arguments[arguments.length - 1];
     (function poll() {
       const e = performance.getEntriesByName(name)[0];
       if (e) done({ epoch: performance.timeOrigin + e.startTime, sinceNav: e.startTime });
       else setTimeout(poll, 5);
     })();`,
    name,
  );
}

/** Reloads the page and returns ms from the reload (the new document's
 * navigation start) to the first rows rendered in the DOM and painted. */
export async function reloadToRows(driver) {
  await driver.navigate().refresh();
  const rendered = await waitForMark(driver, "fleet-rows-rendered");
  const painted = await waitForMark(driver, "fleet-rows-painted");
  // Not timed: the whole list (after the first screen) is in, so the next
  // reload or filter starts from a settled page.
  await waitForMark(driver, "fleet-loaded");
  return { rendered: rendered.sinceNav, painted: painted.sinceNav };
}

export async function rowCountText(driver) {
  return driver.findElement(By.css('[data-testid="row-count"]')).getText();
}

export { By, until };

// Idle memory of the whole process tree: the app on the demo fleet (the
// 15-run `overseer demo seed`), left alone for a while, then the PSS
// (proportional set size, /proc/PID/smaps_rollup) of the app process and
// every process under it (WebKitWebProcess, WebKitNetworkProcess, ...),
// summed: shared pages count once across the tree. Measured twice: the app
// as a user starts it (`idle_pss_mb`), and under WebDriver as the other
// window benches drive it (`idle_pss_mb_under_webdriver`: the automation
// session and a page reload add to the web process), beside WebKit's own
// floor measured first (MiniBrowser on a one-line page: the same three
// processes with no app in them). BENCH_PSS_DETAIL=N
// prints each process's N largest mappings.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openApp, By } from "../lib.mjs";
import { report, writeFigures } from "./common.mjs";

const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const SAMPLES = Number(process.env.BENCH_PSS_SAMPLES ?? 5);
const { OVERSEER_APP, OVERSEER_CLI } = process.env;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function processes() {
  const out = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      // comm may hold spaces and parens: the fields after the last ')'.
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const cmdline = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean);
      out.push({ pid: Number(d), ppid: Number(rest[1]), comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The process `isRoot` picks and every process under it. */
function tree(isRoot, what) {
  const all = processes();
  const root = all.find(isRoot);
  if (!root) throw new Error(`no ${what} process`);
  const members = [root];
  for (let i = 0; i < members.length; i++) for (const p of all) if (p.ppid === members[i].pid) members.push(p);
  return members;
}

/** The app started on `dataDir`. */
const appOn = (dataDir) => (p) => p.cmdline.includes(dataDir) && p.cmdline[0]?.endsWith("overseer-app");

/** The mappings holding most of a process's PSS, summed by path ([heap], [anon], a library). */
function topMappings(pid, n) {
  const by = new Map();
  let name = "";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) name = head[1] || "[anon]";
    const pss = /^Pss:\s+(\d+) kB/.exec(line);
    if (pss) by.set(name, (by.get(name) ?? 0) + Number(pss[1]));
  }
  return [...by].sort((a, b) => b[1] - a[1]).slice(0, n);
}

function pssKb(pid) {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
  return m ? Number(m[1]) : 0;
}

/** PSS samples of a whole tree (the process `isRoot` picks and all under
 * it), once it has been idle IDLE_MS; prints where the memory is and
 * returns the per-process figures of the last sample. */
async function measure(isRoot, label) {
  await sleep(IDLE_MS);
  const totals = [];
  let last = [];
  for (let i = 0; i < SAMPLES; i++) {
    last = tree(isRoot, label).map((p) => ({ ...p, kb: pssKb(p.pid) }));
    totals.push(last.reduce((a, p) => a + p.kb, 0) / 1024);
    await sleep(1_000);
  }
  // Without a web process nothing was shown: a figure of that is no figure.
  if (!last.some((p) => p.comm.startsWith("WebKitWebProc"))) throw new Error(`${label}: no WebKitWebProcess in the tree; the page never loaded`);
  for (const p of last) {
    console.log(`  ${p.comm} (pid ${p.pid}): ${(p.kb / 1024).toFixed(1)} MB PSS`);
    // BENCH_PSS_DETAIL=N: where each process's memory is, its N largest mappings.
    const detail = Number(process.env.BENCH_PSS_DETAIL ?? 0);
    if (detail > 0) for (const [path, kb] of topMappings(p.pid, detail)) console.log(`      ${(kb / 1024).toFixed(1).padStart(6)} MB  ${path}`);
  }
  const s = report(`idle PSS of the whole tree (MB, not ms), ${label}`, totals);
  const byName = {};
  for (const p of last) {
    const key = `_${p.comm.replace(/\W+/g, "_")}`;
    byName[key] = (byName[key] ?? 0) + p.kb / 1024;
  }
  return { p50: s.p50, byName };
}

/** WebKitGTK's own minimal browser (shipped with the library), or null. */
function miniBrowser() {
  const dirs = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/lib/aarch64-linux-gnu"];
  try {
    dirs.unshift(execFileSync("pkg-config", ["--variable=libdir", "webkit2gtk-4.1"], { encoding: "utf8" }).trim());
  } catch {
    // no pkg-config: the usual places
  }
  return dirs.map((d) => join(d, "webkit2gtk-4.1", "MiniBrowser")).find((p) => existsSync(p)) ?? null;
}

// WebKit's floor, the baseline: MiniBrowser showing a one-line page with
// the same setting the app starts WebKit with (no compositing), the same
// process tree (UI, network and web processes) with no app in it.
let floor = null;
const mini = miniBrowser();
if (mini) {
  const page = mkdtempSync(join(tmpdir(), "overseer-bench-floor-"));
  writeFileSync(join(page, "index.html"), "<!doctype html><title>floor</title><p>hello</p>\n");
  const env = { ...process.env, WEBKIT_DISABLE_COMPOSITING_MODE: "1" };
  delete env.TAURI_WEBVIEW_AUTOMATION;
  const browser = spawn(mini, [`file://${join(page, "index.html")}`], { env, stdio: "ignore" });
  const gone = once(browser, "exit");
  try {
    floor = (await measure((p) => p.pid === browser.pid, "WebKit's floor (MiniBrowser, a one-line page)")).p50;
  } finally {
    browser.kill("SIGTERM");
    await gone;
    rmSync(page, { recursive: true, force: true });
  }
} else {
  console.log("WebKit's floor: no MiniBrowser next to libwebkit2gtk-4.1; not measured");
}

// As a user runs it: the app started on a data dir the demo fleet is in,
// nothing attached to its web view.
const work = mkdtempSync(join(tmpdir(), "overseer-bench-pss-"));
const dataDir = join(work, "data");
const configDir = join(work, "config");
const env = { ...process.env, OVERSEER_DATA_DIR: dataDir, OVERSEER_CONFIG_DIR: configDir };
delete env.TAURI_WEBVIEW_AUTOMATION;
execFileSync(OVERSEER_CLI, ["demo", "seed"], { env, stdio: "ignore" });
const plain = spawn(OVERSEER_APP, ["--data-dir", dataDir, "--config-dir", configDir], { env, stdio: "ignore" });
const exited = once(plain, "exit");
let user;
try {
  user = await measure(appOn(dataDir), "the app as a user starts it, 15-run demo fleet");
} finally {
  plain.kill("SIGTERM");
  await exited;
  rmSync(work, { recursive: true, force: true });
}

// Under WebDriver, as the other window benches run it: the automation
// session and a reload of the page are in this figure.
const app = await openApp();
let driven;
try {
  app.cli("demo", "seed");
  await app.driver.navigate().refresh();
  await app.driver.wait(async () => {
    const t = await app.driver.findElements(By.css('[data-testid="row-count"]'));
    return t.length > 0 && / of 15 runs$/.test(await t[0].getText());
  }, 60_000);
  driven = await measure(appOn(app.dataDir), "the app under WebDriver after a reload, 15-run demo fleet");
} finally {
  await app.quit();
}
const figures = { idle_pss_mb: user.p50, idle_pss_mb_under_webdriver: driven.p50 };
if (floor !== null) {
  figures.idle_pss_mb_webkit_floor = floor;
  figures.idle_pss_mb_above_webkit_floor = user.p50 - floor;
  console.log(`the app above WebKit's floor: +${(user.p50 - floor).toFixed(1)} MB (${(user.p50 / floor).toFixed(2)}x)`);
}
for (const [k, v] of Object.entries(user.byName)) figures[`idle_pss_mb${k}`] = v;
writeFigures("pss", figures);

// Idle memory of the whole process tree: the app on the demo fleet (the
// 15-run `overseer demo seed`), left alone for a while, then the PSS
// (proportional set size, /proc/PID/smaps_rollup) of the app process and
// every process under it (WebKitWebProcess, WebKitNetworkProcess, ...),
// summed: shared pages count once across the tree.
import { readFileSync, readdirSync } from "node:fs";
import { openApp, By } from "../lib.mjs";
import { report, writeFigures } from "./common.mjs";

const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const SAMPLES = Number(process.env.BENCH_PSS_SAMPLES ?? 5);

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

/** The app (started with our data dir) and every process under it. */
function tree(dataDir) {
  const all = processes();
  const app = all.find((p) => p.cmdline.includes(dataDir) && p.cmdline[0]?.endsWith("overseer-app"));
  if (!app) throw new Error(`no overseer-app process with --data-dir ${dataDir}`);
  const members = [app];
  for (let i = 0; i < members.length; i++) for (const p of all) if (p.ppid === members[i].pid) members.push(p);
  return members;
}

function pssKb(pid) {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
  return m ? Number(m[1]) : 0;
}

const app = await openApp();
try {
  app.cli("demo", "seed");
  await app.driver.navigate().refresh();
  await app.driver.wait(async () => {
    const t = await app.driver.findElements(By.css('[data-testid="row-count"]'));
    return t.length > 0 && / of 15 runs$/.test(await t[0].getText());
  }, 60_000);
  await sleep(IDLE_MS);
  const totals = [];
  let last = [];
  for (let i = 0; i < SAMPLES; i++) {
    last = tree(app.dataDir).map((p) => ({ ...p, kb: pssKb(p.pid) }));
    totals.push(last.reduce((a, p) => a + p.kb, 0) / 1024);
    await sleep(1_000);
  }
  for (const p of last) console.log(`  ${p.comm} (pid ${p.pid}): ${(p.kb / 1024).toFixed(1)} MB PSS`);
  const s = report("idle PSS of the whole tree (MB, not ms), 15-run demo fleet", totals);
  const byName = {};
  for (const p of last) byName[`idle_pss_mb_${p.comm.replace(/\W+/g, "_")}`] = (byName[`idle_pss_mb_${p.comm.replace(/\W+/g, "_")}`] ?? 0) + p.kb / 1024;
  writeFigures("pss", { idle_pss_mb: s.p50, ...byName });
} finally {
  await app.quit();
}

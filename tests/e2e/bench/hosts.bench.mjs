// The one fleet over hosts in the real window: HOSTS ssh test hosts
// (overseer-test-host: a real sshd in a network namespace of its own, the
// real binary installed by `overseer hosts add`), RUNS demo runs on each,
// against a baseline of the same number of runs on this machine only,
// measured the same way in the same run.
//  - reload: location reload to the fleet counting every run (in-page, from
//    the new document's navigation start; the hosts' rows come over their
//    links, so this is the slowest host's link plus the page);
//  - change to row: a run rejected from a terminal (`overseer [--host H]
//    runs reject`) to its row leaving the window's "pending review" view
//    (from just before the CLI starts; the CLI's own ssh connection is in
//    the host figure, and measured alone beside it).
// Needs root (the test hosts). `make bench-hosts` runs it.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { launchPrepared, report, ratio, writeFigures, dropTemplates, By } from "./common.mjs";

const HOSTS = Number(process.env.BENCH_HOSTS ?? 5);
const RUNS = Number(process.env.BENCH_HOST_RUNS ?? 50);
const RELOADS = Number(process.env.BENCH_RELOADS ?? 8);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 8);
const { OVERSEER_APP } = process.env;
const fixtureBin = process.env.OVERSEER_TEST_HOST ?? join(dirname(OVERSEER_APP), "overseer-test-host");

/** One ssh test host: `{ info, child }`; removed when its stdin closes. */
async function startHost() {
  const child = spawn(fixtureBin, [], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error(`${fixtureBin} exited before saying where its host is (it needs root; 'make app' builds it)`);
  return { info: JSON.parse(first.value), child };
}

/** In the page: reload, then the ms from the new document's start until the
 * row count says `total` runs. */
const COUNT_SCRIPT = `
  const total = arguments[0]; const done = arguments[arguments.length - 1];
  (function poll() {
    const el = document.querySelector('[data-testid="row-count"]');
    const m = el && /of ([\\d,]+) runs/.exec(el.textContent);
    if (m && Number(m[1].replace(/,/g, "")) === total) done(performance.now());
    else setTimeout(poll, 5);
  })();`;

async function reloadToAll(driver, total) {
  await driver.navigate().refresh();
  return driver.executeAsyncScript(COUNT_SCRIPT, total);
}

/** In the page: resolves with the epoch ms at which the row of `id` on
 * `host` ("" for this machine) is no longer shown pending review. */
const GONE_SCRIPT = `
  const [id, host] = arguments; const done = arguments[arguments.length - 1];
  const sel = host === null ? '[role="row"][data-run-id="' + id + '"]' : '[role="row"][data-run-id="' + id + '"][data-host="' + host + '"]';
  (function poll() {
    const row = document.querySelector(sel);
    if (!row || row.getAttribute("data-state") !== "pending_review") done(performance.timeOrigin + performance.now());
    else requestAnimationFrame(poll);
  })();`;

/** The ids of the rows shown pending review for `host` (null: no host column). */
async function pendingRows(driver, host) {
  const sel = host === null ? '[role="row"][data-state="pending_review"]' : `[role="row"][data-state="pending_review"][data-host="${host}"]`;
  const ids = [];
  for (const r of await driver.findElements(By.css(sel))) ids.push(Number(await r.getAttribute("data-run-id")));
  return ids;
}

async function changeToRow(driver, host, cli, n) {
  const took = [];
  const ids = (await pendingRows(driver, host)).slice(0, n);
  if (ids.length < n) throw new Error(`only ${ids.length} runs pending review on ${host ?? "this machine"}`);
  for (const id of ids) {
    const gone = driver.executeAsyncScript(GONE_SCRIPT, id, host);
    const t0 = Date.now();
    cli("runs", "reject", String(id), "--reason", "bench");
    took.push((await gone) - t0);
  }
  return took;
}

const hosts = [];
try {
  const total = HOSTS * RUNS;
  // Baseline: the same number of runs, all on this machine.
  const local = await launchPrepared(`local-${total}`, (cli) => cli("demo", "seed", "--runs", String(total)));
  const baseReload = [];
  for (let i = 0; i < RELOADS; i++) baseReload.push(await reloadToAll(local.driver, total));
  await local.driver.findElement(By.css('[data-testid="filter-state"] option[value="pending_review"]')).click();
  const baseChange = await changeToRow(local.driver, null, local.cli, CHANGES);
  await local.quit();

  // HOSTS hosts with RUNS runs each, none on this machine.
  for (let i = 0; i < HOSTS; i++) hosts.push(await startHost());
  const app = await launchPrepared(`hosts-${HOSTS}x${RUNS}`, (cli) => {
    cli("runs", "list"); // this machine's (empty) database, as the app finds it
    hosts.forEach((h, i) => {
      // The host keeps the ssh config it was added with.
      cli("hosts", "add", `h${i}`, h.info.url, "--ssh-config", h.info.ssh_config);
      cli("--host", `h${i}`, "demo", "seed", "--runs", String(RUNS));
    });
  });
  const onHost = (i) => (...args) => app.cli("--host", `h${i}`, ...args);
  const hostReload = [];
  for (let i = 0; i < RELOADS; i++) hostReload.push(await reloadToAll(app.driver, total));
  await app.driver.findElement(By.css('[data-testid="filter-state"] option[value="pending_review"]')).click();
  await app.driver.findElement(By.css('[data-testid="filter-host"] option[value="h0"]')).click();
  const hostChange = await changeToRow(app.driver, "h0", onHost(0), CHANGES);
  const ssh = [];
  for (let i = 0; i < CHANGES; i++) {
    const t0 = Date.now();
    onHost(0)("runs", "show", "1");
    ssh.push(Date.now() - t0);
  }
  await app.quit();

  const label = `${HOSTS} hosts x ${RUNS} runs`;
  const r1 = report(`reload to every run counted, ${total} runs on this machine`, baseReload);
  const r2 = report(`reload to every run counted, ${label}`, hostReload);
  const c1 = report(`reject from a terminal to the row updated, this machine`, baseChange);
  const c2 = report(`reject from a terminal to the row updated, a host (with the CLI's ssh)`, hostChange);
  const s = report(`the CLI alone on a host (its ssh connection and one call)`, ssh);
  ratio(`reload, ${label} / ${total} local (p50)`, r2.p50, r1.p50);
  ratio(`change to row, host / local (p50)`, c2.p50, c1.p50);
  writeFigures("hosts-window", {
    hosts_reload_all_counted_p50_ms: r2.p50,
    local_reload_all_counted_p50_ms: r1.p50,
    hosts_change_to_row_p50_ms: c2.p50,
    local_change_to_row_p50_ms: c1.p50,
    hosts_cli_alone_p50_ms: s.p50,
  });
} finally {
  for (const h of hosts) h.child.stdin.end();
  dropTemplates();
}

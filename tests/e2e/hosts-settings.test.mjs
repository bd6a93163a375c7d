// Hosts managed from the window: Settings -> Hosts adds a real ssh host
// (an sshd in a network namespace of its own under a Unix user of its own),
// telling each step as it happens; a workspace is added there from
// Settings and the host's run shows in the fleet; Upgrade reinstalls and
// restarts its engine; Remove stops it there and drops its rows. A host
// added or removed from a terminal while the window is open shows and goes
// without a reload. Run by run.sh.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join, dirname } from "node:path";
import { openApp, eventually, By, until } from "./lib.mjs";
import { startHost, provision } from "./ssh-host.mjs";

const { OVERSEER_CLI, OVERSEER_APP } = process.env;
const bin = dirname(OVERSEER_APP);

let app;
let driver;
let host;

const byTest = (id, extra = "") => By.css(`[data-testid="${id}"]${extra}`);
const hostItem = (name) => byTest("host", `[data-host="${name}"]`);

/** The CLI of this machine (its hosts file, the host's ssh config). */
function cli(...args) {
  return execFileSync(OVERSEER_CLI, args, {
    encoding: "utf8",
    env: { ...process.env, OVERSEER_DATA_DIR: app.dataDir, OVERSEER_CONFIG_DIR: app.configDir, OVERSEER_SSH_CONFIG: host.ssh_config },
  });
}
const hostsHere = () => JSON.parse(cli("hosts", "list", "--json"));
/** Whether an overseer engine runs on the host (its detached pid file's process). */
const engineRunsThere = () =>
  host.ssh('p=$(cat "${XDG_DATA_HOME:-$HOME/.local/share}/overseer/serve.pid" 2>/dev/null); [ -n "$p" ] && kill -0 "$p" 2>/dev/null && echo yes || echo no') === "yes";

async function reveal(el) {
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  return el;
}
async function click(locator) {
  await (await reveal(await driver.findElement(locator))).click();
}
async function fill(locator, text) {
  const el = await reveal(await driver.findElement(locator));
  await el.clear();
  if (text) await el.sendKeys(text);
}
async function openSettings() {
  await click(By.css('button[data-nav="settings"]'));
  await driver.wait(until.elementLocated(By.css('[data-testid="settings"][data-loaded="1"]')), 10_000);
}
/** The text of host `name`'s setup log, read in one go (it grows as steps come). */
const setupLog = (name) =>
  driver.executeScript(
    "const el = document.querySelector(`[data-testid=\"host-setup-log\"][data-host=\"${arguments[0]}\"]`); return el ? el.textContent : null;",
    name,
  );
/** Host `name`'s status in Settings, read in one go. */
const statusOf = (name) =>
  driver.executeScript("const el = document.querySelector(`[data-testid=\"host\"][data-host=\"${arguments[0]}\"]`); return el ? el.dataset.status : null;", name);

before(async () => {
  host = (await startHost(bin)).info;
  provision(host, bin);
  app = await openApp();
  driver = app.driver;
});

after(async () => {
  await app?.quit();
  await host?.stop();
});

test("a host added in Settings is checked, installed and linked, step by step; its run joins the fleet", async () => {
  await openSettings();
  await driver.wait(until.elementLocated(byTest("no-hosts")), 10_000);

  // A wrong address is refused in the form, before anything reaches ssh.
  await fill(byTest("host-add-name"), "box");
  await fill(byTest("host-add-url"), "box.example:22");
  await click(byTest("host-add-submit"));
  await eventually(driver, async () => /ssh:\/\//.test(await driver.findElement(byTest("host-add-form")).getText()), 5_000, "the form to say what an address looks like");
  assert.deepEqual(hostsHere(), [], "nothing was added");

  await fill(byTest("host-add-url"), host.url);
  await fill(byTest("host-add-ssh-config"), host.ssh_config);
  await click(byTest("host-add-submit"));
  // Each step told as it happens, then the host live.
  const log = await eventually(driver, async () => {
    const text = await setupLog("box");
    return text && /pinned/.test(text) ? text : null;
  }, 120_000, "the setup's steps up to the pinned key");
  assert.match(log, /bubblewrap/);
  assert.match(log, /SHA-256 [0-9a-f]{64}/);
  await eventually(driver, async () => (await statusOf("box")) === "live", 60_000, "box to be live");
  const added = hostsHere();
  assert.equal(added.length, 1);
  assert.equal(added[0].name, "box");
  assert.match(await driver.findElement(hostItem("box")).findElement(byTest("host-fingerprint")).getText(), /\S/);

  // A workspace added on the host from Settings, through its engine there.
  const picker = await reveal(await driver.findElement(byTest("workspace-host")));
  await eventually(driver, async () => (await picker.findElements(By.css('option[value="box"]'))).length === 1, 10_000, "box offered for a workspace");
  await picker.findElement(By.css('option[value="box"]')).click();
  await fill(byTest("workspace-add-path"), `${host.home}/repo`);
  await fill(byTest("workspace-add-name"), "there");
  await click(byTest("workspace-add-submit"));
  await driver.wait(until.elementLocated(By.css('[data-testid="workspace-added"][data-host="box"]')), 20_000);
  const there = JSON.parse(cli("--host", "box", "workspace", "list", "--json")).find((w) => w.name === "there");
  assert.equal(there?.path, `${host.home}/repo`, "the workspace is on the host's engine");
  assert.equal(JSON.parse(app.cli("workspace", "list", "--json")).length, 0, "and not on this machine's");

  // The new host's engine serves runs the window follows.
  const out = cli("--host", "box", "task", "start", "--workspace", "there", "--agent", "demo", "--scenario", "happy",
    "--title", "Added from Settings", "--prompt", "Play the happy scenario");
  const run = Number(/(\d+)\s*$/.exec(out.trim())?.[1]);
  await click(By.css('button[data-nav="fleet"]'));
  await driver.wait(until.elementLocated(By.css(`[role="row"][data-run-id="${run}"][data-host="box"]`)), 30_000);
  cli("--host", "box", "runs", "abort", String(run));
});

test("Upgrade reinstalls and restarts the host's engine, and the link comes back", async () => {
  await openSettings();
  const before = hostsHere()[0];
  await click(By.css('[data-testid="host"][data-host="box"] [data-testid="host-upgrade"]'));
  await eventually(driver, async () => /running; key .* unchanged|unchanged/.test((await setupLog("box")) ?? ""), 120_000, "the upgrade's steps");
  await eventually(driver, async () => (await statusOf("box")) === "live", 60_000, "box live again");
  const after = hostsHere()[0];
  assert.equal(after.engine_key, before.engine_key, "the same pinned key");
  assert.ok(engineRunsThere(), "the engine runs on the host");
});

test("Remove stops the host's engine there and drops its rows; nothing of it is left in the window", async () => {
  await openSettings();
  // The upgrade's own call may still be finishing after the link came back:
  // Remove is offered once no setup of the host runs.
  const remove = By.css('[data-testid="host"][data-host="box"] [data-testid="host-remove"]');
  await eventually(driver, async () => (await driver.findElement(remove)).isEnabled(), 60_000, "Remove to be offered");
  await click(remove);
  await click(byTest("host-remove-confirm"));
  await driver.wait(until.elementLocated(byTest("no-hosts")), 60_000);
  assert.deepEqual(hostsHere(), []);
  assert.equal(engineRunsThere(), false, "the host's engine was stopped");
  await click(By.css('button[data-nav="fleet"]'));
  await eventually(driver, async () => (await driver.findElements(By.css('[role="row"][data-host="box"]'))).length === 0, 10_000, "the host's rows gone");
  assert.equal((await driver.findElements(By.css('[data-testid="filter-host"] option[value="box"]'))).length, 0, "no filter for a forgotten host");
});

test("a host added and removed from a terminal shows and goes in the open window", async () => {
  await openSettings();
  const printed = cli("hosts", "add", "fromterm", host.url);
  await driver.wait(until.elementLocated(hostItem("fromterm")), 30_000);
  await eventually(driver, async () => (await statusOf("fromterm")) === "live", 60_000, "the terminal's host live in the window");
  // The steps the terminal printed are told in the window too.
  const pinned = /engine signing key pinned: (\S+)/.exec(printed)?.[1];
  assert.ok(pinned, printed);
  await eventually(driver, async () => ((await setupLog("fromterm")) ?? "").includes(pinned), 20_000, "the terminal's steps in the window");
  cli("hosts", "remove", "fromterm");
  await driver.wait(until.elementLocated(byTest("no-hosts")), 30_000);
});

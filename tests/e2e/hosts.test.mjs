// One fleet over hosts, in the real window: a real sshd in a network
// namespace of its own under a Unix user of its own (overseer-test-host),
// `overseer hosts add` copying the real binary there, the real demo agent
// running contained on that host, and the app reaching the host's engine
// only through `ssh HOST overseer bridge`. The window shows the host's run
// beside this machine's, answers its plan and tool call, merges it there; a
// cut link greys the host's rows and refuses decisions with the reason, and
// a restored one resyncs. Run by run.sh (Xvfb + session bus + WebKitWebDriver).
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
let host; // { user, addr, url, home, ssh_config, send(line) }
let local; // this machine's run
let remote; // the host's run

const ssh = (command) => host.ssh(command);

/** The CLI on the host's engine, through ssh (as a user's terminal would). */
function onHost(...args) {
  return execFileSync(OVERSEER_CLI, ["--host", "box", ...args], {
    encoding: "utf8",
    env: { ...process.env, OVERSEER_DATA_DIR: join(app.work, "data"), OVERSEER_CONFIG_DIR: app.configDir, OVERSEER_SSH_CONFIG: host.ssh_config },
  });
}

const row = (id, hostName) => By.css(`[role="row"][data-run-id="${id}"][data-host="${hostName}"]`);
const card = (sel) => By.css(`article${sel}`);

async function press(element) {
  const el = await element;
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  await el.click();
}

/** The pending card of `kind` on the host's run `run`: its gate id. */
async function hostGate(run, kind, ms = 30_000) {
  return eventually(driver, async () => {
    for (const el of await driver.findElements(card(`[data-host="box"][data-run-id="${run}"][data-kind="${kind}"]`))) {
      return Number(await el.getAttribute("data-gate-id"));
    }
    return null;
  }, ms, `a ${kind} card of run ${run} on box`);
}

const hostCard = (id) => driver.findElement(card(`[data-host="box"][data-gate-id="${id}"]`));
const gateOnHost = (id) => JSON.parse(onHost("gates", "show", String(id), "--json"));

before(async () => {
  host = (await startHost(bin)).info;
  // The host's own agent, profile and repository, put there over ssh.
  provision(host, bin);

  app = await openApp({
    configure(configDir, work) {
      // Added before the app starts, as a user adds a host from a terminal
      // (the host keeps the ssh config it was added with: the app's link
      // uses it too).
      execFileSync(OVERSEER_CLI, ["hosts", "add", "box", host.url], {
        encoding: "utf8",
        env: { ...process.env, OVERSEER_DATA_DIR: join(work, "data"), OVERSEER_CONFIG_DIR: configDir, OVERSEER_SSH_CONFIG: host.ssh_config },
      });
    },
  });
  driver = app.driver;
  app.workspace("here");
  local = app.startDemo("here", "happy", "Greeting on this machine");
  onHost("workspace", "add", `${host.home}/repo`, "--name", "there");
  const out = onHost("task", "start", "--workspace", "there", "--agent", "demo", "--scenario", "happy",
    "--title", "Greeting on box", "--prompt", "Play the happy scenario: update the greeting");
  remote = Number(/(\d+)\s*$/.exec(out.trim())?.[1]);
  assert.ok(Number.isFinite(remote), out);
});

after(async () => {
  await app?.quit();
  await host?.stop();
});

test("the host's run is in the one fleet beside this machine's, with its host", async () => {
  await driver.findElement(By.css('button[data-nav="fleet"]')).click();
  const there = await driver.wait(until.elementLocated(row(remote, "box")), 30_000);
  assert.match(await there.findElement(By.css('[data-testid="run-host"]')).getText(), /box/);
  assert.match(await there.getText(), /Greeting on box/);
  await app.shot("hosts-fleet");
  // This machine's run keeps its own row (the ids may be the same number).
  await driver.wait(until.elementLocated(row(local, "")), 10_000);
  // The host filter shows the host's rows only.
  await driver.findElement(By.css('[data-testid="filter-host"] option[value="box"]')).click();
  await eventually(driver, async () => (await driver.findElements(row(local, ""))).length === 0, 5_000, "this machine's row filtered out");
  assert.equal((await driver.findElements(row(remote, "box"))).length, 1);
  await driver.findElement(By.css('[data-testid="filter-host"] option[value=""]')).click();
});

test("the host's plan and tool call are answered from the window and reach the agent there", async () => {
  await driver.findElement(By.css('button[data-nav="inbox"]')).click();
  const plan = await hostGate(remote, "plan");
  assert.match(await (await hostCard(plan)).findElement(By.css('[data-testid="gate-host"]')).getText(), /box/);
  await press((await hostCard(plan)).findElement(By.css('button[data-action="approve"]')));
  await eventually(driver, async () => gateOnHost(plan).status === "decided", 20_000, "the plan decided on the host");
  const call = await hostGate(remote, "tool_call");
  const clicked = Date.now();
  await press((await hostCard(call)).findElement(By.css('button[data-action="yes"]')));
  await eventually(driver, async () => gateOnHost(call).status === "decided", 20_000, "the tool call decided on the host");
  console.log(`measured: a host's tool call, click to decided on the host (with the CLI's own ssh read): ${Date.now() - clicked} ms`);
  const decided = gateOnHost(call);
  assert.equal(decided.decision.option, "yes");
  // Recorded on the host as the owner's window, not a terminal.
  assert.deepEqual(decided.decision.actor, { kind: "user", name: "app" });

  // Its further asks answered from the window too, until its merge review;
  // approved there, it merges on the host.
  let seen = "";
  const review = await eventually(driver, async () => {
    seen = onHost("gates", "list").trim();
    for (const el of await driver.findElements(card(`[data-host="box"][data-run-id="${remote}"][data-kind="tool_call"]`))) {
      await press(el.findElement(By.css('button[data-action="yes"]')));
    }
    return hostGate(remote, "merge_review", 1_000).catch(() => null);
  }, 90_000, "the host's run to wait for review").catch((e) => {
    throw new Error(`${e.message}; pending on the host: ${seen}`);
  });
  await press((await hostCard(review)).findElement(By.css('button[data-action="approve"]')));
  await eventually(driver, async () => ssh("git -C repo rev-list --count main") !== "1", 60_000, "the run's work merged into the host's main");
  assert.equal(gateOnHost(review).decision.option, "approve");
});

test("a cut link greys the host's rows, says since when, refuses a decision with the reason; restored, it resyncs", async () => {
  // A second run on the host waits on its plan.
  const out = onHost("task", "start", "--workspace", "there", "--agent", "demo", "--scenario", "happy",
    "--title", "Waits on box", "--prompt", "Play the happy scenario");
  const waiting = Number(/(\d+)\s*$/.exec(out.trim())?.[1]);
  await driver.findElement(By.css('button[data-nav="inbox"]')).click();
  const plan = await hostGate(waiting, "plan");

  await host.send("cut");
  await driver.findElement(By.css('button[data-nav="fleet"]')).click();
  const trouble = await driver.wait(until.elementLocated(By.css('[data-testid="host-trouble"][data-host="box"]')), 60_000);
  assert.match(await trouble.getText(), /box.*unreachable since/);
  await eventually(driver, async () => /\bdown\b/.test(await driver.findElement(row(waiting, "box")).getAttribute("class")), 10_000, "the host's row greyed");
  // This machine's rows are untouched.
  assert.doesNotMatch(await driver.findElement(row(local, "")).getAttribute("class"), /\bdown\b/);
  await app.shot("hosts-unreachable");

  // A decision on the host's card is refused with the reason, never queued.
  await driver.findElement(By.css('button[data-nav="inbox"]')).click();
  const el = await hostCard(plan);
  const approve = await el.findElement(By.css('button[data-action="approve"]'));
  if (await approve.isEnabled()) {
    await press(approve);
    await eventually(driver, async () => /unreachable/.test(await (await hostCard(plan)).getText()), 10_000, "the refusal on the card");
  } else {
    assert.match(await approve.getAttribute("title") ?? "", /unreachable/);
  }

  await host.send("restore");
  await driver.findElement(By.css('button[data-nav="fleet"]')).click();
  // Retry now, rather than waiting for the link's backoff.
  await press(driver.findElement(By.css('[data-testid="host-trouble"][data-host="box"] [data-testid="host-retry"]')));
  await eventually(driver, async () => (await driver.findElements(By.css('[data-testid="host-trouble"][data-host="box"]'))).length === 0, 90_000, "the host back");
  // The refused decision was never applied: the plan still waits there.
  assert.equal(gateOnHost(plan).status, "pending");
  await driver.findElement(By.css('button[data-nav="inbox"]')).click();
  await press((await hostCard(plan)).findElement(By.css('button[data-action="approve"]')));
  await eventually(driver, async () => gateOnHost(plan).status === "decided", 20_000, "the plan decided on the host after the link came back");
  onHost("runs", "abort", String(waiting));
});

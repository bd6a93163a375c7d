// The harness every end-to-end test file shares: a fresh data dir and config
// dir per file, the real app binary driven by WebKitWebDriver, the real CLI
// talking to the app's engine over its socket, the real database file, and
// screenshots under target/e2e/. Run by run.sh (Xvfb + session bus).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Builder, By, until } from "selenium-webdriver";

const { OVERSEER_APP, OVERSEER_CLI, E2E_OUT, WEBDRIVER_URL } = process.env;

/** Opens the app on an empty data dir of its own; `await app.quit()` at the end.
 * Options: `configure(configDir, work)` runs before the app starts (to write
 * its overseer.toml); `webdriverUrl` names another WebKitWebDriver (the app
 * inherits that driver's environment). */
export async function openApp({ configure, webdriverUrl } = {}) {
  const work = mkdtempSync(join(tmpdir(), "overseer-e2e-"));
  const dataDir = join(work, "data");
  const configDir = join(work, "config");
  const env = { ...process.env, OVERSEER_DATA_DIR: dataDir, OVERSEER_CONFIG_DIR: configDir };
  if (configure) {
    mkdirSync(configDir, { recursive: true });
    configure(configDir, work);
  }
  const driver = await new Builder()
    .usingServer(webdriverUrl ?? WEBDRIVER_URL)
    .withCapabilities({
      browserName: "wry",
      "webkitgtk:browserOptions": {
        binary: OVERSEER_APP,
        args: ["--data-dir", dataDir, "--config-dir", configDir],
      },
    })
    .build();
  await driver.wait(until.elementLocated(By.css('body[data-ready="1"]')), 30_000);

  const app = {
    driver,
    dataDir,
    configDir,
    work,
    /** The CLI against this app's engine; returns stdout. */
    cli(...args) {
      return execFileSync(OVERSEER_CLI, args, { encoding: "utf8", env });
    },
    /** Reads the real database file (the app keeps it open in WAL mode). */
    sql: (query, ...params) => readDb(dataDir, query, ...params),
    async shot(name) {
      writeFileSync(join(E2E_OUT, `${name}.png`), await driver.takeScreenshot(), "base64");
    },
    /** A throwaway git repository registered as workspace `name`. */
    workspace: (name, sensors = []) => addWorkspace(app.cli, work, name, sensors),
    /** Starts a demo agent playing `scenario`; returns the run id. */
    startDemo: (workspace, scenario, title) => startDemo(app.cli, workspace, scenario, title),
    async quit() {
      await driver.quit();
      rmSync(work, { recursive: true, force: true });
    },
  };
  return app;
}

/** Reads the database file of the engine on `dataDir` (kept open by it in
 * WAL mode). */
export function readDb(dataDir, query, ...params) {
  const py = "import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); print(json.dumps(c.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()))";
  return JSON.parse(execFileSync("python3", ["-c", py, join(dataDir, "overseer.db"), query, JSON.stringify(params)], { encoding: "utf8" }));
}

/** A throwaway git repository under `work`, registered with `cli` as
 * workspace `name`. */
export function addWorkspace(cli, work, name, sensors = []) {
  const repo = join(work, name);
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "greeting.txt"), "hello\n");
  writeFileSync(join(repo, "README.md"), "# Demo repository\n");
  const git = (...a) => execFileSync("git", ["-C", repo, ...a], { encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=Overseer", "-c", "user.email=e2e@overseer.invalid", "commit", "-q", "-m", "init");
  const args = ["workspace", "add", repo, "--name", name];
  for (const s of sensors) args.push("--sensor", s);
  cli(...args);
  return repo;
}

/** Starts a demo agent playing `scenario` through `cli`; returns the run id. */
export function startDemo(cli, workspace, scenario, title = `Demo agent: ${scenario}`) {
  const out = cli("task", "start", "--workspace", workspace, "--agent", "demo", "--scenario", scenario,
    "--title", title, "--prompt", `Play the ${scenario} scenario: update the greeting and the notes`);
  const id = Number(/(\d+)\s*$/.exec(out.trim())?.[1] ?? /run (\d+)/.exec(out)?.[1]);
  if (!Number.isFinite(id)) throw new Error(`no run id in: ${out}`);
  return id;
}

/** Waits until `f` returns something truthy (polling the DOM, which is what
 * a test can do; the app itself never polls). */
export async function eventually(driver, f, ms = 15_000, what = "condition") {
  let last;
  await driver.wait(async () => {
    try {
      last = await f();
      return Boolean(last);
    } catch {
      return false;
    }
  }, ms, `timed out waiting for ${what}`);
  return last;
}

/** A dbus-monitor of the test file's own on the session bus run.sh set up
 * (the shared target/e2e/dbus-notify.log is also written by other runs): the
 * Notify calls made while the file runs, in memory. */
export async function watchNotifications() {
  const child = spawn("dbus-monitor", ["--session", "interface='org.freedesktop.Notifications'"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  let text = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d) => (text += d));
  // It reports its own connection first: from then on it sees every call.
  await new Promise((resolve, reject) => {
    child.stdout.once("data", resolve);
    child.once("error", reject);
  });
  return {
    /** Everything seen so far; `mark()` for a position to read from. */
    mark: () => text.length,
    since: (mark) => text.slice(mark),
    stop: () => child.kill(),
  };
}

export { By, until };

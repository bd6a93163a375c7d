// The harness of the browser tests: a real `overseer serve --web` on a data
// dir of its own (the engine, its socket for the CLI, its web server on a
// free loopback port), and a real Chromium driven by chromedriver, with a
// phone's viewport (390x844, touch). Run by run.sh (headless: no screen or
// bus needed). Build first: `make app` (the UI is built into the binary).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Builder, By, until } from "selenium-webdriver";
import chrome from "selenium-webdriver/chrome.js";
import { addWorkspace, eventually, readDb, startDemo } from "../lib.mjs";

const { OVERSEER_CLI, E2E_OUT, CHROMIUM = "/usr/bin/chromium", CHROMEDRIVER = "/usr/bin/chromedriver" } = process.env;

/** A free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts `overseer serve --web 127.0.0.1:<port>` on a fresh data dir;
 * `await engine.stop()` at the end. `engine.kill9()` and `engine.restart()`
 * for the crash tests (same data dir, same port). `config`: the text of
 * its overseer.toml (agent profiles), written before it starts. */
export async function startEngine({ config } = {}) {
  const work = mkdtempSync(join(tmpdir(), "overseer-web-e2e-"));
  const dataDir = join(work, "data");
  const configDir = join(work, "config");
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(configDir, { recursive: true });
  if (config !== undefined) writeFileSync(join(configDir, "overseer.toml"), config);
  const env = { ...process.env, OVERSEER_DATA_DIR: dataDir, OVERSEER_CONFIG_DIR: configDir };
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let child = null;
  let log = "";

  async function launch() {
    child = spawn(OVERSEER_CLI, ["serve", "--web", `127.0.0.1:${port}`], { env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (d) => (log += d));
    child.stderr.on("data", (d) => (log += d));
    const started = Date.now();
    // Up once the page is served (the UI built into the binary).
    for (;;) {
      if (child.exitCode !== null) throw new Error(`overseer serve exited (${child.exitCode}):\n${log}`);
      try {
        const res = await fetch(`${url}/`);
        if (res.ok) break;
      } catch {
        // not yet
      }
      if (Date.now() - started > 30_000) throw new Error(`overseer serve did not answer on ${url}:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  await launch();
  const engine = {
    url,
    port,
    dataDir,
    configDir,
    /** The engine's process id (for its memory). */
    get pid() {
      return child.pid;
    },
    work,
    get log() {
      return log;
    },
    /** The CLI against this engine (over its socket); returns stdout. */
    cli(...args) {
      return execFileSync(OVERSEER_CLI, args, { encoding: "utf8", env });
    },
    /** Reads the real database file. */
    sql: (query, ...params) => readDb(dataDir, query, ...params),
    /** A one-time pairing code for `person`'s device `name`. */
    pairingCode(person, name) {
      const out = engine.cli("devices", "pair", "--person", person, "--name", name, "--json");
      const { code } = JSON.parse(out);
      if (typeof code !== "string") throw new Error(`no pairing code in: ${out}`);
      return code;
    },
    /** A throwaway git repository registered as workspace `name`. */
    workspace: (name) => addWorkspace(engine.cli, work, name),
    /** Starts a demo agent playing `scenario`; returns the run id. */
    startDemo: (workspace, scenario, title) => startDemo(engine.cli, workspace, scenario, title),
    /** SIGKILL: no shutdown at all. */
    async kill9() {
      const c = child;
      c.kill("SIGKILL");
      if (c.exitCode === null && c.signalCode === null) await new Promise((r) => c.once("exit", r));
    },
    /** Starts the engine again on the same data dir and port. */
    restart: launch,
    async stop() {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await new Promise((r) => child.once("exit", r));
      }
      rmSync(work, { recursive: true, force: true });
    },
  };
  return engine;
}

/** A Chromium with a phone's screen (390x844 CSS pixels, touch), headless. */
export function openPhone() {
  return openChromium((o) => o.setMobileEmulation({ deviceMetrics: { width: 390, height: 844, pixelRatio: 3, touch: true } }));
}

/** A Chromium with a desktop's window (1280x900), headless: a second
 * person's browser (its own profile, so its own cookies). */
export function openDesktop() {
  return openChromium((o) => o.addArguments("--window-size=1280,900"));
}

async function openChromium(configure) {
  const options = new chrome.Options()
    .setChromeBinaryPath(CHROMIUM)
    .addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage");
  configure(options);
  const service = new chrome.ServiceBuilder(CHROMEDRIVER);
  const driver = await new Builder().forBrowser("chrome").setChromeOptions(options).setChromeService(service).build();
  return {
    driver,
    async shot(name) {
      if (E2E_OUT) writeFileSync(join(E2E_OUT, `${name}.png`), await driver.takeScreenshot(), "base64");
    },
    quit: () => driver.quit(),
  };
}

export { eventually, By, until };

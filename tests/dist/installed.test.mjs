// The installed packages in the real window: for each install run.sh prepared
// (the .deb unpacked into a temporary root, the AppImage run with
// APPIMAGE_EXTRACT_AND_RUN=1), a fresh data dir seeded with the installed
// `overseer demo seed --settled`, the installed app opened on it by
// WebKitWebDriver under Xvfb, and the fleet read from the window. Then the
// installed pieces must find each other where they are: the app's engine
// runs the installed demo agent (a plan gate shows it spoke ACP) and hands
// launched agents the installed `overseer` as their MCP server (a probe
// agent records what it was given). Run by tests/dist/run.sh.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join, dirname } from "node:path";
import { eventually, By, until } from "../e2e/lib.mjs";

// selenium-webdriver is the e2e harness's (tests/e2e/node_modules).
const { Builder } = createRequire(new URL("../e2e/lib.mjs", import.meta.url))("selenium-webdriver");

const { DIST_INSTALLS, E2E_OUT, WEBDRIVER_URL } = process.env;
const installs = JSON.parse(DIST_INSTALLS ?? "[]");
const ROW = '[role="row"][data-run-id]';

test("run.sh named at least one install to test", () => {
  assert.ok(installs.length > 0, "DIST_INSTALLS is empty: run tests/dist/run.sh, not this file");
});

for (const install of installs) {
  describe(`installed from the ${install.name}`, () => {
    const work = mkdtempSync(join(tmpdir(), `overseer-dist-${install.name}-`));
    const dataDir = join(work, "data");
    const configDir = join(work, "config");
    const capture = join(work, "probe");
    const env = { ...process.env, OVERSEER_DATA_DIR: dataDir, OVERSEER_CONFIG_DIR: configDir };
    delete env.OVERSEER_CLI;
    const cli = (...args) => execFileSync(install.cli, args, { encoding: "utf8", env });
    const siblings = new RegExp(install.binDir);
    let driver;
    let seeded;

    before(async () => {
      // The user's first steps: seed a demo fleet with the installed CLI (no
      // engine is running: the CLI writes the store itself), then start the app.
      const out = cli("demo", "seed", "--settled");
      seeded = Number(/seeded (\d+) demo runs/.exec(out)?.[1]);
      assert.ok(seeded > 0, `the installed CLI seeded a fleet: ${out}`);
      // A probe agent: the demo agent behind a tee that records what the
      // engine says to it (session/new carries the MCP servers).
      mkdirSync(capture, { recursive: true });
      const probe = join(work, "probe-agent");
      writeFileSync(probe, '#!/bin/sh\ntee "$PROBE_OUT" | "$PROBE_AGENT"\n');
      chmodSync(probe, 0o755);
      writeFileSync(join(configDir, "overseer.toml"), [
        "[agents.probe]",
        `command = ${JSON.stringify(probe)}`,
        'mode = "default"',
        `write_paths = [${JSON.stringify(capture)}]`,
        `read_paths = [${JSON.stringify(dirname(install.demoAgent))}]`,
        `env = { PROBE_OUT = ${JSON.stringify(join(capture, "acp-in.jsonl"))}, PROBE_AGENT = ${JSON.stringify(install.demoAgent)} }`,
        "",
      ].join("\n"));
      driver = await new Builder()
        .usingServer(WEBDRIVER_URL)
        .withCapabilities({
          browserName: "wry",
          "webkitgtk:browserOptions": { binary: install.app, args: ["--data-dir", dataDir, "--config-dir", configDir] },
        })
        .build();
      await driver.wait(until.elementLocated(By.css('body[data-ready="1"]')), 60_000);
    });

    after(async () => {
      await driver?.quit();
      rmSync(work, { recursive: true, force: true });
    });

    test("the window shows the seeded demo fleet", async () => {
      const count = await eventually(driver, async () => {
        const t = await driver.findElement(By.css('[data-testid="row-count"]')).getText();
        const m = /([\d,]+) of ([\d,]+) runs/.exec(t);
        return m && Number(m[2].replaceAll(",", "")) === seeded ? m : null;
      }, 20_000, `${seeded} runs counted`);
      assert.equal(Number(count[1].replaceAll(",", "")), seeded, "every seeded run is shown");
      const listed = JSON.parse(cli("runs", "list", "--json"));
      assert.equal(listed.length, seeded, "the CLI, through the app's engine, sees the same fleet");
      const rows = await driver.executeScript(`return [...document.querySelectorAll('${ROW}')].map((r) => ({
        id: Number(r.dataset.runId), title: r.querySelector('[data-col="task"] .title')?.textContent ?? "" }));`);
      assert.ok(rows.length > 0, "rows are in the DOM");
      for (const r of rows) {
        const run = listed.find((l) => l.id === r.id);
        assert.ok(run, `row ${r.id} is a seeded run`);
        assert.equal(r.title, run.task_title, `row ${r.id} shows its task's title`);
      }
      assert.ok((await driver.findElements(By.css('[data-testid="needs-you"]'))).length > 0, "some seeded runs need the user");
      // Let the window paint before the screenshot (the capture can lag the DOM).
      await driver.executeAsyncScript("const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 500)));");
      writeFileSync(join(E2E_OUT, `${install.name}-fleet.png`), await driver.takeScreenshot(), "base64");
    });

    test("the app's engine finds the installed demo agent beside itself", () => {
      const demo = JSON.parse(cli("agents", "list", "--json")).find((a) => a.name === "demo");
      assert.ok(demo, "the engine lists the demo profile");
      assert.deepEqual(demo.needs, [], `the demo agent is ready: ${JSON.stringify(demo)}`);
      assert.match(demo.command, /\/overseer-demo-agent$/);
      assert.match(demo.command.replace(/\/overseer-demo-agent$/, ""), siblings, "the demo agent is the one installed beside the app");
    });

    test("a demo agent started from the installed CLI runs in the installed app's engine", async () => {
      const repo = join(work, "repo");
      mkdirSync(join(repo, "src"), { recursive: true });
      writeFileSync(join(repo, "src", "greeting.txt"), "hello\n");
      const git = (...a) => execFileSync("git", ["-C", repo, ...a], { encoding: "utf8" });
      git("init", "-q", "-b", "main");
      git("add", "-A");
      git("-c", "user.name=Overseer", "-c", "user.email=dist@overseer.invalid", "commit", "-q", "-m", "init");
      cli("workspace", "add", repo, "--name", "dist");
      const start = (agent) => {
        const out = cli("task", "start", "--workspace", "dist", "--agent", agent, "--scenario", "happy",
          "--title", `Installed ${agent}`, "--prompt", "Play the happy scenario: update the greeting");
        const id = Number(/(\d+)\s*$/.exec(out.trim())?.[1] ?? /run (\d+)/.exec(out)?.[1]);
        assert.ok(Number.isFinite(id), `a run id in: ${out}`);
        return id;
      };
      const run = start("demo");
      // Its row, live; then every gate the agent raises decided from the CLI
      // until the run waits for the user's review: the installed agent ran
      // in its sandbox and committed its work.
      await driver.wait(until.elementLocated(By.css(`[role="row"][data-run-id="${run}"]`)), 15_000);
      await eventually(driver, () => {
        for (const g of JSON.parse(cli("gates", "list", "--json")).filter((g) => g.run_id === run && g.status === "pending")) {
          const option = { plan: "approve", tool_call: "yes", step_review: "proceed" }[g.kind];
          if (option) cli("gates", "decide", String(g.id), "--option", option);
          if (g.kind === "merge_review") return true;
        }
        return false;
      }, 90_000, "the installed demo agent's run to reach its merge review");
      const state = await eventually(driver, async () => {
        const s = await driver.findElement(By.css(`[role="row"][data-run-id="${run}"]`)).getAttribute("data-state");
        return s === "pending_review" ? s : null;
      }, 15_000, "its row to show pending review");
      assert.equal(state, "pending_review");

      // The probe: what the engine told a launched agent in session/new.
      const probeRun = start("probe");
      const file = join(capture, "acp-in.jsonl");
      const servers = await eventually(driver, () => {
        if (!existsSync(file)) return null;
        for (const line of readFileSync(file, "utf8").split("\n")) {
          try {
            const m = JSON.parse(line);
            if (m.method === "session/new") return m.params?.mcpServers ?? [];
          } catch {
            // a partial line: read again
          }
        }
        return null;
      }, 60_000, `run ${probeRun}'s agent to receive session/new`);
      const overseer = servers.find((s) => s.name === "overseer");
      assert.ok(overseer, `the engine gave the agent Overseer's MCP server: ${JSON.stringify(servers)}`);
      assert.match(overseer.command, /\/overseer$/);
      assert.match(overseer.command.replace(/\/overseer$/, ""), siblings, "the MCP server is the installed `overseer` beside the app");
      assert.ok(statSync(overseer.command).mode & 0o111, `${overseer.command} is executable`);
      assert.equal(overseer.args?.[0], "mcp");
    });
  });
}

// Settings and the run page follow every surface: a workspace's rules,
// checks and supervisor changed with the CLI, a workspace added with the
// CLI, and a task's own rules changed with the CLI all show in the open
// window without a reload, from the engine's workspace_changed /
// task_changed events (the window never polls).
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openApp, eventually, By, until } from "./lib.mjs";

let app;
let driver;

const byTest = (id, extra = "") => By.css(`[data-testid="${id}"]${extra}`);
const value = async (id) => (await driver.findElement(byTest(id))).getAttribute("value");

before(async () => {
  app = await openApp();
  driver = app.driver;
  app.workspace("web", ["true"]);
  await driver.findElement(By.css('button[data-nav="settings"]')).click();
  await driver.wait(until.elementLocated(By.css('[data-testid="settings"][data-loaded="1"]')), 10_000);
});

after(async () => {
  await app?.quit();
});

test("rules, checks and the supervisor set with the CLI show in Settings without a reload", async () => {
  assert.equal(await value("rules-allow"), "");
  // A marker on the page: a reload would lose it.
  await driver.executeScript("window.__same_page = true");

  app.cli("workspace", "rules", "--workspace", "web", "--allow", "Bash(npm test:*)", "--deny", "Edit(.env)");
  await eventually(driver, async () => (await value("rules-allow")) === "Bash(npm test:*)", 10_000, "the CLI's rules in the form");
  assert.equal(await value("rules-deny"), "Edit(.env)");

  app.cli("workspace", "checks", "--workspace", "web", "--sensor", "npm test", "--sensor", "npm run lint");
  await eventually(driver, async () => {
    const inputs = await driver.findElements(byTest("sensor"));
    return (await Promise.all(inputs.map((i) => i.getAttribute("value")))).join("|") === "npm test|npm run lint";
  }, 10_000, "the CLI's checks in the form");

  app.cli("supervisor", "configure", "--workspace", "web", "--autonomy", "advisory", "--evaluator", "rules", "--enable");
  await eventually(driver, async () => /on, advisory/.test(await driver.findElement(byTest("policy-source")).getText()), 10_000, "the CLI's supervisor in the form");

  assert.equal(await driver.executeScript("return window.__same_page === true"), true, "no reload");
  await app.shot("settings-follow-cli");
});

test("a workspace added with the CLI joins the picker", async () => {
  const names = async () => Promise.all((await driver.findElements(By.css('[data-testid="workspace-picker"] option'))).map((o) => o.getAttribute("value")));
  assert.deepEqual(await names(), ["web"]);
  app.workspace("api");
  await eventually(driver, async () => (await names()).join(",") === "api,web" || (await names()).join(",") === "web,api", 10_000, "the new workspace in the picker");
  // The picked workspace stays picked.
  assert.equal(await value("workspace-picker"), "web");
  assert.equal(await value("rules-allow"), "Bash(npm test:*)");
});

test("the run page shows its task's own settings, and follows a change from the CLI", async () => {
  const run = app.startDemo("web", "happy", "Task with settings");
  const [[task]] = app.sql("SELECT task_id FROM runs WHERE id = ?", run);
  await driver.findElement(By.css('button[data-nav="fleet"]')).click();
  const title = await driver.wait(until.elementLocated(By.css(`[data-run-id="${run}"]`)), 10_000);
  await driver.executeScript("window.__same_page = true");
  await title.click();
  await driver.actions().sendKeys("\uE007").perform();
  const panel = await driver.wait(until.elementLocated(byTest("task-settings", `[data-task-id="${task}"]`)), 10_000);
  await driver.executeScript("arguments[0].open = true; arguments[0].scrollIntoView({block: 'center'})", panel);
  const setting = async (key) => (await driver.findElement(byTest("task-setting", `[data-key="${key}"]`))).getText();
  await eventually(driver, async () => (await setting("stage")) === "default", 10_000, "the task's settings");
  assert.match(await setting("rules"), /none of its own/);

  app.cli("workspace", "rules", "--workspace", "web", "--task", String(task), "--allow", "Read", "--deny", "Bash(curl:*)");
  await eventually(driver, async () => (await setting("rules")) === "allow Read · deny Bash(curl:*)", 10_000, "the task's rules from the CLI");
  assert.equal(await driver.executeScript("return window.__same_page === true"), true, "no reload");
  // The CLI reads back the same.
  assert.deepEqual(JSON.parse(app.cli("task", "show", String(task), "--json")).settings.permissions, { allow: ["Read"], ask: [], deny: ["Bash(curl:*)"] });
  await app.shot("run-task-settings");
});

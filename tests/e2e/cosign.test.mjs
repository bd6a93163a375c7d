// A co-signed merge review in the real window: the workspace's supervisor
// co-signs merges (its evaluator, a shell script, approves a merge review only
// once the test lets it: a file in the run's worktree, where the evaluator
// runs contained like the run's checks). The user's Approve is a vote: the card stays and
// says it waits for the co-sign, the user's main is untouched; when the
// supervisor approves, the run merges once and the card leaves the inbox.
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openApp, eventually, By, until } from "./lib.mjs";

let app;
let driver;
let repo;
// Relative to the evaluator's working directory, the run's worktree.
const GO = ".git/overseer-test-go";

before(async () => {
  app = await openApp();
  driver = app.driver;
  repo = app.workspace("cosigned");
  const script = `input=$(cat)
case "$input" in
  *'"subject":"step"'*) echo '{"verdict":"continue","rationale":"fine"}'; exit 0;;
  *'"kind":"merge_review"'*) while [ ! -f '${GO}' ]; do sleep 0.1; done;;
esac
echo '{"verdict":"approve","rationale":"looks right"}'`;
  app.cli("supervisor", "configure", "--workspace", "cosigned", "--autonomy", "advisory", "--gate", "merge_review=cosign",
    "--evaluator", "command", "--command", "sh", "--arg=-c", `--arg=${script}`, "--timeout-seconds", "120", "--enable");
  await driver.findElement(By.css('button[data-nav="inbox"]')).click();
  await driver.wait(until.elementLocated(By.css('[data-testid="inbox"]')), 5_000);
});

after(async () => {
  await app?.quit();
});

const main = () => execFileSync("git", ["-C", repo, "rev-parse", "main"], { encoding: "utf8" }).trim();
const merges = () => execFileSync("git", ["-C", repo, "rev-list", "--merges", "main"], { encoding: "utf8" }).trim().split("\n").filter(Boolean).length;
const card = (id) => By.css(`article[data-gate-id="${id}"]`);

test("Approve on a co-signed merge review waits for the co-sign, then the supervisor's approval merges once", async () => {
  const before = main();
  const run = app.startDemo("cosigned", "happy", "Greeting, co-signed");
  // The plan and the edits are decided from the terminal; the review is ours.
  const review = await eventually(driver, () => {
    for (const g of JSON.parse(app.cli("gates", "list", "--json")).filter((g) => g.run_id === run && g.status === "pending")) {
      const option = { plan: "approve", tool_call: "yes", step_review: "proceed" }[g.kind];
      if (option) app.cli("gates", "decide", String(g.id), "--option", option);
      if (g.kind === "merge_review" && g.authority === "cosign") return g;
    }
    return null;
  }, 60_000, "the co-signed merge review");
  const el = await driver.wait(until.elementLocated(card(review.id)), 10_000);
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  await el.findElement(By.css('button[data-action="approve"]')).click();

  const waiting = await eventually(driver, async () => {
    const found = await driver.findElements(By.css(`article[data-gate-id="${review.id}"] [data-testid="gate-cosign"]`));
    return found[0] ?? null;
  }, 10_000, "the card to say it waits for the co-sign").catch(async (e) => {
    // Say what the card and the record show instead.
    const text = await driver.findElement(card(review.id)).getText().catch(() => "(no card)");
    const votes = app.sql("SELECT actor, option FROM decisions WHERE gate_id = ?", review.id);
    throw new Error(`${e.message}\ncard: ${text}\ndecisions: ${JSON.stringify(votes)}`);
  });
  assert.match(await waiting.getText(), /waiting for the co-sign/i);
  assert.equal(main(), before, "nothing merged on the user's approval alone");
  assert.deepEqual(app.sql("SELECT state FROM runs WHERE id = ?", run), [["pending_review"]]);
  assert.deepEqual(app.sql("SELECT status FROM gates WHERE id = ?", review.id), [["pending"]]);
  assert.deepEqual(app.sql("SELECT actor, option FROM decisions WHERE gate_id = ? AND actor = 'user:app'", review.id), [["user:app", "approve"]]);
  await app.shot("cosign-waiting");

  // The supervisor approves: the merge happens, once, and the card leaves.
  writeFileSync(join(app.dataDir, "worktrees", `cosigned-run-${run}`, GO), "");
  await eventually(driver, async () => (await driver.findElements(card(review.id))).length === 0, 30_000, "the card to leave the inbox");
  await eventually(driver, () => app.sql("SELECT state FROM runs WHERE id = ?", run)[0][0] === "released:merged", 10_000, "the run merged");
  assert.equal(merges(), 1);
  assert.deepEqual(app.sql("SELECT decided_by, decided_option FROM gates WHERE id = ?", review.id), [["user:app", "approve"]]);
  assert.match(app.cli("audit", "verify"), /audit log OK/);
});

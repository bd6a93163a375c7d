// External sessions in the real window: an agent outside Overseer (here a
// node script speaking the engine's own socket protocol, as `overseer hook`
// and `overseer mcp` do) asks, and the user answers in the window. The
// session's fleet row wears its badge; its tool call is refused with a reason
// that reaches the asker; its notice is an info item whose reply comes back
// as steering at its next stop; its messages show in the Messages view, held
// back ones with the hub's reason, and the user's reply carries the
// correlation id back to it; its run page offers no diff, and "Stop session"
// refuses its later tool calls.
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createConnection } from "node:net";
import { join } from "node:path";
import { openApp, eventually, By } from "./lib.mjs";

let app;
let driver;
let socketPath;
let run; // the session's run id, as the window shows it
let nextId = 1;

const SESSION = { origin: "claude_code", session_id: "e2e-1", cwd: "/some/abs/dir" };

/** One ask over the engine's Unix socket, as an external session makes it:
 * one JSON line out, one line back when it is decided. Resolves with the
 * parsed answer line. */
function ask(askBody, session = SESSION) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const sock = createConnection(socketPath);
    let buf = "";
    sock.setEncoding("utf8");
    sock.on("connect", () => sock.write(JSON.stringify({ id, method: "session", params: { session, ask: askBody } }) + "\n"));
    sock.on("data", (d) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        sock.end();
        try {
          resolve(JSON.parse(buf.slice(0, nl)));
        } catch (e) {
          reject(e);
        }
      }
    });
    sock.on("error", reject);
    sock.on("close", () => {
      if (!buf.includes("\n")) reject(new Error(`socket closed without an answer to ask ${id}: ${buf}`));
    });
  });
}

/** Clicks an element after scrolling it to the middle of the window. */
async function press(element) {
  const el = await element;
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  await el.click();
}

const find = (css) => driver.findElement(By.css(css));
const text = async (css) => (await find(css)).getText();

before(async () => {
  app = await openApp();
  driver = app.driver;
  socketPath = join(app.dataDir, "overseer.sock");
});

after(async () => {
  await app?.quit();
});

test("an external session's tool call: its badge in the fleet, refused with a reason that reaches the asker", async () => {
  const answer = ask({ ask: "tool_call", key: "k1", tool: "Bash", input: { command: "touch x" }, stage: "pre_tool_use" });
  let settled = false;
  answer.finally(() => (settled = true)).catch(() => {});

  // The fleet row appears on the first ask, with the agent family and where it works.
  run = await eventually(
    driver,
    () => driver.executeScript("return document.querySelector('[data-testid=session-badge]')?.closest('[data-run-id]')?.dataset.runId ?? null"),
    15_000,
    "the session's fleet row",
  );
  run = Number(run);
  const row = `[role=row][data-run-id="${run}"]`;
  assert.equal(await text(`${row} [data-testid=session-badge]`), "Claude Code");
  assert.equal(await find(`${row} [data-testid=session-badge]`).getAttribute("aria-label"), "Claude Code · external");
  const hover = await find(`${row} [data-testid=session-badge]`).getAttribute("title");
  assert.match(hover, /e2e-1/);
  assert.match(hover, /\/some\/abs\/dir/);
  assert.match(await text(`${row} [data-testid=run-title]`), /Claude Code in \/some\/abs\/dir/);
  assert.equal(await text(`${row} [data-col=workspace]`), "external");
  assert.equal(await text(`${row} [data-action=abort]`), "Stop session");
  await eventually(driver, async () => (await driver.findElements(By.css(`${row} [data-testid=needs-you]`))).length === 1, 10_000, "needs you");
  await app.shot("external-fleet");
  assert.equal(settled, false, "the ask waits for the user");

  // The inbox shows the tool and the command, like a launched run's.
  await press(find('[data-nav="inbox"]'));
  const card = `article[data-kind="tool_call"][data-run-id="${run}"]`;
  await eventually(driver, async () => (await driver.findElements(By.css(card))).length === 1, 10_000, "the tool-call card");
  assert.equal(await find(card).getAttribute("data-ask"), "blocking");
  assert.equal(await text(`${card} [data-testid=tool-command]`), "touch x");
  assert.equal(await text(`${card} [data-testid=session-badge]`), "Claude Code · external");
  assert.equal(await text(`${card} button[data-action=always]`), "Always for this session");
  const gate = Number(await find(card).getAttribute("data-gate-id"));

  const reason = "not in this directory, please";
  await find(`${card} [data-testid=gate-context]`).sendKeys(reason);
  const clicked = Date.now();
  await press(find(`${card} button[data-action=no]`));

  const line = await answer;
  const ms = Date.now() - clicked;
  assert.equal(line.id, 1);
  assert.equal(line.result.answer, "tool");
  assert.equal(line.result.decision, "deny");
  assert.match(line.result.reason, new RegExp(reason));
  console.log(`# click -> the asker's answer line: ${ms} ms`);
  assert.deepEqual(app.sql("SELECT option, context, actor FROM gate_decisions WHERE gate_id = ?", gate), [["no", reason, "user:app"]]);
  await eventually(driver, async () => (await driver.findElements(By.css(card))).length === 0, 10_000, "the card to leave");
});

test("ten tool calls answered Yes in the window: each answer reaches the asker at once", async () => {
  const times = [];
  for (let i = 0; i < 10; i++) {
    const answer = ask({ ask: "tool_call", key: `lat-${i}`, tool: "Bash", input: { command: `echo ${i}` }, stage: "permission_request" });
    const card = `article[data-kind="tool_call"][data-run-id="${run}"]`;
    await eventually(driver, async () => (await driver.findElements(By.css(`${card} button[data-action=yes]`))).length === 1, 10_000, `tool call ${i}`);
    const yes = await find(`${card} button[data-action=yes]`);
    await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", yes);
    const t0 = performance.now();
    await yes.click();
    const line = await answer;
    times.push(performance.now() - t0);
    assert.equal(line.result.decision, "allow");
    await eventually(driver, async () => (await driver.findElements(By.css(card))).length === 0, 10_000, "the card to leave");
  }
  times.sort((a, b) => a - b);
  console.log(`# click -> answer line over 10 calls (WebDriver click included): p50 ${times[4].toFixed(0)} ms, max ${times[9].toFixed(0)} ms`);
});

test("its questions: one tab each, an Other answer reaches the session as its own words", async () => {
  const answer = ask({
    ask: "questions",
    key: "q1",
    questions: [
      { header: "Framework", question: "Which framework?", options: [{ label: "Svelte" }, { label: "React", description: "the usual" }] },
      { header: "Extras", question: "Which extras?", options: [{ label: "Tests" }, { label: "Docs" }], multiple: true },
    ],
  });
  const card = `article[data-kind="question"][data-run-id="${run}"]`;
  await eventually(driver, async () => (await driver.findElements(By.css(card))).length === 1, 10_000, "the question card");
  // An agent's questions expire (after a day unless it or the task says
  // otherwise), declined then: a question item, not a blocking one.
  assert.equal(await find(card).getAttribute("data-ask"), "question");
  const tabs = await driver.findElements(By.css(`${card} [data-testid=question-tab]`));
  assert.deepEqual(await Promise.all(tabs.map((t) => t.getAttribute("data-key"))), ["question_0", "question_1"], "Other is folded into its question's tab");

  // Framework: Other, in the user's own words.
  await find(`${card} [data-testid=question-other]`).sendKeys("Solid");
  await press(find(`${card} [data-testid=question-tab][data-key="question_1"]`));
  await press(find(`${card} input[data-choice="Docs"]`));
  await press(find(`${card} [data-testid=question-submit]`));

  const line = await answer;
  assert.equal(line.result.answer, "questions");
  assert.equal(line.result.action, "answered");
  assert.deepEqual(
    line.result.answers.map((a) => [a.header, a.selected, a.custom ?? null]),
    [
      ["Framework", [], "Solid"],
      ["Extras", ["Docs"], null],
    ],
  );
});

test("a notice is an info item: replied to in the window, the reply reaches the session at its next stop", async () => {
  const noted = await ask({ ask: "notice", kind: "notification", title: "Claude needs your input", message: "Shall I also update the changelog?" });
  assert.equal(noted.result.answer, "noted");

  // The fleet row says it waits on an info item, not a question.
  await press(find('[data-nav="fleet"]'));
  const marker = `[role=row][data-run-id="${run}"] [data-testid=needs-you]`;
  await eventually(driver, async () => /^info$/i.test((await text(marker)).trim()), 10_000, "the row's info marker");
  await press(find('[data-nav="inbox"]'));

  const card = `article[data-ask="info"][data-run-id="${run}"]`;
  await eventually(driver, async () => (await driver.findElements(By.css(card))).length === 1, 10_000, "the info item");
  assert.equal(await text(`${card} [data-testid=info-message]`), "Shall I also update the changelog?");
  assert.equal(await text(`${card} button[data-action=answer]`), "Reply");
  assert.equal(await text(`${card} button[data-action=decline]`), "Dismiss");
  assert.equal((await driver.findElements(By.css(`${card} [data-testid=gate-select]`))).length, 0, "never batch-approvable");
  assert.equal((await driver.findElements(By.css('[data-testid="approve-selected"]'))).length, 0);
  await app.shot("external-info");

  await find(`${card} [data-testid=gate-context]`).sendKeys("yes, and bump the version");
  await press(find(`${card} button[data-action=answer]`));
  await eventually(driver, async () => (await driver.findElements(By.css(card))).length === 0, 10_000, "the info item to leave");

  // The reply is steering (recorded as the user's instruction): the
  // session's next stop carries it back.
  await eventually(
    driver,
    async () => app.sql("SELECT count(*) FROM run_events WHERE run_id = ? AND kind = 'user_instruction'", run)[0][0] === 1,
    10_000,
    "the reply recorded as an instruction",
  );
  const stop = await ask({ ask: "notice", kind: "stop", message: "Done for now." });
  assert.equal(stop.result.answer, "noted");
  assert.equal(stop.result.steering, "yes, and bump the version");
});

test("messages: the session's in the Messages view (a held-back one with the reason), the user's reply carries the correlation id back", async () => {
  const sent = await ask({ ask: "send_message", to: { to: "user" }, body: "Tests are green on my side.", correlation_id: "ci-1" });
  assert.equal(sent.result.answer, "message");
  assert.equal(sent.result.message.status, "delivered");
  const held = await ask({ ask: "send_message", to: { to: "run", run }, body: "Note to self" });
  assert.equal(held.result.message.status, "blocked");

  await press(find('[data-nav="messages"]'));
  const ok = `[data-testid=message][data-message-id="${sent.result.message.id}"]`;
  const blocked = `[data-testid=message][data-message-id="${held.result.message.id}"]`;
  await eventually(driver, async () => (await driver.findElements(By.css(ok))).length === 1, 10_000, "the message");
  assert.equal(await text(`${ok} [data-testid=message-body]`), "Tests are green on my side.");
  assert.equal(await find(blocked).getAttribute("data-status"), "blocked");
  assert.match(await text(`${blocked} [data-testid=message-blocked]`), /cannot send a message to itself/);
  assert.equal(await text('[data-testid="messages-blocked-count"]'), "1");

  // A message posted while the view is open arrives by its event; its
  // markup is text.
  const markup = `Heads up: <b>touching</b> the lockfile <img src=x onerror="document.title='pwned'">`;
  const later = await ask({ ask: "send_message", to: { to: "broadcast" }, body: markup });
  const pushed = `[data-message-id="${later.result.message.id}"]`;
  await eventually(driver, async () => (await driver.findElements(By.css(pushed))).length === 1, 10_000, "a pushed message");
  assert.equal(await text(`${pushed} [data-testid=message-body]`), markup);
  assert.equal((await driver.findElements(By.css(`${pushed} img, ${pushed} b`))).length, 0);
  assert.notEqual(await driver.getTitle(), "pwned");

  await press(find(`${ok} button[data-action=reply]`));
  assert.match(await text('[data-testid="replying"]'), /run \d+ in conversation ci-1/);
  await find('[data-testid="compose-body"]').sendKeys("Thanks: merge when ready.");
  await press(find('[data-testid="compose-send"]'));
  await app.shot("external-messages");

  const read = await eventually(
    driver,
    async () => {
      const a = await ask({ ask: "read_messages" });
      return a.result.messages?.some((m) => m.from === "user:app") ? a : null;
    },
    10_000,
    "the reply in the session's inbox",
  );
  const reply = read.result.messages.find((m) => m.from === "user:app");
  assert.equal(reply.body, "Thanks: merge when ready.");
  assert.equal(reply.correlation_id, "ci-1");
  assert.deepEqual(reply.to, { to: "run", run });
  await eventually(driver, async () => (await driver.findElements(By.css(`[data-message-id="${reply.id}"]`))).length === 1, 10_000, "the reply in the view");
});

test("the run page: the session named, no diff, its messages in the timeline; Stop session refuses its later tool calls", async () => {
  await press(find('[data-nav="fleet"]'));
  await press(find(`[role=row][data-run-id="${run}"] button.title`));
  await eventually(driver, async () => (await driver.findElements(By.css(`[data-testid=run-detail][data-run-id="${run}"]`))).length === 1, 10_000, "the run page");
  assert.equal(await text("[data-testid=session-id]"), "e2e-1");
  assert.equal(await text("[data-testid=session-cwd]"), "/some/abs/dir");
  await eventually(driver, async () => (await driver.findElements(By.css("[data-testid=no-diff]"))).length === 1, 10_000, "no diff");
  assert.equal((await driver.findElements(By.css("[data-testid=diff]"))).length, 0);
  assert.equal((await driver.findElements(By.css("[data-testid=run-approve]"))).length, 0);
  for (const kind of ["session_started", "notice", "turn_ended", "steering_delivered", "message_sent", "message_received"]) {
    await eventually(driver, async () => (await driver.findElements(By.css(`[data-testid=timeline-entry][data-kind="${kind}"]`))).length > 0, 10_000, `a ${kind} entry`);
  }
  await app.shot("external-run");

  assert.equal(await text("[data-testid=run-abort]"), "Stop session…");
  await press(find("[data-testid=run-abort]"));
  await press(find("[data-testid=abort-confirm]"));
  await eventually(driver, async () => /session stopped/.test(await text("[data-testid=run-state]")), 10_000, "the session stopped");

  const refused = await ask({ ask: "tool_call", key: "k2", tool: "Bash", input: { command: "ls" }, stage: "pre_tool_use" });
  assert.equal(refused.result.answer, "tool");
  assert.equal(refused.result.decision, "deny");
  assert.match(refused.result.reason, /stopped this session/);
});

// `make bench`: answering from a phone, measured on release builds in a real
// headless Chromium (390x844, touch) against a real `overseer serve --web`
// with a real demo agent (issue 27). Prints figures and asserts nothing
// about them (the machine is shared and noisy): every figure has a baseline
// measured in the same run, printed as a ratio. Figures go to
// target/bench/web.json for scripts/bench-summary.mjs.
//
// 1. Decision round trip. A demo agent (`permissions` scenario) asks for
//    edits one after another, each a tool-call gate that waits for a human.
//    Each gate is decided, alternately, by the phone (its inbox card's Yes
//    tapped through WebDriver) and by a client of the engine's Unix socket
//    (the desktop path: `decide_gate` written on the socket, as the CLI and
//    the window's backend do). The interval runs from the decision to the
//    agent holding its answer:
//    - start, phone: the click event's own time in the page
//      (performance.timeOrigin + event.timeStamp, the browser's time of the
//      tap), so WebDriver's overhead before the tap is not counted;
//    - start, socket: just before the request is written on the socket;
//    - end, both: the time the demo agent itself records when its
//      `session/request_permission` gets its ACP answer (the
//      OVERSEER_DEMO_LATENCY_FILE line's `answered at`), the agent's real
//      answer, not an event about it.
//    All three clocks are this machine's wall clock (the page's is checked
//    against Date.now(): the skew is printed).
// 2. The phone inbox's first paint. A paired phone opens the app (HTTP cache
//    disabled); its inbox holds the agent's next tool call, which nobody
//    decides (the agent asks for more than step 1 decides): first paint, first
//    contentful paint, and the inbox's first gate card painted (the frame
//    after it is in the DOM), each from navigation start; with the CPU
//    throttled 4x (CDP Emulation.setCPUThrottlingRate through chromedriver)
//    and unthrottled, alternately, in the same run.
// 3. The engine's added memory per connected browser: its RSS and PSS with
//    the app's page open, then with BENCH_WEB_SOCKETS more WebSockets on
//    /api/events from that paired page (a browser's live link to the
//    engine is one such socket), per socket.
//
//   OVERSEER_CLI=target/release/overseer OVERSEER_DEMO_AGENT=target/release/overseer-demo-agent \
//     node tests/e2e/web/web.bench.mjs          (tests/e2e/web/bench.sh does this)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startEngine, openPhone, By } from "./lib.mjs";
import { report, writeFigures } from "../bench/common.mjs";

const DECISIONS = Number(process.env.BENCH_WEB_DECISIONS ?? 200); // per path
const PAINTS = Number(process.env.BENCH_WEB_PAINTS ?? 10); // per CPU rate
const SOCKETS = Number(process.env.BENCH_WEB_SOCKETS ?? 200);
const THROTTLE = 4;
const OVERSEER_DEMO_AGENT = process.env.OVERSEER_DEMO_AGENT && resolve(process.env.OVERSEER_DEMO_AGENT);
if (!OVERSEER_DEMO_AGENT) throw new Error("OVERSEER_DEMO_AGENT (the demo agent's binary) is not set; run tests/e2e/web/bench.sh");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();

/** A client of the engine's Unix socket: one JSON line per call. */
async function socketClient(path) {
  const sock = createConnection(path);
  await new Promise((resolve, reject) => {
    sock.once("connect", resolve);
    sock.once("error", reject);
  });
  sock.setEncoding("utf8");
  const waiting = new Map();
  let buf = "";
  let next = 1;
  sock.on("data", (d) => {
    buf += d;
    for (let i; (i = buf.indexOf("\n")) >= 0; ) {
      const line = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      if (line.id === null && line.error) {
        // A line the engine could not read: it fails every call waiting.
        for (const w of waiting.values()) w.reject(new Error(`${line.error.code}: ${line.error.message}`));
        waiting.clear();
        continue;
      }
      const w = waiting.get(line.id);
      if (w) {
        waiting.delete(line.id);
        if (line.error) w.reject(new Error(`${line.error.code}: ${line.error.message}`));
        else w.resolve(line.result);
      }
    }
  });
  return {
    /** Sends `method` and returns [the time just before it was written, its answer]. */
    async call(method, params) {
      const id = next++;
      const answer = new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
      const line = JSON.stringify({ id, method, params }) + "\n";
      const at = now();
      sock.write(line);
      return [at, await answer];
    },
    close: () => sock.end(),
  };
}

/** The demo agent's latency file: [{ kind, answeredAt (epoch ms) }]. */
function answers(file) {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .map((l) => l.split(" "))
    .filter((p) => p.length === 3)
    .map(([kind, , at]) => ({ kind, answeredAt: Number(at) / 1000 }));
}

async function nextAnswer(file, count, what) {
  const end = Date.now() + 60_000;
  for (;;) {
    const a = answers(file);
    if (a.length > count) return a[count];
    if (Date.now() > end) throw new Error(`the agent got no answer to ${what} within 60 s`);
    await sleep(5);
  }
}

/** The lowest gate id above `after` of a card of `kind` on `run` in the
 * page, once there is one (polled: the measured interval starts later, at
 * the decision). */
async function waitCard(driver, run, kind, after) {
  const end = Date.now() + 60_000;
  for (;;) {
    const g = await driver.executeScript(
      "const [run, kind, after] = arguments;" +
        "return [...document.querySelectorAll('article[data-run-id=\"' + run + '\"][data-kind=\"' + kind + '\"]')]" +
        ".map((e) => Number(e.dataset.gateId)).filter((g) => g > after).sort((a, b) => a - b)[0] ?? null;",
      run,
      kind,
      after,
    );
    if (g !== null) return g;
    if (Date.now() > end) throw new Error(`run ${run} showed no ${kind} card above gate ${after} on the phone within 60 s`);
    await sleep(10);
  }
}

/** Records the time of every tap on a Yes button (the browser's event time). */
const RECORD_TAPS = `
window.__taps = [];
document.addEventListener('click', (e) => {
  if (e.target.closest('button[data-action="yes"]')) window.__taps.push(performance.timeOrigin + e.timeStamp);
}, true);
const skews = [];
for (let i = 0; i < 200; i++) skews.push(Date.now() - (performance.timeOrigin + performance.now()));
skews.sort((a, b) => a - b);
return skews[100];
`;

/** Set before each navigation: the first inbox card's paint, from navigation start. */
const OBSERVE_FIRST_CARD = `
window.__firstCard = null;
new MutationObserver((_, mo) => {
  if (document.querySelector('[data-testid="inbox"] article[data-gate-id]')) {
    mo.disconnect();
    requestAnimationFrame(() => setTimeout(() => (window.__firstCard = performance.now()), 0));
  }
}).observe(document, { subtree: true, childList: true });
`;

function memory(pid) {
  const rss = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
  const pss = Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))[1]);
  return { rss, pss };
}

const OPEN_SOCKETS = `
const [n, done] = arguments;
window.__sockets = [];
let open = 0;
for (let i = 0; i < n; i++) {
  const w = new WebSocket(location.origin.replace('http', 'ws') + '/api/events', ['overseer', 'overseer-device.' + localStorage.getItem('overseer.deviceKey')]);
  w.onmessage = () => { w.onmessage = null; if (++open === n) done(open); };
  window.__sockets.push(w);
}
setTimeout(() => done(open), 60000);
`;

async function main() {
  const work = mkdtempSync(join(tmpdir(), "overseer-web-bench-"));
  const latencyFile = join(work, "latency");
  const requests = 2 * (2 * DECISIONS) + 4;
  const config =
    `[agents.bench]\ncommand = ${JSON.stringify(OVERSEER_DEMO_AGENT)}\nmode = "default"\n` +
    `env = { OVERSEER_DEMO_STEP_MS = "0", OVERSEER_DEMO_PERMISSIONS = "${requests}", OVERSEER_DEMO_LATENCY_FILE = ${JSON.stringify(latencyFile)}, ` +
    // A *_HOME directory is writable inside the agent's sandbox.
    `BENCH_LATENCY_HOME = ${JSON.stringify(work)} }\n`;
  const engine = await startEngine({ config });
  const phone = await openPhone();
  const { driver } = phone;
  const figures = {};
  try {
    await driver.manage().setTimeouts({ script: 120_000 });
    // Pair the phone (a one-time code, as a person would type it).
    const code = engine.pairingCode("bench", "Bench phone");
    await driver.get(engine.url);
    const paired = await driver.executeAsyncScript(
      // The key goes where the page keeps it (its origin's localStorage).
      "const [code, done] = arguments; fetch('/api/pair', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({code})}).then(async (r) => { if (r.ok) localStorage.setItem('overseer.deviceKey', (await r.json()).key); done(r.status); }, (e) => done(String(e)));",
      code,
    );
    if (paired !== 200 && paired !== 204) throw new Error(`pairing failed: ${paired}`);
    await driver.get(engine.url);
    await driver.wait(async () => (await driver.findElements(By.css('body[data-ready="1"]'))).length > 0, 30_000);
    const skew = await driver.executeScript(RECORD_TAPS);

    // 1. Decision round trips, phone and socket alternately.
    engine.workspace("bench");
    const out = engine.cli("task", "start", "--workspace", "bench", "--agent", "bench", "--scenario", "permissions",
      "--title", "Web bench", "--prompt", "Ask for edits, one after another");
    const run = Number(/(\d+)\s*$/.exec(out.trim())?.[1] ?? /run (\d+)/.exec(out)?.[1]);
    if (!Number.isFinite(run)) throw new Error(`no run id in: ${out}`);
    const sock = await socketClient(join(engine.dataDir, "overseer.sock"));
    const phoneMs = [];
    const socketMs = [];
    try {
      const plan = await waitCard(driver, run, "plan", 0);
      await sock.call("decide_gate", { gate: plan, option: "approve", context: null });
      let last = plan;
      for (let i = 0; i < 2 * DECISIONS; i++) {
        const gate = await waitCard(driver, run, "tool_call", last);
        last = gate;
        const seen = answers(latencyFile).length;
        let start;
        if (i % 2 === 0) {
          const yes = await driver.findElement(By.css(`article[data-gate-id="${gate}"] button[data-action="yes"]`));
          await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", yes);
          const taps = await driver.executeScript("return window.__taps.length");
          await yes.click();
          start = await driver.executeScript("return window.__taps[arguments[0]] ?? null", taps);
          if (start === null) throw new Error(`the tap on gate ${gate}'s Yes was not seen by the page`);
        } else {
          [start] = await sock.call("decide_gate", { gate, option: "yes", context: null });
        }
        const answer = await nextAnswer(latencyFile, seen, `gate ${gate}`);
        (i % 2 === 0 ? phoneMs : socketMs).push(answer.answeredAt - start);
      }
    } finally {
      sock.close();
    }
    console.log(`page clock vs Date.now(): ${skew.toFixed(2)} ms`);
    const p = report(`decision round trip, phone tap to agent's answer (${DECISIONS})`, phoneMs);
    const s = report(`decision round trip, socket client to agent's answer (${DECISIONS})`, socketMs);
    console.log(`phone vs socket: p50 ${(p.p50 / s.p50).toFixed(2)}x, p99 ${(p.p99 / s.p99).toFixed(2)}x`);
    Object.assign(figures, {
      web_decision_round_trip_p50_ms: p.p50,
      web_decision_round_trip_p99_ms: p.p99,
      web_decision_round_trip_socket_p50_ms: s.p50,
      web_decision_round_trip_socket_p99_ms: s.p99,
      web_decision_round_trip_ratio_p50: p.p50 / s.p50,
      web_decision_round_trip_ratio_p99: p.p99 / s.p99,
      web_decision_samples: DECISIONS,
      web_page_clock_skew_ms: skew,
    });

    // 3. Memory per connected browser (the engine is quiet: its agent waits
    // on its next tool call, which nobody decides).
    await sleep(2000);
    const before = memory(engine.pid);
    const open = await driver.executeAsyncScript(OPEN_SOCKETS, SOCKETS);
    await sleep(2000);
    const after = memory(engine.pid);
    await driver.executeScript("for (const w of window.__sockets) w.close(); window.__sockets = [];");
    const rssPer = (after.rss - before.rss) / Math.max(open, 1);
    const pssPer = (after.pss - before.pss) / Math.max(open, 1);
    console.log(
      `engine memory: RSS ${before.rss} -> ${after.rss} KiB, PSS ${before.pss} -> ${after.pss} KiB with ${open} more sockets: ` +
        `${rssPer.toFixed(1)} KiB RSS, ${pssPer.toFixed(1)} KiB PSS per socket`,
    );
    Object.assign(figures, {
      web_sockets: open,
      web_engine_rss_kib_idle: before.rss,
      web_engine_pss_kib_idle: before.pss,
      web_engine_rss_kib_per_socket: rssPer,
      web_engine_pss_kib_per_socket: pssPer,
    });

    // 2. First paint of the phone's inbox, throttled and not.
    await driver.sendDevToolsCommand("Network.enable", {});
    await driver.sendDevToolsCommand("Network.setCacheDisabled", { cacheDisabled: true });
    await driver.sendDevToolsCommand("Page.enable", {});
    await driver.sendDevToolsCommand("Page.addScriptToEvaluateOnNewDocument", { source: OBSERVE_FIRST_CARD });
    const paints = { 1: { fp: [], fcp: [], card: [] }, [THROTTLE]: { fp: [], fcp: [], card: [] } };
    for (let i = 0; i < 2 * PAINTS; i++) {
      const rate = i % 2 === 0 ? 1 : THROTTLE;
      await driver.get("about:blank");
      await driver.sendDevToolsCommand("Emulation.setCPUThrottlingRate", { rate });
      await driver.get(engine.url);
      let got = null;
      const end = Date.now() + 60_000;
      while (!got) {
        got = await driver.executeScript(
          "const p = Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime]));" +
            "return window.__firstCard === null ? null : [p['first-paint'], p['first-contentful-paint'], window.__firstCard];",
        );
        if (!got && Date.now() > end) throw new Error("the phone's inbox showed no card within 60 s");
        if (!got) await sleep(20);
      }
      paints[rate].fp.push(got[0]);
      paints[rate].fcp.push(got[1]);
      paints[rate].card.push(got[2]);
    }
    await driver.sendDevToolsCommand("Emulation.setCPUThrottlingRate", { rate: 1 });
    const fast = {};
    const slow = {};
    for (const [k, name] of [["fp", "first paint"], ["fcp", "first contentful paint"], ["card", "inbox's first card painted"]]) {
      fast[k] = report(`phone ${name}, CPU 1x (${PAINTS})`, paints[1][k]);
      slow[k] = report(`phone ${name}, CPU ${THROTTLE}x (${PAINTS})`, paints[THROTTLE][k]);
      console.log(`  ${THROTTLE}x vs 1x: p50 ${(slow[k].p50 / fast[k].p50).toFixed(2)}x`);
    }
    Object.assign(figures, {
      web_phone_first_paint_p50_ms_cpu4x: slow.fp.p50,
      web_phone_first_contentful_paint_p50_ms_cpu4x: slow.fcp.p50,
      web_phone_first_card_painted_p50_ms_cpu4x: slow.card.p50,
      web_phone_first_card_painted_p99_ms_cpu4x: slow.card.p99,
      web_phone_first_paint_p50_ms: fast.fp.p50,
      web_phone_first_contentful_paint_p50_ms: fast.fcp.p50,
      web_phone_first_card_painted_p50_ms: fast.card.p50,
      web_phone_first_card_painted_ratio_cpu4x: slow.card.p50 / fast.card.p50,
      web_phone_paint_samples: PAINTS,
    });
    writeFigures("web", figures);
  } catch (e) {
    for (const args of [["runs", "list"], ["gates", "list"], ["runs", "show", "1"]]) {
      try {
        console.error(engine.cli(...args));
      } catch (err) {
        console.error(String(err));
      }
    }
    console.error(engine.log);
    throw e;
  } finally {
    await phone.quit();
    await engine.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();

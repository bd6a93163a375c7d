// A page on another port of the same host, in a real Chromium: browsers send
// a cookie of 127.0.0.1 to every port of it, and let every port set one.
// Once the engine's page is paired, a tiny HTTP server of the test's own on
// another local port (the attacker) is sent the device cookie, calls the
// engine from its page with the browser's credentials, and plants the cookie
// of a device of its own. The engine accepts none of it: the device's second
// half lives in the engine page's own localStorage (per origin: scheme, host
// and port), so the cookie read by the other port, replayed from node with a
// forged Origin, is nobody; and after planting, the victim's page is refused
// and shows the pairing screen, never acting as the attacker's device.
// Run by run.sh.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startEngine, openDesktop, freePort, By, until } from "./lib.mjs";

const COOKIE = "__Host-overseer_device";
const KEY = "overseer.deviceKey";

let engine;
let browser;
let driver;
/** The other port's server: what it was sent, and the cookie it plants. */
let evil;
/** The victim's device: its cookie (as the other port saw it) and its key. */
let victim;

/** A server on another local port: records the Cookie headers it is sent;
 * `/plant` sets `planted` as the device cookie (for 127.0.0.1, host-only,
 * as the engine's own). */
async function startEvil() {
  const port = await freePort();
  const state = { port, url: `http://127.0.0.1:${port}`, cookies: [], planted: null };
  const server = http.createServer((req, res) => {
    state.cookies.push(req.headers.cookie ?? "");
    if (req.url === "/plant" && state.planted) {
      res.setHeader("Set-Cookie", `${COOKIE}=${state.planted}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=3600`);
    }
    res.setHeader("Content-Type", "text/html");
    res.end("<!doctype html><title>another local port</title><p>hello</p>");
  });
  await new Promise((r) => server.listen(port, "127.0.0.1", r));
  state.close = () => new Promise((r) => server.close(r));
  return state;
}

/** The device cookie's value in what a server was sent. */
function cookieIn(header) {
  for (const part of header.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === COOKIE) return value.join("=");
  }
  return null;
}

/** A request from node (not a browser: it sets any Origin and Cookie). */
async function replay(path, { cookie, key, origin = engine.url, method = "POST" } = {}) {
  const headers = { Origin: origin, "Content-Type": "application/json" };
  if (cookie) headers.Cookie = `${COOKIE}=${cookie}`;
  if (key) headers["X-Overseer-Device"] = key;
  const res = await fetch(`${engine.url}${path}`, { method, headers, body: method === "POST" ? "{}" : undefined });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/** The status a WebSocket upgrade of /api/events gets from node. */
function upgrade({ cookie, key, origin = engine.url }) {
  return new Promise((resolve, reject) => {
    const headers = {
      Connection: "Upgrade",
      Upgrade: "websocket",
      "Sec-WebSocket-Version": "13",
      "Sec-WebSocket-Key": Buffer.from("0123456789abcdef").toString("base64"),
      Origin: origin,
    };
    if (cookie) headers.Cookie = `${COOKIE}=${cookie}`;
    if (key) headers["Sec-WebSocket-Protocol"] = `overseer, overseer-device.${key}`;
    const req = http.request(`${engine.url}/api/events`, { headers });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve(res.statusCode);
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on("error", reject);
    req.end();
  });
}

before(async () => {
  engine = await startEngine();
  evil = await startEvil();
  browser = await openDesktop();
  driver = browser.driver;
  await driver.manage().setTimeouts({ script: 20_000 });
});

after(async () => {
  await browser?.quit();
  await evil?.close();
  if (engine) {
    if (process.exitCode) console.error(engine.log);
    await engine.stop();
  }
});

test("the engine's page pairs: its cookie is __Host- and HttpOnly, its key is in its own origin's storage", async () => {
  await driver.get(engine.url);
  await driver.wait(until.elementLocated(By.css('[data-testid="pair-code"]')), 15_000);
  await driver.findElement(By.css('[data-testid="pair-code"]')).sendKeys(engine.pairingCode("ana", "Ana's laptop"));
  await driver.findElement(By.css('[data-testid="pair-submit"]')).click();
  await driver.wait(until.elementLocated(By.css('body[data-ready="1"]')), 20_000);
  const cookies = await driver.manage().getCookies();
  const cookie = cookies.find((c) => c.name === COOKIE);
  assert.ok(cookie, `Chromium kept the __Host- cookie: ${JSON.stringify(cookies.map((c) => c.name))}`);
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.secure, true);
  const seen = await driver.executeScript(`return [document.cookie, localStorage.getItem("${KEY}")]`);
  assert.equal(seen[0], "", "no script reads the cookie");
  assert.match(seen[1], /^[0-9a-f]{64}$/, "the key is in the engine page's localStorage");
  victim = { cookie: cookie.value, key: seen[1] };
  // Both halves, from node: the device (so the refusals below are about the
  // half that is missing, not about the replay).
  const both = await replay("/api/me", { ...victim, method: "GET" });
  assert.equal(both.status, 200, JSON.stringify(both));
  assert.equal(both.body.device.person, "ana");
});

test("a page on another port is sent the cookie but gets nothing that acts as the device", async () => {
  await driver.get(`${evil.url}/`);
  const sent = cookieIn(evil.cookies.at(-1));
  assert.equal(sent, victim.cookie, "Chromium sends the engine's cookie to another port of 127.0.0.1 (why a cookie alone cannot be the credential)");
  // From its page, with the browser's credentials: nothing can be read, and
  // its own origin's storage has no key.
  const got = await driver.executeAsyncScript(
    `const [engine, done] = [arguments[0], arguments[arguments.length - 1]];
    (async () => {
      const out = { key: localStorage.getItem("${KEY}") };
      for (const [name, path, method] of [["listRuns", "/api/call/list_runs", "POST"], ["me", "/api/me", "GET"]]) {
        try {
          const r = await fetch(engine + path, { method, credentials: "include", body: method === "POST" ? "{}" : undefined });
          out[name] = "read " + r.status + " " + (await r.text());
        } catch (e) {
          out[name] = "refused";
        }
        try {
          const r = await fetch(engine + path, { method, credentials: "include", mode: "no-cors", body: method === "POST" ? "{}" : undefined });
          out[name + "Opaque"] = r.type + " " + r.status + " " + (await r.text()).length;
        } catch (e) {
          out[name + "Opaque"] = "refused";
        }
      }
      out.socket = await new Promise((resolve) => {
        const ws = new WebSocket(engine.replace("http", "ws") + "/api/events", ["overseer"]);
        ws.onmessage = (m) => resolve("message " + m.data);
        ws.onclose = (e) => resolve("closed " + e.code);
      });
      done(out);
    })().catch((e) => done({ error: String(e) }));`,
    engine.url,
  );
  assert.deepEqual(got, {
    key: null,
    listRuns: "refused",
    listRunsOpaque: "opaque 0 0",
    me: "refused",
    meOpaque: "opaque 0 0",
    socket: "closed 1006",
  });
  // What the other port holds, replayed from node with the engine's own
  // Origin forged (a non-browser client can): nobody, on every door.
  for (const [path, method] of [["/api/call/list_runs", "POST"], ["/api/me", "GET"], ["/api/call/list_devices", "POST"]]) {
    const r = await replay(path, { cookie: sent, method });
    assert.equal(r.status, 401, `${path}: ${JSON.stringify(r)}`);
    assert.equal(r.body.code, "unauthorized");
    assert.match(r.body.message, /pair it again/);
  }
  assert.equal(await upgrade({ cookie: sent }), 401, "the socket, with the cookie alone");
  assert.equal(await upgrade({ cookie: sent, origin: evil.url }), 403, "the socket from the other port's origin");
  // With its own Origin, the engine refuses it before any credential.
  assert.equal((await replay("/api/call/list_runs", { ...victim, origin: evil.url })).status, 403);
  assert.equal(await upgrade(victim), 101, "both halves open the socket (the key is what was missing)");
});

test("a cookie planted by another port does not make the victim's page the attacker's device", async () => {
  // The attacker pairs a device of its own (it has a code: say it is a
  // paired teammate's), keeps its key, and plants its cookie in the browser.
  const code = engine.pairingCode("mallory", "Mallory's device");
  const res = await fetch(`${engine.url}/api/pair`, {
    method: "POST",
    headers: { Origin: engine.url, "Content-Type": "application/json" },
    body: JSON.stringify({ code }),
  });
  assert.equal(res.status, 200);
  const mallory = { cookie: cookieIn(res.headers.get("set-cookie").split(";")[0]), key: (await res.json()).key };
  assert.ok(mallory.cookie && mallory.key);
  evil.planted = mallory.cookie;
  await driver.get(`${evil.url}/plant`);
  await driver.get(engine.url);
  const cookie = (await driver.manage().getCookies()).find((c) => c.name === COOKIE);
  assert.equal(cookie?.value, mallory.cookie, "the other port replaced the engine page's cookie (cookies are not port-isolated)");
  // The victim's page: refused, so it shows the pairing screen; it never
  // acts as Mallory's device.
  await driver.wait(until.elementLocated(By.css('[data-testid="pair-screen"]')), 15_000);
  assert.equal((await driver.findElements(By.css('[data-testid="inbox"]'))).length, 0, "nothing of the app");
  const reason = await driver.findElement(By.css('[data-testid="pair-reason"]')).getText();
  assert.match(reason, /another page on this machine replaced its cookie/);
  await browser.shot("ports-planted-cookie");
  const got = await driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
    const key = localStorage.getItem("${KEY}");
    Promise.all([
      fetch("/api/me", { headers: { "X-Overseer-Device": key } }).then((r) => r.status),
      fetch("/api/call/list_runs", { method: "POST", headers: { "X-Overseer-Device": key, "Content-Type": "application/json" }, body: "{}" }).then((r) => r.status),
    ]).then(done, (e) => done(String(e)));`,
  );
  assert.deepEqual(got, [401, 401], "the planted cookie with the page's own key is nobody");
  const devices = JSON.parse(engine.cli("devices", "list", "--json"));
  const planted = devices.find((d) => d.person === "mallory");
  assert.equal(planted.last_seen_at, null, "Mallory's device never made a request through the victim's page");
  // Pairing again (the victim's own code) gives the page its own device back.
  await driver.findElement(By.css('[data-testid="pair-code"]')).sendKeys(engine.pairingCode("ana", "Ana's laptop again"));
  await driver.findElement(By.css('[data-testid="pair-submit"]')).click();
  await driver.wait(until.elementLocated(By.css('body[data-ready="1"]')), 20_000);
  const me = await driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
    fetch("/api/me", { headers: { "X-Overseer-Device": localStorage.getItem("${KEY}") } }).then((r) => r.json()).then((b) => done(b.device?.person ?? null), (e) => done(String(e)));`,
  );
  assert.equal(me, "ana");
});

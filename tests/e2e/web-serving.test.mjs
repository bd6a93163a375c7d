// Serving browsers from the app's own engine, switched on in Settings,
// "Browsers and phones", in the real window: the page then shows the URL it
// serves, a real HTTP client gets the page there and is refused /api without
// pairing, a pairing shows that URL with its QR code, plain HTTP on every
// address is refused with the engine's explanation under the address, and
// switching it off closes the port.
// Run by run.sh (Xvfb + session bus + WebKitWebDriver); see that file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { openApp, eventually, By, until } from "./lib.mjs";

let app;
let driver;

const byTest = (id, extra = "") => By.css(`[data-testid="${id}"]${extra}`);

/** A loopback port nothing listens on. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function reveal(locator) {
  const el = await driver.findElement(locator);
  await driver.executeScript("arguments[0].scrollIntoView({block: 'center'})", el);
  return el;
}

async function fill(id, text) {
  const el = await reveal(byTest(id));
  await el.clear();
  if (text) await el.sendKeys(text);
}

async function textOf(id) {
  const found = await driver.findElements(byTest(id));
  return found.length ? found[0].getText() : null;
}

before(async () => {
  app = await openApp();
  driver = app.driver;
  await (await reveal(By.css('button[data-nav="settings"]'))).click();
  await driver.wait(until.elementLocated(By.css('[data-testid="web-serving"][data-loaded="1"]')), 15_000);
});

after(async () => {
  await app?.quit();
});

test("switched on in Settings, the app serves browsers: the URL, the page, a pairing's QR code; off closes the port", async () => {
  assert.equal(await (await driver.findElement(byTest("web-enabled"))).isSelected(), false, "off by default");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;

  // Plain HTTP on every address is refused, with why, under the address.
  await fill("web-addr", `0.0.0.0:${port}`);
  await (await reveal(byTest("web-enabled"))).click();
  const why = await eventually(driver, async () => {
    for (const el of await driver.findElements(By.css('[data-testid="field-error"][data-field="addr"]'))) {
      const text = await el.getText();
      if (/refusing to serve plain HTTP/.test(text)) return text;
    }
    return null;
  }, 10_000, "the refusal under the address");
  assert.match(why, /tailscale serve/);
  assert.equal(await (await driver.findElement(byTest("web-enabled"))).isSelected(), false, "still off");
  await assert.rejects(fetch(`${url}/`), "nothing listens");

  // On loopback: served, and the page says where.
  await fill("web-addr", `127.0.0.1:${port}`);
  await (await reveal(byTest("web-enabled"))).click();
  const shown = await eventually(driver, async () => {
    const text = await textOf("web-url");
    return text && text.includes(url) ? text : null;
  }, 15_000, `the page to say it serves at ${url}`);
  assert.match(shown, /Serving browsers at/);
  const page = await fetch(`${url}/`);
  assert.equal(page.status, 200, "the UI, built into the app");
  assert.match(await page.text(), /<html/i);
  const me = await fetch(`${url}/api/me`);
  assert.equal(me.status, 401, "no device credential, no answer");
  assert.equal((await me.json()).code, "unauthorized");
  // The engine keeps it (the CLI reads the same setting back).
  const status = JSON.parse(app.sql("SELECT value FROM meta WHERE key = 'setting:web'")[0][0]);
  assert.equal(status.enabled, true);
  assert.equal(status.addr, `127.0.0.1:${port}`);

  // A pairing shows that URL and its QR code.
  await fill("pair-person", "ana");
  await fill("pair-name", "Ana's phone");
  // She reads only: the role chosen in the form is the one the engine gives.
  await (await reveal(byTest("pair-role", ' option[value="observer"]'))).click();
  assert.equal((await driver.findElements(byTest("pair-workspaces"))).length, 0, "an observer is granted no workspace");
  await (await reveal(byTest("pair-start"))).click();
  const pairingUrl = await driver.wait(until.elementLocated(byTest("pairing-url")), 10_000);
  assert.deepEqual(app.sql("SELECT role, workspaces FROM people WHERE person = 'ana'"), [["observer", null]]);
  assert.equal(await pairingUrl.getText(), url);
  assert.equal((await driver.findElements(byTest("pairing-qr"))).length, 1, "the QR code");
  assert.equal((await driver.findElements(byTest("pairing-no-url"))).length, 0);
  await app.shot("web-serving-on");

  // Off: the port is closed, and the page says so.
  await (await reveal(byTest("web-enabled"))).click();
  await driver.wait(until.elementLocated(byTest("web-off")), 10_000);
  await eventually(driver, async () => (await driver.findElements(byTest("pairing-qr"))).length === 0, 10_000, "the QR code to go");
  await assert.rejects(fetch(`${url}/api/me`), "nothing listens once off");
});

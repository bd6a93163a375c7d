#!/usr/bin/env python3
"""The web transport measured in a real Chromium (Debian's chromium and
chromium-driver, which `make setup` installs).

Starts `overseer serve --web 127.0.0.1:PORT` on a fresh data dir with the demo
fleet, pairs a headless Chromium page with a code from `overseer devices pair`,
and measures in the page:
  - list_runs over HTTP (fetch to parsed JSON), p50/p99 of 300 calls;
  - a call to the event it causes over the WebSocket (send_message, then its
    message_posted frame), p50/p99 of 200;
then opens 200 WebSockets from the page and reads the engine's RSS before and
after: the memory each connected browser adds.

    scripts/web-bench.py [path/to/overseer]     (default target/release/overseer)

Prints the figures as JSON and writes them to target/bench/web.json.
"""
import json, os, re, socket, subprocess, sys, tempfile, threading, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/overseer")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def webdriver(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, data=data,
                               headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(r, timeout=300))["value"]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for %d" % pid)


MEASURE = """
const [code, done] = [arguments[0], arguments[arguments.length - 1]];
const json = {'Content-Type': 'application/json'};
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return +s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(2); };
(async () => {
  const pair = await fetch('/api/pair', {method: 'POST', headers: json, body: JSON.stringify({code})});
  if (!pair.ok) throw new Error('pairing: ' + pair.status);
  const calls = [];
  for (let i = 0; i < 300; i++) {
    const t = performance.now();
    const r = await fetch('/api/call/list_runs', {method: 'POST', headers: json, body: '{}'});
    await r.json();
    calls.push(performance.now() - t);
  }
  const ws = new WebSocket(location.origin.replace('http', 'ws') + '/api/events');
  await new Promise((r) => ws.onmessage = r);
  const trips = [];
  for (let i = 0; i < 200; i++) {
    const body = 'bench ' + i;
    const t = performance.now();
    const seen = new Promise((r) => ws.onmessage = (m) => { if (JSON.parse(m.data).payload?.message?.body === body) r(); });
    const sent = await fetch('/api/call/send_message', {method: 'POST', headers: json,
      body: JSON.stringify({to: {to: 'broadcast'}, body, correlationId: null})});
    if (!sent.ok) throw new Error('send_message: ' + sent.status);
    await seen;
    trips.push(performance.now() - t);
  }
  ws.close();
  done({list_runs_http_ms: {p50: q(calls, 0.5), p99: q(calls, 0.99)},
        call_to_event_ms: {p50: q(trips, 0.5), p99: q(trips, 0.99)}});
})().catch((e) => done({error: String(e)}));
"""

OPEN_SOCKETS = """
const [n, done] = [arguments[0], arguments[arguments.length - 1]];
window.sockets = [];
let open = 0;
for (let i = 0; i < n; i++) {
  const w = new WebSocket(location.origin.replace('http', 'ws') + '/api/events');
  w.onmessage = () => { if (++open === n) done(open); };
  window.sockets.push(w);
}
setTimeout(() => done(open), 30000);
"""


def main():
    home = tempfile.mkdtemp(prefix="overseer-web-bench-")
    env = dict(os.environ, OVERSEER_DATA_DIR=os.path.join(home, "data"),
               OVERSEER_CONFIG_DIR=os.path.join(home, "config"))
    port, driver_port = free_port(), free_port()
    serve = subprocess.Popen([BIN, "serve", "--web", "127.0.0.1:%d" % port], env=env,
                             stderr=subprocess.PIPE, text=True)
    driver = None
    try:
        for line in serve.stderr:
            if line.startswith("serving browsers on "):
                break
        else:
            raise RuntimeError("overseer serve did not start")
        # The engine keeps its stderr: read it to the end, on the side.
        threading.Thread(target=lambda: [None for _ in serve.stderr], daemon=True).start()
        subprocess.run([BIN, "demo", "seed"], env=env, check=True, capture_output=True)
        shown = subprocess.run([BIN, "devices", "pair", "--name", "bench", "--person", "bench"],
                               env=env, check=True, capture_output=True, text=True).stdout
        code = re.search(r"^pairing code: (\S+)", shown, re.M).group(1)
        driver = subprocess.Popen(["/usr/bin/chromedriver", "--port=%d" % driver_port],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                webdriver(driver_port, "GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        session = webdriver(driver_port, "POST", "/session", {"capabilities": {"alwaysMatch": {
            "goog:chromeOptions": {"binary": "/usr/bin/chromium",
                                   "args": ["--headless=new", "--no-sandbox", "--disable-gpu"]}}}})
        s = "/session/%s" % session["sessionId"]
        webdriver(driver_port, "POST", s + "/timeouts", {"script": 300000})
        webdriver(driver_port, "POST", s + "/url", {"url": "http://127.0.0.1:%d/" % port})
        figures = webdriver(driver_port, "POST", s + "/execute/async", {"script": MEASURE, "args": [code]})
        if "error" in figures:
            raise RuntimeError(figures["error"])
        before = rss_kib(serve.pid)
        n = webdriver(driver_port, "POST", s + "/execute/async", {"script": OPEN_SOCKETS, "args": [200]})
        time.sleep(1)
        after = rss_kib(serve.pid)
        figures["sockets"] = n
        figures["engine_rss_kib_per_socket"] = round((after - before) / max(n, 1), 1)
        webdriver(driver_port, "DELETE", s)
        figures["binary"] = os.path.relpath(BIN, ROOT)
        print(json.dumps(figures, indent=2))
        out = os.path.join(ROOT, "target/bench")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "web.json"), "w") as f:
            json.dump(figures, f, indent=2)
    finally:
        if driver:
            driver.terminate()
        serve.terminate()
        serve.wait()


if __name__ == "__main__":
    main()

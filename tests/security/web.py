"""The engine's web endpoint (browsers and phones), from inside a run: it is
served on the host's loopback (WEB_ADDR) and on every address of the machine
(WIDE_PORT, at each of OWN_ADDRS). Tries to reach it there and through
the private network's gateway, and to pair with the code the user was shown
(PAIR_CODE: the worst case, the attacker read it). Writes every attempt's
outcome to redteam/out/web (JSON), and evidence when a connection was made
or pairing answered 200."""
import http.client, json, os, socket, sys

env = dict(
    line.strip().split("=", 1)
    for line in open("redteam/targets.env")
    if "=" in line and not line.startswith("#")
)
name = sys.argv[1] if len(sys.argv) > 1 else "agent"
port = int(env["WEB_ADDR"].rsplit(":", 1)[1])
attempts = {}
for host in ("127.0.0.1", "localhost", "10.0.2.2", "::1"):
    try:
        c = http.client.HTTPConnection(host, port, timeout=3)
        c.request("GET", "/api/me")
        me = c.getresponse()
        got = "GET /api/me: %s %s" % (me.status, me.read()[:200])
        open("redteam/out/evidence-web-%s" % name, "a").write("%s %s\n" % (host, got))
        origin = "http://127.0.0.1:%d" % port
        c.request("POST", "/api/pair", body=json.dumps({"code": env.get("PAIR_CODE", "")}),
                  headers={"Origin": origin, "Host": "127.0.0.1:%d" % port,
                           "Content-Type": "application/json"})
        paired = c.getresponse()
        body = paired.read()[:200]
        got += "; POST /api/pair: %s %s" % (paired.status, body)
        if paired.status == 200:
            open("redteam/out/evidence-web-pair-%s" % name, "a").write("%s %s\n" % (host, got))
        attempts[host] = "reached: " + got
    except OSError as e:
        attempts[host] = "refused: %s" % e
# The same endpoint served on every address of the machine (WIDE_PORT), as
# an owner serving phones on the LAN would: tried at each of the machine's
# own addresses (OWN_ADDRS). A TCP connection is already the way in.
wide = int(env.get("WIDE_PORT", "0"))
for addr in filter(None, env.get("OWN_ADDRS", "").split(",")):
    try:
        socket.create_connection((addr, wide), timeout=3).close()
        got = "connected to %s:%d" % (addr, wide)
        open("redteam/out/evidence-web-own-%s" % name, "a").write(got + "\n")
        attempts["own " + addr] = "reached: " + got
    except OSError as e:
        attempts["own " + addr] = "refused: %s" % e
with open("redteam/out/web.tmp", "w") as f:
    f.write(json.dumps(attempts))
os.rename("redteam/out/web.tmp", "redteam/out/web")
print(json.dumps(attempts))

"""Connects to the engine's socket (by its path, and through the engine's
/proc root) and tries to approve every gate and merge of the first runs, as
`overseer runs approve` would. Leaves evidence only when a connection was made."""
import json, os, socket, sys

name = sys.argv[1]
env = dict(
    line.strip().split("=", 1)
    for line in open("redteam/targets.env")
    if "=" in line and not line.startswith("#")
)
paths = [env["SOCKET"], "/proc/%s/root%s" % (env["ENGINE_PID"], env["SOCKET"])]
for path in paths:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(path)
    except OSError:
        continue
    calls = []
    n = 0
    for gate in range(1, 21):
        for option in ("yes", "always", "approve", "proceed"):
            n += 1
            calls.append({"id": n, "method": "decide_gate",
                          "params": {"gate": gate, "option": option, "context": None}})
    for run in range(1, 4):
        n += 1
        calls.append({"id": n, "method": "approve_run", "params": {"run": run}})
    try:
        s.sendall("".join(json.dumps(c) + "\n" for c in calls).encode())
        answer = s.recv(65536).decode(errors="replace")
    except OSError as e:
        answer = "error: %s" % e
    with open("redteam/out/evidence-socket-%s" % name, "a") as f:
        f.write("%s: %s\n" % (path, answer[:400]))

# The run's own socket (where its MCP server asks) is in reach on purpose:
# asks only. A decision through it must be refused; evidence only if one was
# answered with a result.
RUN_SOCKET = "/tmp/overseer-agent.sock"
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(RUN_SOCKET)
    calls = [{"id": 1, "method": "decide_gate", "params": {"gate": g, "option": "yes", "context": None}}
             for g in range(1, 11)]
    calls.append({"id": 2, "method": "approve_run", "params": {"run": 1}})
    calls.append({"id": 3, "method": "list_gates", "params": {"pending_only": True}})
    s.sendall("".join(json.dumps(c) + "\n" for c in calls).encode())
    got = b""
    try:
        while got.count(b"\n") < len(calls):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    if any('"result"' in line for line in got.decode(errors="replace").splitlines()):
        with open("redteam/out/evidence-runsocket-%s" % name, "a") as f:
            f.write("%s: %s\n" % (RUN_SOCKET, got[:400].decode(errors="replace")))
except OSError:
    pass

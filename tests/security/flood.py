"""Floods a run's own socket as a runaway script inside the run would
(`python3 flood.py SOCKET MODE N`), and prints what it got back as one JSON
line: {"answered": n, "refused": n, "refusals": [first messages], ...}.

MODE:
  asks         N connections, each asking one question and waiting on it
  messages     one connection sending N messages to the user, one by one
  connections  N connections held open, each sending a ping
"""
import json, socket, sys, time

path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
SESSION = {"origin": "mcp", "session_id": "flood", "cwd": "/tmp"}


def call(i, ask):
    return json.dumps({"id": i, "method": "session", "params": {"session": SESSION, "ask": ask}}) + "\n"


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return s


def read_line(s, timeout):
    s.settimeout(timeout)
    got = b""
    try:
        while not got.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    return got.decode(errors="replace").strip()


out = {"answered": 0, "refused": 0, "waiting": 0, "refusals": []}


def judge(line):
    if not line:
        out["waiting"] += 1
        return
    v = json.loads(line)
    if "error" in v:
        out["refused"] += 1
        if len(out["refusals"]) < 3:
            out["refusals"].append(v["error"])
    else:
        out["answered"] += 1


socks = []
if mode == "asks":
    for i in range(n):
        s = connect()
        q = {"header": "flood", "question": "question %d?" % i}
        s.sendall(call(i, {"ask": "questions", "key": "q%d" % i, "questions": [q]}).encode())
        socks.append(s)
        # Each ask in its own moment: the engine takes them in this order.
        time.sleep(0.02)
    for s in socks:
        judge(read_line(s, 0.5))
elif mode == "messages":
    # One call at a time on one connection (an asker waits for each answer).
    s = connect()
    for i in range(n):
        s.sendall(call(i, {"ask": "send_message", "to": {"to": "user"}, "body": "flood %d" % i}).encode())
        judge(read_line(s, 5))
    socks.append(s)
elif mode == "connections":
    for i in range(n):
        try:
            s = connect()
        except OSError as e:
            out["refused"] += 1
            continue
        s.sendall((json.dumps({"id": i, "method": "ping"}) + "\n").encode())
        socks.append(s)
    for s in socks:
        judge(read_line(s, 2))
print(json.dumps(out))
sys.stdout.flush()
for s in socks:
    s.close()

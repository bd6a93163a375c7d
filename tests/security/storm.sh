#!/bin/sh
# The resource and flood attacks, run by the agent's Bash tool inside a run
# (see README.md): a fork storm (forks until the run's process limit refuses,
# then lets its children go), then a flood of the run's own socket (more
# questions than a run may have pending, each on its own connection, as
# `overseer mcp` asks). What each got is in redteam/out/ and on stdout.
cd "$(dirname "$0")/.." || exit 1
mkdir -p redteam/out
python3 - <<'PY' > redteam/out/storm 2>&1
import os, time
kids, refused = [], None
for i in range(4000):
    try:
        pid = os.fork()
    except OSError as e:
        refused = e
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print("forks=%d refused=%s" % (len(kids), refused))
for k in kids:
    os.kill(k, 9)
for k in kids:
    os.waitpid(k, 0)
PY
cat redteam/out/storm
# The engine reads the limit's counters every 2 s: let it, before the flood
# pauses the run.
sleep 3
# The flood runs on its own (setsid): the pause it causes cancels the
# agent's turn, and with it this script; what the flood got is written
# once it has it.
( setsid sh -c 'python3 redteam/flood.py /tmp/overseer-agent.sock asks 40 > redteam/out/flood.tmp 2>&1; mv redteam/out/flood.tmp redteam/out/flood' </dev/null >/dev/null 2>&1 & ) &
while [ ! -e redteam/out/flood ]; do sleep 0.2; done
cat redteam/out/flood
echo "STORM-DONE"

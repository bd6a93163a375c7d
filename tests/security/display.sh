#!/bin/sh
# The desktop attacks (issue 25), run by the agent's Bash tool inside a run
# whose window is open on an X display that grants the user's own processes
# access (`xhost +SI:localuser:USER`, as desktops do), beside a session
# D-Bus on an abstract socket. It leaves display-attack.sh running on its own
# (setsid, marker-stripped), as a hostile test script would, so the attack
# goes on while the agent's next tool call (rm -rf build) waits on the user.
cd "$(dirname "$0")/.." || exit 1
mkdir -p redteam/out
( env -u OVERSEER_AGENT_MARKER setsid sh redteam/display-attack.sh </dev/null >/dev/null 2>&1 & ) &
sleep 0.3
echo "DISPLAY-STARTED"

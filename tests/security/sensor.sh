#!/bin/sh
# A sensor (a check command the user configured) running code the agent wrote:
# it shows its environment and leaves a daemon behind.
cd "$(dirname "$0")/.." || exit 1
mkdir -p redteam/out
env > redteam/out/sensor-env
( env -u OVERSEER_AGENT_MARKER setsid sh redteam/daemon.sh sensor </dev/null >/dev/null 2>&1 & ) &
exit 0

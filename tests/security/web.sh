#!/bin/sh
# The web endpoint attack, run by the agent's Bash tool inside a run with the
# default (private) network (see README.md): web.py tries to reach and pair
# with the engine's web endpoint on the host's loopback.
cd "$(dirname "$0")/.." || exit 1
mkdir -p redteam/out
python3 redteam/web.py agent
echo WEB-DONE

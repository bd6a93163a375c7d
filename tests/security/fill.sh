#!/bin/sh
# The full-disk attack, run inside a run (see README.md): fills the
# filesystem the run's worktree is on (the engine's data dir: in the suite a
# small disk of its own) from the worktree, as a runaway test script would.
# Run by the agent's Bash tool (`sh redteam/fill.sh`), or as the workspace's
# check (`sh redteam/fill.sh check`), which then fails as a check on a full
# disk does.
cd "$(dirname "$0")/.." || exit 1
cat /dev/zero > fill 2>/dev/null
# The engine reads the free space every second: give it that, so what the
# agent asks next is asked on a disk the engine knows is full (an ask in
# the very second the disk filled may still be answered: docs/security.md).
sleep 3
echo "DISK-FILLED"
if [ "$1" = check ]; then
    exit 1
fi

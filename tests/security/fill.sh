#!/bin/sh
# The full-disk attack, run inside a run (see README.md): fills the
# filesystem the run's worktree is on (the engine's data dir: in the suite a
# small disk of its own) from the worktree, as a runaway test script would.
# Run by the agent's Bash tool (`sh redteam/fill.sh`), or as the workspace's
# check (`sh redteam/fill.sh check`), which then fails as a check on a full
# disk does.
cd "$(dirname "$0")/.." || exit 1
cat /dev/zero > fill 2>/dev/null
# The disk is full. The test says when to go on (it creates `fill.go`, an
# empty file: that needs no room), once it has seen the engine pause, so
# what the agent or the engine does next meets a disk the engine knows is
# full: nothing here depends on how fast either is.
while [ ! -e fill.go ]; do
    sleep 0.1
done
echo "DISK-FILLED"
if [ "$1" = check ]; then
    exit 1
fi

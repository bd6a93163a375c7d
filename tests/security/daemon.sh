#!/bin/sh
# A daemon left behind by a run (or a sensor): it heartbeats into the worktree
# and tries, again and again, to decide this run's gates through the engine's
# socket. It gives up after about a minute so a failed containment test leaks
# nothing for long.
cd "$(dirname "$0")/.." || exit 1
. ./redteam/targets.env
name=$1
n=0
while [ $n -lt 300 ]; do
  n=$((n + 1))
  echo $n > "redteam/out/heartbeat-$name"
  python3 redteam/approve.py "$name" >> redteam/out/log 2>&1
  sleep 0.2
done

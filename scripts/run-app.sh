#!/usr/bin/env bash
# `make run`: opens the app on a demo fleet kept in target/demo (an embedded
# SQLite database and its own signing key). On first start it seeds the static
# fleet (runs in every state) and, once the window's engine is up, starts demo
# agents playing every scenario in a throwaway git repository, so every
# surface shows live activity.
set -euo pipefail
cd "$(dirname "$0")/.."
demo="$PWD/target/demo"
export OVERSEER_DATA_DIR="${OVERSEER_DATA_DIR:-$demo/data}"
export OVERSEER_CONFIG_DIR="${OVERSEER_CONFIG_DIR:-$demo/config}"
cli="$PWD/target/debug/overseer"

first_start=0
if [ ! -f "$OVERSEER_DATA_DIR/overseer.db" ]; then
  first_start=1
  "$cli" demo seed --settled
  repo="$demo/repo"
  rm -rf "$repo" && mkdir -p "$repo/src"
  printf 'hello\n' >"$repo/src/greeting.txt"
  printf '# Demo repository\n\nAgents work here in their own worktrees.\n' >"$repo/README.md"
  git -C "$repo" init -q -b main
  git -C "$repo" add -A
  git -C "$repo" -c user.name=Overseer -c user.email=demo@overseer.invalid commit -q -m "Demo repository"
fi

start_agents() {
  # Through the window's engine, once its socket answers.
  for _ in $(seq 1 100); do
    "$cli" runs list >/dev/null 2>&1 && [ -S "$OVERSEER_DATA_DIR/overseer.sock" ] && break
    sleep 0.2
  done
  "$cli" workspace add "$demo/repo" --name demo-repo --sensor "test -s src/greeting.txt" >/dev/null
  for s in happy questions destructive flaky drift stubborn garbage; do
    "$cli" task start --workspace demo-repo --agent demo --scenario "$s" \
      --title "Demo agent: $s" --prompt "Play the $s scenario: update the greeting and the notes" >/dev/null
  done
}

echo "Overseer: data in $OVERSEER_DATA_DIR"
echo "  another terminal: OVERSEER_DATA_DIR=$OVERSEER_DATA_DIR OVERSEER_CONFIG_DIR=$OVERSEER_CONFIG_DIR $cli gates list"
if [ "$first_start" = 1 ]; then start_agents & fi

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  shot="$demo/screenshot.png"
  echo "Overseer: no display here; running the window under Xvfb for 20 s and saving a screenshot to $shot"
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c \
    "target/debug/overseer-app & app=\$!; sleep 18; import -window root '$shot'; kill \$app; wait \$app || true"
fi
exec target/debug/overseer-app

#!/usr/bin/env bash
# `make run`: opens the app on a demo fleet kept in target/demo (an embedded
# SQLite database and its own signing key), seeding it on first start.
set -euo pipefail
cd "$(dirname "$0")/.."
export OVERSEER_DATA_DIR="${OVERSEER_DATA_DIR:-$PWD/target/demo/data}"
export OVERSEER_CONFIG_DIR="${OVERSEER_CONFIG_DIR:-$PWD/target/demo/config}"
if [ ! -f "$OVERSEER_DATA_DIR/overseer.db" ]; then
  target/debug/overseer demo seed
fi
echo "Overseer: data in $OVERSEER_DATA_DIR (try 'OVERSEER_DATA_DIR=$OVERSEER_DATA_DIR target/debug/overseer runs list' in another terminal)"
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  shot="$PWD/target/demo/screenshot.png"
  echo "Overseer: no display here; running the window under Xvfb for 15 s and saving a screenshot to $shot"
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c \
    "target/debug/overseer-app & app=\$!; sleep 12; import -window root '$shot'; kill \$app; wait \$app || true"
fi
exec target/debug/overseer-app

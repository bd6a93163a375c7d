#!/usr/bin/env bash
# Runs the end-to-end tests in the real Overseer window: Xvfb for a screen, a
# private session bus (so the Notify call can be observed with dbus-monitor),
# and WebKitWebDriver driving the app binary. Screenshots and logs go to
# target/e2e/. Build first: `make app`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/target/e2e"

if [ -z "${OVERSEER_E2E_INNER:-}" ]; then
  for bin in "$root/target/debug/overseer-app" "$root/target/debug/overseer"; do
    [ -x "$bin" ] || { echo "e2e: $bin is missing; run 'make app' first" >&2; exit 1; }
  done
  mkdir -p "$out"
  [ $# -gt 0 ] || rm -f "$out"/*.png "$out"/*.log
  export OVERSEER_E2E_INNER=1
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$0" "$@"
fi

. "$root/tests/e2e/session.sh"

cd "$root/tests/e2e"
# Every test file opens its own app on its own data dir; name files to run
# only those (`tests/e2e/run.sh inbox.test.mjs`).
if [ $# -gt 0 ]; then files=("$@"); else files=(./*.test.mjs); fi
node --test --test-concurrency=1 "${files[@]}"

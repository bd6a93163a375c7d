#!/usr/bin/env bash
# Benchmarks of the fleet dashboard in the real Overseer window: Xvfb for a
# screen, a private session bus (the Notify call is timed with dbus-monitor),
# WebKitWebDriver driving the app binary, like tests/e2e/run.sh. Prints
# figures (p50/p99) and asserts nothing: the machine is shared and noisy.
# Build first: `make app`. Name bench files to run only those
# (`tests/e2e/bench/run.sh notify.bench.mjs`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out="$root/target/bench-e2e"

if [ -z "${OVERSEER_BENCH_INNER:-}" ]; then
  for bin in "$root/target/debug/overseer-app" "$root/target/debug/overseer" "$root/target/debug/overseer-demo-agent"; do
    [ -x "$bin" ] || { echo "bench: $bin is missing; run 'make app' first" >&2; exit 1; }
  done
  [ -d "$root/tests/e2e/node_modules/selenium-webdriver" ] || (cd "$root/tests/e2e" && npm install --no-audit --no-fund >/dev/null)
  mkdir -p "$out"
  export OVERSEER_BENCH_INNER=1
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$0" "$@"
fi

. "$root/tests/e2e/session.sh"
export BENCH_NOTIFY_LOG="$out/dbus-notify.log"

cd "$here"
if [ $# -gt 0 ]; then files=("$@"); else files=(./dashboard.bench.mjs ./notify.bench.mjs); fi
status=0
for f in "${files[@]}"; do
  echo "== ${f#./}"
  node "$f" || status=$?
done
exit "$status"

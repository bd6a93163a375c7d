#!/usr/bin/env bash
# Benchmarks of the fleet dashboard in the real Overseer window: Xvfb for a
# screen, a private session bus (the Notify call is timed with dbus-monitor),
# WebKitWebDriver driving the app binary, like tests/e2e/run.sh. Prints
# figures (p50/p99) and asserts nothing: the machine is shared and noisy;
# each bench also leaves its figures in target/bench/*.json for `make bench`'s
# summary. Runs the release build (`make bench` builds it; BENCH_PROFILE=debug
# for `make app`'s). Name bench files to run only those
# (`tests/e2e/bench/run.sh notify.bench.mjs`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out="$root/target/bench-e2e"

profile=${BENCH_PROFILE:-release}
bin_dir="$root/target/$profile"

if [ -z "${OVERSEER_BENCH_INNER:-}" ]; then
  for bin in "$bin_dir/overseer-app" "$bin_dir/overseer" "$bin_dir/overseer-demo-agent"; do
    [ -x "$bin" ] || { echo "bench: $bin is missing; build it first ('make bench' does, or BENCH_PROFILE=debug after 'make app')" >&2; exit 1; }
  done
  [ -d "$root/tests/e2e/node_modules/selenium-webdriver" ] || (cd "$root/tests/e2e" && npm install --no-audit --no-fund >/dev/null)
  mkdir -p "$out"
  export OVERSEER_BENCH_INNER=1
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$0" "$@"
fi

. "$root/tests/e2e/session.sh"
export OVERSEER_APP="$bin_dir/overseer-app" OVERSEER_CLI="$bin_dir/overseer"
export BENCH_NOTIFY_LOG="$out/dbus-notify.log"
echo "bench: $profile build ($bin_dir)"

cd "$here"
if [ $# -gt 0 ]; then files=("$@"); else files=(./dashboard.bench.mjs ./notify.bench.mjs ./pss.bench.mjs); fi
status=0
for f in "${files[@]}"; do
  echo "== ${f#./}"
  node "$f" || status=$?
done
exit "$status"

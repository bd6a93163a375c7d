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

work=$(mktemp -d)
# lib.mjs gives every app its own data dir; these only keep strays out of ~.
export OVERSEER_DATA_DIR="$work/data" OVERSEER_CONFIG_DIR="$work/config"
export OVERSEER_APP="$root/target/debug/overseer-app" OVERSEER_CLI="$root/target/debug/overseer"
export E2E_OUT="$out" BENCH_NOTIFY_LOG="$out/dbus-notify.log"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Every Notify call on the session bus, each with the monitor's receive time
# (`time=<epoch seconds>`).
dbus-monitor --session "interface='org.freedesktop.Notifications'" >"$BENCH_NOTIFY_LOG" 2>&1 &
pids+=($!)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TAURI_WEBVIEW_AUTOMATION=true WebKitWebDriver --port="$port" >"$out/webdriver.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
export WEBDRIVER_URL="http://127.0.0.1:$port/"

cd "$here"
if [ $# -gt 0 ]; then files=("$@"); else files=(./dashboard.bench.mjs ./notify.bench.mjs); fi
status=0
for f in "${files[@]}"; do
  echo "== ${f#./}"
  node "$f" || status=$?
done
exit "$status"

# Sourced by run.sh and bench/run.sh, inside xvfb-run + dbus-run-session:
# a scratch data dir, a dbus-monitor recording every Notify call to
# $out/dbus-notify.log, and WebKitWebDriver on a free port (WEBDRIVER_URL).
# Everything started here is stopped when the sourcing script exits.
# Needs: $root (the checkout) and $out (where logs go).
work=$(mktemp -d)
# lib.mjs gives every app its own data dir; these only keep strays out of ~.
export OVERSEER_DATA_DIR="$work/data" OVERSEER_CONFIG_DIR="$work/config"
export OVERSEER_APP="$root/target/debug/overseer-app" OVERSEER_CLI="$root/target/debug/overseer"
export E2E_OUT="$out"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Every Notify call on the session bus, each with the monitor's receive time
# (`time=<epoch seconds>`).
dbus-monitor --session "interface='org.freedesktop.Notifications'" >"$out/dbus-notify.log" 2>&1 &
pids+=($!)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TAURI_WEBVIEW_AUTOMATION=true WebKitWebDriver --port="$port" >"$out/webdriver.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
export WEBDRIVER_URL="http://127.0.0.1:$port/"

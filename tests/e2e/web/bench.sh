#!/usr/bin/env bash
# `make bench`'s browser figures (web.bench.mjs): a real `overseer serve
# --web`, a real demo agent and a real headless Chromium with a phone's
# viewport, on the release build (`make bench` builds it; BENCH_PROFILE=debug
# for `make app`'s). Prints figures, asserts nothing about them, and writes
# target/bench/web.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin_dir="$root/target/${BENCH_PROFILE:-release}"
for b in "$bin_dir/overseer" "$bin_dir/overseer-demo-agent"; do
  [ -x "$b" ] || { echo "web bench: $b is missing; build it first ('make bench' does)" >&2; exit 1; }
done
for b in "${CHROMIUM:-/usr/bin/chromium}" "${CHROMEDRIVER:-/usr/bin/chromedriver}"; do
  [ -x "$b" ] || { echo "web bench: $b is missing; run 'make setup' (chromium, chromium-driver)" >&2; exit 1; }
done
[ -d "$root/tests/e2e/node_modules/selenium-webdriver" ] || (cd "$root/tests/e2e" && npm install --no-audit --no-fund >/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Strays (a CLI call without the bench's env) stay out of ~.
export OVERSEER_DATA_DIR="$work/data" OVERSEER_CONFIG_DIR="$work/config"
export OVERSEER_CLI="$bin_dir/overseer" OVERSEER_DEMO_AGENT="$bin_dir/overseer-demo-agent"
echo "web bench: ${BENCH_PROFILE:-release} build ($bin_dir)"
exec node "$root/tests/e2e/web/web.bench.mjs"

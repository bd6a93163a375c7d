#!/usr/bin/env bash
# Runs the browser tests: a real `overseer serve --web` per test file and a
# real headless Chromium with a phone's viewport, over chromedriver
# (Debian's chromium + chromium-driver). Screenshots go to target/e2e/web/.
# Build first: `make app` (it builds the UI into the binary).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out="$root/target/e2e/web"
bin="$root/target/debug/overseer"
[ -x "$bin" ] || { echo "web e2e: $bin is missing; run 'make app' first" >&2; exit 1; }
for b in "${CHROMIUM:-/usr/bin/chromium}" "${CHROMEDRIVER:-/usr/bin/chromedriver}"; do
  [ -x "$b" ] || { echo "web e2e: $b is missing; run 'make setup' (chromium, chromium-driver)" >&2; exit 1; }
done
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Strays (a CLI call without the test's env) stay out of ~.
export OVERSEER_DATA_DIR="$work/data" OVERSEER_CONFIG_DIR="$work/config"
export OVERSEER_CLI="$bin" E2E_OUT="$out"
cd "$root/tests/e2e/web"
if [ $# -gt 0 ]; then files=("$@"); else files=(./*.test.mjs); fi
node --test --test-concurrency=1 "${files[@]}"

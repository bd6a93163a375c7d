#!/usr/bin/env bash
# Installs what building, running and testing Overseer needs, and only what is
# missing: Debian/Ubuntu packages (with apt when root, else it prints the exact
# sudo line; bubblewrap is what contains every run), the Rust toolchain check,
# and the npm packages of the UI and the end-to-end tests. Safe to run again: a warm machine skips every step.
set -euo pipefail
cd "$(dirname "$0")/.."

# openssh-server: the hosts tests run a real sshd per test host.
PKGS=(build-essential pkg-config curl file libwebkit2gtk-4.1-dev libssl-dev libxdo-dev
  libayatana-appindicator3-dev librsvg2-dev xvfb xauth x11-utils webkit2gtk-driver
  dbus dbus-x11 dunst imagemagick python3 git bubblewrap slirp4netns xdotool x11-xserver-utils
  chromium chromium-driver openssl openssh-server)

missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${missing[*]}, and this is not a Debian/Ubuntu machine; install them with your package manager" >&2
    exit 1
  fi
  cmd=(apt-get install -y --no-install-recommends "${missing[@]}")
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${cmd[@]}" >/dev/null
  else
    echo "setup: these system packages are missing: ${missing[*]}" >&2
    echo "setup: install them with:" >&2
    echo "  sudo apt-get update && sudo ${cmd[*]}" >&2
    exit 1
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo is missing; install Rust from https://rustup.rs and run this again" >&2
  exit 1
fi

# cargo-fuzz, for `make fuzz` and the fuzz smoke run of `make test`.
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "setup: cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "setup: node $node_major is too old; Overseer's UI needs node 20 or newer" >&2
  exit 1
fi

# npm packages: install when node_modules is missing or older than the lockfile.
for dir in ui tests/e2e tests/real-agents; do
  lock="$dir/package-lock.json"
  [ -f "$dir/package.json" ] || continue
  stamp="$dir/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || { [ -f "$lock" ] && [ "$lock" -nt "$stamp" ]; }; then
    echo "setup: npm packages for $dir"
    if [ -f "$lock" ]; then
      # npm ci refuses a lockfile that lacks an optional package of another
      # platform the registry does not serve (Qwen Code's clipboard helpers
      # for macOS and Windows): then install the lockfile's versions with
      # npm install, which skips them, without rewriting the lockfile.
      (cd "$dir" && { npm ci --no-audit --no-fund --loglevel=silent 2>/dev/null \
        || npm install --no-save --no-audit --no-fund --loglevel=error; })
    else
      (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
    fi
  fi
done

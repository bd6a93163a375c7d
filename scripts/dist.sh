#!/usr/bin/env bash
# `make dist`: release packages with Tauri's bundler, written to
# target/release/bundle/deb/*.deb and target/release/bundle/appimage/*.AppImage.
# Each holds the app (/usr/bin/overseer-app), the `overseer` CLI and the demo
# agent (`overseer-demo-agent`) side by side in usr/bin, a desktop entry and
# icons in every size (src-tauri/tauri.conf.json, "bundle").
#
# Needs what `make setup` installs, plus the Tauri CLI from npm, pinned to the
# tauri crate's version in Cargo.lock and kept in target/dist-tools (not in a
# lockfile: see ../shared/design/LINUX-TOOLCHAIN.md). The AppImage bundler
# downloads linuxdeploy and its plugins from github.com on first use (cached in
# target/.tauri/); where github.com cannot be reached, `DIST_BUNDLES=deb`
# builds the .deb alone.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bundles="${DIST_BUNDLES:-deb,appimage}"
# tauri.conf.json's bundle takes the CLI and the demo agent from target/release.
if [ -n "${CARGO_TARGET_DIR:-}" ] && [ "$(realpath -m "$CARGO_TARGET_DIR")" != "$root/target" ]; then
  echo "dist: CARGO_TARGET_DIR=$CARGO_TARGET_DIR, but the packages take their binaries from target/release; unset it and retry" >&2
  exit 1
fi

# The Tauri CLI, the version of the tauri crate the app is built with.
want=${TAURI_CLI_VERSION:-$(awk '$0 == "name = \"tauri\"" { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)}
if [ -z "$want" ]; then
  echo "dist: cannot read the tauri crate's version from Cargo.lock; set TAURI_CLI_VERSION=2.x.y and retry" >&2
  exit 1
fi
tools="$root/target/dist-tools"
pkg="$tools/node_modules/@tauri-apps/cli"
have=$(node -p "require('$pkg/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "dist: installing @tauri-apps/cli@$want (npm) into target/dist-tools"
  mkdir -p "$tools"
  if ! npm install --prefix "$tools" --no-save --no-audit --no-fund --loglevel=error "@tauri-apps/cli@$want"; then
    echo "dist: npm could not install @tauri-apps/cli@$want; check the network, or set TAURI_CLI_VERSION to a published 2.x version" >&2
    exit 1
  fi
fi
tauri=(node "$pkg/tauri.js")

echo "dist: building the UI and the release binaries"
# The UI, built aside and copied to ui/dist only when it differs: an unchanged
# ui/dist keeps its mtimes, so the release app and CLI (which embed it) are not rebuilt.
ui_out="$root/target/dist-ui"
(cd ui && npm run build -- --outDir "$ui_out" --emptyOutDir)
if ! diff -r -q "$ui_out" ui/dist >/dev/null 2>&1; then
  rm -rf ui/dist
  cp -r "$ui_out" ui/dist
fi
cargo build --release -p overseer-app -p overseer-cli -p overseer-demo-agent

out="$root/target/release/bundle"
rm -rf "$out/deb" "$out/appimage"
echo "dist: bundling $bundles"
log="$root/target/release/dist-bundle.log"
if ! "${tauri[@]}" bundle --bundles "$bundles" 2>&1 | tee "$log"; then
  if [[ "$bundles" == *appimage* ]] && grep -qiE 'linuxdeploy|AppRun|download|github' "$log"; then
    echo "dist: the AppImage bundler could not fetch its tools (linuxdeploy, from github.com); see $log." >&2
    echo "dist: with network to github.com run again, or build the .deb alone: make dist DIST_BUNDLES=deb" >&2
  else
    echo "dist: the bundler failed; its output is in $log" >&2
  fi
  exit 1
fi

found=0
for f in "$out"/deb/*.deb "$out"/appimage/*.AppImage; do
  [ -f "$f" ] || continue
  found=1
  echo "dist: $(du -h "$f" | cut -f1)	$f"
done
[ "$found" = 1 ] || { echo "dist: the bundler wrote no package under $out" >&2; exit 1; }

#!/usr/bin/env bash
# `make dist-test`: the packages `make dist` built, installed and run as a user
# would. The .deb is checked (control fields, files, desktop entry, icons in
# every size) and unpacked into a temporary root with `dpkg-deb -x`; the
# AppImage is extracted and checked the same way, and run itself with
# APPIMAGE_EXTRACT_AND_RUN=1 (no FUSE needed). Each install's CLI is run from
# where it lies, with no Overseer on PATH, then tests/dist/installed.test.mjs
# opens each installed app under Xvfb on a fresh data dir (WebKitWebDriver and
# the e2e harness's helpers). Screenshots and logs go to target/dist-test/.
#
# DIST_BUNDLES (default deb,appimage) names the packages that must be there.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/target/dist-test"
bundle="$root/target/release/bundle"
bundles="${DIST_BUNDLES:-deb,appimage}"

fail() {
  echo "dist-test: $*" >&2
  exit 1
}

if [ -z "${OVERSEER_DIST_INNER:-}" ]; then
  # Nothing of Overseer may be found by name: each piece must find the
  # others beside itself. A system-wide install would hide a broken lookup.
  # Node stays reachable for the test runner; nothing else from the caller.
  node_dir=$(dirname "$(command -v node)")
  export PATH="$node_dir:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  unset OVERSEER_CLI OVERSEER_DATA_DIR OVERSEER_CONFIG_DIR
  for b in overseer overseer-app overseer-demo-agent; do
    if p=$(command -v "$b"); then
      fail "$p is on PATH: an installed Overseer would hide a lookup that only works by name; run this where Overseer is not installed (a container, CI)"
    fi
  done
  if ! command -v desktop-file-validate >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "dist-test: installing desktop-file-utils"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends desktop-file-utils >/dev/null
    else
      fail "desktop-file-validate is missing: sudo apt-get install desktop-file-utils"
    fi
  fi

  mkdir -p "$out"
  rm -f "$out"/*.png "$out"/*.log
  work=$(mktemp -d "${TMPDIR:-/tmp}/overseer-dist-test.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  installs="[]"
  add_install() { # name app cli demo-agent bin-dir-regex
    installs=$(python3 -c 'import json,sys; l=json.loads(sys.argv[1]); l.append(dict(zip(["name","app","cli","demoAgent","binDir"], sys.argv[2:]))); print(json.dumps(l))' "$installs" "$@")
  }
  re_escape() { python3 -c 'import re,sys; print(re.escape(sys.argv[1]))' "$1"; }

  # An icon of the exact size, a PNG.
  png_size() { python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); assert d[:8]==b"\x89PNG\r\n\x1a\n", "not a PNG"; print("%dx%d" % struct.unpack(">II", d[16:24]))' "$1"; }

  # The three binaries, runnable, and the CLI working from where it lies:
  # it finds the demo agent beside itself.
  check_binaries() { # dir
    local dir=$1
    for b in overseer-app overseer overseer-demo-agent; do
      [ -x "$dir/$b" ] || fail "$dir/$b is missing or not executable"
    done
    local d="$work/cli-$RANDOM"
    "$dir/overseer" --data-dir "$d/data" --config-dir "$d/config" agents list --json >"$d.json" ||
      fail "$dir/overseer agents list failed"
    python3 - "$d.json" "$dir/overseer-demo-agent" <<'EOF' || fail "the installed CLI does not find the demo agent beside itself"
import json, sys
demo = [a for a in json.load(open(sys.argv[1])) if a["name"] == "demo"][0]
assert demo["command"] == sys.argv[2], f"demo agent: {demo['command']}, expected {sys.argv[2]}"
assert demo["needs"] == [], demo["needs"]
EOF
  }

  # The desktop entry: valid, starting the app, its icon in every size.
  check_desktop() { # desktop-file icons-root bin-dir
    local desktop=$1 icons=$2 bin=$3
    desktop-file-validate "$desktop" || fail "$desktop is not a valid desktop entry"
    local exec icon name
    exec=$(sed -n 's/^Exec=\([^ ]*\).*/\1/p' "$desktop" | head -1)
    icon=$(sed -n 's/^Icon=//p' "$desktop" | head -1)
    name=$(sed -n 's/^Name=//p' "$desktop" | head -1)
    [ "$name" = Overseer ] || fail "$desktop: Name=$name, expected Overseer"
    [ -x "$bin/$(basename "$exec")" ] || fail "$desktop: Exec=$exec is not an installed binary"
    grep -q '^Categories=.*Development' "$desktop" || fail "$desktop: not in the Development category"
    for s in 16 24 32 48 64 128 256 512; do
      local f="$icons/${s}x${s}/apps/$icon.png"
      [ -f "$f" ] || fail "no ${s}x${s} icon: $f"
      [ "$(png_size "$f")" = "${s}x${s}" ] || fail "$f is $(png_size "$f"), not ${s}x${s}"
    done
  }

  if [[ "$bundles" == *deb* ]]; then
    debs=("$bundle"/deb/*.deb)
    [ -f "${debs[0]}" ] || fail "no .deb in $bundle/deb: run make dist first"
    [ ${#debs[@]} -eq 1 ] || fail "more than one .deb in $bundle/deb: ${debs[*]}"
    deb=${debs[0]}
    echo "dist-test: $deb"
    [ "$(dpkg-deb -f "$deb" Package)" = overseer ] || fail "package name is $(dpkg-deb -f "$deb" Package), expected overseer"
    depends=$(dpkg-deb -f "$deb" Depends)
    for dep in libwebkit2gtk-4.1-0 libgtk-3-0 bubblewrap slirp4netns git; do
      [[ "$depends" == *"$dep"* ]] || fail "Depends lacks $dep: $depends"
    done
    droot="$work/deb-root"
    dpkg-deb -x "$deb" "$droot"
    check_binaries "$droot/usr/bin"
    desktops=("$droot"/usr/share/applications/*.desktop)
    [ ${#desktops[@]} -eq 1 ] && [ -f "${desktops[0]}" ] || fail "expected one desktop entry in usr/share/applications"
    check_desktop "${desktops[0]}" "$droot/usr/share/icons/hicolor" "$droot/usr/bin"
    add_install deb "$droot/usr/bin/overseer-app" "$droot/usr/bin/overseer" "$droot/usr/bin/overseer-demo-agent" \
      "^$(re_escape "$droot/usr/bin")\$"
  fi

  if [[ "$bundles" == *appimage* ]]; then
    images=("$bundle"/appimage/*.AppImage)
    [ -f "${images[0]}" ] || fail "no AppImage in $bundle/appimage: run make dist first"
    [ ${#images[@]} -eq 1 ] || fail "more than one AppImage in $bundle/appimage: ${images[*]}"
    image=${images[0]}
    echo "dist-test: $image"
    [ -x "$image" ] || fail "$image is not executable"
    (cd "$work" && "$image" --appimage-extract >/dev/null) || fail "$image --appimage-extract failed"
    aroot="$work/squashfs-root"
    check_binaries "$aroot/usr/bin"
    desktops=("$aroot"/*.desktop)
    [ ${#desktops[@]} -eq 1 ] && [ -f "${desktops[0]}" ] || fail "expected one desktop entry at the AppImage's root"
    check_desktop "${desktops[0]}" "$aroot/usr/share/icons/hicolor" "$aroot/usr/bin"
    # The app itself runs from the AppImage (extracted by its runtime into
    # $TMPDIR); it must find the CLI and the demo agent there.
    tmp_re=$(re_escape "${TMPDIR:-/tmp}")
    add_install appimage "$image" "$aroot/usr/bin/overseer" "$aroot/usr/bin/overseer-demo-agent" \
      "^$tmp_re/(appimage_extracted_[0-9a-f]+|\\.mount_[^/]+)/usr/bin\$"
    export APPIMAGE_EXTRACT_AND_RUN=1
  fi

  [ "$installs" != "[]" ] || fail "DIST_BUNDLES=$bundles names no package this test knows (deb, appimage)"
  export DIST_INSTALLS="$installs" OVERSEER_DIST_INNER=1
  # Not exec: the trap removes the unpacked roots afterwards.
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$0" "$@"
  exit $?
fi

# Inside Xvfb and a private session bus: WebKitWebDriver, started here rather
# than by the e2e harness's session.sh, which points OVERSEER_CLI at
# target/debug (the app would inherit it and never look beside itself).
work=$(mktemp -d "${TMPDIR:-/tmp}/overseer-dist-session.XXXXXX")
export OVERSEER_DATA_DIR="$work/data" OVERSEER_CONFIG_DIR="$work/config"
driver_pid=
cleanup() {
  [ -z "$driver_pid" ] || kill "$driver_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TAURI_WEBVIEW_AUTOMATION=true WebKitWebDriver --port="$port" >"$out/webdriver.log" 2>&1 &
driver_pid=$!
for _ in $(seq 1 100); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
export WEBDRIVER_URL="http://127.0.0.1:$port/" E2E_OUT="$out"
cd "$root/tests/dist"
node --test --test-concurrency=1 ./installed.test.mjs

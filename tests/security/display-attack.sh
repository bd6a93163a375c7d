#!/bin/sh
# Tries ATTEMPTS times (0.5 s apart) to reach the desktop from where it runs:
# - the X server by its abstract socket (@/tmp/.X11-unix/X<n>) and by its
#   path socket, each on its own and raw: connected, and the connection
#   set-up (no cookie) accepted;
# - then as any X client would (xdotool: abstract first, then the path):
#   find the Overseer window and type the inbox's answer keys into it
#   (j: the first card, y: yes);
# - the session bus (an abstract socket): set LD_PRELOAD for every service
#   it starts (UpdateActivationEnvironment) and have it start one.
# Every attempt that got through leaves $OUT/evidence-NAME; $OUT/display-log
# says why each failed. The test also runs it OUTSIDE any sandbox (OUT= a
# directory of its own, ATTEMPTS=1) while a harmless command waits in the
# window, to show the same attempts work there, the keys included (TYPE=0:
# find the window, type nothing).
cd "$(dirname "$0")/.." || exit 1
. ./redteam/targets.env
OUT=${OUT:-redteam/out}
TYPE=${TYPE:-1}
ATTEMPTS=${ATTEMPTS:-10}
mkdir -p "$OUT"
log() { echo "$*" >> "$OUT/display-log"; }
evidence() { echo "$2" >> "$OUT/evidence-$1"; log "REACHED $1: $2"; }
n=0
while [ $n -lt "$ATTEMPTS" ]; do
  n=$((n + 1))
  for kind in abstract path; do
    if python3 - "$kind" "$X_NUM" >> "$OUT/display-log" 2>&1 <<'PY'
import socket, sys
kind, num = sys.argv[1], sys.argv[2]
name = "/tmp/.X11-unix/X" + num
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
try:
    s.connect(("\0" + name) if kind == "abstract" else name)
    # X11 connection set-up, little-endian, protocol 11.0, no authorization:
    # a server that grants this user answers 1 (Success).
    s.sendall(b"l\0\x0b\0\0\0\0\0\0\0\0\0")
    reply = s.recv(8)
    print("x11", kind, name, "set-up answered", reply[:1])
    sys.exit(0 if reply[:1] == b"\x01" else 3)
except OSError as e:
    print("x11", kind, name, e)
    sys.exit(1)
PY
    then evidence "x11-$kind" "connected, set-up accepted"; fi
  done
  win=$(DISPLAY=":$X_NUM" XAUTHORITY=/nonexistent xdotool search --name "^$WINDOW_NAME\$" 2>> "$OUT/display-log" | head -n 1)
  if [ -n "$win" ]; then
    evidence x11-window "$win"
    if [ "$TYPE" = 1 ]; then
      DISPLAY=":$X_NUM" XAUTHORITY=/nonexistent xdotool windowfocus --sync "$win" key j y \
        2>> "$OUT/display-log" && evidence x11-typed "j y into $win"
    fi
  fi
  dbus-send --bus="$DBUS_ADDRESS" --print-reply --dest=org.freedesktop.DBus \
    /org/freedesktop/DBus org.freedesktop.DBus.UpdateActivationEnvironment \
    "dict:string:string:LD_PRELOAD,/tmp/redteam.so" >> "$OUT/display-log" 2>&1 \
    && evidence dbus-environment "LD_PRELOAD set for what the bus starts"
  # The bus answers once the service owns its name; one that never does
  # (the test's touches a file and exits) was started all the same: the bus
  # acted on the request unless the connection itself failed.
  got=$(dbus-send --bus="$DBUS_ADDRESS" --print-reply --reply-timeout=2000 --dest=org.freedesktop.DBus \
    /org/freedesktop/DBus org.freedesktop.DBus.StartServiceByName "string:$DBUS_SERVICE" uint32:0 2>&1)
  echo "$got" >> "$OUT/display-log"
  case "$got" in
    *"method return"* | *NoReply* | *Spawn*) evidence dbus-service "$DBUS_SERVICE: $got" ;;
  esac
  echo $n > "$OUT/display-attempts"
  sleep 0.5
done

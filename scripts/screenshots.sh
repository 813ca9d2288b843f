#!/usr/bin/env bash
# Take the README's screenshots (docs/screenshots/*.png) of the real app under a virtual X
# server with a window manager and a tray host. Needs Xvfb, evilwm and trayer (installed here
# with apt when missing, if we may). Every process started here is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test >/dev/null 2>&1 || { echo "screenshots: scripts/setup.sh --test failed" >&2; exit 1; }
if ! command -v trayer >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq trayer >/dev/null
  elif sudo -n true 2>/dev/null; then sudo -n apt-get install -y -qq trayer >/dev/null
  else echo "screenshots: please install trayer (a tray host)" >&2; exit 1; fi
fi
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
exec 3< <(Xvfb -displayfd 1 -screen 0 1280x800x24 -nolisten tcp 2>/dev/null & echo "pid $!")
read -r _ xvfb_pid <&3; pids+=("$xvfb_pid")
read -r display <&3
export DISPLAY=":$display"
evilwm >/dev/null 2>&1 & pids+=("$!")
trayer --edge top --align right --widthtype pixel --width 160 --height 32 \
  --transparent false --tint 0x2b2b2b >/dev/null 2>&1 & pids+=("$!")
sleep 1
.venv/bin/python scripts/screenshots.py "$@"

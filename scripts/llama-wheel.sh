#!/usr/bin/env bash
# Print the path of the portable llama-cpp-python wheel, building it first if this machine has
# none yet. Setup (scripts/setup.sh) and the installer (packaging/bundle.sh) both install this one
# wheel, so the app from a checkout runs the same llama.cpp the package ships.
#
#   scripts/llama-wheel.sh PYTHON     PYTHON: an interpreter to build with (3.11 or newer); the
#                                     wheel binds llama.cpp through ctypes, so it fits any
#                                     Python 3 on this platform (py3-none-linux_x86_64)
#
# Portable: ggml's CPU backend built in all its variants (SSE4.2 up to AVX-512 and AMX), each a
# library of its own, and never for the CPU of the machine that builds it (a -march=native build
# made on one machine dies with an illegal instruction on another, and an AMX build dies even on
# a CPU that reports AMX when its kernel has not enabled the tile state). Which variant runs is
# chosen at load by Chamberlain's model worker (broker/llm/cpu_variants.py), which probes it.
#
# The wheel is cached outside the repository, keyed by version and flags, in
# ${CHAMBERLAIN_BUILD_CACHE:-${XDG_CACHE_HOME:-~/.cache}/chamberlain-build}/wheels/ (about 13
# minutes on 2 cores the first time, seconds afterwards, fresh clones included).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "llama-wheel: $*" >&2; }
die() { echo "llama-wheel: error: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: scripts/llama-wheel.sh PYTHON"
py=$1
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "$py is not Python 3.11 or newer"

lock=requirements.lock
version=$(sed -n 's/^llama_cpp_python==//p' "$lock")
[ -n "$version" ] || die "$lock pins no llama_cpp_python version"
# ggml's CPU variants are loaded by name from a folder (GGML_BACKEND_DL); none is native.
cmake_args=${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON}
key=$(printf '%s' "$cmake_args" | sha256sum | cut -c1-12)
cache=${CHAMBERLAIN_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chamberlain-build}
wheel_dir=$cache/wheels/llama_cpp_python-$version-$key

cached_wheel() {
  local w
  for w in "$wheel_dir"/llama_cpp_python-"$version"-*.whl; do
    if [ -f "$w" ]; then echo "$w"; return 0; fi
  done
  return 0
}

wheel=$(cached_wheel)
if [ -n "$wheel" ]; then
  echo "$wheel"
  exit 0
fi

for tool in gcc g++ make; do
  command -v "$tool" >/dev/null \
    || die "building llama.cpp needs $tool (on Debian/Ubuntu: apt-get install gcc g++ make)"
done
say "building llama-cpp-python $version in all its CPU variants (once per machine, about" \
  "13 minutes on 2 cores)..."
mkdir -p "$cache/wheels"
work=$(mktemp -d "$cache/wheels/.build.XXXXXX")
ticker=""
cleanup() { [ -n "$ticker" ] && kill "$ticker" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
( trap 'kill "$nap" 2>/dev/null; exit 0' TERM; elapsed=0
  while :; do sleep 30 & nap=$!; wait "$nap"; elapsed=$((elapsed + 30))
    echo "llama-wheel: still building llama.cpp (${elapsed} s)..." >&2; done ) &
ticker=$!
started=$SECONDS
# A venv of its own to build with (PYTHON may have no pip); the sdist, then a wheel from it with
# pip's wheel cache off: that cache may hold a native build of this same version (an older setup
# made one) and would be handed back instead.
"$py" -m venv "$work/venv" >"$work/build.log" 2>&1 \
  || { tail -n 5 "$work/build.log" >&2; die "$py cannot make a virtualenv (apt-get install python3-venv)"; }
bpy=$work/venv/bin/python
if ! "$bpy" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
  -d "$work/src" "llama_cpp_python==$version" >>"$work/build.log" 2>&1; then
  tail -n 20 "$work/build.log" >&2
  die "could not download the llama_cpp_python $version source"
fi
if ! CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  "$bpy" -m pip wheel -q --disable-pip-version-check --no-deps --no-cache-dir \
  -w "$work/wheel" "$work"/src/*.tar.gz >>"$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log" >&2
  die "building llama-cpp-python failed (the log's end is above)"
fi
mkdir -p "$wheel_dir"
printf '%s\n' "$cmake_args" >"$wheel_dir/cmake-args.txt"
for built in "$work"/wheel/*.whl; do
  mv "$built" "$wheel_dir/.$(basename "$built").part"
  mv "$wheel_dir/.$(basename "$built").part" "$wheel_dir/$(basename "$built")"  # whole or absent
done
say "built in $((SECONDS - started)) s"
cached_wheel

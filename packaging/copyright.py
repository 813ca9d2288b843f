"""Write the package's copyright file (Debian's machine-readable format) and the licence texts of
everything the bundle carries, from the build venv's own package metadata.

    python packaging/copyright.py DOC_DIR [--exclude NAME ...]

Run with the Python of the venv the bundle was built from (packaging/bundle.sh's
build/venv-bundle): every distribution installed there is in the bundle, except the build tools
named with --exclude. DOC_DIR (usr/share/doc/chamberlain in the package's tree) gets:

- `copyright`: a header, a paragraph for Chamberlain's own files, one for the Python interpreter
  the bundle carries, and one per bundled distribution with its licence as its metadata states
  it (License-Expression, else License, else its trove classifiers);
- `licenses/<name>/`: the licence files each distribution ships (PEP 639 `licenses/` or the
  LICENSE/COPYING/NOTICE files in its dist-info), and `licenses/python/LICENSE` from the
  interpreter's own installation. Qt and FFmpeg (LGPL, inside PySide6 and OpenCV) come with
  their packages' own notices there.

Exit status 1 when a bundled distribution neither states a licence nor ships a licence file (it
must be looked at, not shipped unnamed); 2 on a usage error.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

OWN = "chamberlain"
HEADER = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: Chamberlain
Comment: Chamberlain is shipped with the Python interpreter and the Python packages it runs on
 (a PyInstaller bundle in /usr/lib/chamberlain). Each is listed below with its licence as its
 own metadata states it; their licence files are in /usr/share/doc/chamberlain/licenses/.
"""
_LICENSE_FILE = re.compile(r"^(licen[cs]e|copying|notice|authors|copyright)", re.I)


def normal_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def stated_licence(dist: metadata.Distribution) -> str | None:
    meta = dist.metadata
    expression = meta.get("License-Expression")
    if expression:
        return str(expression).strip()
    text = (meta.get("License") or "").strip()
    # Some packages put the whole licence text in the field: its first line names it.
    if text and text.upper() != "UNKNOWN":
        first = text.splitlines()[0].strip()
        return first if len(first) <= 120 else first[:117] + "..."
    classifiers = [
        c.split("::")[-1].strip()
        for c in meta.get_all("Classifier") or []
        if c.startswith("License ::") and c.count("::") >= 2
    ]
    return " or ".join(dict.fromkeys(classifiers)) or None


def top_names(dist: metadata.Distribution) -> list[str]:
    """The top-level files and folders a distribution installed (its packages, its extension
    modules, a wheel's bundled `<name>.libs`), as the bundle's folder may hold them."""
    tops: dict[str, None] = {}
    for entry in dist.files or []:
        first = Path(str(entry)).parts[0] if Path(str(entry)).parts else ""
        if not first or first == ".." or first.endswith((".dist-info", ".data", ".pth")):
            continue
        if first == "__pycache__" or first.endswith(".py"):
            continue  # a single module: inside the program's archive
        tops[first] = None
    return list(tops)


def licence_files(dist: metadata.Distribution) -> list[Path]:
    found: list[Path] = []
    for entry in dist.files or []:
        parts = Path(str(entry)).parts
        if not parts or not parts[0].endswith(".dist-info"):
            continue
        if "licenses" in parts[1:-1] or _LICENSE_FILE.match(parts[-1]):
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                found.append(path)
    return found


def write(doc: Path, exclude: set[str]) -> list[str]:
    licences = doc / "licenses"
    if licences.exists():
        shutil.rmtree(licences)
    licences.mkdir(parents=True)
    paragraphs = [
        HEADER,
        "Files: *\nCopyright: the Chamberlain developers\nLicense: all-rights-reserved\n"
        " No licence has been granted for Chamberlain's own code yet: all rights reserved.\n",
    ]
    python_licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    if python_licence.is_file():
        (licences / "python").mkdir()
        shutil.copyfile(python_licence, licences / "python" / "LICENSE")
        (licences / "python" / "LICENSE").chmod(0o644)
    version = ".".join(map(str, sys.version_info[:3]))
    paragraphs.append(
        "Files: usr/lib/chamberlain/_internal/libpython*\n"
        "       usr/lib/chamberlain/_internal/python3*\n"
        f"Copyright: the Python Software Foundation (CPython {version})\n"
        "License: PSF-2.0\n See /usr/share/doc/chamberlain/licenses/python/LICENSE.\n"
    )
    unnamed: list[str] = []
    seen: set[str] = set()
    for dist in sorted(metadata.distributions(), key=lambda d: normal_name(d.metadata["Name"])):
        name = normal_name(dist.metadata["Name"])
        if name in seen or name in exclude or name == OWN:
            continue
        seen.add(name)
        licence = stated_licence(dist)
        files = licence_files(dist)
        if licence is None:
            if not files:
                unnamed.append(name)
                continue
            # Its metadata names none, but it ships the text (sqlcipher3's zlib-style terms).
            licence = "other (its metadata names none; see its licence file)"
        if files:
            target = licences / name
            target.mkdir()
            for path in files:
                shutil.copyfile(path, target / path.name)  # 0644, whatever the wheel's mode
                (target / path.name).chmod(0o644)
        where = f"/usr/share/doc/chamberlain/licenses/{name}/" if files else "its metadata"
        author = (dist.metadata.get("Author") or dist.metadata.get("Author-email") or "").strip()
        holder = author.splitlines()[0] if author else f"the {dist.metadata['Name']} authors"
        patterns = (
            "\n       ".join(f"usr/lib/chamberlain/_internal/{top}*" for top in top_names(dist))
            or "usr/lib/chamberlain/chamberlain"
        )
        paragraphs.append(
            f"Files: {patterns}\nCopyright: {holder}\nLicense: {licence}\n"
            f"Comment: {dist.metadata['Name']} {dist.version}. Its pure-Python modules are in "
            f"the program's own archive (usr/lib/chamberlain/chamberlain); the licence files "
            f"it ships are in {where}.\n"
        )
    (doc / "copyright").write_text("\n".join(paragraphs), encoding="utf-8")
    return unnamed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("doc", type=Path)
    parser.add_argument("--exclude", action="append", default=[])
    options = parser.parse_args(argv)
    options.doc.mkdir(parents=True, exist_ok=True)
    unnamed = write(options.doc, {normal_name(n) for n in options.exclude})
    if unnamed:
        print(
            "copyright: these bundled packages state no licence: " + ", ".join(unnamed),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

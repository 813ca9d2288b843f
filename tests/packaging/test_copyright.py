"""packaging/copyright.py writes the package's copyright file from a venv's real metadata: run
here with the dev venv, whose packages stand in for the bundle's."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "packaging" / "copyright.py"


def _write(doc: Path, *exclude: str) -> subprocess.CompletedProcess[str]:
    args = [a for name in exclude for a in ("--exclude", name)]
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(doc), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _paragraphs(copyright_file: Path) -> list[dict[str, str]]:
    found = []
    for block in copyright_file.read_text(encoding="utf-8").split("\n\n"):
        fields = dict(re.findall(r"^([A-Z][\w-]*): (.*)$", block, re.M))
        if fields:
            found.append(fields)
    return found


def test_every_installed_package_is_named_with_its_licence_and_its_licence_files(tmp_path):
    done = _write(tmp_path, "pytest")
    assert done.returncode == 0, done.stderr
    paragraphs = _paragraphs(tmp_path / "copyright")
    assert paragraphs[0]["Format"].startswith("https://www.debian.org/doc/packaging-manuals/")
    by_package = {
        re.match(r"([^ ]+) ", p["Comment"]).group(1).lower(): p  # type: ignore[union-attr]
        for p in paragraphs
        if "Comment" in p and "Files" in p
    }
    # As pydantic's own metadata states it (License-Expression: MIT).
    stated = metadata.distribution("pydantic").metadata["License-Expression"]
    assert stated
    assert by_package["pydantic"]["License"] == stated
    assert by_package["pydantic"]["Files"] == "usr/lib/chamberlain/_internal/pydantic*"
    # Its licence text is there, readable and not executable (lintian's executable-in-doc).
    copied = next((tmp_path / "licenses" / "pydantic").iterdir())
    assert "Permission is hereby granted" in copied.read_text(encoding="utf-8")
    assert stat.S_IMODE(copied.stat().st_mode) == 0o644
    # The interpreter the bundle carries, with the PSF's licence.
    assert any(p.get("License") == "PSF-2.0" for p in paragraphs)
    assert (tmp_path / "licenses" / "python" / "LICENSE").is_file()
    # Chamberlain's own files are not listed as a third party's; an excluded tool is not there.
    assert "chamberlain" not in by_package
    assert "pytest" not in by_package
    assert not (tmp_path / "licenses" / "pytest").exists()
    assert "psutil" in by_package


def test_writing_again_replaces_the_licence_files_rather_than_mixing_two_builds(tmp_path):
    stale = tmp_path / "licenses" / "a-package-no-longer-bundled" / "LICENSE"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    done = _write(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not stale.parent.exists()

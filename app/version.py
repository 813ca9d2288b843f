"""Chamberlain's version: the one number in pyproject.toml, read from the installed package's
metadata (a source checkout installed with `pip install -e .` and the bundled app alike: the
PyInstaller spec copies the metadata into the bundle). No Qt here: the CLI prints it too."""

from __future__ import annotations

from importlib import metadata

DIST_NAME = "chamberlain"


def version() -> str:
    """ "0.1.0", or "unknown" when the package's metadata is not installed (run from a bare
    checkout without `pip install -e .`)."""
    try:
        return metadata.version(DIST_NAME)
    except metadata.PackageNotFoundError:
        return "unknown"

"""Showing the user nobody this checkout and its Python when they lie in a folder only root may
enter (a pyenv Python under /root, as on CI): `reach_wrapper()` is a bubblewrap prefix, run as
root before `runuser`, that shows them read-only in a private mount namespace.
"""

from __future__ import annotations

import functools
import shutil
import stat
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def needed_folders() -> list[Path]:
    """What nobody must reach to run this checkout: its Python's installation, the venv, it."""
    return [Path(sys.base_prefix).resolve(), Path(sys.prefix), REPO]


def closed_folder(path: Path) -> Path | None:
    """The outermost folder on the way to `path` that others may not enter, if any."""
    for place in reversed([path, *path.parents]):
        if not place.stat().st_mode & stat.S_IXOTH:
            return place
    return None


@functools.lru_cache(maxsize=1)
def reach_wrapper() -> tuple[str, ...]:
    """The wrapper (run as root) that shows nobody the folders it needs inside a closed one, in
    a private mount namespace: the closed folder becomes an empty tmpfs holding only those,
    read-only. Empty where nobody can reach everything already."""
    mounts: list[str] = []
    closed: set[Path] = set()
    for path in needed_folders():
        folder = closed_folder(path)
        if folder is None:
            continue
        if folder not in closed:
            closed.add(folder)
            mounts += ["--perms", "0755", "--tmpfs", str(folder)]
        # bubblewrap would make the folders on the way root's alone (0700).
        between = [p for p in path.parents if folder in p.parents]
        for step in reversed(between):
            mounts += ["--perms", "0755", "--dir", str(step)]
        mounts += ["--ro-bind", str(path), str(path)]
    if not mounts:
        return ()
    bwrap = shutil.which("bwrap") or "bwrap"
    return (bwrap, "--dev-bind", "/", "/", "--die-with-parent", *mounts, "--")

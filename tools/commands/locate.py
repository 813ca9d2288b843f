"""Where a program really is: the file a name runs, on the PATH a command gets.

`locate_program` resolves symlinks, so an `ls` of the person's own in ~/bin, or a link to `rm`
under another name, is seen for what it runs. `default_search_path` keeps only absolute PATH
entries (an empty or relative one means the working folder). `SYSTEM_PROGRAM_DIRS` are the
folders whose programs belong to the system.

This module must never run a program; it only looks a name up.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# Folders whose programs belong to the system (not writable by the user, normally). A read-only
# command must resolve into one: an `ls` of the user's own in ~/bin is not the `ls` on the list.
SYSTEM_PROGRAM_DIRS = (
    "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/opt/homebrew/", "/nix/store/",
    "/run/current-system/", "/System/", "/snap/",
)  # fmt: skip


def default_search_path() -> str:
    """PATH as commands get it: absolute entries only (an empty or relative one means cwd)."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(p for p in entries if p and os.path.isabs(p))


def locate_program(word: str, search_path: str, cwd: Path) -> Path | None:
    """The real file (symlinks resolved) `word` runs, or None when there is none."""
    if "/" in word:
        candidate = Path(word) if os.path.isabs(word) else cwd / word
        found: str | None = os.fspath(candidate) if candidate.is_file() else None
    else:
        found = shutil.which(word, path=search_path)
    if found is None:
        return None
    try:
        return Path(os.path.realpath(found))
    except (OSError, ValueError):
        return None

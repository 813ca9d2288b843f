"""What a fault of the disk or the folder means, in words a person can act on.

Shared by the memory database (``memory/db.py``) and the audit log (``broker/audit/``), so a
full disk reads the same wherever it is met: "the disk holding ~/.chamberlain is full (24 KB
free)", then what to do ("free some space"). The diagnosis comes from the error number when
there is one, and from the file system's own flags and free space: SQLite reports a failed
write of its WAL index or an fsync on a full disk as SQLITE_IOERR, not SQLITE_FULL, and Python
cannot read the errno behind it, so a write that failed on a disk with less than
``NEARLY_FULL_BYTES`` free is called full.

What it must never do: touch the file or the folder it describes (it only stats them), or
suggest moving an intact file aside.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# Below this much free space a failed write is the disk being full: SQLite needs 32 KB for the
# WAL index of a new connection and a page or more per WAL frame; a megabyte leaves no doubt.
NEARLY_FULL_BYTES = 1024 * 1024

DiskProblemKind = Literal["full", "read_only_mount", "not_writable", "failed"]


def shown(path: Path) -> str:
    """`path` as a person reads it: under their home as ``~/…``."""
    try:
        home = Path.home()
    except (KeyError, RuntimeError):  # no HOME and no passwd entry
        return str(path)
    try:
        return "~/" + str(path.relative_to(home)) if path != home else "~"
    except ValueError:
        return str(path)


def free_bytes(folder: Path) -> int | None:
    """The space an unprivileged writer may still use on the disk holding `folder`."""
    try:
        st = os.statvfs(folder)
        return int(st.f_bavail * st.f_frsize)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return None


def _no_free_inodes(folder: Path) -> bool:
    try:
        st = os.statvfs(folder)
        return bool(st.f_files) and int(st.f_favail) == 0
    except (OSError, AttributeError):
        return False


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    return f"{n // 1024} KB"


@dataclass(frozen=True)
class DiskProblem:
    """One diagnosed fault: its kind, where, and the detail the system gave."""

    kind: DiskProblemKind
    path: Path
    free: int | None = None
    detail: str = ""
    code: int | None = None

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def why(self) -> str:
        where = shown(self.folder)
        if self.kind == "full":
            if self.code == errno.EDQUOT:
                return f"your disk quota on the disk holding {where} is used up"
            if self.free is not None and self.free < NEARLY_FULL_BYTES:
                return f"the disk holding {where} is full ({_size(self.free)} free)"
            if _no_free_inodes(self.folder):
                return f"the disk holding {where} can hold no more files (no free inodes)"
            return f"the disk holding {where} is full"
        if self.kind == "read_only_mount":
            return f"the file system holding {where} is mounted read-only"
        if self.kind == "not_writable":
            return f"{shown(self.path)} or its folder is read-only or belongs to another user"
        return f"reading or writing {shown(self.path)} failed ({self.detail or 'an I/O error'})"

    @property
    def fix(self) -> str:
        where = shown(self.folder)
        if self.kind == "full":
            return "free some space" if self.code != errno.EDQUOT else "free some of your files"
        if self.kind == "read_only_mount":
            return "remount it read-write, or set CHAMBERLAIN_HOME to a writable folder"
        if self.kind == "not_writable":
            return f"make {where} and the files in it writable by you"
        return f"check {where} and the disk it is on"


def diagnose(
    path: Path,
    *,
    code: int | None = None,
    full: bool = False,
    denied: bool = False,
    write_failed: bool = False,
    detail: str = "",
) -> DiskProblem:
    """What went wrong at `path`: `code` is the errno if one is known; `full`, `denied` and
    `write_failed` are what the caller's own error said (SQLite's codes)."""
    folder = path.parent
    free = free_bytes(folder)
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows), or a folder that is gone
        read_only = False
    if full or code in (errno.ENOSPC, errno.EDQUOT):
        return DiskProblem("full", path, free, code=code)
    if code == errno.EROFS or read_only:
        return DiskProblem("read_only_mount", path, free)
    if denied or code in (errno.EACCES, errno.EPERM):
        return DiskProblem("not_writable", path, free)
    if write_failed and free is not None and free < NEARLY_FULL_BYTES:
        return DiskProblem("full", path, free)
    return DiskProblem("failed", path, free, detail)


def diagnose_os_error(path: Path, exc: OSError) -> DiskProblem:
    """`diagnose` for an OSError met writing at `path` (its filename, if any, wins)."""
    where = Path(exc.filename) if isinstance(exc.filename, str) else path
    return diagnose(where, code=exc.errno, write_failed=True, detail=exc.strerror or str(exc))

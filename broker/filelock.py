"""Advisory locks between Chamberlain's processes, on a lock file beside the file they guard.

The app, `chamberlain ask` and `chamberlain grants` may run at the same time on one home; a
file they all rewrite (the audit log, grants.json) is changed only under the exclusive lock, and
read under the shared one where a torn read matters. POSIX: flock; Windows: msvcrt byte locking
(which has no shared mode, so readers take the exclusive lock briefly).

This module never decides what a lock protects, and never removes a lock file: deleting one
while another process holds it would let a third take a lock on a new file at the same path.
It also gives a file root creates in someone else's home to that home's owner
(`keep_folder_owner`), so `sudo chamberlain …` never locks a person out of their own files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path

if sys.platform == "win32":
    import msvcrt

    def lock(fd: int, shared: bool) -> None:
        # msvcrt has no shared locks; readers take the exclusive one, briefly.
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError as exc:  # LK_LOCK gives up after about 10 s; keep waiting
                if exc.errno != errno.EDEADLOCK:
                    raise

    def unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def lock(fd: int, shared: bool) -> None:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)

    def unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def held(fd: int, *, shared: bool) -> Iterator[None]:
    """The lock on `fd` for the length of the block."""
    lock(fd, shared)
    try:
        yield
    finally:
        unlock(fd)


def keep_folder_owner(fd: int, folder: Path) -> None:
    """Root writing in someone else's home (`sudo chamberlain grants revoke-all`) gives the file
    it opened to the folder's owner: a root-owned 0600 file would lock its user out."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    owner = os.stat(folder)
    if owner.st_uid != 0 and os.fstat(fd).st_uid != owner.st_uid:
        os.fchown(fd, owner.st_uid, owner.st_gid)

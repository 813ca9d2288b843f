"""Writing the files beside the log: the head, overwritten in place, and the anchor, made once.

The head file records the last seq and hash after every append (signed when the writer has the
install's audit key); the anchor records a signed log's genesis id and is written once, when a
signing writer starts or adopts a log (see ``broker.audit.macs`` for what each proves).

It must never leave an empty or partial head or anchor behind: either reads as an edited one,
which verify reports as tampering. Both are written only by a writer holding the log's lock.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from broker.audit.errors import cannot_write
from broker.audit.files import O_BINARY, head_path
from broker.audit.macs import Head, anchor_bytes
from broker.filelock import keep_folder_owner


class HeadFile:
    """The head file beside the log at `log_path`, kept open between appends."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._fd: int | None = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None

    def write(self, content: Head, *, durable: bool) -> None:
        """Overwrite the head file in place; AuditWriteError if it cannot be written.

        Not write-to-temp-and-rename: that costs a couple of hundred microseconds per append
        on ext4. The head is a few hundred bytes, written at offset 0 in one write of less than
        a page over blocks it already has, so a full disk fails it whole rather than tearing it
        (the old head stays, one line behind, which the next append repairs). If it ever did
        tear, verify reports the head as unreadable and the next append rewrites it (a signing
        writer also marks the log as tampered with: it cannot tell a torn head from an edited
        one). A head file this writer has just created and could not fill is removed, since an
        empty head would read as an edited one.
        """
        head = head_path(self.log_path)
        try:
            try:
                on_disk = os.stat(head)
            except FileNotFoundError:
                on_disk = None
            if self._fd is not None:
                st = os.fstat(self._fd)
                if on_disk is None or (on_disk.st_dev, on_disk.st_ino) != (st.st_dev, st.st_ino):
                    os.close(self._fd)  # deleted or replaced behind our back
                    self._fd = None
            if self._fd is None:
                self._fd = os.open(head, os.O_RDWR | os.O_CREAT | O_BINARY, 0o600)
                keep_folder_owner(self._fd, self.log_path.parent)
        except OSError as exc:
            raise cannot_write(self.log_path, exc) from exc
        data = content.to_bytes()
        try:
            os.lseek(self._fd, 0, os.SEEK_SET)
            written = os.write(self._fd, data)
            while written < len(data):
                written += os.write(self._fd, data[written:])
            os.ftruncate(self._fd, len(data))
            if durable:
                os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if os.fstat(self._fd).st_size == 0:
                    os.close(self._fd)
                    self._fd = None
                    os.unlink(head)
            raise cannot_write(self.log_path, exc) from exc


def write_anchor(anchor: Path, log_path: Path, genesis: str, key: bytes, *, durable: bool) -> None:
    """Create the anchor file `anchor` for the log at `log_path`, unless one is there already."""
    try:
        fd = os.open(anchor, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY, 0o600)
    except FileExistsError:
        return  # only under the writer's lock, so only a file put there by hand: verify judges it
    try:
        try:
            keep_folder_owner(fd, log_path.parent)
            os.write(fd, anchor_bytes(genesis, key))
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        # An empty or partial anchor would read as an edited one; no anchor yet is what a
        # writer that stopped between the first head and the anchor leaves (see
        # head_problem), and the next writer completes it.
        with contextlib.suppress(OSError):
            os.unlink(anchor)
        raise cannot_write(log_path, exc) from exc

"""Where the audit's files lie beside the log, the lock readers share, and reading from the end.

The log (usually ``<home>/audit.jsonl``) has three companions in its folder: ``.head`` (the last
seq and hash, see ``broker.audit.macs``), ``.anchor`` (the log's signed genesis id) and
``.lock``, the sidecar writers serialise on (flock on POSIX, msvcrt byte locking on Windows).
A reader takes that lock shared, so the log's size, the head and the anchor it reads belong
together.

It must never create or write a file: verify and tail leave a home as they found it (a reader
opens the lock file only when a writer has made it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from broker.filelock import lock as _lock
from broker.filelock import unlock as _unlock

_TAIL_CHUNK = 8 * 1024


def head_path(path: Path) -> Path:
    return path.with_name(path.name + ".head")


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def anchor_path(path: Path) -> Path:
    return path.with_name(path.name + ".anchor")


def lines_backward(read_at: Callable[[int, int], bytes], size: int) -> Iterator[bytes]:
    """Lines of a file from the last to the first, without newlines, reading from the end.

    A final line without its newline is yielded like any other.
    """
    pos = size
    buf = b""
    first = True
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        buf = read_at(pos, step) + buf
        parts = buf.split(b"\n")
        buf = parts[0]
        for line in reversed(parts[1:]):
            if first and line == b"":
                first = False  # the file ends with a newline: nothing after it
                continue
            first = False
            yield line
    if size > 0 and (buf or not first):
        yield buf


O_BINARY: int = getattr(os, "O_BINARY", 0)


def snapshot(path: Path) -> tuple[int | None, bytes | None, bytes | None]:
    """The log's size and the head and anchor files' bytes, read together under the lock."""
    lock_fd: int | None = None
    with contextlib.suppress(FileNotFoundError):  # no writer has ever opened this log
        lock_fd = os.open(lock_path(path), os.O_RDONLY | O_BINARY)
    try:
        if lock_fd is not None:
            _lock(lock_fd, shared=True)
        try:
            size: int | None = path.stat().st_size
        except FileNotFoundError:
            size = None
        try:
            head: bytes | None = head_path(path).read_bytes()
        except FileNotFoundError:
            head = None
        try:
            anchor: bytes | None = anchor_path(path).read_bytes()
        except FileNotFoundError:
            anchor = None
    finally:
        if lock_fd is not None:
            _unlock(lock_fd)
            os.close(lock_fd)
    return size, head, anchor

"""What the tests of the audit log share: its files as they lie on disk, events to fill a log
with, and a full disk at the edge (``FullDisk``).

The head file's name is written out here rather than asked of the code: a test must notice if
the code ever looked for it elsewhere.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from broker.audit.errors import AuditWriteError
from broker.audit.events import AuditEvent
from broker.audit.writer import AuditLog
from core.clock import ManualClock

# What verify and the CLI call an append cut short.
INTERRUPTED = "an append was interrupted (a crash or a full disk)"


def head_of(path: Path) -> Path:
    return path.with_name(path.name + ".head")


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write_events(path: Path, clock: ManualClock, n: int) -> list[dict[str, Any]]:
    """Append `n` events to the log at `path` (three to a turn, 1.5 s apart); the records."""
    records = []
    with AuditLog(path, clock) as audit:
        for i in range(n):
            records.append(
                audit.append(AuditEvent.TOOL_CALL_END, f"turn-{i // 3}", tool="file_read", i=i)
            )
            clock.advance(1.5)
    return records


def append_events(audit: AuditLog, n: int) -> None:
    for i in range(n):
        audit.append(AuditEvent.TOOL_CALL_END, "t-1", tool="file_read", status="ok", i=i)


class FullDisk:
    """os.write as a full disk behaves for one file: ``allow`` more bytes go through (a short
    write), then every write to it raises ENOSPC. Other files are written as usual.

    A fake at the edge: the real os.write does the writing; only the disk's answer is made up.
    """

    def __init__(self, target: Path, allow: int = 0) -> None:
        self.target = str(target)
        self.allow = allow
        self.refused = 0
        self._write = os.write

    def __call__(self, fd: int, data: bytes) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") != self.target:
            return self._write(fd, data)
        if self.allow > 0:
            n = self._write(fd, bytes(data)[: self.allow])
            self.allow -= n
            return n
        self.refused += 1
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def fill_disk(monkeypatch: pytest.MonkeyPatch, target: Path, allow: int = 0) -> FullDisk:
    disk = FullDisk(target, allow)
    monkeypatch.setattr(os, "write", disk)
    return disk


def cut_an_append(
    monkeypatch: pytest.MonkeyPatch, audit: AuditLog, allow: int = 60
) -> AuditWriteError:
    """Append with the disk full after ``allow`` bytes; return the error append raised."""
    disk = fill_disk(monkeypatch, audit.path, allow)
    with pytest.raises(AuditWriteError) as caught:
        audit.append(AuditEvent.EXECUTOR_RESPONSE, "t-2", calls=1)
    assert disk.refused >= 1
    monkeypatch.undo()
    return caught.value

"""The head and anchor files (broker/audit/sidecars.py) on a full disk: never left empty, and a
head that could not be updated is repaired by the next append.

A full disk in this process is ``FullDisk``: os.write patched at the edge, since filling a real
disk from a test is neither safe nor portable.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.audit.errors import AuditWriteError
from broker.audit.events import AuditEvent
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from core.clock import ManualClock
from tests.support.audit_log import (
    append_events,
    fill_disk,
    head_of,
)

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="FullDisk tells files apart through /proc"
)


def test_a_full_disk_at_the_head_keeps_the_event_and_the_next_append_repairs_the_head(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The line is written, the head is not: the append returns (the event is in the log),
    logged (at info: the next append repairs it), and verify is OK with a note naming the line."""
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 3)
        disk = fill_disk(monkeypatch, head_of(log_path))
        with caplog.at_level(logging.INFO, logger="chamberlain.broker.audit"):
            record = audit.append(AuditEvent.ROUTER_OUTPUT, "t-2")
        monkeypatch.undo()
        assert disk.refused == 1
        assert record["seq"] == 4
        assert "its head could not be updated" in caplog.text
        noted = verify(log_path, key=key)
        assert noted.ok
        assert "line 4 was written but the head file not yet updated" in noted.reason
        audit.append(AuditEvent.ROUTER_OUTPUT, "t-3")
    assert verify(log_path, key=key).reason == "ok"


def test_a_first_head_or_anchor_that_cannot_be_written_is_not_left_empty(
    tmp_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty head or anchor would read as an edited one, and stay that way forever."""
    for name in ("audit.jsonl.head", "audit.jsonl.anchor"):
        path = tmp_path / name.rsplit(".")[-1] / "audit.jsonl"
        fill_disk(monkeypatch, path.with_name(name))
        with AuditLog(path, ManualClock(), key=key) as audit, pytest.raises(AuditWriteError):
            audit.append(AuditEvent.ROUTER_OUTPUT)
        monkeypatch.undo()
        assert not path.with_name(name).exists()
        assert verify(path, key=key).ok, name
        with AuditLog(path, ManualClock(), key=key) as audit:
            audit.append(AuditEvent.ROUTER_OUTPUT)
        assert verify(path, key=key).reason == "ok", name

"""tail (broker/audit/tail.py): the newest records, oldest first; a damaged line shows as damaged.

Real files in tmp_path and the ManualClock.
"""

from __future__ import annotations

from pathlib import Path

from broker.audit.redaction import digest
from broker.audit.tail import tail
from core.clock import ManualClock
from tests.support.audit_log import (
    lines_of,
    write_events,
)


def test_tail_returns_the_newest_records_oldest_first(log_path: Path, clock: ManualClock) -> None:
    records = write_events(log_path, clock, 2000)
    assert tail(log_path, 3) == records[-3:]
    assert tail(log_path, 1) == records[-1:]
    assert tail(log_path, 0) == []
    assert [r["seq"] for r in tail(log_path, 5000)] == list(range(1, 2001))


def test_tail_of_absent_log_is_empty(tmp_path: Path) -> None:
    assert tail(tmp_path / "nope.jsonl", 5) == []


def test_tail_shows_a_damaged_line_as_damaged(log_path: Path, clock: ManualClock) -> None:
    records = write_events(log_path, clock, 3)
    lines = lines_of(log_path)
    lines[1] = b"not json\n"
    log_path.write_bytes(b"".join(lines))
    got = tail(log_path, 3)
    assert got[0] == records[0]
    assert got[1]["event"] == "UNREADABLE_LINE"
    assert got[1]["data"] == {"line": digest(b"not json")}
    assert got[2] == records[2]

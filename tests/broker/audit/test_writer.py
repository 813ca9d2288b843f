"""AuditLog (broker/audit/writer.py): one chain across appends, writers, threads and processes.

Real files in tmp_path, real subprocesses, the ManualClock; no fakes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from broker.audit.events import AuditEvent
from broker.audit.format import GENESIS
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from core.clock import ManualClock
from tests.support.audit_log import (
    head_of,
    lines_of,
    write_events,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_many_appends_form_one_chain_that_verifies(log_path: Path, clock: ManualClock) -> None:
    records = write_events(log_path, clock, 500)

    lines = [json.loads(raw) for raw in lines_of(log_path)]
    assert lines == records
    assert [r["seq"] for r in lines] == list(range(1, 501))
    assert lines[0]["prev"] == GENESIS
    for before, after in itertools.pairwise(lines):
        assert after["prev"] == before["hash"]
    result = verify(log_path)
    assert result.ok, result.reason
    assert result.lines == 500
    assert result.first_bad_line is None
    assert json.loads(head_of(log_path).read_text()) == {"seq": 500, "hash": lines[-1]["hash"]}


def test_record_fields_hash_and_clock_time(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        record = audit.append(AuditEvent.ROUTER_OUTPUT, "turn-1", intent="file_task")
        clock.advance(60)
        second = audit.append("POLICY_DECISION", None, allowed=["file_read"])

    assert set(record) == {"seq", "ts", "event", "turn", "data", "prev", "hash"}
    assert record["event"] == "ROUTER_OUTPUT"
    assert record["turn"] == "turn-1"
    assert record["data"] == {"intent": "file_task"}
    assert datetime.fromisoformat(record["ts"]) == datetime.fromtimestamp(clock.now() - 60, UTC)
    assert datetime.fromisoformat(second["ts"]) == datetime.fromtimestamp(clock.now(), UTC)
    assert second["turn"] is None
    body = {k: v for k, v in record.items() if k != "hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert record["hash"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert (
        lines_of(log_path)[0]
        == (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
    )


def test_unknown_event_is_refused(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit, pytest.raises(ValueError, match="NOT_AN_EVENT"):
        audit.append("NOT_AN_EVENT")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_log_is_private_and_parent_dirs_are_created(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "a" / "b" / "audit.jsonl"
    write_events(path, clock, 1)
    assert path.stat().st_mode & 0o777 == 0o600
    assert head_of(path).stat().st_mode & 0o777 == 0o600


def test_reopening_continues_the_chain(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 5)
    with AuditLog(log_path, clock) as audit:
        record = audit.append(AuditEvent.POSTHOOK_SUMMARY)
    assert record["seq"] == 6
    assert verify(log_path).ok


def test_two_writers_in_one_process_stay_chained(log_path: Path, clock: ManualClock) -> None:
    """Each writer keeps its own in-memory tail; it must notice the other's appends."""
    a, b = AuditLog(log_path, clock), AuditLog(log_path, clock)
    try:
        for i in range(50):
            (a if i % 3 else b).append(AuditEvent.TOOL_CALL_START, i=i)
    finally:
        a.close()
        b.close()
    result = verify(log_path)
    assert result.ok, result.reason
    assert result.lines == 50


def test_append_reads_only_the_end_of_a_large_log(
    log_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_events(log_path, clock, 3000)
    assert log_path.stat().st_size > 500_000
    audit = AuditLog(log_path, clock)
    read: list[int] = []
    real_read_at = audit._read_at

    def counting_read_at(offset: int, length: int) -> bytes:
        data = real_read_at(offset, length)
        read.append(len(data))
        return data

    monkeypatch.setattr(audit, "_read_at", counting_read_at)
    with audit:
        audit.append(AuditEvent.ROUTER_OUTPUT)
        opened = sum(read)
        for _ in range(100):
            audit.append(AuditEvent.POSTHOOK_SUMMARY)
    assert opened < 20_000
    assert sum(read) == opened  # no reads at all while we are the only writer
    assert verify(log_path).ok


CHILD = """
import os, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from broker.audit.events import AuditEvent
from broker.audit.writer import AuditLog
audit = AuditLog(Path({path!r}))
print("ready", flush=True)
sys.stdin.readline()
for i in range(200):
    audit.append(AuditEvent.TOOL_CALL_END, None, writer=os.getpid(), i=i)
    # Step aside between events, as a turn does between stages, so the writers interleave.
    getattr(os, "sched_yield", lambda: None)()
audit.close()
"""


def test_two_processes_appending_at_once_keep_one_valid_chain(log_path: Path) -> None:
    log_path.parent.mkdir(parents=True)
    code = textwrap.dedent(CHILD.format(root=str(REPO_ROOT), path=str(log_path)))
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
    for child in children:  # both are waiting: release them together
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    for child in children:
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err

    result = verify(log_path)
    assert result.ok, result.reason
    assert result.lines == 400
    writers = [json.loads(raw)["data"]["writer"] for raw in lines_of(log_path)]
    assert sorted(set(writers)) == sorted(c.pid for c in children)
    assert writers.count(children[0].pid) == 200
    switches = sum(a != b for a, b in itertools.pairwise(writers))
    assert switches >= 2, "the two writers did not overlap, so this proved nothing"


def test_durable_appends_verify(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock, durable=True) as audit:
        for i in range(5):
            audit.append(AuditEvent.POLICY_DECISION, i=i)
    assert verify(log_path).lines == 5


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can write as another user"
)
def test_root_writing_to_a_users_audit_leaves_every_file_to_that_user(tmp_path: Path) -> None:
    """`sudo chamberlain ask …` on a person's home: root-owned 0600 audit files would refuse
    that person every action from then on (nothing runs unaudited)."""
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    with AuditLog(home / "audit.jsonl", key=bytes(range(32))) as audit:
        audit.append(AuditEvent.ROUTER_OUTPUT, "t-1")
    names = sorted(p.name for p in home.iterdir())
    assert names == ["audit.jsonl", "audit.jsonl.anchor", "audit.jsonl.head", "audit.jsonl.lock"]
    for name in names:
        st = (home / name).stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o600), name


def test_the_log_itself_writes_faults_and_acknowledgements(log_path: Path) -> None:
    with AuditLog(log_path, ManualClock()) as audit:
        for event in (AuditEvent.AUDIT_FAULT, AuditEvent.AUDIT_ACK):
            with pytest.raises(ValueError, match="written by the audit log itself"):
                audit.append(event, offset=0)
        with pytest.raises(ValueError, match="no faults"):
            audit.acknowledge([])

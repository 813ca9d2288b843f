"""A writer after damage (broker/audit/recovery.py): the chain goes on where the files say, a
cut append is recorded as an AUDIT_FAULT, and a gap stays in the chain for verify to report.

A write cut short (ENOSPC, EIO, SIGKILL) leaves a torn last line, or a line whose head was not
yet updated. verify names both without a later write; the next writer records the torn bytes in
an AUDIT_FAULT line, and the user's signed AUDIT_ACK makes verify pass while both stay in the
chain. Real files in tmp_path, real subprocesses killed with SIGKILL and a real RLIMIT_FSIZE for
the kernel's own short write; ``FullDisk`` (os.write patched at the edge) where a test needs a
full disk in this process.
"""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from broker.audit.events import AuditEvent
from broker.audit.tail import tail
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from core.clock import ManualClock
from tests.support.audit_log import (
    INTERRUPTED,
    append_events,
    cut_an_append,
    head_of,
    lines_of,
    write_events,
)

REPO_ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="FullDisk tells files apart through /proc"
)


def test_writer_after_truncation_keeps_the_gap_visible(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 5)
    log_path.write_bytes(b"".join(lines_of(log_path)[:-2]))
    with AuditLog(log_path, clock) as audit:
        record = audit.append(AuditEvent.ROUTER_OUTPUT)
    assert record["seq"] == 6
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 4


def test_writer_repairs_a_head_one_line_behind(log_path: Path, clock: ManualClock) -> None:
    """A writer that died between its line and the head update leaves the head one behind."""
    write_events(log_path, clock, 3)
    head = head_of(log_path).read_bytes()
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.ROUTER_OUTPUT)
    head_of(log_path).write_bytes(head)
    before = verify(log_path)
    assert before.ok
    assert before.reason.startswith("ok; line 4 was written but the head file not yet updated")
    with AuditLog(log_path, clock) as audit:
        assert audit.append(AuditEvent.POSTHOOK_SUMMARY)["seq"] == 5
    assert verify(log_path).reason == "ok"


def test_writer_after_a_partial_line_writes_whole_lines(log_path: Path, clock: ManualClock) -> None:
    """The cut line is finished with a newline and recorded by an AUDIT_FAULT before ours."""
    write_events(log_path, clock, 3)
    with log_path.open("ab") as f:
        f.write(b'{"data":{},"ev')
    with AuditLog(log_path, clock) as audit:
        record = audit.append(AuditEvent.ROUTER_OUTPUT)
    assert record["seq"] == 5
    fault, ours = tail(log_path, 2)
    assert ours == record
    assert fault["event"] == "AUDIT_FAULT"
    assert fault["data"]["after_seq"] == 3
    assert lines_of(log_path)[3] == b'{"data":{},"ev\n'
    result = verify(log_path)
    assert (result.ok, result.interrupted, result.first_bad_line) == (False, True, 4)
    assert [(f.line, f.recorded_at) for f in result.faults] == [(4, 5)]


def test_deleting_the_log_under_a_writer_is_detected(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        for _ in range(3):
            audit.append(AuditEvent.ROUTER_OUTPUT)
        log_path.unlink()
        record = audit.append(AuditEvent.POSTHOOK_SUMMARY)
    assert log_path.exists()
    assert record["seq"] == 4
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 1


def test_the_next_append_records_the_cut_line_and_an_acknowledgement_makes_verify_pass(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 3)
        cut_an_append(monkeypatch, audit)
        record = audit.append(AuditEvent.ROUTER_OUTPUT, "t-3")  # the same writer, disk freed
    assert record["seq"] == 5
    lines = log_path.read_bytes().splitlines()
    fault = json.loads(lines[4])
    assert fault["event"] == "AUDIT_FAULT"
    assert fault["data"]["what"] == INTERRUPTED
    assert fault["data"]["bytes"]["len"] == 61  # the 60 bytes on disk and the newline added

    recorded = verify(log_path, key=key)
    assert (recorded.ok, recorded.torn_tail, recorded.interrupted) == (False, False, True)
    assert recorded.first_bad_line == 4
    assert [(f.line, f.recorded_at, f.acknowledged_at) for f in recorded.faults] == [(4, 5, None)]
    assert "not yet acknowledged" in recorded.reason
    # Later turns do not hide it.
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 2)
        assert not verify(log_path, key=key).ok
        ack = audit.acknowledge(verify(log_path, key=key).unacknowledged)
        append_events(audit, 1)
    assert ack["event"] == "AUDIT_ACK"
    assert ack["data"]["faults"] == [{"seq": 4, "hash": fault["hash"]}]
    assert len(ack["data"]["mac"]) == 64

    result = verify(log_path, key=key)
    assert (result.ok, result.interrupted, result.lines) == (True, False, 9)
    assert [(f.line, f.acknowledged_at) for f in result.faults] == [(4, 9)]
    assert f"1 acknowledged fault: line 4: {INTERRUPTED}, acknowledged at line 9" in (result.reason)


def test_a_real_file_size_limit_cuts_an_append_in_a_subprocess(log_path: Path, key: bytes) -> None:
    """RLIMIT_FSIZE makes the kernel itself write part of the line and refuse the rest."""
    script = textwrap.dedent(
        """
        import resource, signal, sys
        from pathlib import Path
        from broker.audit.errors import AuditWriteError
        from broker.audit.events import AuditEvent
        from broker.audit.writer import AuditLog
        from core.clock import ManualClock

        path, key = Path(sys.argv[1]), bytes.fromhex(sys.argv[2])
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        with AuditLog(path, ManualClock(), key=key) as audit:
            for i in range(3):
                audit.append(AuditEvent.ROUTER_OUTPUT, "t", i=i)
            limit = path.stat().st_size + 50
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
            try:
                audit.append(AuditEvent.TOOL_CALL_END, "t", tool="file_read", status="ok")
            except AuditWriteError as exc:
                print("refused", exc.errno)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(log_path), key.hex()],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.strip() == f"refused {errno.EFBIG}", proc.stderr
    result = verify(log_path, key=key)
    assert (result.torn_tail, result.lines, result.first_bad_line) == (True, 3, 4)

    with AuditLog(log_path, ManualClock(), key=key) as audit:
        audit.repair()
        faults = verify(log_path, key=key).unacknowledged
        assert [f.line for f in faults] == [4]
        audit.acknowledge(faults)
    assert verify(log_path, key=key).ok


_KILLED_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from broker.audit.events import AuditEvent
    from broker.audit.writer import AuditLog
    from core.clock import ManualClock

    path, key, where = Path(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3]
    with AuditLog(path, ManualClock(), key=key) as audit:
        for i in range(3):
            audit.append(AuditEvent.ROUTER_OUTPUT, "t", i=i)
        if where == "mid-line":
            real_write, log = os.write, os.stat(path)

            def cut(fd, data):
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) == (log.st_dev, log.st_ino):
                    real_write(fd, data[: len(data) // 2])
                    print("stopped", flush=True)
                    time.sleep(60)
                return real_write(fd, data)

            os.write = cut
        else:

            def pause(self):
                print("stopped", flush=True)
                time.sleep(60)

            AuditLog._write_head = pause
        audit.append(AuditEvent.TOOL_CALL_END, "t", tool="file_read", status="ok")
    """
)


def kill_during_append(log_path: Path, key: bytes, where: str) -> None:
    """Run a writer that stops at ``where`` and SIGKILL it there."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SCRIPT, str(log_path), key.hex(), where],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert line == "stopped\n", proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == -signal.SIGKILL


def test_sigkill_mid_line_is_reported_as_an_interrupted_append_not_tampering(
    log_path: Path, key: bytes
) -> None:
    kill_during_append(log_path, key, "mid-line")
    result = verify(log_path, key=key)
    assert (result.ok, result.torn_tail, result.interrupted) == (False, True, True)
    assert (result.lines, result.first_bad_line) == (3, 4)
    assert INTERRUPTED in result.reason
    assert "the lines before it are intact" in result.reason


def test_sigkill_between_the_line_and_the_head_is_ok_with_a_note(
    log_path: Path, key: bytes
) -> None:
    kill_during_append(log_path, key, "before-head")
    result = verify(log_path, key=key)
    assert (result.ok, result.lines, result.torn_tail) == (True, 4, False)
    assert "line 4 was written but the head file not yet updated" in result.reason
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        audit.append(AuditEvent.ROUTER_OUTPUT)
    assert verify(log_path, key=key).reason == "ok"

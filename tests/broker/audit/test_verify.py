"""verify (broker/audit/verify.py): every edit is found and named; an interrupted append is not
an edit, and the CLI says which it is.

Real files in tmp_path, the real CLI in a subprocess. Where a test needs a full disk in this
process, it patches os.write at the edge (``FullDisk``): filling a real disk from a test is
neither safe nor portable.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from broker.audit.events import AuditEvent
from broker.audit.format import GENESIS
from broker.audit.redaction import digest
from broker.audit.tail import tail
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from broker.keys import load_install_secret
from core.clock import ManualClock
from tests.support.audit_log import (
    INTERRUPTED,
    append_events,
    cut_an_append,
    head_of,
    lines_of,
    write_events,
)
from tests.support.cli import make_user, run_cli

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="FullDisk tells files apart through /proc"
)


def test_absent_or_empty_log_verifies(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    assert verify(path) == verify(path)
    result = verify(path)
    assert (result.ok, result.lines, result.first_bad_line) == (True, 0, None)
    path.write_bytes(b"")
    assert verify(path).ok


def test_every_single_byte_change_is_detected(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.ROUTER_OUTPUT, "t1", text="café", n=1.5)
        clock.advance(1)
        audit.append(AuditEvent.TOOL_CALL_END, "t1", status="ok", ok=True, out=digest("x"))
    original = log_path.read_bytes()
    assert verify(log_path).ok
    assert 300 < len(original) < 1_000
    for mask in (0x01, 0x20):
        for pos in range(len(original)):
            tampered = bytearray(original)
            tampered[pos] ^= mask
            log_path.write_bytes(bytes(tampered))
            result = verify(log_path)
            assert not result.ok, f"flip {mask:#x} at byte {pos} went unnoticed"
    log_path.write_bytes(original)

    head = head_of(log_path)
    head_original = head.read_bytes()
    for pos in range(len(head_original)):
        tampered = bytearray(head_original)
        tampered[pos] ^= 0x01
        head.write_bytes(bytes(tampered))
        assert not verify(log_path).ok, f"head byte {pos} changed unnoticed"


def test_edited_line_is_named(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 6)
    lines = lines_of(log_path)
    lines[3] = lines[3].replace(b'"tool":"file_read"', b'"tool":"file_wipe"')
    log_path.write_bytes(b"".join(lines))
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 4
    assert result.lines == 3
    assert "hash" in result.reason


def test_edited_line_with_recomputed_hash_breaks_the_next_link(
    log_path: Path, clock: ManualClock
) -> None:
    write_events(log_path, clock, 6)
    lines = lines_of(log_path)
    record = json.loads(lines[2])
    record["data"]["tool"] = "file_wipe"
    body = {k: v for k, v in record.items() if k != "hash"}
    record["hash"] = hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    lines[2] = (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
    log_path.write_bytes(b"".join(lines))
    result = verify(log_path)
    assert result.first_bad_line == 4
    assert "prev" in result.reason


def test_removed_middle_line_is_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 10)
    lines = lines_of(log_path)
    del lines[2]
    log_path.write_bytes(b"".join(lines))
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 3
    assert "removed" in result.reason


def test_removed_first_line_is_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 4)
    log_path.write_bytes(b"".join(lines_of(log_path)[1:]))
    assert verify(log_path).first_bad_line == 1


def test_swapped_lines_are_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 10)
    lines = lines_of(log_path)
    lines[3], lines[4] = lines[4], lines[3]
    log_path.write_bytes(b"".join(lines))
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 4


def test_truncated_last_line_is_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 10)
    log_path.write_bytes(b"".join(lines_of(log_path)[:-1]))
    result = verify(log_path)
    assert not result.ok
    assert result.lines == 9
    assert result.first_bad_line == 10
    assert "truncated" in result.reason


def test_emptied_log_with_a_head_is_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 3)
    log_path.write_bytes(b"")
    result = verify(log_path)
    assert not result.ok
    assert "truncated" in result.reason


def test_a_last_line_cut_after_the_head_recorded_it_is_a_truncation(
    log_path: Path, clock: ManualClock
) -> None:
    """The head is written after its line, so a line the head vouches for was whole once: cut
    short later, it is an edit, not an interrupted append (test_recovery.py and the tests below
    have those)."""
    write_events(log_path, clock, 3)
    data = log_path.read_bytes()
    log_path.write_bytes(data[:-10])
    result = verify(log_path)
    assert (result.ok, result.torn_tail, result.interrupted) == (False, False, False)
    assert result.first_bad_line == 3
    assert "truncated" in result.reason


def test_line_appended_outside_the_chain_is_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 3)
    forged: dict[str, Any] = {
        "seq": 4,
        "ts": "2027-01-15T08:00:00.000000Z",
        "event": "PERMISSION_GRANTED",
        "turn": None,
        "data": {"capability": "system_execute"},
        "prev": GENESIS,
    }
    forged["hash"] = hashlib.sha256(
        json.dumps(forged, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    with log_path.open("ab") as f:
        f.write((json.dumps(forged, sort_keys=True, separators=(",", ":")) + "\n").encode())
    result = verify(log_path)
    assert result.first_bad_line == 4
    assert "prev" in result.reason


def test_chained_lines_appended_without_the_head_are_detected(
    log_path: Path, clock: ManualClock
) -> None:
    """One line past the head is what a crash between a line and its head leaves (verify says
    so, naming the line); two cannot be, and fail."""
    write_events(log_path, clock, 3)
    head = head_of(log_path).read_bytes()
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.PERMISSION_GRANTED)
        head_of(log_path).write_bytes(head)
        one_behind = verify(log_path)
        audit.append(AuditEvent.PERMISSION_GRANTED)
    head_of(log_path).write_bytes(head)
    assert one_behind.ok
    assert "line 4 was written but the head file not yet updated" in one_behind.reason
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 4
    assert "without updating the head" in result.reason


def test_edited_or_missing_head_file_is_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 3)
    head = head_of(log_path)
    original = json.loads(head.read_text())

    head.write_text(json.dumps({"hash": original["hash"], "seq": 2}, separators=(",", ":")) + "\n")
    assert not verify(log_path).ok
    head.write_text(json.dumps({"hash": "ab" * 32, "seq": 3}, separators=(",", ":")) + "\n")
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 3
    head.unlink()
    result = verify(log_path)
    assert (result.ok, result.reason) == (False, "head file missing")


def test_verify_does_not_create_files(tmp_path: Path) -> None:
    verify(tmp_path / "audit.jsonl")
    tail(tmp_path / "audit.jsonl", 3)
    assert os.listdir(tmp_path) == []


def test_verify_and_tail_survive_an_absurdly_nested_line(
    log_path: Path, clock: ManualClock
) -> None:
    write_events(log_path, clock, 2)
    with log_path.open("ab") as f:
        f.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    result = verify(log_path)
    assert (result.ok, result.first_bad_line) == (False, 3)
    assert tail(log_path, 1)[0]["event"] == "UNREADABLE_LINE"


@pytest.mark.parametrize("signed", [True, False])
def test_a_cut_first_append_is_interrupted_too(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch, signed: bool
) -> None:
    """A signing writer has written its first head and anchor by then; a keyless one has not."""
    with AuditLog(log_path, ManualClock(), key=key if signed else None) as audit:
        cut_an_append(monkeypatch, audit, allow=20)
        result = verify(log_path, key=key if signed else None)
        assert (result.torn_tail, result.interrupted, result.first_bad_line) == (True, True, 1)
        audit.append(AuditEvent.ROUTER_OUTPUT)
        audit.acknowledge(verify(log_path, key=key if signed else None).unacknowledged)
    assert verify(log_path, key=key if signed else None).ok


def faulted_log(path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three events, a cut append, its fault record, an acknowledgement and one more event."""
    with AuditLog(path, ManualClock(), key=key) as audit:
        append_events(audit, 3)
        cut_an_append(monkeypatch, audit, allow=40)
        audit.append(AuditEvent.ROUTER_OUTPUT, "t-3")
        audit.acknowledge(verify(path, key=key).unacknowledged)
        audit.append(AuditEvent.POSTHOOK_SUMMARY, "t-3")
    assert verify(path, key=key).ok


def test_every_single_byte_change_in_a_log_with_a_fault_is_an_edit(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No flip anywhere (the torn bytes, the fault record, the acknowledgement) passes, nor is
    any taken for an interrupted append."""
    faulted_log(log_path, key, monkeypatch)
    original = log_path.read_bytes()
    for mask in (0x01, 0x20):
        for pos in range(len(original)):
            tampered = bytearray(original)
            tampered[pos] ^= mask
            log_path.write_bytes(bytes(tampered))
            result = verify(log_path, key=key)
            assert not result.ok, f"flip {mask:#x} at byte {pos} went unnoticed"
            assert not result.interrupted, f"flip {mask:#x} at byte {pos} taken for a crash"
    log_path.write_bytes(original)
    assert verify(log_path, key=key).ok


def test_removing_the_torn_line_or_forging_an_acknowledgement_fails(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    faulted_log(log_path, key, monkeypatch)
    original = log_path.read_bytes()
    lines = original.splitlines(keepends=True)
    log_path.write_bytes(b"".join(lines[:3] + lines[4:]))
    result = verify(log_path, key=key)
    assert (result.ok, result.interrupted, result.first_bad_line) == (False, False, 4)
    assert "records an interrupted append that is not there" in result.reason

    # An acknowledgement without this install's MAC: a keyless writer's (tools, tests) passes
    # only a verify that has no key to check it with.
    unsigned = log_path.with_name("unsigned.jsonl")
    with AuditLog(unsigned, ManualClock()) as keyless:
        append_events(keyless, 3)
        cut_an_append(monkeypatch, keyless)
        append_events(keyless, 1)
        keyless.acknowledge(verify(unsigned).unacknowledged)
    assert verify(unsigned).ok
    refused = verify(unsigned, key=key)
    assert (refused.ok, refused.first_bad_line) == (False, 7)
    assert "not signed with this install's key" in refused.reason


def test_a_line_appended_by_hand_is_not_recorded_as_an_interrupted_append(
    log_path: Path, key: bytes
) -> None:
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 2)
    with log_path.open("ab") as f:
        f.write(b"rm -rf / was never run\n")
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 1)
    assert b"AUDIT_FAULT" not in log_path.read_bytes()
    result = verify(log_path, key=key)
    assert (result.ok, result.interrupted, result.first_bad_line) == (False, False, 3)

    with AuditLog(log_path, ManualClock(), key=key) as audit:
        audit.repair()
    assert b"AUDIT_FAULT" not in log_path.read_bytes()


def test_two_interrupted_appends_are_acknowledged_and_counted_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two appends cut short read "the interrupted appends at lines 4, 7" and "2 acknowledged
    faults" (they read "append at line(s)" and "fault(s)"); one is "at line 4", "1
    acknowledged fault" in the test below."""
    user = make_user(tmp_path / "user")
    home = user / ".chamberlain"
    log = home / "audit.jsonl"
    key = load_install_secret(home).audit_key
    with AuditLog(log, ManualClock(), key=key) as audit:
        append_events(audit, 3)
        cut_an_append(monkeypatch, audit)
        append_events(audit, 1)
        cut_an_append(monkeypatch, audit)
        append_events(audit, 1)  # each later append records the one cut before it
    faults = [f.line for f in verify(log, key=key).unacknowledged]
    assert len(faults) == 2
    proc = run_cli(user, "audit", "acknowledge")
    assert proc.returncode == 0, proc.stderr
    listed = ", ".join(str(line) for line in faults)
    assert proc.stdout.startswith(f"Acknowledged the interrupted appends at lines {listed}.\n")
    assert "2 acknowledged faults: " in verify(log, key=key).reason


def test_the_cli_tells_an_interrupted_append_from_tampering_and_acknowledges_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = make_user(tmp_path / "user")
    home = user / ".chamberlain"
    log = home / "audit.jsonl"
    key = load_install_secret(home).audit_key
    with AuditLog(log, ManualClock(), key=key) as audit:
        append_events(audit, 3)
        cut_an_append(monkeypatch, audit)

    proc = run_cli(user, "audit", "verify")
    assert proc.returncode == 1, proc.stderr  # a failure, told apart by its words
    assert proc.stdout.startswith(
        f"audit log INTERRUPTED at line 4: line 4 is incomplete: {INTERRUPTED}; "
        "the lines before it are intact\n"
    )
    assert "chamberlain audit acknowledge" in proc.stdout
    data = json.loads(run_cli(user, "audit", "verify", "--json").stdout)
    assert (data["ok"], data["torn_tail"], data["interrupted"]) == (False, True, True)

    proc = run_cli(user, "audit", "acknowledge")
    assert proc.returncode == 0, proc.stderr
    assert "Acknowledged the interrupted append at line 4." in proc.stdout
    assert "audit log OK, with 1 acknowledged fault at line 4: 5 lines, chain intact" in (
        proc.stdout
    )
    events = [json.loads(raw)["event"] for raw in log.read_text().splitlines()[4:]]
    assert events == ["AUDIT_FAULT", "AUDIT_ACK"]

    proc = run_cli(user, "audit", "verify")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("audit log OK, with 1 acknowledged fault at line 4: ")
    again = run_cli(user, "audit", "acknowledge")
    assert (again.returncode, again.stdout.splitlines()[0]) == (0, "Nothing to acknowledge.")


def test_the_cli_acknowledges_nothing_in_a_log_that_was_edited(tmp_path: Path) -> None:
    user = make_user(tmp_path / "user")
    home = user / ".chamberlain"
    log = home / "audit.jsonl"
    with AuditLog(log, ManualClock(), key=load_install_secret(home).audit_key) as audit:
        append_events(audit, 3)
    log.write_bytes(log.read_bytes().replace(b"file_read", b"file_wipe", 1))
    before = log.read_bytes()
    proc = run_cli(user, "audit", "acknowledge")
    assert proc.returncode == 1
    assert "audit log FAILED at line 1" in proc.stderr
    assert "Nothing was acknowledged" in proc.stderr
    assert log.read_bytes() == before
    assert run_cli(user, "audit", "verify").returncode == 1

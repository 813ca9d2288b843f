"""The audit log: chain integrity, tamper detection, redaction, cross-process appends.

Real files in tmp_path, real subprocesses, the ManualClock; no fakes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import string
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from broker.audit.events import AuditEvent
from broker.audit.format import GENESIS
from broker.audit.redaction import MAX_STRING, REDACTED, digest, redact
from broker.audit.tail import tail
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from core.clock import ManualClock

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "audit.jsonl"


def head_path(path: Path) -> Path:
    return path.with_name(path.name + ".head")


def write_events(path: Path, clock: ManualClock, n: int) -> list[dict[str, Any]]:
    records = []
    with AuditLog(path, clock) as audit:
        for i in range(n):
            records.append(
                audit.append(AuditEvent.TOOL_CALL_END, f"turn-{i // 3}", tool="file_read", i=i)
            )
            clock.advance(1.5)
    return records


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


# --- the chain -----------------------------------------------------------------------------------


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
    assert json.loads(head_path(log_path).read_text()) == {"seq": 500, "hash": lines[-1]["hash"]}


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
    assert head_path(path).stat().st_mode & 0o777 == 0o600


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


# --- redaction -----------------------------------------------------------------------------------

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MkQx\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRET_VALUES = {
    "openai": "sk-proj-4fT9qLm2ZxV8cR1bN7hK3sD6",
    "bearer": "Bearer xyz",
    "pem": PEM,
    "hex": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "base64": "dGhpcyBpcyBub3QgYSByZWFsIGtleSBidXQgbG9va3MgbGlrZSBvbmU9PQ==",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
}


def test_secret_looking_keys_are_redacted_at_any_depth() -> None:
    data = {
        "password": "hunter2",
        "DB_Passwd": 1234,
        "X-Api-Key": "k",
        "apiKey": "k",
        "Authorization": "Basic abc",
        "cookie": {"a": 1},
        "ssh_private_key": "k",
        "credentials": ["a"],
        "client_secret": "s",
        "session_token": "t",
        "nested": [{"auth_token": "t", "ok": "fine"}],
    }
    out = redact(data)
    assert isinstance(out, dict)
    for key in data:
        if key != "nested":
            assert out[key] == REDACTED, key
    assert out["nested"] == [{"auth_token": REDACTED, "ok": "fine"}]


def test_token_id_is_kept_but_only_under_that_exact_key() -> None:
    token_id = "3f2a9c4e8b7d6a5f4e3d2c1b0a998877"  # 32 hex: would look random anywhere else
    out = redact({"token_id": token_id, "tokenId": token_id, "token": token_id})
    assert out == {"token_id": token_id, "tokenId": REDACTED, "token": REDACTED}


@pytest.mark.parametrize("name", sorted(SECRET_VALUES))
def test_secret_looking_values_are_redacted(name: str) -> None:
    secret = SECRET_VALUES[name]
    out = redact({"note": secret, "inside": f"before {secret} after", "list": [secret]})
    assert out == {
        "note": REDACTED,
        "inside": f"before {REDACTED} after",
        "list": [REDACTED],
    }


def test_secrets_inside_commands_and_urls_are_redacted_around_the_rest() -> None:
    out = redact(
        {
            "command": "mysql --password=hunter2 -h db",
            "url": "https://alice:s3cret@example.org/x",
        }
    )
    assert out == {
        "command": f"mysql --password={REDACTED} -h db",
        "url": f"https://{REDACTED}@example.org/x",
    }


def test_random_base64_keys_are_redacted() -> None:
    rng = random.Random(20270115)
    alphabet = string.ascii_letters + string.digits + "-_"
    keys = ["".join(rng.choice(alphabet) for _ in range(43)) for _ in range(300)]
    kept = [k for k in keys if redact(k) != REDACTED]
    assert len(kept) <= 3, kept  # a heuristic: measured miss rate about 0.2% at this length


@pytest.mark.parametrize(
    "value",
    [
        "/home/alice/Documents/Projects/Chamberlain/broker/audit.py",
        "C:/Users/Alice/AppData/Local/Programs/Python/Python311/Lib",
        "ThisIsAVeryLongCamelCaseIdentifierName",
        "123e4567-e89b-12d3-a456-426614174000",
        "--------------------------------------------",
        "please summarise the file in my downloads folder",
    ],
)
def test_ordinary_values_are_not_redacted(value: str) -> None:
    assert redact(value) == value


def test_digests_survive_redaction() -> None:
    d = digest("some file contents")
    assert redact({"content": d, "args_digest": d["sha256"]}) == {
        "content": d,
        "args_digest": d["sha256"],
    }


def test_secrets_never_reach_the_file(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.TOOL_CALL_START, "t", api_key="hunter2-key", **SECRET_VALUES)
    raw = log_path.read_text()
    assert "hunter2-key" not in raw
    for secret in SECRET_VALUES.values():
        assert secret not in raw
    assert "MIIEowIBAAKCAQEA" not in raw
    assert verify(log_path).ok


def test_digest() -> None:
    assert digest("hello") == {
        "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        "len": 5,
    }
    assert digest("é") == {"sha256": hashlib.sha256("é".encode()).hexdigest(), "len": 1}
    assert digest(b"\x00\x01") == {"sha256": hashlib.sha256(b"\x00\x01").hexdigest(), "len": 2}


def test_bytes_are_digested_not_written() -> None:
    assert redact({"out": b"file body"}) == {"out": digest(b"file body")}


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_non_json_values_become_strings(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        record = audit.append(
            AuditEvent.EXECUTOR_RESPONSE,
            path=Path("/tmp/x"),
            when=datetime(2027, 1, 1, tzinfo=UTC),
            tags={"b", "a"},
            pair=(1, 2),
            ratio=float("nan"),
            event=AuditEvent.POSTHOOK_SUMMARY,
            odd=_Unprintable(),
        )
    assert record["data"] == {
        "path": "/tmp/x",
        "when": "2027-01-01 00:00:00+00:00",
        "tags": ["a", "b"],
        "pair": [1, 2],
        "ratio": "nan",
        "event": "POSTHOOK_SUMMARY",
        "odd": "<unprintable _Unprintable>",
    }
    assert verify(log_path).ok


def test_long_values_are_capped(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        record = audit.append(
            AuditEvent.POSTHOOK_SUMMARY,
            summary="word " * 10_000,
            many=list(range(1_000)),
            wide={f"k{i}": i for i in range(1_000)},
        )
    data = record["data"]
    assert len(data["summary"]) < MAX_STRING + 50
    assert data["summary"].endswith("...[truncated, 50000 chars]")
    assert len(data["many"]) == 101
    assert data["many"][-1] == "[... 900 more items]"
    assert len(data["wide"]) == 101
    assert max(len(raw) for raw in lines_of(log_path)) < 10_000


def test_deep_or_huge_data_cannot_bloat_one_event(log_path: Path, clock: ManualClock) -> None:
    deep: Any = "bottom"
    for _ in range(50):
        deep = [deep]
    huge = {f"k{i}": "x" * 1_999 for i in range(100)}
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.POLICY_DECISION, deep=deep)
        record = audit.append(AuditEvent.POLICY_DECISION, huge=huge)
    assert "[too deeply nested]" in log_path.read_text()
    assert record["data"]["oversize"] is True
    assert max(len(raw) for raw in lines_of(log_path)) < 70_000
    assert verify(log_path).ok


# --- verify --------------------------------------------------------------------------------------


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

    head = head_path(log_path)
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
    short later, it is an edit, not an interrupted append (tests/broker/test_audit_faults.py
    has those)."""
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
    head = head_path(log_path).read_bytes()
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.PERMISSION_GRANTED)
        head_path(log_path).write_bytes(head)
        one_behind = verify(log_path)
        audit.append(AuditEvent.PERMISSION_GRANTED)
    head_path(log_path).write_bytes(head)
    assert one_behind.ok
    assert "line 4 was written but the head file not yet updated" in one_behind.reason
    result = verify(log_path)
    assert not result.ok
    assert result.first_bad_line == 4
    assert "without updating the head" in result.reason


def test_edited_or_missing_head_file_is_detected(log_path: Path, clock: ManualClock) -> None:
    write_events(log_path, clock, 3)
    head = head_path(log_path)
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


# --- the writer after damage -------------------------------------------------------------------


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
    head = head_path(log_path).read_bytes()
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.ROUTER_OUTPUT)
    head_path(log_path).write_bytes(head)
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


# --- tail ----------------------------------------------------------------------------------------


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


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can write as another user"
)
def test_root_writing_to_a_users_audit_leaves_every_file_to_that_user(tmp_path):
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

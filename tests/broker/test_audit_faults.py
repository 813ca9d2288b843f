"""The audit log meets a full disk and a crash: an interrupted append is told apart from an edit.

A write cut short (ENOSPC, EIO, SIGKILL) leaves a torn last line, or a line whose head was not
yet updated. verify names both without a later write; the next writer records the torn bytes in
an AUDIT_FAULT line, and the user's signed AUDIT_ACK makes verify pass while both stay in the
chain. Edits stay failures.

Real files in tmp_path, real subprocesses killed with SIGKILL and a real RLIMIT_FSIZE for the
kernel's own short write. Where a test needs a full disk in this process, it patches os.write at
the edge (``FullDisk``): filling a real disk from a test is neither safe nor portable.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from broker.audit.errors import AuditWriteError
from broker.audit.events import AuditEvent
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from broker.keys import load_install_secret
from broker.permissions import DenyPrompter
from broker.session import Session
from broker.settings import Settings
from core.clock import ManualClock
from tests.support.cli import make_user, run_cli

REPO_ROOT = Path(__file__).resolve().parents[2]
INTERRUPTED = "an append was interrupted (a crash or a full disk)"

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="FullDisk tells files apart through /proc"
)


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


@pytest.fixture
def key() -> bytes:
    return bytes(range(32))


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "audit.jsonl"


def head_of(path: Path) -> Path:
    return path.with_name(path.name + ".head")


def append_events(audit: AuditLog, n: int) -> None:
    for i in range(n):
        audit.append(AuditEvent.TOOL_CALL_END, "t-1", tool="file_read", status="ok", i=i)


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


# --- a full disk ---------------------------------------------------------------------------------


def test_a_full_disk_mid_line_raises_a_named_error_and_verify_calls_it_interrupted(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 3)
        error = cut_an_append(monkeypatch, audit)
    assert isinstance(error, OSError)
    assert error.errno == errno.ENOSPC
    assert str(error).startswith(
        f"the audit log {log_path} cannot be written: the disk holding {log_path.parent} is full"
    )
    assert str(error).endswith("; free some space")
    assert not log_path.read_bytes().endswith(b"\n")  # the line really was cut

    result = verify(log_path, key=key)
    assert (result.ok, result.torn_tail, result.interrupted) == (False, True, True)
    assert (result.lines, result.first_bad_line) == (3, 4)
    assert result.reason == f"line 4 is incomplete: {INTERRUPTED}; the lines before it are intact"
    assert "tamper" not in result.reason
    assert "edited" not in result.reason


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
    assert f"1 acknowledged fault(s): line 4: {INTERRUPTED}, acknowledged at line 9" in (
        result.reason
    )


def test_a_full_disk_before_any_byte_leaves_the_log_as_it_was(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 2)
        before = log_path.read_bytes()
        cut_an_append(monkeypatch, audit, allow=0)
        assert log_path.read_bytes() == before
        assert verify(log_path, key=key).reason == "ok"
        assert audit.append(AuditEvent.ROUTER_OUTPUT)["seq"] == 3
    assert verify(log_path, key=key).reason == "ok"


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


def test_a_chat_turn_that_hits_a_full_disk_is_answered_unrecorded_and_the_next_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session(
        home=tmp_path / "home", settings=Settings(), clock=ManualClock(), prompter=DenyPrompter()
    )
    key = session.secret.audit_key
    session.ask("tell me a joke")
    fill_disk(monkeypatch, session.audit.path, allow=30)
    turn = session.ask("tell me another joke")  # must not raise
    monkeypatch.undo()
    assert turn.status == "done"
    assert turn.reply.endswith(
        f"(This reply was not recorded in the audit log, because the audit log "
        f"{session.audit.path} cannot be written: the disk holding {session.audit.path.parent} "
        "is full; free some space.)"
    )
    assert verify(session.audit.path, key=key).torn_tail

    session.ask("one more joke")
    result = verify(session.audit.path, key=key)
    assert (result.interrupted, len(result.faults)) == (True, 1)
    session.audit.acknowledge(result.unacknowledged)
    session.audit.close()
    assert verify(session.audit.path, key=key).ok


class AllowOnce:
    """The person allows every prompt, once."""

    def ask(self, request: object) -> Any:
        from broker.permissions import PromptDecision
        from broker.types import GrantMode

        return PromptDecision(allow=True, mode=GrantMode.ONCE)


def test_a_disk_that_fills_before_a_permission_is_recorded_stops_the_turn_and_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "Documents"
    docs.mkdir()
    (docs / "plan.txt").write_text("Buy milk\n")
    session = Session(
        home=tmp_path / "home", settings=Settings(), clock=ManualClock(), prompter=AllowOnce()
    )
    first = session.ask(f"list files in {docs}")
    assert [c.status for c in first.tool_calls] == ["ok"]
    lines = session.audit.path.read_bytes().splitlines(keepends=True)
    # Room for the next turn's router and policy lines (as long as this turn's), then full.
    fill_disk(monkeypatch, session.audit.path, allow=len(lines[0]) + len(lines[1]) + 10)
    turn = session.ask(f"list files in {docs}")
    monkeypatch.undo()
    assert turn.status == "failed"
    assert turn.tool_calls == []
    assert turn.reply.startswith(
        f"This request was stopped, and nothing more was run, because the audit log "
        f"{session.audit.path} cannot be written: the disk holding "
    )
    assert turn.reply.endswith("What ran before this was recorded.")
    assert session.permissions.grants.live() == []  # no grant outlives the turn
    session.audit.close()
    events = [
        json.loads(line)["event"]
        for line in session.audit.path.read_bytes().splitlines()
        if line.endswith(b"}")
    ]
    assert events.count("TOOL_CALL_START") == 1  # the first turn's only


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


# --- a crash -------------------------------------------------------------------------------------

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


# --- edits stay failures -------------------------------------------------------------------------


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


def test_the_log_itself_writes_faults_and_acknowledgements(log_path: Path) -> None:
    with AuditLog(log_path, ManualClock()) as audit:
        for event in (AuditEvent.AUDIT_FAULT, AuditEvent.AUDIT_ACK):
            with pytest.raises(ValueError, match="written by the audit log itself"):
                audit.append(event, offset=0)
        with pytest.raises(ValueError, match="no faults"):
            audit.acknowledge([])


# --- the command line ----------------------------------------------------------------------------


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
    assert "Acknowledged the interrupted append at line(s) 4." in proc.stdout
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


# --- a home on a full disk, or mounted read-only, for real ---------------------------------------
#
# The real CLI in a private mount namespace (tests/support/small_disk.py): the Chamberlain home is
# a tmpfs of a few megabytes filled to the last kilobytes, or bound read-only. The turn that
# cannot be audited runs nothing; a chat reply is still given, said to be unrecorded; and every
# fault ends in one sentence, never a traceback.


@pytest.fixture
def small_disk() -> None:
    from tests.support.small_disk import why_no_small_disk

    reason = why_no_small_disk()
    if reason is not None:
        pytest.skip(reason)


def _step(user: Path, *args: str):
    from tests.support.cli import cli_env
    from tests.support.small_disk import Step

    return Step([sys.executable, "-m", "app.cli", *args], cli_env(user), user)


def _seeded_home(tmp_path: Path) -> tuple[Path, Path]:
    """A person's home whose Chamberlain folder holds a remembered fact and its install secret
    but no audit log yet (the first append must create the log's files)."""
    user = make_user(tmp_path / "user")
    added = run_cli(user, "memory", "add", "my dog is called Rex")
    assert added.returncode == 0, added.stderr
    seed = tmp_path / "seed"
    shutil.copytree(user / ".chamberlain", seed)
    load_install_secret(seed)
    return user, seed


def test_on_a_full_disk_no_action_runs_unrecorded_a_chat_is_answered_and_nothing_is_lost(
    tmp_path: Path, small_disk: None, scripted_server: Any
) -> None:
    from tests.support.openai_server import Text
    from tests.support.small_disk import on_small_disk

    server = scripted_server([Text("Why did the scarecrow win an award?")])
    user, seed = _seeded_home(tmp_path)
    listing, joke, remember, listed, after, verified = on_small_disk(
        user / ".chamberlain",
        [
            _step(user, "ask", "list files in ~/Documents", "--approve", "file_read=once"),
            _step(user, "ask", "tell me a joke", "--llm", server.base_url, "--no-refine"),
            _step(user, "memory", "add", "my cat is called Tom"),
            "free",
            _step(user, "memory", "list"),
            _step(user, "ask", "list files in ~/Documents", "--approve", "file_read=once"),
            _step(user, "audit", "verify"),
        ],
        out=tmp_path / "after",
        seed=seed,
        free_kb=0,
    )
    for ran in (listing, joke, remember):
        assert "Traceback" not in ran.stderr
        assert len((ran.stdout + ran.stderr).strip().splitlines()) <= 3, ran
    # The listing would have run a tool: refused before anything ran, in one sentence.
    assert listing.returncode == 1
    assert listing.stdout.startswith(
        "Nothing was done, because the audit log ~/.chamberlain/audit.jsonl cannot be written: "
        "the disk holding ~/.chamberlain is full"
    )
    assert "free some space" in listing.stdout
    assert "plan.txt" not in listing.stdout
    # A chat reply is still given, and says it was not recorded.
    assert joke.returncode == 0, joke.stderr
    assert joke.stdout.startswith("Why did the scarecrow win an award?")
    assert "This reply was not recorded in the audit log" in joke.stdout
    assert server.turns_used == 1
    # Memory says the disk is full, and what was there is still there once space is freed.
    assert remember.returncode == 1
    assert "The disk holding ~/.chamberlain is full" in remember.stderr
    assert "nothing already saved was lost" in remember.stderr
    assert "I/O error" not in remember.stderr
    assert "my dog is called Rex" in listed.stdout
    assert "my cat is called Tom" not in listed.stdout
    assert after.returncode == 0, after.stderr
    assert "plan.txt" in after.stdout
    # The log holds only the turn that ran once space was freed, and it verifies.
    assert verified.returncode == 0, verified.stdout + verified.stderr
    lines = (tmp_path / "after" / "audit.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in lines]
    assert events.count("ROUTER_OUTPUT") == 1
    assert events.count("TOOL_CALL_START") == 1


def test_a_home_mounted_read_only_refuses_actions_in_one_sentence_that_says_what_to_do(
    tmp_path: Path, small_disk: None
) -> None:
    from tests.support.small_disk import on_small_disk

    user = make_user(tmp_path / "user")
    first = run_cli(user, "ask", "list files in ~/Documents", "--approve", "file_read=once")
    assert first.returncode == 0, first.stderr
    run_cli(user, "memory", "add", "my dog is called Rex")
    log = user / ".chamberlain" / "audit.jsonl"
    before = log.read_bytes()
    listing, remember = on_small_disk(
        user / ".chamberlain",
        [
            _step(user, "ask", "list files in ~/Documents", "--approve", "file_read=once"),
            _step(user, "memory", "add", "my cat is called Tom"),
        ],
        out=tmp_path / "after",
        mode="read_only",
    )
    assert listing.returncode == 1
    assert listing.stdout.strip() == (
        "Nothing was done, because the audit log ~/.chamberlain/audit.jsonl cannot be written: "
        "the file system holding ~/.chamberlain is mounted read-only; remount it read-write, or "
        "set CHAMBERLAIN_HOME to a writable folder. Chamberlain runs no tool and reads or "
        "writes no memory while it cannot record what it does."
    )
    assert listing.stderr == ""
    assert remember.returncode == 1
    assert "mounted read-only" in remember.stderr
    assert "Traceback" not in remember.stderr
    assert log.read_bytes() == before

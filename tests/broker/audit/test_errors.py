"""An audit line that cannot be written (broker/audit/errors.py): a named error in one sentence,
and the turn runs nothing unrecorded.

A full disk in this process is ``FullDisk`` (os.write patched at the edge); the last tests run
the real CLI with its home on a real tmpfs filled to the last kilobytes, or bound read-only.
"""

from __future__ import annotations

import errno
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from broker.audit.events import AuditEvent
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from broker.keys import load_install_secret
from broker.permissions import DenyPrompter, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from core.errors import StorageError
from tests.support.audit_log import INTERRUPTED, append_events, cut_an_append, fill_disk
from tests.support.cli import make_user, run_cli
from tests.support.small_disk import Step

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="FullDisk tells files apart through /proc"
)


def test_a_full_disk_mid_line_raises_a_named_error_and_verify_calls_it_interrupted(
    log_path: Path, key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    with AuditLog(log_path, ManualClock(), key=key) as audit:
        append_events(audit, 3)
        error = cut_an_append(monkeypatch, audit)
    # Under the error root the front ends word, and still an OSError for those reading errno.
    assert isinstance(error, StorageError)
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


class AllowOnce(RulePrompter):
    """The person allows every prompt, once."""

    def decide(self, request: object) -> Any:

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


def _step(user: Path, *args: str) -> Step:
    from tests.support.cli import cli_env

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

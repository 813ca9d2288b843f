"""The audit log read for people: rows per stage, recent denials, when grants were last used.

Real parts: a real Session turn on real files writes the log (with a ManualClock, so times are
known), or AuditLog.append writes it directly; the file is then damaged by hand where a test
says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.activity_words import DAMAGED, last_uses, recent_denials, rows
from broker.audit.events import AuditEvent
from broker.audit.writer import AuditLog
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock

START = 1_800_000_000.0


class Answer(RulePrompter):
    """The person answers every prompt the same way (allow with a mode, or deny)."""

    def __init__(self, mode: GrantMode | None) -> None:
        self.mode = mode

    def decide(self, request: PermissionRequest) -> PromptDecision:
        if self.mode is None:
            return PromptDecision(allow=False)
        return PromptDecision(allow=True, mode=self.mode, duration_s=600)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "plan.txt").write_text("Buy milk\n")
    return folder


def session(tmp_path: Path, mode: GrantMode | None, clock: ManualClock) -> Session:
    settings = Settings()
    settings.router.model_refinement = False
    return Session(home=tmp_path / "home", settings=settings, clock=clock, prompter=Answer(mode))


def test_a_turn_reads_as_one_row_per_stage_in_plain_words_oldest_first(tmp_path, docs):
    clock = ManualClock(START)
    s = session(tmp_path, GrantMode.TIMED, clock)
    s.ask(f"list files in {docs}")

    shown = rows(s.audit.path)
    [turn_id] = {r.turn_id for r in shown}
    assert turn_id
    stages = [r.stage for r in shown]
    assert stages[0] == "Request understood"
    assert stages[-1] == "Turn ended"
    for stage in ("Tools allowed", "Permission check", "Permission given", "Tool finished"):
        assert stage in stages
    granted = next(r for r in shown if r.stage == "Permission given")
    assert (granted.tool, granted.capability, granted.decision) == (
        "file_list",
        "file_read",
        "allowed (timed)",
    )
    assert str(docs) in granted.detail
    finished = next(r for r in shown if r.stage == "Tool finished")
    assert finished.decision == "ok"
    assert all(r.time == pytest.approx(START) for r in shown)
    assert [r.seq for r in shown] == sorted(r.seq for r in shown if r.seq is not None)
    assert not any(r.damaged for r in shown)


def test_rows_are_capped_to_the_newest_lines(tmp_path):
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, ManualClock()) as audit:
        for i in range(30):
            audit.append(AuditEvent.MEMORY_RECALL, turn_id=f"t{i}", fact_ids=[], held_back=0)
    shown = rows(path, limit=5)
    assert [r.turn_id for r in shown] == ["t25", "t26", "t27", "t28", "t29"]


def test_a_damaged_line_becomes_a_row_that_says_so_and_the_rest_still_reads(tmp_path):
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, ManualClock()) as audit:
        for i in range(3):
            audit.append(AuditEvent.TOOL_CALL_END, turn_id=f"t{i}", tool="file_list", status="ok")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"data": garbage\n'
    path.write_bytes(b"".join(lines) + b"\xff\xfe not json either\n")

    shown = rows(path)
    assert [r.damaged for r in shown] == [False, True, False, True]
    assert shown[1].event == DAMAGED
    assert "not an audit record" in shown[1].detail
    assert [r.turn_id for r in shown if not r.damaged] == ["t0", "t2"]


def test_a_missing_log_has_no_rows_and_an_unreadable_one_says_why(tmp_path):
    assert rows(tmp_path / "nothing.jsonl") == []
    folder = tmp_path / "a-folder.jsonl"
    folder.mkdir()
    [row] = rows(folder)
    assert row.damaged
    assert "could not be read" in row.detail
    assert recent_denials(folder) == []
    assert last_uses(folder) == {}


def test_recent_denials_name_the_tool_capability_scope_and_why_newest_first(tmp_path, docs):
    clock = ManualClock(START)
    s = session(tmp_path, None, clock)
    s.ask(f"list files in {docs}")
    clock.advance(60)
    s.audit.append(
        AuditEvent.PERMISSION_TIMEOUT,
        turn_id="later",
        tool="web_fetch",
        capability="web_access",
        scope="domain:example.org",
        why="timeout",
    )
    s.audit.append(AuditEvent.TOKEN_REFUSED, turn_id="later", tool="file_read", problem="replayed")
    s.audit.append(AuditEvent.TOOL_CALL_END, turn_id="later", tool="x", status="ok")

    denials = recent_denials(s.audit.path)
    assert [d.event for d in denials] == [
        "TOKEN_REFUSED",
        "PERMISSION_TIMEOUT",
        "PERMISSION_DENIED",
    ]
    refused, timed_out, denied = denials
    assert refused.why == "the permission token was already used"
    assert (timed_out.capability, timed_out.scope, timed_out.why) == (
        "web_access",
        "domain:example.org",
        "nobody answered in time",
    )
    assert (denied.tool, denied.capability, denied.scope) == ("file_list", "file_read", str(docs))
    assert denied.why == "you said no"
    assert denied.time == pytest.approx(START)
    assert timed_out.time == pytest.approx(START + 60)
    assert len(recent_denials(s.audit.path, limit=1)) == 1


def test_last_uses_come_from_the_grant_and_each_later_check_it_covered(tmp_path, docs):
    clock = ManualClock(START)
    s = session(tmp_path, GrantMode.TIMED, clock)
    s.ask(f"list files in {docs}")
    [grant] = [g for g in s.permissions.grants.live() if g.mode is GrantMode.TIMED]
    assert last_uses(s.audit.path) == {grant.id: pytest.approx(START)}

    clock.advance(120)
    s.ask(f"list files in {docs}")  # covered by the same grant: no new prompt
    assert last_uses(s.audit.path) == {grant.id: pytest.approx(START + 120)}


def test_the_activity_window_reads_counts_capabilities_and_tools_in_words_the_cli_keeps_ids(
    tmp_path, docs
):
    from app.activity_words import summary
    from app.windows.words import TOOL_WORDS
    from tools.registry import builtin_registry

    s = session(tmp_path, GrantMode.ONCE, ManualClock(START))
    s.ask(f"list files in {docs}")
    shown = rows(s.audit.path)
    details = {r.stage: r.detail for r in shown}
    # One call: "1 tool call", never "1 tool call(s)"; "0 facts" when none.
    assert "1 tool call" in details["Turn ended"]
    assert not any("(s)" in r.detail for r in shown)
    assert details["Permission given"].startswith("once grant ")
    assert f"Read files for {docs}" in details["Permission given"]
    assert "List a folder" in details["Tools allowed"]
    assert not any("file_read" in r.detail or "file_list" in r.detail for r in shown)
    # How the message was understood, in the router's words, not its intent id.
    assert details["Request understood"].startswith("understood as a request about your files (")
    assert details["Turn ended"] == "turn done: a request about your files, 1 tool call"
    assert not any("file_task" in r.detail for r in shown)
    # Refused: the tool's row says it did not run, with no capability id either.
    s.permissions.prompter = Answer(None)  # the once-grant ended with its turn; now: no
    s.ask(f"list files in {docs}")
    refused = [r for r in rows(s.audit.path) if r.stage == "Tool finished"][-1]
    assert refused.decision == "denied"
    assert refused.detail == "not run: the permission was not given"
    # `chamberlain audit tail` keeps the ids a command line can be given and grepped for.
    data = {"capability": "file_read", "scope": str(docs), "mode": "once", "grant_id": "g1"}
    assert f"file_read for {docs}" in summary(AuditEvent.PERMISSION_GRANTED, data)
    assert "file_list" in summary(AuditEvent.POLICY_DECISION, {"allowed_tools": ["file_list"]})
    assert "file_task" in summary(AuditEvent.ROUTER_OUTPUT, {"intent": "file_task"})
    # Every built-in tool has its words (a new one would otherwise show as its id).
    assert set(builtin_registry().names()) <= set(TOOL_WORDS)

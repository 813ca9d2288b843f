"""Post-hooks: one-shot grants end with their turn, other grants do not; the turn is summarised.

Real GrantStore, PermissionBroker and audit file (the support rig); grants are made the way the
broker makes them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from broker.audit.verify import verify
from broker.permissions import DenyPrompter
from broker.posthooks import run_posthooks
from broker.types import (
    Grant,
    GrantMode,
    Intent,
    MemoryEvent,
    PolicyDecision,
    RouterOutput,
    ToolCallRecord,
    TurnResult,
)
from core.clock import ManualClock
from tests.support.rig import Rig
from tools.manual import Capability


@pytest.fixture
def rig(tool_rig: Callable[..., Rig], tmp_path: Path) -> Rig:
    """The broker's real permissions and audit file, grants in a file; nobody to ask."""
    return tool_rig(grants_path=tmp_path / "grants.json", prompter=DenyPrompter())


def grant(grant_id: str, mode: GrantMode, call_id: str | None = None) -> Grant:
    now = ManualClock().now()
    return Grant(
        id=grant_id,
        capability=Capability.FILE_READ,
        scope="/home/user/Documents",
        mode=mode,
        issued_at=now,
        expires_at=now + 300 if mode in (GrantMode.ONCE, GrantMode.TIMED) else None,
        tool_call_id=call_id if mode is GrantMode.ONCE else None,
        args_digest="d" * 64 if mode is GrantMode.ONCE else None,
    )


def turn_with(*records: tuple[str, str]) -> TurnResult:
    return TurnResult(
        router=RouterOutput(intent=Intent.FILE_TASK, confidence=0.9),
        policy=PolicyDecision(
            intent=Intent.FILE_TASK,
            allowed_tools=["file_read"],
            forbidden_tools=[],
            required_capabilities=[Capability.FILE_READ],
        ),
        tool_calls=[
            ToolCallRecord(tool="file_read", arguments={}, status=status, call_id=call_id)
            for call_id, status in records
        ],
        reply="done",
    )


def test_once_grants_used_in_the_turn_are_revoked_and_audited(rig):
    for g in (
        grant("g-once-ran", GrantMode.ONCE, "call-1"),
        grant("g-once-denied", GrantMode.ONCE, "call-2"),
        grant("g-session", GrantMode.SESSION),
        grant("g-timed", GrantMode.TIMED),
    ):
        rig.grants.add(g)

    run_posthooks(
        turn_with(("call-1", "ok"), ("call-2", "denied")),
        turn_id="t-1",
        permissions=rig.permissions,
        audit=rig.audit,
        memory_hooks=[],
    )

    assert rig.grants.get("g-once-ran") is None  # revoked grants are dropped, not kept
    # Its call never ran, and the grant still ends with the turn.
    assert rig.grants.get("g-once-denied") is None
    assert sorted(g.id for g in rig.grants.live()) == ["g-session", "g-timed"]
    revoked = rig.events("PERMISSION_REVOKED")
    assert sorted(e["data"]["grant_id"] for e in revoked) == ["g-once-denied", "g-once-ran"]
    assert all(e["turn"] == "t-1" and e["data"]["mode"] == "once" for e in revoked)
    [summary] = rig.events("POSTHOOK_SUMMARY")
    assert summary["data"]["revoked_once"] == 2
    assert summary["data"]["calls"] == [
        {"tool": "file_read", "status": "ok"},
        {"tool": "file_read", "status": "denied"},
    ]
    assert verify(rig.audit_path).ok


def test_a_once_grant_for_a_call_of_another_turn_is_left_alone(rig):
    rig.grants.add(grant("g-elsewhere", GrantMode.ONCE, "call-other-turn"))
    run_posthooks(
        turn_with(("call-1", "ok")),
        turn_id="t-1",
        permissions=rig.permissions,
        audit=rig.audit,
        memory_hooks=[],
    )
    assert [g.id for g in rig.grants.live()] == ["g-elsewhere"]
    assert rig.events("PERMISSION_REVOKED") == []


def test_session_and_always_grants_survive_the_turn(rig):
    rig.grants.add(grant("g-session", GrantMode.SESSION))
    rig.grants.add(grant("g-always", GrantMode.ALWAYS))
    run_posthooks(
        turn_with(("call-1", "ok")),
        turn_id="t-1",
        permissions=rig.permissions,
        audit=rig.audit,
        memory_hooks=[],
    )
    assert sorted(g.id for g in rig.grants.live()) == ["g-always", "g-session"]
    assert rig.events("PERMISSION_REVOKED") == []


def test_memory_hook_events_are_added_to_the_turn_and_counted_in_the_audit(rig):
    class Hook:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def after_turn(
            self, turn: TurnResult, turn_id: str, earlier_kept: tuple[str, ...] = ()
        ) -> list[MemoryEvent]:
            self.seen.append(turn.reply)
            return [MemoryEvent("added", fact_id="f-1"), MemoryEvent("pending", fact_id="f-2")]

    hook = Hook()
    turn = turn_with(("call-1", "ok"))
    run_posthooks(
        turn, turn_id="t-1", permissions=rig.permissions, audit=rig.audit, memory_hooks=[hook]
    )
    assert hook.seen == ["done"]
    assert turn.memory == [
        MemoryEvent("added", fact_id="f-1"),
        MemoryEvent("pending", fact_id="f-2"),
    ]
    assert turn.reply == "done"  # the reply is the model's; what memory did stays beside it
    assert [e["data"]["events"] for e in rig.events("POSTHOOK_MEMORY")] == [2]

"""Post-hooks: one-shot grants end with their turn, other grants do not; the turn is summarised.

Real GrantStore, PermissionBroker and audit file; grants are made the way the broker makes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from broker.permissions import (
    DenyPrompter,
    GrantStore,
    PermissionBroker,
    TokenAuthority,
)
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
from tools.manual import Capability


def make_broker(tmp_path: Path) -> tuple[PermissionBroker, AuditLog]:
    clock = ManualClock()
    audit = AuditLog(tmp_path / "audit.jsonl", clock)
    broker = PermissionBroker(
        grants=GrantStore(tmp_path / "grants.json", clock),
        tokens=TokenAuthority(b"p" * 32, clock),
        prompter=DenyPrompter(),
        audit=audit,
        clock=clock,
    )
    return broker, audit


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


def events(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == name]


def test_once_grants_used_in_the_turn_are_revoked_and_audited(tmp_path):
    broker, audit = make_broker(tmp_path)
    for g in (
        grant("g-once-ran", GrantMode.ONCE, "call-1"),
        grant("g-once-denied", GrantMode.ONCE, "call-2"),
        grant("g-session", GrantMode.SESSION),
        grant("g-timed", GrantMode.TIMED),
    ):
        broker.grants.add(g)

    run_posthooks(
        turn_with(("call-1", "ok"), ("call-2", "denied")),
        turn_id="t-1",
        permissions=broker,
        audit=audit,
        memory_hooks=[],
    )

    assert broker.grants.get("g-once-ran") is None  # revoked grants are dropped, not kept
    # Its call never ran, and the grant still ends with the turn.
    assert broker.grants.get("g-once-denied") is None
    assert sorted(g.id for g in broker.grants.live()) == ["g-session", "g-timed"]
    revoked = events(tmp_path, "PERMISSION_REVOKED")
    assert sorted(e["data"]["grant_id"] for e in revoked) == ["g-once-denied", "g-once-ran"]
    assert all(e["turn"] == "t-1" and e["data"]["mode"] == "once" for e in revoked)
    [summary] = events(tmp_path, "POSTHOOK_SUMMARY")
    assert summary["data"]["revoked_once"] == 2
    assert summary["data"]["calls"] == [
        {"tool": "file_read", "status": "ok"},
        {"tool": "file_read", "status": "denied"},
    ]
    assert verify(tmp_path / "audit.jsonl").ok


def test_a_once_grant_for_a_call_of_another_turn_is_left_alone(tmp_path):
    broker, audit = make_broker(tmp_path)
    broker.grants.add(grant("g-elsewhere", GrantMode.ONCE, "call-other-turn"))
    run_posthooks(
        turn_with(("call-1", "ok")),
        turn_id="t-1",
        permissions=broker,
        audit=audit,
        memory_hooks=[],
    )
    assert [g.id for g in broker.grants.live()] == ["g-elsewhere"]
    assert events(tmp_path, "PERMISSION_REVOKED") == []


def test_session_and_always_grants_survive_the_turn(tmp_path):
    broker, audit = make_broker(tmp_path)
    broker.grants.add(grant("g-session", GrantMode.SESSION))
    broker.grants.add(grant("g-always", GrantMode.ALWAYS))
    run_posthooks(
        turn_with(("call-1", "ok")),
        turn_id="t-1",
        permissions=broker,
        audit=audit,
        memory_hooks=[],
    )
    assert sorted(g.id for g in broker.grants.live()) == ["g-always", "g-session"]
    assert events(tmp_path, "PERMISSION_REVOKED") == []


def test_memory_hook_events_are_added_to_the_turn_and_counted_in_the_audit(tmp_path):
    class Hook:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def after_turn(self, turn: TurnResult, turn_id: str) -> list[MemoryEvent]:
            self.seen.append(turn.reply)
            return [MemoryEvent("added", fact_id="f-1"), MemoryEvent("pending", fact_id="f-2")]

    broker, audit = make_broker(tmp_path)
    hook = Hook()
    turn = turn_with(("call-1", "ok"))
    run_posthooks(turn, turn_id="t-1", permissions=broker, audit=audit, memory_hooks=[hook])
    assert hook.seen == ["done"]
    assert turn.memory == [
        MemoryEvent("added", fact_id="f-1"),
        MemoryEvent("pending", fact_id="f-2"),
    ]
    assert turn.reply == "done"  # the reply is the model's; what memory did stays beside it
    assert [e["data"]["events"] for e in events(tmp_path, "POSTHOOK_MEMORY")] == [2]

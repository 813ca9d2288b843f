"""Post-hooks: what happens after the reply — the turn's audit summary, one-shot grants revoked,
and the memory hooks (the only place memory is ever written; the memory store plugs in here).

Post-hooks never call tools, and never change the reply: what memory did goes on the turn as
typed events (`TurnResult.memory`), which each front end shows beside the reply, so the user
always sees what was remembered.
"""

from __future__ import annotations

import logging
from typing import Protocol

from broker.audit.events import AuditEvent
from broker.audit.redaction import digest
from broker.audit.writer import AuditLog
from broker.permissions import PermissionBroker
from broker.types import GrantMode, MemoryEvent, TurnResult

log = logging.getLogger("chamberlain.broker.posthooks")


# What a memory event did when it kept a fact (added it, replaced an older one with it, or
# holds it for consent): the facts a conversation's turn kept (`broker.conversation.Turn.kept`).
KEPT_ACTIONS = ("added", "superseded", "pending")


class MemoryHook(Protocol):
    """Called once per finished turn; returns the memory events it produced (for TurnResult).
    `earlier_kept`: the facts the conversation's previous turn kept, what "forget that" points
    at (none outside a conversation)."""

    def after_turn(
        self, turn: TurnResult, turn_id: str, earlier_kept: tuple[str, ...] = ()
    ) -> list[MemoryEvent]: ...


def run_posthooks(
    turn: TurnResult,
    *,
    turn_id: str,
    permissions: PermissionBroker,
    audit: AuditLog,
    memory_hooks: list[MemoryHook],
    earlier_kept: tuple[str, ...] = (),
) -> None:
    # One-shot grants end with the turn even if their call never ran.
    used_once = {
        g.id
        for g in permissions.grants.live()
        if g.mode is GrantMode.ONCE and g.tool_call_id in {c.call_id for c in turn.tool_calls}
    }
    for grant_id in sorted(used_once):
        permissions.revoke(grant_id, "one-shot grant ends with its turn", turn_id)

    for hook in memory_hooks:
        events = hook.after_turn(turn, turn_id, earlier_kept)
        turn.memory.extend(events)
        audit.append(AuditEvent.POSTHOOK_MEMORY, turn_id=turn_id, events=len(events))

    audit.append(
        AuditEvent.POSTHOOK_SUMMARY,
        turn_id=turn_id,
        intent=turn.router.intent.value,
        source=turn.router.source,
        allowed_tools=turn.policy.allowed_tools,
        calls=[{"tool": c.tool, "status": c.status} for c in turn.tool_calls],
        iterations=turn.iterations,
        direct=turn.direct,
        reply=digest(turn.reply),
        revoked_once=len(used_once),
        status=turn.status,
    )

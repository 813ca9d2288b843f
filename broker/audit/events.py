"""What the audit log records: the event names, the data an event may carry, a recorded fault.

Each turn writes one record per pipeline stage (router output, policy decision, permission
checks and grants, tool calls, executor response, post-hook summary). The names in `AuditEvent`
are part of the log format: verify and tail read them back from logs written long before.

It must never import the rest of the audit package: every other module of it imports this one.
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from typing import TypeAlias

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"


class AuditEvent(StrEnum):
    """What happened. One event per pipeline stage; the names are part of the log format."""

    ROUTER_OUTPUT = "ROUTER_OUTPUT"
    POLICY_DECISION = "POLICY_DECISION"
    PERMISSION_CHECK = "PERMISSION_CHECK"
    PERMISSION_GRANTED = "PERMISSION_GRANTED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    # A prompt nobody answered is not a user's denial (architecture invariant 2).
    PERMISSION_TIMEOUT = "PERMISSION_TIMEOUT"
    # An answer that came after its prompt had timed out: recorded, never used.
    PERMISSION_LATE_ANSWER = "PERMISSION_LATE_ANSWER"
    PERMISSION_REVOKED = "PERMISSION_REVOKED"
    PERMISSION_EXPIRED = "PERMISSION_EXPIRED"
    TOKEN_REFUSED = "TOKEN_REFUSED"
    TOOL_CALL_START = "TOOL_CALL_START"
    TOOL_CALL_END = "TOOL_CALL_END"
    EXECUTOR_RESPONSE = "EXECUTOR_RESPONSE"
    # The tool loop ended without a final answer: stall, budget or repeated errors.
    EXECUTOR_STOPPED = "EXECUTOR_STOPPED"
    MEMORY_RECALL = "MEMORY_RECALL"
    MEMORY_WRITE = "MEMORY_WRITE"
    POSTHOOK_MEMORY = "POSTHOOK_MEMORY"
    POSTHOOK_SUMMARY = "POSTHOOK_SUMMARY"
    # Written by the audit log itself: an append that was cut short (a crash or a full disk),
    # found and described by the next writer; and the user's signed acknowledgement of one.
    AUDIT_FAULT = "AUDIT_FAULT"
    AUDIT_ACK = "AUDIT_ACK"


@dataclasses.dataclass(frozen=True)
class AuditFault:
    """An append that was cut short, as the next writer recorded it.

    ``line`` is the first line of the torn bytes, ``recorded_at`` the AUDIT_FAULT line that
    describes them (its ``seq`` and ``hash`` are what an acknowledgement names), and
    ``acknowledged_at`` the AUDIT_ACK line that accepted it, if any.
    """

    line: int
    recorded_at: int
    seq: int
    hash: str
    acknowledged_at: int | None = None

"""The audit log for people: what each stage of each turn did, in plain words.

The desktop app's Activity and Permissions windows, and `chamberlain audit tail`, read the log
through this module (the broker records data; its wording for people lives here); it turns
audit records (``broker.audit``) into rows a person can scan — when, which turn, which stage,
which tool and capability, what was decided, and a short detail — and answers the two
questions the Permissions window asks of the log: what was refused lately, and when each grant
was last used.

It only reads, and only the end of the log (``broker.audit.tail``, which reads backwards in
chunks and stops after the lines asked for), so a large log costs what is shown, not its size.
It must never raise for what it finds in the log: a damaged line becomes a row that says so
(run ``broker.audit.verify`` to learn more). It never checks the chain; that is ``verify``'s job.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.windows.words import capability_words, counted, tool_words
from broker.audit.events import AuditEvent
from broker.audit.tail import tail
from broker.permissions import TOKEN_PROBLEM_TEXT
from broker.router.understood import READINGS

log = logging.getLogger("chamberlain.app.activity_words")

# What `rows` shows by default, and how far back the permission questions look.
DEFAULT_ROWS = 2_000
DEFAULT_SCAN = 10_000

# How each intent reads, by the id the log keeps.
READINGS_BY_ID: dict[str, str] = {intent.value: words for intent, words in READINGS.items()}

DAMAGED = "UNREADABLE_LINE"
UNREADABLE_LOG = "UNREADABLE_LOG"

# Each stage in words, for the Stage column and its filter.
STAGE_WORDS: dict[str, str] = {
    AuditEvent.ROUTER_OUTPUT: "Request understood",
    AuditEvent.POLICY_DECISION: "Tools allowed",
    AuditEvent.PERMISSION_CHECK: "Permission check",
    AuditEvent.PERMISSION_GRANTED: "Permission given",
    AuditEvent.PERMISSION_DENIED: "Permission refused",
    AuditEvent.PERMISSION_TIMEOUT: "Permission timed out",
    AuditEvent.PERMISSION_LATE_ANSWER: "Answer came too late",
    AuditEvent.PERMISSION_REVOKED: "Permission revoked",
    AuditEvent.PERMISSION_EXPIRED: "Permission expired",
    AuditEvent.TOKEN_REFUSED: "Call refused",
    AuditEvent.TOOL_CALL_START: "Tool started",
    AuditEvent.TOOL_CALL_END: "Tool finished",
    AuditEvent.EXECUTOR_RESPONSE: "Reply",
    AuditEvent.EXECUTOR_STOPPED: "Stopped without an answer",
    AuditEvent.MEMORY_RECALL: "Memory recalled",
    AuditEvent.MEMORY_WRITE: "Memory written",
    AuditEvent.POSTHOOK_MEMORY: "Memory after the turn",
    AuditEvent.POSTHOOK_SUMMARY: "Turn ended",
    AuditEvent.AUDIT_FAULT: "Interrupted write recorded",
    AuditEvent.AUDIT_ACK: "Interrupted write accepted",
    DAMAGED: "Damaged line",
    UNREADABLE_LOG: "Log unreadable",
}

# Why a permission was not given, from the `why` the broker records.
WHY_WORDS: dict[str, str] = {
    "user": "you said no",
    "timeout": "nobody answered in time",
    "headless": "there was no one to ask",
    "error": "the question could not be shown",
    "cancelled": "the request was stopped",
    "runs_code": "it would run code that cannot be shown; type such commands yourself",
}

_DENIALS = frozenset(
    {AuditEvent.PERMISSION_DENIED, AuditEvent.PERMISSION_TIMEOUT, AuditEvent.TOKEN_REFUSED}
)


@dataclass(frozen=True)
class ActivityRow:
    """One audit line as a person reads it. ``time`` is seconds since the epoch (None when the
    line does not say); ``damaged`` marks a line that could not be read as a record."""

    seq: int | None
    time: float | None
    turn_id: str
    event: str
    stage: str
    tool: str
    capability: str
    decision: str
    detail: str
    damaged: bool = False


@dataclass(frozen=True)
class DenialRow:
    """A permission that was not given, or a call whose token was refused."""

    time: float | None
    turn_id: str
    event: str
    tool: str
    capability: str
    scope: str
    why: str


def parse_time(ts: object) -> float | None:
    """The epoch seconds of an audit timestamp (``2026-11-24T16:09:40.123456Z``), or None."""
    if not isinstance(ts, str):
        return None
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _short(value: object, limit: int = 60) -> str:
    """A value in words, never cut in the middle of a JSON value: long text ends with "…"."""
    if isinstance(value, dict) and "len" in value and "sha256" in value:
        return f"{value['len']} chars"
    if isinstance(value, list):
        text = ", ".join(_short(v, limit) for v in value) or "none"
    elif isinstance(value, dict):
        text = ", ".join(f"{k} {_short(v, limit)}" for k, v in value.items()) or "none"
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# Fields that say nothing to a person reading the log (ids of calls and tokens, digests).
_QUIET = frozenset({"call_id", "token_id", "message", "reply", "output", "turn_id"})


def summary(event: str, data: dict[str, Any], *, plain: bool = False) -> str:
    """One stage in one short line: the Activity window's Detail (`plain`: capabilities and
    tools in words, "Read files", "List a folder") and `chamberlain audit tail` (their ids, as
    the log and the command line's options spell them)."""
    get = data.get
    scope = f" for {_short(get('scope'), 160)}" if get("scope") not in (None, "*") else ""
    cap = _text(get("capability"))
    if plain and cap:
        cap = capability_words(cap)
    # The Activity window says how a message was understood as the router says it when it
    # asks ("a request about your files"); the command line keeps the id ("file_task").
    intent = _reading(get("intent")) if plain else get("intent")
    if event == AuditEvent.ROUTER_OUTPUT:
        return (
            f"understood as {intent} ({get('source')}, confidence {get('confidence')}, "
            f"risk {get('risk_level')})"
        )
    if event == AuditEvent.POLICY_DECISION:
        allowed = get("allowed_tools") or []
        if plain and isinstance(allowed, list):
            allowed = [tool_words(t) if isinstance(t, str) else t for t in allowed]
        return f"allowed tools: {_short(allowed)}"
    if event == AuditEvent.PERMISSION_CHECK:
        if get("outcome") == "grant":
            return f"{cap}{scope}: covered by grant {get('grant_id')}"
        if plain:
            return f"asked: {cap}{scope} (risk {get('risk')})"
        return f"asked for {cap}{scope} (risk {get('risk')})"
    if event == AuditEvent.PERMISSION_GRANTED:
        return f"{get('mode')} grant {get('grant_id')}: {cap}{scope}, by {get('decided_by')}"
    if event in (AuditEvent.PERMISSION_DENIED, AuditEvent.PERMISSION_TIMEOUT):
        why = get("why")
        return f"{cap}{scope} not allowed: {WHY_WORDS.get(str(why), str(why))}"
    if event == AuditEvent.TOKEN_REFUSED:
        problem = str(get("problem"))
        return TOKEN_PROBLEM_TEXT.get(problem, problem)
    if event in (AuditEvent.PERMISSION_REVOKED, AuditEvent.PERMISSION_EXPIRED):
        why = f" ({_short(get('why'))})" if get("why") else ""
        return f"{get('grant_id')} {cap}{scope}{why}".replace("  ", " ")
    if event == AuditEvent.TOOL_CALL_START:
        return _short(get("arguments") or {})
    if event == AuditEvent.TOOL_CALL_END:
        if plain and get("status") == "denied":
            # The permission's own row says why; the reason names the capability by its id.
            return "not run: the permission was not given"
        if get("reason"):
            return _short(get("reason"), 160)
        output = get("output")
        if isinstance(output, dict) and isinstance(output.get("len"), int):
            return f"{get('status')}, {output['len']} characters of output"
        return str(get("status") or "")
    if event == AuditEvent.EXECUTOR_RESPONSE:
        how = "direct" if get("direct") else _counted(get("iterations"), "model step")
        return f"reply of {_short(get('reply'))}, {_counted(get('calls'), 'tool call')}, {how}"
    if event == AuditEvent.MEMORY_RECALL:
        recalled = counted(len(get("fact_ids") or []), "fact")
        return f"recalled {recalled}, held back {get('held_back')}"
    if event == AuditEvent.POSTHOOK_SUMMARY:
        status = get("status", "done")
        return f"turn {status}: {intent}, {counted(len(get('calls') or []), 'tool call')}"
    shown = {k: v for k, v in data.items() if k not in _QUIET}
    return _short(shown, 120)


def _reading(intent: object) -> object:
    """An intent in the router's words; one this version does not know, as the log has it."""
    return READINGS_BY_ID.get(str(intent), intent)


def _counted(value: object, noun: str) -> str:
    """A count the log recorded, with its noun in the right number; what is not a count is
    shown as it is (the log is read, never trusted to be well formed)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return counted(value, noun)
    return f"{value} {noun}s"


def decision(event: str, data: dict[str, Any]) -> str:
    """What a stage decided, in a word or two (the Decision column and its filter)."""
    get = data.get
    if event == AuditEvent.PERMISSION_CHECK:
        return "already allowed" if get("outcome") == "grant" else "asked"
    if event == AuditEvent.PERMISSION_GRANTED:
        return f"allowed ({get('mode')})" if get("mode") else "allowed"
    if event == AuditEvent.PERMISSION_DENIED:
        return "stopped" if get("why") == "cancelled" else "denied"
    if event == AuditEvent.PERMISSION_TIMEOUT:
        return "timed out"
    if event == AuditEvent.PERMISSION_LATE_ANSWER:
        return "too late"
    if event == AuditEvent.PERMISSION_REVOKED:
        return "revoked"
    if event == AuditEvent.PERMISSION_EXPIRED:
        return "expired"
    if event == AuditEvent.TOKEN_REFUSED:
        return "refused"
    if event == AuditEvent.TOOL_CALL_END:
        return str(get("status") or "")
    if event == AuditEvent.EXECUTOR_STOPPED:
        return "stopped"
    if event == AuditEvent.POSTHOOK_SUMMARY:
        return str(get("status") or "done")
    if event == AuditEvent.MEMORY_WRITE:
        return str(get("action") or "")
    return ""


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _row(record: dict[str, Any]) -> ActivityRow:
    event = record.get("event")
    data = record.get("data")
    seq = record.get("seq")
    seq = seq if type(seq) is int else None
    turn = _text(record.get("turn"))
    if event == DAMAGED or not isinstance(event, str) or not isinstance(data, dict):
        size = data.get("line", {}).get("len") if isinstance(data, dict) else None
        what = f"a line of {size} bytes" if isinstance(size, int) else "a line"
        return ActivityRow(
            seq=seq,
            time=parse_time(record.get("ts")),
            turn_id=turn,
            event=DAMAGED,
            stage=STAGE_WORDS[DAMAGED],
            tool="",
            capability="",
            decision="",
            detail=f"{what} that is not an audit record (run Verify log to learn more)",
            damaged=True,
        )
    return ActivityRow(
        seq=seq,
        time=parse_time(record.get("ts")),
        turn_id=turn,
        event=event,
        stage=STAGE_WORDS.get(event, event.replace("_", " ").capitalize()),
        tool=_text(data.get("tool")),
        capability=_text(data.get("capability")),
        decision=decision(event, data),
        detail=summary(event, data, plain=True),
    )


def _records(path: Path, limit: int) -> list[dict[str, Any]] | str:
    """The last ``limit`` records, oldest first; or why the file could not be read."""
    try:
        return tail(Path(path), limit)
    except OSError as exc:
        log.warning("cannot read the audit log %s: %s", path, exc)
        return f"The audit log {path} could not be read: {exc.strerror or exc}."


def rows(path: Path, limit: int = DEFAULT_ROWS) -> list[ActivityRow]:
    """The last ``limit`` lines of the audit log as rows, oldest first (newest last, as in the
    file). A missing log is no rows; a log that cannot be read at all is one damaged row that
    says why."""
    records = _records(path, limit)
    if isinstance(records, str):
        unreadable = ActivityRow(
            seq=None,
            time=None,
            turn_id="",
            event=UNREADABLE_LOG,
            stage=STAGE_WORDS[UNREADABLE_LOG],
            tool="",
            capability="",
            decision="",
            detail=records,
            damaged=True,
        )
        return [unreadable]
    return [_row(r) for r in records]


def recent_denials(path: Path, limit: int = 20, scan: int = DEFAULT_SCAN) -> list[DenialRow]:
    """The last ``limit`` permissions not given (denied, timed out) and calls refused, newest
    first, from the last ``scan`` lines of the log."""
    records = _records(path, scan)
    if isinstance(records, str):
        return []
    found: list[DenialRow] = []
    for record in reversed(records):
        event, data = record.get("event"), record.get("data")
        if event not in _DENIALS or not isinstance(data, dict):
            continue
        if event == AuditEvent.TOKEN_REFUSED:
            problem = str(data.get("problem"))
            why = TOKEN_PROBLEM_TEXT.get(problem, problem)
        else:
            raw = str(data.get("why"))
            why = WHY_WORDS.get(raw, raw)
        found.append(
            DenialRow(
                time=parse_time(record.get("ts")),
                turn_id=_text(record.get("turn")),
                event=str(event),
                tool=_text(data.get("tool")),
                capability=_text(data.get("capability")),
                scope=_text(data.get("scope")),
                why=why,
            )
        )
        if len(found) >= limit:
            break
    return found


def last_uses(path: Path, scan: int = DEFAULT_SCAN) -> dict[str, float]:
    """When each grant was last given or used (grant id -> epoch seconds), from the last
    ``scan`` lines of the log: a PERMISSION_GRANTED line, or a PERMISSION_CHECK a grant
    covered. A grant not in those lines is not in the result."""
    records = _records(path, scan)
    if isinstance(records, str):
        return {}
    uses: dict[str, float] = {}
    for record in records:
        event, data = record.get("event"), record.get("data")
        if not isinstance(data, dict):
            continue
        used = event == AuditEvent.PERMISSION_GRANTED or (
            event == AuditEvent.PERMISSION_CHECK and data.get("outcome") == "grant"
        )
        grant_id, when = data.get("grant_id"), parse_time(record.get("ts"))
        if used and isinstance(grant_id, str) and when is not None:
            uses[grant_id] = max(when, uses.get(grant_id, when))
    return uses

"""What memory did after a turn, in the words a person reads: the terminal's sentences (with the
commands that approve, reject or undo a fact), the shape `chamberlain ask --json` prints, and the
desktop's lines and notification (where the buttons and a click do what the commands do).

The broker reports what memory did as typed `MemoryEvent`s on the turn and never words them; the
CLI, the chat window and the tray all say it from here, so the sentences are the same wherever a
person meets them. This module never reads or changes the reply the model wrote: a notice is set
beside it, never cut out of it. It must not import Qt (the headless CLI uses it).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from broker.types import MemoryEvent
from memory.types import FactSource, FactStatus

# "forget that" when nothing was kept just before it in this conversation (a one-off `ask`
# has no conversation before it).
TOOK_BACK_NOTHING = (
    'Nothing was kept just before this in the conversation for "that" to point at: nothing was '
    "forgotten or stored. `chamberlain memory list` shows what is remembered."
)
TOOK_BACK_NOTHING_APP = (
    "Nothing was kept just before this in the chat for “that” to point at: nothing was "
    "forgotten or stored. Memory in the tray menu shows what is remembered."
)


def memory_notice(event: MemoryEvent) -> str:
    """One event as the terminal says it: what was kept, refused or is waiting, and how to undo,
    approve or reject it."""
    action = event.action
    if action == "empty":
        return "What should I remember? Nothing was stored."
    if action == "temporary":
        return "This is a temporary chat: nothing was remembered."
    if action == "paused":
        return "Memory is paused (memory.paused): nothing was remembered."
    if action == "too_long":
        return (
            f"That is too long to remember as one fact (over {event.limit} characters); "
            "nothing was stored."
        )
    if action == "refused":
        return event.refusal
    if action == "offer":
        return (
            f'I did not keep this: "{event.text}" To have me remember it, say "yes" (in '
            f"`chamberlain chat`) or run `chamberlain ask --remember {_shell_words(event.text)}`."
        )
    if action == "forget_none" and not event.text:
        return TOOK_BACK_NOTHING
    if action == "forget_none":
        return f'Nothing I remember matches "{event.text}": nothing was forgotten or stored.'
    quoted = f'"{event.text}"'
    if action == "forget_match" and event.corrected:
        return (
            f"You told me before: {quoted}. If that no longer holds, forget it with "
            f"`chamberlain memory forget {event.fact_id}`."
        )
    if action == "forget_match":
        return (
            f"Matches what you asked me to forget: {quoted}. Forget it with "
            f"`chamberlain memory forget {event.fact_id}`."
        )
    if event.status is FactStatus.PENDING:
        why = f" ({', '.join(event.reasons)})" if event.reasons else ""
        level = event.sensitivity.value if event.sensitivity is not None else ""
        return (
            f"To remember {quoted} I need your approval: it is {level}{why}. "
            f"Approve with `chamberlain memory approve {event.fact_id}`, or drop it with "
            f"`chamberlain memory reject {event.fact_id}`."
        )
    if action == "duplicate":
        return f"Already remembered: {quoted}."
    explicit = event.source is FactSource.USER_EXPLICIT
    lead = "Remembered" if explicit else "Remembered from your message"
    replaces = f'; replaces "{event.replaces}"' if event.replaces else ""
    return f"{lead}: {quoted}{replaces} (undo: `chamberlain memory forget {event.fact_id}`)."


def _shell_words(text: str) -> str:
    """`text` as one shell word a person can copy: in double quotes where that is safe (an
    apostrophe in "I'm" stays readable), else quoted as the shell needs."""
    if not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)


def _why(event: MemoryEvent) -> str:
    """ "secret: medication (insulin)": how sensitive a waiting fact looks, and what made it so."""
    level = event.sensitivity.value if event.sensitivity is not None else "personal"
    return f"{level}: {', '.join(event.reasons)}" if event.reasons else level


def app_line(event: MemoryEvent) -> str:
    """One event as the desktop app's chat says it, beside its buttons (Approve, Edit…, Reject;
    Undo; Forget): never a command to type."""
    text = event.text.strip()
    if event.action == "offer":
        return f"I did not keep this: “{text}” Remember it?"
    if event.action == "forget_match" and event.corrected:
        return f"You told me before: “{text}” — forget it if it no longer holds"
    if event.action == "forget_match":
        return f"Matches what you asked me to forget: “{text}”"
    if event.action == "forget_none" and not text:
        return TOOK_BACK_NOTHING_APP
    if event.action == "forget_none":
        return f"Nothing I remember matches “{text}”: nothing was forgotten or stored."
    if event.fact_id and text and event.action in ("added", "superseded", "pending"):
        if event.status is FactStatus.PENDING:
            return f"To remember “{text}” I need your approval — it looks {_why(event)}."
        replaces = f" (replaces “{event.replaces}”)" if event.replaces else ""
        return f"Remembered: {text}{replaces}"
    return memory_notice(event)


def waiting_notification(event: MemoryEvent) -> tuple[str, str]:
    """(title, text) of the desktop notification for a fact waiting for consent: what waits,
    why, and that a click opens it where it is approved, edited or rejected."""
    return (
        "A memory waits for your approval",
        f"Chamberlain would like to remember “{event.text.strip()}” — it looks {_why(event)}. "
        "Click here to approve, edit or reject it in Memory, or use the buttons in the chat.",
    )


def reply_with_notices(reply: str, events: Iterable[MemoryEvent]) -> str:
    """The reply as the terminal shows it: the model's words, then each memory notice, a blank
    line between them."""
    notices = [memory_notice(event) for event in events]
    return "\n\n".join(part for part in (reply, *notices) if part)


def memory_json(event: MemoryEvent) -> dict[str, Any]:
    """One event as `chamberlain ask --json` prints it under "memory": a kept fact's id, text,
    level, status and reasons, and the notice; for one not kept, what happened and the notice."""
    data: dict[str, Any] = {"action": event.action}
    if event.action == "offer":
        data["text"] = event.text
    if event.fact_id is not None:
        data.update(
            fact_id=event.fact_id,
            text=event.text,
            sensitivity=event.sensitivity.value if event.sensitivity is not None else None,
            status=event.status.value if event.status is not None else None,
            reasons=list(event.reasons),
        )
    data["notice"] = memory_notice(event)
    return data

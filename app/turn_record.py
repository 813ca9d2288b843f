"""What a front end records of a turn as it runs, and how it keeps it: one record for both.

The desktop chat (app/chat.py) and the command line's chat (app/chat_cli.py) each show a turn
their own way, but record it alike from its events — how it was understood (`Details`), each
tool call as its card shows it (`ToolCall`) — and keep it alike, so a conversation started in
one opens in the other the same: the same title, the same cards and details beside the reply,
the same memory lines (with Approve or Undo on a fact still waiting or just kept).

This module never imports Qt and never shows anything: it only turns the broker's events and
results into the entries' plain data (app/chat_entries.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.chat_entries import Details, MemoryEntry, MemoryState, ToolCall
from app.memory_words import app_line
from memory.types import FactStatus

if TYPE_CHECKING:
    from broker.conversation import Turn
    from broker.events import TurnEvent
    from broker.types import MemoryEvent, TurnResult

# A kept conversation's title: its first message, on one line, shortened to this.
TITLE_CHARS = 60
# Of the 64 KiB a kept message's metadata may hold (memory.conversations.MAX_META_CHARS), what
# the tool results shown with one reply may take together; the conversation keeps what the
# model saw on its own (broker.conversation).
META_RESULT_CHARS = 40_000
# Memory actions that kept something new, which Undo forgets again ("duplicate" kept nothing).
KEPT_ACTIONS = ("added", "superseded", "pending")


def conversation_title(text: str) -> str:
    """A new conversation's title: the first message, on one line, shortened."""
    title = " ".join(text.split())
    return title[: TITLE_CHARS - 1].rstrip() + "…" if len(title) > TITLE_CHARS else title


def memory_entry(event: MemoryEvent) -> MemoryEntry:
    """A memory line: a fact waiting for consent (Approve, Edit…, Reject), one just remembered
    (Undo), one matching what the person asked to forget (Forget), else what memory did in the
    app's words (refused, already remembered, nothing to remember)."""
    text = event.text.strip()
    body = app_line(event)
    if event.action == "offer" and text:
        return MemoryEntry(body=body, state="offered", text=text)
    if event.action == "forget_match" and event.fact_id and text:
        return MemoryEntry(body=body, fact_id=event.fact_id, state="forgettable", text=text)
    if event.fact_id and event.action in KEPT_ACTIONS and text:
        state: MemoryState = "waiting" if event.status is FactStatus.PENDING else "kept"
        return MemoryEntry(body=body, fact_id=event.fact_id, state=state, text=text)
    return MemoryEntry(body=body, state="plain")


@dataclass
class TurnRecord:
    """A turn as a front end records it from its events: its id, how it was understood, and
    its tool calls in the order they first appeared (`calls`, by call id)."""

    text: str
    turn_id: str | None = None
    details: Details = field(default_factory=Details)
    calls: dict[str, ToolCall] = field(default_factory=dict)

    def take(
        self, event: TurnEvent, new_call: Callable[[ToolCall], object] | None = None
    ) -> ToolCall | None:
        """Record `event`; the tool call it changed, if any. `new_call` is told of each call
        the moment it first appears (before its card would show anything), so the front end
        can end the reply's text above it and put the card below."""
        from broker.events import (
            PolicyDecided,
            Recalled,
            Routed,
            ToolFinished,
            ToolStarted,
            TurnStarted,
        )

        if isinstance(event, TurnStarted):
            self.turn_id = event.turn_id
        elif isinstance(event, Routed):
            self.details.intent = event.router.intent.value
            self.details.confidence = event.router.confidence
            self.details.source = event.router.source
        elif isinstance(event, PolicyDecided):
            self.details.allowed_tools = list(event.policy.allowed_tools)
        elif isinstance(event, Recalled):
            self.details.recalled = [text for _, text in event.facts]
            self.details.held_back = event.held_back
        elif isinstance(event, ToolStarted):
            call = self._call(event.call_id, event.tool, new_call)
            call.summary = event.summary
            call.capability = event.capability.value
            return call
        elif isinstance(event, ToolFinished):
            # A call that never started (denied, refused, unanswered) has no duration: its
            # card says "Not run", not "Timed out 0 ms".
            started = event.call_id in self.calls
            call = self._call(event.call_id, event.tool, new_call)
            call.status = event.status
            call.duration_s = event.duration_s if started else None
            call.reason = event.reason
            call.result = event.result_text
            if event.capability is not None:
                call.capability = event.capability.value
            return call
        return None

    def _call(
        self, call_id: str, tool: str, new_call: Callable[[ToolCall], object] | None
    ) -> ToolCall:
        call = self.calls.get(call_id)
        if call is None:
            call = ToolCall(call_id=call_id, tool=tool or "tool", capability=None)
            self.calls[call_id] = call
            if new_call is not None:
                new_call(call)
        elif tool:
            call.tool = tool
        return call

    def kept_meta(
        self, kept: Turn, result: TurnResult, *, plain: bool = False
    ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """What `broker.conversation.save_turn` keeps beside the turn for the transcript: each
        card by call id (the results sharing META_RESULT_CHARS) and the reply's metadata — how
        it ended, whether it was a tool's result shown as is (`plain`), the details, and the
        cards of calls with no exchange in the conversation (ones that never ran), which are
        shown with the reply."""
        share = META_RESULT_CHARS // max(1, len(self.calls))
        cards = {cid: call.to_meta(result_chars=share) for cid, call in self.calls.items()}
        in_steps = {call.call_id for call in kept.calls}
        cancelled = result.status == "cancelled"
        reply_meta: dict[str, Any] = {
            # A request that could not be carried out reads as failed when reopened, as it did
            # when it ended.
            "status": "failed" if result.failed and not cancelled else result.status,
            "plain": plain,
            "tools": [card for cid, card in cards.items() if cid not in in_steps],
            "details": self.details.to_meta(),
        }
        return cards, reply_meta

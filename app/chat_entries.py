"""What a chat transcript holds: plain data for each entry (no Qt).

The window turns a turn's events into these entries and keeps them in a conversation's meta;
the transcript (app/chat_view.py) builds a widget for each entry that is on show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from app.windows.words import tool_words
from broker.router.understood import READINGS

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget


# A tool result kept whole in a conversation's meta up to this many characters.
FULL_RESULT_CHARS = 100_000

STATUS_WORDS = {
    "running": "Running…",
    "ok": "OK",
    "denied": "Denied",
    "refused": "Refused",
    "error": "Error",
    "timeout": "Timed out",
    "cancelled": "Cancelled",
}

ToolState = Literal["running", "ok", "denied", "refused", "error", "timeout", "cancelled"]

# A call that never started (no duration) says so, not "Timed out 0 ms". The only call that
# times out before it starts is one whose permission question nobody answered; the card says
# that in its own short words (a card kept before the broker's reasons were in words named the
# capability's id: "the system_read prompt"). Denied and refused calls never start either;
# their own word says that.
NOT_RUN = "Not run"
NOT_RUN_REASONS = {
    "timeout": "Nobody answered the permission question in time, so it did not run.",
    # As Activity says it: the card shows the arguments, and "Denied" says the rest.
    "denied": "The permission was not given, so it did not run.",
}
Tone = Literal["info", "warning", "error", "stopped"]


@dataclass
class ToolCall:
    """One tool call as its card shows it; kept in the reply's meta as a plain dict."""

    call_id: str
    tool: str
    capability: str | None
    summary: str = ""
    status: ToolState = "running"
    duration_s: float | None = None
    reason: str = ""
    result: str | None = None

    @property
    def ran(self) -> bool:
        """Whether the tool started (a call denied, refused or unanswered never did)."""
        return self.duration_s is not None

    def status_words(self) -> str:
        """How the call ended, as its card says it: "OK", "Denied", "Not run"…"""
        if not self.ran and self.status in ("timeout", "error"):
            return NOT_RUN
        return STATUS_WORDS.get(self.status, self.status)

    def reason_words(self) -> str:
        """Why it did not succeed, in words ("" when it did)."""
        if self.status == "ok":
            return ""
        if not self.ran and self.status in NOT_RUN_REASONS:
            return NOT_RUN_REASONS[self.status]
        return self.reason

    def to_meta(self, result_chars: int = FULL_RESULT_CHARS) -> dict[str, Any]:
        result = self.result
        if result is not None and len(result) > result_chars:
            result = result[:result_chars] + "\n… (cut when the conversation was kept)"
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "capability": self.capability,
            "summary": self.summary,
            "status": self.status,
            "duration_s": self.duration_s,
            "reason": self.reason,
            "result": result,
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> ToolCall:
        status = meta.get("status")
        duration = meta.get("duration_s")
        result = meta.get("result")
        return cls(
            call_id=str(meta.get("call_id", "")),
            tool=str(meta.get("tool", "tool")),
            capability=str(meta["capability"]) if meta.get("capability") else None,
            summary=str(meta.get("summary", "")),
            status=status if status in STATUS_WORDS and status != "running" else "cancelled",
            # Kept as 0 before a call that never ran was kept without a duration.
            duration_s=float(duration) if isinstance(duration, int | float) and duration else None,
            reason=str(meta.get("reason", "")),
            result=str(result) if result is not None else None,
        )


@dataclass
class Details:
    """What the router, the policy and memory made of one turn, shown on demand."""

    intent: str = ""
    confidence: float | None = None
    source: str = ""
    allowed_tools: list[str] = field(default_factory=list)
    recalled: list[str] = field(default_factory=list)
    held_back: int = 0

    def to_meta(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "confidence": self.confidence,
            "source": self.source,
            "allowed_tools": list(self.allowed_tools),
            "recalled": list(self.recalled),
            "held_back": self.held_back,
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> Details:
        confidence = meta.get("confidence")
        return cls(
            intent=str(meta.get("intent", "")),
            confidence=float(confidence) if isinstance(confidence, int | float) else None,
            source=str(meta.get("source", "")),
            allowed_tools=[str(t) for t in meta.get("allowed_tools", [])],
            recalled=[str(t) for t in meta.get("recalled", [])],
            held_back=int(meta.get("held_back", 0) or 0),
        )

    def lines(self) -> list[str]:
        # The reading in words, as the router says it when it asks ("a request about your
        # files"), not its id; an intent this version does not know, as it was kept.
        known = {intent.value: words for intent, words in READINGS.items()}
        intent = known.get(self.intent) or self.intent.replace("_", " ") or "not routed"
        how = f"{intent}"
        if self.confidence is not None:
            how += f", confidence {self.confidence:.2f}"
        if self.source:
            how += f" ({self.source})"
        tools = ", ".join(tool_words(t) for t in self.allowed_tools) or "none"
        lines = [f"Understood as: {how}", f"Tools allowed: {tools}"]
        if self.recalled:
            lines.append("Memories used:")
            lines.extend(f"  • {fact}" for fact in self.recalled)
        else:
            lines.append("Memories used: none")
        if self.held_back:
            lines.append(f"  ({self.held_back} more kept back from a model outside this computer)")
        return lines


@dataclass(eq=False)
class Entry:
    """One item of the transcript; `widget` is set while it is on show."""

    widget: QWidget | None = field(default=None, init=False, repr=False)


@dataclass(eq=False)
class UserEntry(Entry):
    body: str = ""
    # A long paste shows all its lines (the person asked to see them), not the first few.
    expanded: bool = False


@dataclass(eq=False)
class ReplyEntry(Entry):
    body: str = ""
    status: str = "streaming"  # streaming | done | failed | cancelled
    details: Details | None = None
    # Preformatted, not markdown: a direct action's reply is the tool's own rendering.
    plain: bool = False


@dataclass(eq=False)
class ToolEntry(Entry):
    call: ToolCall = field(default_factory=lambda: ToolCall("", "tool", None))
    expanded: bool = False
    full: bool = False


@dataclass(eq=False)
class NoticeEntry(Entry):
    body: str = ""
    tone: Tone = "info"


MemoryState = Literal["waiting", "kept", "forgettable", "forgotten", "rejected", "plain", "offered"]


@dataclass(eq=False)
class MemoryEntry(Entry):
    """A memory line: "waiting" offers Approve, Edit… and Reject; "kept" offers Undo;
    "forgettable" (a remembered fact matching what the person asked to forget) offers Forget;
    "offered" (a fact the person stated that nothing kept) offers Remember; "forgotten",
    "rejected" and "plain" offer nothing. `busy` while the store is being asked,
    `editing` while the person writes their own text, `note` says what their choice did and
    `problem` why it did not."""

    body: str = ""
    fact_id: str | None = None
    state: MemoryState = "plain"
    # The fact's own text (what Edit… starts from).
    text: str = ""
    note: str = ""
    problem: str = ""
    busy: bool = False
    editing: bool = False

    def to_meta(self) -> dict[str, Any]:
        """How the line is kept with the conversation: enough to offer its buttons again
        (once the store says the fact is still there and still waiting)."""
        return {"kind": "memory", "fact_id": self.fact_id, "state": self.state, "text": self.text}

    @classmethod
    def from_meta(cls, body: str, meta: dict[str, Any]) -> MemoryEntry:
        state = meta.get("state")
        fact_id = meta.get("fact_id")
        if not isinstance(fact_id, str) or state not in ("waiting", "kept", "forgettable"):
            return cls(body=body, state="plain")
        return cls(body=body, fact_id=fact_id, state=state, text=str(meta.get("text", "")))

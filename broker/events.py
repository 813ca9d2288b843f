"""What a turn reports while it runs: one event per step, in order, to one observer.

The session, the permission broker, the tool runner and the executor each say what happened
(routed, policy decided, permission asked and answered, tool started and finished, reply text
as it streams, what memory did, the turn's end). The CLI's `--debug-routing` and the desktop app
read the same events; neither reaches into a stage's private state.

Events are plain frozen dataclasses. An observer runs on the turn's own thread and must return
quickly (the app hands each event to its UI thread); an observer that raises is logged and
ignored, never allowed to break the turn. Events carry no secret the audit log would not hold:
tool output goes out only as the tool's own rendering for the user, which the user may see.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from broker.types import MemoryEvent, PolicyDecision, RouterOutput, ToolStatus, TurnResult
from tools.manual import Capability

log = logging.getLogger("chamberlain.broker.events")

SUMMARY_CHARS = 160


@dataclass(frozen=True)
class TurnEvent:
    turn_id: str


@dataclass(frozen=True)
class TurnStarted(TurnEvent):
    text: str


@dataclass(frozen=True)
class Routed(TurnEvent):
    router: RouterOutput


@dataclass(frozen=True)
class PolicyDecided(TurnEvent):
    policy: PolicyDecision


@dataclass(frozen=True)
class PermissionAsked(TurnEvent):
    call_id: str
    tool: str
    capability: Capability
    scope: str


# How a permission check ended: a grant already covered it, the person chose a mode, or not.
PermissionOutcome = Literal[
    "grant", "once", "timed", "session", "always", "denied", "timeout", "cancelled", "refused"
]


@dataclass(frozen=True)
class PermissionAnswered(TurnEvent):
    call_id: str
    tool: str
    capability: Capability
    scope: str
    outcome: PermissionOutcome

    @property
    def allowed(self) -> bool:
        return self.outcome in ("grant", "once", "timed", "session", "always")


@dataclass(frozen=True)
class ToolStarted(TurnEvent):
    call_id: str
    tool: str
    capability: Capability
    # The arguments in one short line, for a card's heading.
    summary: str


@dataclass(frozen=True)
class ToolFinished(TurnEvent):
    call_id: str
    tool: str
    capability: Capability | None
    status: ToolStatus
    duration_s: float
    # Why it did not succeed (empty when it did).
    reason: str = ""
    # The tool's own rendering of its result for the person (None when it did not run).
    result_text: str | None = None


@dataclass(frozen=True)
class TextDelta(TurnEvent):
    """A piece of the model's reply as it streams in."""

    text: str


@dataclass(frozen=True)
class Recalled(TurnEvent):
    """The remembered facts this turn's model was given: (fact id, text) pairs, and how many
    more matched but were held back from a model outside this machine."""

    facts: tuple[tuple[str, str], ...]
    held_back: int = 0


@dataclass(frozen=True)
class MemoryNotice(TurnEvent):
    """What memory did after the turn: a fact kept (with its id, so it can be undone), one
    waiting for consent, one refused. Data only: each front end words it."""

    memory: MemoryEvent


@dataclass(frozen=True)
class BackendNamed(TurnEvent):
    """The first reply a model wrote in this session: which model that is, in a sentence."""

    text: str


@dataclass(frozen=True)
class TurnEnded(TurnEvent):
    status: Literal["done", "failed", "cancelled"]
    result: TurnResult


TurnObserver = Callable[[TurnEvent], None]


def emit(observer: TurnObserver | None, event: TurnEvent) -> None:
    """Hand `event` to `observer`; an observer's own failure never reaches the turn."""
    if observer is None:
        return
    try:
        observer(event)
    except Exception:  # the observer's boundary: a UI bug must not break the turn
        log.exception("a turn observer failed on %s", type(event).__name__)


def summarize_arguments(arguments: object, limit: int = SUMMARY_CHARS) -> str:
    """The arguments of a call as one short line: `path=~/Documents, pattern=*.txt`."""
    if isinstance(arguments, dict):
        parts = []
        for key, value in arguments.items():
            shown = value if isinstance(value, str) else json.dumps(value, default=str)
            parts.append(f"{key}={shown}")
        text = ", ".join(parts)
    else:
        text = str(arguments)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

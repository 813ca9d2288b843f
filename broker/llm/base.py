"""The seam between the broker and any language model backend.

Everything a model returns is untrusted input: callers validate tool names, argument JSON and
sizes. Backends raise `ModelUnavailable` when nothing answers at the endpoint and `ModelError`
for any other failure, with a message a user can act on. Each call ends within one deadline
(`llm.timeout_s`), and a model that failed once in a turn is not called again in that turn:
callers note the failure (`note_failure`) and ask before calling (`failure_in_turn`).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from core import errors

# Appended to a reply whose stream ended without its finish marker.
CUT_OFF_NOTE = "[the model's reply was cut off]"


class ModelError(errors.ModelError):
    """The model endpoint answered, but not usefully (bad status, bad payload, timeout)."""


class ModelUnavailable(ModelError):
    """Nothing answers at the configured endpoint."""


@dataclass(frozen=True)
class ModelToolCall:
    id: str
    name: str
    # Raw JSON text exactly as the model sent it: parse and validate before use.
    arguments: str


@dataclass(frozen=True)
class AssistantMessage:
    content: str = ""
    tool_calls: list[ModelToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    # The stream ended before the server said the reply was complete: content and tool calls
    # are whatever arrived, and may stop mid-sentence or mid-argument.
    cut: bool = False
    # Why, when the backend knows ("the model server closed the connection in the middle of
    # its reply"); None when the stream simply stopped short.
    cut_reason: str | None = None
    # What the backend left out of the request to fit the model's context (broker.llm.budget),
    # for the reply to say.
    context_cuts: tuple[str, ...] = ()


def cut_note(message: AssistantMessage) -> str:
    """The note a cut reply ends with: why it was cut, when that is known."""
    if message.cut_reason:
        return f"[the model's reply was cut off: {message.cut_reason}]"
    return CUT_OFF_NOTE


class ChatModel(Protocol):
    """A chat-completions model. `name` is the model id; `is_loopback` tells egress rules."""

    @property
    def name(self) -> str: ...

    @property
    def is_loopback(self) -> bool: ...

    @property
    def is_embedded(self) -> bool: ...

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> AssistantMessage:
        """One completion. `tools` are OpenAI function-tool schemas; None or [] sends none."""
        ...

    def chat_json(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], schema_name: str
    ) -> str:
        """A completion constrained to JSON matching `schema` where the endpoint supports it.

        Returns the raw text; the caller parses and validates it.
        """
        ...


class _TurnFailures:
    """Which model failed in which turn, for the last few turns (bounded, thread-safe).

    Keyed by the model object and the turn id, so that a new model (or a new turn) starts clean.
    The model itself is held, not its id, so a recycled id can never match a dead model.
    """

    KEPT = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: OrderedDict[tuple[int, str], tuple[object, ModelError]] = OrderedDict()

    def note(self, model: object, turn_id: str, error: ModelError) -> None:
        with self._lock:
            key = (id(model), turn_id)
            if key in self._failures and self._failures[key][0] is model:
                return  # the first failure is the one the turn reports
            self._failures[key] = (model, error)
            while len(self._failures) > self.KEPT:
                self._failures.popitem(last=False)

    def get(self, model: object, turn_id: str) -> ModelError | None:
        with self._lock:
            found = self._failures.get((id(model), turn_id))
        if found is None or found[0] is not model:
            return None
        return found[1]


_FAILURES = _TurnFailures()


def note_failure(model: object, turn_id: str, error: ModelError) -> None:
    """Remember that `model` failed in turn `turn_id`; later callers in that turn skip it."""
    _FAILURES.note(model, turn_id, error)


def failure_in_turn(model: object, turn_id: str) -> ModelError | None:
    """The first failure of `model` in turn `turn_id`, if it failed: then do not call it again
    in that turn (a dead model would cost a full deadline per call) and name this failure."""
    return _FAILURES.get(model, turn_id)


# --- streamed reply text ---------------------------------------------------------------------

_DELTAS: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "chamberlain_reply_deltas", default=None
)


@contextlib.contextmanager
def deltas_to(sink: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block, chat replies hand each piece of text to `sink` as it arrives (the
    session sets this per turn; structured calls such as routing and extraction never do)."""
    token = _DELTAS.set(sink)
    try:
        yield
    finally:
        _DELTAS.reset(token)


def delta_sink() -> Callable[[str], None] | None:
    """Where the current turn wants reply text as it streams, if anywhere."""
    return _DELTAS.get()

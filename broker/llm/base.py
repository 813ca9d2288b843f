"""The seam between the broker and any language model backend.

Everything a model returns is untrusted input: callers validate tool names, argument JSON and
sizes. Backends raise `ModelUnavailable` when nothing answers at the endpoint and `ModelError`
for any other failure, with a message a user can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class ModelError(Exception):
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

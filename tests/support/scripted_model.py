"""An in-process language model for tests, built from a handler: `ScriptedModel(handler)`.

A fake at the edge, on purpose, for tests of what the broker does with a model's answers (the
tool loop, routing, memory proposals); the real protocol (HTTP, streaming, tool-call fragments,
broken JSON, server errors) is tested against the real-protocol server of
tests/support/openai_server.py. Like httpx's `MockTransport(handler)`, the handler gets each
request (`Request`: the messages and tools offered, or the JSON schema asked for) and returns
the reply, or raises what the backend would raise. Replies share the server's turn types:

- ``"text"`` or ``Text("text")``: an assistant reply (for `chat_json`, the raw JSON text);
- ``ToolCalls([("name", {"arg": 1}), ("other", '{"broken')])``: tool calls (a dict is sent as
  JSON, a string as-is), with ids ``call_<request number>_<index>`` as the server gives them;
- an `AssistantMessage`, for what only a backend in-process reports (a cut reply, context cuts);
- ``AsIs(anything)``: handed back unchanged, whatever it is: a backend that breaks its contract.

Every request is recorded in `.requests` (deep copies), so a test asserts what the model saw.
This module never opens a connection, a file or a thread.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from broker.llm.base import AssistantMessage, ModelToolCall
from tests.support.openai_server import Text, ToolCalls


@dataclass(frozen=True)
class AsIs:
    """A reply handed back exactly as it is, not made into a message: `AsIs(None)`, `AsIs(42)`."""

    value: Any


Reply: TypeAlias = str | Text | ToolCalls | AssistantMessage | AsIs


@dataclass(frozen=True)
class Request:
    """One call as the model received it: `chat` (messages, tools) or `chat_json` (schema)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    schema: dict[str, Any] | None = None
    schema_name: str | None = None

    @property
    def wants_json(self) -> bool:
        """A `chat_json` request (routing, memory extraction), not a chat turn."""
        return self.schema_name is not None

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered, in order (none for a request without tools)."""
        return [tool["function"]["name"] for tool in self.tools or []]

    @property
    def last(self) -> dict[str, Any]:
        """The last message sent (the user's question, or the latest tool result)."""
        return self.messages[-1]


Handler: TypeAlias = Callable[[Request], Any]


class ScriptedModel:
    """A `ChatModel` (broker/llm/base.py) whose every answer comes from `handler(request)`.

    `loopback`, `embedded` and `base_url` are what egress rules and the reply's naming look at.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        name: str = "scripted-model",
        loopback: bool = True,
        embedded: bool = False,
        base_url: str | None = None,
    ) -> None:
        self.handler = handler
        self._name = name
        self._loopback = loopback
        self._embedded = embedded
        if base_url is not None:
            self.base_url = base_url
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_loopback(self) -> bool:
        return self._loopback

    @property
    def is_embedded(self) -> bool:
        return self._embedded

    @property
    def chat_requests(self) -> list[Request]:
        """The chat requests, in order."""
        return [request for request in self.requests if not request.wants_json]

    @property
    def json_requests(self) -> list[Request]:
        """The `chat_json` requests (routing, memory extraction), in order."""
        return [request for request in self.requests if request.wants_json]

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> AssistantMessage:
        number = self._record(Request(copy.deepcopy(messages), copy.deepcopy(tools)))
        reply = self.handler(self.requests[number - 1])
        if isinstance(reply, AsIs):
            return reply.value  # type: ignore[no-any-return]  # untrusted: may be anything
        return _as_message(reply, number)

    def chat_json(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], schema_name: str
    ) -> str:
        request = Request(copy.deepcopy(messages), None, copy.deepcopy(schema), schema_name)
        number = self._record(request)
        reply = self.handler(self.requests[number - 1])
        if isinstance(reply, AsIs):
            return reply.value  # type: ignore[no-any-return]  # untrusted: may be anything
        if isinstance(reply, str):
            return reply
        if isinstance(reply, Text | AssistantMessage):
            return reply.content
        raise TypeError(f"a scripted JSON reply cannot be {reply!r}")

    def _record(self, request: Request) -> int:
        with self._lock:
            self.requests.append(request)
            return len(self.requests)


def _as_message(
    reply: str | Text | ToolCalls | AssistantMessage, number: int = 1
) -> AssistantMessage:
    """The AssistantMessage a backend returns for `reply` as the `number`th completion."""
    if isinstance(reply, AssistantMessage):
        return reply
    if isinstance(reply, str):
        return AssistantMessage(content=reply, finish_reason="stop")
    if isinstance(reply, Text):
        return AssistantMessage(content=reply.content, finish_reason=reply.finish_reason)
    if isinstance(reply, ToolCalls):
        calls = [
            ModelToolCall(
                id=f"call_{number}_{index}",
                name=name,
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
            for index, (name, arguments) in enumerate(reply.calls)
        ]
        return AssistantMessage(
            content=reply.content, tool_calls=calls, finish_reason=reply.finish_reason
        )
    raise TypeError(f"a scripted chat reply cannot be {reply!r}")


# --- handlers for the common cases -----------------------------------------------------------

Step: TypeAlias = "Reply | BaseException | Handler"


def replies(*steps: Step) -> Handler:
    """Answer the first request with the first step, the second with the second, …; when the
    steps run out the last one repeats (a model stuck in a loop). A step is a reply, an
    exception to raise, or a handler of its own (called with the request)."""
    if not steps:
        raise ValueError("replies() needs at least one step")
    position = 0
    lock = threading.Lock()

    def handler(request: Request) -> Any:
        nonlocal position
        with lock:
            step = steps[min(position, len(steps) - 1)]
            position += 1
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            return step(request)
        return step

    return handler


def calls_tool(name: str, arguments: dict[str, Any] | str, then: Reply = "done.") -> Handler:
    """Ask for one call of `name` with `arguments`, then answer `then` to every later request."""
    return replies(ToolCalls([(name, arguments)]), then)


def by_kind(*, chat: Handler | None = None, json: Handler | None = None) -> Handler:
    """Chat requests go to `chat`, `chat_json` requests to `json`; a request of a kind with no
    handler fails the test (the code under test asked for what it never should)."""

    def handler(request: Request) -> Any:
        chosen = json if request.wants_json else chat
        if chosen is None:
            kind = "JSON (chat_json)" if request.wants_json else "a chat reply"
            raise AssertionError(f"the model was asked for {kind}, which this test never expects")
        return chosen(request)

    return handler

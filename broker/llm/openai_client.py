"""The ChatModel for OpenAI-compatible chat-completions servers (Ollama, LM Studio, llama.cpp
server, vLLM, hosted APIs), through the `openai` SDK.

It turns whatever the server sends into an `AssistantMessage` and every SDK or transport failure
into `ModelUnavailable` / `ModelError` with a message a user can act on: no `openai` exception
ever leaves this module. It never parses or trusts tool arguments (the caller validates them),
never grows without bound on an absurd reply (content, tool-call count and argument size are
capped), never runs past its deadline (one wall-clock limit per call, `llm.timeout_s`, enforced
by closing the connection even while bytes trickle in or keep-alives arrive), never passes off a
stream that ended without its finish marker as a complete reply (it is marked `cut`), and never
talks to any host but the configured endpoint: no retries to elsewhere, no proxies for loopback
servers, and the user's OPENAI_API_KEY is never sent to it implicitly.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import httpx2
import openai
from openai.types.chat import ChatCompletion

from broker.llm.base import (
    AssistantMessage,
    ModelError,
    ModelToolCall,
    ModelUnavailable,
    delta_sink,
)
from broker.llm.budget import RETRY_SHARE, estimate_tokens, fit, message_tokens
from broker.llm.endpoints import is_loopback_url, says_context_exceeded
from broker.llm.tool_protocol import PromptedTools
from broker.settings import LLMSettings
from core.errors import Remedy
from tools.escapes import encodable
from tools.stop import Stopped, stop_hook

log = logging.getLogger("chamberlain.broker.llm")

# Bounds on one assistant message. The caller validates much tighter; these only keep a broken
# or hostile server from making the client itself grow without bound.
MAX_CONTENT_CHARS = 1024 * 1024
MAX_TOOL_CALLS = 16
MAX_ARGUMENT_CHARS = 64 * 1024
MAX_NAME_CHARS = 256  # tool names and call ids

# Local servers ignore the key, but the SDK insists on one; sending this placeholder rather than
# letting the SDK fall back to $OPENAI_API_KEY keeps a real key from reaching an arbitrary server.
NO_API_KEY = "chamberlain-no-key"

# 4xx answers to a response_format that mean "not this one", so chat_json tries the next.
# Auth, timeout and rate-limit answers would fail the same way again.
_NO_FALLBACK_STATUSES = frozenset({401, 403, 408, 429})


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    arguments_chars: int = 0
    truncated: bool = False


class _Accumulator:
    """Collects one assistant message from a response or from stream deltas, within the caps."""

    def __init__(self, on_delta: Callable[[str], None] | None = None) -> None:
        self._on_delta = on_delta
        self._content: list[str] = []
        self._content_chars = 0
        self.content_truncated = False
        self._calls: dict[int, _PartialCall] = {}
        self._last_index: int | None = None
        self.dropped_calls = 0
        self.finish_reason: str | None = None

    def add_content(self, text: str) -> None:
        if self.content_truncated or not text:
            return
        room = MAX_CONTENT_CHARS - self._content_chars
        if len(text) > room:
            text = text[:room]
            self.content_truncated = True
            log.warning("model reply exceeds %d characters; cut there", MAX_CONTENT_CHARS)
        self._content.append(text)
        self._content_chars += len(text)
        if self._on_delta is not None and text:
            self._on_delta(text)

    def add_call_delta(
        self, index: int | None, call_id: str | None, name: str | None, arguments: str | None
    ) -> None:
        if index is None:
            # Some servers omit the index: a new id starts a new call, anything else continues.
            last = self._calls.get(self._last_index) if self._last_index is not None else None
            if last is None or (call_id and last.id and call_id != last.id):
                index = max(self._calls, default=-1) + 1
            else:
                index = cast(int, self._last_index)
        call = self._calls.get(index)
        if call is None:
            if len(self._calls) >= MAX_TOOL_CALLS:
                self.dropped_calls += 1
                if self.dropped_calls == 1:
                    log.warning(
                        "model sent more than %d tool calls; extra ones dropped", MAX_TOOL_CALLS
                    )
                return
            call = self._calls[index] = _PartialCall()
        self._last_index = index
        if call_id and not call.id:
            call.id = call_id[:MAX_NAME_CHARS]
        if name and name != call.name and len(call.name) < MAX_NAME_CHARS:
            # Normally the name arrives whole in the first fragment; a server that streams it
            # in pieces still ends up with the full name.
            call.name = (call.name + name)[:MAX_NAME_CHARS] if call.name else name[:MAX_NAME_CHARS]
        if arguments and not call.truncated:
            room = MAX_ARGUMENT_CHARS - call.arguments_chars
            if len(arguments) > room:
                arguments = arguments[:room]
                call.truncated = True
                log.warning(
                    "tool call arguments exceed %d characters; cut there", MAX_ARGUMENT_CHARS
                )
            call.arguments.append(arguments)
            call.arguments_chars += len(arguments)

    def message(self) -> AssistantMessage:
        calls = [
            ModelToolCall(
                id=call.id or f"call_{position}",
                name=call.name,
                arguments="".join(call.arguments),
            )
            for position, (_, call) in enumerate(sorted(self._calls.items()))
        ]
        finish_reason = self.finish_reason
        if self.content_truncated:
            finish_reason = "length"
        return AssistantMessage(
            content="".join(self._content), tool_calls=calls, finish_reason=finish_reason
        )


class _Deadline:
    """The wall-clock end of one model call.

    The HTTP timeouts count the gaps between bytes, so a server sending one byte a second — in
    its headers or its body — or SSE keep-alive comments forever, never trips them. When this
    deadline passes, a timer shuts down the call's connection (registered the moment it is
    opened, before a byte is sent): a blocked read returns at once, and the call reports the
    deadline (`expired`) whatever error the cut connection produced. It also notes how far the
    call got (`connected`, `responded`), so a connection the server drops is described truly.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._ends_at = time.monotonic() + seconds
        self.expired = False
        self.stopped = False
        self.connected = False  # a connection to the server was opened
        self.responded = False  # the server's status line and headers arrived
        self._lock = threading.Lock()
        self._done = False
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        """Seconds left, for the per-request HTTP timeouts (connect, each read)."""
        return max(0.01, self._ends_at - time.monotonic())

    def watch(self, response: httpx2.Response) -> None:
        """The response has begun: shut its connection down when the deadline passes."""
        self.responded = True
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            self.watch_socket(sock)

    def watch_socket(self, sock: socket.socket) -> None:
        """Shut this connection down when the deadline passes (or now, if it has)."""
        self.connected = True
        with self._lock:
            if self._done:
                return
            if self.expired:
                _shutdown(sock)
            else:
                self._sockets.append(sock)

    def finish(self) -> None:
        """The call is over: never touch its sockets again (the pool may reuse them)."""
        with self._lock:
            self._done = True
            self._sockets.clear()
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def stop(self) -> bool:
        """The person stopped the turn: cut the call now, and say so (`stopped`). False when
        no response had arrived yet, so there was no connection of its own to cut."""
        with self._lock:
            if self._done:
                return True
            self.stopped = True
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)
            return bool(self._sockets)


class _ToolsRefused(Exception):
    """The server answered a request with tools by refusing tools (not the request)."""


class _TooLong(ModelError):
    """The server refused the request as longer than its model's context. `sent`: the messages
    it refused (set by the one who sent them); `body`: the server's error."""

    def __init__(self, message: str, *, body: object = None) -> None:
        super().__init__(message)
        self.body = body
        self.sent: list[dict[str, Any]] = []


def _carries_tool_turns(messages: list[dict[str, Any]]) -> bool:
    """Whether `messages` hold a tool call or a tool's result (an earlier turn's)."""
    return any(m.get("role") == "tool" or m.get("tool_calls") for m in messages)


def _refuses_tools(exc: Exception) -> bool:
    """A 400/422 whose error names tools: "model does not support tools" (Ollama), "tool
    choice requires --enable-auto-tool-choice" (vLLM), and the like."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
        return False
    if says_context_exceeded(exc.status_code, exc.body):
        return False  # too long, whatever tools its words name
    text = _error_excerpt(exc.body, limit=500).lower()
    return "tool" in text or "function" in text


def _shutdown(sock: socket.socket) -> None:
    # OSError: already closed, by the other side or by the pool.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _MalformedReply(ValueError):
    """A reply that does not have the chat-completions shape; chat() reports it as ModelError."""


def _optional_str(value: object, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        # JSON may carry lone surrogates ("\udcff"); nothing downstream could store or send them.
        return encodable(value)
    raise _MalformedReply(f"{what} is {type(value).__name__}, not text")


def _arguments_text(value: object) -> str | None:
    # Arguments are JSON text in the protocol; a few servers send the object itself.
    if isinstance(value, dict | list):
        return json.dumps(value)
    return _optional_str(value, "tool call arguments")


def _optional_index(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _MalformedReply(f"tool call index {value!r}")


def _first_choice(choices: object, what: str) -> Any | None:
    if choices is None:
        return None
    if not isinstance(choices, list):
        raise _MalformedReply(f"'choices' in the {what} is not a list")
    return choices[0] if choices else None


def _error_excerpt(body: object, limit: int = 300) -> str:
    text: str
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(body.get("message"), str):
            text = body["message"]
        else:
            text = json.dumps(body)
    elif isinstance(body, bytes):
        text = body.decode("utf-8", "replace")
    elif body is None:
        text = "(no body)"
    else:
        text = str(body)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _encodable(value: Any) -> Any:
    """Messages as UTF-8 can carry them: a lone surrogate anywhere (a file name that is not
    UTF-8, from a tool that did not escape it) is escaped, or the whole request would fail to
    encode — and a person would be told the server failed."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {key: _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


_HUNG_UP = "the model server closed the connection in the middle of its reply"


def _said_anything(message: AssistantMessage) -> bool:
    return bool(message.content.strip() or message.tool_calls)


def _connection_broke(exc: BaseException) -> bool:
    """A connection error that is not a timeout: refused, reset, or closed by the other side."""
    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
        return False
    return isinstance(exc, openai.APIConnectionError | httpx2.TransportError)


def _root_cause(exc: BaseException) -> str:
    """The innermost cause's message ('[Errno 111] Connection refused'), else the SDK's."""
    cause: BaseException = exc
    seen: set[int] = set()
    while cause.__cause__ is not None and id(cause.__cause__) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__
    return str(cause) or str(exc) or type(cause).__name__


class OpenAIChatModel:
    """A ChatModel speaking OpenAI chat completions to `base_url`.

    With `model=None` the constructor asks the server which models it has (GET /models) and
    takes the first; that request may raise ModelUnavailable or ModelError. `on_delta`, when
    set, receives each piece of reply text as it streams in (the whole text at once when not
    streaming); it runs on the calling thread and its exceptions propagate.

    `timeout_s` is the deadline for one whole call (`llm.timeout_s`): connecting, waiting and
    streaming together, by the wall clock.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        stream: bool = True,
        max_retries: int = 0,
        *,
        on_delta: Callable[[str], None] | None = None,
        native_tools: bool | None = None,
        context_tokens: int | None = None,
        reply_tokens: int = 1024,
        temperature: float | None = None,
    ) -> None:
        self._temperature = temperature
        self._context_tokens = context_tokens
        self._reply_tokens = reply_tokens
        self._base_url = base_url.rstrip("/")
        self._loopback = is_loopback_url(self._base_url)
        self._native_tools = native_tools
        self._prompted = PromptedTools(self._chat_plain_text)
        self._timeout_s = timeout_s
        self._stream = stream
        self.on_delta = on_delta
        # The deadline of the call in progress on each thread, for the response hook.
        self._calls = threading.local()
        # No proxies for a server on this machine: a proxy would see (and might log) everything.
        # Every connection this client opens, so that Stop can cut a request whose response
        # has not begun (a server still loading its model sends no headers for a while).
        self._connections: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        http_client = openai.DefaultHttpx2Client(
            trust_env=not self._loopback,
            event_hooks={"request": [self._on_request], "response": [self._on_response]},
            # A fresh connection per call, so that the call's deadline holds its socket from
            # the start: a pooled connection would be reused without a word, and a server
            # trickling its headers on it could hold the call past any deadline. It costs a
            # connect per call (a TLS handshake for a remote server), small beside a completion.
            limits=httpx2.Limits(max_connections=100, max_keepalive_connections=0),
        )
        try:
            self._client = openai.OpenAI(
                base_url=self._base_url,
                api_key=api_key or NO_API_KEY,
                timeout=timeout_s,
                max_retries=max_retries,
                http_client=http_client,
            )
        except (openai.OpenAIError, httpx2.InvalidURL, ValueError) as exc:
            http_client.close()
            raise ModelError(f"Cannot use {self._base_url} as a model endpoint: {exc}") from exc
        try:
            self._model = model if model else self._pick_model()
        except ModelError:
            self._client.close()
            raise

    @classmethod
    def from_settings(
        cls,
        base_url: str,
        settings: LLMSettings,
        *,
        on_delta: Callable[[str], None] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> OpenAIChatModel:
        """A client configured from `llm` settings; the API key is read from the environment
        variable `settings.api_key_env` names (never from OPENAI_API_KEY)."""
        env = os.environ if environ is None else environ
        return cls(
            base_url,
            model=settings.model,
            api_key=env.get(settings.api_key_env) or None,
            timeout_s=settings.timeout_s,
            stream=settings.stream,
            on_delta=on_delta,
            native_tools=settings.native_tools,
            context_tokens=settings.context_tokens,
            reply_tokens=settings.reply_tokens,
            temperature=settings.temperature,
        )

    # -- ChatModel -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def is_loopback(self) -> bool:
        return self._loopback

    @property
    def is_embedded(self) -> bool:
        return False

    @property
    def context_tokens(self) -> int | None:
        """The model's context in tokens, when known (configured or told by the server)."""
        return self._context_tokens

    @context_tokens.setter
    def context_tokens(self, tokens: int | None) -> None:
        self._context_tokens = tokens

    @property
    def native_tools(self) -> bool | None:
        """Whether the server takes tools in the request: True, False, or None (not yet known:
        the first request with tools finds out)."""
        return self._native_tools

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> AssistantMessage:
        messages = _encodable(messages)
        # The tool schemas count against the context too (estimated tokens).
        schemas = estimate_tokens(json.dumps(tools)) if tools else 0
        context = self._context_tokens
        try:
            return self._chat_fitted(messages, tools, schemas, context)
        except _TooLong as refused:
            sent = schemas + sum(message_tokens(m, estimate_tokens) for m in refused.sent)
        # The server's real window is smaller than the one assumed (or configured): fitted once
        # more to a share of what was sent, and that context kept for the session's later
        # requests; a second refusal is said as it is.
        smaller = max(int((sent + self._reply_tokens) * RETRY_SHARE), 512)
        if context is not None:
            smaller = min(smaller, context)
        log.info("%s refused %d tokens as too long; fitting to %d", self._base_url, sent, smaller)
        self._context_tokens = smaller
        try:
            return self._chat_fitted(messages, tools, schemas, smaller)
        except _TooLong as again:
            raise ModelError(
                f"The model at {self._base_url} could not take this request: it is longer than "
                f"the model's context, even with older parts of the conversation left out to fit "
                f"about {smaller} tokens ({_error_excerpt(again.body)}). Set "
                "llm.context_tokens in the settings to the context its server really has, or "
                "go on in a new conversation"
            ) from again

    def _chat_fitted(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        schemas: int,
        context: int | None,
    ) -> AssistantMessage:
        """`messages` cut to `context` (None: sent whole), then asked. A refusal as too long
        raises _TooLong carrying what was sent."""
        cuts: list[str] = []
        if context is not None:
            fitted = fit(messages, context - schemas, self._reply_tokens)
            if fitted.over:
                raise ModelError(
                    f"This request does not fit the model's context ({context} tokens, "
                    "llm.context_tokens) even after cutting tool results and the message."
                )
            messages, cuts = fitted.messages, fitted.cuts
        try:
            answer = self._chat_with_tools(messages, tools)
        except _TooLong as refused:
            refused.sent = messages
            raise
        return replace(answer, context_cuts=tuple(cuts)) if cuts else answer

    def _chat_with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> AssistantMessage:
        if self._native_tools is False and (tools or _carries_tool_turns(messages)):
            # Earlier turns' calls and results go in the prompt protocol's words too when this
            # turn shows no tools: this server was never sent them natively.
            return self._prompted.chat(messages, tools)
        try:
            answer = self._chat_once(messages, tools)
        except _ToolsRefused as refused:
            # This server (or this model on it) takes no tools: from now on they are described
            # in the prompt and the reply parsed strictly (broker.llm.tool_protocol).
            log.info(
                "%s takes no native tool calls (%s); using the prompt protocol",
                self._base_url,
                refused,
            )
            self._native_tools = False
            return self._prompted.chat(messages, tools)
        if tools:
            self._native_tools = True
        return answer

    def _chat_plain_text(self, messages: list[dict[str, Any]]) -> AssistantMessage:
        """A completion with no tools, for the prompt protocol."""
        return self._chat_once(messages, None)

    def _chat_once(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> AssistantMessage:
        # The person's Stop cuts the connection as the deadline would, and is told apart.
        with self._deadline() as deadline, stop_hook(lambda: self._stop_call(deadline)):
            try:
                if self._stream:
                    message = self._chat_streaming(messages, tools, deadline)
                else:
                    message = self._chat_plain(messages, tools, deadline)
            except ModelError as exc:
                if deadline.stopped:
                    raise Stopped() from exc
                if deadline.expired:
                    raise self._timed_out() from exc
                raise
            except (openai.OpenAIError, httpx2.HTTPError, httpx2.StreamError, ValueError) as exc:
                if deadline.stopped:
                    raise Stopped() from exc
                if deadline.expired:
                    raise self._timed_out() from exc
                if tools and self._native_tools is None and _refuses_tools(exc):
                    raise _ToolsRefused(_error_excerpt(getattr(exc, "body", None))) from exc
                raise self._translate(exc, deadline) from exc
            if deadline.stopped:
                raise Stopped()
            if deadline.expired:
                # The cut connection ended the stream as if the server had closed it.
                raise self._timed_out()
            return message

    def chat_json(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], schema_name: str
    ) -> str:
        formats: list[dict[str, Any] | None] = [
            {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            },
            {"type": "json_object"},
            None,
        ]
        with self._deadline() as deadline:
            try:
                return self._chat_json(_encodable(messages), formats, deadline)
            except ModelError as exc:
                if deadline.expired:
                    raise self._timed_out() from exc
                raise

    def _chat_json(
        self,
        messages: list[dict[str, Any]],
        formats: list[dict[str, Any] | None],
        deadline: _Deadline,
    ) -> str:
        # One deadline for all the formats tried: they are one call to the caller.
        for attempt, response_format in enumerate(formats):
            try:
                response = self._client.chat.completions.create(
                    model=self._model,
                    messages=cast(Any, messages),
                    response_format=cast(Any, response_format)
                    if response_format is not None
                    else openai.omit,
                    stream=False,
                    timeout=deadline.remaining(),
                )
            except openai.APIStatusError as exc:
                last = attempt == len(formats) - 1
                if (
                    last
                    or not 400 <= exc.status_code < 500
                    or (exc.status_code in _NO_FALLBACK_STATUSES)
                ):
                    raise self._translate(exc, deadline) from exc
                kind = response_format["type"] if response_format else "plain"
                log.info(
                    "%s rejected response_format %s (HTTP %d: %s); trying a simpler one",
                    self._base_url,
                    kind,
                    exc.status_code,
                    _error_excerpt(exc.body),
                )
                continue
            except (openai.OpenAIError, httpx2.HTTPError, httpx2.StreamError, ValueError) as exc:
                raise self._translate(exc, deadline) from exc
            try:
                return self._collect_plain(response).content
            except ValueError as exc:
                raise self._translate(exc, deadline) from exc
        raise AssertionError("unreachable: the last format either returns or raises")

    # -- the client's own API --------------------------------------------------------------------

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _deadline(self) -> Iterator[_Deadline]:
        deadline = _Deadline(self._timeout_s)
        outer = getattr(self._calls, "deadline", None)
        self._calls.deadline = deadline
        try:
            yield deadline
        finally:
            deadline.finish()
            self._calls.deadline = outer

    def _stop_call(self, deadline: _Deadline) -> None:
        """Stop: cut the call's response; before one has begun, cut this client's connections
        (one turn uses a model at a time, so they are this call's; the pool drops them)."""
        if not deadline.stop():
            for sock in list(self._connections):
                _shutdown(sock)

    def _on_request(self, request: httpx2.Request) -> None:
        # Called before the request is sent: note the connection if a new one is opened.
        request.extensions["trace"] = self._trace

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        # Called on the calling thread, so the deadline in progress there is this request's.
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                self._connections.add(sock)
                deadline = getattr(self._calls, "deadline", None)
                if deadline is not None:
                    deadline.watch_socket(sock)

    def _on_response(self, response: httpx2.Response) -> None:
        # Called by the HTTP client once the headers are in, before the body is read.
        deadline = getattr(self._calls, "deadline", None)
        if deadline is not None:
            deadline.watch(response)

    def _pick_model(self) -> str:
        with self._deadline() as deadline:
            try:
                page = self._client.models.list(timeout=deadline.remaining())
                data = getattr(page, "data", None)
            except (openai.OpenAIError, httpx2.HTTPError, httpx2.StreamError, ValueError) as exc:
                if deadline.expired:
                    raise self._timed_out() from exc
                raise self._translate(exc, deadline) from exc
            except (AttributeError, TypeError) as exc:
                # The SDK's page parser assumes a JSON object; a web page here trips it up.
                raise self._translate(_MalformedReply(f"not a model list ({exc})")) from exc
        ids = [
            item_id
            for item in (data if isinstance(data, list) else [])
            if isinstance(item_id := getattr(item, "id", None), str) and item_id
        ]
        if not ids:
            raise ModelError(
                f"The model server at {self._base_url} lists no models; load or pull one "
                "(e.g. `ollama pull llama3.2`)",
                remedy=Remedy.NAME_MODEL,
            )
        log.info(
            "using model %s from %s (the first of %d listed)", ids[0], self._base_url, len(ids)
        )
        return ids[0]

    def _chat_plain(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        deadline: _Deadline,
    ) -> AssistantMessage:
        response = self._client.chat.completions.create(
            model=self._model,
            messages=cast(Any, messages),
            tools=cast(Any, tools) if tools else openai.omit,
            stream=False,
            temperature=self._temperature if self._temperature is not None else openai.omit,
            timeout=deadline.remaining(),
        )
        message = self._collect_plain(response)
        sink = self._delta_sink()
        if sink is not None and message.content:
            sink(message.content)
        return message

    def _delta_sink(self) -> Callable[[str], None] | None:
        """Where reply text goes as it arrives: this client's own `on_delta`, and the turn's."""
        own, turn = self.on_delta, delta_sink()
        if own is None or turn is None:
            return own or turn

        def both(text: str) -> None:
            own(text)
            turn(text)

        return both

    def _collect_plain(self, response: object) -> AssistantMessage:
        if isinstance(response, str | bytes):
            raise _MalformedReply(f"not a chat completion: {_error_excerpt(response)}")
        choice = _first_choice(getattr(response, "choices", None), "reply")
        if choice is None:
            raise _MalformedReply("a reply with no choices")
        acc = _Accumulator()
        acc.finish_reason = _optional_str(getattr(choice, "finish_reason", None), "finish_reason")
        message = getattr(choice, "message", None)
        if message is None:
            raise _MalformedReply("a choice with no message")
        acc.add_content(_optional_str(getattr(message, "content", None), "content") or "")
        calls = getattr(message, "tool_calls", None)
        if calls is not None and not isinstance(calls, list):
            raise _MalformedReply("'tool_calls' is not a list")
        for index, call in enumerate(calls or []):
            function = getattr(call, "function", None)
            acc.add_call_delta(
                index,
                _optional_str(getattr(call, "id", None), "tool call id"),
                _optional_str(getattr(function, "name", None), "tool call name"),
                _arguments_text(getattr(function, "arguments", None)),
            )
        return acc.message()

    def _chat_streaming(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        deadline: _Deadline,
    ) -> AssistantMessage:
        acc = _Accumulator(self._delta_sink())
        stream = self._client.chat.completions.create(
            model=self._model,
            messages=cast(Any, messages),
            tools=cast(Any, tools) if tools else openai.omit,
            stream=True,
            temperature=self._temperature if self._temperature is not None else openai.omit,
            timeout=deadline.remaining(),
        )
        received = 0
        with stream:
            content_type = stream.response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                # Some servers ignore stream=true and answer with one JSON completion.
                return self._collect_plain(self._json_completion(stream.response, content_type))
            try:
                for chunk in stream:
                    received += 1
                    self._add_chunk(acc, chunk)
                    if acc.content_truncated:
                        break  # closing the stream tells the server to stop generating
            except (openai.APIConnectionError, httpx2.TransportError) as exc:
                partial = acc.message()
                if deadline.expired or not _connection_broke(exc) or not _said_anything(partial):
                    raise  # described by _chat_once (a timeout, or a reply with nothing in it)
                # What arrived is kept, marked cut, with the reason: nothing the person already
                # saw streaming in is taken back.
                log.warning("the model server %s hung up mid-reply: %s", self._base_url, exc)
                return replace(partial, cut=True, cut_reason=_HUNG_UP)
        if deadline.expired:
            raise self._timed_out()
        if not received:
            raise _MalformedReply("an event stream with no chat.completion chunks")
        message = acc.message()
        if message.finish_reason is None:
            # The stream ended without a finish_reason: the server stopped (or was stopped)
            # mid-reply, and what arrived must not pass for the whole answer.
            log.warning("the model's reply from %s ended without its finish marker", self._base_url)
            return replace(message, cut=True)
        return message

    def _json_completion(self, response: httpx2.Response, content_type: str) -> ChatCompletion:
        try:
            payload = json.loads(response.read())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _MalformedReply(
                f"a {content_type or 'untyped'} answer that is neither an event stream nor JSON"
            ) from exc
        if not isinstance(payload, dict):
            raise _MalformedReply(f"not a chat completion: {_error_excerpt(payload)}")
        # construct() builds the nested models without validating, like the SDK does itself.
        return ChatCompletion.construct(**payload)

    def _add_chunk(self, acc: _Accumulator, chunk: object) -> None:
        choice = _first_choice(getattr(chunk, "choices", None), "stream chunk")
        if choice is None:
            return  # e.g. the trailing usage chunk
        finish_reason = _optional_str(getattr(choice, "finish_reason", None), "finish_reason")
        if finish_reason:
            acc.finish_reason = finish_reason
        delta = getattr(choice, "delta", None)
        if delta is None:
            return
        acc.add_content(_optional_str(getattr(delta, "content", None), "content") or "")
        calls = getattr(delta, "tool_calls", None)
        if calls is None:
            return
        if not isinstance(calls, list):
            raise _MalformedReply("'tool_calls' in a stream chunk is not a list")
        for call in calls:
            function = getattr(call, "function", None)
            acc.add_call_delta(
                _optional_index(getattr(call, "index", None)),
                _optional_str(getattr(call, "id", None), "tool call id"),
                _optional_str(getattr(function, "name", None), "tool call name"),
                _arguments_text(getattr(function, "arguments", None)),
            )

    def _translate(self, exc: Exception, deadline: _Deadline | None = None) -> ModelError:
        """The user-facing error for an SDK, transport or payload failure; `deadline` tells how
        far the call got (a server that dropped the connection did answer the connect)."""
        url = self._base_url
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            return self._timed_out()
        if deadline is not None and deadline.connected and _connection_broke(exc):
            # Something listens there; it hung up. "Start a server" would be wrong advice.
            when = (
                "in the middle of its reply"
                if deadline.responded
                else "after taking the request, without answering"
            )
            return ModelError(
                f"The model server at {url} closed the connection {when} "
                f"({_root_cause(exc)}); try again, and if it happens again, look at the "
                "server's own log (it may have crashed or run out of memory)"
            )
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(
                f"No model answers at {url}: {_root_cause(exc)}.", remedy=Remedy.START_MODEL
            )
        if isinstance(exc, httpx2.TransportError):
            # Raised by httpx itself, outside the SDK's wrapping: the answer was cut off.
            return ModelError(f"The connection to the model at {url} broke: {exc}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if says_context_exceeded(status, exc.body):
                return _TooLong(
                    f"The model server at {url} answered that the request is longer than the "
                    f"model's context: {_error_excerpt(exc.body)}",
                    body=exc.body,
                )
            hint = ""
            if status in (401, 403):
                hint = " (check the API key for this endpoint)"
            elif status == 404:
                hint = (
                    f" (check the model name {self._model_or_unknown()!r} and that the URL is "
                    "the API base, usually ending in /v1)"
                )
            elif status == 429:
                hint = " (rate limited; wait and try again)"
            return ModelError(
                f"The model server at {url} answered HTTP {status}{hint}: "
                f"{_error_excerpt(exc.body)}"
            )
        if isinstance(exc, openai.APIResponseValidationError):
            return ModelError(f"The model server at {url} sent a malformed reply: {exc.message}")
        if isinstance(exc, ValueError | httpx2.HTTPError | httpx2.StreamError):
            # ValueError: JSON that does not parse, or a reply without the completion's shape.
            return ModelError(f"The model server at {url} sent a malformed reply: {exc}")
        return ModelError(f"The model server at {url} failed: {exc}")

    def _timed_out(self) -> ModelError:
        return ModelError(
            f"The model at {self._base_url} did not answer within {self._timeout_s:g} s, the "
            "limit for one model call; it may be overloaded or still loading. Try again, or "
            "raise llm.timeout_s in the settings"
        )

    def _model_or_unknown(self) -> str:
        return getattr(self, "_model", None) or "(none chosen)"

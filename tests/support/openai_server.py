"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol from a script.

Tests use it instead of mocking the `openai` SDK: the client under test makes real requests,
streams real server-sent events and meets real connection errors. The server runs in a daemon
thread of the test process, so a CLI subprocess can connect to `server.base_url` too.

A script is a list of turns, consumed one per POST /v1/chat/completions:

- ``"text"`` or ``Text("text")``: an assistant reply;
- ``ToolCalls([("name", {"arg": 1}), ("other", '{"broken')])``: tool calls; a dict is sent as
  JSON, a string is sent as-is (to simulate broken arguments);
- ``Raw(500, "body")`` / ``Raw.error(400, "message")``: any status and body;
- ``Stall(seconds, then)``: wait (woken early by stop()) before answering with `then`;
- ``Trickle(then, interval)``: answer with `then` one byte every `interval` seconds (with
  ``whole=True`` the status line and headers too, as a server that is barely alive does);
- ``KeepAlive(seconds, then)``: SSE keep-alive comments (leading spaces when not streaming) for
  `seconds`, then `then`;
- ``Cut(then)``: stream `then` but close the connection before its finish chunk and [DONE];
  ``Cut(then, at_byte=n)``: promise the whole answer (Content-Length), streamed or not, and
  close the connection after its first `n` bytes, in the middle of the body;
- a callable ``(request_json) -> turn`` for dynamic behaviour.

When the script runs out the last turn repeats (a looping model), unless `repeat_last=False`,
in which case the server answers 500. `Text` and `ToolCalls` are also the replies of the
in-process `ScriptedModel` (tests/support/scripted_model.py), for tests that need no wire.
It never makes an outbound connection and never binds anything but 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

from tests.support.served import ServedInThread


@dataclass(frozen=True)
class Text:
    """An assistant text reply."""

    content: str
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ToolCalls:
    """Tool calls: (name, arguments); arguments as a dict (sent as JSON) or a raw string."""

    calls: Sequence[tuple[str, dict[str, Any] | str]]
    content: str = ""
    finish_reason: str = "tool_calls"


@dataclass(frozen=True)
class Raw:
    """A verbatim HTTP answer, streamed or not: errors, garbage, hand-made SSE."""

    status: int = 200
    body: str | bytes = ""
    content_type: str = "application/json"

    @classmethod
    def error(cls, status: int, message: str, error_type: str = "invalid_request_error") -> Raw:
        """An error in the shape OpenAI-compatible servers use."""
        body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
        return cls(status=status, body=json.dumps(body))


@dataclass(frozen=True)
class Stall:
    """Wait `seconds` (or until the server stops) before answering with `then`."""

    seconds: float
    then: Turn = field(default_factory=lambda: Text(""))


@dataclass(frozen=True)
class Trickle:
    """Answer with `then`, streamed or not, one byte every `interval` seconds (until stopped).

    By default the status line and headers go out at once and only the body trickles; with
    `whole=True` the whole answer does, headers included, so no response exists for a long time.
    """

    then: Text | ToolCalls
    interval: float = 0.2
    whole: bool = False


@dataclass(frozen=True)
class KeepAlive:
    """Send keep-alives every `interval` s for `seconds` (or until stopped), then answer `then`.

    Streaming, they are SSE comment lines (`: keep-alive`), which clients skip; not streaming, the
    headers go out at once and the body starts with one space per keep-alive (valid JSON)."""

    seconds: float
    then: Text | ToolCalls = field(default_factory=lambda: Text("never"))
    interval: float = 0.1


@dataclass(frozen=True)
class Cut:
    """Stream `then` but close the connection before its finish chunk and the [DONE] line.

    With `at_byte`, the headers promise the whole answer (a Content-Length), streamed or not,
    and the connection closes after that many bytes of the body: a reply cut mid-body."""

    then: Text | ToolCalls
    at_byte: int | None = None


Turn: TypeAlias = (
    "str | Text | ToolCalls | Raw | Stall | Trickle | KeepAlive | Cut"
    " | Callable[[dict[str, Any]], Turn]"
)


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any  # parsed JSON for POSTs (None when the body was not JSON), else None
    at: float = 0.0  # time.monotonic() when the request had been read


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed), for connection-refused tests."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def split_evenly(text: str, parts: int) -> list[str]:
    """`text` in up to `parts` consecutive pieces (at least one, possibly empty)."""
    if not text:
        return [""]
    size = max(1, math.ceil(len(text) / max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    scripted: ScriptedOpenAIServer

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup that can stall
        # for seconds on machines with no resolver; a loopback test server has no use for it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    # HTTP/1.0: one request per connection, so a stop never waits on an idle keep-alive socket
    # and a stream simply ends when the connection closes.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        scripted = self.server.scripted
        scripted._record(self, None)
        if self.path.rstrip("/") == "/v1/models" and scripted.models_answer is not None:
            self._send_raw(scripted.models_answer)
        elif self.path.rstrip("/") == "/v1/models":
            created = int(time.time())
            data = [
                {"id": model, "object": "model", "created": created, "owned_by": "scripted"}
                for model in scripted.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, _error_body(f"no route for GET {self.path}"))

    def do_POST(self) -> None:
        scripted = self.server.scripted
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        scripted._record(self, body)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, _error_body(f"no route for POST {self.path}"))
            return
        if not isinstance(body, dict):
            self._send_json(400, _error_body("request body must be a JSON object"))
            return
        response_format = body.get("response_format")
        if (
            isinstance(response_format, dict)
            and response_format.get("type") in scripted.reject_response_formats
        ):
            # A server that does not support this response_format rejects it outright,
            # without consuming a scripted turn.
            self._send_json(
                400, _error_body(f"response_format {response_format.get('type')!r} unsupported")
            )
            return
        try:
            turn = scripted._resolve(scripted._next_turn(), body)
        except Exception as exc:
            # A bug in a test's callable turn: answer 500 and keep it for the test to see.
            scripted.errors.append(exc)
            self._send_json(500, _error_body(f"scripted turn failed: {exc!r}"))
            return
        if isinstance(turn, Raw):
            self._send_raw(turn)
            return
        number = scripted._completion_number()
        model = body.get("model")
        if not isinstance(model, str) or not model:
            model = scripted.models[0] if scripted.models else "scripted-model"
        pacing: Trickle | KeepAlive | None = None
        original = turn
        cut = isinstance(turn, Cut)
        if isinstance(turn, Trickle | KeepAlive | Cut):
            pacing = None if isinstance(turn, Cut) else turn
            turn = turn.then
        if isinstance(original, Cut) and original.at_byte is not None:
            self._cut_inside(turn, number, model, bool(body.get("stream")), original.at_byte)
        elif isinstance(pacing, Trickle) and pacing.whole:
            self._trickle_whole(turn, number, model, bool(body.get("stream")), pacing.interval)
        elif body.get("stream"):
            stream_options = body.get("stream_options")
            include_usage = isinstance(stream_options, dict) and bool(
                stream_options.get("include_usage")
            )
            self._send_stream(
                turn, number, model, scripted.fragments, include_usage, pacing=pacing, cut=cut
            )
        elif pacing is not None:
            self._send_paced(json.dumps(_completion(turn, number, model)).encode(), pacing)
        else:
            self._send_json(200, _completion(turn, number, model))

    def _send_json(self, status: int, payload: Any) -> None:
        self._send_raw(Raw(status=status, body=json.dumps(payload)))

    def _send_raw(self, turn: Raw) -> None:
        data = turn.body.encode("utf-8") if isinstance(turn.body, str) else turn.body
        try:
            self.send_response(turn.status)
            self.send_header("Content-Type", turn.content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. timed out during a Stall)

    def _send_stream(
        self,
        turn: Text | ToolCalls,
        number: int,
        model: str,
        fragments: int,
        usage: bool,
        *,
        pacing: Trickle | KeepAlive | None = None,
        cut: bool = False,
    ) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.flush()
            if isinstance(pacing, KeepAlive) and not self._keep_alive(pacing, b": keep-alive\n\n"):
                return
            chunks = list(_chunks(turn, number, model, fragments, usage))
            if cut:
                # Everything up to the chunk that carries the finish_reason, then hang up.
                chunks = list(itertools.takewhile(lambda c: not _finishes(c), chunks))
            events = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
            if not cut:
                events += b"data: [DONE]\n\n"
            if isinstance(pacing, Trickle):
                self._trickle(events, pacing.interval)
            else:
                self.wfile.write(events)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client stopped reading (e.g. it capped an oversized reply): not our failure.
            pass

    def _cut_inside(
        self, turn: Text | ToolCalls, number: int, model: str, stream: bool, at_byte: int
    ) -> None:
        """Promise the whole answer's length, send its first `at_byte` bytes, hang up."""
        if stream:
            chunks = _chunks(turn, number, model, self.server.scripted.fragments, False)
            body = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
            body += b"data: [DONE]\n\n"
            content_type = "text/event-stream"
        else:
            body = json.dumps(_completion(turn, number, model)).encode()
            content_type = "application/json"
        try:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:at_byte])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _trickle_whole(
        self, turn: Text | ToolCalls, number: int, model: str, stream: bool, interval: float
    ) -> None:
        """The whole HTTP answer, status line and headers included, one byte per interval."""
        if stream:
            chunks = _chunks(turn, number, model, self.server.scripted.fragments, False)
            body = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
            body += b"data: [DONE]\n\n"
            head = "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
        else:
            body = json.dumps(_completion(turn, number, model)).encode()
            head = (
                "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._trickle(head.encode() + body, interval)

    def _send_paced(self, data: bytes, pacing: Trickle | KeepAlive) -> None:
        """A JSON answer whose body trickles in, or is preceded by keep-alive spaces."""
        stopping = self.server.scripted.stopping
        padding = 0
        if isinstance(pacing, KeepAlive):
            padding = max(1, math.ceil(pacing.seconds / pacing.interval))
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(padding + len(data)))
            self.end_headers()
            self.wfile.flush()
            if isinstance(pacing, KeepAlive):
                for _ in range(padding):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    if stopping.wait(pacing.interval):
                        return
                self.wfile.write(data)
                self.wfile.flush()
            else:
                self._trickle(data, pacing.interval)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _keep_alive(self, pacing: KeepAlive, line: bytes) -> bool:
        """Send `line` every interval for the keep-alive's seconds; False when stopped early."""
        stopping = self.server.scripted.stopping
        until = time.monotonic() + pacing.seconds
        while time.monotonic() < until:
            self.wfile.write(line)
            self.wfile.flush()
            if stopping.wait(pacing.interval):
                return False
        return True

    def _trickle(self, data: bytes, interval: float) -> None:
        stopping = self.server.scripted.stopping
        for position in range(len(data)):
            self.wfile.write(data[position : position + 1])
            self.wfile.flush()
            if stopping.wait(interval):
                return


def _finishes(chunk: dict[str, Any]) -> bool:
    choices = chunk.get("choices") or []
    return any(choice.get("finish_reason") for choice in choices)


def _error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def _call_id(number: int, index: int) -> str:
    return f"call_{number}_{index}"


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _usage(turn: Text | ToolCalls) -> dict[str, int]:
    completion = len(turn.content.split()) + sum(
        len(_arguments_text(args)) // 4 for _, args in getattr(turn, "calls", ())
    )
    return {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}


def _completion(turn: Text | ToolCalls, number: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.content or None}
    if isinstance(turn, ToolCalls):
        message["tool_calls"] = [
            {
                "id": _call_id(number, index),
                "type": "function",
                "function": {"name": name, "arguments": _arguments_text(arguments)},
            }
            for index, (name, arguments) in enumerate(turn.calls)
        ]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": turn.finish_reason}],
        "usage": _usage(turn),
    }


def _chunks(
    turn: Text | ToolCalls, number: int, model: str, fragments: int, usage: bool
) -> Iterator[dict[str, Any]]:
    """The chat.completion.chunk objects a real server would stream for `turn`."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if turn.content:
        for piece in split_evenly(turn.content, fragments):
            yield chunk({"content": piece})
    if isinstance(turn, ToolCalls):
        for index, (name, arguments) in enumerate(turn.calls):
            pieces = split_evenly(_arguments_text(arguments), fragments)
            # Like real servers: id, type and name only in the first fragment of each call.
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": _call_id(number, index),
                            "type": "function",
                            "function": {"name": name, "arguments": pieces[0]},
                        }
                    ]
                }
            )
            for piece in pieces[1:]:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, turn.finish_reason)
    if usage:
        final = chunk({})
        final["choices"] = []
        final["usage"] = _usage(turn)
        yield final


class ScriptedOpenAIServer(ServedInThread):
    """An OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script.

    `requests` holds every chat-completions request body, in order; `hits` every request.
    """

    def __init__(
        self,
        script: Sequence[Turn] = (),
        *,
        model: str = "scripted-model",
        models: Sequence[str] | None = None,
        repeat_last: bool = True,
        fragments: int = 4,
        reject_response_formats: Sequence[str] = (),
        models_answer: Raw | None = None,
    ) -> None:
        super().__init__()
        self.script: list[Turn] = list(script)
        self.models: list[str] = [model] if models is None else list(models)
        self.repeat_last = repeat_last
        # How many pieces streamed text and each tool call's arguments are cut into.
        self.fragments = fragments
        # response_format types answered with 400, as servers without that feature do.
        self.reject_response_formats = frozenset(reject_response_formats)
        # Replaces the model list answer, to play a server that is not (quite) OpenAI-compatible.
        self.models_answer = models_answer
        self.hits: list[Hit] = []
        # Exceptions raised by callable turns (the server answered 500 for each).
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._position = 0
        self._numbers = itertools.count(1)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAIServer:
        if self.running:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.scripted = self
        self._serve(httpd, f"scripted-openai-{httpd.server_address[1]}")
        return self

    # -- what tests look at --------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Scheme, host and port, no path: http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL: http://127.0.0.1:PORT/v1"""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat-completions request body received, in order."""
        with self._lock:
            return [
                hit.body
                for hit in self.hits
                if hit.method == "POST"
                and hit.path.rstrip("/") == "/v1/chat/completions"
                and isinstance(hit.body, dict)
            ]

    @property
    def turns_used(self) -> int:
        """How many scripted turns have been consumed (repeats of the last one included)."""
        with self._lock:
            return self._position

    def add(self, *turns: Turn) -> None:
        """Append turns to the script while the server runs."""
        with self._lock:
            self.script.extend(turns)

    # -- used by the handler ---------------------------------------------------------------------

    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        headers = {name.lower(): value for name, value in handler.headers.items()}
        hit = Hit(handler.command, handler.path, headers, body, time.monotonic())
        with self._lock:
            self.hits.append(hit)

    def _completion_number(self) -> int:
        with self._lock:
            return next(self._numbers)

    def _next_turn(self) -> Turn:
        with self._lock:
            position = self._position
            self._position += 1
            if position < len(self.script):
                return self.script[position]
            if self.script and self.repeat_last:
                return self.script[-1]
        return Raw.error(500, "the scripted server's script is exhausted", "server_error")

    def _resolve(
        self, turn: Turn, body: dict[str, Any]
    ) -> Text | ToolCalls | Raw | Trickle | KeepAlive | Cut:
        for _ in range(16):  # callables may return callables; a cycle is a test bug
            if isinstance(turn, str):
                return Text(turn)
            if isinstance(turn, Text | ToolCalls | Raw | Trickle | KeepAlive | Cut):
                return turn
            if isinstance(turn, Stall):
                self.stopping.wait(turn.seconds)
                turn = turn.then
                continue
            turn = turn(body)
        raise RuntimeError("scripted turn callables nested too deeply")


# What the `scripted_server` fixture yields: build and start a server from a script and options.
ServerFactory: TypeAlias = Callable[..., ScriptedOpenAIServer]

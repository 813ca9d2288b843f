"""The stdio transport to an MCP server, with limits: a server is a program of someone else's.

Like the SDK's own stdio client (newline-delimited JSON-RPC over the program's stdin and stdout),
but it bounds what the server may send: one message may be at most `max_message_bytes`, and at
most `max_messages_per_s` messages may arrive in a second. A server over either limit has
*flooded*: it is stopped and the session sees the connection end, with the reason in
`StdioLink.problem`. The server runs in its own process group (all of it is ended on close),
started as tools/mcp/sandbox.py's `Launch` says: in its sandbox, whose PID namespace ends it and
all it starts with Chamberlain even when Chamberlain is killed (or, where its settings turn the
sandbox off, contained by tools/mcp/lifetime.py in its lifetime only), with a small environment
(never Chamberlain's own API keys), and its stderr is kept only as a short tail for error
messages.
"""

from __future__ import annotations

import collections
import logging
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    import httpx2

    from tools.mcp.sandbox import Launch

log = logging.getLogger("chamberlain.tools.mcp.transport")

# What a server process inherits from our environment; its settings add the rest.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
STDERR_TAIL_BYTES = 4096
STOP_GRACE_S = 2.0


@dataclass
class StdioLink:
    """What the transport knows of the server process, for status and error messages."""

    pid: int | None = None
    exit_code: int | None = None
    # Why the transport ended the connection itself (a flood), else None.
    problem: str | None = None
    stderr_tail: collections.deque[bytes] = field(
        default_factory=lambda: collections.deque(maxlen=64)
    )
    closed: anyio.Event = field(default_factory=anyio.Event)

    def last_words(self) -> str:
        """The last line the server wrote to stderr, for an error message ('' if none)."""
        text = b"".join(self.stderr_tail)[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""


def server_environment(extra: dict[str, str]) -> dict[str, str]:
    """What an unsandboxed server's program gets (`"sandbox": false`): a few variables it needs
    to start, and its settings' `env`. A value written `${env:NAME}` is taken from Chamberlain's
    own environment when the program starts (so a token need not be written into
    settings.json); unset, it is empty. A sandboxed server's is tools/mcp/sandbox.py's."""
    from tools.mcp.sandbox import settings_env

    env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
    env.update(settings_env(extra))
    return env


@asynccontextmanager
async def capped_stdio(
    launch: Launch,
    link: StdioLink,
    *,
    max_message_bytes: int,
    max_messages_per_s: int = 2000,
) -> AsyncIterator[tuple[object, object]]:
    """Start the server as `launch` says (tools/mcp/sandbox.py: in its sandbox) and yield the
    (read, write) streams a `ClientSession` takes."""
    network = launch.network
    try:
        process = await anyio.open_process(
            list(launch.argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=launch.env,
            cwd=launch.cwd,
            start_new_session=True,
            pass_fds=network.pass_fds if network is not None else (),
        )
    except BaseException:
        if network is not None:
            network.close()
        raise
    link.pid = process.pid
    if network is not None:
        # The program waits in its sandbox until its network is attached (tools/netns.py).
        try:
            await anyio.to_thread.run_sync(network.attach)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                await anyio.to_thread.run_sync(network.close)
            raise
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](16)

    async def flooded(why: str) -> None:
        link.problem = why
        log.warning("MCP server (pid %s) %s; stopping it", process.pid, why)
        _signal_group(process, signal.SIGKILL)

    async def read_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        window_start, in_window = time.monotonic(), 0
        try:
            async with read_in:
                while True:
                    try:
                        chunk = await process.stdout.receive(65536)
                    except (
                        anyio.EndOfStream,
                        anyio.ClosedResourceError,
                        anyio.BrokenResourceError,
                    ):
                        return
                    buffer += chunk
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        if not line.strip():
                            continue
                        now = time.monotonic()
                        if now - window_start >= 1.0:
                            window_start, in_window = now, 0
                        in_window += 1
                        if in_window > max_messages_per_s:
                            await flooded(f"sent more than {max_messages_per_s} messages a second")
                            return
                        await read_in.send(_parse(line))
                    if len(buffer) > max_message_bytes:
                        await flooded(f"sent a message over {max_message_bytes} bytes")
                        return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        finally:
            link.closed.set()

    async def read_stderr() -> None:
        assert process.stderr is not None
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            while True:
                link.stderr_tail.append(await process.stderr.receive(4096))

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_out:
                async for message in write_out:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_in.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(read_stdout)
        group.start_soon(read_stderr)
        group.start_soon(write_stdin)
        try:
            yield read_out, write_in
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                if network is not None:
                    await anyio.to_thread.run_sync(network.close)
                link.exit_code = process.returncode
                for stream in (read_out, write_in):
                    await stream.aclose()
            group.cancel_scope.cancel()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _signal_group(process: anyio.abc.Process, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin and give the server a moment to leave; then end its whole process group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            _signal_group(process, sig)
        with anyio.move_on_after(STOP_GRACE_S):
            while process.returncode is None:  # noqa: ASYNC110 - wait() also waits for EOF
                await anyio.sleep(0.02)
        if process.returncode is not None:
            break
    # Whatever the leader left behind in its group goes too.
    _signal_group(process, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
    # asyncio closes a subprocess transport only when it is collected, which may be after the
    # hub's loop is gone ("Event loop is closed"); close it now, while the loop runs.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError, RuntimeError):
            close()


class ResponseTooLarge(Exception):
    """A loopback MCP server answered with more than Chamberlain reads in one response."""


def capped_http_client(max_response_bytes: int) -> httpx2.AsyncClient:
    """An HTTP client for streamable HTTP with the SDK's timeouts whose every response body
    that is not an event stream (the SDK caps each event of those itself) is cut off, with
    ResponseTooLarge, after `max_response_bytes`: a server that floods is cut off."""
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    class Capped(httpx2.AsyncByteStream):
        def __init__(self, inner: httpx2.AsyncByteStream) -> None:
            self.inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self.inner:
                seen += len(chunk)
                if seen > max_response_bytes:
                    raise ResponseTooLarge(
                        f"sent a response over {max_response_bytes} bytes, so it was cut off"
                    )
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    class CappedTransport(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            response = await super().handle_async_request(request)
            kind = response.headers.get("content-type", "")
            if not kind.startswith("text/event-stream"):
                response.stream = Capped(response.stream)  # type: ignore[arg-type]
            return response

    return httpx2.AsyncClient(
        transport=CappedTransport(),
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        # Loopback only: no proxy from the environment may carry the calls elsewhere.
        trust_env=False,
    )

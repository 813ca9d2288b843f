"""The connections to the user's MCP servers, and their tools in the registry.

One background thread runs an asyncio loop; each server has a task there that connects (a
program over stdio, or a loopback URL over streamable HTTP), lists the tools, registers them in
the `ToolRegistry` under the server's group, lists them again when the server says they changed,
and disconnects when told to or when the hub closes. Nothing here runs on the UI thread, and
nothing here decides who may call a tool: the registered tools are run by `broker/runner.py`
only, after the policy gate and a permission token.

A tool call arrives on the runner's tool thread (`call`), is handed to the loop and waited for,
bounded by the server's `timeout_s`; the person's Stop cancels it. A server that stops
mid-call, refuses, floods or hangs makes that call fail with a plain reason and the server's
status say what happened; it is connected again on the next turn that could use it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from tools.manual import Prepared, Tool, ToolError, ToolManual, ToolResult, ToolTimedOut
from tools.mcp.arguments import call_plan, checked_arguments, refuse_startup_places
from tools.mcp.classify import (
    SchemaRejected,
    audited_arguments,
    checked_schema,
    classify,
    clean_text,
    local_name,
)
from tools.mcp.config import McpServerConfig
from tools.mcp.failures import (
    FailureBook,
    FailureKind,
    McpLeftOut,
    RememberedFailure,
    backoff_s,
    one_line,
    settings_digest,
)
from tools.mcp.sandbox import (
    Launch,
    ScratchHomes,
    ServerPlaces,
    ServerRoots,
    server_launch,
    server_roots,
)
from tools.mcp.transport import (
    STOP_GRACE_S,
    ResponseTooLarge,
    StdioLink,
    capped_http_client,
    capped_stdio,
)
from tools.registry import ToolRegistry
from tools.stop import Stopped, current_stop

log = logging.getLogger("chamberlain.tools.mcp")

State = Literal["disabled", "idle", "connecting", "connected", "failed"]
# A server's listing is read up to this many tools (and pages): the rest are not offered.
MAX_TOOLS = 256
MAX_PAGES = 20
# A message from a server may be this much larger than its output cap (JSON, other fields).
MESSAGE_SLACK = 256 * 1024
CLIENT_NAME = "chamberlain"


def group_of(server: str) -> str:
    return f"mcp:{server}"


@dataclass(frozen=True)
class ServerStatus:
    """One server as Settings and `chamberlain mcp list` show it."""

    name: str
    state: State
    transport: str
    tools: tuple[str, ...] = ()
    # Tools the server lists that are not offered, each with why ("name: reason").
    skipped: tuple[str, ...] = ()
    last_error: str | None = None
    server_info: str | None = None
    # For a failed connection: what kind of failure, when (seconds since the epoch), from when
    # the server is tried again by itself, and whether it was not even tried in this process
    # because an earlier one (another `chamberlain ask`) recorded the failure.
    failure_kind: FailureKind | None = None
    failed_at: float | None = None
    retry_at: float | None = None
    remembered: bool = False
    # What the server's program may reach (tools/mcp/sandbox.py), in words; None before it
    # was started, and for a server over HTTP (not started by Chamberlain).
    sandbox: str | None = None
    sandboxed: bool = False

    def summary(self) -> str:
        if self.state == "connected":
            text = f"connected, {len(self.tools)} tool" + ("" if len(self.tools) == 1 else "s")
        elif self.state == "failed":
            text = f"failed: {self.last_error or 'unknown error'}"
        else:
            text = self.state
        return text


@dataclass
class _Link:
    name: str
    config: McpServerConfig
    state: State = "idle"
    last_error: str | None = None
    server_info: str | None = None
    session: Any = None
    stdio: StdioLink | None = None
    # local name → the server's own name for the tool
    remote_of: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # Set when an attempt to connect has ended, either way.
    settled: threading.Event = field(default_factory=threading.Event)
    stop: asyncio.Event | None = None
    task: asyncio.Future[None] | None = None
    last_attempt: float = 0.0
    # Connections that failed in a row (0 once one succeeds).
    failures: int = 0
    relist: asyncio.Task[None] | None = None
    # The last failed connection: its kind, when (wall clock), when to try again (wall clock),
    # and whether it was taken from the failure file rather than seen by this process.
    failure_kind: FailureKind | None = None
    failed_at: float | None = None
    retry_at: float | None = None
    remembered: bool = False
    # How its program was last started (its sandbox), for the status.
    launch: Launch | None = None

    @property
    def digest(self) -> str:
        return settings_digest(self.config)


class McpHub:
    """Every configured server's connection. Thread-safe; the loop runs on its own thread."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        registry: ToolRegistry,
        *,
        on_change: Callable[[], None] | None = None,
        failures: FailureBook | None = None,
        places: ServerPlaces | None = None,
    ) -> None:
        self.registry = registry
        # Where servers' sandboxes stand (the person's home, Chamberlain's own folders, each
        # server's own home); without them, the person's home and a temporary folder.
        self.places = places if places is not None else ServerPlaces(home=Path.home())
        self._homes = ScratchHomes(self.places)
        self.on_change = on_change
        # Failed connections shared with other processes (None: this process's memory only).
        self.failures = failures
        # The wall clock failures are stamped with (the file's, so that tests can move it).
        self.now: Callable[[], float] = failures.now if failures is not None else time.time
        self._lock = threading.RLock()
        self._links: dict[str, _Link] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        for name, config in servers.items():
            link = _Link(name, config, state="idle" if config.enabled else "disabled")
            if not config.enabled:
                link.settled.set()
            self._links[name] = link

    # ---- the loop thread ------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("the MCP hub is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()
                    loop.close()

                self._thread = threading.Thread(target=serve, name="mcp-hub", daemon=True)
                self._thread.start()
                ready.wait(5)
                self._loop = loop
            return self._loop

    @property
    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._links)

    def apply(self, servers: Mapping[str, McpServerConfig], *, connect: bool = False) -> None:
        """Take these servers from now on: one whose settings did not change keeps its
        connection; a changed or removed one is disconnected (its tools leave); a new or
        changed one is connected now when `connect`, else on the first turn that needs it."""
        with self._lock:
            current = dict(self._links)
        for name, link in current.items():
            if servers.get(name) != link.config:
                self.disconnect(name)
                with self._lock:
                    self._links.pop(name, None)
        fresh: list[str] = []
        for name, config in servers.items():
            with self._lock:
                if name in self._links:
                    continue
                link = _Link(name, config, state="idle" if config.enabled else "disabled")
                if not config.enabled:
                    link.settled.set()
                self._links[name] = link
            fresh.append(name)
        self._changed()
        if connect and fresh:
            self.start(fresh)

    def has_servers(self) -> bool:
        return any(link.config.enabled for link in self._links.values())

    # ---- connecting -----------------------------------------------------------------------

    def start(self, names: list[str] | None = None, *, force: bool = False) -> None:
        """Begin connecting the enabled servers (or `names`) that are not connected or
        connecting; a failed one (here, or in another process that recorded it) only once its
        back-off is over, unless `force`."""
        loop = self._ensure_loop()
        now = time.monotonic()
        for name in names if names is not None else self.names:
            link = self._links.get(name)
            if link is None or not link.config.enabled:
                continue
            with self._lock:
                if link.state in ("connecting", "connected"):
                    continue
                wait = backoff_s(link.failures)
                if link.state == "failed" and not force and now - link.last_attempt < wait:
                    continue
            record = self._recorded(link) if not force else None
            with self._lock:
                if link.state in ("connecting", "connected"):
                    continue
                if record is not None and self.now() < record.retry_at:
                    self._skip(link, record)
                    continue
                link.state, link.last_attempt = "connecting", now
                link.settled.clear()
                link.stop = asyncio.Event()
            link.task = asyncio.run_coroutine_threadsafe(self._run(link), loop)  # type: ignore[assignment]

    def _recorded(self, link: _Link) -> RememberedFailure | None:
        """What another process (or this one) recorded of this server's last failed connection
        with its present settings; its count carries on, so the waits keep growing."""
        if self.failures is None:
            return None
        record = self.failures.recorded(link.name, link.digest)
        if record is not None:
            link.failures = max(link.failures, record.failures)
        return record

    def _skip(self, link: _Link, record: RememberedFailure) -> None:
        """Not tried now: an earlier failure, recorded in the file, says to wait."""
        changed = link.state != "failed" or link.failed_at != record.at
        link.state, link.last_error = "failed", record.detail or "it failed to connect"
        link.failure_kind, link.failed_at, link.retry_at = record.kind, record.at, record.retry_at
        link.remembered = True
        link.settled.set()
        if changed:
            self._changed()

    def left_out(self, since: float) -> list[McpLeftOut]:
        """Every enabled server that is not connected, and why, as a turn's notice; `since` is
        when the turn began waiting for them (a failure before it is an earlier one)."""
        out: list[McpLeftOut] = []
        for name in self.names:
            link = self._links.get(name)
            if link is None or not link.config.enabled or link.state == "connected":
                continue
            timeout = link.config.connect_timeout_s
            if link.state == "failed":
                kind: FailureKind = link.failure_kind or "failed"
                detail = link.last_error or "it failed to connect"
            else:  # still connecting when the turn stopped waiting
                kind, detail = "timeout", f"it did not answer within {timeout:g} s"
            earlier = link.failed_at is not None and link.failed_at < since
            out.append(
                McpLeftOut(
                    server=name,
                    kind=kind,
                    detail=one_line(detail),
                    connect_timeout_s=timeout,
                    failed_at=link.failed_at,
                    earlier=earlier or link.remembered,
                    retry_at=link.retry_at,
                )
            )
        return out

    def ensure(self, timeout_s: float | None = None, names: list[str] | None = None) -> None:
        """Connect what is not connected, and wait (up to each server's connect timeout and the
        time a failed one takes to be stopped, or `timeout_s`) until every attempt has ended."""
        if not self.has_servers():
            return
        self.start(names)
        longest = max(link.config.connect_timeout_s for link in self._links.values())
        deadline = time.monotonic() + (
            timeout_s if timeout_s is not None else longest + 2 * STOP_GRACE_S + 1
        )
        stop = current_stop()
        for name in names if names is not None else self.names:
            link = self._links.get(name)
            while link is not None and not link.settled.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                link.settled.wait(min(left, 0.1))
                if stop is not None and stop.stopped:
                    raise Stopped()

    def test(self, name: str) -> ServerStatus:
        """Connect `name` now (again, if it was connected) and report."""
        link = self._links.get(name)
        if link is None:
            raise KeyError(name)
        if link.state == "connected":
            self.disconnect(name)
        self.start([name], force=True)
        link.settled.wait(link.config.connect_timeout_s + 1)
        return self._status(link)

    def disconnect(self, name: str, timeout_s: float = 10.0) -> None:
        link = self._links.get(name)
        if link is None or link.task is None or self._loop is None:
            return
        loop, stop, task = self._loop, link.stop, link.task
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        try:
            task.result(timeout_s)  # type: ignore[call-arg]
        except concurrent.futures.TimeoutError:
            # Cancelled, the task still leaves through its cleanup, which ends the program.
            task.cancel()
            link.settled.wait(2 * STOP_GRACE_S + 1)
        except concurrent.futures.CancelledError:
            link.settled.wait(2 * STOP_GRACE_S + 1)
        except Exception:  # noqa: BLE001 - the task recorded its own error
            pass

    def close(self, timeout_s: float = 10.0) -> None:
        """Disconnect every server (their programs are ended) and stop the loop thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for name in self.names:
            self.disconnect(name, timeout_s)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._homes.close()

    def status(self) -> list[ServerStatus]:
        """Every server's status, sorted by name."""
        return [self._status(self._links[n]) for n in self.names]

    def server_status(self, name: str) -> ServerStatus:
        return self._status(self._links[name])

    def _status(self, link: _Link) -> ServerStatus:
        return ServerStatus(
            name=link.name,
            state=link.state,
            transport=link.config.describe(),
            tools=tuple(sorted(link.remote_of)),
            skipped=tuple(link.skipped),
            last_error=link.last_error,
            server_info=link.server_info,
            failure_kind=link.failure_kind if link.state == "failed" else None,
            failed_at=link.failed_at if link.state == "failed" else None,
            retry_at=link.retry_at if link.state == "failed" else None,
            remembered=link.remembered and link.state == "failed",
            sandbox=link.launch.words if link.launch is not None else None,
            sandboxed=link.launch is not None and link.launch.plan is not None,
        )

    async def _run(self, link: _Link) -> None:
        from mcp.client.session import ClientSession

        assert link.stop is not None
        config = link.config
        max_bytes = config.output_cap + MESSAGE_SLACK
        connected = False
        try:
            async with AsyncExitStack() as stack:
                if config.command is not None:
                    link.stdio = StdioLink()
                    # Finding the program, its roots and (the first time) probing bubblewrap
                    # touch the disk: off the loop.
                    launch = await anyio.to_thread.run_sync(
                        lambda: server_launch(link.name, config, self.places, self._homes)
                    )
                    link.launch = launch
                    streams = await stack.enter_async_context(
                        capped_stdio(launch, link.stdio, max_message_bytes=max_bytes)
                    )
                else:
                    from mcp.client.streamable_http import streamable_http_client

                    link.stdio = None
                    client = await stack.enter_async_context(capped_http_client(max_bytes))
                    streams = await stack.enter_async_context(
                        streamable_http_client(
                            str(config.url), http_client=client, max_sse_event_size=max_bytes
                        )
                    )
                read, write = streams

                async def on_message(message: object) -> None:
                    self._on_message(link, message)

                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=on_message)  # type: ignore[arg-type]
                )
                await self._handshake(link, session)
                link.state, link.last_error, link.failures = "connected", None, 0
                link.failure_kind = link.failed_at = link.retry_at = None
                link.remembered = False
                connected = True
                self._forget_failure(link)
                link.settled.set()
                self._changed()
                await self._wait_for_end(link)
                link.session = None
            # The transport has ended the program by now, so its exit code is known.
            if link.stop.is_set():
                link.state = "idle"
            else:
                link.state, link.last_error = "failed", self._why_ended(link, None)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            link.state = "failed" if not (link.stop and link.stop.is_set()) else "idle"
            if link.state == "failed":
                link.last_error = self._why_ended(link, exc)
                log.info("MCP server %s: %s", link.name, link.last_error)
                if not connected:
                    # The connection itself failed: wait longer next time, in every process.
                    link.failures += 1
                    self._remember_failure(link, self._kind_of(link, exc))
        finally:
            link.session = None
            self._unregister(link)
            link.settled.set()
            self._changed()

    def _remember_failure(self, link: _Link, kind: FailureKind) -> None:
        link.failure_kind, link.failed_at, link.remembered = kind, self.now(), False
        link.retry_at = link.failed_at + backoff_s(link.failures)
        if self.failures is None:
            return
        try:
            record = self.failures.remember(
                link.name, link.digest, kind, link.last_error or "", link.failures
            )
        except (OSError, ValueError) as exc:  # only a cache: this process still backs off
            log.warning("recording the MCP server %s's failure failed: %s", link.name, exc)
            return
        link.failed_at, link.retry_at = record.at, record.retry_at

    def _forget_failure(self, link: _Link) -> None:
        if self.failures is None:
            return
        try:
            self.failures.forget(link.name)
        except (OSError, ValueError) as exc:  # only a cache
            log.warning("clearing the MCP server %s's failure failed: %s", link.name, exc)

    def _kind_of(self, link: _Link, exc: BaseException | None) -> FailureKind:
        """What kind of failure ended a connection, for the front ends' words."""
        telling = _telling(exc)
        stdio = link.stdio
        if (stdio is not None and stdio.problem) or isinstance(telling, ResponseTooLarge):
            return "flooded"
        if isinstance(telling, TimeoutError):
            return "timeout"
        if isinstance(telling, FileNotFoundError | PermissionError):
            return "not_started"
        if isinstance(telling, OSError):
            return "unreachable"
        if stdio is not None and (stdio.closed.is_set() or stdio.exit_code is not None):
            return "stopped"
        return "failed"

    async def _handshake(self, link: _Link, session: Any) -> None:
        """Initialise and list the tools, within the connect timeout; a disconnect asked for
        meanwhile ends it at once (the transport then stops the program)."""

        async def connect() -> None:
            result = await session.initialize()
            info = result.server_info
            link.server_info = f"{info.name} {info.version}".strip() if info else None
            link.session = session
            await self._list(link)

        assert link.stop is not None
        work = asyncio.ensure_future(connect())
        # However this ends (the transport failing cancels us), the handshake's own error is
        # taken here, never left for asyncio to report as "never retrieved".
        work.add_done_callback(lambda task: task.cancelled() or task.exception())
        stopped = asyncio.ensure_future(link.stop.wait())
        try:
            done, _ = await asyncio.wait(
                {work, stopped},
                timeout=link.config.connect_timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            stopped.cancel()
            if not work.done():
                work.cancel()
        if work in done:
            work.result()  # its own error, if it failed
            return
        work.cancel()
        with suppress(BaseException):
            await work
        if link.stop.is_set():
            raise _Disconnected()
        raise TimeoutError()

    async def _wait_for_end(self, link: _Link) -> None:
        assert link.stop is not None
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(link.stop.wait())]
        if link.stdio is not None:
            waits.append(asyncio.ensure_future(link.stdio.closed.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def _why_ended(self, link: _Link, exc: BaseException | None) -> str:
        exc = _telling(exc)
        stdio = link.stdio
        if stdio is not None and stdio.problem:
            return f"the server {stdio.problem}, so it was stopped"
        if isinstance(exc, TimeoutError):
            return f"it did not answer within {link.config.connect_timeout_s:g} s"
        if isinstance(exc, ResponseTooLarge):
            return f"the server {exc}"
        if isinstance(exc, FileNotFoundError | PermissionError):
            return str(exc)
        if isinstance(exc, OSError):
            return f"it could not be started or reached: {exc.strerror or exc}"
        parts: list[str] = []
        if stdio is not None and (stdio.closed.is_set() or exc is not None):
            code = stdio.exit_code
            parts.append(
                "the server stopped" + (f" (exit code {code})" if code is not None else "")
            )
            words = stdio.last_words()
            if words:
                parts.append(f"it said: {words}")
            hint = _offline_hint(link, stdio)
            if hint:
                parts.append(hint)
        if exc is not None and not parts:
            parts.append(_exception_words(exc))
        return "; ".join(parts) or "the connection ended"

    # ---- tools ----------------------------------------------------------------------------

    def _on_message(self, link: _Link, message: object) -> None:
        import mcp_types as types

        listing_changed = isinstance(message, types.ToolListChangedNotification)
        if listing_changed and (link.relist is None or link.relist.done()):
            link.relist = asyncio.ensure_future(self._relist(link))

    async def _relist(self, link: _Link) -> None:
        await asyncio.sleep(0.05)  # a burst of notices is one listing
        try:
            with anyio.fail_after(link.config.connect_timeout_s):
                await self._list(link)
        except Exception as exc:  # noqa: BLE001 - the old tools stay until the next listing
            link.last_error = f"listing its tools again failed: {_exception_words(exc)}"
        self._changed()

    async def _list(self, link: _Link) -> None:
        session = link.session
        listed: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            if cursor is None:
                page = await session.list_tools()
            else:
                import mcp_types as types

                page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None or len(listed) >= MAX_TOOLS:
                break
        tools, skipped = self._tools_of(link, listed)
        refused = self.registry.replace_group(group_of(link.name), tools)
        skipped += [f"{name}: {why}" for name, why in refused.items()]
        link.remote_of = {
            t.name: t.manual.extra_remote
            for t in tools
            if isinstance(t.manual, McpToolManual) and t.name not in refused
        }
        link.skipped = skipped

    def _tools_of(self, link: _Link, listed: list[Any]) -> tuple[list[Tool], list[str]]:
        tools: list[Tool] = []
        skipped: list[str] = []
        seen: set[str] = set()
        for index, remote in enumerate(listed):
            remote_name = str(getattr(remote, "name", ""))[:128]
            if index >= MAX_TOOLS:
                skipped.append(f"{remote_name}: past the first {MAX_TOOLS} tools")
                continue
            offered, why = link.config.offers(remote_name)
            if not offered:
                skipped.append(f"{remote_name}: {why}")
                continue
            name = local_name(link.name, remote_name)
            if name is None:
                skipped.append(f"{remote_name}: its name cannot be made into a tool name")
                continue
            if name in seen:
                skipped.append(f"{remote_name}: another of its tools has the same name, {name}")
                continue
            try:
                schema = checked_schema(remote.input_schema)
            except SchemaRejected as exc:
                skipped.append(f"{remote_name}: {exc}")
                continue
            seen.add(name)
            tools.append(self._tool(link, remote_name, name, schema, remote))
        return tools, skipped

    def _tool(
        self, link: _Link, remote_name: str, name: str, schema: dict[str, Any], remote: Any
    ) -> Tool:
        config = link.config
        kind = classify(remote_name, getattr(remote, "annotations", None), config)
        said = clean_text(getattr(remote, "description", None))
        manual = McpToolManual(
            name=name,
            description=f"(MCP server '{link.name}', tool {remote_name}) {said}".strip(),
            parameters=schema,
            capability=kind.capability,
            category=kind.category,
            risk=kind.risk,
            mutating=kind.mutating,
            reversibility=kind.reversibility,
            source="mcp",
            server=link.name,
            # The runner's backstop; the hub ends the call itself at `timeout_s`.
            timeout_s=config.timeout_s + 2.0,
            output_cap=config.output_cap,
            extra_remote=remote_name,
            why=kind.why,
        )
        server, target = link.name, f"mcp:{name}"
        roots = server_roots(config, self.places) if config.command is not None else ServerRoots()
        # What a relative path in a call is taken against: the server's folders and its cwd.
        bases = tuple(p for p in (*roots.roots, roots.cwd) if p is not None and p.is_dir())
        private = self.places.private()

        def prepare(args: Any) -> Prepared:
            arguments = dict(args)
            files = checked_arguments(
                name, arguments, private=private, home=self.places.home, bases=bases
            )
            # Every call, not only a "writing" one: its class comes from a name the server chose.
            refuse_startup_places(
                name, arguments, home=self.places.home, bases=bases, app_dirs=self.places.app_dirs
            )
            plan = call_plan(server, remote_name, arguments, files)
            return Prepared(arguments, (target,), kind.reversibility, call_plan=plan)

        def run_prepared(prepared: Prepared) -> ToolResult:
            return self.call(server, remote_name, dict(prepared.arguments))

        return Tool(
            manual=manual,
            # A caller past the runner is checked all the same.
            run=lambda args: run_prepared(prepare(args)),
            targets=lambda args: list(prepare(args).targets),
            audited_arguments=audited_arguments,
            user_scopes_of=lambda words: [target] if names_server(words.text, server) else [],
            prepare_of=prepare,
            run_prepared=run_prepared,
        )

    def _unregister(self, link: _Link) -> None:
        self.registry.replace_group(group_of(link.name), [])
        link.remote_of = {}

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:
                log.exception("MCP status listener failed")

    # ---- calls ----------------------------------------------------------------------------

    def call(self, server: str, remote: str, arguments: dict[str, Any]) -> ToolResult:
        """Run `remote` on `server` with `arguments` (already validated and authorised by the
        runner) and wait for its result, at most the server's `timeout_s`."""
        link = self._links.get(server)
        if link is None or link.session is None or self._loop is None:
            why = link.last_error if link is not None and link.last_error else "not connected"
            raise ToolError(f"the MCP server '{server}' is not available: {why}")
        config = link.config
        future = asyncio.run_coroutine_threadsafe(self._call(link, remote, arguments), self._loop)
        stop = current_stop()
        unregister = stop.on_stop(future.cancel) if stop is not None else None
        try:
            result = future.result(config.timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolTimedOut(
                f"the MCP server '{server}' did not answer {remote} within {config.timeout_s:g} s"
            ) from None
        except concurrent.futures.CancelledError:
            raise ToolError(f"the call to {remote} on '{server}' was cancelled") from None
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - the server's failure, in words
            raise ToolError(self._call_failed(link, remote, exc)) from None
        finally:
            if unregister is not None:
                unregister()
        try:
            return _result_of(server, remote, result, config.output_cap)
        except ToolError as exc:
            raise ToolError(str(exc) + _read_only_hint(link, str(exc))) from None

    async def _call(self, link: _Link, remote: str, arguments: dict[str, Any]) -> Any:
        session = link.session
        if session is None:
            raise ToolError(f"the MCP server '{link.name}' disconnected")
        return await session.call_tool(remote, arguments)

    def _call_failed(self, link: _Link, remote: str, exc: BaseException) -> str:
        stdio = link.stdio
        ended = stdio is not None and (stdio.closed.is_set() or stdio.problem is not None)
        if ended or link.session is None:
            time.sleep(0.05)  # let the transport record the exit code and the last words
            return f"the MCP server '{link.name}' stopped during {remote}: " + self._why_ended(
                link, exc
            )
        return f"the MCP server '{link.name}' could not run {remote}: {_exception_words(exc)}"


# Programs that fetch a server's package before running it (and so need the network once).
_FETCHERS = frozenset({"npx", "npm", "pnpm", "bunx", "uvx", "uv", "pipx"})
_OFFLINE_WORDS = ("enotcached", "offline", "eai_again", "network is unreachable")


def _offline_hint(link: _Link, stdio: StdioLink) -> str:
    """Why a server that npx (uvx, …) had to fetch stopped at once, when its sandbox is why."""
    launch, command = link.launch, link.config.command or ""
    if launch is None or launch.plan is None or launch.plan.network:
        return ""
    if command.rsplit("/", 1)[-1] not in _FETCHERS:
        return ""
    said = b"".join(stdio.stderr_tail).decode("utf-8", "replace").lower()
    if not any(word in said for word in _OFFLINE_WORDS):
        return ""
    return (
        f"its sandbox has no network, so {command.rsplit('/', 1)[-1]} could not fetch the "
        "server's package: install the package and name its program in the entry's command, "
        'or give the entry "network": true'
    )


def _read_only_hint(link: _Link, said: str) -> str:
    """Why a write failed, when the server's own sandbox is why: its folders are read-only."""
    launch = link.launch
    if launch is None or launch.plan is None or launch.plan.write:
        return ""
    lowered = said.lower()
    if "read-only file system" not in lowered and "erofs" not in lowered:
        return ""
    return ' (its sandbox shows it its folders read-only: its settings do not say "write": true)'


class _Disconnected(Exception):
    """Asked to disconnect while still connecting."""


class McpToolManual(ToolManual):
    """A ToolManual that also remembers the server's own name for the tool and why it was
    classified as it was (for `chamberlain mcp tools` and Settings)."""

    extra_remote: str
    why: str


def names_server(text: str, server: str) -> bool:
    """Whether the user's message names the server ("list my notes" names `notes`; a server
    `work_notes` is named by "work notes" or "work_notes"): a call to one of its tools is then
    the user's own request, asked about as such, and `--approve mcp_read=once` answers it."""
    if len(server) < 3:
        return False  # "a" or "my" would be named by nearly every sentence
    spoken = server.replace("_", " ")
    pattern = rf"(?<![a-z0-9_])(?:{re.escape(server)}|{re.escape(spoken)})(?![a-z0-9_])"
    return re.search(pattern, text.lower()) is not None


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _telling(exc: BaseException | None) -> BaseException | None:
    """The exception that says most, out of a task group's bundle: a timeout, then a program
    that could not be started, then anything else."""
    if exc is None:
        return None
    leaves = _leaves(exc)
    for kind in (ResponseTooLarge, TimeoutError, OSError):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return leaves[0] if leaves else exc


def _exception_words(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _exception_words(exc.exceptions[0])
    return clean_text(str(message), 300)


def _result_of(server: str, remote: str, result: Any, cap: int) -> ToolResult:
    """A CallToolResult as a ToolResult: the text parts joined, other parts named, at most
    `cap` characters; a result marked as an error is a ToolError with the server's words."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind == "resource":
            inner = block.resource
            text = getattr(inner, "text", None)
            parts.append(
                str(text) if text is not None else f"[binary resource {inner.uri} not shown]"
            )
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'name', '')} at {block.uri}]")
        else:
            mime = getattr(block, "mime_type", "") or ""
            parts.append(f"[{kind or 'unknown'} content {mime} not shown]".replace("  ", " "))
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        raise ToolError(f"the MCP server '{server}' says {remote} failed: {clean_text(text, 500)}")
    truncated = len(text) > cap
    if truncated:
        text = text[:cap] + f"… [cut at {cap} characters]"
    data = {"server": server, "tool": remote, "content": text, "truncated": truncated}
    return ToolResult(data=data, text=text, truncated=truncated)

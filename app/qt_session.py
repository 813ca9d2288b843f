"""The desktop app's one long-lived Session, driven from the UI thread without ever blocking it.

`QtSession` is a QObject that lives on the UI thread. Turns run on a worker thread of their
own (one at a time); everything else that blocks — opening memory (key derivation), database
writes from the windows, revoking grants — runs on a second, single "io" thread, so a window can
still revoke a grant or list memory while a turn is running. Every step of a turn arrives as a
`broker.events` event through the `turn_event` signal, queued onto the UI thread.

This module adds no policy, no routing and no storage: it calls the broker and relays what the
broker reports. It must never call `QDialog.exec()` or start a nested event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, Signal

from broker.events import (
    PermissionAnswered,
    PermissionAsked,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from broker.types import TurnResult
from tools.stop import StopSignal

if TYPE_CHECKING:
    from broker.conversation import Conversation
    from broker.session import Session
    from tools.mcp.config import McpSettings

log = logging.getLogger("chamberlain.app.qt_session")

T = TypeVar("T")

# What the tray icon shows.
IDLE, THINKING, TOOL, ASKING, PAUSED = "idle", "thinking", "tool", "asking", "paused"


class Busy(Exception):
    """A turn is already running; the person must wait for it or stop it."""


class Paused(Exception):
    """The assistant is paused from the tray; nothing runs until it is resumed."""


class QtSession(QObject):
    """A broker `Session` wrapped for Qt: its turns and blocking work on threads of their own,
    everything it reports as signals on the UI thread, for the windows and the tray."""

    # A broker.events.TurnEvent, on the UI thread, in the order the turn produced them.
    turn_event = Signal(object)
    # (state, detail): idle | thinking | tool (detail: the capability) | asking | paused.
    state_changed = Signal(str, str)
    # Grants were added, used up or revoked: the Permissions window refreshes.
    grants_changed = Signal()
    # An MCP server connected, failed, stopped or listed new tools (emitted from the MCP hub's
    # own thread; queued onto the UI thread like every signal here).
    mcp_changed = Signal()
    # Memory was written (a fact approved, edited, rejected, forgotten; an anchor; a turn's own
    # remembering and recall): every window showing facts reads it again. The argument is the
    # window whose action it was (it has reloaded already), or None (a turn).
    memory_changed = Signal(object)

    def __init__(
        self, session: Session | Callable[[], Session], parent: QObject | None = None
    ) -> None:
        """`session`, or what builds it: then `await start()` builds it on the io thread, so
        the tray is up before the broker's imports and files are read."""
        super().__init__(parent)
        self._session: Session | None = None
        self._make_session: Callable[[], Session] | None = None
        self._starting: asyncio.Future[Session] | None = None
        if callable(session) and not hasattr(session, "ask"):
            self._make_session = session
        else:
            self._session = session  # type: ignore[assignment]
        self._turns = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chamberlain-turn")
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chamberlain-io")
        # Connecting and testing MCP servers can take a server's whole connect timeout: never on
        # the io thread, where it would hold up memory and grants.
        self._mcp = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chamberlain-mcp")
        self._stop: StopSignal | None = None
        self._paused = False
        self._state = (IDLE, "")
        self._closed = False
        # Queued onto the UI thread whatever thread emits: the worker only ever emits.
        self.turn_event.connect(self._track_state)

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("the session is not started yet (await QtSession.start())")
        return self._session

    @property
    def started(self) -> bool:
        return self._session is not None

    async def start(self) -> Session:
        """Build the session on the io thread, once, however many callers wait for it."""
        if self._session is not None:
            return self._session
        if self._starting is None:
            assert self._make_session is not None
            self._starting = asyncio.ensure_future(self.run_io(self._make_session))
        session = await asyncio.shield(self._starting)
        self._session = session
        return session

    # -- turns ---------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._stop is not None

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def state(self) -> tuple[str, str]:
        return self._state

    def begin(
        self,
        text: str,
        *,
        temporary: bool = False,
        conversation: Conversation | None = None,
        remember: bool = False,
    ) -> asyncio.Future[TurnResult]:
        """Hand one turn to the turn thread now, within `conversation` when given (the session
        appends the turn to it), and return what will hold its result; its events arrive
        through `turn_event` meanwhile. Raises Paused or Busy at once when it cannot start.

        Called from the UI thread's own handler (the chat's Enter), the turn is on its thread
        before that handler returns: not one loop turn later, behind whatever Qt has queued
        meanwhile (the input's repaint, the message drawn) — that had cost a direct action's
        permission question ~3 ms (`bench/prompt_latency.py`). Before the session is built
        (the first turn after start), the turn waits for it first."""
        if self._paused:
            raise Paused("Chamberlain is paused. Resume it from the tray menu to ask again.")
        if self._stop is not None:
            raise Busy("Chamberlain is still working on the last request. Wait, or press Stop.")
        stop = StopSignal()
        self._stop = stop
        loop = asyncio.get_event_loop()

        def run(session: Session) -> asyncio.Future[TurnResult]:
            session.set_temporary(temporary)
            return loop.run_in_executor(
                self._turns,
                lambda: session.ask(
                    text,
                    events=self.turn_event.emit,
                    stop=stop,
                    conversation=conversation,
                    remember=remember,
                ),
            )

        async def started_first() -> TurnResult:
            return await run(await self.start())

        try:
            turn = (
                run(self._session)
                if self._session is not None
                else loop.create_task(started_first())
            )
        except BaseException:
            self._stop = None  # not handed over (the turn thread closed): nothing is running
            raise
        # Registered before anyone awaits the turn, so it has run when they resume.
        turn.add_done_callback(lambda _: self._turn_over())
        return turn

    async def ask(
        self,
        text: str,
        *,
        temporary: bool = False,
        conversation: Conversation | None = None,
        remember: bool = False,
    ) -> TurnResult:
        """Run one turn on the turn thread (`begin`) and wait for its result."""
        return await self.begin(
            text, temporary=temporary, conversation=conversation, remember=remember
        )

    def _turn_over(self) -> None:
        self._stop = None
        self.grants_changed.emit()
        # The turn may have remembered a fact, and recall counts each use.
        self.memory_changed.emit(None)

    def stop(self) -> bool:
        """Stop the running turn (the Stop button, Esc in the dialog is not this); False when
        nothing was running."""
        stop = self._stop
        if stop is None:
            return False
        stop.stop()
        return True

    def set_paused(self, paused: bool) -> None:
        """Pause: no new turn starts, and a running one is stopped."""
        self._paused = paused
        if paused:
            self.stop()
            self._set_state(PAUSED, "")
        elif not self.busy:
            self._set_state(IDLE, "")

    # -- blocking work off the UI thread ---------------------------------------------------------

    async def run_io(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)` on the io thread (one at a time: the single writer)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._io, lambda: work(*args))

    async def change_memory(self, origin: object, work: Callable[..., T], *args: Any) -> T:
        """Run a memory write `work(*args)` on the io thread, then tell every window showing
        facts (`memory_changed`, with `origin`: the window that asked), whether it succeeded
        or not (a failed write may still have changed something before it stopped)."""
        try:
            return await self.run_io(work, *args)
        finally:
            self.memory_changed.emit(origin)

    async def run_mcp(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)` on a thread for MCP connections (a test, a reconnection)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._mcp, lambda: work(*args))

    # -- MCP servers -------------------------------------------------------------------------------

    def watch_mcp(self) -> None:
        """Have the session's MCP hub report its changes through `mcp_changed`."""
        hub = self.session.mcp
        if hub is not None and hub.on_change is None:
            hub.on_change = self.mcp_changed.emit

    async def start_mcp(self) -> None:
        """Begin connecting the session's MCP servers in the background; how each one fares
        arrives through `mcp_changed`."""
        hub = self.session.mcp
        if hub is None:
            return
        self.watch_mcp()
        await self.run_mcp(hub.start)

    async def use_mcp(self, settings: McpSettings) -> None:
        """Use the MCP servers in `settings` (changed and removed ones are disconnected, the
        others keep their connection) and start connecting new ones, off the UI thread."""
        session = self.session

        def swap() -> None:
            session.use_mcp(settings, connect=True, on_change=self.mcp_changed.emit)

        await self.run_mcp(swap)
        self.mcp_changed.emit()

    async def revoke_all(self) -> int:
        """Revoke every live grant; a running turn's next tool call already needs a new one."""
        revoked = await self.run_io(self.session.permissions.revoke_all, "revoked from the app")
        self.grants_changed.emit()
        return len(revoked)

    async def revoke(self, grant_id: str) -> bool:
        found = await self.run_io(self.session.permissions.revoke, grant_id, "revoked from the app")
        self.grants_changed.emit()
        return found is not None

    def close(self) -> None:
        """Stop any turn, wait for the threads, close the session."""
        if self._closed:
            return
        self._closed = True
        self.stop()
        self._turns.shutdown(wait=True, cancel_futures=True)
        self._io.shutdown(wait=True, cancel_futures=True)
        # A test of a server still connecting ends when the session closes its hub below.
        self._mcp.shutdown(wait=False, cancel_futures=True)
        if self._session is not None:
            self._session.close()

    # -- state for the tray ----------------------------------------------------------------------

    def _track_state(self, event: TurnEvent) -> None:
        if self._paused:
            return
        if isinstance(event, TurnStarted | TextDelta | PermissionAnswered):
            self._set_state(THINKING, "")
        elif isinstance(event, PermissionAsked):
            self._set_state(ASKING, event.capability.value)
        elif isinstance(event, ToolStarted):
            self._set_state(TOOL, event.capability.value)
        elif isinstance(event, ToolFinished):
            self._set_state(THINKING, "")
        elif isinstance(event, TurnEnded):
            self._set_state(IDLE, "")

    def _set_state(self, state: str, detail: str) -> None:
        if (state, detail) != self._state:
            self._state = (state, detail)
            self.state_changed.emit(state, detail)

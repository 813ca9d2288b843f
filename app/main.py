"""The desktop app's one bootstrap: the qasync loop, the tray, the windows, the long-lived session.

`run_app(argv)` builds the QApplication and a qasync event loop over it, routes uncaught
exceptions and Qt's own messages into logging, claims the single instance, and runs `DesktopApp`
until Quit is chosen from the tray menu (closing the last window never quits a tray app).

Start-up order keeps the tray quick: the session (keys, audit, grants) and the tray first;
then, off the UI thread, the model client and memory (with its passphrase dialog where there
is no keyring). Windows are built the first time they are opened.

Nothing here decides anything about permissions, routing or storage: that is the broker's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

from PySide6.QtCore import QObject, Qt, QTimer, QtMsgType, qInstallMessageHandler
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from app import async_dialog
from app.launcher import EXIT_NO_DISPLAY, NO_DISPLAY_ADVICE
from app.memory_words import app_line, waiting_notification
from app.qt_session import QtSession
from app.single_instance import Claim, SingleInstance, lock_path, server_name, take_over
from app.tray import Tray, icon
from broker.events import MemoryNotice, TurnEnded, TurnEvent, TurnStarted

if TYPE_CHECKING:
    from app.passphrase import PassphraseAsker
    from broker.permissions import Prompter
    from broker.session import Session
    from core.errors import ChamberlainError
    from memory.conversations import ConversationStore

log = logging.getLogger("chamberlain.app")

WINDOWS = ("chat", "permissions", "memory", "activity", "settings", "about", "welcome")
# A turn that takes longer than this, finishing while the chat is hidden, is announced.
LONG_TURN_S = 10.0

NO_TRAY_TEXT = (
    "This desktop has no system tray, so Chamberlain runs in its chat window instead: the "
    "window's Chamberlain menu (Alt+C) pauses it, revokes permissions, opens the other windows "
    "and quits. Closing the window hides it; starting Chamberlain again brings it back. If a "
    "tray appears later (a panel that starts after Chamberlain), Chamberlain moves into it. "
    "(On GNOME, the AppIndicator extension adds a tray.)"
)
# How often a trayless app looks for a tray host that has started since (a panel starting after
# the apps at login is the usual order).
TRAY_LOOK_MS = 2000


class DesktopApp(QObject):
    """The running desktop app: wraps one `QtSession` (which wraps the broker's `Session`) and
    holds the tray and the windows that render it."""

    def __init__(
        self,
        home: Path,
        *,
        prompter: Prompter | None = None,
        use_tray: bool | None = None,
        connect_model: bool = True,
    ) -> None:
        super().__init__()
        from app.permission_prompt import GuiPrompter
        from broker.settings import read_settings

        # A broken settings.json does not stop the app: it starts with the broken settings at
        # their defaults and offers to open or reset the file (`start`).
        self.loaded_settings = read_settings(home)
        settings = self.loaded_settings.settings
        self.home = home
        # The timeout and the timed default come with each request (from the broker, which
        # Settings updates), so a change applies to the next question.
        self.prompter: Prompter = prompter or GuiPrompter()
        # The dialogs' prompter, when questions go to dialogs: the tray shows how many wait,
        # and quitting withdraws every open one.
        self.gui_prompter = self.prompter if isinstance(self.prompter, GuiPrompter) else None

        def make_session() -> Session:
            # On the io thread, after the tray is up: the broker's imports (tree-sitter, the
            # tools) and its files (keys, audit, grants) are read here.
            from broker.session import Session

            return Session(
                home=home,
                settings=settings,
                prompter=self.prompter,
                model_problem="Chamberlain is still looking for a model.",
            )

        self.assistant = QtSession(make_session, self)
        self.tray = Tray(self.assistant, self)
        self.windows: dict[str, QWidget] = {}
        self.finished: asyncio.Future[int] = asyncio.get_event_loop().create_future()
        self._history: ConversationStore | None = None
        # The passphrase question the io thread may be waiting on; Quit withdraws it.
        self._passphrase: PassphraseAsker | None = None
        # "This desktop has no system tray…": shown once, closed with the app.
        self._no_tray_box: QMessageBox | None = None
        self._turn_started = 0.0
        # Work started from a signal handler, kept so it is not collected mid-flight.
        self._pending: list[asyncio.Future[Any]] = []
        self._connect_model = connect_model
        self.use_tray = Tray.available() if use_tray is None else use_tray
        # Without a tray: looks for one that starts later (`_look_for_tray`), unless the tray's
        # use was decided by the caller.
        self._tray_look = QTimer(self)
        self._tray_look.setInterval(TRAY_LOOK_MS)
        self._tray_look.timeout.connect(self._look_for_tray)
        self._may_look_for_tray = use_tray is None
        self._tray_looking = False
        # What start-up has finished finding, for the welcome window: memory open (or why
        # not), the model connected (or why not).
        self._memory_found = False
        self._model_found = False
        self._quitting = False
        # The desktop-wide key that opens the chat (taken in `start`, given back on Quit).
        from app.global_shortcut import GlobalShortcut, desktop_kind

        self.chat_shortcut = GlobalShortcut(
            desktop_kind(QGuiApplication.platformName(), os.environ),
            os.environ.get("DISPLAY"),
            self,
        )
        self.chat_shortcut.pressed.connect(self.bring_to_front)
        self.chat_shortcut.changed.connect(self._show_chat_shortcut)

        self.tray.open_chat.connect(lambda: self.show_window("chat"))
        for name in ("permissions", "memory", "activity", "settings", "about", "welcome"):
            getattr(self.tray, f"open_{name}").connect(lambda n=name: self.show_window(n))
        self.tray.revoke_all.connect(self._revoke_all)
        self.tray.quit_requested.connect(self.quit)
        if self.gui_prompter is not None:
            self.gui_prompter.waiting_changed.connect(self.tray.set_waiting)
        self.assistant.turn_event.connect(self._on_turn_event)

    # -- start-up --------------------------------------------------------------------------------

    def start(self) -> None:
        """Show the tray (or, without one, the chat window as soon as the session is up); the
        rest loads afterwards."""
        if self.use_tray:
            self.tray.show()
        else:
            log.info("no system tray here: opening the chat window instead")
            self.show_window("chat")
            self._say_once_no_tray()
            if self._may_look_for_tray:
                self._tray_look.start()
        # After the session (and the chat, without a tray), not before the tray: its module
        # costs the tray's start 15-30 ms.
        self._spawn(self._welcome_on_first_start())
        # Taking the key from the X server takes 15-20 ms of round trips: on the io thread.
        self._spawn(self._take_chat_key())
        if self.loaded_settings.problem is not None:
            self._spawn(self._offer_settings_repair())
        if self.loaded_settings.pending:
            self._spawn(self._offer_settings_review())

    async def _take_chat_key(self) -> None:
        if not self._quitting:  # once Quit has begun, the io thread takes no more work
            key = self.loaded_settings.settings.chat.shortcut
            await self.assistant.run_io(self.chat_shortcut.start, key)

    def _show_chat_shortcut(self) -> None:
        """The tray shows the key beside "Open chat" while it works."""
        working = self.chat_shortcut.problem is None
        self.tray.show_shortcut(self.chat_shortcut.shortcut if working else "")

    async def _offer_settings_review(self) -> None:
        """Changes made outside Chamberlain to settings that widen reach are not used; say so
        and offer Settings, where they are confirmed or discarded (broker.settings_seal)."""
        from app.settings_notice import pending_line
        from app.settings_repair import offer_review

        log.warning("%s", pending_line(self.loaded_settings))
        await self.assistant.start()
        await offer_review(self.loaded_settings, lambda: self.show_window("settings"))

    async def _offer_settings_repair(self) -> None:
        from app.settings_notice import one_line
        from app.settings_repair import offer_repair

        log.warning("%s", one_line(self.loaded_settings))
        # Asked once the session is up: without a tray, the chat window opens then and would
        # cover a question shown before it.
        await self.assistant.start()
        await offer_repair(self.loaded_settings, self.home, self.assistant.run_io)

    async def load(self) -> None:
        """What the first turn needs but the tray does not: the session, its MCP servers (they
        connect in the background), memory, the model."""
        await self.assistant.start()
        # MCP servers connect on their own threads; their status reaches Settings as it changes.
        await self.assistant.start_mcp()
        await self.open_memory()
        self._found(memory=True)
        if self._connect_model:
            await self.connect_model()
        self._found(model=True)
        if self.gui_prompter is not None:
            # Idle now: the first question then shows as fast as later ones.
            self.gui_prompter.prepare()

    async def connect_model(self) -> None:
        from app.errors import FrontEnd, user_message, worded
        from broker.session import connect_model
        from core.errors import ConfigError

        session = self.assistant.session
        try:
            choice = await self.assistant.run_io(
                functools.partial(connect_model, session.settings, home=session.home)
            )
        except ConfigError as exc:
            # An address from the environment or a hand-edited file that is not one: the app
            # starts without a model and says why, so the person can fix it in Settings.
            session.use_model(None, user_message(exc, FrontEnd.APP))
            return
        old = session.model
        problem = worded(choice.problem, choice.remedy, FrontEnd.APP) if choice.problem else None
        session.use_model(choice.model, problem)
        close = getattr(old, "close", None)
        if old is not None and old is not choice.model and callable(close):
            # The embedded model frees its memory; a server client its connections.
            await self.assistant.run_io(close)

    async def open_memory(self) -> None:
        """Open memory once per start; ask for the passphrase in a dialog where needed."""
        from app.errors import FrontEnd, user_message
        from app.passphrase import PassphraseAsker
        from broker.keys import MemoryKeyUnavailable
        from broker.memory_hooks import MEMORY_FILE, open_memory
        from broker.settings import save_settings
        from memory.db import MemoryStoreError

        session = self.assistant.session
        settings = session.settings
        asker = PassphraseAsker(
            asyncio.get_running_loop(), new=not (self.home / MEMORY_FILE).exists()
        )
        self._passphrase = asker

        def opened() -> Any:
            return open_memory(self.home, settings.memory, session.clock, ask_passphrase=asker)

        try:
            store = await self.assistant.run_io(opened)
        except (MemoryKeyUnavailable, MemoryStoreError) as exc:
            if not asker.outcome.encryption_off:
                # With what to do in the app's terms (a passphrase is asked once per start).
                session.memory_problem = user_message(exc, FrontEnd.APP) or str(exc)
                log.info("memory not opened: %s", exc)
                return
            settings.memory.encryption = "off"
            await self.assistant.run_io(save_settings, self.home, settings)
            try:
                store = await self.assistant.run_io(opened)
            except (MemoryKeyUnavailable, MemoryStoreError) as again:
                session.memory_problem = user_message(again, FrontEnd.APP) or str(again)
                return
        session.attach_memory(store)
        await self.assistant.run_io(self._prune_history)

    def history(self) -> ConversationStore | None:
        """The conversation store, when memory is open (conversations share its key)."""
        store = self.assistant.session.memory
        if store is None:
            return None
        if self._history is None:
            from memory.conversations import ConversationStore

            self._history = ConversationStore(store)
        return self._history

    def _prune_history(self) -> None:
        history = self.history()
        if history is not None:
            removed = history.prune(self.assistant.session.settings.chat.retention_days)
            if removed:
                log.info("removed %d conversations past their retention", removed)

    # -- windows ---------------------------------------------------------------------------------

    def window(self, name: str) -> QWidget:
        """The window `name`, built the first time it is asked for."""
        if name not in self.windows:
            self.windows[name] = self._build(name)
        return self.windows[name]

    def _build(self, name: str) -> QWidget:
        widget: QWidget
        if name == "chat":
            from app.chat import ChatWindow

            widget = ChatWindow(self.assistant, self.history)
            if not self.use_tray:
                # The tray's menu, in the window: the only way to Quit, Pause or the windows.
                widget.add_app_menu(self.tray.menu)
        elif name == "permissions":
            from app.windows.permissions import PermissionsWindow

            widget = PermissionsWindow(self.assistant)
        elif name == "memory":
            from app.windows.memory import MemoryWindow

            widget = MemoryWindow(self.assistant)
        elif name == "activity":
            from app.windows.activity import ActivityWindow

            widget = ActivityWindow(self.assistant)
        elif name == "settings":
            from app.windows.settings import SettingsWindow

            widget = SettingsWindow(self.assistant, chat_shortcut=self.chat_shortcut)
        elif name == "about":
            from app.windows.about import AboutWindow

            widget = AboutWindow(self.assistant)
        elif name == "welcome":
            widget = self._build_welcome()
        else:
            raise KeyError(name)
        widget.setWindowIcon(icon("chamberlain"))
        return widget

    async def _welcome_on_first_start(self) -> None:
        """The first start of this home (until the person closes it): Welcome, over the chat."""
        from core.errors import ChamberlainError

        try:
            await self.assistant.start()
        except (ChamberlainError, OSError):
            return  # no session: the start-up box says why (`_main`), once
        from app.windows.welcome import welcomed

        if not welcomed(self.home):
            self.show_window("welcome")

    def _build_welcome(self) -> QWidget:
        from app.windows.welcome import Found, WelcomeWindow

        welcome = WelcomeWindow(self.assistant, from_tray=self.use_tray)
        welcome.example_chosen.connect(self.put_in_chat)
        welcome.settings_requested.connect(lambda: self.show_window("settings"))
        welcome.dismissed.connect(self._welcome_dismissed)
        welcome.set_found(Found(model=self._model_found, memory=self._memory_found))
        return welcome

    def _found(self, *, memory: bool = False, model: bool = False) -> None:
        """Start-up has found memory or the model: the welcome window says which."""
        from app.windows.welcome import Found, WelcomeWindow

        self._memory_found = self._memory_found or memory
        self._model_found = self._model_found or model
        welcome = self.windows.get("welcome")
        if isinstance(welcome, WelcomeWindow):
            welcome.set_found(Found(model=self._model_found, memory=self._memory_found))

    def _welcome_dismissed(self) -> None:
        self._spawn(self._note_welcomed())

    async def _note_welcomed(self) -> None:
        # Closed by the person. Quitting with it open is not closing it, and once Quit has
        # begun (even in the same turn of the loop) the io thread takes no more work.
        if not self._quitting:
            from app.windows.welcome import mark_welcomed

            await self.assistant.run_io(mark_welcomed, self.home)

    def put_in_chat(self, text: str) -> None:
        """Open the chat with `text` in its message box, for the person to send (or edit)."""
        self._spawn(self._put_in_chat(text))

    async def _put_in_chat(self, text: str) -> None:
        from app.chat import ChatWindow

        await self.assistant.start()
        chat = self.show_window("chat")
        assert isinstance(chat, ChatWindow)
        # Through the cursor, not setPlainText: a draft it replaces comes back with Ctrl+Z.
        cursor = chat.input.textCursor()
        cursor.select(cursor.SelectionType.Document)
        cursor.insertText(text)
        chat.input.setTextCursor(cursor)
        chat.input.setFocus()

    def show_window(self, name: str) -> QWidget | None:
        """Show the window `name` (built now if new). Before the session is up, it is shown as
        soon as it is, and None is returned."""
        if not self.assistant.started:
            self._spawn(self._show_when_started(name))
            return None
        widget = self.window(name)
        if widget.isMinimized():
            # show() leaves a minimised window minimised: restore it as it was (maximised
            # stays maximised), then raise and activate it.
            state = widget.windowState() & ~Qt.WindowState.WindowMinimized
            widget.setWindowState(state | Qt.WindowState.WindowActive)
        widget.show()
        widget.raise_()
        widget.activateWindow()
        return widget

    def show_memory(self, fact_id: str) -> None:
        """Open Memory on the fact `fact_id`, on whichever tab it is (a waiting one under
        "Waiting for approval"), selected."""
        self._spawn(self._show_memory(fact_id))

    async def _show_memory(self, fact_id: str) -> None:
        from app.windows.memory import MemoryWindow

        await self.assistant.start()
        widget = self.window("memory")
        assert isinstance(widget, MemoryWindow)
        # Asked before the window shows, so its first reload opens on the fact.
        shown = widget.show_fact(fact_id)
        self.show_window("memory")
        await shown

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` on the loop; a failure is logged (the app stays up)."""
        self._pending = [f for f in self._pending if not f.done()]
        future = asyncio.ensure_future(work)
        future.add_done_callback(_log_failure)
        self._pending.append(future)

    async def _show_when_started(self, name: str) -> None:
        from core.errors import ChamberlainError

        try:
            await self.assistant.start()
        except (ChamberlainError, OSError):
            return  # no session: the start-up box says why (`_main`), once
        self.show_window(name)

    def bring_to_front(self) -> None:
        """A second launch: show the chat."""
        self.show_window("chat")

    def _look_for_tray(self) -> None:
        """Look, off the UI thread, for a tray host that has started since (one look at a time:
        a bus that is slow to answer never piles them up)."""
        if self._quitting or self._tray_looking:
            return
        self._tray_looking = True
        self._spawn(self._look_for_tray_now())

    async def _look_for_tray_now(self) -> None:
        from app.tray import status_notifier_host

        try:
            host = None
            if QGuiApplication.platformName() == "wayland":
                host = await asyncio.to_thread(status_notifier_host)
            if self._quitting or not Tray.available(host):
                return
        finally:
            self._tray_looking = False
        self._use_found_tray()

    def _use_found_tray(self) -> None:
        """A tray host has started since: live in it from now on (the chat keeps its menu)."""
        self._tray_look.stop()
        self.use_tray = True
        log.info("a system tray appeared: showing the tray icon")
        self.tray.show()
        if self._no_tray_box is not None:
            self._no_tray_box.close()
            self._no_tray_box = None
        self.tray.notify(
            "Chamberlain is in the tray now",
            "Closing the chat window leaves it running there; quit from its menu.",
        )

    def _say_once_no_tray(self) -> None:
        box = QMessageBox(QMessageBox.Icon.Information, "Chamberlain", NO_TRAY_TEXT)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.open()
        self._no_tray_box = box

    # -- events ----------------------------------------------------------------------------------

    def _on_turn_event(self, event: TurnEvent) -> None:
        if isinstance(event, TurnStarted):
            self._turn_started = time.monotonic()
        elif isinstance(event, MemoryNotice) and event.memory.action == "pending":
            fact_id = event.memory.fact_id
            title, text = waiting_notification(event.memory)
            if fact_id is not None:
                self.tray.notify(title, text, lambda: self.show_memory(fact_id))
        elif isinstance(event, TurnEnded):
            took = time.monotonic() - self._turn_started
            chat = self.windows.get("chat")
            if took >= LONG_TURN_S and (chat is None or not chat.isVisible()):
                lines = [event.result.reply, *(app_line(m) for m in event.result.memory)]
                said = "\n".join(line for line in lines if line).strip()
                first = said.splitlines()[0] if said else ""
                self.tray.notify(
                    "Chamberlain finished your request",
                    first[:200],
                    self.bring_to_front,
                )

    def _revoke_all(self) -> None:
        self._spawn(self._revoke_all_now())

    async def _revoke_all_now(self) -> None:
        from app.windows.words import counted

        count = await self.assistant.revoke_all()
        self.tray.notify(
            "Permissions revoked",
            f"{counted(count, 'permission')} revoked. Chamberlain will ask again before its next "
            "step.",
        )

    # -- quitting --------------------------------------------------------------------------------

    def quit(self) -> None:
        self._quitting = True
        self._tray_look.stop()
        # Every question a worker thread waits on is withdrawn first: closing the assistant
        # waits for those threads here on the UI thread, and a dialog needs this thread's loop,
        # so a question left open would hold Quit (and SIGTERM at logout) for ever. A permission
        # question is answered "cancelled"; the passphrase question gets no passphrase.
        if self.gui_prompter is not None:
            self.gui_prompter.cancel_all("cancelled")
        if self._passphrase is not None:
            self._passphrase.cancel()
        for widget in self.windows.values():
            widget.close()
        if self._no_tray_box is not None:
            self._no_tray_box.close()
            self._no_tray_box = None
        self.tray.hide()
        self.chat_shortcut.close()
        self.assistant.close()
        if not self.finished.done():
            self.finished.set_result(0)


async def end_pending_work() -> None:
    """Cancel the app's other pending work (a window's refresh the last turn started) and let it
    end while the loop still runs: qasync turns Qt's event loop once more after the main
    coroutine returns, and a task first stepped then would find no running loop."""
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


def _log_failure(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("a background step failed", exc_info=future.exception())


class UiThreadCollector(QObject):
    """Python's cycle collector, run only here on the UI thread.

    Left automatic, it runs on whichever thread allocates at the wrong moment — a turn or io
    thread — and a Qt object caught in a cycle is then destroyed off its thread (Qt: "Timers
    cannot be stopped from another thread"). Automatic collection is off; this timer runs each
    generation when its threshold is passed, as the collector itself would.
    """

    INTERVAL_MS = 1000

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(self.INTERVAL_MS)
        self._timer.timeout.connect(self.collect)
        self._timer.start()

    def collect(self) -> None:
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                gc.collect(generation)
                return

    def stop(self) -> None:
        self._timer.stop()
        gc.enable()


# --- bootstrap ---------------------------------------------------------------------------------


# What Qt's offscreen and minimal platforms say about features they lack: expected, not news.
_PLATFORM_NOISE = ("This plugin does not support",)


class _QtStart:
    """Qt's messages while the QApplication is being built, held back: when Qt cannot open its
    platform (a display it cannot reach) it warns, then aborts the process after suggesting a
    reinstall. Held, the warnings explain the failure in one line instead; when the start
    succeeds, they are logged as they came."""

    def __init__(self) -> None:
        self.holding = False
        self.held: list[tuple[int, str]] = []

    def release(self) -> None:
        self.holding = False
        for level, message in self.held:
            logging.getLogger("chamberlain.qt").log(level, "%s", message)
        self.held.clear()


_qt_start = _QtStart()


def _qt_messages(mode: QtMsgType, context: Any, message: str) -> None:
    if mode == QtMsgType.QtFatalMsg and _qt_start.holding:
        _qt_could_not_start(message)
    if message.startswith(_PLATFORM_NOISE):
        logging.getLogger("chamberlain.qt").debug("%s", message)
        return
    level = {
        QtMsgType.QtDebugMsg: logging.DEBUG,
        QtMsgType.QtInfoMsg: logging.INFO,
        QtMsgType.QtWarningMsg: logging.WARNING,
        QtMsgType.QtCriticalMsg: logging.ERROR,
        QtMsgType.QtFatalMsg: logging.CRITICAL,
    }.get(mode, logging.WARNING)
    if _qt_start.holding:
        _qt_start.held.append((level, message))
        return
    logging.getLogger("chamberlain.qt").log(level, "%s", message)


def _qt_could_not_start(message: str) -> NoReturn:
    """Qt's fatal message while starting: one sentence, and exit 2 rather than Qt's abort (a
    core dump). The first warning names the cause ("could not connect to display :0"); Qt's
    own conclusion suggests a reinstall, which is never the fix here."""
    causes = [held for level, held in _qt_start.held if level >= logging.WARNING]
    cause = (causes or [message])[0].strip().splitlines()[0].split(". ")[0].rstrip(".")
    sys.stderr.write(
        f"chamberlain: the desktop app cannot start: Qt cannot open a window here ({cause}); "
        f"{NO_DISPLAY_ADVICE}.\n"
    )
    sys.stderr.flush()
    os._exit(EXIT_NO_DISPLAY)


def _install_exception_hooks(loop: asyncio.AbstractEventLoop) -> None:
    def excepthook(
        kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        log.error("uncaught exception", exc_info=(kind, value, tb))

    def loop_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        log.error("error in the event loop: %s", context.get("message"), exc_info=exc)

    sys.excepthook = excepthook
    loop.set_exception_handler(loop_handler)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="chamberlain", description="Chamberlain desktop app")
    parser.add_argument("--home", help="where every file Chamberlain writes lives")
    # What a desktop's own keyboard shortcut runs (Wayland lets no program take a key itself):
    # the chat comes up, in the running app or in this one.
    parser.add_argument("--chat", action="store_true", help="open the chat window")
    # For bench.app_startup: print the wall-clock time once the tray is up, then quit.
    parser.add_argument("--ready-and-quit", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--smoke-test",
        action="store_true",
        help="start offscreen, open every window, run one request, quit (exit 0 when all worked)",
    )
    return parser.parse_args(list(argv))


def run_app(argv: Sequence[str] = ()) -> int:
    """Start the desktop app; returns the exit code."""
    import qasync

    args = parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("CHAMBERLAIN_LOG", "WARNING").upper(),
        format="%(levelname)s %(name)s: %(message)s",
    )
    cleanup: Callable[[], None] | None = None
    if args.smoke_test:
        cleanup = _smoke_environment(args)
    from broker.settings import default_home

    home = Path(args.home).expanduser() if args.home else default_home()
    qInstallMessageHandler(_qt_messages)
    _qt_start.holding = True
    try:
        app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "chamberlain"])
    finally:
        _qt_start.release()
    assert isinstance(app, QApplication)
    app.setApplicationName("Chamberlain")
    app.setApplicationDisplayName("Chamberlain")
    app.setDesktopFileName("chamberlain")
    app.setWindowIcon(icon("chamberlain"))
    app.setQuitOnLastWindowClosed(False)

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    _install_exception_hooks(loop)
    collector = UiThreadCollector()
    try:
        with loop:
            if args.smoke_test:
                from app.smoke import smoke_test

                code: int = loop.run_until_complete(smoke_test(home))
            else:
                code = loop.run_until_complete(
                    _main(home, ready_and_quit=args.ready_and_quit, chat=args.chat)
                )
            return code
    finally:
        collector.stop()
        if cleanup is not None:
            cleanup()


def _quit_on_signals(shell: DesktopApp) -> None:
    """SIGTERM (logout, `kill`, a package upgrade) and SIGHUP end the app as Quit does: the turn
    stopped, MCP servers ended, memory closed, rather than the process simply vanishing."""
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(number, shell.quit)
        except (NotImplementedError, RuntimeError, ValueError):
            log.debug("cannot handle signal %s on this platform", number)


async def _unless_signalled(work: Coroutine[Any, Any, Claim]) -> Claim | None:
    """`work`, or None when SIGTERM or SIGHUP comes first: before the shell exists (and its own
    handlers, `_quit_on_signals`), a dialog being awaited is closed and the launch ends with 0
    rather than being killed by the signal's default action."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    numbers = (signal.SIGTERM, signal.SIGHUP)
    for number in numbers:
        try:
            loop.add_signal_handler(number, task.cancel)
        except (NotImplementedError, RuntimeError, ValueError):
            log.debug("cannot handle signal %s on this platform", number)
    try:
        return await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # this launch itself is being cancelled, not only the question
        return None
    finally:
        for number in numbers:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(number)


async def _cannot_start(exc: ChamberlainError | OSError) -> None:
    """Say why the app cannot start, on stderr and in a box a person starting it from a menu
    sees (each in its front end's words)."""
    from app.errors import FrontEnd, user_message

    log.warning("Chamberlain cannot start: %s", exc)
    sys.stderr.write(f"chamberlain: {user_message(exc, FrontEnd.CLI)}\n")
    box = QMessageBox(
        QMessageBox.Icon.Critical,
        "Chamberlain",
        f"Chamberlain cannot start: {user_message(exc, FrontEnd.APP)}.",
    )
    await async_dialog.show_dialog(box)


async def _main(home: Path, *, ready_and_quit: bool = False, chat: bool = False) -> int:
    from core.errors import ChamberlainError

    instance = SingleInstance(server_name(home), lock_path(home))
    claim = instance.claim()
    if claim is Claim.NOT_RESPONDING:
        # Frozen (its loop stuck, or the process stopped): said, and ended only on a yes.
        answer = await _unless_signalled(take_over(instance))
        if answer is None:  # SIGTERM or SIGHUP while asking: nothing was started yet
            instance.release()
            return 0
        claim = answer
        if claim is Claim.NOT_RESPONDING:
            return 1
    if claim is Claim.SHOWN:
        log.info("Chamberlain is already running; asked it to show its window")
        return 0
    try:
        shell = DesktopApp(home)
    except ChamberlainError as exc:
        # Such as an environment variable that is not a valid setting (a broken settings.json
        # is worked around): no default can stand in for what it meant.
        instance.release()
        await _cannot_start(exc)
        return 1
    instance.activated.connect(shell.bring_to_front)
    _quit_on_signals(shell)
    shell.start()
    if chat and shell.use_tray:  # without a tray the chat opens anyway
        shell.show_window("chat")
    if ready_and_quit:
        await asyncio.sleep(0)  # one turn of the loop: the tray (or window) is on screen
        sys.stdout.write(f"ready {time.time():.6f}\n")
        sys.stdout.flush()
        shell.quit()
        instance.release()
        return 0
    try:
        try:
            await shell.load()
        except (ChamberlainError, OSError) as exc:
            # The session is built here (keys, audit log, grants, policy, self test): a damaged
            # file of ours is said in the same box, never a traceback.
            shell.quit()
            await _cannot_start(exc)
            return 1
        except (asyncio.CancelledError, RuntimeError):
            # Quit (the tray, or a signal) while still loading ends the io work under load:
            # that is the way out, not a failure.
            if not shell.finished.done():
                raise
        return await shell.finished
    finally:
        instance.release()
        await end_pending_work()


def _smoke_environment(args: argparse.Namespace) -> Callable[[], None]:
    """The smoke test runs offscreen in a throwaway home and user home (its Chamberlain home is
    the one given with --home, if any) and never touches the real keyring; returns what removes
    them afterwards.

    Its result must not depend on the caller's environment: every CHAMBERLAIN_* variable is
    removed (a memory passphrase would skip the passphrase dialog it tests, a setting could deny
    the request it makes), except CHAMBERLAIN_LOG, which changes only what is logged."""
    from app.smoke import clear_caller_settings

    clear_caller_settings(os.environ)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    scratch = Path(tempfile.mkdtemp(prefix="chamberlain-smoke-"))
    user = scratch / "user"
    user.mkdir()
    os.environ["HOME"] = str(user)
    os.environ["XDG_CONFIG_HOME"] = str(user / ".config")
    os.environ["XDG_DATA_HOME"] = str(user / ".local" / "share")
    os.environ["XDG_STATE_HOME"] = str(user / ".local" / "state")
    os.environ["XDG_CACHE_HOME"] = str(user / ".cache")
    os.environ["XDG_RUNTIME_DIR"] = str(scratch / "runtime")
    (scratch / "runtime").mkdir(mode=0o700)
    if not args.home:
        args.home = str(scratch / "chamberlain")

    def remove() -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(scratch)

    return remove

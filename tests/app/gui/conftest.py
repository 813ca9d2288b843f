"""Qt test rig for the desktop app: real widgets offscreen, a real qasync loop, a real Session.

pytest-qt provides the QApplication (`qapp`) and `qtbot`. `run(coro)` runs a coroutine on a
qasync loop over that application, so the app's awaitables (turns, the dialog seam, io work)
run exactly as in the app, with Qt events processed while they wait.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from broker.session import Session
from broker.settings import Settings
from core.clock import SystemClock

T = TypeVar("T")

Runner = Callable[[Coroutine[Any, Any, T]], T]


@pytest.fixture(autouse=True)
def _collect_qt_garbage_on_the_ui_thread() -> Iterator[None]:
    """Collect each test's cyclic garbage here, on the main thread, after its fixtures closed.

    Otherwise Python's cycle collector may run on whichever thread allocates next, such as a
    worker waiting on a permission question in the next test, and a QObject of this test (the qasync
    loop's timer object still holds timers when the loop closes) would be destroyed there: Qt
    warns "Timers cannot be stopped from another thread", which fails that unrelated test.
    """
    yield
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


async def until(done: Callable[[], object], seconds: float = 15.0) -> None:
    """Wait, with the loop running (Qt events processed), until `done()` holds."""
    for _ in range(int(seconds / 0.02)):
        if done():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting for the condition")


@pytest.fixture
def event_loop_qt(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync loop over the test's QApplication, closed afterwards. As in the app, closing the
    last window does not quit (a dialog closing would otherwise stop the loop)."""
    qapp.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(qapp, already_running=False)
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        # Work a window started and nobody awaited (a refresh) ends with the test, not later.
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture
def run(event_loop_qt: asyncio.AbstractEventLoop) -> Runner[Any]:
    """`run(coro, timeout=30)`: run a coroutine to completion on the qasync loop."""

    def go(coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return event_loop_qt.run_until_complete(asyncio.wait_for(coro, timeout))

    return go


@pytest.fixture
def app_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Chamberlain home and a user home under tmp_path (nothing touches the real ones)."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    home = tmp_path / "chamberlain"
    home.mkdir()
    monkeypatch.setenv("CHAMBERLAIN_HOME", str(home))
    return home


@pytest.fixture
def config_home(app_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the autostart entry goes (XDG_CONFIG_HOME), under the test's user home."""
    folder = app_home.parent / "user" / ".config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


def open_settings(qtbot: Any, assistant: Any) -> Any:
    """The Settings window on `assistant`, shown (autostart would start the installed app)."""
    from app.windows.settings import SettingsWindow

    shown = SettingsWindow(assistant, autostart_command=["/opt/chamberlain/bin/chamberlain"])
    qtbot.addWidget(shown)
    shown.show()
    return shown


def make_session(home: Path, **options: Any) -> Session:
    """A real Session under `home` with default settings (no model unless one is given)."""
    settings = options.pop("settings", None) or Settings()
    settings.router.model_refinement = False
    clock = options.pop("clock", None) or SystemClock()
    return Session(home=home, settings=settings, clock=clock, **options)

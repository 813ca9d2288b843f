"""What the app's windows share: starting their async work, the one confirmation seam, words
for capabilities and times, and the table and empty-state furniture every window uses.

The windows render models and forward the person's choices to the Assistant; the work itself
(reading grants and the audit log, every memory call) runs on the Assistant's io thread. Nothing
here may block the UI thread, and no dialog here is ever `exec()`ed: a question is shown with
`open()` and its answer awaited (`confirm`), so the qasync loop keeps running underneath.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHeaderView,
    QLabel,
    QMessageBox,
    QStackedWidget,
    QTableView,
    QWidget,
)

log = logging.getLogger("chamberlain.app.windows")

# Tasks started from Qt slots; kept here so none is garbage-collected while it runs.
_tasks: set[asyncio.Task[Any]] = set()

# What each capability lets Chamberlain do, in the words a prompt would use.
CAPABILITY_WORDS: dict[str, str] = {
    "screen_read": "See your screen",
    "file_read": "Read files",
    "file_write": "Change files",
    "system_read": "Read system information",
    "system_execute": "Run commands",
    "web_access": "Use the web",
    "open_external": "Open files and links in other apps",
    "memory_write": "Remember things",
    "mcp_read": "Use MCP tools that read",
    "mcp_write": "Use MCP tools that change things",
    "mcp_execute": "Use MCP tools that run things",
}


def capability_words(capability: str) -> str:
    return CAPABILITY_WORDS.get(capability, capability.replace("_", " ").capitalize())


def spawn(work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
    """Run `work` on the running (qasync) loop, from a Qt slot. Its failure is logged (the
    windows catch what they can explain themselves). None when no loop runs: the app always
    has one; only a test that drives a window outside its loop gets here."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        work.close()
        log.warning("no event loop is running; %r was not started", work)
        return None
    task = loop.create_task(_reported(work))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


async def _reported(work: Coroutine[Any, Any, Any]) -> Any:
    """`work`, its failure logged inside the task itself (a done-callback would never run for a
    task whose loop has closed, and its exception would be reported as never retrieved)."""
    try:
        return await work
    except Exception:  # the window's boundary: logged, the app stays up
        log.exception("a window's background work failed")
        return None


class Coalesced:
    """An async reload asked for again while it runs: it then runs once more, after — never
    twice at once (each window's refresh goes through one)."""

    def __init__(self, job: Callable[[], Awaitable[None]]) -> None:
        self._job = job
        self._running = False
        self._again = False

    async def __call__(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        try:
            while True:
                self._again = False
                await self._job()
                if not self._again:
                    return
        finally:
            self._running = False


async def confirm(parent: QWidget, title: str, text: str, accept: str) -> bool:
    """Ask a yes/no question without blocking: the one seam every window's confirmation goes
    through. Cancel is the default button, and Esc answers it."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.NoButton)
    box.setParent(parent, box.windowFlags())
    box.setObjectName("confirmation")
    yes = box.addButton(accept, QMessageBox.ButtonRole.AcceptRole)
    no = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(no)
    box.setEscapeButton(no)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.setAccessibleName(title)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def done(_result: int) -> None:
        if not answer.done():
            answer.set_result(box.clickedButton() is yes)

    box.finished.connect(done)
    box.open()
    try:
        return await answer
    finally:
        box.deleteLater()


def when(timestamp: float | None) -> str:
    """A moment in local time, as a person reads it ("2026-11-24 16:09"); "—" for none."""
    if timestamp is None:
        return "—"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def when_exactly(timestamp: float | None) -> str:
    """A moment to the second, for the activity log ("2026-11-24 16:09:40")."""
    if timestamp is None:
        return "—"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float) -> str:
    """A span in words, to the second: "4 min 05 s", "1 h 02 min", "12 s"."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def problem_color(palette: QPalette) -> QColor:
    """A red that reads on the system's light or dark background."""
    return QColor("#ff8a80") if is_dark(palette) else QColor("#b3261e")


def good_color(palette: QPalette) -> QColor:
    return QColor("#81c995") if is_dark(palette) else QColor("#1e7b34")


def caption(text: str) -> QLabel:
    """A muted line under a heading that says what a list holds."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    return label


def table(
    model: QAbstractItemModel,
    name: str,
    description: str,
    elide: Qt.TextElideMode = Qt.TextElideMode.ElideRight,
) -> QTableView:
    """A read-only, row-selecting table a keyboard can reach and leave with Tab. Tables of
    paths elide in the middle, so both ends of a path stay visible."""
    view = QTableView()
    view.setModel(model)
    view.setObjectName(name)
    view.setAccessibleName(name)
    view.setAccessibleDescription(description)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setAlternatingRowColors(True)
    view.setTabKeyNavigation(False)  # Tab leaves the table; the arrows move inside it
    view.setWordWrap(False)
    view.setShowGrid(False)
    view.setTextElideMode(elide)
    rows = view.verticalHeader()
    rows.setVisible(False)
    rows.setDefaultSectionSize(view.fontMetrics().height() + 10)
    header = view.horizontalHeader()
    header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    header.setHighlightSections(False)
    header.setStretchLastSection(True)
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    return view


class EmptyOr(QStackedWidget):
    """A view, or — while its model has no rows — a sentence saying what will appear there."""

    def __init__(self, view: QAbstractItemView, empty_text: str) -> None:
        super().__init__()
        self.view = view
        self.empty = QLabel(empty_text)
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setMargin(24)
        self.empty.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        # Framed like the list it stands in for, so the window keeps its shape.
        self.empty.setFrameShape(QFrame.Shape.StyledPanel)
        self.empty.setAutoFillBackground(True)
        self.empty.setBackgroundRole(QPalette.ColorRole.Base)
        self.empty.setAccessibleName(empty_text)
        self.addWidget(self.empty)
        self.addWidget(view)
        model = view.model()
        for signal in (
            model.modelReset,
            model.rowsInserted,
            model.rowsRemoved,
            model.layoutChanged,
        ):
            signal.connect(self.update_state)
        self.update_state()

    def set_empty_text(self, text: str) -> None:
        self.empty.setText(text)
        self.empty.setAccessibleName(text)

    @property
    def showing_empty(self) -> bool:
        return self.currentWidget() is self.empty

    def update_state(self, *_: object) -> None:
        empty = self.view.model().rowCount() == 0
        had_focus = self.view.hasFocus()
        self.setCurrentWidget(self.empty if empty else self.view)
        if had_focus and not empty:
            self.view.setFocus()

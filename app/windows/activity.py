"""The Activity window: the audit log as a table a person can filter, and a check that it is
intact.

One row per stage of every turn (`app.activity_words.rows`: the newest lines of the log, read
from its end), filtered by stage, tool, capability and decision — each a list of the values present
— and by free text. "Verify log" runs `broker.audit.verify` with the session's key and says in
plain words whether the log is intact, naming the first bad line when it is not.

It renders rows; it never writes the log. Reading and verifying run on the QtSession's io
thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QFont, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.activity_words import ActivityRow, rows
from app.qt_session import QtSession
from app.windows.palette import good_color, problem_color
from app.windows.placement import resize_to_fit
from app.windows.tables import EmptyOr, table
from app.windows.tasks import Coalesced, spawn
from app.windows.words import capability_words, tool_words, when_exactly
from broker.audit.verify import VerifyResult, verify
from broker.events import TurnEnded, TurnEvent
from tools.escapes import visible

log = logging.getLogger("chamberlain.app.windows.activity")

ROWS_SHOWN = 2_000
# Columns, and which ActivityRow field each filter box matches.
COLUMNS = ("#", "When", "Turn", "Stage", "Tool", "Capability", "Decision", "Detail")
SEQ, TIME, TURN, STAGE, TOOL, CAPABILITY, DECISION, DETAIL = range(len(COLUMNS))
SORT_ROLE = Qt.ItemDataRole.UserRole
ALL = ""
# Decisions shown in the problem colour.
REFUSALS = frozenset({"denied", "timed out", "refused", "too late", "error", "failed", "timeout"})

Index = QModelIndex | QPersistentModelIndex


def verify_words(result: VerifyResult) -> str:
    """What a person is told about a verify result."""
    if result.ok:
        note = "" if result.reason == "ok" else f" Note: {result.reason.removeprefix('ok; ')}."
        return (
            f"The audit log is intact: {result.lines} lines checked; none was edited, removed "
            f"or reordered.{note}"
        )
    where = (
        f"line {result.first_bad_line}"
        if result.first_bad_line is not None
        else "its head file (not any one line)"
    )
    if result.interrupted:
        return (
            f"The audit log was cut short at {where}: {result.reason}. Nothing was edited; a "
            "crash or a full disk interrupted a write. `chamberlain audit acknowledge` accepts it."
        )
    reason = result.reason
    if result.first_bad_line is not None:  # verify's reason often starts with the same place
        reason = reason.removeprefix(f"line {result.first_bad_line}: ")
    intact = f"{result.lines} line{'s' if result.lines != 1 else ''}"
    return (
        f"The audit log does not check out. The first problem is at {where}: {reason}. "
        f"The {intact} before it are intact."
    )


class ActivityModel(QAbstractTableModel):
    """ActivityRows as table rows; sorting uses the raw values (SORT_ROLE)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[ActivityRow] = []

    def set_rows(self, new: list[ActivityRow]) -> None:
        self.beginResetModel()
        self.rows = new
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation is Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    @staticmethod
    def text(row: ActivityRow, column: int) -> str:
        if column == SEQ:
            return "" if row.seq is None else str(row.seq)
        if column == TIME:
            return when_exactly(row.time) if row.time is not None else ""
        if column == CAPABILITY:
            return capability_words(row.capability) if row.capability else ""
        values = {
            TURN: row.turn_id,
            STAGE: row.stage,
            TOOL: tool_words(row.tool),
            DECISION: row.decision,
            DETAIL: row.detail,
        }
        # What a model, a file or a server named is shown escaped (a U+202E reverses the rest).
        return visible(values[column])

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        column = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return self.text(row, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            return visible(row.detail, lines=True) if column == DETAIL else None
        if role == SORT_ROLE:
            if column == SEQ:
                return index.row()  # the order of the file, damaged lines included
            if column == TIME:
                return row.time if row.time is not None else 0.0
            return self.text(row, column)
        if role == Qt.ItemDataRole.ForegroundRole:
            palette = QApplication.palette()
            if row.damaged or (column == DECISION and row.decision in REFUSALS):
                return problem_color(palette)
            if column == DECISION and row.decision.startswith(("allowed", "already allowed", "ok")):
                return good_color(palette)
        if role == Qt.ItemDataRole.FontRole and row.damaged:
            font = QFont()
            font.setBold(True)
            return font
        return None


class ActivityFilter(QSortFilterProxyModel):
    """Keeps the rows whose stage, tool, capability and decision equal the chosen values (an
    empty choice matches all) and that contain the search text in any column."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.choices: dict[int, str] = {}
        self.search = ""

    def set_choice(self, column: int, value: str) -> None:
        self._changing(lambda: self.choices.__setitem__(column, value))

    def set_search(self, text: str) -> None:
        self._changing(lambda: setattr(self, "search", text.strip().casefold()))

    def _changing(self, change: Callable[[], None]) -> None:
        # Qt 6.10 replaced invalidateRowsFilter (now deprecated) with begin/endFilterChange.
        if hasattr(self, "beginFilterChange"):
            self.beginFilterChange()
            change()
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            change()
            self.invalidateRowsFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        assert isinstance(model, ActivityModel)
        row = model.rows[source_row]
        for column, value in self.choices.items():
            if value != ALL and ActivityModel.text(row, column) != value:
                return False
        if self.search:
            return any(
                self.search in ActivityModel.text(row, c).casefold() for c in range(len(COLUMNS))
            )
        return True


class ActivityWindow(QWidget):
    """The audit log, filterable, with a Verify button."""

    def __init__(self, assistant: QtSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.assistant = assistant
        self.setWindowTitle("Activity")  # Qt adds " — Chamberlain" (words.py)
        self.setAccessibleName("Activity")
        resize_to_fit(self, 1180, 640)  # at most what the screen holds
        self._reload = Coalesced(self._load)

        # Owned by the window, so Qt deletes them with it, on the UI thread.
        self.model = ActivityModel(self)
        self.proxy = ActivityFilter(self)
        self.proxy.setSourceModel(self.model)
        self.view = table(self.proxy, "Activity log", "Every step of every request, newest first")
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(SEQ, Qt.SortOrder.DescendingOrder)
        for column, width in zip(
            (SEQ, TIME, TURN, STAGE, TOOL, CAPABILITY, DECISION),
            (40, 140, 112, 140, 150, 150, 112),  # tools and capabilities are in words
            strict=True,
        ):
            self.view.setColumnWidth(column, width)
        self.view.horizontalHeader().setSectionResizeMode(DETAIL, QHeaderView.ResizeMode.Stretch)
        self.listing = EmptyOr(
            self.view,
            "Nothing has been recorded yet. Each request you make appears here, one line per "
            "step: how it was understood, what was allowed, each permission and tool call.",
        )

        self.filters: dict[int, QComboBox] = {}
        filters = QHBoxLayout()
        for column, label, everything in (
            (STAGE, "S&tage", "All stages"),
            (TOOL, "T&ool", "All tools"),
            (CAPABILITY, "&Capability", "All capabilities"),
            (DECISION, "&Decision", "All decisions"),
        ):
            combo = QComboBox()
            combo.setAccessibleName(f"Filter by {COLUMNS[column].lower()}")
            combo.addItem(everything, ALL)
            combo.setMinimumContentsLength(12)
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            combo.currentIndexChanged.connect(lambda _i, c=column: self._choose(c))
            caption = QLabel(label)
            caption.setBuddy(combo)
            filters.addWidget(caption)
            filters.addWidget(combo)
            self.filters[column] = combo
        filters.addStretch(1)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search every column")
        self.search.setAccessibleName("Search the activity log")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.proxy.set_search)
        self.search.textChanged.connect(self._update_empty_text)
        search_label = QLabel("&Search")
        search_label.setBuddy(self.search)

        self.refresh_button = QPushButton("&Refresh")
        self.refresh_button.setAccessibleName("Read the audit log again")
        self.refresh_button.setToolTip("Read the audit log again (F5)")
        self.verify_button = QPushButton("&Verify log")
        self.verify_button.setAccessibleName("Verify the audit log")
        self.verify_button.setToolTip("Check that no line of the log was edited, removed or moved")
        self.verdict = QLabel("")
        self.verdict.setTextFormat(Qt.TextFormat.PlainText)  # may quote what a model or file wrote
        self.verdict.setWordWrap(True)
        self.verdict.setAccessibleName("Verify result")
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details = QLabel("Select a step to read it in full here.")
        self.details.setTextFormat(Qt.TextFormat.PlainText)  # may quote what a model or file wrote
        self.details.setWordWrap(True)
        self.details.setAccessibleName("The selected step in full")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.details.setMinimumHeight(self.fontMetrics().height() * 2 + 4)
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.count = QLabel("")
        self.count.setAccessibleName("Rows shown")

        top = QHBoxLayout()
        top.addWidget(search_label)
        top.addWidget(self.search, 1)
        top.addWidget(self.refresh_button)
        top.addWidget(self.verify_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(filters)
        layout.addWidget(self.listing, 1)
        layout.addWidget(self.details)
        bottom = QHBoxLayout()
        bottom.addWidget(self.verdict, 1)
        bottom.addWidget(self.count)
        layout.addLayout(bottom)

        self.view.selectionModel().currentRowChanged.connect(self._show_details)
        self.refresh_button.clicked.connect(self.request_refresh)
        self.verify_button.clicked.connect(lambda: spawn(self.verify()))
        self.proxy.rowsInserted.connect(self._update_count)
        self.proxy.rowsRemoved.connect(self._update_count)
        self.proxy.modelReset.connect(self._update_count)
        self.proxy.layoutChanged.connect(self._update_count)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Refresh), self, self.request_refresh)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Find), self, self.search.setFocus)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Close), self, self.close)
        assistant.turn_event.connect(self._on_turn_event)
        self._update_count()

    # -- reading ---------------------------------------------------------------------------------

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.request_refresh()

    def request_refresh(self) -> None:
        spawn(self.refresh())

    def _on_turn_event(self, event: TurnEvent) -> None:
        if isinstance(event, TurnEnded):
            self.request_refresh()

    async def refresh(self) -> None:
        """Read the end of the log again (io thread); the filters keep their choices."""
        await self._reload()

    async def _load(self) -> None:
        found = await self.assistant.run_io(rows, self.assistant.session.audit.path, ROWS_SHOWN)
        self.model.set_rows(found)
        self._fill_filters(found)

    def _fill_filters(self, found: list[ActivityRow]) -> None:
        for column, combo in self.filters.items():
            present = sorted({ActivityModel.text(r, column) for r in found} - {""})
            chosen = combo.currentData()
            combo.blockSignals(True)
            while combo.count() > 1:
                combo.removeItem(1)
            for value in present:
                combo.addItem(value, value)
            if chosen and chosen not in present:
                combo.addItem(chosen, chosen)  # keep the person's choice even if none match now
            combo.setCurrentIndex(max(0, combo.findData(chosen)))
            combo.blockSignals(False)

    def _choose(self, column: int) -> None:
        value = self.filters[column].currentData()
        self.proxy.set_choice(column, value if isinstance(value, str) else ALL)
        self._update_empty_text()

    def _update_empty_text(self, *_: object) -> None:
        filtered = bool(self.proxy.search) or any(v != ALL for v in self.proxy.choices.values())
        if filtered and self.model.rowCount():
            self.listing.set_empty_text(
                "No step matches these filters. Choose “All” in a filter or clear the search."
            )
        else:
            self.listing.set_empty_text(
                "Nothing has been recorded yet. Each request you make appears here, one line "
                "per step: how it was understood, what was allowed, each permission and tool "
                "call."
            )

    def _show_details(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not current.isValid():
            self.details.setText("Select a step to read it in full here.")
            self.details.setForegroundRole(QPalette.ColorRole.PlaceholderText)
            return
        row = self.model.rows[self.proxy.mapToSource(current).row()]
        parts = [f"#{row.seq}" if row.seq is not None else "", when_exactly(row.time), row.stage]
        parts += [tool_words(row.tool), capability_words(row.capability) if row.capability else ""]
        parts += [row.decision]
        heading = " · ".join(p for p in parts if p and p != "—")
        self.details.setText(visible(f"{heading}\n{row.detail}", lines=True))
        self.details.setForegroundRole(QPalette.ColorRole.WindowText)

    def _update_count(self, *_: object) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        self.count.setText(f"{shown} of {total} steps" if shown != total else f"{total} steps")

    # -- verifying -------------------------------------------------------------------------------

    async def verify(self) -> VerifyResult | None:
        """Check the whole chain (io thread) and say what was found."""
        session = self.assistant.session
        self.verify_button.setEnabled(False)
        self.verdict.setText("Checking the audit log…")
        self.verdict.setStyleSheet("")
        try:
            result = await self.assistant.run_io(
                verify, session.audit.path, session.secret.audit_key
            )
        except OSError as exc:
            self._verdict(f"The audit log could not be read: {exc.strerror or exc}.", False)
            return None
        finally:
            self.verify_button.setEnabled(True)
        self._verdict(verify_words(result), result.ok)
        if result.first_bad_line is not None:
            self._show_line(result.first_bad_line)
        return result

    def _show_line(self, seq: int) -> None:
        """Select the row of the first bad line, when it is listed and not filtered out (a
        line's number is its seq while nothing was cut before it)."""
        for source_row, row in enumerate(self.model.rows):
            if row.seq == seq:
                index = self.proxy.mapFromSource(self.model.index(source_row, DETAIL))
                if index.isValid():
                    self.view.selectRow(index.row())
                    self.view.scrollTo(index)
                return

    def _verdict(self, text: str, ok: bool) -> None:
        color = good_color(self.palette()) if ok else problem_color(self.palette())
        self.verdict.setText(text)
        self.verdict.setAccessibleDescription(text)
        self.verdict.setStyleSheet(f"color: {color.name()};")

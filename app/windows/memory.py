"""The Memory window: everything Chamberlain remembers, and the person's control over it.

The facts (text, a sensitivity badge, where each came from, when it was created and confirmed,
how often it was used), a search over them, the facts waiting for approval (approve, edit,
reject), editing and forgetting a fact, export and import, the anchors (pinned notes that go
into every prompt, within a character budget), and a "Pause memory" switch that is saved in
the settings.

It renders the store's answers and forwards the person's choices. Every store call runs on the
QtSession's io thread (the store is shared with the turn thread and has its own lock); a store
error is shown as the sentence the store wrote, and what the person typed is kept so nothing is
lost. When the session has no store, the window says why and its editing controls are off.
It reads the store again whenever memory changes anywhere in the app (`QtSession.memory_changed`:
the chat's buttons, a turn's remembering), so it never shows a fact that is gone; and it opens on
the fact it is asked to show (`show_fact`), on whichever tab that fact is.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRectF,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor, QKeySequence, QPainter, QPalette, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.memory_consent import edit_fact
from app.qt_session import QtSession
from app.windows.confirm import confirm
from app.windows.palette import problem_color
from app.windows.placement import resize_to_fit
from app.windows.tables import EmptyOr, table
from app.windows.tasks import Coalesced, spawn
from app.windows.words import when
from broker.settings import save_settings
from memory.db import MemoryStoreError
from memory.sensitivity.assessment import assess
from memory.store.anchors import AnchorsPrompt
from memory.store.export import read_import
from memory.store.facts import MemoryStore
from memory.types import Anchor, Fact, FactSource, FactStatus, Sensitivity

log = logging.getLogger("chamberlain.app.windows.memory")

T = TypeVar("T")
Index = QModelIndex | QPersistentModelIndex

FACTS_SHOWN = 1000

SOURCE_WORDS = {
    FactSource.USER_EXPLICIT: "You asked",
    FactSource.EXTRACTED: "From a conversation",
    FactSource.USER_EDIT: "Your edit",
    FactSource.IMPORT: "Imported",
}

# (label, background, text colour) per level: readable on light and dark themes alike.
BADGES: dict[Sensitivity, tuple[str, str, str]] = {
    Sensitivity.LOW: ("Low", "#2e7d32", "#ffffff"),
    Sensitivity.PERSONAL: ("Personal", "#f9a825", "#1f1f1f"),
    Sensitivity.SECRET: ("Secret", "#c62828", "#ffffff"),
}
BADGE_HELP = {
    Sensitivity.LOW: "Low: may be used with any model you connect",
    Sensitivity.PERSONAL: "Personal: kept from models outside this computer unless you allow it",
    Sensitivity.SECRET: "Secret: kept from models outside this computer unless you allow it",
}

NO_STORE = (
    "Memory is not open yet. It opens the first time a request needs it (and asks for its "
    "passphrase if it has one); this window shows it then."
)


class AnchorBudgetError(MemoryStoreError):
    """An anchor that would not fit in what is left of the anchors' character budget."""


def anchor_room(prompt: AnchorsPrompt, text: str) -> tuple[int, int]:
    """(characters this anchor would take in the prompt, characters left for it)."""
    cost = len("- " + text.strip()) + (1 if prompt.used_chars else 0)
    left = 0 if prompt.omitted else prompt.budget_chars - prompt.used_chars
    return cost, max(0, left)


def pin_anchor(store: MemoryStore, text: str, budget: int) -> Anchor:
    """Pin an anchor only if it fits the budget; otherwise AnchorBudgetError saying by how
    much it does not. Runs on the io thread (the check and the write in one call)."""
    cost, left = anchor_room(store.anchors_prompt(budget), text)
    if cost > left:
        raise AnchorBudgetError(
            f"This anchor was not pinned: it needs {cost} characters and only {left} of the "
            f"{budget}-character budget are left. Shorten it, or unpin another anchor first "
            "(the budget is in Settings → Memory)."
        )
    return store.add_anchor(text)


def import_file(store: MemoryStore, path: Path) -> list[Fact]:
    """Import an export file; every fact arrives waiting for approval, at least as sensitive as
    the detectors find it."""
    return store.import_json(read_import(path), sensitivity_floor=lambda t: assess(t).level)


def export_file(store: MemoryStore, path: Path) -> int:
    """Write everything to `path` (Markdown for .md, else JSON), readable by the person only.
    Returns how many facts went out."""
    if path.suffix.lower() in (".md", ".markdown"):
        body = store.export_markdown()
        count = store.count()
    else:
        data = store.export_json()
        body = json.dumps(data, indent=2, ensure_ascii=False)
        count = len(data["facts"])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(body + "\n")
    return count


@dataclass(frozen=True)
class MemoryView:
    facts: list[Fact]
    total: int
    pending: list[Fact]
    anchors: list[Anchor]
    prompt: AnchorsPrompt


def read_memory(store: MemoryStore, query: str, budget: int) -> MemoryView:
    """Runs on the io thread: what the window shows, in one go."""
    if query.strip():
        facts = store.search(query, status=FactStatus.ACTIVE, limit=FACTS_SHOWN)
        total = len(facts)
    else:
        page = store.listing(status=FactStatus.ACTIVE, limit=FACTS_SHOWN)
        facts, total = page.facts, page.total
    pending = store.facts(status=FactStatus.PENDING)
    return MemoryView(facts, total, pending, store.anchors(), store.anchors_prompt(budget))


# --- models ----------------------------------------------------------------------------------

COLUMN_TITLES = {
    "text": "Fact",
    "sensitivity": "Sensitivity",
    "source": "Source",
    "created": "Created",
    "confirmed": "Confirmed",
    "uses": "Used",
    "why": "Why it waits",
}


class FactsModel(QAbstractTableModel):
    """Facts as rows. The text column is editable; an edit is not applied here but asked for
    (`edit_requested`), and shows once the store has it."""

    edit_requested = Signal(str, str)  # fact id, new text

    def __init__(self, columns: list[str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.columns = columns
        self.facts: list[Fact] = []
        # Text the person typed that the store refused: offered again in the editor.
        self.unsaved: dict[str, str] = {}

    def set_facts(self, facts: list[Fact]) -> None:
        self.beginResetModel()
        self.facts = facts
        self.endResetModel()

    def row_of(self, fact_id: str) -> int | None:
        return next((i for i, f in enumerate(self.facts) if f.id == fact_id), None)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.facts)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation is Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMN_TITLES[self.columns[section]]
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and self.columns[index.column()] == "text":
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        fact = self.facts[index.row()]
        column = self.columns[index.column()]
        if role == Qt.ItemDataRole.UserRole:
            return fact.id
        if role == Qt.ItemDataRole.EditRole:
            return self.unsaved.get(fact.id, fact.text)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == "sensitivity":
                return BADGE_HELP[fact.sensitivity]
            if column == "text":
                return fact.text
            return None
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return None
        if column == "text":
            return fact.text
        if column == "sensitivity":
            return BADGES[fact.sensitivity][0]
        if column == "source":
            return SOURCE_WORDS.get(fact.source, fact.source.value)
        if column == "created":
            return when(fact.created_at)
        if column == "confirmed":
            return when(fact.confirmed_at)
        if column == "uses":
            return str(fact.use_count)
        return "; ".join(fact.reasons) or "—"

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.EditRole:
            return False
        fact = self.facts[index.row()]
        text = str(value).strip()
        if text and text != fact.text:
            self.edit_requested.emit(fact.id, text)
        return False  # the store's answer, through a refresh, is what shows


class BadgeDelegate(QStyledItemDelegate):
    """Paints a fact's sensitivity as a coloured pill with its word in it."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        text = index.data(Qt.ItemDataRole.DisplayRole)
        badge = next((b for b in BADGES.values() if b[0] == text), None)
        if badge is None:
            super().paint(painter, option, index)
            return
        label, background, foreground = badge
        style = option.widget.style() if option.widget is not None else None
        if style is not None:  # the row's selection and focus, as every other cell
            plain = QStyleOptionViewItem(option)
            self.initStyleOption(plain, index)
            plain.text = ""
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, plain, painter, option.widget)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        metrics = option.fontMetrics
        width = metrics.horizontalAdvance(label) + 16
        height = min(option.rect.height() - 6, metrics.height() + 4)
        rect = QRectF(
            option.rect.x() + 6,
            option.rect.y() + (option.rect.height() - height) / 2,
            width,
            height,
        )
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(background))
        painter.drawRoundedRect(rect, height / 2, height / 2)
        painter.setPen(QColor(foreground))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width() + 24, size.height() + 4)


# --- the window ------------------------------------------------------------------------------


def _button(text: str, name: str, tip: str = "") -> QPushButton:
    button = QPushButton(text)
    button.setAccessibleName(name)
    if tip:
        button.setToolTip(tip)
    return button


class MemoryWindow(QWidget):
    """Facts, pending facts, anchors and the pause switch of the session's memory."""

    # The person's action finished (the status line says how); tests and the tray listen.
    changed = Signal()

    def __init__(self, assistant: QtSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.assistant = assistant
        self.setWindowTitle("Memory")  # Qt adds " — Chamberlain" (app/windows/words.py)
        self.setAccessibleName("Memory")
        resize_to_fit(self, 920, 640)  # at most what the screen holds
        self._reload = Coalesced(self._load)
        # The fact `show_fact` was asked for, selected once a reload has it.
        self._target: str | None = None
        # On the first reload after being shown: open on the tab that has something in it.
        self._choose_tab = True
        self._dialogs: list[QFileDialog] = []

        self.banner = QLabel("")

        self.banner.setTextFormat(Qt.TextFormat.PlainText)  # may quote what a model or file wrote
        self.banner.setWordWrap(True)
        self.banner.setAccessibleName("Memory is not available")
        self.banner.setMargin(8)
        self.banner.setAutoFillBackground(True)
        self.banner.setBackgroundRole(QPalette.ColorRole.AlternateBase)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search what is remembered")
        self.search.setAccessibleName("Search memory")
        self.search.setClearButtonEnabled(True)
        search_label = QLabel("&Search")
        search_label.setBuddy(self.search)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(250)
        self._search_timer.timeout.connect(self.request_refresh)
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.search.returnPressed.connect(self.request_refresh)

        self.pause = QCheckBox("&Pause memory (remember nothing new)")
        self.pause.setAccessibleName("Pause memory")
        self.pause.setToolTip(
            "While paused, nothing new is remembered; what is remembered is still used."
        )
        self.pause.setChecked(assistant.session.settings.memory.paused)
        self.pause.toggled.connect(lambda on: spawn(self.set_paused(on)))

        # Facts.
        self.facts_model = FactsModel(
            ["text", "sensitivity", "source", "created", "confirmed", "uses"], parent=self
        )
        self.facts_view = self._fact_table(self.facts_model, "Remembered facts")
        self.facts = EmptyOr(
            self.facts_view,
            "Nothing is remembered yet. Say “remember that …” in a request, or import an "
            "export; the facts appear here with how sensitive each is and where it came from.",
        )
        self.edit_button = _button("&Edit", "Edit the selected fact", "Edit the fact (F2)")
        self.forget_button = _button("F&orget…", "Forget the selected fact", "Delete it for good")
        self.export_button = _button("E&xport…", "Export memory to a file")
        self.import_button = _button("&Import…", "Import memory from an export file")
        self.more = QLabel("")
        facts_tab = QWidget()
        layout = QVBoxLayout(facts_tab)
        layout.addWidget(self.facts, 1)
        row = QHBoxLayout()
        for button in (self.edit_button, self.forget_button):
            row.addWidget(button)
        row.addWidget(self.more, 1)
        row.addWidget(self.export_button)
        row.addWidget(self.import_button)
        layout.addLayout(row)

        # Pending.
        self.pending_model = FactsModel(
            ["text", "sensitivity", "why", "source", "created"], parent=self
        )
        self.pending_view = self._fact_table(self.pending_model, "Facts waiting for approval")
        self.pending = EmptyOr(
            self.pending_view,
            "Nothing is waiting. Facts that look personal or secret, and imported ones, wait "
            "here until you approve them; until then they are never used.",
        )
        self.approve_button = _button("&Approve", "Approve the selected fact")
        self.edit_pending_button = _button(
            "Edi&t", "Edit the selected waiting fact", "Edit it (F2); an edited fact is approved"
        )
        self.reject_button = _button(
            "&Reject", "Reject the selected fact", "Delete it; nothing of it is kept"
        )
        pending_tab = QWidget()
        layout = QVBoxLayout(pending_tab)
        layout.addWidget(self.pending, 1)
        row = QHBoxLayout()
        for button in (self.approve_button, self.edit_pending_button, self.reject_button):
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)

        # Anchors.
        self.anchors_list = QListWidget()
        self.anchors_list.setAccessibleName("Anchors")
        self.anchors_list.setAccessibleDescription("Pinned notes, in the order they are sent")
        self.anchors_list.setSpacing(3)
        self.anchors_list.setAlternatingRowColors(True)
        self.anchors = EmptyOr(
            self.anchors_list,
            "No anchors. An anchor is a note you pin — “I prefer metric units” — that goes "
            "into every request, in order, within the budget below.",
        )
        self.budget_bar = QProgressBar()
        self.budget_bar.setAccessibleName("Anchor budget used")
        self.budget_bar.setTextVisible(False)
        self.budget_bar.setMaximumHeight(8)
        self.budget_label = QLabel("")
        self.budget_label.setWordWrap(True)
        self.anchor_input = QLineEdit()
        self.anchor_input.setPlaceholderText("A note to pin, e.g. “Answer in British English”")
        self.anchor_input.setAccessibleName("New anchor")
        anchor_label = QLabel("New an&chor")
        anchor_label.setBuddy(self.anchor_input)
        self.anchor_cost = QLabel("")
        self.pin_button = _button("Pi&n", "Pin the new anchor")
        self.unpin_button = _button("&Unpin", "Unpin the selected anchor")
        self.up_button = _button("&Move up", "Move the selected anchor up")
        self.down_button = _button("Move do&wn", "Move the selected anchor down")
        anchors_tab = QWidget()
        layout = QVBoxLayout(anchors_tab)
        layout.addWidget(self.anchors, 1)
        row = QHBoxLayout()
        for button in (self.up_button, self.down_button, self.unpin_button):
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.budget_bar)
        layout.addWidget(self.budget_label)
        row = QHBoxLayout()
        row.addWidget(anchor_label)
        row.addWidget(self.anchor_input, 1)
        row.addWidget(self.anchor_cost)
        row.addWidget(self.pin_button)
        layout.addLayout(row)

        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Memory sections")
        self.tabs.addTab(facts_tab, "&Facts")
        self.tabs.addTab(pending_tab, "Waiting for appro&val")
        self.tabs.addTab(anchors_tab, "Anc&hors")

        self.status = QLabel("")

        self.status.setTextFormat(Qt.TextFormat.PlainText)  # may quote what a model or file wrote
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Status")
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        top = QHBoxLayout()
        top.addWidget(search_label)
        top.addWidget(self.search, 1)
        top.addSpacing(12)
        top.addWidget(self.pause)
        main = QVBoxLayout(self)
        main.addWidget(self.banner)
        main.addLayout(top)
        main.addWidget(self.tabs, 1)
        main.addWidget(self.status)

        self.edit_button.clicked.connect(lambda: self._edit_selected(self.facts_view))
        self.edit_pending_button.clicked.connect(lambda: self._edit_selected(self.pending_view))
        self.forget_button.clicked.connect(self._forget_selected)
        self.approve_button.clicked.connect(self._approve_selected)
        self.reject_button.clicked.connect(self._reject_selected)
        self.export_button.clicked.connect(self.choose_export)
        self.import_button.clicked.connect(self.choose_import)
        self.pin_button.clicked.connect(lambda: spawn(self.pin(self.anchor_input.text())))
        self.anchor_input.returnPressed.connect(self.pin_button.click)
        self.anchor_input.textChanged.connect(self._show_anchor_cost)
        self.unpin_button.clicked.connect(lambda: spawn(self._unpin_selected()))
        self.up_button.clicked.connect(lambda: spawn(self._move_selected(-1)))
        self.down_button.clicked.connect(lambda: spawn(self._move_selected(+1)))
        self.anchors_list.currentRowChanged.connect(self._update_controls)
        for model in (self.facts_model, self.pending_model):
            model.edit_requested.connect(lambda fid, text: spawn(self.edit(fid, text)))
        for view in (self.facts_view, self.pending_view):
            view.selectionModel().selectionChanged.connect(self._update_controls)
        self._shortcut(QKeySequence.StandardKey.Delete, self.facts_view, self._forget_selected)
        self._shortcut(QKeySequence.StandardKey.Delete, self.pending_view, self._reject_selected)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Find), self, self.search.setFocus)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Refresh), self, self.request_refresh)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Close), self, self.close)
        assistant.memory_changed.connect(self._memory_changed)

        self._prompt: AnchorsPrompt | None = None
        self._anchors: list[Anchor] = []
        self._show_store_state()

    @staticmethod
    def _shortcut(key: QKeySequence.StandardKey, view: QWidget, slot: Callable[[], None]) -> None:
        shortcut = QShortcut(QKeySequence(key), view)
        shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
        shortcut.activated.connect(slot)

    def _fact_table(self, model: FactsModel, name: str) -> QTableView:
        view = table(model, name, "Select a fact to edit, approve or forget it")
        view.setEditTriggers(
            QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.DoubleClicked
        )
        view.setItemDelegateForColumn(model.columns.index("sensitivity"), BadgeDelegate(view))
        header = view.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in range(1, len(model.columns)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        return view

    # -- reading ---------------------------------------------------------------------------------

    @property
    def store(self) -> MemoryStore | None:
        return self.assistant.session.memory

    @property
    def budget(self) -> int:
        return self.assistant.session.settings.memory.anchor_budget_chars

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self._choose_tab = self._target is None
        self.request_refresh()

    def request_refresh(self) -> None:
        spawn(self.refresh())

    def _memory_changed(self, origin: object) -> None:
        # This window's own changes reloaded it already; a hidden one reloads when shown.
        if origin is not self and self.isVisible():
            self.request_refresh()

    def show_fact(self, fact_id: str) -> Awaitable[None]:
        """Read the store and select the fact `fact_id` on the tab where it is (a fact waiting
        for approval on "Waiting for approval"); say so when it is there no longer. Aimed at
        once (the reload a showing window starts finds it too); the reload is awaited."""
        self._target = fact_id
        self.search.clear()  # a search could hide it
        return self.refresh()

    async def refresh(self) -> None:
        """Read the store again (io thread). Asked for while one runs: once more after it."""
        await self._reload()

    async def _load(self) -> None:
        store = self.store
        self._show_store_state()
        if store is None:
            for model in (self.facts_model, self.pending_model):
                model.set_facts([])
            self._show_anchors([], None)
            return
        query, budget = self.search.text(), self.budget
        view = await self._call(
            "Memory could not be read", read_memory, store, query, budget, writes=False
        )
        if view is not None:
            self._show(view)

    def _show(self, view: MemoryView) -> None:
        selected = {
            name: fact.id if fact is not None else None
            for name, fact in (
                ("facts", self._selected(self.facts_view)),
                ("pending", self._selected(self.pending_view)),
            )
        }
        self.facts_model.set_facts(view.facts)
        self.pending_model.set_facts(view.pending)
        # A reload keeps what the person had selected (when it is still there).
        for name, fact_id in selected.items():
            if fact_id is not None:
                self._select(name, fact_id, focus=False)
        waiting = f" ({len(view.pending)})" if view.pending else ""
        self.tabs.setTabText(1, f"Waiting for appro&val{waiting}")
        query = self.search.text().strip()
        if query:
            self.facts.set_empty_text(f"No remembered fact matches “{query}”.")
            self.more.setText(f"{len(view.facts)} found")
        else:
            self.facts.set_empty_text(
                "Nothing is remembered yet. Say “remember that …” in a request, or import an "
                "export; the facts appear here with how sensitive each is and where it came from."
            )
            more = view.total - len(view.facts)
            self.more.setText(
                f"Showing the newest {len(view.facts)} of {view.total}; search to find the rest"
                if more > 0
                else f"{view.total} fact{'s' if view.total != 1 else ''}"
            )
        self._show_anchors(view.anchors, view.prompt)
        self._show_target(view)
        self._update_controls()

    def _show_target(self, view: MemoryView) -> None:
        target, self._target = self._target, None
        choose, self._choose_tab = self._choose_tab, False
        if target is not None:
            if self._select("pending", target) or self._select("facts", target):
                return
            self._say(
                "That memory is no longer waiting: it was approved, rejected or forgotten "
                "meanwhile."
            )
        elif choose and view.pending and not view.facts and not self.search.text().strip():
            self.tabs.setCurrentIndex(1)  # nothing to see on Facts; what waits is the news

    def _select(self, which: str, fact_id: str, *, focus: bool = True) -> bool:
        """Select `fact_id` in its table (and, with `focus`, bring its tab forward and give it
        the keyboard); False when that table does not have it."""
        model, view = (
            (self.facts_model, self.facts_view)
            if which == "facts"
            else (self.pending_model, self.pending_view)
        )
        row = model.row_of(fact_id)
        if row is None:
            return False
        view.selectRow(row)
        view.setCurrentIndex(model.index(row, 0))
        view.scrollTo(model.index(row, 0))
        if focus:
            self.tabs.setCurrentIndex(0 if which == "facts" else 1)
            view.setFocus()
        return True

    def _show_anchors(self, anchors: list[Anchor], prompt: AnchorsPrompt | None) -> None:
        self._anchors, self._prompt = anchors, prompt
        current = self.anchors_list.currentRow()
        self.anchors_list.clear()
        left_out = {a.id for a in prompt.omitted} if prompt else set()
        for anchor in anchors:
            text = f"{anchor.position + 1}. {anchor.text}"
            if anchor.id in left_out:
                text += "   (left out: no room in the budget)"
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, anchor.id)
            if anchor.id in left_out:
                item.setForeground(problem_color(self.palette()))
            self.anchors_list.addItem(item)
        self.anchors.update_state()
        if anchors:
            self.anchors_list.setCurrentRow(min(max(current, 0), len(anchors) - 1))
        budget = prompt.budget_chars if prompt else self.budget
        used = prompt.used_chars if prompt else 0
        self.budget_bar.setRange(0, max(1, budget))
        self.budget_bar.setValue(min(used, budget))
        text = f"Anchors use {used} of the {budget} characters they may add to every request."
        if prompt and prompt.omitted:
            text += f" {len(prompt.omitted)} left out for lack of room."
        self.budget_label.setText(text)
        self.budget_label.setAccessibleName(text)
        self._show_anchor_cost()

    def _show_anchor_cost(self, *_: object) -> None:
        text = self.anchor_input.text().strip()
        if not text or self._prompt is None:
            self.anchor_cost.setText("")
            return
        cost, left = anchor_room(self._prompt, text)
        self.anchor_cost.setText(f"needs {cost} of the {left} characters left")
        color = problem_color(self.palette()).name() if cost > left else ""
        self.anchor_cost.setStyleSheet(f"color: {color};" if color else "")

    def _show_store_state(self) -> None:
        problem = self.assistant.session.memory_problem
        closed = self.store is None
        if closed:
            text = f"Memory is not available: {problem}" if problem else NO_STORE
            self.banner.setText(text)
            self.banner.setAccessibleDescription(text)
        self.banner.setVisible(closed)
        self.search.setEnabled(not closed)
        self.anchor_input.setEnabled(not closed)
        for button in (self.export_button, self.import_button):
            button.setEnabled(not closed)
        self._update_controls()

    def _update_controls(self, *_: object) -> None:
        open_ = self.store is not None
        fact = self._selected(self.facts_view) is not None
        pending = self._selected(self.pending_view) is not None
        anchor = self.anchors_list.currentRow()
        self.edit_button.setEnabled(open_ and fact)
        self.forget_button.setEnabled(open_ and fact)
        for button in (self.approve_button, self.edit_pending_button, self.reject_button):
            button.setEnabled(open_ and pending)
        self.pin_button.setEnabled(open_)
        self.unpin_button.setEnabled(open_ and anchor >= 0)
        self.up_button.setEnabled(open_ and anchor > 0)
        self.down_button.setEnabled(open_ and 0 <= anchor < self.anchors_list.count() - 1)
        for view in (self.facts_view, self.pending_view):
            view.setEditTriggers(
                QAbstractItemView.EditTrigger.EditKeyPressed
                | QAbstractItemView.EditTrigger.DoubleClicked
                if open_
                else QAbstractItemView.EditTrigger.NoEditTriggers
            )

    # -- the person's actions ----------------------------------------------------------------------

    async def _call(
        self, failed: str, work: Callable[..., T], *args: Any, writes: bool = True
    ) -> T | None:
        """Run a store call on the io thread; a store error becomes the status line. A write
        (the default) tells the other windows that memory changed."""
        try:
            if writes:
                return await self.assistant.change_memory(self, work, *args)
            return await self.assistant.run_io(work, *args)
        except MemoryStoreError as exc:
            self._say(f"{failed}. {exc}" if failed else str(exc), problem=True)
        except OSError as exc:
            self._say(f"{failed}: {exc.strerror or exc}.", problem=True)
        return None

    def _selected(self, view: QTableView) -> Fact | None:
        rows = view.selectionModel().selectedRows()
        model = view.model()
        if not rows or not isinstance(model, FactsModel):
            return None
        return model.facts[rows[0].row()]

    def _edit_selected(self, view: QTableView) -> None:
        rows = view.selectionModel().selectedRows()
        if rows:
            view.setCurrentIndex(rows[0])
            view.edit(rows[0].siblingAtColumn(0))

    def _approve_selected(self) -> None:
        fact = self._selected(self.pending_view)
        if fact is not None:
            spawn(self.approve(fact.id))

    def _reject_selected(self) -> None:
        fact = self._selected(self.pending_view)
        if fact is not None:
            spawn(self.reject(fact.id))

    def _forget_selected(self) -> None:
        fact = self._selected(self.facts_view)
        if fact is not None:
            spawn(self.forget(fact.id))

    async def approve(self, fact_id: str) -> None:
        store = self.store
        if store is None:
            return
        fact = await self._call("The fact was not approved", store.approve, fact_id)
        if fact is not None:
            self._say(f"Approved: “{fact.text}”. Chamberlain can use it now.")
        await self._after_change()

    async def reject(self, fact_id: str) -> None:
        store = self.store
        if store is None:
            return
        done = await self._call("The fact was not rejected", _reject, store, fact_id)
        if done:
            self._say("Rejected; nothing of it is kept.")
        await self._after_change()

    async def forget(self, fact_id: str) -> None:
        store = self.store
        fact = next((f for f in self.facts_model.facts if f.id == fact_id), None)
        if store is None or fact is None:
            return
        if not await confirm(
            self,
            "Forget this fact?",
            f"Forget “{fact.text}” and every earlier version of it? This cannot be undone.",
            "Forget",
        ):
            return
        count = await self._call("The fact was not forgotten", store.forget, fact_id)
        if count:
            self._say(f"Forgot “{fact.text}”; its text is gone.")
        await self._after_change()

    async def edit(self, fact_id: str, text: str) -> None:
        store = self.store
        model, fact = self._find(fact_id)
        if store is None or model is None or fact is None:
            return
        new = await self._call("Your edit was not saved", edit_fact, store, fact, text)
        if new is None:
            # Nothing lost: the editor opens again with what was typed.
            model.unsaved[fact_id] = text
            row = model.row_of(fact_id)
            view = self.facts_view if model is self.facts_model else self.pending_view
            if row is not None:
                view.setCurrentIndex(model.index(row, 0))
                view.edit(model.index(row, 0))
            return
        model.unsaved.pop(fact_id, None)
        self._say(f"Saved your edit: “{new.text}”.")
        await self._after_change()

    def _find(self, fact_id: str) -> tuple[FactsModel | None, Fact | None]:
        for model in (self.facts_model, self.pending_model):
            row = model.row_of(fact_id)
            if row is not None:
                return model, model.facts[row]
        return None, None

    async def pin(self, text: str) -> None:
        store = self.store
        if store is None or not text.strip():
            return
        anchor = await self._call("", pin_anchor, store, text, self.budget)
        if anchor is None:
            return  # the text stays in the box, the status says why
        self.anchor_input.clear()
        self._say(f"Pinned: “{anchor.text}”.")
        await self._after_change()

    async def _unpin_selected(self) -> None:
        store, row = self.store, self.anchors_list.currentRow()
        if store is None or not 0 <= row < len(self._anchors):
            return
        anchor = self._anchors[row]
        await self._call("The anchor was not unpinned", store.remove_anchor, anchor.id)
        self._say(f"Unpinned: “{anchor.text}”.")
        await self._after_change()

    async def _move_selected(self, step: int) -> None:
        store, row = self.store, self.anchors_list.currentRow()
        if store is None or not 0 <= row < len(self._anchors):
            return
        anchor = self._anchors[row]
        moved = await self._call(
            "The anchor was not moved", store.move_anchor, anchor.id, row + step
        )
        await self._after_change()
        if moved is not None:
            self.anchors_list.setCurrentRow(moved.position)

    async def set_paused(self, paused: bool) -> None:
        """Pause or resume remembering, and save it (the session's writer sees it at once)."""
        session = self.assistant.session
        before = session.settings.memory.paused
        session.settings.memory.paused = paused
        try:
            await self.assistant.run_io(save_settings, session.home, session.settings)
        except OSError as exc:
            session.settings.memory.paused = before
            self.pause.blockSignals(True)
            self.pause.setChecked(before)
            self.pause.blockSignals(False)
            self._say(f"The setting was not saved: {exc.strerror or exc}.", problem=True)
            return
        self._say(
            "Memory is paused: nothing new is remembered until you resume it."
            if paused
            else "Memory is on again."
        )
        self.changed.emit()

    def choose_export(self) -> None:
        dialog = self._file_dialog("Export memory", QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix("json")
        dialog.filterSelected.connect(
            lambda chosen: dialog.setDefaultSuffix("md" if "*.md" in chosen else "json")
        )
        dialog.selectFile(str(Path.home() / "chamberlain-memory.json"))
        dialog.fileSelected.connect(lambda path: spawn(self.export_to(Path(path))))
        dialog.open()

    def choose_import(self) -> None:
        dialog = self._file_dialog("Import memory", QFileDialog.AcceptMode.AcceptOpen)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda path: spawn(self.import_from(Path(path))))
        dialog.open()

    def _file_dialog(self, title: str, mode: QFileDialog.AcceptMode) -> QFileDialog:
        dialog = QFileDialog(self, title, str(Path.home()))
        dialog.setObjectName(title)
        dialog.setAcceptMode(mode)
        dialog.setNameFilters(["Memory export (*.json)", "Readable Markdown (*.md)"])
        if mode is QFileDialog.AcceptMode.AcceptOpen:
            dialog.setNameFilters(["Memory export (*.json)", "All files (*)"])
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        return dialog

    async def export_to(self, path: Path) -> None:
        store = self.store
        if store is None:
            return
        count = await self._call(
            f"Nothing was exported to {path}", export_file, store, path, writes=False
        )
        if count is not None:
            self._say(f"Exported {count} fact{'s' if count != 1 else ''} to {path}.")
        self.changed.emit()

    async def import_from(self, path: Path) -> None:
        store = self.store
        if store is None:
            return
        facts = await self._call("Nothing was imported", import_file, store, path)
        if facts is not None:
            plural = "s" if len(facts) != 1 else ""
            self._say(
                f"Imported {len(facts)} fact{plural} from {path.name}; each waits for your "
                "approval under “Waiting for approval”."
            )
        await self._after_change()

    async def _after_change(self) -> None:
        await self.refresh()
        self.changed.emit()

    def _say(self, text: str, problem: bool = False) -> None:
        self.status.setText(text)
        self.status.setAccessibleDescription(text)
        color = problem_color(self.palette()).name() if problem else ""
        self.status.setStyleSheet(f"color: {color};" if color else "")


def _reject(store: MemoryStore, fact_id: str) -> bool:
    store.reject(fact_id)
    return True

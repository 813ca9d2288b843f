"""The furniture of every list window: a caption, a keyboard-friendly read-only table, and the
sentence that stands in for an empty list."""

from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHeaderView,
    QLabel,
    QStackedWidget,
    QTableView,
)


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

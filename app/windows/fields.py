"""A settings input with its explanation below it and its error (or a status note) under that:
the one field widget the Settings window and its MCP servers section share."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.windows.palette import good_color, problem_color


class SettingField(QWidget):
    """An input, its explanation below it, and the error beside it when it has one."""

    def __init__(self, editor: QWidget, hint: str = "", trailing: Sequence[QWidget] = ()) -> None:
        super().__init__()
        self.editor = editor
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        compact = editor.maximumWidth() < 1000
        row.addWidget(editor, 0 if compact else 1)
        for widget in trailing:
            row.addWidget(widget)
        if compact:
            row.addStretch(1)
        outer.addLayout(row)
        self.hint = QLabel(hint)
        self.hint.setWordWrap(True)
        self.hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.hint.setVisible(bool(hint))
        outer.addWidget(self.hint)
        self.error = QLabel()
        self.error.setTextFormat(Qt.TextFormat.PlainText)  # may quote what a model or file wrote
        self.error.setObjectName("field-error")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        outer.addWidget(self.error)

    def set_error(self, text: str | None) -> None:
        self.error.setText(text or "")
        self.error.setStyleSheet(f"color: {problem_color(self.palette()).name()};")
        self.error.setVisible(bool(text))
        self.hint.setVisible(bool(self.hint.text()))
        self.editor.setAccessibleDescription(text or self.hint.text())

    def set_note(self, text: str, *, good: bool = False, problem: bool = False) -> None:
        """A status line under the field (not an error of the value); it stands in for the
        hint while it is shown."""
        self.hint.setVisible(bool(self.hint.text()) and not text)
        color = (
            problem_color(self.palette()).name()
            if problem
            else good_color(self.palette()).name()
            if good
            else ""
        )
        self.error.setStyleSheet(f"color: {color};" if color else "")
        self.error.setText(text)
        self.error.setVisible(bool(text))

    @property
    def message(self) -> str:
        """What the field says under its input now (an error or a note), "" when nothing."""
        return self.error.text() if not self.error.isHidden() else ""

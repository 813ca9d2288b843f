"""About Chamberlain: which version this is, where its data lives, and what it runs on.

The version is the one number in pyproject.toml (app/version.py). Everything here is selectable
text, so a person can paste it into a bug report; nothing here changes anything.
"""

from __future__ import annotations

import platform

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.qt_session import QtSession
from app.tray import icon
from app.version import version

TAGLINE = "A desktop assistant that asks before it acts, and shows you everything it did."


def details(assistant: QtSession) -> str:
    """The facts a bug report wants, one per line."""
    session = assistant.session if assistant.started else None
    lines = [
        f"Chamberlain {version()}",
        f"Data folder: {session.home if session is not None else 'not open yet'}",
        f"Python {platform.python_version()}, Qt {qVersion()}, PySide6 {PySide6.__version__}",
        f"System: {platform.platform()}",
    ]
    if session is not None and session.model is not None:
        lines.append(f"Model: {session.model.name or 'the server default'}")
    return "\n".join(lines)


class AboutWindow(QWidget):
    def __init__(self, assistant: QtSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.assistant = assistant
        self.setWindowTitle("About")  # Qt adds " — Chamberlain" (app/windows/words.py)
        self.setAccessibleName("About Chamberlain")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 16, 20, 16)
        layout.setSpacing(10)
        heading = QHBoxLayout()
        mark = QLabel()
        mark.setPixmap(icon("chamberlain").pixmap(48, 48))
        mark.setAccessibleName("Chamberlain's icon")
        heading.addWidget(mark)
        title = QLabel(f"<h2>Chamberlain {version()}</h2>")
        title.setObjectName("about-title")
        title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        heading.addWidget(title, 1)
        layout.addLayout(heading)
        layout.addWidget(QLabel(TAGLINE))
        self.facts = QLabel()
        self.facts.setObjectName("about-details")
        self.facts.setTextFormat(Qt.TextFormat.PlainText)
        self.facts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.facts.setWordWrap(True)
        layout.addWidget(self.facts)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.copy = QPushButton("&Copy details")
        self.copy.clicked.connect(self._copy)
        buttons.addWidget(self.copy)
        close = QPushButton("Close")
        close.setDefault(True)
        close.clicked.connect(self.close)
        buttons.addWidget(close)
        layout.addLayout(buttons)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.close)
        self.refresh()

    def refresh(self) -> None:
        # The title says the version; the copied details say it too.
        self.facts.setText(details(self.assistant).split("\n", 1)[1])

    def showEvent(self, event: object) -> None:
        self.refresh()
        super().showEvent(event)  # type: ignore[arg-type]

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(details(self.assistant))

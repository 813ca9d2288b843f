"""The first-run window: what Chamberlain does, which model answers, how memory is kept, and
three requests to try.

DesktopApp shows it on the first start of a home, until the person closes it (the `WELCOMED`
file in the home, written on the io thread), and the tray menu's "Welcome…" opens it again. It
renders what the app itself found: the session's model once DesktopApp has connected it (on the
io thread, with broker.session.connect_model — the same model every request uses) and how the
memory that DesktopApp opened is keyed (broker.keys.recorded_keying, read on the io thread).

It must never look for a model of its own, change a setting or run a request: an example only
goes into the chat's input (`example_chosen`), where the person reads it and sends it. A model
name comes from a server: untrusted text, shown as plain text and shortened, never as markup.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.qt_session import QtSession
from app.tray import icon

if TYPE_CHECKING:
    from broker.llm.base import ChatModel

log = logging.getLogger("chamberlain.app.welcome")

# In the home: the person has closed the welcome once, so it no longer opens by itself.
WELCOMED = "welcomed"

TITLE = "Welcome"

DOES = (
    "Ask in the chat and Chamberlain does it on this computer: it finds and reads your files, "
    "tells you about the system, runs commands, opens files and web pages, searches the web and "
    "remembers what you tell it to."
)
ASKS = "It asks before it acts:"
ASKS_MORE = (
    " it shows you what it is about to do, and nothing is read, changed or run until you allow "
    "it — once, or for as long as you choose."
)
# Each works with any model, and with none: they are done directly, not by the model.
EXAMPLES = (
    "list files in ~/Documents",
    "how much disk space is free?",
    "remember that I prefer short answers",
)
# Without a Documents folder the first example would only say it is missing.
NO_DOCUMENTS_EXAMPLE = "list files in my home folder"

LOOKING = "Looking for a model…"
OPENING = "Opening memory…"
BETTER_MODEL = (
    "For better answers, start Ollama or LM Studio on this computer and choose its model in "
    "Settings → Model."
)
# A model name comes from a server; a long one is cut so it cannot set the window's width.
NAME_CHARS = 60


def welcomed(home: Path) -> bool:
    """Whether the person has closed the welcome window in this home before."""
    return (home / WELCOMED).exists()


def mark_welcomed(home: Path) -> None:
    """Remember that the welcome was closed (on the io thread). A home that cannot be written
    only means the welcome opens again next time: logged, not raised."""
    try:
        (home / WELCOMED).touch()
    except OSError as exc:
        log.warning("could not note that the welcome was seen: %s", exc)


def examples(user_home: Path) -> tuple[str, ...]:
    """The three requests to try, for this person's folders (a stat: on the io thread)."""
    if (user_home / "Documents").is_dir():
        return EXAMPLES
    return (NO_DOCUMENTS_EXAMPLE, *EXAMPLES[1:])


def _shortened(name: str) -> str:
    flat = " ".join(name.split())
    return flat if len(flat) <= NAME_CHARS else flat[: NAME_CHARS - 1] + "…"


def server_name(base_url: str) -> str | None:
    """The local server a base URL points at when it is one of those Chamberlain looks for on
    its usual port ("Ollama" for 127.0.0.1:11434), else None. Nothing is contacted."""
    from broker.llm import endpoints

    if not endpoints.is_loopback_url(base_url):
        return None
    try:
        port = urlsplit(base_url).port
    except ValueError:
        return None
    return next((name for name, usual in endpoints.PROBE_PORTS if usual == port), None)


def model_words(model: ChatModel | None, problem: str | None) -> str:
    """Which model answers, for a person, and how to get a better one where that helps."""
    if model is None:
        why = (problem or "No model is connected.").strip()
        return f"No model answers yet. {why} The examples below work without one. {BETTER_MODEL}"
    name = _shortened(model.name) if model.name else "the server's default model"
    if model.is_embedded:
        return (
            f"The embedded model, {name}, answers: a small model that runs offline on this "
            f"computer and manages simple requests. {BETTER_MODEL}"
        )
    base_url = str(getattr(model, "base_url", ""))
    found = server_name(base_url)
    if found is not None:
        where = urlsplit(base_url).netloc
        return f"{name} answers, from {found} on this computer ({where})."
    if model.is_loopback:
        return f"{name} answers, from the model server at {base_url} on this computer."
    return (
        f"{name} answers, from the model server at {base_url}. It is not on this computer: "
        "what you ask is sent there."
    )


def memory_words(keyed_by: str | None, problem: str | None) -> str:
    """How what Chamberlain remembers is kept, for a person."""
    if problem:
        return f"Memory is not open this time, so nothing is remembered: {problem.rstrip('.')}."
    if keyed_by == "keyring":
        return (
            "What Chamberlain remembers is encrypted; its key is kept in your system keyring, "
            "so no passphrase is asked for."
        )
    if keyed_by == "passphrase":
        return (
            "What Chamberlain remembers is encrypted with the passphrase you chose (there is "
            "no system keyring here). It is asked for at each start and cannot be recovered if "
            "forgotten."
        )
    if keyed_by == "none":
        return "What Chamberlain remembers is not encrypted: you chose to keep it unencrypted."
    return "What Chamberlain remembers is kept on this computer."


@dataclass(frozen=True)
class Found:
    """What DesktopApp has finished finding: the model (connected or not), memory (open or
    not). Until then the window says it is still looking."""

    model: bool = False
    memory: bool = False


def _caption(text: str, more: str = "") -> QLabel:
    label = QLabel(f"<b>{html.escape(text)}</b>{html.escape(more)}")
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setWordWrap(True)
    return label


def _paragraph(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class WelcomeWindow(QWidget):
    """The welcome: it renders; DesktopApp connects its signals."""

    # An example's request, for the chat's input (the window stays open behind the chat).
    example_chosen = Signal(str)
    # "Model settings…": open Settings, where the model is chosen.
    settings_requested = Signal()
    # The person closed the window: it no longer opens by itself.
    dismissed = Signal()

    # Wide enough that the examples sit in one row and no paragraph wraps past three lines, so
    # the window fits a 1280×800 screen at 1.5× scale.
    WIDTH = 700

    def __init__(
        self, assistant: QtSession, *, from_tray: bool = True, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.assistant = assistant
        self.found = Found()
        self._filling: asyncio.Future[None] | None = None
        self.setWindowTitle(TITLE)
        self.setAccessibleName("Welcome to Chamberlain")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 12, 18, 12)
        layout.setSpacing(4)

        heading = QHBoxLayout()
        mark = QLabel()
        mark.setPixmap(icon("chamberlain").pixmap(36, 36))
        mark.setAccessibleName("Chamberlain's icon")
        heading.addWidget(mark)
        title = QLabel("<h2>Welcome to Chamberlain</h2>")
        title.setTextFormat(Qt.TextFormat.RichText)
        heading.addWidget(title, 1)
        layout.addLayout(heading)
        self.does = _paragraph(DOES)
        layout.addWidget(self.does)
        layout.addSpacing(4)
        self.asks = _caption(ASKS, ASKS_MORE)
        layout.addWidget(self.asks)

        layout.addSpacing(10)
        layout.addWidget(_caption("Which model answers"))
        self.model_line = _paragraph(LOOKING)
        self.model_line.setObjectName("welcome-model")
        self.model_line.setAccessibleDescription("Which model answers")
        self.model_settings = QPushButton("&Model settings…")
        self.model_settings.setAccessibleName("Open Settings to choose the model")
        self.model_settings.clicked.connect(self.settings_requested.emit)
        row = QHBoxLayout()
        row.addWidget(self.model_line, 1)
        row.addWidget(self.model_settings, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(row)

        layout.addSpacing(10)
        layout.addWidget(_caption("Memory"))
        self.memory_line = _paragraph(OPENING)
        self.memory_line.setObjectName("welcome-memory")
        self.memory_line.setAccessibleDescription("Memory")
        layout.addWidget(self.memory_line)

        layout.addSpacing(10)
        layout.addWidget(
            _caption("Try one", " — it goes into the chat's message box; press Enter there to ask.")
        )
        examples_row = QHBoxLayout()
        self.example_buttons: list[QPushButton] = []
        for _ in EXAMPLES:
            button = QPushButton()
            button.clicked.connect(lambda _=False, b=button: self._chosen(b))
            examples_row.addWidget(button)
            self.example_buttons.append(button)
        examples_row.addStretch(1)
        layout.addLayout(examples_row)
        self._show_examples(EXAMPLES)

        layout.addSpacing(10)
        footer = QHBoxLayout()
        again = (
            "Open this again from the tray menu: Welcome…"
            if from_tray
            else "Settings → Model changes the model later."
        )
        self.again = _paragraph(again)
        footer.addWidget(self.again, 1)
        self.close_button = QPushButton("&Close")
        self.close_button.setAccessibleName("Close the welcome")
        self.close_button.clicked.connect(self.close)
        footer.addWidget(self.close_button)
        layout.addLayout(footer)

        # Enter on whichever button has the focus presses it (outside a dialog, Qt presses a
        # focused button on Enter only when it is an auto-default one).
        for button in (self.model_settings, *self.example_buttons, self.close_button):
            button.setAutoDefault(True)
        order = [self.model_settings, *self.example_buttons, self.close_button]
        for first, second in itertools.pairwise(order):
            QWidget.setTabOrder(first, second)
        self.example_buttons[0].setFocus()
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.close)
        self.setMinimumWidth(self.WIDTH)
        self._fit()

    def _fit(self) -> None:
        """As tall as the text needs at this width (a wrapped label's own guess is taller)."""
        layout = self.layout()
        assert layout is not None
        layout.activate()
        self.resize(self.width() if self.isVisible() else self.WIDTH, 1)
        self.resize(self.width(), layout.totalHeightForWidth(self.width()))

    # -- what the app found ------------------------------------------------------------------------

    def set_found(self, found: Found) -> None:
        """DesktopApp has finished finding more: say it (now if shown, else when shown)."""
        self.found = found
        if self.isVisible():
            self._fill_soon()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        # Said again at each show: Settings may have changed the model since.
        self._fill_soon()

    def _fill_soon(self) -> None:
        if self._filling is not None and not self._filling.done():
            self._filling.cancel()
        self._filling = asyncio.ensure_future(self.fill())

    async def fill(self) -> None:
        """Say what has been found so far; what blocks (reading files) runs on the io thread."""
        if not self.assistant.started:
            return
        session = self.assistant.session
        found = self.found
        self.model_line.setText(
            model_words(session.model, session.model_problem) if found.model else LOOKING
        )
        self.model_settings.setVisible(found.model)
        from broker.keys import recorded_keying

        def read() -> tuple[str | None, tuple[str, ...]]:
            return recorded_keying(session.home), examples(Path.home())

        keyed_by, tried = await self.assistant.run_io(read)
        self._show_examples(tried)
        if not found.memory:
            self.memory_line.setText(OPENING)
        elif session.memory is None:
            problem = session.memory_problem or "it could not be opened"
            self.memory_line.setText(memory_words(None, problem))
        else:
            self.memory_line.setText(memory_words(keyed_by, None))
        self._fit()

    # -- the person's choices ----------------------------------------------------------------------

    def _show_examples(self, requests: tuple[str, ...]) -> None:
        # Letters the other buttons' mnemonics use; each example takes its first free letter.
        used = {"m", "c"}
        for button, request in zip(self.example_buttons, requests, strict=True):
            button.setProperty("request", request)
            label = request.replace("&", "&&")
            for index, char in enumerate(label):
                if char.isalpha() and char.lower() not in used:
                    used.add(char.lower())
                    label = label[:index] + "&" + label[index:]
                    break
            button.setText(label)
            button.setAccessibleName(f"Put “{request}” in the chat")

    def _chosen(self, button: QPushButton) -> None:
        self.example_chosen.emit(str(button.property("request")))

    def closeEvent(self, event: QCloseEvent) -> None:
        super().closeEvent(event)
        if event.isAccepted():
            self.dismissed.emit()

"""The chat transcript: messages, tool cards, memory lines and notices, built lazily.

A transcript is a list of entries (plain data) and a widget for each entry that is on show.
Only the newest entries get widgets when a conversation opens; older ones are built a page at a
time as the person scrolls up, and the oldest widgets are dropped again while the view follows
the newest message. So a chat of thousands of messages costs about as much to append to, and to
open, as a short one (`python -m bench.chat_window` measures it).

Replies are markdown rendered by QTextDocument. A rendered reply never fetches anything (no
image, no file, no URL: `loadResource` answers nothing) and a link opens nothing by itself: it is
handed to the window (`link_activated`), which decides. A reply's fenced code blocks are shown
apart from its text, each with its lines as written (scrolling sideways, never wrapped or cut)
and a Copy button. Text runs no wider than a readable measure (MEASURE_CHARS), and a long
message the person pasted shows its first lines until they ask for all of it. This module keeps
no conversation and calls nothing of the broker's; the window feeds it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QFont,
    QFontDatabase,
    QGuiApplication,
    QKeyEvent,
    QPalette,
    QResizeEvent,
    QTextCursor,
    QTextDocument,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.chat_entries import (
    FULL_RESULT_CHARS,
    Entry,
    MemoryEntry,
    NoticeEntry,
    ReplyEntry,
    ToolEntry,
    UserEntry,
)
from app.windows.palette import good_color, problem_color
from app.windows.words import capability_words, tool_words
from tools.escapes import visible

# Widgets built when a conversation opens, and per page while scrolling up.
PAGE = 24
# While following the newest message, widgets beyond this many are dropped (rebuilt on demand).
MAX_LIVE = 120
# A tool result shows this much until "Show more"; and never more than FULL_RESULT_CHARS.
RESULT_PREVIEW_CHARS = 1200
RESULT_PREVIEW_LINES = 20
# Text lines run no wider than about this many characters: past ~100 the eye loses its place
# going back to the next line's start (the transcript's column is centred in a wider window).
MEASURE_CHARS = 96
# A message of the person's longer than this (lines, or characters) shows its first
# PASTE_PREVIEW_LINES lines (at most PASTE_PREVIEW_CHARS) until "Show all N lines".
PASTE_COLLAPSE_LINES = 12
PASTE_COLLAPSE_CHARS = 1500
PASTE_PREVIEW_LINES = 8
PASTE_PREVIEW_CHARS = 800
# How long a Copy button says "Copied" before it offers to copy again.
COPIED_MS = 1500
STYLE = """
#userBubble { background: palette(alternate-base); border: 1px solid palette(midlight);
              border-radius: 10px; }
#toolCard { background: palette(base); border: 1px solid palette(mid); border-radius: 8px; }
#toolCard[state="denied"], #toolCard[state="refused"], #toolCard[state="error"],
#toolCard[state="timeout"] { border-color: %(problem)s; }
#toolResult { background: palette(alternate-base); border-radius: 4px; padding: 6px; }
#notice { color: palette(placeholder-text); }
#notice[tone="error"] { color: %(problem)s; }
#notice[tone="warning"] { color: palette(text); }
#memoryLine { background: palette(alternate-base); border-radius: 6px; }
#reply[failed="true"] { border-left: 3px solid %(problem)s; padding-left: 6px; }
#details { color: palette(placeholder-text); }
QToolButton#disclosure { border: 1px solid transparent; color: palette(link); padding: 0 2px; }
QToolButton#disclosure:focus { border: 1px solid palette(highlight); border-radius: 3px; }
QPushButton#linkButton { border: 1px solid transparent; color: palette(link);
                         text-decoration: underline; padding: 0 4px; background: transparent; }
QPushButton#linkButton:focus { border: 1px solid palette(highlight); border-radius: 3px; }
#codeBlock { background: palette(alternate-base); border: 1px solid palette(midlight);
             border-radius: 6px; }
#codeLanguage { color: palette(placeholder-text); }
"""


# -- widgets ------------------------------------------------------------------------------------


_NO_HTML = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)


def _direction(text: str) -> Qt.LayoutDirection:
    """The direction of a message: that of its first letter with one (Unicode's rule for a
    paragraph); markdown's own marks (#, -, `) have none. Auto when no letter has one."""
    for ch in text:
        kind = unicodedata.bidirectional(ch)
        if kind == "L":
            return Qt.LayoutDirection.LeftToRight
        if kind in ("R", "AL"):
            return Qt.LayoutDirection.RightToLeft
    return Qt.LayoutDirection.LayoutDirectionAuto


class MarkdownView(QTextBrowser):
    """A reply rendered from markdown, as tall as its text, that loads and opens nothing."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.viewport().setAutoFillBackground(False)
        # Transparent through the palette: a style sheet per reply costs a style polish each.
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Base, Qt.GlobalColor.transparent)
        self.setPalette(palette)
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.document().setDocumentMargin(2)
        self._markdown = ""
        self._plain = False
        # Height by width, for as long as the text and the font stay: the transcript asks every
        # reply at two or three widths on each append (with and without the scroll bar, the
        # measure's column), and each answer worked out lays the whole document out again.
        self._heights: dict[int, int] = {}
        self.document().contentsChanged.connect(self._heights.clear)

    def set_markdown(self, text: str, *, plain: bool = False) -> None:
        """Render `text` as markdown, or (`plain`) as preformatted text, e.g. a tool's own
        listing, whose columns markdown would run together."""
        if text == self._markdown and plain == self._plain:
            return
        self._markdown, self._plain = text, plain
        if plain:
            self.setCurrentFont(_monospace())
            self.setPlainText(text)
        else:
            # One direction for the whole reply, from its first letter that has one, as chat
            # apps set a message's: left to right, a list item that is only a Hebrew file name
            # would otherwise flip to the right edge on its own, its ".txt" first.
            option = self.document().defaultTextOption()
            option.setTextDirection(_direction(text))
            self.document().setDefaultTextOption(option)
            # No raw HTML: a reply (the model's, perhaps echoing a web page) could otherwise hide
            # text (`<span style="font-size:0">`) or dress a link up as something else.
            self.document().setMarkdown(text, _NO_HTML)
            _wrap_code(self.document())
        self.updateGeometry()

    def loadResource(self, kind: int, name: QUrl | str) -> Any:
        # Images, style sheets, files: a reply never makes the app read or fetch anything.
        return None

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        height = self._heights.get(width)
        if height is None:
            document = self.document()
            frame = 2 * self.frameWidth()
            document.setTextWidth(max(1, width - frame))
            height = math.ceil(document.size().height()) + frame
            self._heights[width] = height
        return height

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._heights.clear()
        super().changeEvent(event)

    def sizeHint(self) -> QSize:
        width = max(self.width(), 200)
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        return QSize(50, self.heightForWidth(max(self.width(), 200)))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.updateGeometry()


def _wrap_code(document: QTextDocument) -> None:
    """Let the code markdown leaves in the text (an indented block, a fence inside a list) wrap:
    Qt marks its lines unbreakable, and this view has no sideways scroll bar, so they would be
    cut off at the right edge. The fenced blocks of a reply are shown apart (CodeBlock)."""
    block = document.begin()
    while block.isValid():
        form = block.blockFormat()
        if form.nonBreakableLines():
            form.setNonBreakableLines(False)
            QTextCursor(block).setBlockFormat(form)
        block = block.next()


# A fence opens a code block: three or more backticks or tildes, indented at most three spaces
# (CommonMark); what follows a backtick fence may not hold a backtick.
_FENCE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Segment:
    """A piece of a reply: markdown text, or a fenced code block (its lines and language)."""

    text: str
    code: bool = False
    language: str = ""


def split_code(markdown: str) -> list[Segment]:
    """`markdown` cut at its fenced code blocks, in order; always starting with a text segment
    (empty when the reply opens with code). A fence still open (a reply streaming in, or one
    never closed) runs to the end, as CommonMark reads it."""
    segments: list[Segment] = []
    text: list[str] = []
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        opening = _FENCE_RE.match(lines[index])
        info = opening.group(3).strip() if opening else ""
        if opening is None or (opening.group(2)[0] == "`" and "`" in info):
            text.append(lines[index])
            index += 1
            continue
        indent, fence = len(opening.group(1)), opening.group(2)
        code: list[str] = []
        index += 1
        while index < len(lines):
            closing = _FENCE_RE.match(lines[index])
            if (
                closing is not None
                and closing.group(2)[0] == fence[0]
                and len(closing.group(2)) >= len(fence)
                and not closing.group(3).strip()
            ):
                index += 1
                break
            # Up to the fence's own indent is taken off each line, as CommonMark does.
            line = lines[index]
            strip = len(line) - len(line.lstrip(" "))
            code.append(line[min(indent, strip) :])
            index += 1
        if text or not segments:
            segments.append(Segment("\n".join(text)))
            text = []
        segments.append(Segment("\n".join(code), code=True, language=info.split(" ")[0]))
    if text or not segments:
        segments.append(Segment("\n".join(text)))
    return segments


class CodeView(QPlainTextEdit):
    """A code block's lines as written: never wrapped, scrolled sideways when longer than the
    room there is (a wrapped line of code reads as two lines, which in a shell command or
    Python changes what it says), exactly as tall as its lines; read-only, selectable with the
    mouse and the keyboard, Tab moves on."""

    def __init__(self) -> None:
        super().__init__()
        self.setReadOnly(True)
        self.setTabChangesFocus(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.setFont(_monospace())
        self.setAccessibleName("Code")
        self.viewport().setAutoFillBackground(False)
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Base, Qt.GlobalColor.transparent)
        self.setPalette(palette)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.horizontalScrollBar().rangeChanged.connect(lambda *_: self._fit())

    def set_code(self, code: str) -> None:
        if code != self.toPlainText():
            self.setPlainText(code)
            self._fit()

    def _fit(self) -> None:
        lines = max(1, self.document().blockCount())
        height = lines * self.fontMetrics().lineSpacing()
        height += 2 * int(self.document().documentMargin()) + 2 * self.frameWidth() + 2
        bar = self.horizontalScrollBar()
        if bar.maximum() > 0:
            height += bar.sizeHint().height()
        if self.height() != height:
            self.setFixedHeight(height)

    def wheelEvent(self, event: QWheelEvent) -> None:
        # Up and down scroll the conversation (this view is never taller than its lines);
        # only a sideways turn of the wheel (or Shift) scrolls the code.
        delta = event.angleDelta()
        bar = self.horizontalScrollBar()
        if abs(delta.x()) > abs(delta.y()):
            super().wheelEvent(event)
        elif event.modifiers() & Qt.KeyboardModifier.ShiftModifier and bar.maximum() > 0:
            bar.setValue(bar.value() - delta.y() * 3 * bar.singleStep() // 120)
            event.accept()
        else:
            event.ignore()


class CodeBlock(QFrame):
    """A fenced code block of a reply: its language (when the reply named one), Copy, and the
    code (CodeView)."""

    def __init__(self, segment: Segment) -> None:
        super().__init__()
        self.setObjectName("codeBlock")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.setSpacing(2)
        heading = QHBoxLayout()
        heading.setContentsMargins(0, 0, 0, 0)
        self.language = _label(wrap=False)
        self.language.setObjectName("codeLanguage")
        heading.addWidget(self.language)
        heading.addStretch(1)
        self.copy = QPushButton("Copy")
        self.copy.setAccessibleName("Copy code")
        self.copy.setToolTip("Copy this code to the clipboard")
        self.copy.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.copy.setAutoDefault(False)
        self.copy.clicked.connect(self.copy_code)
        heading.addWidget(self.copy)
        layout.addLayout(heading)
        self.code = CodeView()
        layout.addWidget(self.code)
        self._copied = QTimer(self)
        self._copied.setSingleShot(True)
        self._copied.setInterval(COPIED_MS)
        self._copied.timeout.connect(lambda: self.copy.setText("Copy"))
        self.set_segment(segment)

    def set_segment(self, segment: Segment) -> None:
        # The model names the language: shown escaped and short, never as markup.
        language = visible(segment.language)[:40]
        self.language.setText(language)
        self.language.setVisible(bool(language))
        self.code.setAccessibleName(f"Code ({language})" if language else "Code")
        self.code.set_code(segment.text)

    def copy_code(self) -> None:
        """Put exactly the block's code on the clipboard (no fence, no language)."""
        QGuiApplication.clipboard().setText(self.code.toPlainText())
        self.copy.setText("Copied")
        self._copied.start()


class ElidedLabel(QLabel):
    """One line of text cut with "…" to the room there is, so a long text never sets how wide
    its window must be; the whole text is in the tooltip and the accessible name. `text()`
    answers the whole text."""

    def __init__(self, text: str = "", description: str = "") -> None:
        super().__init__()
        self._full = ""
        self.setAccessibleDescription(description)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = text
        self.setToolTip(text)
        self.setAccessibleName(text)
        self._elide()

    def text(self) -> str:
        return self._full

    def minimumSizeHint(self) -> QSize:
        return QSize(
            self.fontMetrics().horizontalAdvance("…") * 4, super().minimumSizeHint().height()
        )

    def sizeHint(self) -> QSize:
        return QSize(
            self.fontMetrics().horizontalAdvance(self._full) + 4, super().sizeHint().height()
        )

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(
            self._full, Qt.TextElideMode.ElideRight, max(0, self.contentsRect().width())
        )
        super().setText(shown)


def _label(text: str = "", *, selectable: bool = False, wrap: bool = True) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(wrap)
    label.setTextFormat(Qt.TextFormat.PlainText)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _link_button(text: str, accessible: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName("linkButton")
    button.setFlat(True)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setAccessibleName(accessible)
    button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    return button


def _restyle(widget: QWidget) -> None:
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)


class UserBubble(QWidget):
    """The person's message, in a bubble on the right; a long paste shows its first lines and
    "Show all N lines" (a button, so Tab reaches it) until they ask for all of it."""

    def __init__(self, entry: UserEntry) -> None:
        super().__init__()
        self.entry = entry
        row = QHBoxLayout(self)
        row.setContentsMargins(80, 0, 0, 0)
        row.addStretch(1)
        self.bubble = QFrame()
        self.bubble.setObjectName("userBubble")
        inner = QVBoxLayout(self.bubble)
        inner.setContentsMargins(12, 8, 12, 8)
        inner.setSpacing(4)
        self.label = _BubbleLabel()
        self.label.setAccessibleName("Your message")
        inner.addWidget(self.label)
        lines = entry.body.splitlines() or [""]
        self.collapsible = (
            len(lines) > PASTE_COLLAPSE_LINES or len(entry.body) > PASTE_COLLAPSE_CHARS
        )
        # Only a long message has the toggle (most have none: appending stays cheap).
        self.toggle: QPushButton | None = None
        if self.collapsible:
            self.toggle = _link_button("", "")
            self.toggle.clicked.connect(self._toggle)
            inner.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        row.addWidget(self.bubble)
        self._lines = len(lines)
        self._show()

    def _toggle(self) -> None:
        self.entry.expanded = not self.entry.expanded
        self._show()

    def _show(self) -> None:
        body = self.entry.body
        if not self.collapsible or self.entry.expanded:
            self.label.setText(body)
        else:
            preview = "\n".join(body.splitlines()[:PASTE_PREVIEW_LINES])[:PASTE_PREVIEW_CHARS]
            self.label.setText(preview.rstrip() + "\n…")
        if self.toggle is not None:
            if self.entry.expanded:
                words, name = "Show fewer lines", "Show only the first lines of your message"
            elif self._lines > 1:
                words = name = f"Show all {self._lines:,} lines"
            else:
                words = name = f"Show all {len(body):,} characters"
            self.toggle.setText(words)
            self.toggle.setAccessibleName(name)


class _BubbleLabel(QLabel):
    """The person's words, wrapped: as wide as its longest line up to the room there is (a
    wrapped QLabel would ask for a narrow, tall shape), and never asking for more room than a
    few words, so the window can always be made narrower."""

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._natural = 0
        # Asked on every layout of the transcript: worked out once per text.
        self._hint: QSize | None = None

    def setText(self, text: str) -> None:
        metrics = self.fontMetrics()
        self._natural = max(metrics.horizontalAdvance(line) for line in text.split("\n")) + 4
        self._hint = None
        super().setText(text)
        self.updateGeometry()

    def sizeHint(self) -> QSize:
        if self._hint is None:
            width = max(self.minimumSizeHint().width(), self._natural)
            self._hint = QSize(width, self.heightForWidth(width))
        return self._hint

    def minimumSizeHint(self) -> QSize:
        # The height comes from heightForWidth at the width the layout gives.
        width = min(self._natural, self.fontMetrics().averageCharWidth() * 12)
        return QSize(width, self.fontMetrics().lineSpacing())


class ReplyBubble(QWidget):
    """The assistant's reply (markdown) and, on demand, the turn's details."""

    def __init__(self, entry: ReplyEntry, on_link: Callable[[QUrl], None]) -> None:
        super().__init__()
        self.entry = entry
        self.setObjectName("reply")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(2)
        self._on_link = on_link
        # The reply's text and its fenced code blocks, in order (`view` is the first text).
        self.parts = QVBoxLayout()
        self.parts.setContentsMargins(0, 0, 0, 0)
        self.parts.setSpacing(4)
        layout.addLayout(self.parts)
        self.view = self._text_part()
        self.parts.addWidget(self.view)
        self._segments: list[Segment] = [Segment("")]
        self.details_button = QToolButton()
        self.details_button.setObjectName("disclosure")
        self.details_button.setText("Details")
        self.details_button.setCheckable(True)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setAccessibleName("Show how this request was handled")
        self.details_button.toggled.connect(self._toggle_details)
        layout.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.details = _label(selectable=True)
        self.details.setObjectName("details")
        self.details.setAccessibleName("How this request was handled")
        self.details.setContentsMargins(14, 0, 0, 4)
        self.details.hide()
        layout.addWidget(self.details)
        self.refresh()

    def _text_part(self) -> MarkdownView:
        view = MarkdownView()
        view.setAccessibleName("Chamberlain's reply")
        view.anchorClicked.connect(self._on_link)
        return view

    def _show_body(self) -> None:
        entry = self.entry
        segments = [Segment(entry.body)] if entry.plain else split_code(entry.body)
        # The parts up to where the shape changed (a fence opened or closed while the reply
        # streams in) stay; those after it are built again. The first text part (`view`) stays.
        same = 1
        for old, new in zip(self._segments[1:], segments[1:], strict=False):
            if old.code != new.code:
                break
            same += 1
        while self.parts.count() > same:
            item = self.parts.takeAt(same)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for segment in segments[same:]:
            self.parts.addWidget(CodeBlock(segment) if segment.code else self._text_part())
        self._segments = segments
        for index, segment in enumerate(segments):
            item = self.parts.itemAt(index)
            widget = item.widget() if item is not None else None
            if isinstance(widget, CodeBlock):
                widget.set_segment(segment)
            elif isinstance(widget, MarkdownView):
                widget.set_markdown(segment.text, plain=entry.plain)
                widget.setVisible(bool(segment.text.strip()))

    def _parts(self) -> list[QWidget]:
        items = (self.parts.itemAt(index) for index in range(self.parts.count()))
        return [w for item in items if item is not None and (w := item.widget()) is not None]

    def code_blocks(self) -> list[CodeBlock]:
        return [widget for widget in self._parts() if isinstance(widget, CodeBlock)]

    def plain_text(self) -> str:
        """The reply as a screen reader reads it: its text and its code, in order."""
        said = []
        for widget in self._parts():
            if isinstance(widget, CodeBlock):
                said.append(widget.code.toPlainText())
            elif isinstance(widget, MarkdownView) and not widget.isHidden():
                said.append(widget.toPlainText())
        return "\n".join(said)

    def refresh(self) -> None:
        entry = self.entry
        self._show_body()
        failed = entry.status == "failed"
        if bool(self.property("failed")) != failed:
            self.setProperty("failed", failed)
            _restyle(self)
        self.details_button.setVisible(entry.details is not None and entry.status != "streaming")
        if entry.details is not None:
            self.details.setText("\n".join(entry.details.lines()))

    def _toggle_details(self, shown: bool) -> None:
        self.details_button.setArrowType(
            Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow
        )
        self.details.setVisible(shown)


def _monospace() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


class ToolCard(QFrame):
    """One tool call: what ran, with what, how it ended, and (on demand) what it returned."""

    def __init__(self, entry: ToolEntry) -> None:
        super().__init__()
        self.entry = entry
        self.setObjectName("toolCard")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(3)

        heading = QHBoxLayout()
        heading.setSpacing(8)
        self.tool = _label(wrap=False)
        bold = self.tool.font()
        bold.setBold(True)
        self.tool.setFont(bold)
        self.capability = _label(wrap=False)
        self.capability.setObjectName("notice")
        self.spinner = QProgressBar()
        self.spinner.setRange(0, 0)
        self.spinner.setTextVisible(False)
        self.spinner.setFixedSize(40, 6)
        self.spinner.setAccessibleName("Running")
        self.status = _label(wrap=False)
        self.status.setAccessibleName("Status")
        self.duration = _label(wrap=False)
        self.duration.setObjectName("notice")
        heading.addWidget(self.tool)
        heading.addWidget(self.capability)
        heading.addStretch(1)
        heading.addWidget(self.spinner, 0, Qt.AlignmentFlag.AlignVCenter)
        heading.addWidget(self.status)
        heading.addWidget(self.duration)
        layout.addLayout(heading)

        self.summary = _label(selectable=True)
        self.summary.setFont(_monospace())
        self.summary.setAccessibleName("Arguments")
        layout.addWidget(self.summary)
        self.reason = _label(selectable=True)
        self.reason.setAccessibleName("Why it did not run")
        layout.addWidget(self.reason)

        self.toggle = QToolButton()
        self.toggle.setObjectName("disclosure")
        self.toggle.setText("Result")
        self.toggle.setCheckable(True)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setAccessibleName("Show the tool's result")
        self.toggle.toggled.connect(self._toggled)
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        self.result = _label(selectable=True)
        self.result.setObjectName("toolResult")
        self.result.setFont(_monospace())
        self.result.setAccessibleName("The tool's result")
        layout.addWidget(self.result)
        self.more = _link_button("Show more", "Show the whole result")
        self.more.clicked.connect(self._show_more)
        layout.addWidget(self.more, 0, Qt.AlignmentFlag.AlignLeft)
        self.refresh()

    def refresh(self) -> None:
        call = self.entry.call
        # The tool in words ("List a folder"); a name the model made up is shown escaped.
        tool = visible(tool_words(call.tool))
        self.tool.setText(tool)
        words = capability_words(call.capability) if call.capability else ""
        self.capability.setText(words)
        self.capability.setVisible(bool(words))
        running = call.status == "running"
        self.spinner.setVisible(running)
        status = call.status_words()
        self.status.setText(status)
        tint = {"ok": good_color, "running": None}.get(call.status, problem_color)
        if tint is not None:
            self.status.setStyleSheet(f"color: {tint(self.palette()).name()};")
        # A call that never ran (denied, refused, unanswered) has no duration.
        self.duration.setText(_duration(call.duration_s) if call.duration_s is not None else "")
        self.summary.setText(call.summary)
        self.summary.setVisible(bool(call.summary))
        reason = call.reason_words()
        self.reason.setText(reason)
        self.reason.setVisible(bool(reason))
        if self.property("state") != call.status:
            self.setProperty("state", call.status)
            _restyle(self)
        self.setAccessibleName(f"{tool}: {status}")
        has_result = call.result is not None and bool(call.result.strip())
        self.toggle.setVisible(has_result)
        self.toggle.setChecked(self.entry.expanded and has_result)
        self._show_result()

    def status_text(self) -> str:
        return self.status.text()

    def _toggled(self, expanded: bool) -> None:
        self.entry.expanded = expanded
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self._show_result()

    def _show_more(self) -> None:
        self.entry.full = True
        self._show_result()

    def _show_result(self) -> None:
        result = self.entry.call.result or ""
        shown = self.entry.expanded and bool(result.strip())
        self.result.setVisible(shown)
        if not shown:
            self.more.hide()
            return
        preview, cut = _preview(result, full=self.entry.full)
        self.result.setText(preview)
        self.more.setVisible(cut and not self.entry.full)


def _preview(text: str, *, full: bool) -> tuple[str, bool]:
    """The result as shown: the first lines (or all, up to the cap); and whether it was cut."""
    if full:
        cut = len(text) > FULL_RESULT_CHARS
        shown = text[:FULL_RESULT_CHARS]
        return (shown + "\n… (cut at 100,000 characters)" if cut else shown), cut
    lines = text.splitlines()
    shown = "\n".join(lines[:RESULT_PREVIEW_LINES])[:RESULT_PREVIEW_CHARS]
    cut = len(shown) < len(text.rstrip("\n"))
    return (shown + "\n…" if cut else shown), cut


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


class NoticeLine(QLabel):
    def __init__(self, entry: NoticeEntry) -> None:
        super().__init__(entry.body)
        self.setObjectName("notice")
        self.setProperty("tone", entry.tone)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setContentsMargins(6, 2, 6, 2)
        if entry.tone in ("error", "stopped"):
            font = self.font()
            font.setItalic(entry.tone == "stopped")
            font.setBold(entry.tone == "error")
            self.setFont(font)


class FactEditor(QLineEdit):
    """Where the person writes a fact in their own words: Enter saves, Esc puts it back (and
    does not hide the window, as Esc does elsewhere in the chat)."""

    save = Signal()
    cancel = Signal()

    def event(self, event: QEvent) -> bool:
        override = event.type() == QEvent.Type.ShortcutOverride
        if override and isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape:
            event.accept()  # ours, not the window's Esc shortcut
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.cancel.emit()
        elif event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.save.emit()
        else:
            super().keyPressEvent(event)


# The memory line's buttons: (attribute, words with their mnemonic, accessible name).
MEMORY_BUTTONS = (
    ("approve", "&Approve", "Approve: remember this"),
    ("edit", "&Edit…", "Edit this memory before it is remembered"),
    ("reject", "&Reject", "Reject: remember nothing of this"),
)


class MemoryLine(QFrame):
    """What memory did with one fact, and what the person can do about it: Approve, Edit… and
    Reject while it waits for consent, Undo once it is remembered. The window does the work and
    calls `refresh`."""

    undo_requested = Signal(object)  # the MemoryEntry
    approve_requested = Signal(object)
    reject_requested = Signal(object)
    edit_requested = Signal(object, str)  # the MemoryEntry, the person's text
    remember_requested = Signal(object)  # an offered MemoryEntry: the person's yes

    def __init__(self, entry: MemoryEntry) -> None:
        super().__init__()
        self.entry = entry
        self.setObjectName("memoryLine")
        self.setAccessibleName("Memory")
        column = QVBoxLayout(self)
        column.setContentsMargins(8, 4, 8, 4)
        column.setSpacing(4)
        layout = QHBoxLayout()
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = _label(selectable=True)
        self.label.setAccessibleName("Memory")
        layout.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        for key, words, name in MEMORY_BUTTONS:
            button = QPushButton(words.replace("&", ""))
            button.setAccessibleName(name)
            button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
            layout.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
            self.buttons[key] = button
        self.approve, self.edit, self.reject = (self.buttons[k] for k, _, _ in MEMORY_BUTTONS)
        self.approve.clicked.connect(lambda: self.approve_requested.emit(self.entry))
        self.reject.clicked.connect(lambda: self.reject_requested.emit(self.entry))
        self.edit.clicked.connect(self.start_editing)
        self.undo = _link_button("Undo", "Forget this again")
        self.undo.clicked.connect(lambda: self.undo_requested.emit(self.entry))
        layout.addWidget(self.undo, 0, Qt.AlignmentFlag.AlignTop)
        # A fact the person stated that nothing kept: one click remembers it (as "remember
        # that …" would, with its checks and consent).
        self.remember = QPushButton("Remember")
        self.remember.setAccessibleName("Remember this")
        self.remember.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.remember.clicked.connect(lambda: self.remember_requested.emit(self.entry))
        layout.addWidget(self.remember, 0, Qt.AlignmentFlag.AlignTop)
        column.addLayout(layout)

        self.editor_row = QWidget()
        editing = QHBoxLayout(self.editor_row)
        editing.setContentsMargins(0, 0, 0, 0)
        self.editor = FactEditor()
        self.editor.setAccessibleName("What to remember")
        self.editor.setAccessibleDescription("Enter saves and remembers it, Esc cancels")
        self.editor.save.connect(self._save)
        self.editor.cancel.connect(self.stop_editing)
        self.save = QPushButton("Save")
        self.save.setAccessibleName("Save and remember this text")
        self.save.clicked.connect(self._save)
        self.cancel = QPushButton("Cancel")
        self.cancel.setAccessibleName("Cancel editing")
        self.cancel.clicked.connect(self.stop_editing)
        editing.addWidget(self.editor, 1)
        editing.addWidget(self.save)
        editing.addWidget(self.cancel)
        column.addWidget(self.editor_row)
        self._mnemonics = (False, False)
        self.refresh()

    def set_mnemonics(self, consent: bool, undo: bool) -> None:
        """Alt+A/E/R (`consent`) and Alt+U (`undo`) on this line. Only the newest line offering
        each has them, so a key never means two things."""
        if (consent, undo) == self._mnemonics:
            return
        self._mnemonics = (consent, undo)
        for key, words, _ in MEMORY_BUTTONS:
            self.buttons[key].setText(words if consent else words.replace("&", ""))
        self._undo_words()

    def _undo_words(self) -> None:
        """Undo on a fact just kept (Alt+U), Forget on one the person asked to forget (Alt+G),
        on the newest line that has the button."""
        forget = self.entry.state == "forgettable"
        words = "For&get" if forget else "&Undo"
        self.undo.setText(words if self._mnemonics[1] else words.replace("&", ""))
        self.undo.setAccessibleName("Forget this fact" if forget else "Forget this again")

    def start_editing(self) -> None:
        entry = self.entry
        if entry.state != "waiting" or entry.busy:
            return
        entry.editing = True
        self.editor.setText(entry.text)
        self.refresh()
        self.editor.setFocus()
        self.editor.selectAll()

    def stop_editing(self) -> None:
        self.entry.editing = False
        self.refresh()
        if self.edit.isVisible():
            self.edit.setFocus()

    def _save(self) -> None:
        text = self.editor.text().strip()
        if not text or self.entry.busy:
            return
        if text == self.entry.text:
            self.approve_requested.emit(self.entry)  # unchanged: what they approve is this
        else:
            self.edit_requested.emit(self.entry, text)

    def refresh(self) -> None:
        entry = self.entry
        text = entry.body
        for said in (entry.note, entry.problem):
            if said:
                text = f"{text}  —  {said}"
        self.label.setText(text)
        waiting = entry.state == "waiting" and entry.fact_id is not None
        for button in self.buttons.values():
            button.setVisible(waiting and not entry.editing)
            button.setEnabled(not entry.busy)
        self.editor_row.setVisible(waiting and entry.editing)
        for control in (self.editor, self.save, self.cancel):
            control.setEnabled(not entry.busy)
        self._undo_words()
        self.undo.setVisible(entry.state in ("kept", "forgettable") and entry.fact_id is not None)
        self.undo.setEnabled(not entry.busy)
        self.remember.setVisible(entry.state == "offered")
        self.remember.setEnabled(not entry.busy)
        if entry.text:
            for button in (*self.buttons.values(), self.undo, self.remember):
                button.setAccessibleDescription(entry.text)


# -- the transcript -----------------------------------------------------------------------------


class Transcript(QScrollArea):
    """The entries of one conversation, newest at the bottom; see the module docstring."""

    link_activated = Signal(QUrl)
    undo_requested = Signal(object)  # a MemoryEntry
    approve_requested = Signal(object)  # a MemoryEntry
    reject_requested = Signal(object)  # a MemoryEntry
    edit_requested = Signal(object, str)  # a MemoryEntry, the person's text
    remember_requested = Signal(object)  # an offered MemoryEntry

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAccessibleName("Conversation")
        self.entries: list[Entry] = []
        # entries[first:last] have widgets (and only they).
        self.first = 0
        self.last = 0
        self._follow = True
        # While widgets are being built or dropped around what is on show: a widget on show and
        # how far below the view's top edge it was, so it stays put as the layout changes.
        self._anchor: tuple[QWidget, int] | None = None
        self._adjusting = False
        self._page_queued = False
        body = QWidget()
        body.setObjectName("transcriptBody")
        body.setStyleSheet(STYLE % {"problem": problem_color(self.palette()).name()})
        self._layout = QVBoxLayout(body)
        self._layout.setContentsMargins(14, 10, 14, 10)
        self._layout.setSpacing(8)
        self.earlier = _link_button("Show earlier messages", "Show earlier messages")
        self.earlier.clicked.connect(self.show_earlier)
        self.earlier.hide()
        self._layout.addWidget(self.earlier, 0, Qt.AlignmentFlag.AlignHCenter)
        self.placeholder = QLabel("Ask Chamberlain something, or pick a past conversation.")
        self.placeholder.setObjectName("notice")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._layout.addWidget(self.placeholder)
        self.later = _link_button("Show newer messages", "Show newer messages")
        self.later.clicked.connect(self.show_later)
        self.later.hide()
        self._layout.addWidget(self.later, 0, Qt.AlignmentFlag.AlignHCenter)
        self._layout.addStretch(1)
        self.setWidget(body)
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._range_changed)
        bar.valueChanged.connect(self._scrolled)

    def measure(self) -> int:
        """How wide the column of entries may be: MEASURE_CHARS of the text's font, with a
        reply's margins."""
        return self.fontMetrics().averageCharWidth() * MEASURE_CHARS + 2 * 4

    def resizeEvent(self, event: QResizeEvent) -> None:
        # The entries stand in a column no wider than the measure, centred in a wider window:
        # wide side margins, rather than a nested layout that every append would lay out again.
        # From the scroll area's width (the viewport's changes as the scroll bar comes and goes,
        # and margins that followed it would lay everything out again each time).
        room = self.width() - 2 * self.frameWidth() - self.verticalScrollBar().sizeHint().width()
        side = max(14, (room - self.measure()) // 2)
        if self._layout.contentsMargins().left() != side:
            self._layout.setContentsMargins(side, 10, side, 10)
        super().resizeEvent(event)

    # -- contents --

    def clear(self) -> None:
        for entry in self.entries[self.first : self.last]:
            self._drop(entry)
        self.entries = []
        self.first = self.last = 0
        self._follow = True
        self._update_ends()

    def load(self, entries: list[Entry]) -> None:
        """Show a whole conversation: widgets for its newest page only."""
        self.setUpdatesEnabled(False)
        try:
            self.clear()
            self.entries = list(entries)
            self.first = self.last = len(self.entries)
            self._build_above(max(0, len(self.entries) - PAGE))
        finally:
            self.setUpdatesEnabled(True)
        self.scroll_to_bottom()

    def append(self, entry: Entry) -> QWidget | None:
        """Add `entry` at the bottom, and follow it unless the person scrolled up. It gets a
        widget when the newest messages are on show (None otherwise, until they are)."""
        self.entries.append(entry)
        if self.last != len(self.entries) - 1:
            self._update_ends()
            return None
        widget = self._build(entry)
        self._layout.insertWidget(self._bottom_index(), widget)
        self.last += 1
        if self._follow:
            self._drop_above(self.last - self.first - MAX_LIVE)
        self._update_ends()
        return widget

    def refresh(self, entry: Entry) -> None:
        """Redraw `entry` after its data changed (nothing to do when it is not on show)."""
        widget = entry.widget
        if isinstance(widget, ReplyBubble | ToolCard | MemoryLine):
            widget.refresh()
        if isinstance(widget, MemoryLine):
            self._assign_mnemonics()

    def memory_entries(self) -> list[MemoryEntry]:
        """The memory lines of this conversation that offer something (buttons), on show or
        not."""
        return [
            e
            for e in self.entries
            if isinstance(e, MemoryEntry)
            and e.fact_id
            and e.state in ("waiting", "kept", "forgettable")
        ]

    def _assign_mnemonics(self) -> None:
        lines = [e.widget for e in self.entries[self.first : self.last]]
        memory = [w for w in lines if isinstance(w, MemoryLine) and w.entry.fact_id]
        waiting = next((w for w in reversed(memory) if w.entry.state == "waiting"), None)
        kept = next((w for w in reversed(memory) if w.entry.state in ("kept", "forgettable")), None)
        for line in memory:
            line.set_mnemonics(line is waiting, line is kept)

    def text(self) -> str:
        """Everything on show, as plain text, in order (what a screen reader would read)."""
        parts = []
        for entry in self.entries[self.first : self.last]:
            widget = entry.widget
            if isinstance(widget, ReplyBubble):
                parts.append(widget.plain_text())
            elif isinstance(widget, UserBubble):
                parts.append(widget.label.text())
            elif isinstance(widget, ToolCard):
                parts.append(" ".join(lbl.text() for lbl in widget.findChildren(QLabel)))
            elif isinstance(widget, MemoryLine):
                parts.append(widget.label.text())
            elif isinstance(widget, QLabel):
                parts.append(widget.text())
        return "\n".join(p for p in parts if p)

    def widgets(self) -> list[QWidget]:
        return [e.widget for e in self.entries[self.first : self.last] if e.widget is not None]

    # -- scrolling --

    def scroll_to_bottom(self) -> None:
        """Show the newest message (building the newest page again if it was dropped)."""
        if self.last < len(self.entries):
            self.load(self.entries)
            return
        self._release_anchor()
        self._follow = True
        self._set_value(self.verticalScrollBar().maximum())

    def at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def show_earlier(self) -> int:
        """Build the previous page of widgets, keeping what is on screen where it is; drop the
        newest ones beyond MAX_LIVE (they are built again on the way back down)."""
        if self.first == 0:
            return 0
        self._hold(self.entries[self.first].widget)
        self._follow = False
        before = self.first
        self._build_above(max(0, self.first - PAGE))
        self._drop_below(self.last - self.first - MAX_LIVE)
        self._update_ends()
        return before - self.first

    def show_later(self) -> int:
        """Build the next page of widgets below, dropping the oldest beyond MAX_LIVE."""
        if self.last >= len(self.entries):
            return 0
        self._hold(self.entries[self.last - 1].widget if self.last > self.first else None)
        before = self.last
        for entry in self.entries[self.last : min(len(self.entries), self.last + PAGE)]:
            self._layout.insertWidget(self._bottom_index(), self._build(entry))
            self.last += 1
        self._drop_above(self.last - self.first - MAX_LIVE)
        self._update_ends()
        return self.last - before

    def _hold(self, widget: QWidget | None) -> None:
        self._release_anchor()
        if widget is not None:
            self._anchor = (widget, widget.y() - self.verticalScrollBar().value())
            widget.installEventFilter(self)

    def _bottom_index(self) -> int:
        """Where the newest live widget goes in the layout: before "newer", the stretch."""
        return self._layout.count() - 2

    def _build_above(self, start: int) -> None:
        """Give entries[start:first] widgets, above the ones on show."""
        for offset, entry in enumerate(self.entries[start : self.first]):
            self._layout.insertWidget(2 + offset, self._build(entry))
        if start < self.first:
            self.first = start
        self._update_ends()

    def _drop_above(self, count: int) -> None:
        for entry in self.entries[self.first : self.first + max(0, count)]:
            self._drop(entry)
            self.first += 1

    def _drop_below(self, count: int) -> None:
        for entry in reversed(self.entries[self.last - max(0, count) : self.last]):
            self._drop(entry)
            self.last -= 1

    def _update_ends(self) -> None:
        self._assign_mnemonics()
        self.earlier.setVisible(self.first > 0)
        self.later.setVisible(self.last < len(self.entries))
        self.placeholder.setVisible(not self.entries)

    def _drop(self, entry: Entry) -> None:
        if entry.widget is not None:
            if self._anchor is not None and self._anchor[0] is entry.widget:
                self._release_anchor()
            self._layout.removeWidget(entry.widget)
            entry.widget.deleteLater()
            entry.widget = None

    def _range_changed(self, minimum: int, maximum: int) -> None:
        if self._anchor is not None:
            self._hold_anchor()
        elif self._follow:
            self._set_value(maximum)

    def _hold_anchor(self) -> None:
        if self._anchor is not None:
            widget, offset = self._anchor
            self._set_value(widget.y() - offset)

    def _release_anchor(self) -> None:
        if self._anchor is not None:
            self._anchor[0].removeEventFilter(self)
            self._anchor = None

    def _set_value(self, value: int) -> None:
        self._adjusting = True
        try:
            self.verticalScrollBar().setValue(value)
        finally:
            self._adjusting = False

    def _scrolled(self, value: int) -> None:
        if self._adjusting:
            return
        self._release_anchor()  # the person scrolled: what they see now is theirs to move
        self._follow = self.at_bottom()
        bar = self.verticalScrollBar()
        ends = (value == 0 and self.first > 0) or (
            value == bar.maximum() and self.last < len(self.entries)
        )
        if ends and not self._page_queued:
            # Reaching either end builds the next page there (after this scroll settles).
            self._page_queued = True
            QTimer.singleShot(0, self._page)

    def _page(self) -> None:
        self._page_queued = False
        bar = self.verticalScrollBar()
        if bar.value() == 0:
            self.show_earlier()
        elif bar.value() == bar.maximum():
            self.show_later()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # The anchor moves down when the layout places the new widgets above it, which may be
        # after the scroll bar's range changed: hold it there too.
        anchor = self._anchor
        if anchor is not None and watched is anchor[0] and event.type() == QEvent.Type.Move:
            self._hold_anchor()
        return super().eventFilter(watched, event)

    # -- widgets --

    def _build(self, entry: Entry) -> QWidget:
        widget: QWidget
        if isinstance(entry, UserEntry):
            widget = UserBubble(entry)
        elif isinstance(entry, ReplyEntry):
            widget = ReplyBubble(entry, self.link_activated.emit)
        elif isinstance(entry, ToolEntry):
            widget = ToolCard(entry)
        elif isinstance(entry, MemoryEntry):
            line = MemoryLine(entry)
            line.undo_requested.connect(self.undo_requested.emit)
            line.approve_requested.connect(self.approve_requested.emit)
            line.reject_requested.connect(self.reject_requested.emit)
            line.edit_requested.connect(self.edit_requested.emit)
            line.remember_requested.connect(self.remember_requested.emit)
            widget = line
        elif isinstance(entry, NoticeEntry):
            widget = NoticeLine(entry)
        else:
            raise TypeError(f"no widget for {type(entry).__name__}")
        entry.widget = widget
        return widget

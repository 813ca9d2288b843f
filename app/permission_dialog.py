"""The permission dialog: one question (its `QuestionView`), rendered so a person can answer it.

It says what is asked in plain words, who asked for it (the person's own words, or the model on
its own mid-turn, shown with a warning accent), the exact path, command, site or display, how
risky and how reversible it is; offers the answers the question allows; and counts down to the
denial it ends in when nobody answers.

Guarantees a person relies on: nothing is allowed until `ACTIVATION_DELAY_S` after the dialog
is really on screen — counted from when the window system exposes its window (a window manager
or compositor may map it well after `show()`), so a click or keystroke meant for another window
cannot approve; Deny, Esc and closing the window all deny at once; Enter denies unless the
focused button is the Allow button; the dialog stays on top but never takes the keyboard focus
when it appears, so it is announced instead (an accessible alert carrying the question in words).

It renders and forwards; what may be offered and what each answer decides is the question's
(`app.permission_prompt`). It never calls `QDialog.exec()` nor starts a nested loop: it is not
modal, and is shown at once in the slot that received the question and awaited as
`app.async_dialog.show_dialog` awaits a dialog (`open_question`). The app keeps one dialog made
ready (`spare_dialog`): it is filled in with one question only, never shown empty or reused.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import shiboken6
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import (
    QAccessible,
    QAccessibleAnnouncementEvent,
    QAccessibleEvent,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QImage,
    QPainter,
    QPaintEvent,
    QPalette,
    QPen,
    QShowEvent,
    QTextOption,
    QWindow,
)
from PySide6.QtWidgets import (
    QApplication,
    QButtonGroup,
    QComboBox,
    QDialog,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QStyle,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.permission_prompt import TIMED_MINUTES, Choice, QuestionView
from app.prompt_view import (
    Row,
    always_words,
    covers_note,
    no_always_words,
    once_only_words,
    prompt_rows,
)
from app.windows.words import action_words
from broker.permissions import PromptDecision
from tools.escapes import visible

# Seconds after the dialog appears before any Allow can be pressed.
ACTIVATION_DELAY_S = 0.8

# The one colour of its own: the accent of a request to be wary of (the model asked on its own,
# or the highest risk). Everything else follows the system palette, light or dark.
WARNING_ACCENT = "#d97706"

_RISK = {
    "safe": "Low",
    "moderate": "Medium",
    "dangerous": "High: it can do serious harm",
}

_UNDO = {
    "easy": "Easy to undo",
    "effort": "Can be undone, with some effort",
    "irreversible": "Cannot be undone",
}

_MODEL_INITIATED_NOTE = (
    "You did not ask for this. The assistant wants to do it on its own, partway through your "
    "request. Allow it only if you expected it."
)

_HIGH_RISK_NOTE = "This is a high-risk action. Read the details before you allow it."

# Detail rows a dialog is built with before it knows its question: a command's plan shows up
# to seven (Command, Folder, Can read, Can change, Will change, Network, Limits); a question
# with more gets them made when it is filled in.
_SPARE_SLOTS = 7


def duration_words(minutes: float) -> str:
    if minutes >= 60 and minutes % 60 == 0:
        hours = int(minutes // 60)
        return f"{hours} hour" + ("" if hours == 1 else "s")
    return f"{minutes:g} min"


def always_rule_words(question: QuestionView) -> str:
    """The rule "Always allow" saves, in words: "Always allow reading files in /home/ann"."""
    return always_words(question.request)


class _ExactText(QTextEdit):
    """Text that must be seen whole (a command, a path, an argument): plain text in the fixed
    font, wrapped anywhere, never elided. Up to `MAX_LINES` lines it is as tall as its text;
    a longer value (a file's content sent to an MCP tool) scrolls inside its box, whole. (A
    QLabel breaks lines only where Unicode allows, so a long file name without spaces or
    slashes would widen the dialog instead.)"""

    MAX_LINES = 12

    def __init__(self, plain: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setAcceptRichText(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.document().setDocumentMargin(4)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._heights: dict[int, int] = {}
        self.show_text(plain, name)

    def show_text(self, plain: str, name: str) -> None:
        # Plain text, always: a value the model chose may hold markup (`<a href…>`) that Qt
        # would otherwise render and so hide or disguise what is asked.
        self.setPlainText(plain)
        self.setAccessibleName(name)
        self.setAccessibleDescription(plain)
        self._heights.clear()
        # A QTextEdit's hint does not follow its text; this one's height does.
        self.updateGeometry()

    def hasHeightForWidth(self) -> bool:
        return True

    def full_height(self, width: int) -> int:
        """The height the whole text needs at `width`, unscrolled."""
        document = self.document().clone(self)
        document.setTextWidth(max(1, width - 2 * self.frameWidth()))
        height = math.ceil(document.size().height()) + 2 * self.frameWidth()
        document.deleteLater()
        return height

    def heightForWidth(self, width: int) -> int:
        if width not in self._heights:
            cap = self.fontMetrics().lineSpacing() * self.MAX_LINES + 8 + 2 * self.frameWidth()
            self._heights[width] = min(self.full_height(width), cap)
        return self._heights[width]

    def sizeHint(self) -> QSize:
        return QSize(320, self.heightForWidth(320))

    def minimumSizeHint(self) -> QSize:
        return QSize(160, self.heightForWidth(160))


def _secondary(label: QLabel) -> QLabel:
    """A label in the palette's dimmer text colour (follows light and dark themes)."""
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    return label


def _wrapping(text: str) -> QLabel:
    """Plain text, always: a path or command the model chose may hold markup (`<a href…>`,
    `<span style=…>`) that Qt would otherwise render and so hide or disguise what is asked."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class _Body(QScrollArea):
    """The question's details and choices: as tall as they need where the screen allows,
    scrolling vertically where it does not. A QScrollArea's own hint is capped at 24 lines and
    knows nothing of wrapped text; this one reports the height its content needs at a width."""

    def __init__(self) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidgetResizable(True)
        # Set while still empty: the content's controls are made in place, since moving a
        # finished tree of them into the scroll area cost ~2 ms (a third of building it all).
        self.content = QWidget()
        self.content.setAttribute(Qt.WidgetAttribute.WA_Resized, True)
        self.setWidget(self.content)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        content = self.widget()
        layout = content.layout() if content is not None else None
        if layout is None:
            return super().heightForWidth(width)
        # A layout's height for a width leaves out what its boxes need at least (an exact-text
        # box, the separator): the content is never shorter than its minimum, so neither is this.
        inner = width - 2 * self.frameWidth()
        needed = max(layout.totalHeightForWidth(inner), layout.totalMinimumSize().height())
        return needed + 2 * self.frameWidth()

    def sizeHint(self) -> QSize:
        content = self.widget()
        width = content.sizeHint().width() if content is not None else 320
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        # A few lines at least; below that the whole dialog would be of no use anyway.
        return QSize(160, self.fontMetrics().lineSpacing() * 4)


class _FocusRing(QWidget):
    """A ring around whichever control of the dialog has the keyboard focus, in any style.

    Fusion marks focus with a hairline in the same colour as a default button's border, and
    Deny is always the default, so focus on Deny could not be seen at all; this ring is 2 px of
    the palette's highlight, just outside the control. It draws nothing while the dialog is not
    the active window (it never takes the focus by itself)."""

    MARGIN = 3

    def __init__(self, dialog: QDialog, body: QScrollArea) -> None:
        super().__init__(dialog)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.target: QWidget | None = None
        # A control in the scrolling body moves when it scrolls, and is cut at its edges.
        self._body = body
        body.verticalScrollBar().valueChanged.connect(self._place)
        self.hide()
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._follow)

    def _follow(self, _old: QWidget | None, new: QWidget | None) -> None:
        dialog = self.parentWidget()
        # The focus also moves while the dialog's controls are being destroyed.
        if self.target is not None and shiboken6.isValid(self.target):
            self.target.removeEventFilter(self)
        self.target = None
        if new is None or dialog is None or not dialog.isAncestorOf(new):
            self.hide()
            return
        self.target = new
        new.installEventFilter(self)
        self._place()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.target and event.type() in (
            QEvent.Type.Move,
            QEvent.Type.Resize,
            QEvent.Type.Show,
            QEvent.Type.Hide,
        ):
            self._place()
        return super().eventFilter(watched, event)

    def _place(self) -> None:
        dialog = self.parentWidget()
        target = self.target
        if dialog is None or target is None or not target.isVisible():
            self.hide()
            return
        size = target.size()
        if isinstance(target, QRadioButton):
            # Around the circle and its words, not the empty width of its grid column.
            size.setWidth(min(size.width(), target.sizeHint().width()))
        where = QRect(target.mapTo(dialog, QPoint(0, 0)), size)
        margin = self.MARGIN
        ring = where.adjusted(-margin, -margin, margin, margin)
        viewport = self._body.viewport()
        if viewport.isAncestorOf(target):
            seen = QRect(viewport.mapTo(dialog, QPoint(0, 0)), viewport.size())
            ring = ring.intersected(seen.adjusted(-margin, 0, margin, 0))
            if ring.isEmpty():
                self.hide()
                return
        self.setGeometry(ring)
        self.raise_()
        self.show()
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Highlight), 2))
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(1, 1, -1, -1), 4, 4)
        painter.end()


@dataclass(frozen=True)
class _RowSlot:
    """A detail row of the form, as two form rows of which a question shows one (or none):
    boxed exact text, or wrapped words; each with its own name label."""

    exact_name: QLabel
    exact: _ExactText
    plain_name: QLabel
    plain: QLabel


class PermissionDialog(QDialog):
    """Renders one QuestionView; every way it closes answers the question."""

    question: QuestionView

    def __init__(
        self,
        question: QuestionView | None,
        *,
        activation_delay_s: float = ACTIVATION_DELAY_S,
        arm_timer: QTimer | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """`arm_timer` counts the activation delay (a test passes one whose time it moves).

        With `question` None the dialog is a spare: every control is built (and polished, and
        its native window made) while the app is idle, and `bind` fills it with a question
        later — once — so that a question reaches the screen without waiting for ~30 controls
        to be built (`spare_dialog`, `bench/prompt_latency.py`)."""
        super().__init__(parent)
        self._bound = False
        self._armed = False
        self._announced = False
        # The native window whose exposure starts the activation delay (see `_watch_exposure`).
        self._watched: QWindow | None = None
        self._closing = False
        self._sized = False
        self._build()
        if question is not None:
            self.bind(question, activation_delay_s=activation_delay_s, arm_timer=arm_timer)

    # -- building: every control any question may need, empty and hidden where optional ---------

    def _build(self) -> None:
        self.setWindowTitle("Permission needed — Chamberlain")
        self.setWindowFlags(
            Qt.WindowType.Dialog
            | Qt.WindowType.WindowStaysOnTopHint
            | Qt.WindowType.WindowTitleHint
            | Qt.WindowType.WindowCloseButtonHint
        )
        # On top, but the keyboard stays where the person was typing.
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setMinimumWidth(500)

        root = QVBoxLayout(self)
        root.setContentsMargins(22, 20, 22, 16)
        root.setSpacing(14)

        # -- headline ---------------------------------------------------------------------------
        self.headline = QLabel()
        font = QFont(self.headline.font())
        font.setBold(True)
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * 1.3)
        else:  # a font sized in pixels
            font.setPixelSize(round(font.pixelSize() * 1.3))
        self.headline.setFont(font)
        self.headline.setWordWrap(True)
        heading = QVBoxLayout()
        heading.setSpacing(2)
        heading.addWidget(self.headline)
        self.waiting_label = _secondary(QLabel())
        heading.addWidget(self.waiting_label)
        root.addLayout(heading)

        # -- the caution, shown when there is reason for it --------------------------------------
        # `warning` and `warning_text` name it only while it is shown.
        self.warning: QFrame | None = None
        self.warning_text: QLabel | None = None
        self._caution, self._caution_text = self._caution_frame()
        self._caution.setVisible(False)
        root.addWidget(self._caution)

        # -- the details ------------------------------------------------------------------------
        details = QFormLayout()
        details.setHorizontalSpacing(14)
        details.setVerticalSpacing(7)
        details.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        details.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        details.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
        self._details = details
        self._what = _wrapping("")
        self._add_row(details, "What", self._what)
        # The question's own rows go between What and Why, each in a slot of two form rows
        # (boxed exact text, or wrapped words) of which one is shown; more are made if needed.
        self._slots: list[_RowSlot] = []
        for _ in range(_SPARE_SLOTS):
            self._add_slot()
        self._why = _wrapping("")
        self._add_row(details, "Why", self._why)
        self._risk = _wrapping("")
        self._add_row(details, "Risk", self._risk)
        # Each shown detail row's value, by its label ("Command", "File", "Arguments"…).
        self.rows: dict[str, QWidget] = {}
        self._spoken: list[tuple[str, QLabel | _ExactText]] = []
        # The details and the choices scroll together when the screen is too short for the
        # whole question (a laptop at 1.5x): every line stays whole and the answer buttons stay
        # in view, instead of every row being squeezed and cut.
        self.body = _Body()
        body_layout = QVBoxLayout(self.body.content)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.setSpacing(14)
        body_layout.addLayout(details)

        # -- the choices ------------------------------------------------------------------------
        body_layout.addWidget(self._separator())
        body_layout.addLayout(self._choices())
        root.addWidget(self.body, 1)

        # -- the answer -------------------------------------------------------------------------
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.deny_button = QPushButton("&Deny")
        self.deny_button.setAccessibleName("Deny")
        self.deny_button.setAccessibleDescription(
            "Refuse this request. The assistant is told that you said no. Esc does the same."
        )
        # Enter anywhere but on a focused Allow button denies: a stray Enter never approves.
        self.deny_button.setDefault(True)
        self.allow_button = QPushButton()
        self.allow_button.setAutoDefault(True)
        self.allow_button.setEnabled(False)
        self.allow_button.setMinimumWidth(170)
        self.allow_button.setAccessibleDescription(
            "Answer with the choice selected above. It can be pressed a moment after this "
            "dialog appears, so a click meant for another window cannot approve."
        )
        buttons.addWidget(self.deny_button)
        buttons.addWidget(self.allow_button)
        root.addLayout(buttons)

        # -- the countdown ----------------------------------------------------------------------
        countdown = QVBoxLayout()
        countdown.setSpacing(4)
        self.countdown_bar = QProgressBar()
        self.countdown_bar.setTextVisible(False)
        self.countdown_bar.setFixedHeight(6)
        self.countdown_bar.setAccessibleName("Time left to answer")
        self.countdown_label = _secondary(QLabel())
        countdown.addWidget(self.countdown_bar)
        countdown.addWidget(self.countdown_label)
        root.addLayout(countdown)

        self.deny_button.clicked.connect(self._deny)
        self.allow_button.clicked.connect(self._allow)
        self._group.idToggled.connect(self._on_choice_toggled)
        # Picking a duration means "Allow for" that long.
        self.duration_box.activated.connect(lambda _: self.select(Choice.TIMED))
        self.duration_box.currentIndexChanged.connect(lambda _: self._show_choice())
        self._set_tab_order()
        self.focus_ring = _FocusRing(self, self.body)

    def _add_row(self, form: QFormLayout, name: str, field: QLabel | _ExactText) -> QLabel:
        label = _secondary(QLabel(name))
        label.setBuddy(field)
        if isinstance(field, _ExactText):
            # Level with the first line of the boxed text (its document margin).
            margin = round(field.document().documentMargin())
            label.setContentsMargins(0, margin, 0, 0)
        form.addRow(label, field)
        return label

    def _add_slot(self) -> _RowSlot:
        """One more detail row, hidden until a question fills it: placed after the last slot
        (before Why and Risk)."""
        exact = _ExactText("", "")
        plain = _wrapping("")
        # What, then two form rows per slot before this one.
        at = 1 + 2 * len(self._slots)
        exact_name = _secondary(QLabel())
        exact_name.setBuddy(exact)
        exact_name.setContentsMargins(0, round(exact.document().documentMargin()), 0, 0)
        plain_name = _secondary(QLabel())
        plain_name.setBuddy(plain)
        self._details.insertRow(at, exact_name, exact)
        self._details.insertRow(at + 1, plain_name, plain)
        self._details.setRowVisible(exact, False)
        self._details.setRowVisible(plain, False)
        slot = _RowSlot(exact_name, exact, plain_name, plain)
        self._slots.append(slot)
        return slot

    def _caution_frame(self) -> tuple[QFrame, QLabel]:
        frame = QFrame()
        frame.setObjectName("caution")
        frame.setStyleSheet(
            f"QFrame#caution {{ border-left: 4px solid {WARNING_ACCENT};"
            " background: rgba(217, 119, 6, 0.12); border-radius: 4px; }"
        )
        row = QHBoxLayout(frame)
        row.setContentsMargins(12, 10, 12, 10)
        row.setSpacing(10)
        icon = QLabel()
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
        warning_icon = self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        icon.setPixmap(warning_icon.pixmap(size, size))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        row.addWidget(icon)
        text = _wrapping("")
        text.setAccessibleName("Caution")
        row.addWidget(text, 1)
        return frame, text

    def _separator(self) -> QFrame:
        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        line.setFrameShadow(QFrame.Shadow.Sunken)
        return line

    def _choices(self) -> QVBoxLayout:
        box = QVBoxLayout()
        box.setSpacing(6)
        caption = QLabel("How long may it do this?")
        bold = QFont(caption.font())
        bold.setBold(True)
        caption.setFont(bold)
        box.addWidget(caption)
        # A longer answer may cover more than this call reaches (the folder the person named,
        # a class of commands): said before it is given, when so. `covers_note`,
        # `always_rule`, `once_only_note` and `no_always_note` name their label while shown.
        self.covers_note: QLabel | None = None
        self._covers = _secondary(_wrapping(""))
        self._covers.setAccessibleName("What a longer answer covers")
        self._covers.setVisible(False)
        box.addWidget(self._covers)

        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(6)
        self._group = QButtonGroup(self)
        # The offered choices' buttons, in the order shown (filled by `bind`).
        self.choice_buttons: dict[Choice, QRadioButton] = {}
        self._radios: dict[Choice, QRadioButton] = {}
        # Parented to the dialog even where "Allow for" is not offered (then it stays hidden).
        self.duration_box = QComboBox(self)
        for minutes in TIMED_MINUTES:
            self.duration_box.addItem(duration_words(minutes), minutes)
        self.duration_box.setAccessibleName("How long to allow")
        self.duration_box.setAccessibleDescription(
            "The time an 'Allow for' answer lasts; Chamberlain asks again after it."
        )
        self.always_rule: QLabel | None = None
        self._always_rule = _secondary(_wrapping(""))
        self._always_rule.setContentsMargins(24, 0, 0, 0)
        self._always_rule.setAccessibleName("The rule Always allow saves")

        texts = {
            Choice.ONCE: (
                "Allow &once",
                "Allow once",
                "Allow only this one request; Chamberlain asks again next time.",
            ),
            Choice.TIMED: (
                "Allow &for",
                "Allow for a while",
                "Allow the same again, without asking, for the time chosen next to it.",
            ),
            Choice.SESSION: (
                "Allow for this &session",
                "Allow for this session",
                "Allow the same again, without asking, until Chamberlain quits.",
            ),
            Choice.ALWAYS: (
                "Always allo&w",
                "Always allow",
                "Always allow the rule shown below it. Saved until you remove it in Permissions.",
            ),
        }
        row = 0
        for choice, (text, name, description) in texts.items():
            radio = QRadioButton(text)
            radio.setAccessibleName(name)
            radio.setAccessibleDescription(description)
            self._radios[choice] = radio
            if choice is Choice.TIMED:
                timed = QHBoxLayout()
                timed.setSpacing(8)
                timed.addWidget(radio)
                timed.addWidget(self.duration_box)
                timed.addStretch(1)
                grid.addLayout(timed, row, 0)
            else:
                grid.addWidget(radio, row, 0)
            row += 1
            if choice is Choice.ALWAYS:
                grid.addWidget(self._always_rule, row, 0)
                row += 1
        box.addLayout(grid)

        self.once_only_note: QLabel | None = None
        self._once_only = _secondary(_wrapping(""))
        self._once_only.setVisible(False)
        box.addWidget(self._once_only)
        # "Always" is offered only where it will be saved as shown; where not, say why.
        self.no_always_note: QLabel | None = None
        self._no_always = _secondary(_wrapping(""))
        self._no_always.setAccessibleName("Why Always is not offered")
        self._no_always.setVisible(False)
        box.addWidget(self._no_always)
        return box

    def _set_tab_order(self) -> None:
        # The order a person reads the dialog in: the choices top to bottom (the duration
        # right of its "Allow for"), then Deny left of Allow. Choices not offered are hidden,
        # and Tab passes over what is hidden.
        chain: list[QWidget] = []
        for choice, radio in self._radios.items():
            chain.append(radio)
            if choice is Choice.TIMED:
                chain.append(self.duration_box)
        chain += [self.deny_button, self.allow_button]
        for first, second in itertools.pairwise(chain):
            QWidget.setTabOrder(first, second)

    # -- filling: one question, once ------------------------------------------------------------

    def bind(
        self,
        question: QuestionView,
        *,
        activation_delay_s: float = ACTIVATION_DELAY_S,
        arm_timer: QTimer | None = None,
    ) -> None:
        """Fill the dialog with `question`: its words, its rows, the choices it offers. Once
        per dialog, before it is shown (a spare is used for one question, never refilled)."""
        if self._bound:
            raise RuntimeError("a permission dialog shows one question only")
        self._bound = True
        self.question = question
        self.activation_delay_s = activation_delay_s
        request = question.request

        what = action_words(request.capability)
        # The headline asks in the middle of a sentence: the action's first letter in lower
        # case only ("use an MCP tool", not "use an mcp tool").
        self.headline.setText(f"Allow Chamberlain to {what[:1].lower()}{what[1:]}?")
        self.headline.setAccessibleName(self.headline.text())

        if question.model_initiated or question.high_risk:
            notes = []
            if question.model_initiated:
                notes.append(_MODEL_INITIATED_NOTE)
            if question.high_risk:
                notes.append(_HIGH_RISK_NOTE)
            self._caution_text.setText("\n\n".join(notes))
            self._caution.setVisible(True)
            self.warning, self.warning_text = self._caution, self._caution_text

        self._what.setText(what)
        self._spoken.append(("What", self._what))
        self._fill_rows(question)
        # The tool is named in words above (What, Tool): no id here.
        if question.model_initiated:
            why = "The assistant asked on its own; your message did not name this"
        else:
            why = "You asked for this"
        self._why.setText(why)
        self._spoken.append(("Why", self._why))
        if question.read_only and request.reversibility == "easy":
            undo = "changes nothing"
        else:
            undo = _UNDO[request.reversibility].lower()
        self._risk.setText(f"{_RISK[request.risk]}; {undo}")
        self._spoken.append(("Risk", self._risk))

        self._fill_choices(question)
        self.countdown_bar.setRange(0, max(1, round(question.timeout_s * 10)))

        question.remaining_changed.connect(self._show_remaining)
        question.queue_changed.connect(self._show_waiting)
        question.closed.connect(self._on_question_closed)

        self._arm_timer = arm_timer if arm_timer is not None else QTimer(self)
        self._arm_timer.setSingleShot(True)
        # Qt's default coarse timers may fire up to 5 % early (0.76 s for 0.8 s, measured).
        self._arm_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._arm_timer.timeout.connect(self._arm)

        self._show_waiting(question.queued_behind)
        self._show_remaining(question.remaining_s())
        self._show_choice()
        self.choice_buttons[question.preselected].setFocus()
        # What a screen reader says when the question appears (the dialog never takes the
        # focus, so nothing else would make it speak): the headline, then the details.
        self.setAccessibleName(self.headline.text())
        self.setAccessibleDescription(self._question_words())

    def _fill_rows(self, question: QuestionView) -> None:
        """The rows of `app.prompt_view`, each value whole: what the call will do."""
        rows = list(prompt_rows(question.request))
        if question.request.reason:
            rows.append(Row("Note", (visible(question.request.reason),), exact=False))
        while len(self._slots) < len(rows):
            self._add_slot()
        for slot, row in zip(self._slots, rows, strict=False):
            text = "\n".join(row.lines)
            field: QLabel | _ExactText
            if row.exact:
                slot.exact.show_text(text, row.label)
                slot.exact_name.setText(row.label)
                field = slot.exact
            else:
                slot.plain.setText(text)
                slot.plain_name.setText(row.label)
                field = slot.plain
            self._details.setRowVisible(field, True)
            self.rows[row.label] = field
            self._spoken.append((row.label, field))

    def _fill_choices(self, question: QuestionView) -> None:
        request = question.request
        covers = covers_note(request)
        if covers:
            self._covers.setText(covers)
            self._covers.setVisible(True)
            self.covers_note = self._covers
        offered = [choice for choice in question.choices if choice is not Choice.DENY]
        for index, choice in enumerate(question.choices):
            if choice in self._radios:
                self._group.addButton(self._radios[choice], index)
                self.choice_buttons[choice] = self._radios[choice]
        for choice, radio in self._radios.items():
            radio.setVisible(choice in offered)
        self.duration_box.setVisible(Choice.TIMED in offered)
        self.duration_box.setCurrentIndex(TIMED_MINUTES.index(question.default_minutes))
        if Choice.ALWAYS in offered:
            rule = always_rule_words(question)
            self._always_rule.setText(rule)
            self._radios[Choice.ALWAYS].setAccessibleDescription(
                rule + ". Saved until you remove it in Permissions."
            )
            self.always_rule = self._always_rule
        else:
            self._always_rule.setVisible(False)
        if request.once_only:
            self._once_only.setText(once_only_words(request))
            self._once_only.setVisible(True)
            self.once_only_note = self._once_only
        why_not = no_always_words(request)
        if why_not:
            self._no_always.setText(why_not)
            self._no_always.setVisible(True)
            self.no_always_note = self._no_always
        self.choice_buttons[question.preselected].setChecked(True)

    def _question_words(self) -> str:
        """The question in sentences, as the dialog shows it: what, the details, who asked,
        the risk; read out by a screen reader when the dialog appears."""
        parts = []
        if self.warning_text is not None:
            parts.append(self.warning_text.text().replace("\n\n", " "))
        for label, field in self._spoken:
            value = field.toPlainText() if isinstance(field, QTextEdit) else field.text()
            parts.append(f"{label}: {' '.join(value.split())}.")
        seconds = math.ceil(self.question.timeout_s)
        parts.append(f"Denies automatically in {seconds} s if you do not answer.")
        return " ".join(parts)

    def sizeHint(self) -> QSize:
        # Wide enough to read a path or a command at a glance, and exactly as tall as the
        # wrapped text needs at that width (the default hint under-counts wrapped lines).
        width = max(self.minimumWidth(), self.fontMetrics().averageCharWidth() * 66)
        layout = self.layout()
        if layout is not None and layout.hasHeightForWidth():
            return QSize(width, layout.totalHeightForWidth(width))
        return QSize(width, super().sizeHint().height())

    # -- what the person sees change -------------------------------------------------------------

    @property
    def armed(self) -> bool:
        """Whether the Allow button can be pressed yet."""
        return self._armed

    def selected_choice(self) -> Choice:
        checked = self._group.checkedButton()
        for choice, radio in self.choice_buttons.items():
            if radio is checked:
                return choice
        return Choice.ONCE

    def selected_minutes(self) -> float:
        return float(self.duration_box.currentData())

    def select(self, choice: Choice) -> None:
        self.choice_buttons[choice].setChecked(True)

    def _on_choice_toggled(self, _id: int, checked: bool) -> None:
        if checked:
            self._show_choice()

    def _show_choice(self) -> None:
        """The Allow button says exactly what it will allow."""
        choice = self.selected_choice()
        text = {
            Choice.ONCE: "&Allow once",
            Choice.TIMED: f"&Allow for {duration_words(self.selected_minutes())}",
            Choice.SESSION: "&Allow for this session",
            Choice.ALWAYS: "&Always allow",
        }[choice]
        self.allow_button.setText(text)
        self.allow_button.setAccessibleName(text.replace("&", ""))
        self.allow_button.setAccessibleDescription(
            "Answer with the choice selected above. It can be pressed a moment after this "
            "dialog appears, so a click meant for another window cannot approve."
        )

    def _show_waiting(self, count: int) -> None:
        if count <= 0:
            self.waiting_label.setVisible(False)
            return
        requests = "request is" if count == 1 else "requests are"
        self.waiting_label.setText(f"{count} more {requests} waiting after this one")
        self.waiting_label.setVisible(True)

    def _show_remaining(self, seconds: float) -> None:
        self.countdown_bar.setValue(max(0, round(seconds * 10)))
        whole = math.ceil(seconds)
        self.countdown_label.setText(f"Denies automatically in {whole} s if you do not answer")
        self.countdown_bar.setAccessibleDescription(f"{whole} seconds left")

    # -- answering -------------------------------------------------------------------------------

    def _arm(self) -> None:
        self._armed = True
        self.allow_button.setEnabled(True)

    def fit_to_text(self) -> None:
        """Take the size the question's text needs (the screen allowing), once. Called before
        show() (`open_question`), the layout is worked out once, at that size; else show()
        sizes the window from its hint capped at 2/3 of the screen, which squeezes wrapped
        lines, and the showEvent lays it all out a second time at the right size."""
        if self._sized:
            return
        self._sized = True
        hint = self.sizeHint()
        screen = self.screen().availableGeometry() if self.screen() else None
        height = min(hint.height(), screen.height() - 48) if screen else hint.height()
        self.resize(hint.width(), max(height, self.minimumSizeHint().height()))

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.fit_to_text()
        self._watch_exposure()

    # -- on screen: the activation delay and the announcement ----------------------------------

    def _watch_exposure(self) -> None:
        """Follow the native window's exposure. The delay counts from the expose, not from
        show(): a window manager or compositor maps the window some time after show(), and
        that time must not be taken from the person's 0.8 s of reading."""
        window = self.windowHandle()
        if window is not None and window is not self._watched:
            if self._watched is not None:
                self._watched.removeEventFilter(self)
            window.installEventFilter(self)
            self._watched = window
        if window is not None and window.isExposed():
            self._exposed(True)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._watched and event.type() == QEvent.Type.Expose:
            self._exposed(self._watched.isExposed())
        return super().eventFilter(watched, event)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        # A fallback should an expose ever escape the filter: painted into an exposed window
        # is on screen.
        window = self.windowHandle()
        if window is not None and window.isExposed():
            self._exposed(True)

    def _exposed(self, exposed: bool) -> None:
        if exposed and not self._announced:
            self._announced = True
            self._announce()
        if self._armed or self._closing:
            return
        if not exposed:
            # Hidden again before it armed (unmapped, minimised): the delay starts over.
            self._arm_timer.stop()
        elif not self._arm_timer.isActive():
            if self.activation_delay_s <= 0:
                self._arm()
            else:
                self._arm_timer.start(round(self.activation_delay_s * 1000))

    def _announce(self) -> None:
        """Tell assistive technology that a question appeared. The dialog never takes the
        keyboard focus (a keystroke meant elsewhere must not answer it), so no focus change
        would make a screen reader speak: an alert on the dialog, whose name and description
        carry the question, and an announcement of the same words (Qt 6.8's, spoken by Orca
        and NVDA even for a window that is not focused)."""
        QAccessible.updateAccessibility(QAccessibleEvent(self, QAccessible.Event.Alert))
        words = f"{self.accessibleName()} {self.accessibleDescription()}"
        announcement = QAccessibleAnnouncementEvent(self, words)
        announcement.setPoliteness(QAccessible.AnnouncementPoliteness.Assertive)
        QAccessible.updateAccessibility(announcement)

    def _allow(self) -> None:
        if not self._armed:  # disabled anyway; a queued click must not slip through either
            return
        choice = self.selected_choice()
        self.question.choose(choice, self.selected_minutes() if choice is Choice.TIMED else None)

    def _deny(self) -> None:
        self.question.answer(PromptDecision(allow=False, reason="user"))

    def reject(self) -> None:
        """Esc and the window's close button: a denial."""
        if not self._bound:  # a spare never shown: there is no question to answer
            super().reject()
            return
        if not self.question.done:
            self.question.answer(PromptDecision(allow=False, reason="user"))
        if not self._closing:
            self._close(QDialog.DialogCode.Rejected)

    def _on_question_closed(self) -> None:
        decision = self.question.decision
        accepted = decision is not None and decision.allow
        self._close(QDialog.DialogCode.Accepted if accepted else QDialog.DialogCode.Rejected)

    def _close(self, code: QDialog.DialogCode) -> None:
        if self._closing:
            return
        self._closing = True
        self._arm_timer.stop()
        if self._watched is not None:
            self._watched.removeEventFilter(self)
            self._watched = None
        self.done(code)


def warm_up() -> None:
    """Build one dialog for a made-up question and paint it into an image, never on screen.

    The first dialog of a run pays once for what every later one finds ready (the fixed font,
    the style's icons and pixmaps, glyphs, text layout): tens of milliseconds between a
    person's Enter and the question on screen (`bench/prompt_latency.py`). The app calls this
    when it is idle after start-up, so the first real question does not pay it."""
    from broker.permissions import PermissionQuestion, PermissionRequest
    from core.clock import SystemClock
    from tools.manual import CallPlan, Capability

    clock = SystemClock()
    now = clock.now()
    # A command the model asked for on its own: the caution box, the boxed exact text, every
    # kind of control the dialog has.
    request = PermissionRequest(
        capability=Capability.SYSTEM_EXECUTE,
        scope="make",
        tool="run_command",
        arguments={},
        call_id="warm-up",
        user_scope=False,
        asked_at=now,
        deadline=now + 60.0,
        timeout_s=60.0,
        plan=CallPlan(stages=(("/usr/bin/make",),), cwd="/", reads=("/",)),
        risk="moderate",
        reversibility="effort",
    )
    question = QuestionView(PermissionQuestion(request, clock))
    dialog = PermissionDialog(question)
    dialog.ensurePolished()
    dialog.resize(dialog.sizeHint())
    image = QImage(dialog.size(), QImage.Format.Format_ARGB32_Premultiplied)
    dialog.render(image)
    dialog.deleteLater()
    question.deleteLater()


def spare_dialog() -> PermissionDialog:
    """A dialog for the next question, made ready while the app is idle: every control built
    and polished, its native window made (never mapped: nothing shows), so that showing a
    question is filling in words and mapping a window (`open_question(…, dialog=…)`).

    Built for the question instead: 3-6 ms of construction, then ~4 ms in show() for the
    polish, the native window and a first layout, between the question reaching the UI thread
    and the window being mapped; filled in, ~1 ms, then ~2.5 ms to size it to its words and
    show it (`bench/prompt_latency.py`, docs/BENCHMARKS.md)."""
    dialog = PermissionDialog(None)
    dialog.ensurePolished()
    dialog.create()
    # Not laid out ahead: its layouts would keep heights measured without the question's
    # words (the scrolling body's until the loop delivers its layout request), and the dialog
    # sized to its text before show() would come out short.
    return dialog


def _above_our_window(dialog: PermissionDialog) -> None:
    """On Wayland, where a window cannot ask to stay on top, make the dialog transient for the
    window of ours the person is in (the chat, usually): compositors stack a transient window
    above its parent, and tiling ones (sway) float it there. Where none of ours is open the
    dialog is a window of its own. Elsewhere WindowStaysOnTopHint does it."""
    if QGuiApplication.platformName() != "wayland":
        return
    handle = dialog.windowHandle()
    if handle is None:
        dialog.create()
        handle = dialog.windowHandle()
    parent: QWindow | None = QGuiApplication.focusWindow()
    if parent is None or parent is handle or not parent.isVisible():
        parent = next(
            (
                w.windowHandle()
                for w in QApplication.topLevelWidgets()
                if w is not dialog
                and w.isVisible()
                and w.windowHandle() is not None
                and not isinstance(w, PermissionDialog)
            ),
            None,
        )
    if handle is not None and parent is not None and parent is not handle:
        handle.setTransientParent(parent)


def open_question(
    question: QuestionView,
    *,
    activation_delay_s: float = ACTIVATION_DELAY_S,
    dialog: PermissionDialog | None = None,
) -> Awaitable[PromptDecision | None]:
    """Show `question` in a PermissionDialog now — `dialog`, a spare not yet filled in
    (`spare_dialog`), or one built now — and return what to await for its end.

    Called in the slot that received the question: a task would first let the loop go on with
    what was queued before it (the chat repainting after Enter), 3-4 ms in one run of ten
    (`bench/prompt_latency.py`). What is awaited holds `app.async_dialog.show_dialog`'s
    promises for a dialog that is not modal: it ends with the dialog's `finished`, and when it
    is cancelled the dialog is rejected (a denial), never left on screen with nobody waiting.
    """
    if question.done:
        if dialog is not None:
            dialog.deleteLater()
        return _decided(question)
    if dialog is None:
        dialog = PermissionDialog(question, activation_delay_s=activation_delay_s)
    else:
        dialog.bind(question, activation_delay_s=activation_delay_s)
    finished: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def on_finished(result: int) -> None:
        if not finished.done():
            finished.set_result(int(result))

    dialog.finished.connect(on_finished)
    try:
        dialog.fit_to_text()
        _above_our_window(dialog)
        dialog.show()
    except BaseException:
        dialog.finished.disconnect(on_finished)
        dialog.deleteLater()
        raise
    return _until_over(question, dialog, finished, on_finished)


async def _decided(question: QuestionView) -> PromptDecision | None:
    return question.decision


async def _until_over(
    question: QuestionView,
    dialog: PermissionDialog,
    finished: asyncio.Future[int],
    on_finished: Callable[[int], None],
) -> PromptDecision | None:
    try:
        await finished
    except asyncio.CancelledError:
        if dialog.isVisible():
            dialog.reject()
        raise
    finally:
        dialog.finished.disconnect(on_finished)
        if not question.done:
            question.answer(PromptDecision(allow=False, reason="user"))
        dialog.deleteLater()
    return question.decision


async def present_question(
    question: QuestionView, *, activation_delay_s: float = ACTIVATION_DELAY_S
) -> PromptDecision | None:
    """Show `question` in a PermissionDialog and return once it is over, with its decision;
    if it goes away unanswered, that is a denial."""
    return await open_question(question, activation_delay_s=activation_delay_s)

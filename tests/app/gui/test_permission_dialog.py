"""The permission dialog, its question model and the GuiPrompter bridge from the broker's threads.

Real parts: real widgets (offscreen), real worker threads waiting on the broker's question, the real
qasync loop showing dialogs through `app.async_dialog.show_dialog`, and at the end a real
Session whose broker asks through the dialog. Time that a clock drives (the countdown) is moved
with `ManualClock`; the activation delay is a constructor argument, shortened where a test must
get past it (its default value is checked on its own).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAccessible,
    QAccessibleAnnouncementEvent,
    QAccessibleEvent,
    QExposeEvent,
    QPalette,
    QRegion,
    QWindow,
)
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QTextEdit,
    QWidget,
)

from app import async_dialog
from app.permission_dialog import (
    ACTIVATION_DELAY_S,
    PermissionDialog,
    open_question,
    present_question,
)
from app.permission_prompt import Choice, GuiPrompter, QuestionView
from app.qt_session import QtSession
from app.windows.words import action_words
from broker.permissions import PermissionQuestion, PermissionRequest, PromptDecision, pose
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import Clock, ManualClock, SystemClock
from tests.app.gui.conftest import make_session, until
from tests.support.prompts import make_request
from tools.manual import CallPlan, Capability

DOCS = "/home/ann/Documents"


def file_read(**changes: Any) -> PermissionRequest:
    """A file request as the broker builds it; its plan names the one place it reads."""
    scope = changes.get("scope", DOCS)
    fields: dict[str, Any] = {
        "capability": Capability.FILE_READ,
        "scope": DOCS,
        "tool": "list_files",
        "arguments": {"path": DOCS},
        "call_id": "call-1",
        "user_scope": True,
        "plan": CallPlan(files=(scope,), reads=(scope,)),
    }
    return make_request(**{**fields, **changes})


def command(scope: str, **changes: Any) -> PermissionRequest:
    fields: dict[str, Any] = {
        "capability": Capability.SYSTEM_EXECUTE,
        "scope": scope,
        "tool": "run_command",
        "arguments": {},
        "call_id": "call-2",
        "user_scope": True,
        "risk": "moderate",
        "reversibility": "effort",
        "plan": CallPlan(stages=(("/usr/bin/make",),), cwd=DOCS, reads=(DOCS,), writes=(DOCS,)),
    }
    if not scope.startswith("readonly"):
        fields["always_unavailable"] = "a saved rule for one exact command line would outlive it"
    return make_request(**{**fields, **changes})


def question_for(request: PermissionRequest, clock: Clock | None = None) -> QuestionView:
    """The dialog's view of the one question the broker would wait on."""
    return QuestionView(PermissionQuestion(request, clock or SystemClock()))


@pytest.fixture
def show(qtbot: Any) -> Callable[..., tuple[QuestionView, PermissionDialog]]:
    """`show(request, delay_s=0, clock=None)`: a question in a shown dialog."""

    def make(
        request: PermissionRequest,
        *,
        delay_s: float = 0.0,
        clock: ManualClock | None = None,
    ) -> tuple[QuestionView, PermissionDialog]:
        if clock is None:
            # Asked now: a parametrized request was built when the tests were collected, and
            # more than its 60 s may have passed since in a whole run (it would end at once).
            now = SystemClock().now()
            request = request.model_copy(
                update={"asked_at": now, "deadline": now + request.timeout_s}
            )
        question = question_for(request, clock)
        dialog = PermissionDialog(question, activation_delay_s=delay_s)
        qtbot.addWidget(dialog)
        dialog.show()
        question.start()
        if delay_s == 0:
            qtbot.waitUntil(lambda: dialog.allow_button.isEnabled(), timeout=2000)
        return question, dialog

    return make


def answers(question: QuestionView) -> list[PromptDecision]:
    seen: list[PromptDecision] = []
    question.answered.connect(seen.append)
    return seen


def click(qtbot: Any, button: QPushButton | QRadioButton) -> None:
    """A left click where a person would aim: on a radio button's circle, a push button's middle."""
    where = button.rect().center()
    if isinstance(button, QRadioButton):
        where.setX(8)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton, pos=where)


# --- each choice decides what it says -------------------------------------------------------


def test_allow_once_answers_a_one_time_grant_and_closes_the_dialog(qtbot, show):
    question, dialog = show(file_read())
    seen = answers(question)
    click(qtbot, dialog.choice_buttons[Choice.ONCE])
    assert dialog.allow_button.text().replace("&", "") == "Allow once"
    click(qtbot, dialog.allow_button)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.ONCE)]
    assert not dialog.isVisible()
    assert dialog.result() == QDialog.DialogCode.Accepted


@pytest.mark.parametrize(
    ("index", "minutes", "words"), [(0, 1, "1 min"), (2, 15, "15 min"), (3, 60, "1 hour")]
)
def test_allow_for_a_while_grants_exactly_the_minutes_chosen(qtbot, show, index, minutes, words):
    question, dialog = show(file_read())
    seen = answers(question)
    click(qtbot, dialog.choice_buttons[Choice.TIMED])
    dialog.duration_box.setCurrentIndex(index)
    assert dialog.allow_button.text().replace("&", "") == f"Allow for {words}"
    click(qtbot, dialog.allow_button)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.TIMED, duration_s=minutes * 60)]


@pytest.mark.parametrize(
    ("default", "shown"), [(5, "5 min"), (12, "15 min"), (45, "1 hour"), (0.2, "1 min")]
)
def test_the_duration_offered_first_is_the_settings_default_rounded_to_an_offer(
    show, default, shown
):
    _, dialog = show(file_read(timed_s=default * 60))
    assert dialog.duration_box.currentText() == shown


def test_a_read_only_request_the_person_named_preselects_this_session(qtbot, show):
    question, dialog = show(file_read())
    seen = answers(question)
    assert dialog.choice_buttons[Choice.SESSION].isChecked()
    click(qtbot, dialog.allow_button)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.SESSION)]


def test_a_request_that_changes_things_preselects_once(show):
    _, dialog = show(file_read(capability=Capability.FILE_WRITE, reversibility="effort"))
    assert dialog.choice_buttons[Choice.ONCE].isChecked()


def test_always_allow_shows_the_rule_it_saves_in_words_and_saves_it(qtbot, show, tmp_path):
    docs = tmp_path / "Documents"
    docs.mkdir()
    question, dialog = show(file_read(scope=str(docs)))
    seen = answers(question)
    assert dialog.always_rule is not None
    assert dialog.always_rule.text() == f"Always allow reading files in {docs}"
    click(qtbot, dialog.choice_buttons[Choice.ALWAYS])
    click(qtbot, dialog.allow_button)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.ALWAYS)]


def test_deny_answers_no_from_the_person(qtbot, show):
    question, dialog = show(file_read())
    seen = answers(question)
    click(qtbot, dialog.deny_button)
    assert seen == [PromptDecision(allow=False, reason="user")]
    assert not dialog.isVisible()
    assert dialog.result() == QDialog.DialogCode.Rejected


def test_esc_denies(qtbot, show):
    question, dialog = show(file_read())
    seen = answers(question)
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    assert seen == [PromptDecision(allow=False, reason="user")]
    assert not dialog.isVisible()


def test_closing_the_window_denies(show):
    question, dialog = show(file_read())
    seen = answers(question)
    dialog.close()
    assert seen == [PromptDecision(allow=False, reason="user")]


def test_enter_on_the_choices_denies_and_never_allows(qtbot, show):
    question, dialog = show(file_read())
    seen = answers(question)
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=2000)
    dialog.choice_buttons[Choice.SESSION].setFocus()
    qtbot.keyClick(dialog.choice_buttons[Choice.SESSION], Qt.Key.Key_Return)
    assert seen == [PromptDecision(allow=False, reason="user")]


def test_the_first_answer_wins(qtbot, show):
    question, dialog = show(file_read())
    seen = answers(question)
    click(qtbot, dialog.deny_button)
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.ALWAYS)) is False
    assert seen == [PromptDecision(allow=False, reason="user")]
    assert question.decision == PromptDecision(allow=False, reason="user")


# --- the countdown --------------------------------------------------------------------------


def test_the_countdown_shows_the_seconds_left_and_ends_in_a_timeout_denial(qtbot, show):
    clock = ManualClock()
    question, dialog = show(file_read(clock=clock, timeout_s=30), clock=clock)
    seen = answers(question)
    assert "30 s" in dialog.countdown_label.text()
    assert dialog.countdown_bar.value() == dialog.countdown_bar.maximum()

    clock.advance(20)
    qtbot.waitUntil(lambda: "10 s" in dialog.countdown_label.text(), timeout=2000)
    assert dialog.countdown_bar.value() == dialog.countdown_bar.maximum() // 3
    assert dialog.isVisible()
    assert not seen

    clock.advance(10)
    with qtbot.waitSignal(question.answered, timeout=2000):
        pass
    assert seen == [PromptDecision(allow=False, reason="timeout")]
    assert not dialog.isVisible()


# --- the activation delay -------------------------------------------------------------------


def test_the_activation_delay_is_eight_tenths_of_a_second_by_default(qtbot):
    assert ACTIVATION_DELAY_S == 0.8
    dialog = PermissionDialog(question_for(file_read()))
    qtbot.addWidget(dialog)
    assert dialog.activation_delay_s == 0.8


def test_allow_does_nothing_before_the_activation_delay_while_deny_works_at_once(qtbot, show):
    question, dialog = show(file_read(), delay_s=ACTIVATION_DELAY_S)
    seen = answers(question)
    assert not dialog.allow_button.isEnabled()
    click(qtbot, dialog.allow_button)
    dialog.allow_button.click()  # even a programmatic click
    assert seen == []
    assert dialog.isVisible()
    click(qtbot, dialog.deny_button)
    assert seen == [PromptDecision(allow=False, reason="user")]


def test_allow_works_once_the_activation_delay_has_passed(qtbot, show):
    question, dialog = show(file_read(), delay_s=0.05)
    seen = answers(question)
    qtbot.waitUntil(lambda: dialog.allow_button.isEnabled(), timeout=2000)
    click(qtbot, dialog.allow_button)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.SESSION)]


class HeldTimer(QTimer):
    """The activation delay's timer with its time in the test's hands: start() records the
    interval and runs nothing; `elapse()` is that interval passing."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[int] = []
        self._running = False

    def start(self, msec: int) -> None:  # type: ignore[override]
        self.started.append(msec)
        self._running = True

    def stop(self) -> None:
        self._running = False

    def isActive(self) -> bool:
        return self._running

    def elapse(self) -> None:
        assert self._running, "the delay was never started"
        self._running = False
        self.timeout.emit()


class WindowSystem:
    """The window manager's side of showing a window, which offscreen Qt does at once: until
    `map()`, the dialog's native window is not exposed and its expose events are held back.
    A fake at the edge we cannot run here (a window manager or compositor that maps late)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.mapped = False
        real = QWindow.isExposed
        monkeypatch.setattr(QWindow, "isExposed", lambda window: self.mapped and real(window))
        QApplication.instance().installEventFilter(self._filter)

    class _Filter(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            return event.type() == QEvent.Type.Expose

    _filter = _Filter()

    def map(self, dialog: QDialog) -> None:
        QApplication.processEvents()  # the platform's own expose, still held back
        QApplication.instance().removeEventFilter(self._filter)
        self.mapped = True
        window = dialog.windowHandle()
        QApplication.sendEvent(window, QExposeEvent(QRegion(QRect(QPoint(0, 0), window.size()))))

    def unmap(self, dialog: QDialog) -> None:
        self.mapped = False
        QApplication.sendEvent(dialog.windowHandle(), QExposeEvent(QRegion()))

    def close(self) -> None:
        QApplication.instance().removeEventFilter(self._filter)


@pytest.fixture
def window_system(monkeypatch: pytest.MonkeyPatch) -> Iterator[WindowSystem]:
    system = WindowSystem(monkeypatch)
    yield system
    system.close()


def test_a_dialog_shown_but_not_yet_on_screen_stays_unarmed_past_the_delay(qtbot, window_system):
    dialog = PermissionDialog(question_for(file_read()), activation_delay_s=ACTIVATION_DELAY_S)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.wait(round(ACTIVATION_DELAY_S * 1000) + 300)  # longer than the delay, nothing mapped
    assert not dialog.allow_button.isEnabled()
    assert not dialog.armed


def test_once_on_screen_allow_arms_only_after_the_whole_delay(qtbot, window_system):
    timer = HeldTimer()
    question = question_for(file_read())
    dialog = PermissionDialog(question, activation_delay_s=ACTIVATION_DELAY_S, arm_timer=timer)
    qtbot.addWidget(dialog)
    seen = answers(question)
    dialog.show()
    QApplication.processEvents()
    assert timer.started == []  # show() alone starts nothing, nor its expose held back
    window_system.map(dialog)
    assert timer.started == [800]
    dialog.allow_button.click()
    assert not dialog.allow_button.isEnabled()
    assert seen == []
    timer.elapse()
    assert dialog.allow_button.isEnabled()
    click(qtbot, dialog.allow_button)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.SESSION)]


def test_a_dialog_unmapped_before_it_armed_counts_the_delay_again_when_back(qtbot, window_system):
    timer = HeldTimer()
    dialog = PermissionDialog(question_for(file_read()), arm_timer=timer)
    qtbot.addWidget(dialog)
    dialog.show()
    window_system.map(dialog)
    window_system.unmap(dialog)
    assert not timer.isActive()
    window_system.map(dialog)
    assert timer.started == [800, 800]
    timer.elapse()
    assert dialog.armed


# --- what is offered ------------------------------------------------------------------------


def test_a_request_that_runs_code_that_cannot_be_shown_offers_only_once_and_says_why(qtbot, show):
    question, dialog = show(
        command(
            "command:sed -f x.sed notes\nin /home/ann",
            once_only=True,
            always_unavailable="only this one call may be allowed",
        )
    )
    seen = answers(question)
    assert set(dialog.choice_buttons) == {Choice.ONCE}
    assert not dialog.duration_box.isVisible()
    assert dialog.once_only_note is not None
    assert "runs code that cannot be shown here" in dialog.once_only_note.text()
    with pytest.raises(ValueError, match="not offered"):
        question.decision_for(Choice.SESSION)
    click(qtbot, dialog.allow_button)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.ONCE)]


@pytest.mark.parametrize(
    "request_",
    [
        command("command:rm -rf build\nin /home/ann", risk="dangerous"),
        command("command:make\nin /home/ann"),
        file_read(
            capability=Capability.FILE_WRITE,
            risk="dangerous",
            always_unavailable="it is a high-risk action, so Chamberlain asks every time",
        ),
    ],
    ids=["high-risk command", "exact command", "high-risk file write"],
)
def test_always_allow_is_not_offered_where_the_broker_will_not_save_it_and_says_why(show, request_):
    question, dialog = show(request_)
    assert Choice.ALWAYS not in dialog.choice_buttons
    assert dialog.always_rule is None
    assert dialog.no_always_note is not None
    assert dialog.no_always_note.text() == (
        f"“Always” is not offered: {request_.always_unavailable}."
    )
    with pytest.raises(ValueError, match="not offered"):
        question.decision_for(Choice.ALWAYS)


def test_always_allow_is_offered_for_the_read_only_command_class(show):
    _, dialog = show(command(f"readonly-in:{DOCS}", risk="safe", reversibility="easy"))
    assert Choice.ALWAYS in dialog.choice_buttons
    assert dialog.always_rule is not None
    assert dialog.always_rule.text() == f"Always allow running read-only commands in {DOCS}"


# --- what the person is shown ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("capability", "words"),
    [
        (Capability.FILE_READ, "Read files"),
        (Capability.SYSTEM_EXECUTE, "Run a command"),
        (Capability.SCREEN_READ, "See your screen"),
        (Capability.WEB_ACCESS, "Use the web"),
    ],
)
def test_the_capability_is_said_in_plain_words(capability, words):
    assert action_words(capability) == words


def test_every_capability_has_plain_words():
    for capability in Capability:
        assert action_words(capability)


def test_the_dialog_shows_what_where_why_and_the_risk(show):
    _, dialog = show(file_read())
    text = visible_text(dialog)
    assert "Allow Chamberlain to read files?" in text
    assert "Read files" in text
    assert dialog.rows["File"].toPlainText() == DOCS
    assert "You asked for this" in text
    assert "Low; changes nothing" in text
    assert dialog.warning is None


def test_a_command_shows_the_exact_words_its_folder_and_what_it_can_do_from_its_plan(show):
    _, dialog = show(
        command(f"command:make\nin {DOCS}", risk="dangerous", reversibility="irreversible")
    )
    assert dialog.rows["Command"].toPlainText() == "/usr/bin/make"
    assert dialog.rows["Folder"].toPlainText() == DOCS
    assert dialog.rows["Can change"].toPlainText() == DOCS
    assert dialog.rows["Network"].text() == "none"
    assert "High: it can do serious harm; cannot be undone" in visible_text(dialog)


def test_a_request_the_model_made_on_its_own_is_flagged_and_preselects_only_once(show):
    _, dialog = show(file_read(user_scope=False))
    assert dialog.warning is not None
    assert dialog.warning.isVisible()
    assert dialog.warning_text is not None
    assert "You did not ask for this" in dialog.warning_text.text()
    assert "your message did not name this" in visible_text(dialog)
    assert dialog.choice_buttons[Choice.ONCE].isChecked()


def test_it_stays_on_top_without_taking_the_keyboard_focus(qtbot, monkeypatch):
    """The offscreen platform activates every window it shows, so what is checked is what the
    dialog asks of the window system: on top, shown without activation, never activated."""
    activated: list[str] = []
    monkeypatch.setattr(PermissionDialog, "activateWindow", lambda self: activated.append("a"))
    monkeypatch.setattr(PermissionDialog, "raise_", lambda self: activated.append("r"))
    dialog = PermissionDialog(question_for(file_read()))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.windowFlags() & Qt.WindowType.WindowStaysOnTopHint
    assert dialog.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
    assert activated == []


def whole(widget: QWidget) -> bool:
    """Whether `widget` got at least the height its text needs at its width (not cut)."""
    return widget.height() >= widget.heightForWidth(widget.width())


def test_a_question_taller_than_the_screen_scrolls_its_details_and_cuts_no_line(show):
    """The offscreen screen is 800x600; this question needs more (a laptop at 1.5x is alike)."""
    reason = "\n".join(f"Line {n} of a note the dialog must show whole." for n in range(12))
    _, dialog = show(command("make", user_scope=False, reason=reason))
    screen = dialog.screen().availableGeometry()
    assert dialog.height() <= screen.height()
    assert dialog.body.verticalScrollBar().maximum() > 0  # the rest is a scroll away
    wrapped = [
        label
        for label in dialog.body.findChildren(QLabel)
        if label.wordWrap() and label.isVisible()
    ]
    boxes = [box for box in dialog.body.findChildren(QTextEdit) if box.isVisible()]
    assert len(boxes) == 4
    for widget in [*wrapped, *boxes]:
        assert whole(widget), widget.accessibleName() or widget.text()
    for widget in (dialog.headline, dialog.deny_button, dialog.allow_button):
        corner = widget.mapTo(dialog, QPoint(0, 0))
        assert dialog.rect().contains(QRect(corner, widget.size()))


LONG_FOLDER = "/tmp/chamberlain-shots-a5vzdbse/user/Documents"


@pytest.mark.parametrize("folder", [DOCS, LONG_FOLDER])
def test_a_question_that_fits_shows_no_scroll_bar(show, folder):
    """With a long folder the exact-text box and the wrapped 'Always allow …' line once made
    the body a few pixels shorter than its content: a scroll bar, the last line cut."""
    _, dialog = show(file_read(scope=folder, arguments={"path": folder}))
    assert dialog.body.verticalScrollBar().maximum() == 0
    for widget in [*dialog.body.findChildren(QLabel), *dialog.body.findChildren(QTextEdit)]:
        assert whole(widget) or not widget.isVisible()


def test_every_control_has_an_accessible_name_and_description(show):
    _, dialog = show(file_read())
    controls = [
        *dialog.findChildren(QPushButton),
        *dialog.findChildren(QRadioButton),
        *dialog.findChildren(QComboBox),
    ]
    assert len(controls) == 7  # allow, deny, four choices, the duration
    for control in controls:
        assert control.accessibleName(), control
        assert control.accessibleDescription(), control


def test_it_can_be_answered_with_the_keyboard_alone(qtbot, show):
    question, dialog = show(file_read())
    seen = answers(question)
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=2000)
    # Alt+O picks "Allow once"; Tab walks on through the duration and Deny to Allow.
    qtbot.keyClick(dialog, Qt.Key.Key_O, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(dialog.choice_buttons[Choice.ONCE].isChecked, timeout=2000)  # animated click
    dialog.choice_buttons[Choice.TIMED].setFocus()
    order = [QApplication.focusWidget()]
    for _ in range(3):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        order.append(QApplication.focusWidget())
    assert order[1:] == [dialog.duration_box, dialog.deny_button, dialog.allow_button]
    qtbot.keyClick(dialog.allow_button, Qt.Key.Key_Space)
    assert seen == [PromptDecision(allow=True, mode=GrantMode.ONCE)]


@pytest.fixture
def announced(monkeypatch: pytest.MonkeyPatch) -> list[tuple[QAccessible.Event, QObject, str]]:
    """What the app tells assistive technology: (event type, object, words). Recorded where Qt
    hands it to the platform's screen-reader bridge (AT-SPI over D-Bus), the edge we cannot run
    offscreen; each event is still passed on to Qt."""
    seen: list[tuple[QAccessible.Event, QObject, str]] = []
    real = QAccessible.updateAccessibility

    def record(event: QAccessibleEvent) -> None:
        words = event.message() if isinstance(event, QAccessibleAnnouncementEvent) else ""
        seen.append((event.type(), event.object(), words))
        real(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", record)
    return seen


def test_a_question_appearing_is_announced_with_its_words(qtbot, window_system, announced):
    dialog = PermissionDialog(question_for(command("make")))
    qtbot.addWidget(dialog)
    dialog.show()
    QApplication.processEvents()
    assert [kind for kind, _, _ in announced] == []  # not yet on screen: nothing said
    window_system.map(dialog)
    alerts = [obj for kind, obj, _ in announced if kind == QAccessible.Event.Alert]
    assert alerts == [dialog]
    spoken = [words for kind, _, words in announced if kind == QAccessible.Event.Announcement]
    assert len(spoken) == 1
    face = QAccessible.queryAccessibleInterface(dialog)
    name = face.text(QAccessible.Text.Name)
    description = face.text(QAccessible.Text.Description)
    assert name == "Allow Chamberlain to run a command?"
    assert "make" in description
    assert "Denies automatically in 60 s" in description
    assert spoken[0].startswith(name)
    assert description in spoken[0]
    QApplication.sendEvent(dialog.windowHandle(), QExposeEvent(QRegion(dialog.rect())))
    assert len([1 for kind, _, _ in announced if kind == QAccessible.Event.Alert]) == 1  # once


def test_a_request_the_model_made_on_its_own_is_announced_with_its_caution(
    qtbot, window_system, announced
):
    dialog = PermissionDialog(question_for(file_read(user_scope=False, model_initiated=True)))
    qtbot.addWidget(dialog)
    dialog.show()
    window_system.map(dialog)
    assert "You did not ask for this" in dialog.accessibleDescription()


def focus_cycle(qtbot: Any, dialog: PermissionDialog) -> list[QWidget]:
    """The controls Tab visits, once round, starting from the one focused when it opened."""
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=2000)
    first = QApplication.focusWidget()
    cycle = [first]
    for _ in range(20):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        if QApplication.focusWidget() is first:
            return cycle
        cycle.append(QApplication.focusWidget())
    raise AssertionError("Tab never came back round")


@pytest.mark.parametrize("choice", [Choice.ONCE, Choice.TIMED, Choice.SESSION, Choice.ALWAYS])
def test_tab_goes_through_the_dialog_in_reading_order(qtbot, show, choice):
    """Top to bottom, left to right, once round (an exclusive group of choices is one stop, at
    the one chosen); where Tab starts is the preselected choice, so the round is read from the
    topmost control."""
    _, dialog = show(file_read())
    dialog.select(choice)
    dialog.choice_buttons[choice].setFocus()
    cycle = focus_cycle(qtbot, dialog)

    def where(widget: QWidget) -> tuple[int, int]:
        corner = widget.mapTo(dialog, QPoint(0, 0))
        return (corner.y() + widget.height() // 2, corner.x())

    assert dialog.deny_button in cycle
    assert dialog.allow_button in cycle
    assert dialog.choice_buttons[choice] in cycle
    top = min(range(len(cycle)), key=lambda i: where(cycle[i]))
    reading = cycle[top:] + cycle[:top]
    rows = [where(widget) for widget in reading]
    assert rows == sorted(rows, key=lambda p: (p[0] // 8, p[1])), [
        w.accessibleName() for w in reading
    ]
    assert reading[-2:] == [dialog.deny_button, dialog.allow_button]


def ring_pixels(dialog: PermissionDialog, control: QWidget) -> int:
    """Pixels of the highlight colour in a band just outside `control`, as drawn on screen."""
    image = dialog.grab().toImage()
    ratio = image.devicePixelRatio()
    highlight = dialog.palette().color(QPalette.ColorRole.Highlight)
    corner = control.mapTo(dialog, QPoint(0, 0))
    box = QRect(corner, control.size()).adjusted(-3, -3, 3, 3)
    count = 0
    for x in range(box.left(), box.right() + 1):
        for y in (box.top() + 1, box.bottom() - 1):
            pixel = image.pixelColor(round(x * ratio), round(y * ratio))
            close = all(
                abs(a - b) < 60
                for a, b in zip(pixel.getRgb()[:3], highlight.getRgb()[:3], strict=True)
            )
            count += close
    return count


def test_every_control_the_keyboard_reaches_shows_a_ring_when_it_has_the_focus(qtbot, show):
    _, dialog = show(file_read())
    dialog.select(Choice.TIMED)
    dialog.choice_buttons[Choice.TIMED].setFocus()
    cycle = focus_cycle(qtbot, dialog)
    assert len(cycle) == 4  # the choice, the duration, Deny, Allow
    qtbot.keyClick(cycle[0], Qt.Key.Key_Tab, Qt.KeyboardModifier.ShiftModifier)
    for control in cycle:  # each seen without the focus, then Tab moves the focus onto it
        assert QApplication.focusWidget() is not control
        before = ring_pixels(dialog, control)
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        assert QApplication.focusWidget() is control
        width = min(control.width(), control.sizeHint().width())
        assert ring_pixels(dialog, control) > before + width, control.accessibleName()


def visible_text(dialog: PermissionDialog) -> str:
    from PySide6.QtWidgets import QLabel

    return "\n".join(label.text() for label in dialog.findChildren(QLabel) if label.isVisible())


# --- the seam -------------------------------------------------------------------------------


def test_show_dialog_returns_the_result_while_the_loop_keeps_running(qapp, run):
    dialog = QDialog()
    ticks: list[int] = []

    async def scenario() -> int:
        async def tick() -> None:
            for n in range(3):
                ticks.append(n)
                await asyncio.sleep(0.01)
            dialog.done(7)

        ticker = asyncio.ensure_future(tick())
        result = await async_dialog.show_dialog(dialog)
        await ticker
        return result

    assert run(scenario()) == 7
    assert ticks == [0, 1, 2]  # the loop ran while the dialog was open
    dialog.deleteLater()


def test_cancelling_the_wait_closes_the_dialog(qapp, run):
    dialog = QDialog()

    async def scenario() -> None:
        waiting = asyncio.ensure_future(async_dialog.show_dialog(dialog))
        await asyncio.sleep(0.05)
        assert dialog.isVisible()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    run(scenario())
    assert not dialog.isVisible()
    dialog.deleteLater()


# --- GuiPrompter: the bridge from the broker's threads ----------------------------------------


def open_dialogs() -> list[PermissionDialog]:
    return [
        widget
        for widget in QApplication.topLevelWidgets()
        if isinstance(widget, PermissionDialog) and widget.isVisible()
    ]


class Asker:
    """The broker's side on a real worker thread, as the broker does it (`pose`): the question
    handed to the prompter (`present`), then waited on until its deadline."""

    def __init__(
        self, prompter: GuiPrompter, request: PermissionRequest, clock: Clock | None = None
    ) -> None:
        self.decision: PromptDecision | None = None
        self.thread_name = ""
        self.question = PermissionQuestion(request, clock or SystemClock())
        self.thread = threading.Thread(target=self._ask, args=(prompter,), daemon=True)
        self.thread.start()

    def _ask(self, prompter: GuiPrompter) -> None:
        self.thread_name = threading.current_thread().name
        self.decision = pose(prompter, self.question)

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()


@pytest.fixture
def prompter(qapp: Any) -> Iterator[GuiPrompter]:
    """A GuiPrompter whose dialogs can be answered at once (no activation delay)."""
    gui = GuiPrompter(present=functools.partial(present_question, activation_delay_s=0))
    yield gui
    gui.cancel_all()


def all_dialogs() -> list[PermissionDialog]:
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    return [w for w in QApplication.allWidgets() if isinstance(w, PermissionDialog)]


def test_preparing_the_dialog_shows_nothing_and_the_question_appears_in_the_dialog_made_ready(
    qtbot, run
):
    """The app prepares when idle: one dialog is kept ready, hidden, never mapped; the first
    question is shown in it (filled in, nothing built then), and another is made ready for the
    next question once it is over. Quitting (`cancel_all`) leaves no dialog behind."""
    assert all_dialogs() == []
    gui = GuiPrompter()  # the app's own presenter
    try:
        gui.prepare()
        (ready,) = all_dialogs()  # the warm-up's own dialog is gone, one is kept ready
        assert not ready.isVisible()
        assert open_dialogs() == []
        handle = ready.windowHandle()
        assert handle is not None
        assert not handle.isExposed()

        async def scenario() -> Asker:
            asker = Asker(gui, file_read(user_scope=False))
            await until(open_dialogs)
            (dialog,) = open_dialogs()
            assert dialog is ready
            assert dialog.rows["File"].toPlainText() == DOCS
            # Sized to its words before it was shown: whole, with no scroll bar.
            await until(lambda: dialog.windowHandle().isExposed())
            assert dialog.body.verticalScrollBar().maximum() == 0
            shown = [*dialog.findChildren(QLabel), *dialog.findChildren(QTextEdit)]
            assert all(whole(w) for w in shown if w.isVisible())
            assert dialog.warning is not None
            assert dialog.warning.isVisible()
            assert dialog.choice_buttons[Choice.ONCE].isChecked()
            assert not dialog.armed
            dialog.deny_button.click()
            await until(lambda: asker.done and not open_dialogs())
            # The next one is made ready (the answered one is deleted).
            await until(lambda: len(all_dialogs()) == 1 and all_dialogs()[0] is not ready)
            return asker

        asker = run(scenario())
        assert asker.decision == PromptDecision(allow=False, reason="user")
        assert open_dialogs() == []
    finally:
        gui.cancel_all()
    assert all_dialogs() == []


def test_a_dialog_made_ready_shows_a_question_as_one_built_for_it_does(qtbot):
    """Filled in later, a dialog made ready before shows every row, note and choice of the
    question, and no other (a command with more detail rows than it was made with too)."""
    from app.permission_dialog import spare_dialog

    many = CallPlan(
        stages=(("/usr/bin/make",), ("/usr/bin/tee", "log")),
        cwd=DOCS,
        reads=(DOCS, "/etc"),
        writes=(DOCS,),
        changes=(f"{DOCS}/log",),
        network=("example.org",),
        network_stages=(1,),
        startup=(("/home/ann/.bashrc", "at login"),),
        limits=(("time", "60 s"),),
    )
    requests = [
        file_read(),
        file_read(user_scope=False, reason="The model says: <b>trust me</b>"),
        command("make"),
        command("make", plan=many, risk="dangerous"),
        command("readonly:ls", once_only=True),
    ]
    assert question_for(requests[-1]).choices == [Choice.ONCE, Choice.DENY]
    for request in requests:
        built = PermissionDialog(question_for(request))
        ready = spare_dialog()
        ready.bind(question_for(request))
        for dialog in (built, ready):
            qtbot.addWidget(dialog)
            dialog.show()
        assert ready.rows.keys() == built.rows.keys()
        assert visible_text(ready) == visible_text(built)
        assert [w.toPlainText() for w in ready.findChildren(QTextEdit) if w.isVisible()] == [
            w.toPlainText() for w in built.findChildren(QTextEdit) if w.isVisible()
        ]
        assert ready.choice_buttons.keys() == built.choice_buttons.keys()
        shown = [r for r in ready.findChildren(QRadioButton) if r.isVisible()]
        assert shown == list(ready.choice_buttons.values())
        assert ready.accessibleDescription() == built.accessibleDescription()
        assert ready.allow_button.text() == built.allow_button.text()
        assert (ready.warning is None) == (built.warning is None)
        assert ready.sizeHint() == built.sizeHint()
        # Top to bottom in the order of the question's rows, between What and Why.
        tops = [w.mapTo(ready, QPoint(0, 0)).y() for w in ready.rows.values()]
        assert tops == sorted(tops)
        assert "What" in visible_text(ready)
        why = next(w for w in ready.findChildren(QLabel) if w.text() == "Why" and w.isVisible())
        assert why.mapTo(ready, QPoint(0, 0)).y() > max(tops)
        for dialog in (built, ready):
            dialog.close()
    assert len(PermissionDialog(question_for(command("make", plan=many))).rows) > 7


def test_a_worker_thread_gets_the_answer_given_in_the_dialog(qtbot, run, prompter):
    shown: list[str] = []
    waiting: list[int] = []
    prompter.question_shown.connect(shown.append)
    prompter.waiting_changed.connect(waiting.append)

    async def scenario() -> Asker:
        asker = Asker(prompter, file_read())
        await until(open_dialogs)
        assert not asker.done  # blocked until the person answers
        (dialog,) = open_dialogs()
        click(qtbot, dialog.choice_buttons[Choice.TIMED])
        dialog.duration_box.setCurrentIndex(2)
        await until(dialog.allow_button.isEnabled)
        click(qtbot, dialog.allow_button)
        await until(lambda: asker.done)
        return asker

    asker = run(scenario())
    assert asker.decision == PromptDecision(allow=True, mode=GrantMode.TIMED, duration_s=900)
    assert asker.thread_name != threading.main_thread().name
    assert shown == ["file_read"]
    assert waiting == [1, 0]
    assert not open_dialogs()


def deny_the_delivered_question(
    run: Any,
    deliver: Callable[[GuiPrompter], None],
    *,
    before: Callable[[], None] = lambda: None,
    check: Callable[[PermissionDialog], None] = lambda _dialog: None,
) -> tuple[GuiPrompter, Asker]:
    """The app's own prompter asked from a broker thread (`before` runs on that thread just
    ahead of the question); once it has handed the question over, `deliver` hands the UI thread
    what was posted, with no turn of the asyncio loop; the one dialog then on screen is
    `check`ed and denied."""
    gui = GuiPrompter()  # the app's own presenter
    presented = threading.Event()
    broker_side = gui.present

    def present(question: PermissionQuestion) -> None:
        before()
        broker_side(question)
        presented.set()

    gui.present = present  # type: ignore[method-assign]

    async def scenario() -> Asker:
        asker = Asker(gui, file_read())
        assert presented.wait(10)
        deliver(gui)
        (dialog,) = open_dialogs()
        check(dialog)
        dialog.deny_button.click()
        await until(lambda: asker.done and not open_dialogs())
        return asker

    try:
        asker = run(scenario())
    finally:
        gui.cancel_all()
    assert asker.decision == PromptDecision(allow=False, reason="user")
    return gui, asker


def test_the_apps_dialog_is_on_screen_in_the_same_event_that_brings_the_question(run):
    """The question's arrival on the UI thread shows its dialog before the loop runs anything
    else (a task would first let the chat's own repaint after Enter go ahead of it)."""

    def check(dialog: PermissionDialog) -> None:
        assert dialog.deny_button.isDefault()
        assert not dialog.armed

    # What was posted to the prompter (the question) and nothing else.
    deny_the_delivered_question(run, lambda gui: QApplication.sendPostedEvents(gui, 0), check=check)


def test_a_question_is_shown_ahead_of_what_the_turn_queued_for_the_ui_thread_before_it(run):
    """The turn reports its steps (routed, the policy's decision, the question asked) to the UI
    thread before it puts the question: the dialog goes on screen before those are handled."""
    order: list[str] = []

    class Reports(QObject):
        step = Signal(str)

    reports = Reports()
    reports.step.connect(order.append, Qt.ConnectionType.QueuedConnection)

    def report_first() -> None:  # from the broker's thread, queued before the question
        reports.step.emit("routed")
        reports.step.emit("asked")

    def deliver(gui: GuiPrompter) -> None:
        gui.question_shown.connect(lambda _capability: order.append("dialog"))
        QApplication.sendPostedEvents(None, 0)  # everything posted, in the order Qt takes it

    deny_the_delivered_question(run, deliver, before=report_first)
    assert order[:3] == ["dialog", "routed", "asked"]


def test_cancelling_the_wait_for_a_shown_question_closes_its_dialog_with_a_denial(qapp, run):
    question = question_for(file_read())

    async def scenario() -> None:
        waiting = asyncio.ensure_future(open_question(question))
        await asyncio.sleep(0.05)
        assert len(open_dialogs()) == 1
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    run(scenario())
    assert not open_dialogs()
    assert question.decision == PromptDecision(allow=False, reason="user")


def test_asking_on_the_ui_thread_denies_instead_of_freezing(prompter, caplog):
    started = time.monotonic()
    decision = pose(prompter, PermissionQuestion(file_read(), SystemClock()))
    assert decision == PromptDecision(allow=False, reason="error")
    # Frozen, it would wait out the question's whole 60 s; a third of that is generous on a
    # loaded machine and still fails when the UI thread blocks.
    assert time.monotonic() - started < 20
    assert "asked on the UI thread" in caplog.text
    assert not open_dialogs()


@pytest.mark.parametrize("reason", ["timeout", "cancelled"])
def test_cancel_from_another_thread_closes_the_open_dialog(run, prompter, reason):
    request = file_read()

    async def scenario() -> Asker:
        asker = Asker(prompter, request)
        await until(open_dialogs)
        # As the broker does from its thread: the deadline passing, or the person's Stop.
        canceller = threading.Thread(target=asker.question.cancel, args=(reason,))
        canceller.start()
        await until(lambda: asker.done and not open_dialogs())
        canceller.join(5)
        return asker

    asker = run(scenario())
    assert asker.decision == PromptDecision(allow=False, reason=reason)
    assert prompter.waiting == 0


@pytest.mark.parametrize("reason", ["timeout", "cancelled"])
def test_a_question_ended_while_its_dialog_is_on_screen_with_the_focus_raises_nothing(
    qtbot, run, prompter, reason
):
    """The deadline, or Stop, ends the question while its dialog is shown, exposed and active,
    the keyboard on one of its controls (the focus ring follows it): the dialog goes, is
    deleted, and the focus moving on afterwards raises nothing (once, "Internal C++ object
    already deleted" in the ring's focus handler)."""
    import shiboken6

    clock = ManualClock()
    elsewhere = QLineEdit()
    qtbot.addWidget(elsewhere)

    async def scenario() -> tuple[Asker, PermissionDialog]:
        asker = Asker(prompter, file_read(clock=clock, timeout_s=30), clock)
        await until(open_dialogs)
        (dialog,) = open_dialogs()
        handle = dialog.windowHandle()
        await until(lambda: handle is not None and handle.isExposed())
        dialog.activateWindow()
        await until(dialog.isActiveWindow)
        dialog.deny_button.setFocus()
        await until(lambda: QApplication.focusWidget() is dialog.deny_button)
        if reason == "timeout":
            clock.advance(30)  # the broker's deadline passes
        else:
            asker.question.cancel("cancelled")  # the person's Stop, from the broker's side
        await until(lambda: asker.done and not open_dialogs())
        # The dialog is deleted (deleteLater), then the focus moves on to another window.
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
        elsewhere.show()
        elsewhere.activateWindow()
        elsewhere.setFocus()
        await until(elsewhere.hasFocus)
        await asyncio.sleep(0.1)
        return asker, dialog

    with qtbot.captureExceptions() as raised:
        asker, dialog = run(scenario())
    assert raised == []
    assert asker.decision == PromptDecision(allow=False, reason=reason)
    assert not shiboken6.isValid(dialog)  # gone, not only hidden
    assert open_dialogs() == []


def test_at_the_brokers_deadline_the_dialog_closes_and_a_click_after_it_grants_nothing(
    qtbot, run, prompter
):
    clock = ManualClock()

    async def scenario() -> tuple[Asker, PermissionDialog]:
        asker = Asker(prompter, file_read(clock=clock, timeout_s=30), clock)
        await until(open_dialogs)
        (dialog,) = open_dialogs()
        click(qtbot, dialog.choice_buttons[Choice.SESSION])
        clock.advance(30)  # the person hesitates past the deadline on the broker's clock
        await until(lambda: asker.done and not open_dialogs())
        return asker, dialog

    asker, dialog = run(scenario())
    assert asker.decision == PromptDecision(allow=False, reason="timeout")
    # The click lands a moment too late: the question keeps it as late and stays denied.
    assert asker.question.answer(dialog.question.decision_for(Choice.SESSION)) is False
    assert asker.question.decision == PromptDecision(allow=False, reason="timeout")
    assert asker.question.late == PromptDecision(allow=True, mode=GrantMode.SESSION)


def test_several_prompts_are_shown_one_at_a_time_with_the_count_waiting(qtbot, run, prompter):
    waiting: list[int] = []
    prompter.waiting_changed.connect(waiting.append)
    requests = [file_read(call_id=f"call-{n}", scope=f"/home/ann/{n}") for n in range(3)]

    async def scenario() -> list[Asker]:
        askers = []
        for request in requests:
            askers.append(Asker(prompter, request))
            count = len(askers)
            await until(lambda count=count: prompter.waiting == count)
        await until(open_dialogs)
        seen_scopes = []
        for left in (2, 1, 0):
            await until(lambda: len(open_dialogs()) == 1)
            (dialog,) = open_dialogs()
            assert len(open_dialogs()) == 1  # never stacked
            if left:
                more = "request is" if left == 1 else "requests are"
                assert dialog.waiting_label.isVisible()
                assert dialog.waiting_label.text() == f"{left} more {more} waiting after this one"
            else:
                assert not dialog.waiting_label.isVisible()
            seen_scopes.append(dialog.rows["File"].toPlainText())
            (click(qtbot, dialog.deny_button) if left == 1 else click(qtbot, dialog.allow_button))
            await until(lambda d=dialog: not d.isVisible())
        await until(lambda: all(a.done for a in askers))
        assert seen_scopes == [r.scope for r in requests]  # in the order asked
        return askers

    askers = run(scenario())
    assert [a.decision for a in askers] == [
        PromptDecision(allow=True, mode=GrantMode.SESSION),
        PromptDecision(allow=False, reason="user"),
        PromptDecision(allow=True, mode=GrantMode.SESSION),
    ]
    assert waiting == [1, 2, 3, 2, 1, 0]


def test_a_queued_prompt_cancelled_before_its_turn_is_never_shown(qtbot, run, prompter):
    first, second = file_read(call_id="a", scope="/a"), file_read(call_id="b", scope="/b")

    async def scenario() -> tuple[Asker, Asker]:
        one = Asker(prompter, first)
        await until(open_dialogs)
        two = Asker(prompter, second)
        await until(lambda: prompter.waiting == 2)
        two.question.cancel("timeout")
        await until(lambda: two.done and prompter.waiting == 1)
        (dialog,) = open_dialogs()
        assert not dialog.waiting_label.isVisible()
        click(qtbot, dialog.deny_button)
        await until(lambda: one.done and not open_dialogs())
        return one, two

    one, two = run(scenario())
    assert two.decision == PromptDecision(allow=False, reason="timeout")
    assert one.decision == PromptDecision(allow=False, reason="user")


# --- end to end: a real Session asks through the dialog ---------------------------------------


def test_a_turn_asks_through_the_dialog_and_allow_for_5_min_grants_a_timed_lease(
    qtbot, run, app_home
):
    docs = app_home.parent / "user" / "Documents"
    docs.mkdir()
    (docs / "notes.txt").write_text("hello\n")
    (docs / "plan.md").write_text("# plan\n")
    settings = Settings()
    settings.permissions.timed_default_minutes = 15  # the dialog must not just take the default
    gui = GuiPrompter(present=functools.partial(present_question, activation_delay_s=0))
    assistant = QtSession(make_session(app_home, prompter=gui, settings=settings))

    async def scenario() -> Any:
        turn = asyncio.ensure_future(assistant.ask(f"list files in {docs}"))
        await until(lambda: open_dialogs() or turn.done())
        (dialog,) = open_dialogs()
        assert dialog.question.request.capability is Capability.FILE_READ
        click(qtbot, dialog.choice_buttons[Choice.TIMED])
        dialog.duration_box.setCurrentIndex(dialog.duration_box.findText("5 min"))
        await until(dialog.allow_button.isEnabled)
        assert dialog.allow_button.text().replace("&", "") == "Allow for 5 min"
        click(qtbot, dialog.allow_button)
        return await turn

    try:
        result = run(scenario())
        assert "notes.txt" in result.reply
        assert "plan.md" in result.reply
        timed = [
            g for g in assistant.session.permissions.grants.live() if g.mode is GrantMode.TIMED
        ]
        assert len(timed) == 1
        grant = timed[0]
        assert grant.capability is Capability.FILE_READ
        assert grant.expires_at is not None
        assert grant.expires_at - grant.issued_at == pytest.approx(300)
    finally:
        gui.cancel_all()
        assistant.close()


def test_stop_while_the_dialog_is_open_closes_it_and_ends_the_turn_as_cancelled(
    qtbot, run, app_home
):
    docs = app_home.parent / "user" / "Documents"
    docs.mkdir()
    gui = GuiPrompter()
    assistant = QtSession(make_session(app_home, prompter=gui))

    async def scenario() -> Any:
        turn = asyncio.ensure_future(assistant.ask(f"list files in {docs}"))
        await until(lambda: open_dialogs() or turn.done())
        assert open_dialogs()
        assert assistant.stop()
        result = await turn
        await until(lambda: not open_dialogs())
        return result

    try:
        result = run(scenario())
        assert result.status == "cancelled"
        assert gui.waiting == 0
        assert assistant.session.permissions.grants.live() == []
    finally:
        gui.cancel_all()
        assistant.close()


def test_markup_in_a_path_the_model_chose_is_shown_as_text_never_rendered(show):
    """A hostile model names a path full of markup: every label shows it literally."""
    hostile = '/home/ann/<a href="x">Documents</a><span style="font-size:0px">/.ssh</span>'
    _, dialog = show(file_read(scope=hostile, arguments={"path": hostile}, user_scope=False))
    labels = [w for w in dialog.findChildren(QLabel) if "<span" in w.text()]
    assert labels  # the rule and the notes quote the path
    assert all(label.textFormat() == Qt.TextFormat.PlainText for label in labels)
    assert dialog.rows["File"].toPlainText() == hostile  # the plan's row, as text

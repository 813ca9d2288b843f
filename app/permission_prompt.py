"""Permission questions for the desktop app: the broker's `PermissionQuestion`, shown in a dialog.

The broker asks on its worker thread and waits on the `PermissionQuestion` until the request's
deadline (`broker.permissions.pose`). `GuiPrompter.present` hands that question to the UI thread
through a queued signal and returns; there a `QuestionView` — a thin Qt view of the one
question, not a second state machine — is shown, one at a time. The person's answer is the
question's answer; the countdown reads the question's remaining time on the broker's clock; the
broker ending the question first (its deadline, Stop) closes the dialog.

`QuestionView` is what the dialog renders: the request, what may be offered for it, what each
choice decides and the countdown. The dialog (`app.permission_dialog`) only renders it and
forwards clicks, so everything that decides something is here and testable without a window.

This module never grants anything itself (the broker turns a decision into a grant), never
blocks the UI thread and never calls `QDialog.exec()`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QThread, QTimer, Signal

from broker.permissions import PermissionQuestion, PromptDecision
from broker.types import GrantMode
from tools.manual import Capability
from tools.scopes import read_only_command_scope

if TYPE_CHECKING:
    from app.permission_dialog import PermissionDialog

log = logging.getLogger("chamberlain.app.permission_prompt")

# What "Allow for …" offers, in minutes.
TIMED_MINUTES: tuple[float, ...] = (1.0, 5.0, 15.0, 60.0)
# How often the countdown is brought up to date.
TICK_S = 0.2
# The event that wakes the UI thread for questions the broker's thread has handed over.
_QUESTION_ARRIVED = QEvent.Type(QEvent.registerEventType())

# Capabilities that only look: a session-long grant is the natural answer for them.
READ_ONLY_CAPABILITIES = frozenset(
    {
        Capability.FILE_READ,
        Capability.SCREEN_READ,
        Capability.SYSTEM_READ,
        Capability.WEB_ACCESS,
        Capability.MCP_READ,
    }
)


class Choice(StrEnum):
    """What the person can answer."""

    ONCE = "once"
    TIMED = "timed"
    SESSION = "session"
    ALWAYS = "always"
    DENY = "deny"


def nearest_minutes(minutes: float) -> float:
    """The offered duration nearest to `minutes` (the shorter one on a tie)."""
    return min(TIMED_MINUTES, key=lambda offered: (abs(offered - minutes), offered))


class QuestionView(QObject):
    """The Qt face of one `PermissionQuestion`: what may be answered, and signals for the dialog.

    It holds no state of its own about the outcome: the answer, the deadline and the end are
    the question's (`broker.permissions.PermissionQuestion`), which the broker waits on.
    `answer` answers the question; the countdown reads its remaining time on the broker's clock
    and cancels it when it passes; the broker ending it (its timeout, Stop) is told through
    `question_ended`, on the UI thread. However it ends: `answered(decision)` then `closed()`.
    Lives on the UI thread.
    """

    # A PromptDecision, once.
    answered = Signal(object)
    # The question is over (answered, timed out or cancelled): its dialog closes.
    closed = Signal()
    # Seconds left before the question answers itself with a denial.
    remaining_changed = Signal(float)
    # How many more questions wait behind this one.
    queue_changed = Signal(int)

    def __init__(self, question: PermissionQuestion, *, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.question = question
        self.request = question.request
        self.shown_at: float | None = None
        self.queued_behind = 0
        self._told = False
        self._timer = QTimer(self)
        self._timer.setInterval(round(TICK_S * 1000))
        self._timer.timeout.connect(self._tick)

    # -- what is asked -------------------------------------------------------------------------

    @property
    def capability(self) -> Capability:
        return self.request.capability

    @property
    def timeout_s(self) -> float:
        """The figure that applied when the broker asked (the countdown's full length)."""
        return self.request.timeout_s

    @property
    def model_initiated(self) -> bool:
        """The model asked on its own, for something the person's words did not name."""
        return not self.request.user_scope

    @property
    def high_risk(self) -> bool:
        return self.request.risk == "dangerous"

    @property
    def read_only(self) -> bool:
        if self.capability is Capability.SYSTEM_EXECUTE:
            return read_only_command_scope(self.request.scope)
        return self.capability in READ_ONLY_CAPABILITIES

    # -- what may be answered ------------------------------------------------------------------

    @property
    def choices(self) -> list[Choice]:
        """The answers offered, in the order they are shown."""
        if self.request.once_only:
            return [Choice.ONCE, Choice.DENY]
        offered = [Choice.ONCE, Choice.TIMED, Choice.SESSION]
        if self.offers_always:
            offered.append(Choice.ALWAYS)
        return [*offered, Choice.DENY]

    @property
    def offers_always(self) -> bool:
        """Whether "Always" is offered: only where the broker will save it as shown; else the
        request says why (`always_unavailable`) and the dialog shows that instead."""
        return not self.request.once_only and not self.request.always_unavailable

    @property
    def preselected(self) -> Choice:
        """The answer selected when the dialog opens (nothing is answered until a click).

        A session for what only looks, when the person's own words named it; otherwise once,
        the narrowest grant: a request the model made on its own is never pre-selected broadly.
        """
        if self.read_only and not self.model_initiated and Choice.SESSION in self.choices:
            return Choice.SESSION
        return Choice.ONCE

    @property
    def default_minutes(self) -> float:
        return nearest_minutes(self.request.timed_s / 60)

    def decision_for(self, choice: Choice, minutes: float | None = None) -> PromptDecision:
        """What answering `choice` decides. Raises ValueError for a choice not offered."""
        if choice not in self.choices:
            raise ValueError(f"{choice.value!r} is not offered for this request")
        if choice is Choice.DENY:
            return PromptDecision(allow=False, reason="user")
        if choice is Choice.TIMED:
            chosen = self.default_minutes if minutes is None else minutes
            if chosen not in TIMED_MINUTES:
                raise ValueError(f"{chosen:g} minutes is not one of the offered durations")
            return PromptDecision(allow=True, mode=GrantMode.TIMED, duration_s=chosen * 60)
        mode = {
            Choice.ONCE: GrantMode.ONCE,
            Choice.SESSION: GrantMode.SESSION,
            Choice.ALWAYS: GrantMode.ALWAYS,
        }[choice]
        return PromptDecision(allow=True, mode=mode)

    # -- answering -----------------------------------------------------------------------------

    @property
    def decision(self) -> PromptDecision | None:
        return self.question.decision

    @property
    def done(self) -> bool:
        return self.question.done

    def choose(self, choice: Choice, minutes: float | None = None) -> bool:
        """Answer with `choice`; False when the question had already ended."""
        return self.answer(self.decision_for(choice, minutes))

    def answer(self, decision: PromptDecision) -> bool:
        """End the question with `decision`; False (and ignored) when it had already ended."""
        accepted = self.question.answer(decision)
        self.question_ended()
        return accepted

    def cancel(self, reason: Literal["timeout", "cancelled", "error"]) -> bool:
        """End the question unanswered: a denial recorded with `reason`."""
        ended = self.question.cancel(reason)
        self.question_ended()
        return ended

    def question_ended(self) -> None:
        """The question is over, whoever ended it: tell the dialog once (UI thread)."""
        if self._told or not self.question.done:
            return
        self._told = True
        self._timer.stop()
        self.answered.emit(self.question.decision)
        self.closed.emit()

    # -- the countdown -------------------------------------------------------------------------

    @property
    def deadline(self) -> float:
        return self.question.deadline

    def remaining_s(self) -> float:
        return self.question.remaining_s()

    def start(self) -> None:
        """The question is on screen: the countdown runs (it may end it at once)."""
        if self.done:
            self.question_ended()
            return
        if self.shown_at is None:
            self.shown_at = self.question.clock.now()
        self._timer.start()
        self._tick()

    def _tick(self) -> None:
        if self.done:
            self.question_ended()
            return
        left = self.remaining_s()
        self.remaining_changed.emit(left)
        if left <= 0:
            self.cancel("timeout")

    def set_queued_behind(self, count: int) -> None:
        if count != self.queued_behind:
            self.queued_behind = count
            self.queue_changed.emit(count)


# Shows a question and returns once it is over (the default opens a PermissionDialog).
Presenter = Callable[[QuestionView], Awaitable[object]]

# After a question's dialog closed, the next one is made ready this much later: making it keeps
# the UI thread ~5 ms, after the dialog has gone, while the turn goes on on its own thread.
SPARE_AFTER_MS = 50


class GuiPrompter(QObject):
    """The broker's Prompter for the desktop app: questions answered in dialogs, one at a time.

    The broker hands it each `PermissionQuestion` (`present`, on the broker's worker thread)
    and waits on that question itself until its deadline; the prompter shows it on the UI
    thread and the dialog's answer answers it. When the broker ends a question first (its
    deadline, Stop), the end reaches the UI thread and the dialog closes. Quitting withdraws
    every open question (`cancel_all`). Create it on the UI thread; every view, its dialog and
    the queue are only ever touched there.
    """

    # A question's dialog was shown: its capability value (the tray may say what is asked).
    question_shown = Signal(str)
    # How many questions are open or waiting for their turn.
    waiting_changed = Signal(int)
    # Private: a PermissionQuestion that ended (answered elsewhere, timed out or stopped).
    _ended = Signal(object)

    def __init__(
        self,
        *,
        present: Presenter | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._present_question: Presenter = present or self._present_in_dialog
        # Its own dialogs (no presenter given): `prepare` keeps one ready from then on.
        self._own_dialogs = present is None
        self._spare: PermissionDialog | None = None
        self._keep_spare = False
        self._spare_timer = QTimer(self)
        self._spare_timer.setSingleShot(True)
        self._spare_timer.setInterval(SPARE_AFTER_MS)
        self._spare_timer.timeout.connect(self._make_spare)
        # UI thread only: each question's view, the one on screen and those waiting.
        self._views: dict[int, QuestionView] = {}
        self._current: QuestionView | None = None
        self._queue: list[QuestionView] = []
        self._waiting = 0
        self._tasks: set[asyncio.Task[None]] = set()
        # Questions from the broker's thread, on their way to the UI thread (`present`).
        self._arriving: collections.deque[PermissionQuestion] = collections.deque()
        self._ended.connect(self._on_question_ended, Qt.ConnectionType.QueuedConnection)

    def prepare(self) -> None:
        """Get the dialog ready before the first question (UI thread, when the app is idle):
        its first build costs tens of milliseconds more than later ones, and every build
        ~10 ms of the time from a person's Enter to the question on screen. Shows nothing;
        from then on one dialog is kept ready, hidden (`spare_dialog`), and after each
        question another is made ready for the next; `cancel_all` ends that."""
        if not self._own_dialogs:
            return
        from app.permission_dialog import warm_up

        warm_up()
        self._keep_spare = True
        self._make_spare()

    def _make_spare(self) -> None:
        if self._keep_spare and self._spare is None:
            from app.permission_dialog import spare_dialog

            self._spare = spare_dialog()

    def _drop_spare(self) -> None:
        self._keep_spare = False
        self._spare_timer.stop()
        spare, self._spare = self._spare, None
        if spare is not None:
            # Here on the UI thread, now: never left to Python's collector on another thread.
            shiboken6.delete(spare)

    def _present_in_dialog(self, question: QuestionView) -> Awaitable[object]:
        # Imported here: the dialog module renders QuestionView, so it imports this one.
        from app.permission_dialog import open_question

        # Shown now, in the slot that received the question: in the dialog made ready before,
        # if there is one (`prepare`), else in one built now.
        spare, self._spare = self._spare, None
        return open_question(question, dialog=spare)

    # -- the broker's side (any thread) --------------------------------------------------------

    def present(self, question: PermissionQuestion) -> None:
        """Show `question` on the UI thread; returns at once (the broker waits on it)."""
        if QThread.currentThread() == self.thread():
            # The broker would then block the very loop that must show the dialog.
            log.error(
                "a permission prompt was asked on the UI thread; it was denied instead of "
                "freezing the app (%s for %s)",
                question.request.capability.value,
                question.request.tool,
            )
            question.cancel("error")
            return
        question.add_done_callback(self._ended.emit)
        # Posted ahead of everything else queued for the UI thread: the turn's own events
        # (routed, the policy's decision, the question asked) are queued before it, and the UI
        # thread handling them first had kept the dialog waiting ~1 ms (bench/prompt_latency.py).
        self._arriving.append(question)
        QCoreApplication.postEvent(
            self, QEvent(_QUESTION_ARRIVED), int(Qt.EventPriority.HighEventPriority.value)
        )

    # -- the UI thread -------------------------------------------------------------------------

    @property
    def current(self) -> QuestionView | None:
        """The question on screen, if any."""
        return self._current

    @property
    def waiting(self) -> int:
        """Questions open or queued."""
        return self._waiting

    def cancel_all(self, reason: Literal["timeout", "cancelled"] = "cancelled") -> None:
        """Withdraw every open question (the app is quitting): each waiting broker gets a
        denial with `reason` and every dialog closes."""
        for view in [*self._queue, *([self._current] if self._current else [])]:
            view.cancel(reason)
        self._queue.clear()
        self._update_waiting()
        self._drop_spare()

    def customEvent(self, event: QEvent) -> None:
        if event.type() != _QUESTION_ARRIVED:
            super().customEvent(event)
            return
        while self._arriving:
            self._enqueue(self._arriving.popleft())

    def _enqueue(self, question: PermissionQuestion) -> None:
        if question.done:
            return  # ended before it reached the UI thread
        # Owned by this prompter and deleted (deleteLater) on this thread once over: never by
        # Python's collector, which may run on any thread.
        view = QuestionView(question, parent=self)
        self._views[id(question)] = view
        view.answered.connect(lambda _decision: self._on_answered(view))
        self._queue.append(view)
        self._update_waiting()
        if self._current is None:
            self._show_next()

    def _on_question_ended(self, question: PermissionQuestion) -> None:
        view = self._views.get(id(question))
        if view is not None:
            view.question_ended()

    def _on_answered(self, question: QuestionView) -> None:
        self._views.pop(id(question.question), None)
        presented = question.shown_at is not None
        if not presented:
            question.deleteLater()  # a presented one goes when its presenter has finished
        if self._current is question:
            self._current = None
        elif question in self._queue:
            self._queue.remove(question)
        self._update_waiting()
        if self._current is None:
            self._show_next()

    def _show_next(self) -> None:
        while self._queue:
            question = self._queue.pop(0)
            if question.done:
                continue
            self._current = question
            self._update_waiting()
            self.question_shown.emit(question.capability.value)
            self._start_presenting(question)
            # Last: a question whose time ran out while it queued ends here, and the next shows.
            question.start()
            return
        self._update_waiting()

    def _start_presenting(self, question: QuestionView) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # The app always runs under its qasync loop; without one no dialog can be awaited.
            log.error("cannot show the permission dialog: no asyncio loop is running; denied")
            question.cancel("error")
            return
        question.shown_at = question.question.clock.now()
        # Called here, not in the task: the default presenter shows the dialog before the loop
        # goes on with what was queued before the question (the chat repainting after Enter).
        try:
            presenting = self._present_question(question)
        except Exception:  # a broken dialog must deny, never leave the broker waiting
            log.exception("the permission dialog failed; the request was denied")
            question.cancel("error")
            question.deleteLater()
            return
        task = loop.create_task(self._present(question, presenting))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _present(self, question: QuestionView, presenting: Awaitable[object]) -> None:
        try:
            await presenting
        except Exception:  # a broken dialog must deny, never leave the broker waiting
            log.exception("the permission dialog failed; the request was denied")
            question.cancel("error")
        else:
            if not question.done:
                log.error("the permission dialog closed without an answer; it was denied")
                question.cancel("error")
        finally:
            question.deleteLater()
            if self._keep_spare and self._spare is None:
                self._spare_timer.start()

    def _update_waiting(self) -> None:
        queued = sum(1 for q in self._queue if not q.done)
        if self._current is not None:
            self._current.set_queued_behind(queued)
        count = queued + (1 if self._current is not None else 0)
        if count != self._waiting:
            self._waiting = count
            self.waiting_changed.emit(count)

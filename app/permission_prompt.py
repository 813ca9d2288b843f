"""Permission questions for the desktop app, and the bridge from the broker's blocking Prompter.

The broker asks for permission on a worker thread and blocks until it has an answer
(`broker.permissions.ask_within`). `GuiPrompter` is that Prompter for the desktop app: `ask()`
hands a `PermissionQuestion` to the UI thread through a queued signal and waits on a
`threading.Event`; the UI thread shows the questions one at a time and the person's answer, a
countdown ending or a `cancel()` (the broker's timeout, or Stop) releases the waiting thread.

`PermissionQuestion` is the model the dialog renders: the request, what may be offered for it,
what each choice decides and the countdown. The dialog (`app.permission_dialog`) only renders it
and forwards clicks, so everything that decides something is here and testable without a window.

This module never grants anything itself (the broker turns a decision into a grant), never
blocks the UI thread and never calls `QDialog.exec()`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Literal

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal

from broker.clock import Clock, SystemClock
from broker.permissions import PendingPrompt, PermissionRequest, PromptDecision
from broker.types import GrantMode
from tools.manual import Capability
from tools.scopes import READONLY, READONLY_IN

log = logging.getLogger("chamberlain.app.permission_prompt")

# What "Allow for …" offers, in minutes.
TIMED_MINUTES: tuple[float, ...] = (1.0, 5.0, 15.0, 60.0)
# How often the countdown is brought up to date.
TICK_S = 0.2

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


def read_only_command_scope(scope: str) -> bool:
    """Whether a system_execute scope is the read-only class (`readonly`, `readonly-in:…`)."""
    return scope == READONLY or scope.startswith(READONLY_IN)


def nearest_minutes(minutes: float) -> float:
    """The offered duration nearest to `minutes` (the shorter one on a tie)."""
    return min(TIMED_MINUTES, key=lambda offered: (abs(offered - minutes), offered))


class PermissionQuestion(QObject):
    """One permission question: what is asked, what may be answered, and the countdown.

    The first answer wins; later ones are ignored. `answer`, `cancel` and the countdown all end
    it the same way: `answered(decision)` then `closed()`. Lives on the UI thread.
    """

    # A PromptDecision, once.
    answered = Signal(object)
    # The question is over (answered, timed out or cancelled): its dialog closes.
    closed = Signal()
    # Seconds left before the question answers itself with a denial.
    remaining_changed = Signal(float)
    # How many more questions wait behind this one.
    queue_changed = Signal(int)

    def __init__(
        self,
        request: PermissionRequest,
        timeout_s: float,
        *,
        timed_default_minutes: float = 5.0,
        clock: Clock | None = None,
        asked_at: float | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.request = request
        self.timeout_s = timeout_s
        self.timed_default_minutes = timed_default_minutes
        self._clock: Clock = clock or SystemClock()
        # The countdown runs from when the broker asked, which is when its own timeout starts;
        # a question that waited in the queue shows only the time it really has left.
        self.asked_at = self._clock.now() if asked_at is None else asked_at
        self.shown_at: float | None = None
        self.decision: PromptDecision | None = None
        self.queued_behind = 0
        self._timer = QTimer(self)
        self._timer.setInterval(round(TICK_S * 1000))
        self._timer.timeout.connect(self._tick)

    # -- what is asked -------------------------------------------------------------------------

    @property
    def capability(self) -> Capability:
        return self.request.capability

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
        """A saved rule is never offered for code that cannot be shown, for the highest risk, or
        for a command other than the read-only class (a saved rule for one exact line would
        outlive the reason it was typed)."""
        if self.request.once_only or self.high_risk:
            return False
        if self.capability is Capability.SYSTEM_EXECUTE:
            return read_only_command_scope(self.request.scope)
        return True

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
        return nearest_minutes(self.timed_default_minutes)

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
    def done(self) -> bool:
        return self.decision is not None

    def choose(self, choice: Choice, minutes: float | None = None) -> bool:
        """Answer with `choice`; False when the question had already ended."""
        return self.answer(self.decision_for(choice, minutes))

    def answer(self, decision: PromptDecision) -> bool:
        """End the question with `decision`; False (and ignored) when it had already ended."""
        if self.decision is not None:
            return False
        self.decision = decision
        self._timer.stop()
        self.answered.emit(decision)
        self.closed.emit()
        return True

    def cancel(self, reason: Literal["timeout", "cancelled"]) -> bool:
        """End the question unanswered: a denial recorded with `reason`."""
        return self.answer(PromptDecision(allow=False, reason=reason))

    # -- the countdown -------------------------------------------------------------------------

    @property
    def deadline(self) -> float:
        return self.asked_at + self.timeout_s

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - self._clock.now())

    def start(self) -> None:
        """The question is on screen: the countdown runs (it may end it at once)."""
        if self.done:
            return
        if self.shown_at is None:
            self.shown_at = self._clock.now()
        self._timer.start()
        self._tick()

    def _tick(self) -> None:
        if self.done:
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
Presenter = Callable[[PermissionQuestion], Awaitable[object]]


async def _present_in_dialog(question: PermissionQuestion) -> object:
    # Imported here: the dialog module renders PermissionQuestion, so it imports this one.
    from app.permission_dialog import present_question

    return await present_question(question)


class _Ticket:
    """One `ask()` in flight, shared by the asking thread and the UI thread (under a lock)."""

    def __init__(self, request: PermissionRequest, asked_at: float) -> None:
        self.request = request
        self.asked_at = asked_at
        # Only touched on the UI thread.
        self.question: PermissionQuestion | None = None
        self.presented = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._decision: PromptDecision | None = None

    @property
    def resolved(self) -> bool:
        return self._done.is_set()

    def resolve(self, decision: PromptDecision) -> bool:
        with self._lock:
            if self._done.is_set():
                return False
            self._decision = decision
            self._done.set()
            return True

    def wait(self, timeout_s: float) -> PromptDecision | None:
        self._done.wait(timeout_s)
        with self._lock:
            return self._decision


class GuiPrompter(QObject):
    """The broker's Prompter for the desktop app: questions answered in dialogs, one at a time.

    Create it on the UI thread. `ask` and `cancel` are called on the broker's threads; every
    question, its dialog and the queue are only ever touched on the UI thread.
    """

    # A question's dialog was shown: its capability value (the tray may say what is asked).
    question_shown = Signal(str)
    # How many questions are open or waiting for their turn.
    waiting_changed = Signal(int)
    # Private: a _Ticket to show / to withdraw, from the broker's threads to the UI thread.
    _asked = Signal(object)
    # Private: (a _Ticket, "timeout" | "cancelled") whose question must close.
    _withdrawn = Signal(object)

    # How much longer than its countdown `ask` waits for the UI before it gives up on its own.
    GRACE_S = 5.0

    def __init__(
        self,
        timeout_s: float,
        timed_default_minutes: float,
        *,
        present: Presenter | None = None,
        clock: Clock | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.timeout_s = timeout_s
        self.timed_default_minutes = timed_default_minutes
        self._present_question: Presenter = present or _present_in_dialog
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        # Every ask() still blocked (any thread, under the lock).
        self._asking: list[_Ticket] = []
        # Requests cancelled before their ask() had even started (a Stop racing the prompt).
        self._cancelled_early: deque[PermissionRequest] = deque(maxlen=32)
        # UI thread only: the question on screen and those waiting for it, in order.
        self._current: _Ticket | None = None
        self._queue: list[_Ticket] = []
        self._waiting = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._asked.connect(self._enqueue, Qt.ConnectionType.QueuedConnection)
        self._withdrawn.connect(self._withdraw, Qt.ConnectionType.QueuedConnection)

    # -- the Prompter protocol (broker threads) ------------------------------------------------

    def ask(self, request: PermissionRequest) -> PromptDecision:
        """Show the question on the UI thread and block this thread until it is over."""
        if QThread.currentThread() == self.thread():
            # Blocking here would freeze the very loop that must show the dialog.
            log.error(
                "a permission prompt was asked on the UI thread; it was denied instead of "
                "freezing the app (%s for %s)",
                request.capability.value,
                request.tool,
            )
            return PromptDecision(allow=False, reason="error")
        ticket = _Ticket(request, self._clock.now())
        with self._lock:
            for early in self._cancelled_early:
                if early is request:
                    self._cancelled_early.remove(early)
                    return PromptDecision(allow=False, reason="cancelled")
            self._asking.append(ticket)
        try:
            self._asked.emit(ticket)
            decision = ticket.wait(self.timeout_s + self.GRACE_S)
            if decision is None:
                log.error("the permission dialog did not answer in time; denied as a timeout")
                ticket.resolve(PromptDecision(allow=False, reason="timeout"))
                self._withdrawn.emit((ticket, "timeout"))
                decision = ticket.wait(0)
            assert decision is not None  # resolved just above at the latest
            return decision
        finally:
            with self._lock:
                self._asking.remove(ticket)

    def cancel(self, pending: PendingPrompt) -> None:
        """The broker gave up on `pending` (its timeout, or the person's Stop): close it."""
        ended = pending.wait(0)
        reason: Literal["timeout", "cancelled"] = (
            "cancelled" if ended is not None and ended.reason == "cancelled" else "timeout"
        )
        with self._lock:
            ticket = next((t for t in self._asking if t.request is pending.request), None)
            if ticket is None:
                self._cancelled_early.append(pending.request)
                return
        # The asking thread is released now, whether or not the UI thread is free to close the
        # dialog yet.
        ticket.resolve(PromptDecision(allow=False, reason=reason))
        self._withdrawn.emit((ticket, reason))

    # -- the UI thread -------------------------------------------------------------------------

    @property
    def current(self) -> PermissionQuestion | None:
        """The question on screen, if any."""
        return self._current.question if self._current is not None else None

    @property
    def waiting(self) -> int:
        """Questions open or queued."""
        return self._waiting

    def cancel_all(self, reason: Literal["timeout", "cancelled"] = "cancelled") -> None:
        """Close every question (the app is quitting): each waiting thread gets a denial."""
        with self._lock:
            asking = list(self._asking)
        for ticket in asking:
            ticket.resolve(PromptDecision(allow=False, reason=reason))
        for ticket in [*self._queue, *([self._current] if self._current else [])]:
            if ticket.question is not None:
                ticket.question.cancel(reason)
        self._queue.clear()
        self._update_waiting()

    def _enqueue(self, ticket: _Ticket) -> None:
        if ticket.resolved:
            return  # cancelled before it reached the UI thread
        # Owned by this prompter and deleted (deleteLater) on this thread once over: never by
        # Python's collector, which may run on any thread.
        question = PermissionQuestion(
            ticket.request,
            self.timeout_s,
            timed_default_minutes=self.timed_default_minutes,
            clock=self._clock,
            asked_at=ticket.asked_at,
            parent=self,
        )
        ticket.question = question
        question.answered.connect(lambda decision: self._on_answered(ticket, decision))
        self._queue.append(ticket)
        self._update_waiting()
        if self._current is None:
            self._show_next()

    def _withdraw(self, message: tuple[_Ticket, Literal["timeout", "cancelled"]]) -> None:
        ticket, reason = message
        question = ticket.question
        if question is not None:
            question.cancel(reason)

    def _on_answered(self, ticket: _Ticket, decision: PromptDecision) -> None:
        ticket.resolve(decision)
        question = ticket.question
        # The asking thread may hold the ticket last: it must not be what frees a QObject.
        ticket.question = None
        if question is not None and not ticket.presented:
            question.deleteLater()  # a presented one goes when its presenter has finished
        if self._current is ticket:
            self._current = None
        elif ticket in self._queue:
            self._queue.remove(ticket)
        self._update_waiting()
        if self._current is None:
            self._show_next()

    def _show_next(self) -> None:
        while self._queue:
            ticket = self._queue.pop(0)
            question = ticket.question
            if question is None or question.done or ticket.resolved:
                continue
            self._current = ticket
            self._update_waiting()
            self.question_shown.emit(question.capability.value)
            self._start_presenting(ticket, question)
            # Last: a question whose time ran out while it queued ends here, and the next shows.
            question.start()
            return
        self._update_waiting()

    def _start_presenting(self, ticket: _Ticket, question: PermissionQuestion) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # The app always runs under its qasync loop; without one no dialog can be awaited.
            log.error("cannot show the permission dialog: no asyncio loop is running; denied")
            question.answer(PromptDecision(allow=False, reason="error"))
            return
        ticket.presented = True
        task = loop.create_task(self._present(question))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _present(self, question: PermissionQuestion) -> None:
        try:
            await self._present_question(question)
        except Exception:  # a broken dialog must deny, never leave the asking thread blocked
            log.exception("the permission dialog failed; the request was denied")
            question.answer(PromptDecision(allow=False, reason="error"))
        else:
            if not question.done:
                log.error("the permission dialog closed without an answer; it was denied")
                question.answer(PromptDecision(allow=False, reason="error"))
        finally:
            question.deleteLater()

    def _update_waiting(self) -> None:
        queued = sum(1 for t in self._queue if not t.resolved)
        if self._current is not None and self._current.question is not None:
            self._current.question.set_queued_behind(queued)
        count = queued + (1 if self._current is not None else 0)
        if count != self._waiting:
            self._waiting = count
            self.waiting_changed.emit(count)

"""Stopping a turn: one signal per turn that the person's Stop (or Ctrl-C) fires.

Whatever a turn is waiting on registers what ends that wait: the model client cuts its
connection, a running command ends its process groups, a permission prompt is resolved as
cancelled. Code between waits calls `check()`, which raises `Stopped` once the signal fired.

The signal travels with the turn as a context variable (`stopping`), so the tools and the model
client find it without every signature in between naming it; the tool runner copies the context
into the thread a tool runs on. This module must never import the broker or the app.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger("chamberlain.tools.stop")


class Stopped(Exception):
    """The turn was stopped by the person; whatever was under way has been ended."""

    def __init__(self, message: str = "Stopped.") -> None:
        super().__init__(message)


class StopSignal:
    """Fired once, from any thread; every registered callback runs once, right away."""

    def __init__(self) -> None:
        self._fired = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], object]] = {}
        self._next = 0

    @property
    def stopped(self) -> bool:
        return self._fired.is_set()

    def stop(self) -> None:
        """Fire the signal (again is harmless): run every registered callback now."""
        with self._lock:
            if self._fired.is_set():
                return
            self._fired.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            _run(callback)

    def on_stop(self, callback: Callable[[], object]) -> Callable[[], object]:
        """Run `callback` when the signal fires (now, if it has). Returns the way to unregister
        it, which the waiter calls once its wait is over."""
        with self._lock:
            if not self._fired.is_set():
                key = self._next
                self._next += 1
                self._callbacks[key] = callback

                def forget() -> None:
                    with self._lock:
                        self._callbacks.pop(key, None)

                return forget
        _run(callback)
        return _nothing

    def check(self) -> None:
        """Raise `Stopped` if the signal has fired."""
        if self._fired.is_set():
            raise Stopped()

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to `timeout_s`, waking at once when the signal fires; True if it fired."""
        return self._fired.wait(timeout_s)


def _run(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:  # a broken stop hook must not keep the others from running
        log.exception("a stop callback failed")


def _nothing() -> None:
    return None


_CURRENT: contextvars.ContextVar[StopSignal | None] = contextvars.ContextVar(
    "chamberlain_stop", default=None
)


def current_stop() -> StopSignal | None:
    """The signal of the turn running in this context, if any."""
    return _CURRENT.get()


def check_stopped() -> None:
    """Raise `Stopped` if the current turn's signal has fired."""
    signal = _CURRENT.get()
    if signal is not None:
        signal.check()


@contextlib.contextmanager
def stopping(signal: StopSignal | None) -> Iterator[StopSignal | None]:
    """Make `signal` the current turn's for the block."""
    token = _CURRENT.set(signal)
    try:
        yield signal
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def stop_hook(callback: Callable[[], object]) -> Iterator[StopSignal | None]:
    """Within the block, the current turn's Stop runs `callback` (at once if it already fired)."""
    signal = _CURRENT.get()
    if signal is None:
        yield None
        return
    forget = signal.on_stop(callback)
    try:
        yield signal
    finally:
        forget()

"""A turn on a thread of its own, stopped by Ctrl-C: what `ask` and `chat` share.

The command line's main thread never runs a turn itself. It waits for the turn's thread, looking
every `WAKE_S` whether Ctrl-C was pressed; if it was, it fires the turn's StopSignal, as the
app's Stop button does: the model's connection is cut, a running command's process groups end,
a permission prompt on the terminal ends as cancelled, and the turn ends as cancelled — its tool
calls closed in the audit, its one-shot grants ended, its summary written — before anything else
happens. Ctrl-C's handler only marks that it was pressed (`CtrlC`): a KeyboardInterrupt raised
wherever the main thread happened to be (an audit line being written, a conversation being
kept) could leave it half-done, and a signal that another thread took (a native library's own)
would never wake a wait blocked in one call.

This module never imports Qt or the chat (plain `ask` stays light), and it decides nothing about
the turn: it runs what it is given and says whether Ctrl-C stopped it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Generic, TypeVar

from tools.stop import StopSignal

# How often the main thread looks whether Ctrl-C was pressed while it waits (for a line, for a
# turn).
WAKE_S = 0.2

T = TypeVar("T")


class CtrlC:
    """Ctrl-C as the command line takes it while a turn may run: the signal handler only marks
    it, and the code that waits acts on it where it waits (`take`)."""

    def __init__(self) -> None:
        self.pressed = False

    def __call__(self, signum: int, frame: object) -> None:
        self.pressed = True

    def take(self) -> bool:
        """Whether Ctrl-C was pressed since last asked."""
        pressed, self.pressed = self.pressed, False
        return pressed


@contextlib.contextmanager
def ctrl_c_marked() -> Iterator[CtrlC]:
    """Within the block, Ctrl-C only marks the CtrlC it yields; the previous handler (Python's
    KeyboardInterrupt) comes back after it."""
    ctrl_c = CtrlC()
    previous = signal.signal(signal.SIGINT, ctrl_c)
    try:
        yield ctrl_c
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class Ran(Generic[T]):
    """What a turn run by `run_stoppable` gave, and whether Ctrl-C fired its stop (it may have
    ended on its own all the same, the stop coming after its last step)."""

    value: T
    stopped: bool


def run_stoppable(
    turn: Callable[[StopSignal], T],
    ctrl_c: CtrlC,
    *,
    stopping: Callable[[], None] | None = None,
    name: str = "chamberlain-turn",
) -> Ran[T]:
    """Run `turn(stop)` on a thread of its own and wait for it; Ctrl-C meanwhile fires `stop`
    (and calls `stopping`, to say so), a second one only waits on. The turn always ends: it is
    waited for whatever happens, so nothing it writes is cut off. An exception it raised is
    raised here."""
    stop = StopSignal()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(turn(stop))
        except BaseException as exc:  # noqa: BLE001 - raised again on the waiting thread
            failure.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    while True:
        thread.join(WAKE_S)
        if not thread.is_alive():
            break
        if ctrl_c.take() and not stop.stopped:
            stop.stop()
            if stopping is not None:
                stopping()
    if failure:
        raise failure[0]
    return Ran(outcome[0], stop.stopped)


def hidden_line(prompt: str, stream: IO[str]) -> str:
    """A line typed at the terminal (stdin) with its echo off, as getpass reads a passphrase,
    that the running turn's Stop ends: a passphrase asked in the middle of a turn (memory opened
    when the turn first needs it) is read on the turn's thread, where Ctrl-C only fires the
    stop, so the read looks at the stop every `WAKE_S` and raises `Stopped` once it fired. On
    the main thread Ctrl-C raises KeyboardInterrupt out of the wait as anywhere else. The
    terminal's settings come back however it ends; EOFError at end of input (Ctrl-D)."""
    import os
    import select
    import termios

    from tools.stop import Stopped, current_stop

    fd = sys.stdin.fileno()
    stop = current_stop()
    before = termios.tcgetattr(fd)
    quiet = list(before)
    quiet[3] &= ~termios.ECHO  # the local modes: no echo, the line still edited by the terminal
    # TCSAFLUSH, as getpass: what was typed before the question is not taken as its answer; the
    # question is shown only once the echo is off, so nothing typed after it is shown.
    termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
    typed = b""
    try:
        stream.write(prompt)
        stream.flush()
        while b"\n" not in typed:
            if stop is not None and stop.stopped:
                raise Stopped()
            if not select.select([fd], [], [], WAKE_S)[0]:
                continue
            chunk = os.read(fd, 1024)
            if not chunk:
                if not typed:
                    raise EOFError
                break
            typed += chunk
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, before)
        # The person's Enter was not echoed: end the prompt's line.
        stream.write("\n")
        stream.flush()
    return typed.partition(b"\n")[0].decode(errors="replace")

"""The real `chamberlain` CLI on a pseudo-terminal, as a person at a terminal runs it: stdin,
stdout and stderr are all the pty, which is also its controlling terminal, so Ctrl-C typed there
is a real SIGINT and Ctrl-D a real end of input. The terminal is the only stand-in here.

`read_until(text)` waits for `text` to appear after what the last read consumed, so a prompt
shown again ("> ") is told apart from the one before it.
"""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.cli import cli_env

CTRL_C = "\x03"
CTRL_D = "\x04"


class PtySession:
    """`chamberlain ARGS` with HOME=user (tests.support.cli's environment) on a pty."""

    def __init__(self, user: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()

        def take_the_terminal() -> None:  # runs in the child, after setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args],
            cwd=user,
            env=cli_env(user, {"TERM": "dumb", **(env or {})}),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=take_the_terminal,  # only an ioctl: safe even with threads running
        )
        os.close(slave)
        self.screen = ""
        # Where the next read_until starts looking.
        self.mark = 0

    def _read(self, timeout: float) -> bool:
        """Read what the terminal shows within `timeout`; False when the program closed it."""
        if not select.select([self.master], [], [], timeout)[0]:
            return True
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # the child closed the terminal
            return False
        if not chunk:
            return False
        self.screen += chunk.decode(errors="replace")
        return True

    def read_until(self, text: str, timeout: float = 30.0) -> str:
        """Wait for `text` after the mark; returns what the terminal showed up to its end and
        moves the mark past it."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(text, self.mark)) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(remaining):
                shown = self.screen[self.mark :]
                raise AssertionError(f"{text!r} never appeared; the terminal shows {shown!r}")
        end = found + len(text)
        seen, self.mark = self.screen[self.mark : end], end
        return seen

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        """Wait for the exit (the terminal closed by its last holder); (exit code, everything
        the terminal showed after the mark)."""
        deadline = time.monotonic() + timeout
        while self._read(0.2):
            if time.monotonic() > deadline:
                raise AssertionError(f"still running; the terminal shows {self.screen!r}")
        self.proc.wait(timeout=10)
        return self.proc.returncode, self.screen[self.mark :]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


@contextmanager
def pty_session(user: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[PtySession]:
    """A PtySession that is killed (if still running) and closed however the test ends."""
    session = PtySession(user, *args, env=env)
    try:
        yield session
    finally:
        session.close()

"""The CLI in a real terminal: a pseudo-terminal is its stdin and stderr (and its controlling
terminal, so Ctrl-C typed there is a real SIGINT), as when a person runs it by hand.

The terminal is the only fake here, and only in that it is a pty rather than a window.
"""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.support.cli import PASSPHRASE, REPO, make_user

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")


class Terminal:
    """`chamberlain ARGS` on a pty; stdout is a pipe, so the reply is kept apart from prompts."""

    def __init__(self, user: Path, *args: str, env: dict[str, str | None] | None = None) -> None:
        full_env: dict[str, str | None] = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(user),
            "TERM": "dumb",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
            "CHAMBERLAIN_HOME": str(user / ".chamberlain"),
            "CHAMBERLAIN_MEMORY_PASSPHRASE": PASSPHRASE,
            "CHAMBERLAIN_MEMORY__EXTRACT": "false",
            "PYTHONPATH": str(REPO),
            **(env or {}),
        }
        self.master, slave = os.openpty()

        def take_the_terminal() -> None:  # runs in the child, after setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args],
            cwd=user,
            env={k: v for k, v in full_env.items() if v is not None},
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            start_new_session=True,
            preexec_fn=take_the_terminal,  # only an ioctl: safe even with threads running
        )
        os.close(slave)
        self.screen = ""

    def read_until(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{text!r} never appeared; the terminal shows {self.screen!r}")
            if select.select([self.master], [], [], remaining)[0]:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} never appeared: {self.screen!r}")
                self.screen += chunk.decode(errors="replace")
        return self.screen

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 30.0) -> tuple[int, str, str]:
        """Wait for the exit; (exit code, everything the terminal showed, stdout)."""
        stdout = self.proc.communicate(timeout=timeout)[0].decode(errors="replace")
        while select.select([self.master], [], [], 0.2)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.screen += chunk.decode(errors="replace")
        return self.proc.returncode, self.screen, stdout

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        os.close(self.master)


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user(tmp_path / "user")


@pytest.fixture
def terminal():
    opened: list[Terminal] = []

    def start(user: Path, *args: str, env: dict[str, str | None] | None = None) -> Terminal:
        opened.append(Terminal(user, *args, env=env))
        return opened[-1]

    yield start
    for term in opened:
        term.close()


def test_ctrl_c_at_the_permission_prompt_cancels_with_one_line_and_exit_130(user, terminal):
    term = terminal(user, "ask", "list files in ~/Documents", "--llm", "none")
    term.read_until("Allow?")
    term.type("\x03")
    code, screen, stdout = term.finish()
    assert code == 130, screen
    assert "Traceback" not in screen
    assert "KeyboardInterrupt" not in screen
    assert "cancelled" in screen.split("Allow?")[-1]
    assert "plan.txt" not in stdout


def test_ctrl_c_at_the_passphrase_prompt_cancels_with_one_line_and_exit_130(user, terminal):
    term = terminal(
        user,
        "memory",
        "list",
        env={"CHAMBERLAIN_MEMORY_PASSPHRASE": None},
    )
    term.read_until("assphrase")
    term.type("\x03")
    code, screen, _ = term.finish()
    assert code == 130, screen
    assert "Traceback" not in screen
    assert "cancelled" in screen


def test_yes_typed_at_the_prompt_allows_once_and_the_turn_runs(user, terminal):
    term = terminal(user, "ask", "list files in ~/Documents", "--llm", "none")
    term.read_until("Allow?")
    term.type("yes\n")
    code, screen, stdout = term.finish()
    assert code == 0, screen
    assert "plan.txt" in stdout


def test_the_prompt_says_when_it_gives_up_and_ends_its_line_before_the_denial(user, terminal):
    term = terminal(
        user,
        "ask",
        "list files in ~/Documents",
        "--llm",
        "none",
        env={"CHAMBERLAIN_PERMISSIONS__PROMPT_TIMEOUT_S": "2"},
    )
    term.read_until("Allow?")
    assert "no answer within 2 s" in term.screen
    code, screen, stdout = term.finish()
    assert code == 1
    prompt_line = [line for line in screen.splitlines() if "Allow?" in line][-1]
    assert prompt_line.rstrip().endswith(":"), "the denial was printed on the prompt line"
    assert "No answer within 2 s" in screen
    assert "within 2 s" in stdout
    assert "you denied" not in stdout


def test_revoke_all_asks_to_confirm_on_a_terminal_unless_told_yes(user, terminal):
    from tests.support.cli import run_cli

    run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=always", "--llm", "none"
    )
    term = terminal(user, "grants", "revoke-all")
    term.read_until("[y/N]")
    term.type("n\n")
    code, screen, _ = term.finish()
    assert code == 1
    assert "Nothing was revoked" in screen
    assert "file_read" in run_cli(user, "grants", "list").stdout

    term = terminal(user, "grants", "revoke-all", "--yes")
    code, screen, stdout = term.finish()
    assert code == 0, screen
    assert "[y/N]" not in screen
    assert "Revoked 1 grant(s)." in stdout

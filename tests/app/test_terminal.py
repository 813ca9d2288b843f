"""The CLI in a real terminal: a pseudo-terminal is its stdin and stderr (and its controlling
terminal, so Ctrl-C typed there is a real SIGINT), as when a person runs it by hand.

The terminal is the only fake here, and only in that it is a pty rather than a window.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.support.cli import PASSPHRASE, REPO, make_user
from tests.support.openai_server import ToolCalls

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
    assert "Revoked 1 grant." in stdout


# --- what reaches the terminal: file names, tool results and replies, escaped ------------------

# Names a real folder can hold: one not UTF-8 (Latin-1 from an old archive), one that would set
# the terminal's title and clear its screen, one whose bidi override reverses how it reads.
ODD_NAMES = {
    b"report\xff.txt": "report\\xff.txt",
    b"\x1b]0;pwned\x07\x1b[2Jtitle.txt": "\\x1b]0;pwned\\x07\\x1b[2Jtitle.txt",
    "invoice\u202etxt.exe".encode(): "invoice\\u202etxt.exe",
}
HOSTILE_REPLY = "Listed.\x1b[2J\x1b]0;owned\x07 \x9b31m \u202eevil\u200b."
# What must never reach a terminal raw: ESC, the 8-bit CSI (U+009B), bidi and zero-width.
RAW = (b"\x1b", "\x9b".encode(), "\u202e".encode(), "\u200b".encode())


def odd_folder(user: Path) -> Path:
    folder = user / "Odd"
    folder.mkdir()
    for raw in ODD_NAMES:
        with open(os.path.join(os.fsencode(folder), raw), "wb") as out:
            out.write(b"the text of " + raw.replace(b"\x1b", b"ESC") + b"\n")
    return folder


def run_bytes(user: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The real CLI with its output kept as the bytes a terminal would receive."""
    from tests.support.cli import cli_env

    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=user,
        env=cli_env(user),
        capture_output=True,
        timeout=60,
    )


def test_a_listing_of_odd_names_phrased_by_a_hostile_model_reaches_the_terminal_escaped(
    user, scripted_server
):
    odd_folder(user)
    server = scripted_server([HOSTILE_REPLY])

    proc = run_bytes(
        user, "ask", "list files in ~/Odd", "--approve", "file_read=once", "--llm", server.base_url
    )

    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    for raw in RAW:
        assert raw not in shown
    assert b"Listed.\\x1b[2J\\x1b]0;owned\\x07 \\u009b31m \\u202eevil\\u200b." in proc.stdout
    # The model was given the listing, every name escaped as the person sees it.
    (request,) = server.requests
    result = request["messages"][-1]["content"]
    for name in ODD_NAMES.values():
        assert json.dumps(name) in result


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_listing_without_a_model_shows_odd_names_escaped(user, as_json):
    odd_folder(user)
    args = ["ask", "list files in ~/Odd", "--approve", "file_read=once", "--llm", "none"]

    proc = run_bytes(user, *args, *(["--json"] if as_json else []))

    assert proc.returncode == 0, proc.stderr
    for raw in RAW:
        assert raw not in proc.stdout + proc.stderr
    reply = json.loads(proc.stdout)["reply"] if as_json else proc.stdout.decode("utf-8")
    for name in ODD_NAMES.values():
        assert name in reply


def test_a_name_the_model_read_back_as_shown_is_asked_about_escaped_and_read(
    user, terminal, scripted_server
):
    odd_folder(user)
    shown = "\\x1b]0;pwned\\x07\\x1b[2Jtitle.txt"
    server = scripted_server(
        [ToolCalls([("file_read", {"path": f"~/Odd/{shown}"})]), "It says hello."]
    )

    term = terminal(
        user, "ask", "summarise my notes in ~/Odd", "--llm", server.base_url, "--no-refine"
    )
    prompt = term.read_until("Allow?")
    assert f"File: {user}/Odd/{shown}" in prompt  # the file itself, resolved, escaped
    term.type("o\n")
    code, screen, stdout = term.finish()

    assert code == 0, screen
    assert "\x1b" not in screen + stdout
    assert "It says hello." in stdout
    assert "the text of ESC]0;pwned" in server.requests[1]["messages"][-1]["content"]
    tail = run_bytes(user, "audit", "tail")
    assert b"\x1b" not in tail.stdout
    assert f"file_read path ~/Odd/{shown}\n".encode() in tail.stdout

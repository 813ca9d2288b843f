"""Hostile text in `chamberlain chat` (app/chat_cli.py), on a real pseudo-terminal: the model's
reply, a tool's output, a file name and a conversation title may carry terminal escape sequences
(CSI, OSC 52 writing the clipboard, OSC 8 links, OSC 0 setting the window title), bidi controls
and carriage returns that would draw a fake prompt. None of it may reach the terminal as it is:
everything printed goes through app.terminal's escaping (the same function as `ask`'s), and the
prompt still comes back, on its own line, and takes the next message.

Real parts: the CLI on a pty (tests/support/pty_session.py), the scripted OpenAI server, real
files with hostile names and contents, the real memory database.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli import make_user, run_cli
from tests.support.pty_session import CTRL_D, PtySession, pty_session

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")

NO_REFINE = {"CHAMBERLAIN_ROUTER__MODEL_REFINEMENT": "false"}
PROMPT = "> "

CLEAR_SCREEN = "\x1b[2J\x1b[H"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4vKg==\x07"  # OSC 52: put `rm -rf ~/*` on the clipboard
LINK = "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"  # OSC 8
TITLE = "\x1b]0;root@bank: approved\x07"  # OSC 0: the window's title
BIDI = "\u202egnp.exe"  # reads as "exe.png"
FAKE_PROMPT = "\r> "  # back to the line's start, to draw a prompt that is not ours
C1_CSI = "\x9b31m"  # the one-character CSI of the C1 controls
HOSTILE = f"Done.{CLEAR_SCREEN}{CLIPBOARD}{LINK}{TITLE}{BIDI}{FAKE_PROMPT}{C1_CSI}"
# What reaching the terminal raw would look like: any of these characters as they are.
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r> ")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user(tmp_path / "user")


def nothing_raw(shown: str) -> None:
    # The terminal ends its lines with \r\n itself: only a carriage return of ours is suspect.
    shown = shown.replace("\r\n", "\n")
    for raw in RAW:
        assert raw not in shown, (raw, shown[-2000:])


def still_takes_a_message(term: PtySession, reply: str) -> None:
    """The prompt came back on a line of its own, and the next message is asked and answered."""
    assert term.screen[: term.mark].endswith("\n" + PROMPT)
    term.type("are you there?\r")
    term.read_until(reply)
    term.read_until(PROMPT)
    term.type(CTRL_D)
    code, _ = term.finish()
    assert code == 0, term.screen


def test_a_reply_full_of_escape_sequences_is_shown_escaped_and_the_prompt_survives(
    user, scripted_server
):
    server = scripted_server([HOSTILE, "Still here."])
    with pty_session(user, "chat", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("hello\r")
        shown = term.read_until("\n" + PROMPT)
        # Every sequence is there to read, as text.
        assert "Done.\\x1b[2J\\x1b[H\\x1b]52;c;cm0gLXJmIH4vKg==\\x07" in shown
        assert "\\x1b]8;;https://evil.example/" in shown
        assert "\\x1b]0;root@bank: approved\\x07" in shown
        assert "\\u202egnp.exe\\x0d> \\u009b31m" in shown
        still_takes_a_message(term, "Still here.")
    nothing_raw(term.screen)


def test_a_hostile_file_name_and_contents_are_shown_escaped_in_the_listing_and_the_read(user):
    documents = user / "Documents"
    (documents / f"{TITLE}report{BIDI}").write_text("x")
    (documents / "plan.txt").write_text(f"Buy milk{CLEAR_SCREEN}{CLIPBOARD}\n{LINK}{FAKE_PROMPT}\n")
    with pty_session(user, "chat", "--llm", "none") as term:
        term.read_until(PROMPT)
        term.type("list files in ~/Documents\r")
        term.read_until("Allow?")
        term.type("o\r")
        listing = term.read_until("\n" + PROMPT)
        assert "\\x1b]0;root@bank: approved\\x07report\\u202egnp.exe" in listing
        term.type("read ~/Documents/plan.txt\r")
        term.read_until("Allow?")
        term.type("o\r")
        read = term.read_until("\n" + PROMPT)
        assert "Buy milk\\x1b[2J\\x1b[H\\x1b]52;c;" in read
        term.type(CTRL_D)
        code, _ = term.finish()
    assert code == 0, term.screen
    nothing_raw(term.screen)


def test_a_hostile_title_and_reply_are_shown_escaped_when_the_chat_goes_on(user, scripted_server):
    server = scripted_server([HOSTILE, "Still here."])
    # The first message (and so the title) came through a pipe, escape sequences and all;
    # /chat makes it a question for the model whatever its words look like.
    first = run_cli(
        user, "chat", "--llm", server.base_url, env=NO_REFINE, stdin=f"/chat {TITLE}{BIDI} hi\n"
    )
    assert first.returncode == 0, first.stderr
    with pty_session(user, "chat", "--continue", "--llm", server.base_url, env=NO_REFINE) as term:
        greeting = term.read_until("\n" + PROMPT)
        assert "Going on with “/chat \\x1b]0;root@bank: approved\\x07\\u202egnp.exe hi”" in greeting
        assert "The reply began: Done.\\x1b[2J" in greeting
        still_takes_a_message(term, "Still here.")
    nothing_raw(term.screen)


def test_a_two_megabyte_reply_is_shown_once_cut_escaped_and_the_prompt_survives(
    user, scripted_server
):
    huge = CLEAR_SCREEN + "x" * 2_000_000 + TITLE
    server = scripted_server([huge, "Still here."])
    with pty_session(user, "chat", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("write a lot\r")
        shown = term.read_until("\n" + PROMPT, timeout=120)
        # Shown once (not streamed and then printed again), as much as a reply keeps.
        assert shown.count("\\x1b[2J") == 1
        assert 60_000 < shown.count("x") < 70_000
        still_takes_a_message(term, "Still here.")
    nothing_raw(term.screen)

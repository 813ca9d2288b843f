"""A fact said without "remember" is never lost silently, at the terminal: `ask` offers it and
says how to keep it, `ask --remember` keeps it (with consent where it is sensitive), and in
`chat` a short "yes" keeps it. The real CLI, a real memory database and audit log; no model
(`--llm none`), as when the router alone reads the message."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli import ask_json, make_user, run_cli
from tests.support.pty_session import CTRL_D, pty_session

# A lasting fact inside a remark, with no word asking to keep it: the router reads talk (a bare
# "I'm allergic to shellfish." it now keeps), the offer catches it.
ALLERGY = "I'm allergic to shellfish, which made the wedding buffet interesting."


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user(tmp_path / "user")


def facts(user: Path) -> str:
    return run_cli(user, "memory", "list").stdout


def test_ask_offers_the_fact_and_keeps_nothing_until_asked(user: Path) -> None:
    _proc, turn = ask_json(user, ALLERGY, "--llm", "none")
    [event] = turn["memory"]
    assert event["action"] == "offer"
    assert event["text"] == ALLERGY
    assert f'chamberlain ask --remember "{ALLERGY}"' in event["notice"]
    assert "shellfish" not in facts(user)
    plain = run_cli(user, "ask", "--llm", "none", ALLERGY)
    assert f'I did not keep this: "{ALLERGY}"' in plain.stdout


def test_ask_remember_keeps_it_and_a_health_fact_waits_for_consent(user: Path) -> None:
    proc, turn = ask_json(user, "I'm allergic to shellfish.", "--llm", "none", "--remember")
    assert proc.returncode == 0, proc.stderr
    [event] = turn["memory"]
    assert event["status"] == "pending"
    assert "I'm allergic to shellfish" in facts(user)
    assert "pending" in facts(user)


def test_no_offer_for_a_credential_or_in_a_temporary_chat(user: Path) -> None:
    for said in ("fyi my password is hunter2-blue", "note: my pin is 4821"):
        _proc, turn = ask_json(user, said, "--llm", "none")
        assert all(event["action"] != "offer" for event in turn["memory"]), turn["memory"]
    _proc, turn = ask_json(user, ALLERGY, "--llm", "none", "--temporary")
    assert turn["memory"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")
def test_in_chat_a_short_yes_keeps_what_was_offered(user: Path) -> None:
    with pty_session(user, "chat", "--llm", "none") as term:
        term.read_until("> ")
        term.type(ALLERGY + "\r")
        term.read_until('say "yes"')
        term.read_until("> ")
        term.type("yes please\r")
        term.read_until("I need your approval")
        term.read_until("> ")
        term.type(CTRL_D)
        code, _screen = term.finish()
    assert code == 0, term.screen
    assert "I'm allergic to shellfish" in facts(user)


def test_a_fact_with_a_keep_word_anywhere_is_kept_without_the_keep_words(user: Path) -> None:
    """Not "remember that …" at the start, but "…, keep it for future" at the end: the router
    takes it as a memory write, and what is kept is the fact, not the request to keep it."""
    proc, turn = ask_json(user, "my shoe size is 9 UK, keep it for future", "--llm", "none")
    assert proc.returncode == 0, proc.stderr
    [event] = turn["memory"]
    assert event["action"] == "added", event
    kept = facts(user)
    assert "shoe size is 9 UK" in kept
    assert "keep it" not in kept


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")
def test_in_chat_forget_shows_the_one_match_and_a_short_yes_forgets_it(user: Path) -> None:
    """ "forget my bike" in `chamberlain chat`: the one remembered fact that matches is shown,
    nothing goes until the person says yes, and then it is gone from the store."""
    proc, _turn = ask_json(user, "remember that my bike is a green Brompton", "--llm", "none")
    assert proc.returncode == 0, proc.stderr
    with pty_session(user, "chat", "--llm", "none") as term:
        term.read_until("> ")
        term.type("forget about my bike\r")
        term.read_until("Matches what you asked me to forget")
        term.read_until('Say "yes" to forget it now.')
        term.read_until("> ")
        assert "Brompton" in facts(user)  # shown, not yet forgotten
        term.type("yes\r")
        term.read_until('Forgotten: "my bike is a green Brompton".')
        term.read_until("> ")
        term.type(CTRL_D)
        code, _screen = term.finish()
    assert code == 0, term.screen
    assert "Brompton" not in facts(user)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")
def test_in_chat_forget_that_points_at_the_fact_just_kept_and_a_yes_forgets_it(user: Path) -> None:
    """ "remember that my locker is 14", then "forget that": the fact just kept is shown (not
    a new fact "forget that"), and a short yes forgets it."""
    with pty_session(user, "chat", "--llm", "none") as term:
        term.read_until("> ")
        term.type("remember that my locker is 14\r")
        term.read_until("Remembered")
        term.read_until("> ")
        term.type("forget that\r")
        term.read_until('"my locker is 14"')
        term.read_until('Say "yes" to forget it now.')
        term.read_until("> ")
        assert "my locker is 14" in facts(user)  # shown, not yet forgotten
        assert "forget that" not in facts(user)
        term.type("yes\r")
        term.read_until('Forgotten: "my locker is 14".')
        term.read_until("> ")
        term.type(CTRL_D)
        code, _screen = term.finish()
    assert code == 0, term.screen
    assert "locker" not in facts(user)

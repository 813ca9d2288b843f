"""How the CLI answers permission prompts: flags first, then the terminal, else no."""

from __future__ import annotations

import io

import pytest

from app.cli import FlagPrompter, UsageError, ask_on_terminal, parse_approval
from broker.permissions import PermissionRequest
from broker.types import GrantMode
from tests.support.prompts import make_request
from tools.manual import Capability


def request(
    scope: str, user_scope: bool, capability=Capability.FILE_READ, **fields
) -> PermissionRequest:
    return make_request(
        capability=capability,
        scope=scope,
        tool="file_read",
        arguments={"path": scope},
        call_id="c1",
        user_scope=user_scope,
        **fields,
    )


def test_parse_approval_forms():
    assert parse_approval("file_read=once").scope is None
    rule = parse_approval("file_read=session:~/Projects")
    assert (rule.capability, rule.mode, rule.scope) == ("file_read", "session", "~/Projects")
    for bad in ("file_read", "nope=once", "file_read=sometimes"):
        with pytest.raises(UsageError):
            parse_approval(bad)


def test_plain_approval_answers_only_the_users_own_scope(tmp_path):
    prompter = FlagPrompter([parse_approval("file_read=once")], None)
    assert prompter.decide(request(str(tmp_path / "Documents"), True)).allow is True
    refused = prompter.decide(request(str(tmp_path / ".ssh/id_rsa"), False))
    assert refused.allow is False
    assert refused.reason == "headless"


def test_scoped_approval_answers_prompts_inside_its_scope_only(tmp_path):
    (tmp_path / "Projects" / "a").mkdir(parents=True)
    prompter = FlagPrompter([parse_approval(f"file_read=session:{tmp_path / 'Projects'}")], None)
    inside = prompter.decide(request(str(tmp_path / "Projects" / "a"), False))
    assert inside.allow is True
    assert inside.mode is GrantMode.SESSION
    assert prompter.decide(request(str(tmp_path / "Projects2"), False)).allow is False


def test_deny_rule_and_approve_all(tmp_path):
    deny = FlagPrompter([parse_approval("file_read=deny")], "once")
    decision = deny.decide(request(str(tmp_path), True))
    assert decision.allow is False
    assert decision.reason == "user"
    everything = FlagPrompter([], "once")
    assert everything.decide(request("/etc/shadow", False)).mode is GrantMode.ONCE


def test_rules_for_another_capability_do_not_answer(tmp_path):
    prompter = FlagPrompter([parse_approval("system_read=once")], None)
    assert prompter.decide(request(str(tmp_path), True)).allow is False


@pytest.mark.parametrize(
    ("typed", "mode"),
    [
        ("o\n", GrantMode.ONCE),
        ("s\n", GrantMode.SESSION),
        ("always\n", GrantMode.ALWAYS),
        ("t\n", GrantMode.TIMED),
    ],
)
def test_terminal_answers(tmp_path, typed, mode):
    shown = io.StringIO()
    decision = ask_on_terminal(request(str(tmp_path), False), io.StringIO(typed), shown)
    assert decision.allow is True
    assert decision.mode is mode
    assert "the model asked for this" in shown.getvalue()


@pytest.mark.parametrize("typed", ["\n", "n\n", "", "whatever\n"])
def test_terminal_default_is_no(tmp_path, typed):
    decision = ask_on_terminal(request(str(tmp_path), True), io.StringIO(typed), io.StringIO())
    assert decision.allow is False


def test_timed_approval_carries_the_chosen_duration(tmp_path):
    prompter = FlagPrompter([parse_approval("file_read=timed")], None, timed_s=600)
    decision = prompter.decide(request(str(tmp_path), True))
    assert decision.mode is GrantMode.TIMED
    assert decision.duration_s == 600


def _code_request(tmp_path) -> PermissionRequest:
    from tools.manual import CallPlan

    return make_request(
        capability=Capability.SYSTEM_EXECUTE,
        scope=f"command:sed -n 1p notes.txt\nin {tmp_path}",
        tool="system_execute",
        arguments={"command": "sed -n 1p notes.txt"},
        call_id="c1",
        user_scope=True,
        once_only=True,
        plan=CallPlan(stages=(("/usr/bin/sed", "-n", "1p", "notes.txt"),), cwd=str(tmp_path)),
        always_unavailable="only this one call may be allowed",
    )


def test_the_terminal_prompt_for_code_says_so_and_offers_only_once(tmp_path):
    err = io.StringIO()
    decision = ask_on_terminal(_code_request(tmp_path), io.StringIO("s\n"), err)
    shown = err.getvalue()
    assert "runs code that cannot be shown here" in shown
    assert "Command: /usr/bin/sed -n 1p notes.txt" in shown
    assert "Network: none" in shown
    assert "[s]ession" not in shown
    assert decision.allow is False  # "session" is not on offer: no lasting grant for code

    decision = ask_on_terminal(_code_request(tmp_path), io.StringIO("o\n"), io.StringIO())
    assert decision.allow is True
    assert decision.mode is GrantMode.ONCE


# --- what people type at the terminal ---------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "mode"),
    [
        ("y\n", GrantMode.ONCE),
        ("yes\n", GrantMode.ONCE),
        ("YES\n", GrantMode.ONCE),
        ("once\n", GrantMode.ONCE),
        ("timed\n", GrantMode.TIMED),
        ("session\n", GrantMode.SESSION),
        (" Always \n", GrantMode.ALWAYS),
    ],
)
def test_the_words_people_type_are_understood(tmp_path, typed, mode):
    decision = ask_on_terminal(request(str(tmp_path), True), io.StringIO(typed), io.StringIO())
    assert decision.allow is True
    assert decision.mode is mode


@pytest.mark.parametrize("typed", ["n\n", "no\n", "No\n", "\n"])
def test_no_and_a_bare_enter_are_a_no_asked_only_once(tmp_path, typed):
    shown = io.StringIO()
    decision = ask_on_terminal(request(str(tmp_path), True), io.StringIO(typed + "o\n"), shown)
    assert decision.allow is False
    assert decision.reason == "user"
    assert shown.getvalue().count("Allow?") == 1


def test_an_unrecognised_answer_is_asked_again_instead_of_denied(tmp_path):
    shown = io.StringIO()
    decision = ask_on_terminal(request(str(tmp_path), True), io.StringIO("sure\no\n"), shown)
    assert decision.allow is True
    assert decision.mode is GrantMode.ONCE
    assert "Please answer once, timed, session, always, no" in shown.getvalue()


def test_answers_that_are_never_understood_end_as_a_no_after_a_few_tries(tmp_path):
    shown = io.StringIO()
    typed = io.StringIO("sure\nok then\nplease\no\n")
    decision = ask_on_terminal(request(str(tmp_path), True), typed, shown)
    assert decision.allow is False
    assert shown.getvalue().count("Allow?") == 3
    assert "not allowed" in shown.getvalue()
    assert typed.readline() == "o\n"  # it stopped reading: the next line is not swallowed


def test_end_of_input_is_a_no_and_ends_the_prompt_line(tmp_path):
    shown = io.StringIO()
    decision = ask_on_terminal(request(str(tmp_path), True), io.StringIO(""), shown)
    assert decision.allow is False
    assert shown.getvalue().endswith(": \n")


def test_a_code_running_command_asks_again_when_a_lasting_grant_is_typed(tmp_path):
    shown = io.StringIO()
    decision = ask_on_terminal(_code_request(tmp_path), io.StringIO("always\nyes\n"), shown)
    assert decision.allow is True
    assert decision.mode is GrantMode.ONCE
    assert "Please answer once, no" in shown.getvalue()


def test_the_timed_choice_shows_and_carries_the_chosen_minutes(tmp_path):
    shown = io.StringIO()
    decision = ask_on_terminal(request(str(tmp_path), True), io.StringIO("t\n"), shown, timed_s=600)
    assert "[t]imed (10 min)" in shown.getvalue()
    assert decision.mode is GrantMode.TIMED
    assert decision.duration_s == 600


def test_the_flag_prompter_passes_its_minutes_and_the_requests_timeout_to_the_terminal(tmp_path):
    shown = io.StringIO()
    prompter = FlagPrompter([], None, (io.StringIO("timed\n"), shown), timed_s=900)
    decision = prompter.decide(request(str(tmp_path), True, timeout_s=45))
    assert decision.duration_s == 900
    assert "[t]imed (15 min)" in shown.getvalue()
    assert "no answer within 45 s" in shown.getvalue()


def test_the_session_choice_says_it_lasts_this_command_only(tmp_path):
    shown = io.StringIO()
    ask_on_terminal(request(str(tmp_path), True), io.StringIO("n\n"), shown)
    assert "[s]ession (this command only)" in shown.getvalue()


def _command_request(scope: str, risk: str) -> PermissionRequest:
    return make_request(
        capability=Capability.SYSTEM_EXECUTE,
        scope=scope,
        tool="system_execute",
        arguments={"command": "df -h"},
        call_id="c1",
        user_scope=True,
        risk=risk,
    )


def test_a_read_only_command_is_shown_as_low_risk_on_the_same_scale(tmp_path):
    shown = io.StringIO()
    ask_on_terminal(
        _command_request(f"readonly-in:{tmp_path}", "dangerous"), io.StringIO("n\n"), shown
    )
    text = shown.getvalue()
    assert "read-only commands" in text
    assert "risk: low" in text
    assert "dangerous" not in text


def test_an_exact_command_line_keeps_the_tools_risk_on_the_low_medium_high_scale(tmp_path):
    shown = io.StringIO()
    ask_on_terminal(
        _command_request(f"command:rm old.txt\nin {tmp_path}", "dangerous"),
        io.StringIO("n\n"),
        shown,
    )
    assert "risk: high" in shown.getvalue()


def test_a_prompt_nobody_answers_gives_up_on_its_own_line_and_reads_nothing_later(tmp_path):
    """A real pipe stands for the terminal: select() must see a descriptor."""
    import os

    read_end, write_end = os.pipe()
    shown = io.StringIO()
    with open(read_end, encoding="utf-8") as stdin:
        decision = ask_on_terminal(request(str(tmp_path), True, timeout_s=0.6), stdin, shown)
        os.write(write_end, b"o\n")
        os.close(write_end)
        assert stdin.readline() == "o\n"  # the late answer was left for whoever reads next
    assert decision.allow is False
    assert decision.reason == "timeout"
    text = shown.getvalue()
    assert "(no answer within 0.6 s is a no): \nNo answer within 0.6 s" in text


def test_an_always_rule_where_always_is_not_offered_says_it_lasts_this_command_only(
    tmp_path, capsys
):
    secret = tmp_path / "Password ideas.md"
    prompter = FlagPrompter([parse_approval("file_read=always")], None)
    why = "its name looks like it holds a password, and saved permissions never hold one"
    decision = prompter.decide(request(str(secret), True, always_unavailable=why))
    assert decision.allow is True  # the broker turns it into a session grant, never saved
    said = capsys.readouterr().err
    assert f"file_read for {secret} is allowed for this command only, not saved: {why}" in said


def test_the_terminal_prompt_offers_always_only_where_it_is_saved_and_says_why_not(tmp_path):
    why = "its name looks like it holds a password, and saved permissions never hold one"
    shown = io.StringIO()
    decision = ask_on_terminal(
        request(str(tmp_path / "Password ideas.md"), True, always_unavailable=why),
        io.StringIO("always\nn\n"),
        shown,
    )
    assert decision.allow is False  # "always" was not accepted; the next answer was no
    text = shown.getvalue()
    assert "[a]lways" not in text
    assert f"“Always” is not offered: {why}." in text

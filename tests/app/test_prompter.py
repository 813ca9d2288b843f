"""How the CLI answers permission prompts: flags first, then the terminal, else no."""

from __future__ import annotations

import io

import pytest

from app.cli import FlagPrompter, UsageError, ask_on_terminal, parse_approval
from broker.permissions import PermissionRequest
from broker.types import GrantMode
from tools.manual import Capability


def request(scope: str, user_scope: bool, capability=Capability.FILE_READ) -> PermissionRequest:
    return PermissionRequest(
        capability=capability,
        scope=scope,
        tool="file_read",
        arguments={"path": scope},
        call_id="c1",
        user_scope=user_scope,
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
    assert prompter.ask(request(str(tmp_path / "Documents"), True)).allow is True
    refused = prompter.ask(request(str(tmp_path / ".ssh/id_rsa"), False))
    assert refused.allow is False
    assert refused.reason == "headless"


def test_scoped_approval_answers_prompts_inside_its_scope_only(tmp_path):
    (tmp_path / "Projects" / "a").mkdir(parents=True)
    prompter = FlagPrompter([parse_approval(f"file_read=session:{tmp_path / 'Projects'}")], None)
    inside = prompter.ask(request(str(tmp_path / "Projects" / "a"), False))
    assert inside.allow is True
    assert inside.mode is GrantMode.SESSION
    assert prompter.ask(request(str(tmp_path / "Projects2"), False)).allow is False


def test_deny_rule_and_approve_all(tmp_path):
    deny = FlagPrompter([parse_approval("file_read=deny")], "once")
    decision = deny.ask(request(str(tmp_path), True))
    assert decision.allow is False
    assert decision.reason == "user"
    everything = FlagPrompter([], "once")
    assert everything.ask(request("/etc/shadow", False)).mode is GrantMode.ONCE


def test_rules_for_another_capability_do_not_answer(tmp_path):
    prompter = FlagPrompter([parse_approval("system_read=once")], None)
    assert prompter.ask(request(str(tmp_path), True)).allow is False


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
    decision = prompter.ask(request(str(tmp_path), True))
    assert decision.mode is GrantMode.TIMED
    assert decision.duration_s == 600


def _code_request(tmp_path) -> PermissionRequest:
    from tools.scopes import describe_command_call

    targets = ["code:sed -n 1p notes.txt", f"cwd:{tmp_path}"]
    return PermissionRequest(
        capability=Capability.SYSTEM_EXECUTE,
        scope=f"command:sed -n 1p notes.txt\nin {tmp_path}",
        tool="system_execute",
        arguments={"command": "sed -n 1p notes.txt"},
        call_id="c1",
        user_scope=True,
        once_only=True,
        reason=describe_command_call(targets),
    )


def test_the_terminal_prompt_for_code_says_so_and_offers_only_once(tmp_path):
    err = io.StringIO()
    decision = ask_on_terminal(_code_request(tmp_path), io.StringIO("s\n"), err)
    shown = err.getvalue()
    assert "runs code that cannot be shown here" in shown
    assert "no network" in shown
    assert "[s]ession" not in shown
    assert decision.allow is False  # "session" is not on offer: no lasting grant for code

    decision = ask_on_terminal(_code_request(tmp_path), io.StringIO("o\n"), io.StringIO())
    assert decision.allow is True
    assert decision.mode is GrantMode.ONCE

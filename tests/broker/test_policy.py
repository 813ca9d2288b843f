"""The policy gate: a pure function from router output to the tools a turn may see."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.policy import PolicyError, coverage_problems, decide, load_policy_table
from broker.settings import IntentOverride, PolicyOverrides
from broker.types import Intent, RouterOutput
from tools.manual import Capability

TOOLS = {
    "file_list": Capability.FILE_READ,
    "file_read": Capability.FILE_READ,
    "file_search": Capability.FILE_READ,
    "system_info": Capability.SYSTEM_READ,
    "system_execute": Capability.SYSTEM_EXECUTE,
}


@pytest.fixture(scope="module")
def table():
    return load_policy_table()


@pytest.mark.parametrize("intent", list(Intent))
def test_every_intent_allows_only_its_table_row_and_forbids_the_rest(table, intent):
    decision = decide(RouterOutput(intent=intent), table, TOOLS)
    row = table.intents[intent]
    assert set(decision.allowed_tools) <= set(row.allowed)
    assert not set(decision.allowed_tools) & set(row.forbidden)
    # Everything registered is either allowed or forbidden, never both.
    assert set(decision.allowed_tools) | set(decision.forbidden_tools) == set(TOOLS)
    assert not set(decision.allowed_tools) & set(decision.forbidden_tools)
    assert set(decision.required_capabilities) == {TOOLS[t] for t in decision.allowed_tools}


def test_chat_gets_no_tools(table):
    decision = decide(RouterOutput(intent=Intent.CHAT_ONLY), table, TOOLS)
    assert decision.allowed_tools == []
    assert decision.required_capabilities == []
    assert set(decision.forbidden_tools) == set(TOOLS)


def test_file_task_gets_file_tools_and_never_command_execution(table):
    decision = decide(RouterOutput(intent=Intent.FILE_TASK), table, TOOLS)
    assert decision.allowed_tools == ["file_list", "file_read", "file_search"]
    assert "system_execute" in decision.forbidden_tools
    assert decision.required_capabilities == [Capability.FILE_READ]


def test_tools_the_table_names_but_are_not_installed_are_left_out(table):
    decision = decide(RouterOutput(intent=Intent.SCREEN_OBSERVE), table, TOOLS)
    assert decision.allowed_tools == []
    assert any("screen_capture: not installed" in r for r in decision.reasons)


def test_user_can_add_a_tool_to_an_intent(table):
    overrides = PolicyOverrides(intents={"chat_only": IntentOverride(add=["system_info"])})
    decision = decide(RouterOutput(intent=Intent.CHAT_ONLY), table, TOOLS, overrides)
    assert decision.allowed_tools == ["system_info"]


def test_deny_beats_add_and_table_forbidden_beats_user_add(table):
    overrides = PolicyOverrides(
        deny=["file_read"],
        intents={
            "file_task": IntentOverride(add=["system_execute"], deny=["file_search"]),
        },
    )
    decision = decide(RouterOutput(intent=Intent.FILE_TASK), table, TOOLS, overrides)
    assert decision.allowed_tools == ["file_list"]
    for name in ("file_read", "file_search", "system_execute"):
        assert name in decision.forbidden_tools


def test_unknown_tools_in_overrides_never_appear(table):
    overrides = PolicyOverrides(intents={"file_task": IntentOverride(add=["rm_rf_everything"])})
    decision = decide(RouterOutput(intent=Intent.FILE_TASK), table, TOOLS, overrides)
    assert "rm_rf_everything" not in decision.allowed_tools


def test_decide_is_pure(table):
    router = RouterOutput(intent=Intent.SYSTEM_TASK)
    first = decide(router, table, TOOLS)
    assert decide(router, table, TOOLS) == first


def test_every_builtin_tool_is_covered(table):
    from tools.registry import builtin_registry

    registry = builtin_registry()
    assert coverage_problems(table, {t.name: t.capability for t in registry}) == []


def test_uncovered_tool_is_reported(table):
    problems = coverage_problems(table, {"mystery_tool": Capability.FILE_WRITE})
    assert problems
    assert "mystery_tool" in problems[0]


def test_invalid_table_fails_loudly(tmp_path: Path):
    bad = tmp_path / "policy.toml"
    bad.write_text('version = 1\n[intents.chat_only]\nallowed = ["file_read"]\n')
    with pytest.raises(PolicyError, match=r"policy\.toml"):
        load_policy_table(bad)
    bad.write_text("this is = = not toml")
    with pytest.raises(PolicyError):
        load_policy_table(bad)

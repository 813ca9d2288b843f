"""What each tool and capability does, in words (tools/words.py): every built-in tool and every
capability has words, and a tool with none (an MCP tool, a name the model made up) is named as it
is, escaped, inside a sentence."""

from __future__ import annotations

import pytest

from tools.manual import Capability
from tools.registry import ToolConfig, builtin_registry
from tools.words import ACTION_WORDS, TOOL_WORDS, capability_action, tool_action


def test_every_built_in_tool_has_words(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    names = set(builtin_registry(ToolConfig()).names())
    assert len(names) >= 11
    assert names - set(TOOL_WORDS) == set()


def test_every_capability_has_an_action():
    assert set(ACTION_WORDS) == set(Capability)


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("file_list", "list a folder"),
        ("system_execute", "run a command"),
        ("notes__list_notes", "use the tool notes__list_notes"),
        ("evil\u202etxt.sh", "use the tool evil\\u202etxt.sh"),
        ("x" * 200, "use the tool " + "x" * 80 + "…"),
    ],
    ids=["built-in", "command", "mcp", "bidi-override", "long"],
)
def test_a_tool_is_said_by_what_it_does_inside_a_sentence(tool, said):
    assert tool_action(tool) == said


def test_a_capability_is_said_by_its_action_inside_a_sentence():
    assert capability_action(Capability.FILE_READ) == "read files"
    assert capability_action(Capability.MCP_EXECUTE) == "use an MCP tool that runs things"

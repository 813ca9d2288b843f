"""tools/mcp/arguments.py: an MCP call's path-like arguments checked as the file tools check
theirs, and its plan carrying every argument whole. Real folders under tmp_path; the same checks
through a whole turn are in tests/security/test_mcp_containment.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.manual import ToolRefused
from tools.mcp.arguments import call_plan, checked_arguments
from tools.private import PrivatePlaces, private_places


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "person"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "todo.txt").write_text("milk")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("key")
    (home / ".chamberlain").mkdir()
    (home / ".chamberlain" / "settings.json").write_text("{}")
    return home


@pytest.fixture
def private(home: Path) -> PrivatePlaces:
    return private_places(home, [home / ".chamberlain"])


def check(arguments: dict[str, object], home: Path, private: PrivatePlaces, *bases: Path):
    return checked_arguments("notes__read", arguments, private=private, home=home, bases=bases)


def test_every_argument_is_in_the_plan_whole_in_the_order_the_model_sent(home, private):
    content = "line of text\n" * 500  # far past any cut a terminal would make
    arguments = {"content": content, "path": "~/notes/todo.txt", "options": {"mode": "a"}}
    files = check(arguments, home, private)
    plan = call_plan("notes", "write_file", arguments, files)
    assert (plan.mcp_server, plan.mcp_tool) == ("notes", "write_file")
    assert [name for name, _ in plan.mcp_arguments] == ["content", "path", "options"]
    assert json.loads(dict(plan.mcp_arguments)["content"]) == content
    assert dict(plan.mcp_arguments)["options"] == '{"mode": "a"}'
    assert plan.files == (str(home / "notes" / "todo.txt"),)


def test_words_that_are_not_paths_name_no_file(home, private):
    files = check({"query": "milk and eggs", "count": 3, "tags": ["a", "b"]}, home, private)
    assert files == []


def test_a_relative_path_is_taken_against_the_servers_folder(home, private):
    notes = home / "notes"
    assert check({"path": "todo.txt"}, home, private, notes) == [notes / "todo.txt"]
    assert check({"path": "./new.txt"}, home, private, notes) == [notes / "new.txt"]


@pytest.mark.parametrize(
    ("arguments", "where", "kind"),
    [
        ({"path": "~/.ssh/id_rsa"}, "path", "credentials"),
        ({"path": "../.ssh/id_rsa"}, "path", "credentials"),  # relative to the notes folder
        ({"path": "../.ssh/new_key"}, "path", "credentials"),  # need not exist
        ({"path": "file://~/.chamberlain/settings.json"}, "path", "Chamberlain's own files"),
        ({"a": {"b": [{"c": " ~/.ssh/id_rsa\n"}]}}, "a.b[0].c", "credentials"),
        ({"files": {"~/.chamberlain/settings.json": "x"}}, "files.~/.chamberlain/settings.json",
         "Chamberlain's own files"),
    ],
)  # fmt: skip
def test_a_private_place_anywhere_in_the_arguments_refuses_the_call_saying_where(
    arguments, where, kind, home, private
):
    with pytest.raises(ToolRefused) as refused:
        check(arguments, home, private, home / "notes")
    said = str(refused.value)
    assert said.startswith(f"refused: notes__read's argument {where} names ")
    assert kind in said

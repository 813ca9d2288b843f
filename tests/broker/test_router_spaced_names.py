"""File names with spaces typed without quotes ("summarise Q3 budget.csv") read that file.

Real parts: real files in a scratch home (HOME points there), a real Session with its real
runner and file tools, the real audit log. The model, where one is needed, is the scripted
model of tests/support/scripted_model.py (an edge: what it is told, and that a call to the file
it was told of is the person's own request, is what is under test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.router import route_heuristic
from broker.router.spaced_names import spaced_names, with_spaced_names
from broker.session import Session, names_a_file
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.support.openai_server import ToolCalls
from tests.support.scripted_model import ScriptedModel, by_kind, replies


class AllowOnce(RulePrompter):
    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The person's home, with Documents and Downloads, set as HOME for this test."""
    folder = tmp_path / "user"
    (folder / "Documents").mkdir(parents=True)
    (folder / "Downloads").mkdir()
    monkeypatch.setenv("HOME", str(folder))
    # A name left relative is read from here, never from the folder the tests run in.
    monkeypatch.chdir(folder)
    return folder


def open_session(tmp_path: Path, **options: Any) -> Session:
    settings = Settings()
    settings.router.model_refinement = False
    options.setdefault("prompter", AllowOnce())
    return Session(home=tmp_path / "home", settings=settings, clock=ManualClock(), **options)


def test_the_words_before_a_file_name_make_the_names_it_may_end_longest_first():
    assert spaced_names("summarise my Q3 budget.csv", "budget.csv") == [
        "summarise my Q3 budget.csv",
        "my Q3 budget.csv",
        "Q3 budget.csv",
    ]
    # A quote, a comma or two spaces end the name; at most four words are taken.
    assert spaced_names('read "x" Q3 budget.csv', "budget.csv") == ["Q3 budget.csv"]
    assert spaced_names("well, Q3 budget.csv", "budget.csv") == ["Q3 budget.csv"]
    assert spaced_names("read Q3  budget.csv", "budget.csv") == []
    assert len(spaced_names("a b c d e f budget.csv", "budget.csv")) == 4


def test_read_with_an_unquoted_name_with_spaces_reads_that_file(tmp_path, user):
    (user / "Documents" / "Q3 budget.csv").write_text("rent,900\nfood,310\n")
    prompter = AllowOnce()
    session = open_session(tmp_path, prompter=prompter)
    turn = session.ask("read Q3 budget.csv")
    assert turn.router.arguments.paths == ["~/Documents/Q3 budget.csv"]
    [call] = turn.tool_calls
    assert (call.tool, call.status) == ("file_read", "ok")
    assert "food,310" in turn.reply
    assert [r.scope for r in prompter.asked] == [str(user / "Documents" / "Q3 budget.csv")]


def test_the_longest_name_that_exists_wins_over_a_shorter_one(tmp_path, user):
    (user / "Documents" / "budget.csv").write_text("the whole year\n")
    (user / "Documents" / "Q3 budget.csv").write_text("only the third quarter\n")
    turn = open_session(tmp_path).ask("open my Q3 budget.csv")
    assert turn.router.arguments.paths == ["~/Documents/Q3 budget.csv"]
    assert "only the third quarter" in turn.reply
    assert "the whole year" not in turn.reply


def test_a_folder_the_person_names_is_where_the_name_is_looked_for(tmp_path, user):
    (user / "Documents" / "Q3 budget.csv").write_text("from documents\n")
    (user / "Downloads" / "Q3 budget.csv").write_text("from downloads\n")
    turn = open_session(tmp_path).ask("read Q3 budget.csv in Downloads")
    assert turn.router.arguments.paths == ["~/Downloads/Q3 budget.csv"]
    assert "from downloads" in turn.reply


def test_a_name_no_file_has_is_left_as_written_and_nothing_is_guessed(tmp_path, user):
    (user / "Documents" / "Q2 budget.csv").write_text("other quarter\n")
    seen: list[str] = []

    def exists(path: str) -> bool:
        seen.append(path)
        return names_a_file(path)

    router = with_spaced_names(route_heuristic("summarise Q3 budget.csv"), exists)
    assert router.arguments.paths == ["budget.csv"]
    # Only the names the words make were looked for, each in the usual folders.
    assert all(p.endswith(("/summarise Q3 budget.csv", "/Q3 budget.csv")) for p in seen)
    turn = open_session(tmp_path).ask("read Q3 budget.csv")
    assert "other quarter" not in turn.reply


def test_a_folder_of_that_name_is_not_a_file(tmp_path, user):
    (user / "Documents" / "Q3 budget.csv").mkdir()
    router = with_spaced_names(route_heuristic("read Q3 budget.csv"), names_a_file)
    assert router.arguments.paths == ["budget.csv"]


def test_the_model_is_told_which_file_the_name_with_spaces_is(tmp_path, user):
    (user / "Documents" / "Q3 budget.csv").write_text("rent,900\n")
    path = "~/Documents/Q3 budget.csv"
    model = ScriptedModel(
        by_kind(chat=replies(ToolCalls([("file_read", {"path": path})]), "Rent is 900."))
    )
    prompter = AllowOnce()
    session = open_session(tmp_path, model=model, prompter=prompter)
    turn = session.ask("summarise Q3 budget.csv")
    system = model.requests[0].messages[0]["content"]
    assert path in system
    [call] = turn.tool_calls
    assert call.status == "ok"
    # Reading it was the person's own request: one question, for that file.
    assert [r.scope for r in prompter.asked] == [str(user / "Documents" / "Q3 budget.csv")]

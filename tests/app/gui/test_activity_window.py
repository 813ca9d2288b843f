"""The Activity window: the audit log as a filterable table, and Verify naming a bad line.

Real parts: real widgets offscreen, a real Session on a real home and files, real turns through
the QtSession writing the real audit log, which one test then damages by hand. The prompter
stands in for the person.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.qt_session import QtSession
from app.windows.activity import DECISION, STAGE, TOOL, ActivityWindow
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.app.gui.conftest import until


class Person(RulePrompter):
    def __init__(self, allow: bool) -> None:
        self.allow = allow

    def decide(self, request: PermissionRequest) -> PromptDecision:
        if not self.allow:
            return PromptDecision(allow=False)
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


def open_assistant(home: Path, allow: bool = True) -> QtSession:
    settings = Settings()
    settings.router.model_refinement = False
    session = Session(home=home, settings=settings, clock=ManualClock(), prompter=Person(allow))
    return QtSession(session)


@pytest.fixture
def docs(app_home: Path) -> Path:
    folder = app_home.parent / "user" / "Documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


def shown(window: ActivityWindow, column: int) -> list[str]:
    proxy = window.proxy
    return [str(proxy.index(r, column).data()) for r in range(proxy.rowCount())]


def choose(window: ActivityWindow, column: int, value: str) -> None:
    combo = window.filters[column]
    index = combo.findText(value)
    assert index > 0, (
        f"{value!r} is not offered: {[combo.itemText(i) for i in range(combo.count())]}"
    )
    combo.setCurrentIndex(index)


def test_the_table_shows_each_stage_of_a_turn_and_the_filters_narrow_it(qtbot, run, app_home, docs):
    assistant = open_assistant(app_home)
    window = ActivityWindow(assistant)
    qtbot.addWidget(window)
    window.show()
    assert window.listing.showing_empty
    assert "Nothing has been recorded yet" in window.listing.empty.text()

    async def two_turns() -> None:
        await assistant.ask(f"list files in {docs}")
        await assistant.ask("what time is it in the system?")  # refreshes on TurnEnded
        await until(
            lambda: (
                "Turn ended" in shown(window, STAGE)
                and shown(window, STAGE).count("Turn ended") == 2
            )
        )

    run(two_turns())
    assert not window.listing.showing_empty
    stages = shown(window, STAGE)
    for stage in ("Request understood", "Tools allowed", "Permission given", "Tool finished"):
        assert stage in stages
    assert stages[0] == "Turn ended"  # newest first
    offered = [window.filters[TOOL].itemText(i) for i in range(window.filters[TOOL].count())]
    assert offered[0] == "All tools"
    # Tools in words, never their ids.
    assert "List a folder" in offered
    assert not any("_" in tool for tool in offered)
    assert window.windowTitle() == "Activity"  # Qt adds the app's name

    choose(window, TOOL, "List a folder")
    assert set(shown(window, TOOL)) == {"List a folder"}
    assert "Tool finished" in shown(window, STAGE)
    choose(window, STAGE, "Permission given")
    assert shown(window, STAGE) == ["Permission given"]
    assert shown(window, DECISION) == ["allowed (once)"]
    window.view.setCurrentIndex(window.proxy.index(0, 0))  # the step, in full, below the table
    details = window.details.text()
    assert "Permission given · List a folder · Read files · allowed (once)" in details
    assert f"Read files for {docs}, by user" in details
    assert "file_read" not in details
    assert "file_list" not in details
    assert window.count.text().startswith("1 of ")

    window.filters[TOOL].setCurrentIndex(0)
    window.filters[STAGE].setCurrentIndex(0)
    qtbot.keyClicks(window.search, str(docs.name))
    assert shown(window, STAGE)
    assert all(
        any(
            "documents" in str(window.proxy.index(r, c).data()).lower()
            for c in range(window.proxy.columnCount())
        )
        for r in range(window.proxy.rowCount())
    )
    window.search.setText("no step says this")
    assert window.listing.showing_empty
    assert "No step matches these filters" in window.listing.empty.text()
    assistant.close()


def test_verify_says_the_log_is_intact_then_names_the_first_bad_line_after_an_edit(
    qtbot, run, app_home, docs
):
    assistant = open_assistant(app_home, allow=False)
    window = ActivityWindow(assistant)
    qtbot.addWidget(window)
    window.show()
    run(assistant.ask(f"list files in {docs}"))

    async def verify_by_keyboard() -> None:
        window.verify_button.setFocus()
        qtbot.keyClick(window.verify_button, Qt.Key.Key_Space)
        await until(lambda: "intact" in window.verdict.text() or "not" in window.verdict.text())

    run(verify_by_keyboard())
    assert window.verdict.text().startswith("The audit log is intact:")

    path = assistant.session.audit.path
    lines = path.read_text().splitlines(keepends=True)
    record = json.loads(lines[2])
    record["data"]["why"] = "user says yes"  # someone rewrites a refusal
    lines[2] = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
    path.write_text("".join(lines))

    result = run(window.verify())
    assert result is not None
    assert result.first_bad_line == 3
    text = window.verdict.text()
    assert text.startswith(
        "The audit log does not check out. The first problem is at line 3: hash does not match"
    )
    assert "(the line was edited)" in text
    assert "The 2 lines before it are intact." in text
    [selected] = window.view.selectionModel().selectedRows()
    assert selected.data() == "3"  # the edited line is shown, selected
    assistant.close()


def test_a_damaged_line_shows_as_a_row_that_says_so(qtbot, run, app_home, docs):
    assistant = open_assistant(app_home)
    run(assistant.ask(f"list files in {docs}"))
    path = assistant.session.audit.path
    with path.open("ab") as log:
        log.write(b"this is not json\n")
    window = ActivityWindow(assistant)
    qtbot.addWidget(window)
    run(window.refresh())
    assert shown(window, STAGE)[0] == "Damaged line"
    assert "not an audit record" in str(window.proxy.index(0, 7).data())
    assistant.close()

"""The Permissions window: live grants counting down, always-rules, revoking, recent denials.

Real parts: real widgets offscreen, a real Session on a real home and files (with a ManualClock,
so the countdown is tested by moving the clock), real turns through the QtSession, and the real
confirmation box, answered by clicking its button. The prompter stands in for the person.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from app.qt_session import QtSession
from app.windows.permissions import PermissionsWindow
from app.windows.words import when
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.app.gui.conftest import until

START = 1_800_000_000.0


class Person(RulePrompter):
    """Answers every permission question with `mode` (None: no), and counts the questions."""

    def __init__(self, mode: GrantMode | None) -> None:
        self.mode = mode
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        if self.mode is None:
            return PromptDecision(allow=False)
        return PromptDecision(allow=True, mode=self.mode, duration_s=300)


def open_assistant(home: Path, person: Person, clock: ManualClock) -> QtSession:
    settings = Settings()
    settings.router.model_refinement = False
    return QtSession(Session(home=home, settings=settings, clock=clock, prompter=person))


@pytest.fixture
def docs(app_home: Path) -> Path:
    folder = app_home.parent / "user" / "Documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


def cell(window: PermissionsWindow, table: str, row: int, column: int) -> str:
    view = {"live": window.live_view, "rules": window.rules_view, "denials": window.denials_view}
    return str(view[table].model().index(row, column).data())


def test_a_timed_grant_shows_its_time_left_counting_down_and_revoking_it_asks_again(
    qtbot, run, app_home, docs
):
    clock = ManualClock(START)
    person = Person(GrantMode.TIMED)
    assistant = open_assistant(app_home, person, clock)
    window = PermissionsWindow(assistant)
    qtbot.addWidget(window)
    window.show()
    assert window.live.showing_empty
    assert "Nothing is allowed right now" in window.live.empty.text()

    async def ask_once() -> None:
        await assistant.ask(f"list files in {docs}")
        await until(lambda: window.live_model.rowCount() == 1)

    run(ask_once())
    assert not window.live.showing_empty
    assert [cell(window, "live", 0, c) for c in range(4)] == [
        "Read files",
        str(docs),
        "For 5 minutes",  # how long the person chose, not "for a while"
        "5 min 00 s",
    ]
    assert window.windowTitle() == "Permissions"  # Qt adds the app's name

    clock.advance(61)  # the window's own one-second timer re-renders; nothing is re-read
    qtbot.waitUntil(lambda: cell(window, "live", 0, 3) == "3 min 59 s", timeout=3000)

    async def revoke_with_the_keyboard() -> None:
        window.activateWindow()
        window.live_view.setFocus()
        window.live_view.selectRow(0)
        await until(window.revoke_button.isEnabled)
        window.revoke_button.click()
        await until(lambda: window.live_model.rowCount() == 0)

    run(revoke_with_the_keyboard())
    assert window.live.showing_empty
    assert "Revoked: Read files" in window.status.text()
    assert assistant.session.permissions.grants.live() == []

    run(assistant.ask(f"list files in {docs}"))
    assert len(person.asked) == 2  # asked again: the grant is really gone
    assistant.close()


def test_the_delete_key_revokes_the_selected_grant(qtbot, run, app_home, docs):
    clock = ManualClock(START)
    assistant = open_assistant(app_home, Person(GrantMode.SESSION), clock)
    window = PermissionsWindow(assistant)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)

    async def go() -> None:
        await assistant.ask(f"list files in {docs}")
        await until(lambda: window.live_model.rowCount() == 1)
        assert cell(window, "live", 0, 3) == "until Chamberlain quits"
        window.live_view.setFocus()
        window.live_view.selectRow(0)
        qtbot.keyClick(window.live_view, Qt.Key.Key_Delete)
        await until(lambda: window.live_model.rowCount() == 0)

    run(go())
    assert assistant.session.permissions.grants.live() == []
    assistant.close()


def test_an_always_rule_shows_its_last_use_and_revoke_all_asks_first(qtbot, run, app_home, docs):
    clock = ManualClock(START)
    person = Person(GrantMode.ALWAYS)
    assistant = open_assistant(app_home, person, clock)
    window = PermissionsWindow(assistant)
    qtbot.addWidget(window)
    window.show()

    async def use_twice() -> None:
        await assistant.ask(f"list files in {docs}")
        clock.advance(3600)
        await assistant.ask(f"list files in {docs}")  # covered by the rule: a later use
        await until(lambda: START + 3600 in window.rules_model.last_used.values())

    run(use_twice())
    assert len(person.asked) == 1
    assert window.live_model.rowCount() == 0
    [rule] = window.rules_model.grants
    assert window.rules_model.last_used[rule.id] == START + 3600
    assert cell(window, "rules", 0, 2) == "Always"
    assert cell(window, "rules", 0, 3) == when(START + 3600)

    def box() -> QMessageBox | None:
        found = [
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, QMessageBox) and w.isVisible()
        ]
        return found[0] if found else None

    async def cancel_then_confirm() -> None:
        window.revoke_all_button.click()
        await until(lambda: box() is not None)
        shown = box()
        assert shown is not None
        assert "Revoke all 1 permission" in shown.text()
        shown.escapeButton().click()  # Cancel: nothing is revoked
        await until(lambda: box() is None)
        await asyncio.sleep(0.1)
        assert len(assistant.session.permissions.grants.live()) == 1

        window.revoke_all_button.click()
        await until(lambda: box() is not None)
        shown = box()
        assert shown is not None
        [accept] = [
            b for b in shown.buttons() if shown.buttonRole(b) is QMessageBox.ButtonRole.AcceptRole
        ]
        accept.click()
        await until(lambda: window.rules_model.rowCount() == 0)

    run(cancel_then_confirm())
    assert assistant.session.permissions.grants.live() == []
    assert "Revoked 1 permission" in window.status.text()
    assistant.close()


def test_a_denied_request_appears_among_the_recently_refused(qtbot, run, app_home, docs):
    assistant = open_assistant(app_home, Person(None), ManualClock(START))
    window = PermissionsWindow(assistant)
    qtbot.addWidget(window)
    window.show()
    assert window.denials.showing_empty

    async def go() -> None:
        await assistant.ask(f"list files in {docs}")
        await until(lambda: window.denials_model.rowCount() == 1)

    run(go())
    assert cell(window, "denials", 0, 1) == "Read files"
    assert cell(window, "denials", 0, 2) == str(docs)
    assert cell(window, "denials", 0, 3) == "List a folder"  # the tool in words, not file_list
    assert cell(window, "denials", 0, 4) == "Denied: you said no"
    assert window.live_model.rowCount() == 0
    assistant.close()

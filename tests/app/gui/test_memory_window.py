"""The Memory window: facts with badges, approving, editing, forgetting, anchors within their
budget, export and import, and the pause switch saved in the settings.

Real parts: real widgets offscreen, a real Session on a real home, a real MemoryStore on a real
(plaintext) SQLite file with the credential refusal hook the app uses, the real confirmation
box clicked like a person would, and the real settings file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit, QMessageBox

from app.qt_session import QtSession
from app.windows.memory import BadgeDelegate, MemoryWindow
from broker.session import Session
from broker.settings import Settings, load_settings
from core.clock import ManualClock
from memory.db import open_database
from memory.sensitivity.assessment import refuse_credentials
from memory.store.facts import MemoryStore
from memory.types import FactSource, FactStatus, Sensitivity
from tests.app.gui.conftest import until

START = 1_800_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    db = open_database(tmp_path / "memory.db", key=None, encrypted=False)
    with MemoryStore(db, ManualClock(START), refuse=refuse_credentials) as opened:
        yield opened


def open_window(qtbot, home: Path, store: MemoryStore | None, **settings: int) -> MemoryWindow:
    chosen = Settings()
    chosen.router.model_refinement = False
    for name, value in settings.items():
        setattr(chosen.memory, name, value)
    session = Session(home=home, settings=chosen, clock=ManualClock(START), memory=store)
    assistant = QtSession(session)
    window = MemoryWindow(assistant)
    qtbot.addWidget(window)
    return window


def texts(window: MemoryWindow, which: str = "facts") -> list[str]:
    model = window.facts_model if which == "facts" else window.pending_model
    return [f.text for f in model.facts]


def confirmation() -> QMessageBox | None:
    found = [
        w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()
    ]
    return found[0] if found else None


def accept(box: QMessageBox) -> None:
    [yes] = [b for b in box.buttons() if box.buttonRole(b) is QMessageBox.ButtonRole.AcceptRole]
    yes.click()


def test_facts_are_listed_with_their_badges_and_a_pending_fact_is_approved(
    qtbot, run, app_home, store
):
    store.add("I prefer tea", sensitivity=Sensitivity.LOW)
    waiting = store.add("I live in Leeds", sensitivity=Sensitivity.PERSONAL).fact
    store.add(
        "My doctor says I have asthma", sensitivity=Sensitivity.SECRET, source=FactSource.EXTRACTED
    )
    window = open_window(qtbot, app_home, store)
    run(window.refresh())
    assert window.windowTitle() == "Memory"  # Qt adds the app's name, once

    assert texts(window) == ["I prefer tea"]
    assert window.facts_model.index(0, 1).data() == "Low"
    assert window.facts_model.index(0, 2).data() == "You asked"
    assert isinstance(window.facts_view.itemDelegateForColumn(1), BadgeDelegate)
    assert sorted(texts(window, "pending")) == ["I live in Leeds", "My doctor says I have asthma"]
    badges = {window.pending_model.index(r, 1).data() for r in range(2)}
    assert badges == {"Personal", "Secret"}
    assert "(2)" in window.tabs.tabText(1)

    async def approve() -> None:
        row = window.pending_model.row_of(waiting.id)
        assert row is not None
        window.pending_view.selectRow(row)
        await until(window.approve_button.isEnabled)
        window.approve_button.click()
        await until(lambda: "I live in Leeds" in texts(window))

    run(approve())
    approved = store.get(waiting.id)
    assert approved is not None
    assert approved.status is FactStatus.ACTIVE
    assert texts(window, "pending") == ["My doctor says I have asthma"]
    assert "Approved" in window.status.text()


def test_forgetting_asks_first_and_then_removes_the_fact_from_the_store(
    qtbot, run, app_home, store
):
    fact = store.add("My cat is called Miso", sensitivity=Sensitivity.LOW).fact
    window = open_window(qtbot, app_home, store)
    window.show()
    run(window.refresh())

    async def forget() -> None:
        window.facts_view.selectRow(0)
        window.forget_button.click()
        await until(lambda: confirmation() is not None)
        box = confirmation()
        assert box is not None
        assert "My cat is called Miso" in box.text()
        accept(box)
        await until(lambda: texts(window) == [])

    run(forget())
    assert store.get(fact.id) is None
    assert window.facts.showing_empty
    assert "Forgot" in window.status.text()


def test_editing_a_fact_keeps_the_text_when_the_store_refuses_it(qtbot, run, app_home, store):
    fact = store.add("I work at Acme", sensitivity=Sensitivity.LOW).fact
    window = open_window(qtbot, app_home, store)
    window.show()
    run(window.refresh())
    index = window.facts_model.index(0, 0)

    async def refused_then_saved() -> None:
        window.facts_model.setData(index, "my password is hunter2")  # as the editor commits
        await until(lambda: "Not remembered" in window.status.text())
        assert window.facts_model.unsaved[fact.id] == "my password is hunter2"
        window.facts_model.setData(index, "I work at Initech")
        await until(lambda: texts(window) == ["I work at Initech"])

    run(refused_then_saved())
    assert "Your edit was not saved" not in window.status.text()
    [current] = store.facts(status=FactStatus.ACTIVE)
    assert (current.text, current.source) == ("I work at Initech", FactSource.USER_EDIT)
    assert not any("hunter2" in f.text for f in store.facts(include_superseded=True))


def test_the_search_box_shows_only_matching_facts(qtbot, run, app_home, store):
    store.add("I prefer tea", sensitivity=Sensitivity.LOW)
    store.add("My sister lives in Oslo", sensitivity=Sensitivity.LOW, status=FactStatus.ACTIVE)
    window = open_window(qtbot, app_home, store)
    window.show()

    async def search() -> None:
        qtbot.keyClicks(window.search, "Oslo")
        await until(lambda: texts(window) == ["My sister lives in Oslo"])
        window.search.setText("zebra")
        await until(lambda: texts(window) == [])

    run(search())
    assert "No remembered fact matches “zebra”" in window.facts.empty.text()


def test_an_anchor_over_the_budget_is_refused_with_the_numbers_and_the_text_is_kept(
    qtbot, run, app_home, store
):
    window = open_window(qtbot, app_home, store, anchor_budget_chars=40)
    window.show()
    run(window.refresh())
    assert window.anchors.showing_empty
    assert "Anchors use 0 of the 40 characters" in window.budget_label.text()
    too_long = "Always answer in British English, with metric units"

    async def pin_too_long_then_short() -> None:
        window.anchor_input.setText(too_long)
        window.pin_button.click()
        await until(lambda: "not pinned" in window.status.text())
        needs = len("- " + too_long)
        assert f"needs {needs} characters and only 40 of the 40-character budget" in (
            window.status.text()
        )
        assert store.anchors() == []
        assert window.anchor_input.text() == too_long
        window.anchor_input.setText("Use metric units")
        window.anchor_input.returnPressed.emit()
        await until(lambda: window.anchors_list.count() == 1)

    run(pin_too_long_then_short())
    assert window.status.text() == "Pinned: “Use metric units”."
    assert [a.text for a in store.anchors()] == ["Use metric units"]
    assert window.anchor_input.text() == ""
    assert "Anchors use 18 of the 40 characters" in window.budget_label.text()


def test_the_refusal_names_how_many_characters_are_left(qtbot, run, app_home, store):
    store.add_anchor("Use metric units")  # 18 characters in the prompt
    window = open_window(qtbot, app_home, store, anchor_budget_chars=40)
    run(window.refresh())
    run(window.pin("Answer in British English"))  # 27 + a newline: 28 > 22
    assert window.status.text().startswith(
        "This anchor was not pinned: it needs 28 characters and only 22 of the "
        "40-character budget are left."
    )
    assert len(store.anchors()) == 1


def test_pausing_memory_saves_the_setting(qtbot, run, app_home, store):
    window = open_window(qtbot, app_home, store)
    window.show()
    assert not window.pause.isChecked()

    async def pause() -> None:
        window.pause.click()
        await until(lambda: "paused" in window.status.text())

    run(pause())
    assert window.assistant.session.settings.memory.paused is True
    assert load_settings(app_home).memory.paused is True
    saved = json.loads((app_home / "settings.json").read_text())
    assert saved["memory"]["paused"] is True

    async def resume() -> None:
        window.pause.click()
        await until(lambda: "on again" in window.status.text())

    run(resume())
    assert load_settings(app_home).memory.paused is False


def test_export_then_import_brings_a_forgotten_fact_back_waiting_for_approval(
    qtbot, run, app_home, store, tmp_path
):
    fact = store.add("My cat is called Miso", sensitivity=Sensitivity.LOW).fact
    window = open_window(qtbot, app_home, store)
    run(window.refresh())
    out = tmp_path / "memory-export.json"

    async def export_through_the_dialog() -> None:
        window.export_button.click()  # opens a file dialog without blocking the loop
        [dialog] = window.findChildren(QFileDialog)
        assert dialog.isVisible()
        assert dialog.acceptMode() is QFileDialog.AcceptMode.AcceptSave
        dialog.fileSelected.emit(str(out))  # what choosing a file and pressing Save does
        dialog.close()
        await until(lambda: "Exported" in window.status.text())

    run(export_through_the_dialog())
    assert window.status.text() == f"Exported 1 fact to {out}."
    assert json.loads(out.read_text())["facts"][0]["text"] == "My cat is called Miso"
    assert out.stat().st_mode & 0o077 == 0  # only the person can read it

    store.forget(fact.id)
    run(window.import_from(out))
    assert texts(window, "pending") == ["My cat is called Miso"]
    assert "each waits for your approval" in window.status.text()

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    run(window.import_from(broken))
    assert window.status.text().startswith("Nothing was imported. cannot import")


def test_without_a_store_the_window_says_why_and_editing_is_off(qtbot, run, app_home):
    window = open_window(qtbot, app_home, None)
    window.assistant.session.memory_problem = "The memory passphrase was wrong."
    window.show()
    run(window.refresh())
    assert window.banner.isVisible()
    assert window.banner.text() == "Memory is not available: The memory passphrase was wrong."
    for control in (
        window.search,
        window.anchor_input,
        window.pin_button,
        window.export_button,
        window.import_button,
        window.edit_button,
        window.forget_button,
        window.approve_button,
    ):
        assert not control.isEnabled(), control.accessibleName()
    assert window.pause.isEnabled()  # a setting, not the store


def test_a_fact_is_edited_from_the_keyboard_alone(qtbot, run, app_home, store):
    store.add("I work at Acme", sensitivity=Sensitivity.LOW)
    window = open_window(qtbot, app_home, store)
    window.show()
    qtbot.waitExposed(window)
    run(window.refresh())
    view = window.facts_view

    async def edit() -> None:
        view.setFocus()
        view.setCurrentIndex(window.facts_model.index(0, 0))
        view.selectRow(0)
        qtbot.keyClick(view, Qt.Key.Key_F2)
        editor = QApplication.focusWidget()
        assert isinstance(editor, QLineEdit)
        assert editor.text() == "I work at Acme"
        editor.selectAll()
        qtbot.keyClicks(editor, "I work at Initech")
        qtbot.keyClick(editor, Qt.Key.Key_Return)
        await until(lambda: texts(window) == ["I work at Initech"])

    run(edit())
    assert [f.text for f in store.facts(status=FactStatus.ACTIVE)] == ["I work at Initech"]


def selected_texts(window: MemoryWindow, which: str) -> list[str]:
    view = window.facts_view if which == "facts" else window.pending_view
    model = window.facts_model if which == "facts" else window.pending_model
    return [model.facts[i.row()].text for i in view.selectionModel().selectedRows()]


def test_asked_to_show_a_waiting_fact_the_window_opens_on_its_tab_with_it_selected(
    qtbot, run, app_home, store
):
    store.add("I prefer tea", sensitivity=Sensitivity.LOW)
    store.add("I live in Leeds", sensitivity=Sensitivity.PERSONAL)
    waiting = store.add("I take insulin every morning", sensitivity=Sensitivity.SECRET).fact
    window = open_window(qtbot, app_home, store)
    window.search.setText("tea")  # left from before: it would hide the fact

    async def show() -> None:
        shown = window.show_fact(waiting.id)
        window.show()
        await shown
        await until(lambda: selected_texts(window, "pending") == [waiting.text])

    run(show())
    assert window.tabs.currentIndex() == 1
    assert window.search.text() == ""
    assert window.approve_button.isEnabled()  # Approve, Edit, Reject act on it at once

    async def approve_then_show_it_again() -> None:
        window.approve_button.click()
        await until(lambda: waiting.text in texts(window))
        await window.show_fact(waiting.id)
        await until(lambda: selected_texts(window, "facts") == [waiting.text])

    run(approve_then_show_it_again())
    assert window.tabs.currentIndex() == 0  # approved since: it is under Facts now

    store.reject(store.facts(status=FactStatus.PENDING)[0].id)
    run(window.show_fact("no-such-fact"))
    assert window.status.text() == (
        "That memory is no longer waiting: it was approved, rejected or forgotten meanwhile."
    )


def test_with_nothing_remembered_yet_the_window_opens_on_what_waits(qtbot, run, app_home, store):
    store.add("I live in Leeds", sensitivity=Sensitivity.PERSONAL)
    window = open_window(qtbot, app_home, store)

    async def show() -> None:
        window.show()
        await until(lambda: texts(window, "pending") == ["I live in Leeds"])

    run(show())
    assert window.tabs.currentIndex() == 1


def test_a_change_made_elsewhere_shows_at_once_and_keeps_the_selection(qtbot, run, app_home, store):
    """Another window's write (here the chat's, through the same QtSession) reloads this one:
    no F5. The person's selection survives the reload."""
    store.add("I prefer tea", sensitivity=Sensitivity.LOW)
    kept = store.add("My cat is called Miso", sensitivity=Sensitivity.LOW).fact
    window = open_window(qtbot, app_home, store)
    window.show()
    run(window.refresh())
    window.facts_view.selectRow(window.facts_model.row_of(kept.id))
    tea = next(f for f in store.facts() if f.text == "I prefer tea")

    async def forget_from_elsewhere() -> None:
        await window.assistant.change_memory(object(), store.forget, tea.id)
        await until(lambda: texts(window) == ["My cat is called Miso"])

    run(forget_from_elsewhere())
    assert selected_texts(window, "facts") == ["My cat is called Miso"]


def test_no_alt_key_means_two_things_on_any_tab(qtbot, run, app_home, store):
    from PySide6.QtWidgets import QAbstractButton, QLabel

    window = open_window(qtbot, app_home, store)
    window.show()
    run(window.refresh())
    for tab in range(window.tabs.count()):
        window.tabs.setCurrentIndex(tab)
        words = [window.tabs.tabText(i) for i in range(window.tabs.count())]
        words += [
            w.text()
            for w in window.findChildren(QAbstractButton) + window.findChildren(QLabel)
            if w.isVisibleTo(window)
        ]
        keys = [w.split("&")[1][0].lower() for w in words if "&" in w and "&&" not in w]
        assert len(keys) == len(set(keys)), (window.tabs.tabText(tab), sorted(keys))

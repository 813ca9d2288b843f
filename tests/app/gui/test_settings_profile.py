"""The tool profile in the Settings window: chosen from the bundled ones, what it leaves out said
beneath it, saved with the other settings and used by the running session's next decision.

Real parts: real widgets offscreen on a qasync loop, a real Session on a tmp home (HOME and
CHAMBERLAIN_HOME under tmp_path, from `app_home`), the bundled profiles.toml, the real settings
file, the session's own policy decision, and the tests' MCP notes server
(`tests/support/mcp_notes_server.py`) run as a real subprocess over stdio.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.qt_session import QtSession
from app.windows.settings import SettingsWindow
from app.windows.words import tool_words
from broker.settings import Settings, load_settings, save_settings
from broker.types import Intent, RouterOutput
from tests.app.gui.conftest import make_session, open_settings, until
from tests.support.mcp_notes import notes_config
from tools.mcp.config import McpSettings

HANDING_OFF = ("system_execute", "open_path", "open_url")


@pytest.fixture
def assistant(app_home: Path, config_home: Path) -> Iterator[QtSession]:
    made = QtSession(make_session(app_home))
    yield made
    made.close()


@pytest.fixture
def window(qtbot: Any, assistant: QtSession) -> SettingsWindow:
    return open_settings(qtbot, assistant)


def _choose(qtbot: Any, window: SettingsWindow, name: str) -> None:
    """Pick a profile from the keyboard, as a person would: focus the box, step to it."""
    box = window.profile_choice
    box.setFocus()
    target = box.findData(name)
    assert target >= 0, f"{name} is not offered"
    key = Qt.Key.Key_Down if target > box.currentIndex() else Qt.Key.Key_Up
    while box.currentIndex() != target:
        qtbot.keyClick(box, key)


def _allowed(assistant: QtSession, intent: Intent) -> set[str]:
    return set(assistant.session.decide(RouterOutput(intent=intent)).allowed_tools)


def test_the_bundled_profiles_are_offered_with_the_one_in_use_chosen(window: SettingsWindow):
    box = window.profile_choice
    names = [box.itemData(i) for i in range(box.count())]
    assert names == ["everything", "offline", "read_only", "quiet"]
    assert box.currentData() == "everything"
    hint = window.fields["profile.name"].hint
    assert hint.isVisible()
    assert hint.text() == "Every category: the policy gate alone decides."
    assert window.profile_leaves_out.isVisible()
    assert window.profile_leaves_out.text().startswith("Leaves nothing out of the")
    # Each profile says what it is for while the list is open, too.
    read_only = box.findData("read_only")
    assert "never change" in box.itemData(read_only, Qt.ItemDataRole.ToolTipRole)
    assert "settings.json" in " ".join(
        label.text() for label in window.fields["profile.name"].findChildren(type(hint))
    )


def test_choosing_read_only_says_what_it_leaves_out_and_changes_nothing_until_save(
    qtbot, window: SettingsWindow, assistant: QtSession, app_home: Path
):
    _choose(qtbot, window, "read_only")

    text = window.profile_leaves_out.text()
    assert text.startswith("Leaves out ")
    # Each tool by what it does (an id such as system_execute means nothing to a person).
    for tool in HANDING_OFF:
        assert tool_words(tool) in text
        assert tool not in text
    assert "Read a file" not in text
    assert "never change" in window.fields["profile.name"].hint.text()
    # Why each one is gone, on hover.
    tip = window.profile_leaves_out.toolTip()
    assert "denied by profile 'read_only'" in tip
    # …and by its id as well, as settings.json's deny_tools and add_tools name it.
    assert "Run a command (system_execute): " in tip
    # Only shown: the session and the file are untouched until Save.
    assert assistant.session.settings.profile.name == "everything"
    assert "system_execute" in _allowed(assistant, Intent.SYSTEM_TASK)
    assert not (app_home / "settings.json").exists()

    _choose(qtbot, window, "everything")
    assert window.profile_leaves_out.text().startswith("Leaves nothing out")


def test_a_saved_profile_is_in_settings_json_and_the_next_decision_leaves_its_tools_out(
    qtbot, run, window: SettingsWindow, assistant: QtSession, app_home: Path
):
    assert "system_execute" in _allowed(assistant, Intent.SYSTEM_TASK)
    _choose(qtbot, window, "read_only")

    assert run(window.save()) is True

    raw = json.loads((app_home / "settings.json").read_text())
    assert raw["profile"]["name"] == "read_only"
    assert raw["profile"]["add_tools"] == []
    assert load_settings(app_home).profile.name == "read_only"
    allowed = _allowed(assistant, Intent.SYSTEM_TASK)
    assert allowed.isdisjoint(HANDING_OFF)
    assert "system_info" in allowed  # narrowed, not emptied
    assert "next request" in window.status.text()
    # Revert shows what was saved.
    _choose(qtbot, window, "quiet")
    window.load()
    assert window.profile_choice.currentData() == "read_only"


def test_the_users_own_changes_in_settings_json_are_counted_and_kept_on_save(
    qtbot, run, app_home: Path, config_home: Path
):
    settings = Settings()
    settings.profile.deny_tools = frozenset({"web_search"})
    save_settings(app_home, settings)
    assistant = QtSession(make_session(app_home, settings=load_settings(app_home)))
    try:
        window = SettingsWindow(assistant, autostart_command=["/opt/chamberlain/bin/chamberlain"])
        qtbot.addWidget(window)
        window.show()
        text = window.profile_leaves_out.text()
        assert "Search the web" in text
        assert "counting your changes in settings.json" in text

        _choose(qtbot, window, "offline")
        assert run(window.save()) is True

        raw = json.loads((app_home / "settings.json").read_text())
        assert raw["profile"]["name"] == "offline"
        assert raw["profile"]["deny_tools"] == ["web_search"]
    finally:
        assistant.close()


def test_what_a_profile_leaves_out_follows_the_mcp_servers_tools(
    qtbot, run, app_home: Path, config_home: Path, tmp_path: Path
):
    notes = tmp_path / "notes"
    notes.mkdir()
    settings = Settings()
    settings.mcp = McpSettings(servers={"notes": notes_config(notes)})
    save_settings(app_home, settings)
    assistant = QtSession(make_session(app_home, settings=settings))
    try:
        window = SettingsWindow(assistant, autostart_command=["/opt/chamberlain/bin/chamberlain"])
        qtbot.addWidget(window)
        window.show()
        # Offline keeps no MCP server's tools; none are listed yet, so it leaves out the web.
        _choose(qtbot, window, "offline")
        assert "notes__" not in window.profile_leaves_out.text()

        async def connect() -> None:
            await assistant.start_mcp()
            await until(lambda: "notes__read_note" in window.profile_leaves_out.text(), 10)

        run(connect())
        assert "Search the web" in window.profile_leaves_out.text()
    finally:
        assistant.close()

"""The MCP servers section of Settings, the app connecting its servers at start, and the
permission dialog for an MCP tool.

Real parts: real widgets offscreen on a qasync loop, a real Session on a tmp home (HOME and
CHAMBERLAIN_HOME under tmp_path, from `app_home`), the real settings file, and the tests' own
MCP server (`tests/support/mcp_notes_server.py`) run as a real subprocess over stdio with a tmp
notes folder. Clicks and typing go through qtbot; waiting is `until` from the Qt conftest,
which keeps the qasync loop (and so the window's background work) running while it waits.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from app.main import DesktopApp
from app.permission_dialog import PermissionDialog
from app.permission_prompt import QuestionView
from app.qt_session import QtSession
from app.windows.settings import SettingsWindow
from broker.settings import Settings, load_settings, save_settings
from tests.app.gui.conftest import make_session, open_settings, until
from tests.support.mcp_notes import NOTES_SERVER, notes_config
from tools.manual import Capability
from tools.mcp.config import McpServerConfig, McpSettings


@pytest.fixture
def notes_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "milk.txt").write_text("buy milk\n")
    return folder


@pytest.fixture
def configured(app_home: Path, notes_folder: Path) -> Settings:
    """Settings naming the notes server and one whose program does not exist, saved."""
    settings = Settings()
    settings.mcp = McpSettings(
        servers={
            "notes": notes_config(notes_folder),
            "ghost": McpServerConfig(command=str(app_home / "no-such-program")),
        }
    )
    save_settings(app_home, settings)
    return settings


@pytest.fixture
def assistant(app_home: Path, configured: Settings) -> Iterator[QtSession]:
    made = QtSession(make_session(app_home, settings=configured))
    yield made
    made.close()


@pytest.fixture
def window(qtbot: Any, assistant: QtSession) -> SettingsWindow:
    return open_settings(qtbot, assistant)


def _type(qtbot: Any, edit: QLineEdit, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Delete)
    qtbot.keyClicks(edit, text)


def _status_column(window: SettingsWindow) -> dict[str, str]:
    model = window.mcp.servers
    return {model.item(r, 0).text(): model.item(r, 1).text() for r in range(model.rowCount())}


def _click(qtbot: Any, button: Any) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


# --- the list and Test ---------------------------------------------------------------------------


def test_the_section_lists_the_configured_servers_and_test_connects_one(qtbot, run, window):
    section = window.mcp
    assert section.isVisible()
    assert _status_column(window) == {"ghost": "Not connected", "notes": "Not connected"}
    section.select("notes")
    runs = section.servers.item(1, 2).text()
    assert "mcp_notes_server.py" in runs

    async def test_it() -> None:
        _click(qtbot, section.test_button)
        await until(lambda: "connected" in section.message.text(), 10)

    run(test_it())
    assert section.message.text().startswith("notes: connected, 9 tools")
    assert _status_column(window)["notes"] == "Connected, 9 tools"
    tools = {row[0]: row for row in section.tool_rows()}
    assert len(tools) == 9
    # The class, the risk and why, as the hub judged them; write_note's annotations lie.
    assert tools["write_note"][1:3] == ("write", "Medium")
    assert tools["list_notes"][1:3] == ("read", "Low")
    assert tools["weather"][1] == "execute"
    assert "says nothing" in tools["weather"][3]
    assert section.tools_view.isVisible()


def test_a_server_whose_program_does_not_exist_shows_why_it_failed(qtbot, run, window):
    section = window.mcp
    section.select("ghost")

    async def test_it() -> None:
        _click(qtbot, section.test_button)
        await until(lambda: "failed" in section.message.text(), 10)

    run(test_it())
    assert "not an executable program" in section.message.text()
    assert _status_column(window)["ghost"].startswith("Failed: ")
    assert "no-such-program" in _status_column(window)["ghost"]
    # The list may cut the reason short; the selected server's line says it whole.
    assert "no-such-program is not an executable program" in section.tools_caption.text()
    assert section.tool_rows() == []


# --- adding and editing ------------------------------------------------------------------------


def test_a_url_off_this_computer_is_refused_beside_its_field_and_nothing_is_saved(
    qtbot, run, window, app_home
):
    before = (app_home / "settings.json").read_bytes()
    section = window.mcp
    _click(qtbot, section.add_button)
    assert section.editor.isVisible()
    _type(qtbot, section.name_edit, "remote")
    _type(qtbot, section.url_edit, "http://mcp.example.com/mcp")

    assert run(section.save_server()) is False

    assert "must be on this computer" in section.fields["url"].message
    assert section.fields["url"].error.isVisible()
    assert section.fields["name"].message == ""
    assert "not saved" in section.message.text()
    assert (app_home / "settings.json").read_bytes() == before
    assert "remote" not in window.settings.mcp.servers
    assert section.editor.isVisible()  # the person can fix it


@pytest.mark.parametrize(
    ("name", "command", "url", "field", "words"),
    [
        ("Notes Two", "echo hi", "", "name", "lowercase letters"),
        ("quoted", "npx 'unbalanced", "", "command", "unbalanced quote"),
        ("both", "npx server", "http://127.0.0.1:9/mcp", "command", "either command"),
        ("neither", "", "", "command", "either command"),
        ("notes", "echo hi", "", "name", "already a server called notes"),
    ],
)
def test_a_bad_server_is_refused_with_a_message_in_plain_words(
    qtbot, run, window, app_home, name, command, url, field, words
):
    before = (app_home / "settings.json").read_bytes()
    section = window.mcp
    _click(qtbot, section.add_button)
    _type(qtbot, section.name_edit, name)
    _type(qtbot, section.command_edit, command)
    _type(qtbot, section.url_edit, url)

    assert run(section.save_server()) is False

    assert words in section.fields[field].message
    assert "`" not in section.fields[field].message
    assert "Value error" not in section.fields[field].message
    assert (app_home / "settings.json").read_bytes() == before


def test_a_server_added_in_the_form_is_saved_and_its_status_follows_the_hub(
    qtbot, run, window, app_home, notes_folder
):
    section = window.mcp
    _click(qtbot, section.add_button)
    _type(qtbot, section.name_edit, "jotter")
    _type(qtbot, section.command_edit, f"{sys.executable} '{NOTES_SERVER}' '{notes_folder}'")
    section.env_edit.setPlainText("NOTES_MOOD=calm\n\n")
    section.category_box.setCurrentIndex(section.category_box.findData("read"))

    async def add() -> None:
        assert await section.save_server() is True
        # Nobody pressed Test: the hub connects it and reports through on_change.
        await until(lambda: _status_column(window).get("jotter") == "Connected, 9 tools", 10)

    run(add())
    saved = load_settings(app_home).mcp.servers["jotter"]
    assert saved.command == sys.executable
    assert saved.args == (str(NOTES_SERVER), str(notes_folder))
    assert saved.env == {"NOTES_MOOD": "calm"}
    assert saved.default_category == "read"
    assert not section.editor.isVisible()
    assert set(load_settings(app_home).mcp.servers) == {"ghost", "jotter", "notes"}


def test_the_form_shows_and_saves_what_the_servers_sandbox_allows(qtbot, run, window, app_home):
    """Writing and the network are shown as the entry has them and changed by keyboard; the
    saved entry stays sandboxed."""
    section = window.mcp
    before = load_settings(app_home).mcp.servers["notes"]
    section.open_editor("notes")
    assert section.write_box.isChecked() is before.write
    assert section.network_box.isChecked() is before.network
    qtbot.keyClick(section.write_box, Qt.Key.Key_Space)  # by keyboard, as a person would
    qtbot.keyClick(section.network_box, Qt.Key.Key_Space)

    assert run(section.save_server()) is True

    saved = load_settings(app_home).mcp.servers["notes"]
    assert saved.write is not before.write
    assert saved.network is not before.network
    assert saved.sandbox is True
    section.open_editor("notes")
    assert section.write_box.isChecked() is saved.write
    assert section.network_box.isChecked() is saved.network


def test_a_removed_server_is_gone_from_settings_json_and_from_the_list(run, window, app_home):
    """Removes without the confirmation box (`confirm` is the windows' one shared seam)."""
    section = window.mcp
    section.select("ghost")

    assert run(section.remove_selected(ask=False)) is True

    assert set(load_settings(app_home).mcp.servers) == {"notes"}
    assert list(_status_column(window)) == ["notes"]
    assert "Removed ghost" in section.message.text()


# --- denying a tool ------------------------------------------------------------------------------


def test_a_denied_tool_is_saved_in_settings_json_and_no_longer_offered(
    qtbot, run, window, app_home, assistant
):
    section = window.mcp
    section.select("notes")

    async def deny() -> None:
        await section.test_selected()
        section.select_tool("write_note")
        assert section.deny_button.text() == "Deny this tool"
        _click(qtbot, section.deny_button)
        await until(lambda: "denied" in section.message.text(), 10)
        await until(lambda: _status_column(window).get("notes") == "Connected, 8 tools", 10)

    run(deny())
    raw = json.loads((app_home / "settings.json").read_text())
    assert raw["mcp"]["servers"]["notes"]["deny_tools"] == ["write_note"]
    assert assistant.session.tools.get("notes__write_note") is None
    assert assistant.session.tools.get("notes__read_note") is not None
    rows = {row[0]: row for row in section.tool_rows()}
    assert rows["write_note"][1] == "denied"


# --- the app ------------------------------------------------------------------------------------


def test_the_app_connects_its_mcp_servers_after_start_and_ends_them_on_quit(
    qapp, app_home, configured, event_loop_qt, run, monkeypatch
):
    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    shell = DesktopApp(app_home, use_tray=True, connect_model=False)
    try:

        async def start() -> None:
            await shell.load()
            hub = shell.assistant.session.mcp
            assert hub is not None
            await until(lambda: hub.server_status("notes").state == "connected", 10)

        run(start())
        hub = shell.assistant.session.mcp
        assert hub is not None
        assert shell.assistant.session.tools.get("notes__list_notes") is not None
    finally:
        shell.quit()
    assert hub.server_status("notes").state == "idle"
    assert shell.assistant.session.tools.get("notes__list_notes") is None


# --- the permission dialog ----------------------------------------------------------------------


def test_the_dialog_for_an_mcp_tool_that_changes_things_names_the_server_and_the_tool(qtbot):
    from broker.permissions import PermissionQuestion
    from core.clock import SystemClock
    from tests.support.prompts import make_request

    request = make_request(
        capability=Capability.MCP_WRITE,
        scope="mcp:notes__write_note",
        tool="notes__write_note",
        arguments={"name": "a.txt", "text": "hi"},
        call_id="call-9",
        user_scope=True,
        risk="moderate",
        reversibility="effort",
    )
    question = QuestionView(PermissionQuestion(request, SystemClock()))
    dialog = PermissionDialog(question, activation_delay_s=0)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.headline.text() == "Allow Chamberlain to use an MCP tool that changes things?"
    # No plan came with it: the tool and every argument, place-like first.
    assert dialog.rows["Tool"].toPlainText() == "notes__write_note"
    assert dialog.rows["Arguments"].toPlainText() == 'name = "a.txt"\ntext = "hi"'
    assert dialog.always_rule is not None
    assert "the tool write_note of MCP server 'notes'" in dialog.always_rule.text()
    assert not question.read_only
    question.cancel("cancelled")

"""The Settings window: checked by the settings model, saved for real, nothing saved when wrong.

Real parts: real widgets offscreen, a real Session on a tmp home, the real settings file, the
real autostart folder (under a tmp HOME and XDG_CONFIG_HOME), a real OpenAI-protocol server on
127.0.0.1 for detection. The keyring is keyring's fail backend (conftest), as on a box without
one; the one test that needs a working keyring installs an in-memory backend through keyring's
own API.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QLineEdit, QWidget

from app import autostart
from app.qt_session import QtSession
from app.windows.settings import SettingsWindow
from broker.keys import load_api_key
from broker.llm import endpoints
from broker.settings import load_settings, save_settings
from tests.app.gui.conftest import make_session, open_settings
from tests.support.openai_server import free_port

SECRET_KEY = "sk-test-NEVER-IN-A-FILE-93f1c2"


@pytest.fixture(autouse=True)
def _collect_on_the_ui_thread() -> Iterator[None]:
    """Collect each test's cyclic garbage here, on the UI thread. Otherwise a later test's io
    thread may run the collector and destroy Qt objects (the qasync loop's timers) that belong
    to this one, which Qt reports as "Timers cannot be stopped from another thread"."""
    yield
    gc.collect()


@pytest.fixture
def assistant(app_home: Path, config_home: Path) -> Iterator[QtSession]:
    made = QtSession(make_session(app_home))
    yield made
    made.close()


@pytest.fixture
def window(qtbot, assistant: QtSession) -> SettingsWindow:
    return open_settings(qtbot, assistant)


def _type(qtbot, edit: QLineEdit, text: str) -> None:
    """Replace the field's text the way a person does: select all, type."""
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Delete)
    qtbot.keyClicks(edit, text)


def test_bad_values_are_shown_beside_their_fields_and_nothing_is_saved(
    qtbot, run, window, app_home
):
    save_settings(app_home, window.settings)
    before = (app_home / "settings.json").read_bytes()
    _type(qtbot, window.numbers["executor.max_iterations"], "11")
    _type(qtbot, window.numbers["permissions.prompt_timeout_s"], "-5")
    _type(qtbot, window.numbers["chat.retention_days"], "soon")

    assert run(window.save()) is False

    fields = window.fields
    assert "less than or equal to 10" in fields["executor.max_iterations"].message
    assert "greater than 0" in fields["permissions.prompt_timeout_s"].message
    assert "valid number" in fields["chat.retention_days"].message
    assert fields["router.confidence_threshold"].message == ""  # only the bad ones
    assert fields["executor.max_iterations"].error.isVisible()
    assert "Nothing was saved" in window.status.text()
    assert (app_home / "settings.json").read_bytes() == before
    assert window.settings.executor.max_iterations == 5
    assert window.settings.permissions.prompt_timeout_s == 60.0
    # Fixed, the error goes and the value is saved.
    _type(qtbot, window.numbers["executor.max_iterations"], "10")
    _type(qtbot, window.numbers["permissions.prompt_timeout_s"], "30")
    _type(qtbot, window.numbers["chat.retention_days"], "0")
    assert run(window.save()) is True
    assert fields["executor.max_iterations"].message == ""
    assert load_settings(app_home).executor.max_iterations == 10


def test_good_values_are_saved_read_back_and_applied_to_the_running_session(
    qtbot, run, window, app_home, assistant
):
    session = assistant.session
    executor_settings = session.settings.executor
    _type(qtbot, window.numbers["executor.max_iterations"], "3")
    _type(qtbot, window.numbers["router.confidence_threshold"], "0.7")
    _type(qtbot, window.numbers["permissions.prompt_timeout_s"], "25")
    _type(qtbot, window.numbers["permissions.timed_default_minutes"], "15")
    _type(qtbot, window.numbers["chat.retention_days"], "30")
    _type(qtbot, window.numbers["tools.screenshot_retention_days"], "2.5")
    window.allow_remote.setPlainText("https://models.example.com\n\n")

    assert run(window.save()) is True

    saved = load_settings(app_home)
    assert saved.executor.max_iterations == 3
    assert saved.router.confidence_threshold == 0.7
    assert saved.permissions.prompt_timeout_s == 25.0
    assert saved.permissions.timed_default_minutes == 15.0
    assert saved.chat.retention_days == 30.0
    assert saved.tools.screenshot_retention_days == 2.5
    # Stored as the same base URL the model client compares against.
    assert saved.memory.allow_remote == ["https://models.example.com/v1"]
    # Updated in place: the executor reads the very object it was given at start.
    assert session.settings.executor is executor_settings
    assert session.executor.settings.max_iterations == 3
    assert session.settings.router.confidence_threshold == 0.7
    assert session.permissions.prompt_timeout_s == 25.0
    assert session.permissions.timed_default_s == 15 * 60
    status = window.status.text()
    assert "next request" in status
    assert "conversation retention" in status
    assert "after a restart" in status


def test_a_commands_limits_are_set_in_the_tools_group_checked_and_applied_after_a_restart(
    qtbot, run, window, app_home
):
    limits = ("memory_mb", "max_processes", "cpu_s", "shm_mb")
    tools_group = window.numbers["tools.command_memory_mb"].parentWidget()
    while tools_group is not None and getattr(tools_group, "title", lambda: "")() != "Tools":
        tools_group = tools_group.parentWidget()
    assert tools_group is not None  # with the other tool settings, not under privacy
    _type(qtbot, window.numbers["tools.command_memory_mb"], "10")  # below the 64 MiB floor

    assert run(window.save()) is False
    assert "greater than or equal to 64" in window.fields["tools.command_memory_mb"].message

    for key, value in zip(limits, ("512", "64", "30", "16"), strict=True):
        _type(qtbot, window.numbers[f"tools.command_{key}"], value)
    assert run(window.save()) is True

    tools = load_settings(app_home).tools
    assert (tools.command_memory_mb, tools.command_max_processes) == (512, 64)
    assert (tools.command_cpu_s, tools.command_shm_mb) == (30, 16)
    assert "a command's memory limit" in window.status.text()
    assert "after a restart" in window.status.text()


def test_a_server_address_that_is_not_one_is_refused_beside_the_field(qtbot, run, window, app_home):
    window.url_choice.setCurrentIndex(window.url_choice.findData("custom"))
    _type(qtbot, window.url_custom, "ftp://models.example.com")
    window.allow_remote.setPlainText("https://ok.example.com\nnot a url://x?y")

    assert run(window.save()) is False

    assert "http:// or https://" in window.fields["llm.url"].message
    assert window.fields["memory.allow_remote"].message
    assert not (app_home / "settings.json").exists()


def test_local_servers_are_detected_listed_and_can_be_picked(
    qtbot, run, window, app_home, assistant, scripted_server, monkeypatch
):
    server = scripted_server(["hello"], model="tiny")
    monkeypatch.setattr(
        endpoints, "PROBE_PORTS", [("Scripted", server.port), ("Nobody", server.port + 1)]
    )
    found = run(window.detect_servers())

    assert found == [("Scripted", server.base_url)]
    index = window.url_choice.findData(server.base_url)
    assert index >= 0
    assert "Scripted" in window.url_choice.itemText(index)
    assert "Scripted" in window.fields["llm.url"].message
    window.url_choice.setCurrentIndex(index)
    _type(qtbot, window.model_name, "tiny")

    assert run(window.save()) is True

    saved = load_settings(app_home)
    assert (saved.llm.url, saved.llm.model) == (server.base_url, "tiny")
    # The running session was reconnected to the server just picked.
    assert assistant.session.model is not None
    assert str(getattr(assistant.session.model, "base_url", "")).rstrip("/") == server.base_url


def test_the_embedded_model_is_a_choice_that_takes_no_model_name(qtbot, run, window, app_home):
    _type(qtbot, window.model_name, "llama3")
    window.url_choice.setCurrentIndex(window.url_choice.findData("embedded"))
    assert not window.model_name.isEnabled()
    hint = window.fields["llm.url"].hint
    assert hint.isVisibleTo(window)
    assert "A larger local model" in hint.text()

    assert run(window.save()) is True

    saved = load_settings(app_home)
    assert (saved.llm.url, saved.llm.model) == ("embedded", None)


def test_start_at_login_writes_and_removes_the_autostart_entry(qtbot, run, window, config_home):
    entry = config_home / "autostart" / "chamberlain.desktop"
    assert not window.start_at_login.isChecked()

    window.start_at_login.setFocus()
    qtbot.keyClick(window.start_at_login, Qt.Key.Key_Space)
    assert window.start_at_login.isChecked()
    assert not entry.exists()  # nothing happens until Save
    assert run(window.save()) is True
    assert entry.is_file()
    assert "Exec=/opt/chamberlain/bin/chamberlain" in entry.read_text().splitlines()
    assert autostart.is_enabled()

    reopened = SettingsWindow(window.assistant)
    qtbot.addWidget(reopened)
    assert reopened.start_at_login.isChecked()
    reopened.start_at_login.setChecked(False)
    assert run(reopened.save()) is True
    assert not entry.exists()
    assert not autostart.is_enabled()


def _files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_without_a_keyring_the_api_key_is_explained_and_written_nowhere(
    qtbot, run, window, tmp_path
):
    window.url_choice.setCurrentIndex(window.url_choice.findData("custom"))
    _type(qtbot, window.url_custom, "https://models.example.com/v1")
    field = window.fields["llm.api_key"]
    # Said beside the field before anything is typed, and the field takes no key.
    assert "no system keyring" in field.message.lower()
    assert "CHAMBERLAIN_API_KEY" in field.message
    assert not window.api_key.isEnabled()

    # Even a key put there some other way is never written anywhere.
    window.api_key.setText(SECRET_KEY)
    assert run(window.save()) is True

    assert "CHAMBERLAIN_API_KEY" in field.message
    assert window.api_key.text() == ""
    assert _files_holding(tmp_path, SECRET_KEY) == []
    assert load_api_key("https://models.example.com/v1") is None


def test_with_a_keyring_the_api_key_goes_there_and_nowhere_else(
    qtbot, run, memory_keyring, window, tmp_path, monkeypatch
):
    window.url_choice.setCurrentIndex(window.url_choice.findData("custom"))
    _type(qtbot, window.url_custom, "models.example.com:8443")
    assert window.api_key.isEnabled()
    _type(qtbot, window.api_key, SECRET_KEY)
    assert window.api_key.echoMode() is QLineEdit.EchoMode.Password

    assert run(window.save()) is True

    assert load_api_key("http://models.example.com:8443/v1") == SECRET_KEY
    api_keys = {user: key for (_, user), key in memory_keyring.store.items() if "api" in user}
    assert api_keys == {"api-key http://models.example.com:8443/v1": SECRET_KEY}
    assert _files_holding(tmp_path, SECRET_KEY) == []
    assert window.api_key.text() == ""
    assert "keyring" in window.fields["llm.api_key"].message
    assert window.forget_key.isEnabled()

    # Opened again, the window knows a key is saved for this server (without showing it).
    monkeypatch.setattr(endpoints, "PROBE_PORTS", [("nobody", free_port())])
    reopened = SettingsWindow(window.assistant)
    qtbot.addWidget(reopened)
    assert not reopened.forget_key.isEnabled()
    run(reopened.refresh())
    assert reopened.forget_key.isEnabled()
    assert "saved" in reopened.api_key.placeholderText()
    assert reopened.api_key.text() == ""

    run(reopened.remove_api_key())
    assert load_api_key("http://models.example.com:8443/v1") is None
    assert not reopened.forget_key.isEnabled()


def test_a_setting_an_environment_variable_decides_is_shown_as_such(
    qtbot, app_home, config_home, monkeypatch
):
    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "7")
    assistant = QtSession(make_session(app_home))
    try:
        shown = SettingsWindow(assistant)
        qtbot.addWidget(shown)
        edit = shown.numbers["executor.max_iterations"]
        assert edit.text() == "7"
        assert not edit.isEnabled()
        assert (
            "CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS"
            in shown.fields["executor.max_iterations"].message
        )
    finally:
        assistant.close()


def test_every_field_has_an_accessible_name_a_label_and_is_reached_with_tab(window):
    assert window.windowTitle() == "Settings"  # Qt adds the app's name, once
    labelled = {label.buddy() for label in window.findChildren(QLabel) if label.buddy() is not None}
    for path, field in window.fields.items():
        editor = field.editor
        assert editor.accessibleName(), path
        assert editor in labelled, f"{path} has no label pointing at it"
        assert editor.focusPolicy() & Qt.FocusPolicy.TabFocus, path
    for button in (window.save_button, window.revert_button, window.detect_button):
        assert button.accessibleName()
    # Tab walks from the first field through every field to Save.
    window.url_choice.setFocus()
    order: list[QWidget] = []
    for _ in range(40):
        focused = window.focusWidget()
        order.append(focused)
        if focused is window.save_button:
            break
        window.focusNextChild()
    assert order[-1] is window.save_button
    for path, field in window.fields.items():
        if field.editor.isEnabled() and field.editor.isVisible():
            assert field.editor in order, f"{path} is not reached with Tab"


def _custom_address(qtbot, window: SettingsWindow, text: str) -> None:
    window.url_choice.setCurrentIndex(window.url_choice.findData("custom"))
    _type(qtbot, window.url_custom, text)


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("htp:/localhost 18731", "has a space in it"),
        ("htp:/localhost:18731", "must begin with http:// or https://"),
        ("localhost:abc", "no valid port"),
        ("ftp://x", "must begin with http:// or https://"),
        ("http://my server:8080/v1", "has a space in it"),
        ("http://:8080", "names no server"),
        ("   ", "Type the model server's address"),
    ],
)
def test_an_address_that_is_not_one_is_said_beside_the_field_as_it_is_typed_and_never_saved(
    qtbot, run, window, app_home, typed, said
):
    _custom_address(qtbot, window, typed)
    field = window.fields["llm.url"]
    # Said once typing pauses, without leaving the field or pressing Save.
    qtbot.waitUntil(lambda: said in field.message)
    assert field.error.isVisible()
    assert "--llm" not in field.message

    assert run(window.save()) is False
    assert said in field.message
    assert "Nothing was saved" in window.status.text()
    assert not (app_home / "settings.json").exists()
    assert window.settings.llm.url == "auto"


def test_a_corrected_address_clears_its_error_and_is_saved_as_the_base_url(
    qtbot, run, window, app_home
):
    field = window.fields["llm.url"]
    _custom_address(qtbot, window, "localhost:abc")
    window.check_address()  # as leaving the field does
    assert "no valid port" in field.message

    _type(qtbot, window.url_custom, "LOCALHOST:18731")
    qtbot.waitUntil(lambda: field.message == "")
    assert run(window.save()) is True

    assert load_settings(app_home).llm.url == "http://LOCALHOST:18731/v1"
    assert window.url_custom.text() == "http://LOCALHOST:18731/v1"
    assert window.settings.llm.url == "http://LOCALHOST:18731/v1"


def test_a_model_server_an_environment_variable_sets_is_shown_read_only_and_never_saved(
    qtbot, run, app_home, config_home, monkeypatch
):
    """CHAMBERLAIN_LLM__URL sets the server for this run: the window shows it, names the
    variable, does not let it be edited, and saving another field keeps settings.json's own."""
    monkeypatch.setenv("CHAMBERLAIN_LLM__URL", "http://127.0.0.1:18731/v1")
    (app_home / "settings.json").write_text('{"llm": {"url": "embedded"}}')
    assistant = QtSession(make_session(app_home, settings=load_settings(app_home)))
    try:
        shown = open_settings(qtbot, assistant)
        field = shown.fields["llm.url"]
        assert shown.url_custom.text() == "http://127.0.0.1:18731/v1"
        assert not shown.url_choice.isEnabled()
        assert not shown.url_custom.isEnabled()
        assert "CHAMBERLAIN_LLM__URL" in field.message
        _type(qtbot, shown.numbers["executor.max_iterations"], "3")

        assert run(shown.save()) is True

        text = (app_home / "settings.json").read_text()
        assert "18731" not in text
        assert load_settings(app_home).llm.url == "http://127.0.0.1:18731/v1"  # env still wins
        monkeypatch.delenv("CHAMBERLAIN_LLM__URL")
        saved = load_settings(app_home)
        assert saved.llm.url == "embedded"  # the file's own, as it was
        assert saved.executor.max_iterations == 3
        # The running session keeps the variable's server.
        assert assistant.session.settings.llm.url == "http://127.0.0.1:18731/v1"
    finally:
        assistant.close()


def test_a_setting_from_the_environment_absent_from_the_file_stays_absent_after_a_save(
    qtbot, run, app_home, config_home, monkeypatch
):
    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "7")
    monkeypatch.setenv("CHAMBERLAIN_LLM__URL", "localhost:18731")
    assistant = QtSession(make_session(app_home, settings=load_settings(app_home)))
    try:
        shown = open_settings(qtbot, assistant)
        _type(qtbot, shown.numbers["permissions.prompt_timeout_s"], "25")
        assert run(shown.save()) is True
    finally:
        assistant.close()
    monkeypatch.delenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS")
    monkeypatch.delenv("CHAMBERLAIN_LLM__URL")
    import json

    written = json.loads((app_home / "settings.json").read_text())
    assert "max_iterations" not in written.get("executor", {})
    assert "url" not in written.get("llm", {})
    saved = load_settings(app_home)
    assert saved.executor.max_iterations == 5
    assert saved.llm.url == "auto"
    assert saved.permissions.prompt_timeout_s == 25.0

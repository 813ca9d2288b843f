"""What the desktop chat and the Settings window added to the settings: `chat.retention_days`
(settings schema 2, migrated from 1), `chat.shortcut` (the key that opens the chat), and an
endpoint's API key kept in the system keyring.

Real files in a tmp home. conftest sets keyring's fail backend, so by default there is "no
system keyring"; the tests that need one install an in-memory backend through keyring's own
API (``DictKeyring`` from tests/support/keyring.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker.keys import (
    KeyringUnavailable,
    api_keyring_problem,
    delete_api_key,
    load_api_key,
    save_api_key,
)
from broker.llm.endpoints import InvalidEndpoint
from broker.settings import SCHEMA_VERSION, Settings, SettingsError, load_settings, save_settings

KEY = "sk-live-NOT-IN-ANY-FILE-5a8e"


def write(home: Path, data: object) -> Path:
    path = home / "settings.json"
    path.write_text(json.dumps(data))
    return path


# --- chat retention --------------------------------------------------------------------------


def test_conversations_are_kept_ninety_days_by_default(tmp_path):
    assert load_settings(tmp_path).chat.retention_days == 90.0
    assert SCHEMA_VERSION >= 2


def test_a_version_1_file_gains_the_chat_section_and_keeps_everything_else(tmp_path):
    write(tmp_path, {"schema_version": 1, "executor": {"max_iterations": 3}})
    settings = load_settings(tmp_path)
    assert settings.schema_version == SCHEMA_VERSION
    assert settings.chat.retention_days == 90.0
    assert settings.executor.max_iterations == 3
    save_settings(tmp_path, settings)
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved["schema_version"] == SCHEMA_VERSION
    assert saved["chat"] == {"retention_days": 90.0, "shortcut": "Ctrl+Alt+Space"}
    assert saved["executor"]["max_iterations"] == 3


def test_zero_keeps_conversations_forever_and_a_negative_retention_is_refused(tmp_path):
    write(tmp_path, {"chat": {"retention_days": 0}})
    assert load_settings(tmp_path).chat.retention_days == 0.0
    path = write(tmp_path, {"chat": {"retention_days": -1}})
    with pytest.raises(SettingsError, match="retention_days"):
        load_settings(tmp_path)
    assert json.loads(path.read_text()) == {"chat": {"retention_days": -1}}  # kept as it was


def test_an_unknown_chat_setting_is_refused_not_ignored(tmp_path):
    write(tmp_path, {"chat": {"retention_day": 30}})
    with pytest.raises(SettingsError, match="retention_day"):
        load_settings(tmp_path)


def test_the_environment_overrides_the_chat_retention(tmp_path, monkeypatch):
    write(tmp_path, {"chat": {"retention_days": 30}})
    monkeypatch.setenv("CHAMBERLAIN_CHAT__RETENTION_DAYS", "7")
    assert load_settings(tmp_path).chat.retention_days == 7.0


def test_a_round_trip_through_the_file_keeps_the_retention(tmp_path):
    settings = Settings()
    settings.chat.retention_days = 14.5
    save_settings(tmp_path, settings)
    assert load_settings(tmp_path).chat.retention_days == 14.5


# --- the key that opens the chat ------------------------------------------------------------


def test_the_chat_opens_with_ctrl_alt_space_unless_the_file_says_another_key_or_none(tmp_path):
    assert load_settings(tmp_path).chat.shortcut == "Ctrl+Alt+Space"
    write(tmp_path, {"chat": {"shortcut": "Meta+C"}})
    assert load_settings(tmp_path).chat.shortcut == "Meta+C"
    write(tmp_path, {"chat": {"shortcut": ""}})
    assert load_settings(tmp_path).chat.shortcut == ""  # off


@pytest.mark.parametrize("bad", ["K", "Shift+K", "Hyper+K", "Ctrl+", "Ctrl+Alt"])
def test_a_key_that_would_take_what_the_person_types_or_names_no_key_is_refused(tmp_path, bad):
    """Without Ctrl, Alt or Meta a key taken from the whole desktop would swallow typing."""
    path = write(tmp_path, {"chat": {"shortcut": bad}})
    with pytest.raises(SettingsError, match="shortcut"):
        load_settings(tmp_path)
    assert json.loads(path.read_text()) == {"chat": {"shortcut": bad}}  # kept as it was


# --- the API key -----------------------------------------------------------------------------


def _files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_without_a_keyring_saving_a_key_says_to_use_the_environment_variable(tmp_path):
    with pytest.raises(KeyringUnavailable, match="MY_MODEL_KEY") as err:
        save_api_key("https://models.example.com/v1", KEY, env_var="MY_MODEL_KEY")
    assert err.value.env_var == "MY_MODEL_KEY"
    assert "no system keyring" in str(err.value)
    assert "llm.api_key_env" in str(err.value)
    assert KEY not in str(err.value)
    assert _files_holding(tmp_path, KEY) == []
    # Nothing could have been saved, so there is nothing to load; removing says why not.
    assert load_api_key("https://models.example.com/v1") is None
    with pytest.raises(KeyringUnavailable, match="CHAMBERLAIN_API_KEY"):
        delete_api_key("https://models.example.com/v1")
    assert "CHAMBERLAIN_API_KEY" in (api_keyring_problem() or "")


def test_a_key_is_kept_per_endpoint_in_the_keyring_only(tmp_path, memory_keyring):
    assert api_keyring_problem() is None
    save_api_key("models.example.com:8443", f"  {KEY}\n")

    # However the address is written, it is the same endpoint.
    assert load_api_key("http://models.example.com:8443/v1/") == KEY
    assert load_api_key("http://models.example.com:8443") == KEY
    assert load_api_key("https://models.example.com:8443/v1") is None  # another endpoint
    assert memory_keyring.store == {
        ("chamberlain", "api-key http://models.example.com:8443/v1"): KEY
    }
    assert _files_holding(tmp_path, KEY) == []

    assert delete_api_key("http://models.example.com:8443/v1") is True
    assert load_api_key("models.example.com:8443") is None
    assert delete_api_key("models.example.com:8443") is False


@pytest.mark.parametrize("bad", ["", "   ", "sk-one\nsk-two"])
def test_an_empty_or_multi_line_key_is_refused(memory_keyring, bad):
    with pytest.raises(ValueError, match="empty or spans several lines"):
        save_api_key("http://127.0.0.1:8080/v1", bad)
    assert memory_keyring.store == {}


def test_a_key_for_something_that_is_not_an_endpoint_is_refused(memory_keyring):
    with pytest.raises(InvalidEndpoint):
        save_api_key("ftp://models.example.com", KEY)
    assert load_api_key("embedded") is None
    assert memory_keyring.store == {}

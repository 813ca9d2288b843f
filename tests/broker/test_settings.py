"""Settings: defaults, environment overrides, validation, versioning, and files never replaced.

Real files in a tmp home; the environment is changed with monkeypatch (conftest clears every
CHAMBERLAIN_* variable first, so nothing leaks in from the developer's shell).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker.settings import (
    SCHEMA_VERSION,
    Settings,
    SettingsError,
    default_home,
    load_settings,
    save_settings,
)


def write(home: Path, data: object) -> Path:
    path = home / "settings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_defaults_when_there_is_no_file(tmp_path):
    settings = load_settings(tmp_path)
    assert settings.schema_version == SCHEMA_VERSION
    assert settings.llm.url == "auto"
    assert settings.llm.api_key_env == "CHAMBERLAIN_API_KEY"
    assert settings.executor.max_iterations == 5
    assert settings.executor.stall_repeats == 3
    assert settings.executor.max_tool_errors == 3
    assert settings.executor.max_argument_bytes == 16 * 1024
    assert settings.router.confidence_threshold == 0.5
    assert settings.router.model_refinement is None
    assert settings.permissions.prompt_timeout_s == 60.0
    assert settings.policy.deny == []
    # Reading settings never creates a file.
    assert not (tmp_path / "settings.json").exists()


def test_a_file_sets_only_what_it_names(tmp_path):
    write(tmp_path, {"executor": {"max_iterations": 2}, "policy": {"deny": ["file_read"]}})
    settings = load_settings(tmp_path)
    assert settings.executor.max_iterations == 2
    assert settings.executor.stall_repeats == 3
    assert settings.policy.deny == ["file_read"]


def test_an_environment_variable_overrides_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "7")
    assert load_settings(tmp_path).executor.max_iterations == 7


def test_an_environment_variable_overrides_the_file(tmp_path, monkeypatch):
    write(tmp_path, {"executor": {"max_iterations": 2, "stall_repeats": 4}})
    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "7")
    settings = load_settings(tmp_path)
    assert settings.executor.max_iterations == 7
    assert settings.executor.stall_repeats == 4  # what the variable does not name stays


@pytest.mark.parametrize(
    "data",
    [
        {"executor": {"max_iterations": 11}},
        {"executor": {"max_iterations": 0}},
        {"executor": {"stall_repeats": 1}},
        {"router": {"confidence_threshold": 1.5}},
        {"llm": {"timeout_s": 0}},
        {"permissions": {"prompt_timeout_s": -1}},
    ],
    ids=["iterations-high", "iterations-zero", "stall", "threshold", "timeout", "prompt"],
)
def test_out_of_range_values_in_the_file_are_rejected_and_the_file_is_kept(tmp_path, data):
    path = write(tmp_path, data)
    before = path.read_bytes()
    with pytest.raises(SettingsError, match=r"settings\.json") as caught:
        load_settings(tmp_path)
    section, values = next(iter(data.items()))
    assert f"{section}.{next(iter(values))}" in str(caught.value)
    assert path.read_bytes() == before


def test_an_out_of_range_environment_variable_is_a_settings_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "11")
    with pytest.raises(SettingsError, match="CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS"):
        load_settings(tmp_path)


def test_broken_json_is_an_error_naming_the_file_which_is_left_untouched(tmp_path):
    path = write(tmp_path, '{"executor": {"max_iterations": 3,,}')
    before = path.read_bytes()
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    assert str(path) in str(caught.value)
    assert "fix or remove the file" in str(caught.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_a_file_that_is_not_an_object_is_an_error(tmp_path):
    path = write(tmp_path, "[1, 2]")
    with pytest.raises(SettingsError, match="must hold a JSON object"):
        load_settings(tmp_path)
    assert path.read_text() == "[1, 2]"


def test_a_future_schema_version_is_a_clear_error(tmp_path):
    path = write(tmp_path, {"schema_version": SCHEMA_VERSION + 1, "executor": {}})
    before = path.read_bytes()
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert f"schema_version {SCHEMA_VERSION + 1}" in message
    assert "newer than this Chamberlain understands" in message
    assert "upgrade Chamberlain" in message
    assert path.read_bytes() == before


def test_save_then_load_round_trips(tmp_path):
    settings = Settings()
    settings.executor.max_iterations = 9
    settings.router.model_refinement = False
    settings.llm.url = "http://127.0.0.1:11434/v1"
    settings.policy.deny = ["file_search"]
    home = tmp_path / "new-home"
    save_settings(home, settings)
    loaded = load_settings(home)
    assert loaded == settings
    assert json.loads((home / "settings.json").read_text())["schema_version"] == SCHEMA_VERSION
    assert sorted(p.name for p in home.iterdir()) == ["settings.json"]


def test_default_home_follows_chamberlain_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAMBERLAIN_HOME", str(tmp_path / "elsewhere"))
    assert default_home() == tmp_path / "elsewhere"


def test_a_misspelled_key_inside_a_section_is_rejected(tmp_path):
    (tmp_path / "settings.json").write_text('{"executor": {"max_iteratons": 3}}')
    with pytest.raises(SettingsError, match="max_iteratons"):
        load_settings(tmp_path)


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, '{"policy": {"intents": ' + '{"a": ' * 50_000 + "1" + "}" * 50_002],
    ids=["unclosed-arrays", "deep-objects"],
)
def test_deeply_nested_json_is_a_settings_error_naming_the_file(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    assert str(path) in str(caught.value)
    assert "nested too deeply" in str(caught.value)
    assert "fix or remove the file" in str(caught.value)
    assert path.read_text() == text

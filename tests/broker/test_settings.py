"""Settings: defaults, environment overrides, validation, versioning, and files never replaced.

Real files in a tmp home; the environment is changed with monkeypatch (conftest clears every
CHAMBERLAIN_* variable first, so nothing leaks in from the developer's shell). A broken file is
read by `read_settings` as the app and read-only commands read it: its line and key named, the
rest still in use, the broken file never overwritten nor lost.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import tempfile
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.errors import FrontEnd, user_message
from broker.settings import (
    SCHEMA_VERSION,
    Settings,
    SettingsError,
    default_home,
    load_settings,
    read_settings,
    reset_settings,
    save_settings,
)
from core.errors import Remedy


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


def test_saving_writes_the_files_own_values_never_what_an_environment_variable_set(
    tmp_path, monkeypatch
):
    write(tmp_path, {"executor": {"max_iterations": 2}})
    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "7")
    monkeypatch.setenv("CHAMBERLAIN_LLM__URL", "http://127.0.0.1:18731/v1")
    monkeypatch.setenv("CHAMBERLAIN_ROUTER", '{"confidence_threshold": 0.9}')
    settings = load_settings(tmp_path)
    settings.permissions.prompt_timeout_s = 25.0  # the person's change

    save_settings(tmp_path, settings)

    written = json.loads((tmp_path / "settings.json").read_text())
    assert written["executor"]["max_iterations"] == 2  # the file's own
    assert "url" not in written["llm"]  # the file had none
    assert not written.get("router")  # a whole section from a variable; the file had none
    assert written["permissions"]["prompt_timeout_s"] == 25.0
    for name in (
        "CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS",
        "CHAMBERLAIN_LLM__URL",
        "CHAMBERLAIN_ROUTER",
    ):
        monkeypatch.delenv(name)
    again = load_settings(tmp_path)
    assert (again.executor.max_iterations, again.llm.url) == (2, "auto")
    assert again.router.confidence_threshold == Settings().router.confidence_threshold


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
    assert "line 1" in str(caught.value)
    # What to do is a remedy about the file, which each front end words (the CLI as it always
    # read); the message says only what is wrong and where.
    assert caught.value.remedy is Remedy.FIX_SETTINGS
    assert caught.value.subject == str(path)
    assert "fix it" not in str(caught.value)
    assert (user_message(caught.value, FrontEnd.CLI) or "").endswith(
        "; fix it or move it aside (Chamberlain then starts from its defaults)"
    )
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
    # No temporary file is left; the seal (and the install secret it is keyed from, and the
    # lock changes are made under) beside it.
    assert sorted(p.name for p in home.iterdir()) == [
        "settings.json",
        "settings.json.lock",
        "settings.seal.json",
        "token.key",
    ]


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
    assert caught.value.remedy is Remedy.FIX_SETTINGS
    assert path.read_text() == text


# --- a broken file: named with its line and key, worked around, never lost ---------------------

TRUNCATED = '{\n  "llm": {\n    "url": "http://127.0.0.1:11434/v1",\n    "model": "qw'


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_truncated_file_is_named_with_its_line_and_every_setting_is_at_its_default(tmp_path):
    path = write(tmp_path, TRUNCATED)
    loaded = read_settings(tmp_path)
    assert loaded.problem is not None
    assert loaded.problem.path == path
    assert loaded.problem.line == 4
    assert f"{path} line 4: not valid JSON" in loaded.problem.problem
    assert loaded.whole_file
    assert loaded.settings == Settings()
    # Read only: the file as it was, nothing written beside it.
    assert path.read_text() == TRUNCATED
    assert names(tmp_path) == ["settings.json"]


def test_a_wrong_value_is_named_by_key_and_line_and_only_it_is_at_its_default(tmp_path):
    text = (
        "{\n"
        '  "llm": {"url": "http://127.0.0.1:11434/v1"},\n'
        '  "policy": {"deny": ["file_read"]},\n'
        '  "executor": {\n'
        '    "stall_repeats": 4,\n'
        '    "max_iterations": "many"\n'
        "  }\n"
        "}\n"
    )
    path = write(tmp_path, text)
    loaded = read_settings(tmp_path)
    assert loaded.problem is not None
    assert loaded.problem.line == 6
    assert loaded.problem.keys == ("executor.max_iterations",)
    assert loaded.problem.problem.startswith(f"{path} line 6: executor.max_iterations: ")
    assert loaded.defaulted == ("executor.max_iterations",)
    assert not loaded.whole_file
    # Everything else the person set is still in use: their model, their denial.
    assert loaded.settings.llm.url == "http://127.0.0.1:11434/v1"
    assert loaded.settings.policy.deny == ["file_read"]
    assert loaded.settings.executor.stall_repeats == 4
    assert loaded.settings.executor.max_iterations == Settings().executor.max_iterations
    assert path.read_text() == text


def test_the_strict_loader_refuses_the_same_file_in_one_line(tmp_path):
    write(tmp_path, {"executor": {"max_iterations": "many"}, "router": {"confidence_threshold": 9}})
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert "(and 1 more)" in message
    assert caught.value.remedy is Remedy.FIX_SETTINGS


def test_an_unknown_key_is_named_as_unknown(tmp_path):
    write(tmp_path, '{\n  "executor": {\n    "max_iteratons": 3\n  }\n}')
    loaded = read_settings(tmp_path)
    assert loaded.problem is not None
    assert "line 3: executor.max_iteratons is not a setting this Chamberlain knows" in (
        loaded.problem.problem
    )


def test_a_broken_value_inside_a_server_leaves_out_the_whole_setting_never_part_of_it(tmp_path):
    """An MCP server whose `args` hold one wrong element is not started with the rest of its
    arguments (it could then reach what its missing argument held back): the servers setting is
    left out whole, and no server runs."""
    write(
        tmp_path,
        {
            "mcp": {
                "servers": {
                    "notes": {"command": "npx", "args": ["server", "--root", 7]},
                }
            },
            "tools": {"command_timeout_s": 5},
        },
    )
    loaded = read_settings(tmp_path)
    assert loaded.problem is not None
    assert "mcp.servers.notes.args.2" in loaded.problem.problem
    assert loaded.defaulted == ("mcp.servers",)
    assert loaded.settings.mcp.servers == {}
    assert loaded.settings.tools.command_timeout_s == 5


def test_a_folder_where_the_file_should_be_is_named_and_the_defaults_are_used(tmp_path):
    (tmp_path / "settings.json").mkdir()
    (tmp_path / "settings.json" / "inside.txt").write_text("kept")
    loaded = read_settings(tmp_path)
    assert loaded.problem is not None
    folder = tmp_path / "settings.json"
    assert loaded.problem.problem == f"{folder} is a folder, not a settings file"
    assert loaded.settings == Settings()
    with pytest.raises(SettingsError, match="is a folder"):
        load_settings(tmp_path)


def test_a_pipe_in_place_of_the_file_is_never_read(tmp_path):
    """A named pipe would block the read for ever (nobody writes to it); it is refused at once."""
    os.mkfifo(tmp_path / "settings.json")
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(read_settings(tmp_path)), daemon=True)
    reader.start()
    reader.join(30)
    assert done, "reading the settings blocked on a pipe"
    loaded = done[0]
    assert loaded.problem is not None  # type: ignore[attr-defined]
    assert "is not a regular file" in loaded.problem.problem  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (b"", "is empty"),
        (b'{"llm": {"url": "caf\xe9"}}', "line 1: not UTF-8 text"),
        (b"[1, 2]", "must hold a JSON object {\u2026}, not a list"),
        (b'{"schema_version": 99}', "line 1: schema_version 99 is newer than this Chamberlain"),
    ],
    ids=["empty", "latin-1", "list", "newer"],
)
def test_every_kind_of_broken_file_is_said_and_worked_around(tmp_path, data, found):
    (tmp_path / "settings.json").write_bytes(data)
    loaded = read_settings(tmp_path)
    assert loaded.problem is not None
    assert found in loaded.problem.problem
    assert loaded.whole_file
    assert loaded.settings == Settings()
    assert (tmp_path / "settings.json").read_bytes() == data


def test_a_file_with_a_byte_order_mark_is_read_as_it_is_meant(tmp_path):
    (tmp_path / "settings.json").write_bytes(b'\xef\xbb\xbf{"executor": {"max_iterations": 2}}')
    loaded = read_settings(tmp_path)
    assert loaded.problem is None
    assert loaded.settings.executor.max_iterations == 2


def test_an_invalid_environment_variable_is_still_an_error_with_a_broken_file(
    tmp_path, monkeypatch
):
    write(tmp_path, TRUNCATED)
    monkeypatch.setenv("CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS", "99")
    with pytest.raises(SettingsError) as caught:
        read_settings(tmp_path)
    assert caught.value.path is None
    assert "CHAMBERLAIN_EXECUTOR__MAX_ITERATIONS" in str(caught.value)
    assert "change or unset" in str(caught.value)


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "86401"])
def test_a_permission_question_that_would_never_end_is_refused(tmp_path, monkeypatch, value):
    """An unanswered question must end in a denial: no endless or absurd timeout is taken."""
    monkeypatch.setenv("CHAMBERLAIN_PERMISSIONS__PROMPT_TIMEOUT_S", value)
    with pytest.raises(SettingsError) as caught:
        read_settings(tmp_path)
    assert "CHAMBERLAIN_PERMISSIONS__PROMPT_TIMEOUT_S" in str(caught.value)


def test_reset_keeps_the_broken_file_beside_it_and_writes_the_part_in_use(tmp_path):
    original = '{"llm": {"url": "http://127.0.0.1:8080/v1"}, "executor": {"max_iterations": 99}}'
    write(tmp_path, original)
    loaded = read_settings(tmp_path)
    kept_as = reset_settings(tmp_path, loaded, now=datetime(2025, 3, 4, 5, 6, 7))
    assert kept_as == tmp_path / "settings.json.broken-20250304-050607"
    assert kept_as.read_text() == original
    fresh = read_settings(tmp_path)
    assert fresh.problem is None
    assert fresh.settings == loaded.settings
    assert fresh.settings.llm.url == "http://127.0.0.1:8080/v1"


def test_a_second_reset_in_the_same_second_never_overwrites_the_first_copy(tmp_path):
    now = datetime(2025, 3, 4, 5, 6, 7)
    write(tmp_path, "{ first")
    reset_settings(tmp_path, read_settings(tmp_path), now=now)
    write(tmp_path, "{ second")
    second = reset_settings(tmp_path, read_settings(tmp_path), now=now)
    assert second == tmp_path / "settings.json.broken-20250304-050607-1"
    assert (tmp_path / "settings.json.broken-20250304-050607").read_text() == "{ first"
    assert second.read_text() == "{ second"


def test_reset_moves_a_folder_aside_whole(tmp_path):
    (tmp_path / "settings.json").mkdir()
    (tmp_path / "settings.json" / "inside.txt").write_text("kept")
    kept_as = reset_settings(tmp_path, read_settings(tmp_path))
    assert kept_as is not None
    assert (kept_as / "inside.txt").read_text() == "kept"
    assert read_settings(tmp_path).problem is None


def test_reset_never_writes_an_environment_variable_into_the_file(tmp_path, monkeypatch):
    write(tmp_path, TRUNCATED)
    monkeypatch.setenv("CHAMBERLAIN_LLM__URL", "http://127.0.0.1:9999/v1")
    loaded = read_settings(tmp_path)
    assert loaded.settings.llm.url == "http://127.0.0.1:9999/v1"
    reset_settings(tmp_path, loaded)
    assert "9999" not in (tmp_path / "settings.json").read_text()


def test_saving_over_a_broken_file_keeps_it_beside_the_new_one(tmp_path):
    path = write(tmp_path, {"executor": {"max_iterations": 99}, "llm": {"url": "none"}})
    before = path.read_bytes()
    settings = read_settings(tmp_path).settings
    settings.router.confidence_threshold = 0.7
    kept_as = save_settings(tmp_path, settings)
    assert kept_as is not None
    assert kept_as.name.startswith("settings.json.broken-")
    assert kept_as.read_bytes() == before
    assert load_settings(tmp_path).router.confidence_threshold == 0.7


def test_saving_over_a_valid_file_keeps_no_copy(tmp_path):
    write(tmp_path, {"executor": {"max_iterations": 2}})
    assert save_settings(tmp_path, load_settings(tmp_path)) is None
    assert names(tmp_path) == [
        "settings.json",
        "settings.json.lock",
        "settings.seal.json",
        "token.key",
    ]


def test_an_unreadable_file_is_named_for_a_normal_user_who_cannot_read_it(tmp_path):
    """Read by a process that really is not root (root reads any file): the person cannot read
    the file, so they get the defaults and a sentence naming it, and reset still keeps it."""
    # Not under tmp_path: nobody cannot enter /tmp/pytest-of-root.
    home = Path(tempfile.mkdtemp(prefix="chamberlain-settings-"))
    try:
        path = home / "settings.json"
        path.write_text('{"executor": {"max_iterations": 2}}')
        path.chmod(0o200)

        def as_the_person() -> list[str]:
            loaded = read_settings(home)
            assert loaded.problem is not None
            kept_as = reset_settings(home, loaded)
            iterations = loaded.settings.executor.max_iterations
            return [loaded.problem.problem, str(iterations), str(kept_as)]

        problem, iterations, kept_as = unprivileged(as_the_person, owning=home)
        assert problem == f"cannot read {path} (Permission denied)"
        assert iterations == str(Settings().executor.max_iterations)
        Path(kept_as).chmod(0o600)
        assert Path(kept_as).read_text() == '{"executor": {"max_iterations": 2}}'
        assert read_settings(home).problem is None
    finally:
        shutil.rmtree(home)


def unprivileged(work: Callable[[], list[str]], owning: Path) -> list[str]:
    """`work()` in this process when it is not root; as root, in a forked child that has become
    the user nobody (and owns `owning`) first — no exec, so no interpreter nobody cannot reach."""
    if os.geteuid() != 0:
        return work()
    nobody = pwd.getpwnam("nobody")
    os.chown(owning, nobody.pw_uid, nobody.pw_gid)
    for child in owning.iterdir():
        os.chown(child, nobody.pw_uid, nobody.pw_gid)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become nobody, do the work, report, and leave at once
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.write(write_end, json.dumps(work()).encode())
            code = 0
        except BaseException as exc:  # the child's only report is the pipe
            os.write(write_end, json.dumps(["error", repr(exc)]).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        answer = json.loads(reader.read() or b"[]")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, answer
    return [str(part) for part in answer]


def test_the_intent_weights_setting_is_an_absolute_path_and_may_start_with_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative path would name another file from each working directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    tilde = Settings.model_validate({"router": {"intent_weights": "~/weights.json"}})
    assert tilde.router.intent_weights == tmp_path / "weights.json"
    with pytest.raises(ValidationError, match="must be an absolute path"):
        Settings.model_validate({"router": {"intent_weights": "weights.json"}})

"""app/errors.py: the one mapping from a failure to what a person reads, worded per front end.

The wordings are checked through the real command line where a failure reaches it, and for
every `Remedy` directly (no member may be left without words in either front end).
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import Any

import pytest

from app.errors import FrontEnd, user_message, worded
from core.errors import ChamberlainError, ConfigError, Remedy, StorageError
from tests.support.cli import make_user, run_cli

HAPPENED = "The thing could not be done"


@pytest.mark.parametrize("remedy", list(Remedy), ids=lambda r: r.value)
def test_every_remedy_is_worded_by_both_front_ends_in_their_own_terms(remedy: Remedy) -> None:
    cli = worded(HAPPENED, remedy, FrontEnd.CLI, "settings.json")
    app = worded(HAPPENED, remedy, FrontEnd.APP, "settings.json")

    for text in (cli, app):
        assert text.startswith(HAPPENED)
        assert len(text) > len(HAPPENED) + 5, text  # something to do, not the message alone
        assert "{" not in text, text  # every placeholder filled
    # The app never names a command-line flag or command; the CLI never a window.
    assert "--" not in app, app
    assert "`chamberlain" not in app, app
    assert "Settings" not in cli, cli


def test_a_failure_without_a_remedy_reads_as_its_message() -> None:
    assert user_message(ConfigError("the policy table is broken")) == "the policy table is broken"


def test_a_settings_file_at_fault_says_to_fix_it_or_move_it_aside_in_each_front_end() -> None:
    failure = ConfigError(
        "x.json line 2: not valid JSON", remedy=Remedy.FIX_SETTINGS, subject="x.json"
    )
    assert user_message(failure, FrontEnd.CLI) == (
        "x.json line 2: not valid JSON; fix it or move it aside (Chamberlain then starts from "
        "its defaults)"
    )
    assert user_message(failure, FrontEnd.APP) == (
        "x.json line 2: not valid JSON; fix it in a text editor or move it aside (Chamberlain "
        "then starts from its defaults)"
    )


def test_a_file_that_cannot_be_written_is_said_with_its_name() -> None:
    denied = PermissionError(errno.EACCES, "Permission denied", "/home/x/.chamberlain/grants.json")
    assert user_message(denied) == (
        "permission denied: /home/x/.chamberlain/grants.json — check the home directory's owner"
    )
    full = OSError(errno.ENOSPC, "No space left on device", "/home/x/.chamberlain/audit.log")
    assert user_message(full) == "No space left on device (/home/x/.chamberlain/audit.log)"


def test_any_other_exception_is_a_bug_and_gets_no_sentence() -> None:
    assert user_message(KeyError("x")) is None
    assert user_message(ValueError("bad")) is None
    assert user_message(ChamberlainError("said")) == "said"
    assert isinstance(StorageError("x"), ChamberlainError)


def test_a_model_name_left_out_says_where_the_names_are_listed(tmp_path: Path) -> None:
    """A ChamberlainError with a remedy reaching the real CLI: its message and the CLI's words
    for the remedy, one line, the usage exit code as before."""
    user = make_user(tmp_path / "user")

    proc = run_cli(user, "models", "use", " ")

    assert proc.returncode == 2
    assert proc.stderr == "chamberlain: give a model name (see `chamberlain models list`)\n"


def test_an_expected_failure_reaching_the_cli_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """A setting given in the environment that is not valid (a SettingsError, a ConfigError)."""
    user = make_user(tmp_path / "user")

    proc = run_cli(user, "ask", "hello", "--llm", "none", env={"CHAMBERLAIN_LLM__TIMEOUT_S": "x"})

    assert proc.returncode == 1
    assert proc.stderr.startswith("chamberlain: ")
    assert "Traceback" not in proc.stderr
    assert "llm.timeout_s" in proc.stderr or "CHAMBERLAIN_LLM__TIMEOUT_S" in proc.stderr


def test_a_chat_without_a_model_says_how_to_connect_one_in_each_front_ends_words(
    tmp_path: Path,
) -> None:
    """The reply ends with how to connect a model: the CLI names its flag, as it always did;
    the app's words for the same remedy name its Settings instead."""
    user = make_user(tmp_path / "user")

    proc = run_cli(user, "ask", "tell me a joke", "--llm", "none")

    assert proc.returncode == 1
    assert proc.stdout.rstrip().endswith(
        "To chat, start a local OpenAI-compatible server (Ollama, LM Studio, llama.cpp server or "
        "vLLM) — Chamberlain finds it on its usual port — or pass --llm URL."
    ), proc.stdout
    app = worded("No model.", Remedy.CHAT_NEEDS_MODEL, FrontEnd.APP)
    assert app.endswith("or set its address in Settings → Model.")
    assert "--llm" not in app


def test_doctor_says_how_the_model_was_turned_off_in_the_clis_words(tmp_path: Path) -> None:
    user = make_user(tmp_path / "user")

    proc = run_cli(user, "doctor", "--llm", "none")

    assert "[--] model backend: disabled (--llm none)" in proc.stdout.splitlines(), proc.stdout


def test_a_server_with_no_models_is_said_with_the_clis_way_to_name_one(
    tmp_path: Path, scripted_server: Any
) -> None:
    """The model's failure at connect time, worded by the CLI before the session says it."""
    user = make_user(tmp_path / "user")
    server = scripted_server([], models=[])

    proc = run_cli(user, "ask", "tell me a joke", "--llm", server.base_url)

    assert proc.stdout.startswith(
        f"The model server at {server.base_url} lists no models; load or pull one (e.g. "
        "`ollama pull llama3.2`) or name one with --model"
    ), proc.stdout


def test_doctor_says_how_to_connect_a_model_when_the_named_server_does_not_answer(
    tmp_path: Path,
) -> None:
    """The model line carries its remedy, worded by the CLI once (as before the broker stopped
    writing it), with no hand-written advice repeating it."""
    user = make_user(tmp_path / "user")
    with socket.socket() as probe:  # a port nothing listens on: the connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    proc = run_cli(user, "doctor", "--llm", f"http://127.0.0.1:{port}/v1")

    (line,) = [line for line in proc.stdout.splitlines() if "] model backend:" in line]
    assert line.startswith(f"[--] model backend: No model answers at http://127.0.0.1:{port}/v1")
    assert line.endswith(
        "Start a local server (Ollama, LM Studio, llama.cpp) or pass --llm URL."
    ), line
    assert line.count("Ollama") == 1, line

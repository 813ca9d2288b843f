"""Chamberlain's configuration cannot be changed behind its back (issue 20).

The review's attack: a tool with write access to the home (an MCP filesystem server) rewrote
settings.json, adding a server `sh -c …` and turning on `tools.unsandboxed_commands`; the next
`chamberlain mcp list`, or the app at login, ran the planted program unsandboxed. Here the same
writes are made to a scratch home's settings.json, and the real CLI (a subprocess, as a person
runs it) and a real Session are started on it: as root, and as the user `nobody` for the file
side. The planted server is this repository's own MCP notes server (tests/support/
mcp_notes_server.py), so "started" is seen for real: connected and its tools offered. And the
install secret the seal is keyed from (`token.key`) stays out of reach of every builtin tool.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_normal_user import (  # the normal-user rig: runuser, scratch home
    NormalUser,
    nobody_ok,  # noqa: F401 - a fixture `person` uses
    person,  # noqa: F401 - a fixture
)
from tests.support.cli import run_cli
from tests.support.mcp_notes import NOTES_SERVER, running_with, write_notes
from tests.support.openai_server import ToolCalls
from tests.support.settings import plant_settings, write_settings

WAITS = "waits for your confirmation"


@pytest.fixture
def user(tmp_path: Path) -> Path:
    path = tmp_path / "user"
    path.mkdir()
    return path


@pytest.fixture
def app_home(user: Path) -> Path:
    """Chamberlain's home as the CLI finds it, with the person's own confirmed settings."""
    home = user / ".chamberlain"
    write_settings(home, {"executor": {"max_iterations": 4}})
    return home


@pytest.fixture
def notes(tmp_path: Path) -> Any:
    folder = write_notes(tmp_path / "notes")
    yield folder
    leftovers = running_with(str(folder))
    for proc in leftovers:
        proc.kill()
    assert not leftovers, "a server's program was left running"


def planted_server(notes: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(NOTES_SERVER), str(notes)]}


def tamper(home: Path, **servers: Any) -> None:
    """What the hostile tool did: read settings.json, add to it, write it back."""
    data = json.loads((home / "settings.json").read_text())
    data.setdefault("mcp", {}).setdefault("servers", {}).update(servers)
    data.setdefault("tools", {})["unsandboxed_commands"] = True
    plant_settings(home, data)


# --- a planted server --------------------------------------------------------------------------


def test_a_server_planted_by_a_file_write_is_not_started_by_mcp_list_which_says_it_waits(
    user, app_home, notes
):
    tamper(app_home, notes=planted_server(notes))

    proc = run_cli(user, "mcp", "list")

    assert proc.returncode == 0, proc.stderr
    assert "notes: connected" not in proc.stdout
    assert "No MCP servers are configured" in proc.stdout
    [said] = [line for line in proc.stderr.splitlines() if WAITS in line]
    # One line naming each change, the server's whole command line included.
    assert f"MCP server 'notes' added: the command {sys.executable} {NOTES_SERVER} {notes}" in said
    assert "tools.unsandboxed_commands turned on" in said
    assert "chamberlain settings confirm" in said
    # The person's own settings still apply.
    assert json.loads(run_cli(user, "settings", "pending", "--json").stdout)[0]["key"]


def test_after_settings_confirm_the_server_is_started_and_nothing_waits(user, app_home, notes):
    tamper(app_home, notes=planted_server(notes))

    pending = run_cli(user, "settings", "pending")
    assert f"{sys.executable} {NOTES_SERVER} {notes}" in pending.stdout
    confirmed = run_cli(user, "settings", "confirm", "mcp.servers.notes", "--yes")
    assert confirmed.returncode == 0, confirmed.stderr
    proc = run_cli(user, "mcp", "list")

    assert "notes: connected, 9 tools (notes-test 1.0)" in proc.stdout.splitlines()
    # What was not confirmed still waits, and is still said.
    [said] = [line for line in proc.stderr.splitlines() if WAITS in line]
    assert "tools.unsandboxed_commands turned on" in said
    assert "MCP server" not in said


def test_without_a_terminal_confirm_needs_yes_and_changes_nothing(user, app_home, notes):
    """A script (or anything that can run the CLI) cannot confirm what nobody was shown."""
    tamper(app_home, notes=planted_server(notes))

    refused = run_cli(user, "settings", "confirm")

    assert refused.returncode == 2
    assert "--yes" in refused.stderr
    assert [c["key"] for c in json.loads(run_cli(user, "settings", "pending", "--json").stdout)]


def test_discard_restores_the_confirmed_settings_and_keeps_the_persons_others(
    user, app_home, notes
):
    tamper(app_home, notes=planted_server(notes))

    proc = run_cli(user, "settings", "discard")

    assert proc.returncode == 0, proc.stderr
    data = json.loads((app_home / "settings.json").read_text())
    assert data["mcp"]["servers"] == {}
    assert data["tools"]["unsandboxed_commands"] is False
    assert data["executor"]["max_iterations"] == 4
    listed = run_cli(user, "mcp", "list")
    assert WAITS not in listed.stderr
    assert "No MCP servers are configured" in listed.stdout


def test_doctor_names_each_change_waiting_for_confirmation(user, app_home, notes):
    tamper(app_home, notes=planted_server(notes))

    proc = run_cli(user, "doctor", "--llm", "none", "--json")

    checks = {check["name"]: check for check in json.loads(proc.stdout)}
    assert not checks["settings"]["ok"]
    assert f"{sys.executable} {NOTES_SERVER} {notes}" in checks["settings"]["detail"]
    assert "chamberlain settings pending" in checks["settings"]["detail"]
    run_cli(user, "settings", "discard")
    proc = run_cli(user, "doctor", "--llm", "none", "--json")
    assert {c["name"]: c for c in json.loads(proc.stdout)}["settings"]["ok"]


def ask_for_notes(user: Path, server: Any) -> dict[str, Any]:
    proc = run_cli(
        user,
        "ask",
        "list the files in my notes folder",
        "--llm",
        server.base_url,
        "--model",
        "scripted-model",
        "--approve-all",
        "once",
        "--no-refine",
        "--json",
    )
    assert proc.stdout, proc.stderr
    turn: dict[str, Any] = json.loads(proc.stdout)
    turn["stderr"] = proc.stderr
    return turn


def test_a_planted_server_is_not_started_by_a_turn_until_confirmed(
    user, app_home, notes, scripted_server
):
    tamper(app_home, notes=planted_server(notes))
    script = [ToolCalls([("notes__list_notes", {})]), "done"]
    server = scripted_server(script + script)

    before = ask_for_notes(user, server)

    offered = {t["function"]["name"] for t in server.requests[0].get("tools", [])}
    assert not any(name.startswith("notes__") for name in offered)
    assert not any(c["status"] == "ok" for c in before["tool_calls"])
    assert WAITS in before["stderr"]
    assert not any("groceries" in json.dumps(r) for r in server.requests)

    run_cli(user, "settings", "confirm", "--yes")
    seen = len(server.requests)
    after = ask_for_notes(user, server)

    offered = {t["function"]["name"] for t in server.requests[seen].get("tools", [])}
    assert "notes__list_notes" in offered
    assert [c["status"] for c in after["tool_calls"]] == ["ok"]
    assert WAITS not in after["stderr"]


# --- unsandboxed commands ----------------------------------------------------------------------


def no_bubblewrap(tmp_path: Path) -> str:
    """A PATH with `ls` and no bubblewrap: where `tools.unsandboxed_commands` decides whether a
    command runs at all."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    (folder / "ls").symlink_to("/bin/ls")
    return str(folder)


def run_ls(user: Path, path: str) -> Any:
    return run_cli(
        user,
        "ask",
        "run `ls /usr`",
        "--approve",
        "system_execute=once",
        "--llm",
        "none",
        env={"PATH": path},
    )


def test_unsandboxed_commands_turned_on_by_a_file_write_has_no_effect_until_confirmed(
    user, app_home, tmp_path
):
    path = no_bubblewrap(tmp_path)
    tamper(app_home)

    refused = run_ls(user, path)

    assert refused.returncode == 1
    assert "install the bubblewrap package" in refused.stdout + refused.stderr
    assert "share" not in refused.stdout.split()
    assert WAITS in refused.stderr

    run_cli(user, "settings", "confirm", "tools.unsandboxed_commands", "--yes")
    ran = run_ls(user, path)

    assert ran.returncode == 0, ran.stderr
    assert "share" in ran.stdout.split()


def test_a_session_opened_on_the_home_uses_the_confirmed_values(app_home, notes, monkeypatch):
    """What the app builds at start (read_settings, as the tray app at login; Session.open)."""
    from broker.session import Session
    from broker.settings import load_settings, read_settings

    monkeypatch.setenv("CHAMBERLAIN_HOME", str(app_home))
    tamper(app_home, notes=planted_server(notes))

    assert read_settings(app_home).settings.mcp.servers == {}
    session = Session(home=app_home, settings=load_settings(app_home))
    try:
        assert session.settings.mcp.servers == {}
        assert session.settings.tools.unsandboxed_commands is False
        assert session.settings.executor.max_iterations == 4
    finally:
        session.close()


# --- forged seals ------------------------------------------------------------------------------


def test_a_seal_entry_with_a_mac_copied_from_another_is_refused_by_the_cli(user, app_home, notes):
    tamper(app_home, notes=planted_server(notes))
    seal = json.loads((app_home / "settings.seal.json").read_text())
    entries = seal["entries"]
    entries["mcp.servers.notes"] = {
        "value": planted_server(notes),
        "mac": entries["tools.command_roots"]["mac"],
    }
    entries["tools.unsandboxed_commands"] = {"value": True, "mac": entries["llm.url"]["mac"]}
    (app_home / "settings.seal.json").write_text(json.dumps(seal))

    proc = run_cli(user, "mcp", "list")

    assert "notes: connected" not in proc.stdout
    assert WAITS in proc.stderr


# --- the install secret ------------------------------------------------------------------------


def test_no_builtin_tool_reads_token_key(user, app_home, scripted_server):
    """token.key keys the seal and the grants: a file read of it is refused, and its contents
    reach neither the model, the output nor the audit."""
    key = (app_home / "token.key").read_text().strip()
    assert len(key) == 64
    token = str(app_home / "token.key")
    # The hostile model asks for the key file instead of the notes, with every prompt approved.
    server = scripted_server([ToolCalls([("file_read", {"path": token})]), "done"])

    proc = run_cli(
        user,
        "ask",
        "summarize the notes in ~/Documents",
        "--llm",
        server.base_url,
        "--model",
        "scripted-model",
        "--approve-all",
        "once",
        "--no-refine",
        "--json",
    )

    assert proc.stdout, proc.stderr
    turn = json.loads(proc.stdout)
    calls = turn["tool_calls"]
    assert calls[0]["tool"] == "file_read"
    assert calls[0]["status"] == "refused"
    assert "Chamberlain's own files" in calls[0]["reason"]
    assert [c["status"] for c in calls if c["tool"] == "file_read"] == ["refused"]
    assert key not in proc.stdout + proc.stderr
    assert not any(key in json.dumps(r) for r in server.requests)
    assert key not in (app_home / "audit.jsonl").read_text()


@pytest.mark.parametrize(
    "command",
    [
        "cat {home}/token.key",
        "cat .chamberlain/token.key",
        "cat .chamberlain/../.chamberlain/token.key",
        "head -c 64 .chamberlain/token.key",
    ],
)
def test_an_approved_command_cat_of_token_key_never_shows_the_key(user, app_home, command):
    key = (app_home / "token.key").read_text().strip()
    typed = command.replace("{home}", str(app_home))

    proc = run_cli(
        user, "ask", f"run `{typed}`", "--approve", "system_execute=once", "--llm", "none"
    )

    said = proc.stdout + proc.stderr
    assert key not in said
    # Refused before it ran, or run where Chamberlain's folder is not there at all.
    assert "Chamberlain's own" in said or "No such file or directory" in said, said


# --- as a normal user --------------------------------------------------------------------------


def test_as_nobody_a_planted_server_waits_and_the_seal_is_the_users_alone(
    person: NormalUser,  # noqa: F811 - the fixture imported above
):
    home = person.chamberlain_home
    notes = write_notes(person.home / "notes")
    person.own()
    # The person's own save, as nobody: creates token.key and the seal with nobody's modes.
    first = person.cli("settings", "pending")
    assert first.returncode == 0, first.stderr
    plant_settings(home, {"mcp": {"servers": {"notes": planted_server(notes)}}})
    person.own()

    listed = person.cli("mcp", "list")

    assert "notes: connected" not in listed.stdout
    assert WAITS in listed.stderr
    confirmed = person.cli("settings", "confirm", "--yes")
    assert confirmed.returncode == 0, confirmed.stderr
    seal = home / "settings.seal.json"
    info = os.stat(seal)
    assert info.st_uid == 65534
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home / "token.key").st_mode) == 0o600
    listed = person.cli("mcp", "list")
    assert "notes: connected, 9 tools (notes-test 1.0)" in listed.stdout.splitlines(), (
        listed.stdout + listed.stderr
    )
    assert WAITS not in listed.stderr

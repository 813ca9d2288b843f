"""`chamberlain mcp list | tools | test`: the real CLI in a subprocess, a scratch home whose
settings.json lists real MCP servers — the tests' own notes server (tests/support/
mcp_notes_server.py) run over stdio, a program that does not exist, a program that never answers.

Every server's command line holds the test's own folder, so a server left running after the CLI
has exited is found by that folder in its command line; the `servers` fixture ends any it finds,
so a failing test leaves nothing behind either.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.cli import run_cli
from tests.support.mcp_notes import NOTES_SERVER, NOTES_TOOLS, running_with
from tests.support.settings import write_settings

# The notes server, started by a parent that stays alive after the server has read the end of
# its input: a CLI that exits without closing its servers leaves that parent running.
OUTLIVES_ITS_INPUT = (
    "import subprocess, sys, time; subprocess.run([sys.executable, *sys.argv[1:]]); time.sleep(60)"
)
# A server that starts and never says a word.
NEVER_ANSWERS = "import sys, time; time.sleep(120)"


def wait_for(check: Callable[[], Any], timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not true within {timeout_s} s: {check}")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    path = tmp_path / "user"
    path.mkdir()
    return path


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes-folder"
    folder.mkdir()
    (folder / "milk.txt").write_text("buy milk\n")
    return folder


@pytest.fixture
def servers(user: Path, notes: Path) -> Iterator[Callable[..., None]]:
    """`servers(name=config, ...)` writes them to settings.json under `mcp.servers`."""

    def configure(**configs: dict[str, Any]) -> None:
        home = user / ".chamberlain"
        home.mkdir(exist_ok=True)
        write_settings(home, {"mcp": {"servers": configs}})

    yield configure
    leftovers = running_with(str(notes))
    for proc in leftovers:
        proc.kill()
    assert not leftovers, "a server's program was left running"


def notes_server(notes: Path, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(NOTES_SERVER), str(notes)], **extra}


def missing_program(notes: Path) -> dict[str, Any]:
    return {"command": "chamberlain-no-such-mcp-server", "args": [str(notes)]}


def assert_nothing_left_running(notes: Path) -> None:
    assert running_with(str(notes)) == []


# --- mcp list -----------------------------------------------------------------------------------


def test_list_shows_each_server_connected_failed_or_disabled(user, notes, servers):
    servers(
        notes=notes_server(notes),
        broken=missing_program(notes),
        later={"url": "http://127.0.0.1:9/mcp", "enabled": False},
    )
    proc = run_cli(user, "mcp", "list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "notes: connected, 9 tools (notes-test 1.0)" in lines
    assert (
        "broken: failed: the program 'chamberlain-no-such-mcp-server' is not installed "
        "(not on PATH)"
    ) in lines
    assert "later: disabled (enabled: false in settings.json)" in lines
    # Where each one comes from: the command line or the URL.
    assert f"    stdio: {sys.executable} {NOTES_SERVER} {notes}" in lines
    assert "    http: http://127.0.0.1:9/mcp" in lines
    assert_nothing_left_running(notes)


def test_list_json_gives_each_server_its_state_tools_and_error(user, notes, servers):
    servers(notes=notes_server(notes), broken=missing_program(notes))
    proc = run_cli(user, "mcp", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    by_name = {s["name"]: s for s in json.loads(proc.stdout)}
    assert set(by_name) == {"notes", "broken"}
    good, bad = by_name["notes"], by_name["broken"]
    assert (good["enabled"], good["transport"], good["state"]) == (True, "stdio", "connected")
    assert good["endpoint"] == f"{sys.executable} {NOTES_SERVER} {notes}"
    assert set(good["tools"]) == NOTES_TOOLS
    assert good["server_info"] == "notes-test 1.0"
    assert good["error"] is None
    assert bad["state"] == "failed"
    assert "chamberlain-no-such-mcp-server" in bad["error"]
    assert bad["tools"] == []


def test_servers_are_connected_at_once_not_one_after_another(user, notes, servers):
    """Five servers that never answer, each allowed 3 s to connect: one after another would
    take 15 s; together the command is over in not much more than 3."""
    slow = {"command": sys.executable, "args": ["-c", NEVER_ANSWERS, str(notes)]}
    names = ("one", "two", "three", "four", "five")
    servers(**{name: {**slow, "connect_timeout_s": 3} for name in names})
    started = time.monotonic()
    proc = run_cli(user, "mcp", "list")
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    for name in names:
        assert f"{name}: failed: it did not answer within 3 s" in proc.stdout.splitlines()
    # One after another takes 15 s in the waits alone, however fast the machine; under 13 s
    # leaves 10 s for the CLI's start on a loaded machine.
    assert took < 13, f"took {took:.1f} s"
    assert_nothing_left_running(notes)


def test_list_with_no_servers_says_how_to_add_one(user):
    proc = run_cli(user, "mcp", "list")
    assert proc.returncode == 0, proc.stderr
    assert "No MCP servers are configured" in proc.stdout
    assert str(user / ".chamberlain" / "settings.json") in proc.stdout
    # The example is the settings.json shape itself: pasted into the file, it is a server.
    example = json.loads(proc.stdout.splitlines()[1])
    assert example["mcp"]["servers"]["notes"]["command"] == "npx"
    assert '"url": "http://127.0.0.1:PORT/mcp"' in proc.stdout

    as_json = run_cli(user, "mcp", "list", "--json")
    assert (as_json.returncode, json.loads(as_json.stdout)) == (0, [])


# --- mcp tools ----------------------------------------------------------------------------------


def test_tools_calls_write_note_a_write_although_its_annotations_say_read_only(
    user, notes, servers
):
    servers(notes=notes_server(notes))
    proc = run_cli(user, "mcp", "tools")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index(
        "  notes__write_note  (the server's write_note)  write, mcp_write, risk moderate"
    )
    assert lines[at + 1] == "      why write: taken from the words of the tool's name"
    assert lines[at + 2] == "      shown for: file_task, system_task"
    at = lines.index("  notes__list_notes  (the server's list_notes)  read, mcp_read, risk safe")
    assert (
        lines[at + 2]
        == "      shown for: lookup_search, one_shot_discovery, file_task, system_task"
    )
    assert_nothing_left_running(notes)


def test_tools_json_gives_class_capability_risk_why_and_intents(user, notes, servers):
    servers(notes=notes_server(notes))
    proc = run_cli(user, "mcp", "tools", "notes", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["profile"] == "everything"
    [server] = data["servers"]
    tools = {t["name"]: t for t in server["tools"]}
    assert set(tools) == NOTES_TOOLS
    write = tools["notes__write_note"]
    assert write["remote"] == "write_note"
    assert (write["class"], write["capability"], write["risk"]) == (
        "write",
        "mcp_write",
        "moderate",
    )
    assert write["intents"] == write["shown_for"] == ["file_task", "system_task"]
    assert write["left_out_by_profile"] is None
    weather = tools["notes__weather"]
    assert (weather["class"], weather["capability"]) == ("execute", "mcp_execute")
    assert weather["why"] == "its name says nothing, so the strictest class"
    assert weather["shown_for"] == ["system_task"]


def test_tools_says_when_the_tool_profile_leaves_a_tool_out(user, notes, servers):
    servers(notes=notes_server(notes))
    env = {"CHAMBERLAIN_PROFILE__NAME": "read_only"}
    proc = run_cli(user, "mcp", "tools", "notes", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    [server] = json.loads(proc.stdout)["servers"]
    tools = {t["name"]: t for t in server["tools"]}
    write = tools["notes__write_note"]
    # The policy table would show it; the profile takes it away.
    assert write["intents"] == ["file_task", "system_task"]
    assert write["shown_for"] == []
    assert "'read_only'" in write["left_out_by_profile"]
    assert tools["notes__read_note"]["shown_for"] == [
        "lookup_search",
        "one_shot_discovery",
        "file_task",
        "system_task",
    ]

    text = run_cli(user, "mcp", "tools", "notes", env=env).stdout.splitlines()
    at = text.index(
        "  notes__write_note  (the server's write_note)  write, mcp_write, risk moderate"
    )
    assert text[at + 2].startswith(
        "      shown for: none; the tool profile 'read_only' leaves it out: "
    )


def test_tools_lists_the_tools_not_offered_and_why(user, notes, servers):
    servers(notes=notes_server(notes, deny_tools=["hang", "crash"]))
    proc = run_cli(user, "mcp", "tools", "notes")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "notes: connected, 7 tools"
    at = lines.index("  not offered:")
    assert sorted(lines[at + 1 :]) == [
        "    crash: denied in this server's settings",
        "    hang: denied in this server's settings",
    ]
    assert "notes__hang" not in proc.stdout

    listed = json.loads(run_cli(user, "mcp", "list", "--json").stdout)
    assert sorted(s["tool"] for s in listed[0]["skipped"]) == ["crash", "hang"]


def test_tools_of_a_server_that_fails_says_why_and_fails(user, notes, servers):
    servers(notes=notes_server(notes), broken=missing_program(notes))
    proc = run_cli(user, "mcp", "tools", "broken")
    assert proc.returncode == 1
    assert "notes__" not in proc.stdout  # only the server asked for was connected
    assert "chamberlain-no-such-mcp-server" in proc.stderr

    # The next command does not try it again so soon: the failure was remembered.
    everything = run_cli(user, "mcp", "tools")
    assert everything.returncode == 0, everything.stderr
    [broken] = [line for line in everything.stdout.splitlines() if line.startswith("broken:")]
    assert "not tried now: the program 'chamberlain-no-such-mcp-server'" in broken
    assert "notes__write_note" in everything.stdout


# --- mcp test -----------------------------------------------------------------------------------


def test_test_reports_connected_tools_server_and_time(user, notes, servers):
    servers(notes=notes_server(notes), broken=missing_program(notes))
    proc = run_cli(user, "mcp", "test", "notes")
    assert proc.returncode == 0, proc.stderr
    first, sandbox = proc.stdout.splitlines()
    assert first.startswith("notes: connected in ")
    assert first.endswith(" s, 9 tools, server notes-test 1.0")
    # It says the server runs sandboxed, and what it sees: its folder, read-only, and no more.
    assert sandbox == (
        f"    it runs in a sandbox: sees {notes} (read only); your home, credentials and "
        "Chamberlain's own files are hidden; no network"
    )

    data = json.loads(run_cli(user, "mcp", "test", "notes", "--json").stdout)
    assert (data["ok"], data["state"], data["server_info"]) == (True, "connected", "notes-test 1.0")
    assert data["sandboxed"] is True
    assert data["sandbox"].startswith(f"runs in a sandbox: sees {notes} (read only)")
    assert set(data["tools"]) == NOTES_TOOLS
    assert 0 < data["seconds"] < 30
    assert_nothing_left_running(notes)


def test_test_of_a_server_that_cannot_start_fails_with_the_reason(user, notes, servers):
    servers(notes=notes_server(notes), broken=missing_program(notes))
    proc = run_cli(user, "mcp", "test", "broken")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert (
        "MCP server broken: failed: the program 'chamberlain-no-such-mcp-server' is not "
        "installed (not on PATH)"
    ) in proc.stderr

    as_json = run_cli(user, "mcp", "test", "broken", "--json")
    assert as_json.returncode == 1
    data = json.loads(as_json.stdout)
    assert (data["ok"], data["state"]) == (False, "failed")
    assert "not installed" in data["error"]
    assert "not installed" in as_json.stderr


def test_test_connects_a_disabled_server_for_the_test_only(user, notes, servers):
    servers(notes=notes_server(notes, enabled=False))
    proc = run_cli(user, "mcp", "test", "notes")
    assert proc.returncode == 0, proc.stderr
    assert "connected in" in proc.stdout
    assert "disabled in settings.json" in proc.stdout
    listed = run_cli(user, "mcp", "list")
    assert "notes: disabled" in listed.stdout
    tools = run_cli(user, "mcp", "tools", "notes")
    assert tools.returncode == 1
    assert "disabled" in tools.stderr


@pytest.mark.parametrize("command", ["test", "tools"])
def test_an_unknown_server_name_is_a_usage_error_naming_the_configured_ones(
    user, notes, servers, command
):
    servers(notes=notes_server(notes), broken=missing_program(notes))
    proc = run_cli(user, "mcp", command, "nope")
    assert proc.returncode == 2
    assert "no MCP server named 'nope'; configured: broken, notes" in proc.stderr
    assert proc.stdout == ""
    assert_nothing_left_running(notes)


def test_test_needs_a_name(user):
    proc = run_cli(user, "mcp", "test")
    assert proc.returncode == 2
    assert "missing NAME" in proc.stderr


# --- no server outlives the command -----------------------------------------------------------


@pytest.mark.parametrize(
    "args", [("list",), ("tools",), ("tools", "notes"), ("test", "notes"), ("list", "--json")]
)
def test_no_server_program_outlives_the_command(user, notes, servers, args):
    """The server's parent here keeps running after its input ends, as wrapper scripts do: only
    a CLI that closes its servers (ending their process groups) leaves nothing behind."""
    servers(
        notes={
            "command": sys.executable,
            "args": ["-c", OUTLIVES_ITS_INPUT, str(NOTES_SERVER), str(notes)],
        }
    )
    proc = run_cli(user, "mcp", *args)
    assert proc.returncode == 0, proc.stderr
    assert "connected" in proc.stdout
    assert_nothing_left_running(notes)


@pytest.mark.parametrize(
    ("sig", "code"),
    [
        (signal.SIGINT, 130),
        (signal.SIGTERM, 128 + signal.SIGTERM),
    ],
)
def test_ctrl_c_or_kill_while_connecting_ends_the_servers_too(user, notes, servers, sig, code):
    servers(
        waiting={
            "command": sys.executable,
            "args": ["-c", NEVER_ANSWERS, str(notes)],
            "connect_timeout_s": 50,
        }
    )
    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(proc=run_cli(user, "mcp", "list")))
    runner.start()
    try:
        wait_for(lambda: running_with(str(notes)))  # the server is up, the CLI is waiting on it
        [cli] = [p for p in psutil.Process().children() if "app.cli" in " ".join(p.cmdline())]
        os.kill(cli.pid, sig)
    finally:
        runner.join(60)
    proc = result["proc"]
    assert proc.returncode == code, proc.stderr
    if sig == signal.SIGINT:
        assert "cancelled" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert_nothing_left_running(notes)


# --- a server that failed, remembered between commands -----------------------------------------

ASK_NOTES = "list the files in my notes folder"


def list_then_answer(request: dict[str, Any]) -> Any:
    """The model: list the notes once, then say what the listing said."""
    from tests.support.openai_server import ToolCalls

    results = [m["content"] for m in request["messages"] if m.get("role") == "tool"]
    if not results:
        return ToolCalls([("notes__list_notes", {})])
    return "Your notes: " + results[-1]


def test_ask_says_which_server_it_went_without_and_the_next_ask_does_not_wait_for_it(
    user, notes, servers, scripted_server
):
    silent = {"command": sys.executable, "args": ["-c", NEVER_ANSWERS, str(notes)]}
    servers(notes=notes_server(notes), silent={**silent, "connect_timeout_s": 2})
    model = scripted_server([list_then_answer] * 4)
    ask = ("ask", ASK_NOTES, "--llm", model.base_url, "--no-refine", "--approve-all", "once")

    first = run_cli(user, *ask)

    assert first.returncode == 0, first.stderr
    assert "milk.txt" in first.stdout
    assert (
        "chamberlain: the MCP server 'silent' did not answer at start (timed out after 2 s); "
        "its tools were left out of this request — `chamberlain mcp test silent` tries again"
    ) in first.stderr.splitlines()

    second = run_cli(user, *ask)

    assert second.returncode == 0, second.stderr
    assert "milk.txt" in second.stdout
    [said] = [line for line in second.stderr.splitlines() if "'silent'" in line]
    assert said.startswith(
        "chamberlain: the MCP server 'silent' did not answer when it was last started ("
    )
    assert "timed out after 2 s), so this request did not wait for it" in said
    assert said.endswith("or now with `chamberlain mcp test silent`")
    assert_nothing_left_running(notes)


def test_ask_json_carries_the_notice_as_data(user, notes, servers, scripted_server):
    servers(notes=notes_server(notes), broken=missing_program(notes))
    model = scripted_server([list_then_answer] * 2)
    proc = run_cli(
        user,
        "ask",
        ASK_NOTES,
        "--llm",
        model.base_url,
        "--no-refine",
        "--approve-all",
        "once",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    [left] = json.loads(proc.stdout)["mcp_left_out"]
    assert (left["server"], left["kind"], left["earlier"]) == ("broken", "not_started", False)
    assert "chamberlain-no-such-mcp-server" in left["detail"]


def test_list_does_not_wait_again_for_a_server_that_just_failed_and_test_tries_it(
    user, notes, servers
):
    """A record of a failure (here written by hand, as if an earlier command had failed with
    the server) keeps `list` from starting it; `test` always tries, and clears the record."""
    from tools.mcp.config import McpServerConfig
    from tools.mcp.failures import FILE_NAME, settings_digest

    entry = notes_server(notes)
    servers(notes=entry)
    record = {
        "digest": settings_digest(McpServerConfig.model_validate(entry)),
        "kind": "timeout",
        "detail": "it did not answer within 30 s",
        "at": time.time() - 120,
        "failures": 1,
        "wait_s": 600,
    }
    failures = user / ".chamberlain" / FILE_NAME
    failures.write_text(json.dumps({"version": 1, "servers": {"notes": record}}))

    listed = run_cli(user, "mcp", "list")

    assert listed.returncode == 0, listed.stderr
    [line] = [line for line in listed.stdout.splitlines() if line.startswith("notes:")]
    assert line.startswith("notes: failed 2 min ago, not tried now: it did not answer within 30 s")
    assert line.endswith("or now with `chamberlain mcp test notes`")

    tested = run_cli(user, "mcp", "test", "notes")

    assert tested.returncode == 0, tested.stderr
    assert tested.stdout.startswith("notes: connected in ")
    assert json.loads(failures.read_text())["servers"] == {}
    again = run_cli(user, "mcp", "list")
    assert "notes: connected, 9 tools (notes-test 1.0)" in again.stdout.splitlines()
    assert_nothing_left_running(notes)

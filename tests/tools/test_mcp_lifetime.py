"""MCP servers end with Chamberlain, however it ends: real Chamberlain processes (the CLI, and a
session holding its servers as the app does) killed with SIGKILL while they hold hostile servers
(tests/support/mcp_hostile_server.py) — one that daemonises (double fork, setsid) and one that
ignores the end of its input and SIGTERM — and hubs closed in this process.

Every server process is found by a folder unique to the test that is in its command line, and
whatever a test leaves is ended by PID when it finishes, passed or failed. The 25-kill figure is
bench/mcp_lifetime.py's (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO
from tests.support.mcp_lifetime import (
    HOSTILE_SERVER,
    end_all,
    hostile_entry,
    kill_round,
    left_behind,
    roles_started,
    wait_until_gone,
)
from tools.mcp import lifetime
from tools.mcp import sandbox as server_sandbox
from tools.mcp.config import McpServerConfig
from tools.mcp.hub import McpHub
from tools.registry import ToolRegistry
from tools.sandbox import sandbox_status

KILLS = 2


@pytest.fixture(params=["sandbox", "supervisor"])
def contained(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The settings that start servers in this process the one way or the other: in their
    sandbox (its PID namespace; only where bubblewrap works here), or, their sandbox turned
    off, under the supervisor."""
    if request.param == "sandbox":
        status = sandbox_status()
        if not status.available:
            pytest.skip(f"no sandbox here: {status.why}")
        return {}
    chosen = lifetime.supervised("asked for by the test")
    monkeypatch.setattr(server_sandbox, "containment", lambda: chosen)
    return {"sandbox": False}


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "pids"
    folder.mkdir()
    yield folder
    end_all(folder)


def hostile(pids: Path, name: str, *flags: str, **options: Any) -> McpServerConfig:
    return McpServerConfig.model_validate(
        hostile_entry(pids, name, *flags, connect_timeout_s=30, timeout_s=5, **options)
    )


def wait_for(pids: Path, *roles: str) -> None:
    end = time.monotonic() + 30
    while not set(roles) <= roles_started(pids):
        assert time.monotonic() < end, f"only {sorted(roles_started(pids))} started"
        time.sleep(0.05)


# --- Chamberlain killed ---------------------------------------------------------------------


@pytest.mark.parametrize("holder", ["cli", "session", "session-supervisor"])
def test_killing_chamberlain_leaves_no_server_running(holder, tmp_path):
    """`chamberlain mcp list` killed while it waits for a server that never answers, and a
    session with its servers connected (in their sandboxes here, or under the supervisor),
    killed KILLS times each: not one server process, daemon or stubborn, is left."""
    for kill in range(KILLS):
        done = kill_round(holder, tmp_path / f"kill-{kill}")
        assert done.started >= 3  # the servers, their daemons included, did run
        assert [p.pid for p in done.left] == [], f"kill {kill} left processes running"


def test_without_containment_the_hostile_servers_do_outlive_a_killed_chamberlain(tmp_path):
    """The hostile servers are hostile: started bare, as before, a killed session leaves the
    daemon and the server that ignores the end of its input running (ended here by PID)."""
    done = kill_round("session-bare", tmp_path / "bare", settle_s=2.0)
    left = {" ".join(p.info["cmdline"][-2:]) for p in done.left}
    assert any("stubborn" in line for line in left), left
    assert any("spawner --daemonise" in line for line in left), left


# --- Chamberlain closing -------------------------------------------------------------------


def test_closing_the_hub_ends_a_daemon_its_server_started(contained, pids):
    hub = McpHub({"spawner": hostile(pids, "spawner", "--daemonise", **contained)}, ToolRegistry())
    try:
        hub.ensure()
        assert hub.server_status("spawner").state == "connected"
        wait_for(pids, "spawner.main", "spawner.daemon")
    finally:
        hub.close()
    assert wait_until_gone(pids, within_s=10) == []


def test_closing_the_hub_ends_a_server_that_ignores_the_end_of_its_input(contained, pids):
    hub = McpHub(
        {"stubborn": hostile(pids, "stubborn", "--ignore-eof", **contained)}, ToolRegistry()
    )
    try:
        hub.ensure()
        assert hub.server_status("stubborn").state == "connected"
    finally:
        hub.close()
    assert wait_until_gone(pids, within_s=10) == []


def test_a_servers_daemon_ends_when_the_server_itself_stops(contained, pids, tmp_path):
    """What a server leaves running when its program ends goes with it (the PID namespace's
    rule, and the supervisor's): it is not left to init."""
    flags = tmp_path / "flags"
    flags.mkdir()
    flag = flags / "stop-now"
    # Stops (exit code 4) once the test writes the flag file, leaving its daemon behind.
    stopper = (
        "import os, pathlib, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(HOSTILE_SERVER)!r}, {str(pids)!r}, 'left', "
        "'--daemonise', '--hang'], stdin=subprocess.DEVNULL)\n"
        f"while not pathlib.Path({str(flag)!r}).exists(): time.sleep(0.05)\n"
        "os._exit(4)\n"
    )
    # The folders it is given are its roots: the sandbox shows it those (and lets it mark PIDS).
    config = McpServerConfig(
        command=sys.executable, args=("-c", stopper, str(pids), str(flags)), write=True, **contained
    )
    hub = McpHub({"stopper": config}, ToolRegistry())
    try:
        hub.start()
        wait_for(pids, "left.main", "left.daemon")
        flag.touch()
        assert wait_until_gone(pids, within_s=10) == []
        end = time.monotonic() + 10
        while hub.server_status("stopper").state == "connecting" and time.monotonic() < end:
            time.sleep(0.05)
        assert "exit code 4" in (hub.server_status("stopper").last_error or "")
    finally:
        hub.close()


def test_a_server_started_for_a_thread_that_has_since_ended_keeps_running(contained, pids):
    """The parent-death signal fires when the *thread* that started a process ends: servers
    are started on the hub's own loop thread, so a turn's thread ending takes none of them."""
    hub = McpHub(
        {"stubborn": hostile(pids, "stubborn", "--ignore-eof", **contained)}, ToolRegistry()
    )
    try:
        turn = threading.Thread(target=hub.ensure)
        turn.start()
        turn.join(60)
        assert hub.server_status("stubborn").state == "connected"
        time.sleep(0.5)  # long enough for a parent-death signal to have killed it
        result = hub.call("stubborn", "ping", {})
        assert result.text == "pong"
        assert left_behind(pids)
    finally:
        hub.close()


# --- how servers are contained here ----------------------------------------------------------


def test_where_bubblewrap_is_missing_servers_run_under_the_supervisor(monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    lifetime.containment.cache_clear()
    try:
        chosen = lifetime.containment()
    finally:
        lifetime.containment.cache_clear()
    assert chosen.how == "supervisor"
    assert chosen.why_not_better == "bubblewrap is not installed"
    assert "bubblewrap is not installed" in chosen.describe()


def test_the_installed_bundle_without_bubblewrap_supervises_servers_with_its_own_executable(
    monkeypatch, tmp_path
):
    """The bundle has no interpreter for the supervisor script: its executable is the one."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    lifetime.containment.cache_clear()
    try:
        chosen = lifetime.containment()
    finally:
        lifetime.containment.cache_clear()
    assert chosen.how == "supervisor"
    assert lifetime.wrapped(chosen, ["/usr/bin/server", "--flag"], parent_pid=42) == [
        sys.executable,
        "--mcp-supervise",
        "42",
        "--",
        "/usr/bin/server",
        "--flag",
    ]


def test_the_chamberlain_command_runs_the_supervisor_when_asked(tmp_path):
    """`chamberlain --mcp-supervise PARENT -- PROGRAM` (what the bundle runs) supervises: the
    program runs, and the supervisor ends as it did."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.launcher",
            "--mcp-supervise",
            str(os.getpid()),
            "--",
            "/bin/sh",
            "-c",
            "exit 3",
        ],
        cwd=REPO,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr

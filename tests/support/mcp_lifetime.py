"""What the tests (and bench/mcp_lifetime.py) of MCP servers' lifetime share: the hostile server's
settings, a real Chamberlain process that holds them (the CLI or a session like the app's),
killing it with SIGKILL, and finding every process it left behind.

Every server process writes `PIDS/NAME.ROLE.PID.NS` when it runs, and PIDS (a folder unique to
the test) is in every server process's command line, its wrapper's included: `left_behind(PIDS)`
finds them all, and `end_all(PIDS)` ends them by PID, so a failing test leaves nothing running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import psutil

from tests.support.cli import REPO
from tests.support.mcp_notes import running_with

HOSTILE_SERVER = Path(__file__).resolve().parent / "mcp_hostile_server.py"
HUB_PROCESS = Path(__file__).resolve().parent / "mcp_hub_process.py"

# What kills a Chamberlain process in a round: the CLI waiting for a server that never answers
# (`chamberlain mcp list`), or a session with its servers connected, as the app holds them
# (in their sandboxes, whose PID namespace ends them; or, their sandbox turned off, forced
# onto the supervisor, or uncontained as the installed bundle is without bubblewrap: the
# baseline).
Holder = Literal["cli", "session", "session-supervisor", "session-bare"]


def hostile_entry(pids: Path, name: str, *flags: str, **options: Any) -> dict[str, Any]:
    """One `mcp.servers` entry, as settings.json holds it, running the hostile server; its
    sandbox lets it write in PIDS (where it marks each process it becomes)."""
    return {
        "command": sys.executable,
        "args": [str(HOSTILE_SERVER), str(pids), name, *flags],
        "write": True,
        **options,
    }


def hostile_settings(pids: Path, *, hung: bool, sandbox: bool = True) -> dict[str, Any]:
    """A server that daemonises and one that ignores the end of its input; with `hung`, one
    more that does both and never answers, which keeps `chamberlain mcp list` waiting. Without
    `sandbox`, they run outside their sandbox (contained in their lifetime only)."""
    servers = {
        "spawner": hostile_entry(pids, "spawner", "--daemonise", sandbox=sandbox),
        "stubborn": hostile_entry(pids, "stubborn", "--ignore-eof", sandbox=sandbox),
    }
    if hung:
        servers["silent"] = hostile_entry(
            pids,
            "silent",
            "--hang",
            "--daemonise",
            "--ignore-eof",
            connect_timeout_s=600,
            sandbox=sandbox,
        )
    return {"mcp": {"servers": servers}, "llm": {"url": "none"}}


def write_settings(home: Path, data: dict[str, Any]) -> None:
    """`data` as the home's settings, saved (and so confirmed) as Chamberlain saves them."""
    from broker.settings import Settings, save_settings

    save_settings(home, Settings.model_validate(data))


def expected_roles(*, hung: bool) -> set[str]:
    roles = {"spawner.main", "spawner.daemon", "stubborn.main"}
    return roles | ({"silent.main", "silent.daemon"} if hung else set())


def roles_started(pids: Path) -> set[str]:
    """Which of the servers' processes ran ("spawner.main", "spawner.daemon", …)."""
    return {".".join(entry.name.split(".")[:2]) for entry in pids.iterdir()}


def processes_started(pids: Path) -> int:
    """How many server processes ran, restarts counted."""
    return sum(1 for _ in pids.iterdir())


def left_behind(pids: Path) -> list[psutil.Process]:
    """Every live process of the test's servers (and their wrappers), by the folder in their
    command lines."""
    return running_with(str(pids))


def end_all(pids: Path) -> None:
    """SIGKILL, by PID, every process of the test's servers that is still there."""
    for proc in left_behind(pids):
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


def wait_until_gone(pids: Path, within_s: float) -> list[psutil.Process]:
    """The processes still there after waiting up to `within_s` for them all to end."""
    end = time.monotonic() + within_s
    while True:
        found = left_behind(pids)
        if not found or time.monotonic() >= end:
            return found
        time.sleep(0.05)


def _environment(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home.parent),
        "CHAMBERLAIN_HOME": str(home),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "CHAMBERLAIN_LLM__EMBEDDED_FALLBACK": "false",
        "PYTHONPATH": str(REPO),
    }


def start_holder(holder: Holder, home: Path) -> subprocess.Popen[bytes]:
    """A real Chamberlain process that starts the servers in `home`'s settings and holds them."""
    if holder == "cli":
        argv = [sys.executable, "-m", "app.cli", "mcp", "list"]
    else:
        argv = [sys.executable, str(HUB_PROCESS), str(home)]
        if holder != "session":
            argv.append("--" + holder.removeprefix("session-"))
    return subprocess.Popen(
        argv,
        cwd=home.parent,
        env=_environment(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@dataclass
class Round:
    """One kill: which processes the servers became, and which were still there afterwards."""

    started: int
    left: list[psutil.Process]
    # Seconds from the SIGKILL until the last of them had ended (None: some never did).
    ended_after_s: float | None


def kill_round(
    holder: Holder, base: Path, *, start_within_s: float = 60.0, settle_s: float = 10.0
) -> Round:
    """Start a Chamberlain process holding the hostile servers in a fresh home under `base`,
    wait until every server process (daemons included) runs, SIGKILL it, and see what is left
    once they all ended or `settle_s` passed. Whatever is left is ended here too, by PID."""
    home, pids = base / "home", base / "pids"
    home.mkdir(parents=True)
    pids.mkdir()
    hung = holder == "cli"
    sandboxed = holder in ("cli", "session")
    write_settings(home, hostile_settings(pids, hung=hung, sandbox=sandboxed))
    holder_process = start_holder(holder, home)
    try:
        wanted = expected_roles(hung=hung)
        end = time.monotonic() + start_within_s
        while not wanted <= roles_started(pids):
            if holder_process.poll() is not None or time.monotonic() >= end:
                _, err = holder_process.communicate(timeout=10)
                raise RuntimeError(
                    f"the servers did not all start (have {sorted(roles_started(pids))}, "
                    f"holder exit {holder_process.returncode}): {err.decode()[-2000:]}"
                )
            time.sleep(0.05)
        if holder != "cli":
            # The session says so once every server is connected (the app's steady state).
            assert holder_process.stdout is not None
            line = holder_process.stdout.readline().decode()
            if not line.startswith("ready"):
                raise RuntimeError(f"the session did not get ready: {line!r}")
        started = processes_started(pids)
        killed_at = time.monotonic()
        holder_process.send_signal(signal.SIGKILL)
        holder_process.wait(10)
        left = wait_until_gone(pids, within_s=settle_s)
        ended_after = None if left else time.monotonic() - killed_at
        return Round(started=started, left=left, ended_after_s=ended_after)
    finally:
        if holder_process.poll() is None:
            holder_process.kill()
            holder_process.wait(10)
        for stream in (holder_process.stdout, holder_process.stderr):
            if stream is not None:
                stream.close()
        end_all(pids)

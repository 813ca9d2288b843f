"""How an MCP server's program is started so that it ends with Chamberlain — however Chamberlain
ends, SIGKILL included — together with everything it started: a server that daemonises (double
fork, setsid) or that ignores the end of its input included.

A server in its sandbox (tools/mcp/sandbox.py, the default) needs none of this: the sandbox's
own PID namespace, with `--die-with-parent`, gives the same lifetime in the same bubblewrap.
This is for a server whose settings turn its sandbox off (`"sandbox": false`).

Preferred: bubblewrap, for the lifetime only (the whole file system is bound as it is). The
server gets a PID namespace of its own (`--unshare-pid`) whose first process dies with
Chamberlain (`--die-with-parent`), and when that process dies the kernel ends every process in
the namespace: nothing in it can leave or hide.
Where bubblewrap cannot make a PID namespace (not installed, user namespaces turned off), the
supervisor in tools/mcp/supervise.py (a child subreaper with a parent-death signal) does the same
from outside the server. The installed bundle cannot run that script (it has no interpreter of
its own to give it); there a server starts bare, and only its process group is ended on close.

Both rely on the kernel's parent-death signal, which fires when the *thread* that started the
process ends, not the process: servers are started on the MCP hub's loop thread, which lives
until the hub is closed (its servers stopped first), so that is when, at the latest, they go.
This module never decides what a server may reach; it only bounds how long it lives.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger("chamberlain.tools.mcp.lifetime")

How = Literal["pid-namespace", "supervisor", "none"]
SUPERVISOR = Path(__file__).resolve().with_name("supervise.py")
PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Containment:
    """How servers are started here, and the words for doctor and the log."""

    how: How
    # The program and options put before the server's own command line.
    prefix: tuple[str, ...] = ()
    why_not_better: str = ""

    def describe(self) -> str:
        if self.how == "pid-namespace":
            return "each in a PID namespace of its own (bubblewrap) that ends with Chamberlain"
        if self.how == "supervisor":
            return (
                "each under a supervisor that ends it and whatever it started with Chamberlain "
                f"({self.why_not_better})"
            )
        return (
            "directly: one that daemonises could outlive a Chamberlain that is killed "
            f"({self.why_not_better})"
        )


def wrapped(containment: Containment, argv: list[str], parent_pid: int | None = None) -> list[str]:
    """The command line that starts `argv` (program first, already found) contained."""
    if containment.how == "supervisor":
        pid = os.getpid() if parent_pid is None else parent_pid
        return [*containment.prefix, str(pid), "--", *argv]
    if containment.how == "pid-namespace":
        return [*containment.prefix, "--", *argv]
    return list(argv)


@functools.cache
def containment() -> Containment:
    """How this process starts servers: decided once (a bubblewrap probe takes ~10 ms)."""
    found = _bwrap()
    if isinstance(found, Containment):
        return found
    chosen = supervised(found)
    log.info("MCP servers start %s", chosen.describe())
    return chosen


def supervised(why_not_better: str) -> Containment:
    """The fallback: each server under tools/mcp/supervise.py, run by this interpreter (in the
    installed bundle, by its own executable, which takes `--mcp-supervise`: app/launcher.py)."""
    if getattr(sys, "frozen", False):
        return Containment(
            "supervisor", (sys.executable, "--mcp-supervise"), why_not_better=why_not_better
        )
    # -I -S: the supervisor needs the standard library only, and nothing from the environment
    # (PYTHONPATH, a user's site-packages) may change what it runs.
    prefix = (sys.executable, "-I", "-S", str(SUPERVISOR))
    return Containment("supervisor", prefix, why_not_better=why_not_better)


def _bwrap() -> Containment | str:
    """A working bubblewrap PID-namespace prefix, or why there is none."""
    program = shutil.which("bwrap")
    if program is None:
        return "bubblewrap is not installed"
    true = shutil.which("true") or "/bin/true"
    # A fresh /proc for the namespace where the kernel allows one (it may not in a container
    # whose /proc is partly hidden); without it the lifetime is contained all the same.
    why = ""
    for proc in (("--proc", "/proc"), ()):
        prefix = (program, "--dev-bind", "/", "/", *proc, "--unshare-pid", "--die-with-parent")
        try:
            probe = subprocess.run(
                [*prefix, "--", true],
                capture_output=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
                env={"PATH": "/usr/bin:/bin"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not be run: {exc}"
        if probe.returncode == 0:
            return Containment("pid-namespace", prefix)
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1] if said else "no reason given"
        why = f"bubblewrap cannot make a PID namespace here ({reason})"
    return why

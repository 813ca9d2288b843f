"""The OS sandbox every command runs in: what it sees, what it may change, and how it is built.

The command rules (`tools.commands`) give a prompt its words and refuse the obvious; they cannot
know every program's options, so they are not what keeps a command in bounds. This is: each
command stage runs inside bubblewrap (Linux user namespaces), built per call from its plan:

- the root filesystem read-only; a fresh /proc (its own PID namespace: no other process, and so
  no other process's environment, is visible), a minimal /dev, a private empty /tmp;
- every home folder, /root, /run (session buses, agent sockets), /mnt, /media hidden; of the
  user's files only the folders the call names (its working folder and the paths in its
  arguments) are mounted, read-only unless the call's grant is for exactly this command;
- credential stores and Chamberlain's own folder are never mounted: where a mounted folder
  contains one, it is covered by an empty folder (or an empty file);
- no network unless the plan says the command needs it (the prompt says so);
- the environment rebuilt from an allowlist (`command_environment`), never scrubbed from a
  denylist; a new terminal session (no TIOCSTI into the user's terminal); killed with its
  parent; no capabilities; no further user namespaces.

Without bubblewrap (macOS, Windows, a Linux without user namespaces) `sandbox_status()` says why,
and commands are refused unless the user turned on unsandboxed commands in settings. A macOS
`sandbox-exec` profile is written by `macos_profile`, untested.

This module never decides what a command may do; it only builds the walls the grant describes.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.paths import is_within
from tools.private import PrivatePlaces, within

log = logging.getLogger("chamberlain.tools.sandbox")

# Folders hidden wholesale (covered by an empty tmpfs) before the call's own folders are mounted.
HIDDEN_TOP = ("/home", "/root", "/run", "/tmp", "/var/tmp", "/mnt", "/media", "/srv")
_SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# The private /tmp's size cap: a command cannot fill the machine's memory through it.
TMP_SIZE_BYTES = 512 * 1024 * 1024

# Variables a command gets, when the user's environment has them; nothing else passes.
_ENV_ALLOWED = frozenset({"LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR", "USER",
                          "LOGNAME"})  # fmt: skip
_ENV_ALLOWED_PREFIXES = ("LC_",)


def command_environment(
    environ: Mapping[str, str],
    *,
    home: Path,
    cwd: Path | None = None,
    search_path: str | None = None,
    keep: Iterable[str] = (),
) -> dict[str, str]:
    """The environment a command starts with: an allowlist, not the user's whole environment.

    Passed on: locale (LANG, LANGUAGE, LC_*), TZ, TERM, colour hints, USER and LOGNAME, and the
    names in `keep` (the desktop-session variables for open_path / open_url). Set here: PATH
    (absolute folders only: an empty or relative entry would run programs from the working
    folder), HOME, PWD, TMPDIR. API keys, tokens, passwords, proxies with credentials, loader
    variables (LD_PRELOAD, PYTHONPATH, BASH_ENV, …) never pass, whatever they are called.
    """
    wanted = set(keep)
    env = {
        name: value
        for name, value in environ.items()
        if name in _ENV_ALLOWED or name.startswith(_ENV_ALLOWED_PREFIXES) or name in wanted
    }
    raw_path = search_path if search_path is not None else environ.get("PATH", os.defpath)
    entries = [p for p in raw_path.split(os.pathsep) if p and os.path.isabs(p)]
    env["PATH"] = os.pathsep.join(dict.fromkeys(entries)) or "/usr/local/bin:/usr/bin:/bin"
    env["HOME"] = os.fspath(home)
    env["TMPDIR"] = "/tmp"
    if cwd is not None:
        env["PWD"] = os.fspath(cwd)
    return env


@dataclass(frozen=True)
class SandboxPlan:
    """What one command may see and change; built from its check and its grant, then run as is.

    `read` and `write` are resolved paths (folders or files) mounted at the same place inside;
    `home` is where $HOME points (hidden unless mounted); `private` lists what is never mounted.
    """

    cwd: Path
    home: Path
    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()
    network: bool = False
    private: PrivatePlaces | None = None
    # Extra folders hidden besides HIDDEN_TOP and the home (Chamberlain's data folder, …).
    hide: tuple[Path, ...] = field(default=())

    def describe(self) -> str:
        """The walls in words, for a prompt or a result: "reads ~/Documents; no network"."""
        parts: list[str] = []
        if self.write:
            parts.append(
                "can change files in " + ", ".join(_short(p, self.home) for p in self.write)
            )
        reads = [p for p in self.read if p not in self.write]
        if reads:
            parts.append("reads " + ", ".join(_short(p, self.home) for p in reads))
        if not self.write:
            parts.append("changes nothing")
        parts.append("uses the network" if self.network else "no network")
        return "; ".join(parts)


def _short(path: Path, home: Path) -> str:
    try:
        if is_within(path, home):
            rest = path.relative_to(home)
            return "~" if rest == Path(".") else f"~/{rest}"
    except ValueError:
        pass
    return os.fspath(path)


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    program: str | None
    why: str


@functools.lru_cache(maxsize=1)
def sandbox_status() -> SandboxStatus:
    """Whether commands can be sandboxed here, and why not (checked once per process)."""
    if sys.platform == "darwin" and os.path.exists(_SANDBOX_EXEC):
        # UNTESTED: written for macOS's sandbox-exec, never run on a Mac by this project.
        return SandboxStatus(True, _SANDBOX_EXEC, "sandbox-exec (macOS; untested)")
    if not sys.platform.startswith("linux"):
        return SandboxStatus(
            False,
            None,
            f"commands are sandboxed only on Linux (bubblewrap) and, untested, on macOS "
            f"(sandbox-exec); this is {sys.platform}",
        )
    program = shutil.which("bwrap")
    if program is None:
        return SandboxStatus(
            False, None, "bubblewrap (bwrap) is not installed; install the bubblewrap package"
        )
    probe = [program, *_base_args(network=False), "--ro-bind", "/", "/", "--", "true"]
    try:
        done = subprocess.run(
            probe, capture_output=True, timeout=10, check=False, env={"PATH": "/usr/bin:/bin"}
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return SandboxStatus(False, program, f"bubblewrap could not start: {exc}")
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        why = detail[0] if detail else f"exit {done.returncode}"
        return SandboxStatus(
            False,
            program,
            f"bubblewrap cannot create a sandbox here ({why}); user namespaces may be turned "
            "off (kernel.unprivileged_userns_clone, or an AppArmor restriction)",
        )
    return SandboxStatus(True, program, f"bubblewrap ({program})")


def _base_args(*, network: bool) -> list[str]:
    args = ["--die-with-parent", "--new-session", "--unshare-all"]
    if network:
        args.append("--share-net")
    args += ["--cap-drop", "ALL"]
    if os.geteuid() != 0:
        # Only possible with a user namespace of our own (root runs bwrap without one).
        args.append("--disable-userns")
    return args


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def hidden_roots(home: Path, hide: Sequence[Path] = ()) -> list[Path]:
    """The folders the sandbox covers with an empty tmpfs before mounting a call's own places:
    HIDDEN_TOP, the user's home and `hide`, each once (none inside another)."""
    roots = [Path(p) for p in HIDDEN_TOP]
    for extra in (home, *hide):
        if not any(within(extra, r) for r in roots):
            roots.append(extra)
    return roots


def bwrap_args(plan: SandboxPlan, argv: Sequence[str]) -> list[str]:
    """The bubblewrap arguments (program excluded) that run `argv` inside `plan`'s walls."""
    args = _base_args(network=plan.network)
    args += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    hidden = hidden_roots(plan.home, plan.hide)
    for root in hidden:
        if root != Path("/tmp") and root.is_dir() and not root.is_symlink():
            args += ["--tmpfs", os.fspath(root)]
    args += ["--size", str(TMP_SIZE_BYTES), "--tmpfs", "/tmp"]
    if plan.network:
        # Name resolution often lives under /run (systemd-resolved's stub file).
        args += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
    args += ["--dir", os.fspath(plan.home)]
    mounted: list[Path] = []
    for path in plan.read:
        if path in plan.write or not _exists(path):
            continue
        args += ["--ro-bind", os.fspath(path), os.fspath(path)]
        mounted.append(path)
    for path in plan.write:
        if not _exists(path):
            continue
        args += ["--bind", os.fspath(path), os.fspath(path)]
        mounted.append(path)
    args += _covers(plan, hidden, mounted)
    args += ["--chdir", os.fspath(plan.cwd), "--", *argv]
    return args


def _covers(plan: SandboxPlan, hidden: list[Path], mounted: list[Path]) -> list[str]:
    """Cover every private place a command could otherwise see, after all the mounts."""
    if plan.private is None:
        return []
    args: list[str] = []
    for place in plan.private.all():
        visible = any(within(place, m) for m in mounted) or not any(
            within(place, h) for h in hidden
        )
        if not visible or not _exists(place) or place.is_symlink():
            continue  # a symlink's real place is on the list itself, and covered there
        if place.is_dir():
            args += ["--tmpfs", os.fspath(place)]
        else:
            args += ["--ro-bind", "/dev/null", os.fspath(place)]
    return args


def wrap_stage(plan: SandboxPlan, argv: Sequence[str], program: str) -> tuple[list[str], str]:
    """(argv, executable) that run one stage of a command inside the sandbox."""
    status = sandbox_status()
    if not status.available or status.program is None:
        raise RuntimeError(status.why)
    if status.program == _SANDBOX_EXEC:
        return [status.program, "-p", macos_profile(plan), program, *argv[1:]], status.program
    return [status.program, *bwrap_args(plan, [program, *argv[1:]])], status.program


def macos_profile(plan: SandboxPlan) -> str:
    """A `sandbox-exec` profile for the same plan on macOS. UNTESTED: no macOS machine here.

    Deny by default; read the system, the plan's folders; write only the plan's write folders
    and a temp folder; network only when the plan says so; private places denied last.
    """

    def quoted(path: Path) -> str:
        return '"' + os.fspath(path).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec process-fork signal (target self))",
        "(allow sysctl-read mach-lookup)",
        '(allow file-read* (subpath "/usr") (subpath "/bin") (subpath "/sbin") '
        '(subpath "/System") (subpath "/Library") (subpath "/opt/homebrew") '
        '(subpath "/private/etc") (subpath "/dev"))',
    ]
    for path in plan.read:
        lines.append(f"(allow file-read* (subpath {quoted(path)}))")
    for path in plan.write:
        lines.append(f"(allow file-read* file-write* (subpath {quoted(path)}))")
    lines.append('(allow file-read* file-write* (subpath "/private/tmp"))')
    if plan.network:
        lines.append("(allow network*)")
    if plan.private is not None:
        for place in plan.private.all():
            lines.append(f"(deny file-read* file-write* (subpath {quoted(place)}))")
    return "\n".join(lines) + "\n"

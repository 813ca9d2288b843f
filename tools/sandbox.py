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
- no network unless the plan says the command needs it (the prompt says so), and then a network
  namespace of its own with user-mode networking (`tools.netns`): internet egress, never the
  host's loopback, abstract sockets or /proc/net;
- the environment rebuilt from an allowlist (`command_environment`), never scrubbed from a
  denylist; a new terminal session (no TIOCSTI into the user's terminal); killed with its
  parent; no capabilities; no further user namespaces.

The walls are the same for root and for a normal user: bubblewrap makes a user namespace of its
own and forbids the command further ones (`--unshare-user --disable-userns`, bubblewrap ≥ 0.8);
where it cannot (a setuid bubblewrap, a kernel that gives normal users no user namespaces) it is
used without one only if the command cannot make one either (`--assert-userns-disabled`). The
probe runs the walls a command gets, as the user Chamberlain runs as.

Without a working sandbox (no bubblewrap, user namespaces turned off, a container, macOS, Windows)
`sandbox_status()` says what is missing and how to get it, and commands are refused (unless the
person turned on the warned `tools.unsandboxed_commands` themselves: no message offers it as the
way out). A macOS `sandbox-exec` profile is written by `macos_profile`, untested.

This module never decides what a command may do; it only builds the walls the grant describes.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.limits import CommandLimits, with_rlimits
from tools.netns import NetworkUnavailable, StageNetwork
from tools.paths import is_within
from tools.private import PrivatePlaces, within

log = logging.getLogger("chamberlain.tools.sandbox")

# Folders hidden wholesale (covered by an empty tmpfs) before the call's own folders are mounted.
HIDDEN_TOP = ("/home", "/root", "/run", "/tmp", "/var/tmp", "/mnt", "/media", "/srv")
_SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# The private /tmp's size cap: a command cannot fill the machine's memory through it.
TMP_SIZE_BYTES = 512 * 1024 * 1024
# /dev/shm's, unless the plan gives its own (tools.command_shm_mb).
SHM_SIZE_BYTES = 64 * 1024 * 1024

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
    # What the command may use (memory, processes, CPU time, its /dev/shm's size): set inside
    # the sandbox, where its own user namespace counts only its processes. None: no limits.
    limits: CommandLimits | None = None
    # Startup and code-running places (tools.startup_places) held read-only wherever a writable
    # folder holds them: bound over themselves, or, where one does not exist yet (or is a
    # symlink), the folder it would be made in is read-only, so it cannot be created.
    keep: tuple[Path, ...] = field(default=())
    # The host folder mounted writable at `cwd` for a call that runs in an empty scratch folder
    # (made for the run, removed after it); None: `cwd` is the person's own folder.
    scratch: Path | None = None

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
    """Whether commands can be sandboxed here; when not, what is missing (`why`) and how a person
    gets it (`remedy`), kept apart so front ends can word them. `userns` holds the bubblewrap
    options that keep a command from making user namespaces on this machine (what the probe ran).
    """

    available: bool
    program: str | None
    why: str
    remedy: str = ""
    userns: tuple[str, ...] = ()
    # A setuid bubblewrap refuses some options a normal user's may use (--size).
    setuid: bool = False

    @property
    def own_users(self) -> bool:
        """Whether a command gets a user namespace of its own (where the kernel counts only
        its processes against a process limit), not --assert-userns-disabled."""
        return tuple(self.userns or USERNS_WAYS[0]) == USERNS_WAYS[0]


# The ways to forbid a command user namespaces of its own, best first; the probe keeps the first
# that works here. bubblewrap refuses --disable-userns without an explicit --unshare-user (0.8.0:
# --unshare-all only *tries* one), and a setuid bubblewrap has no --disable-userns at all: there
# the kernel must already forbid them, which --assert-userns-disabled checks at every start.
USERNS_WAYS: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--disable-userns"),
    ("--assert-userns-disabled",),
)

# The kernel switches that keep normal users from making user namespaces, by sysctl name, with
# the value that blocks them; read from /proc/sys (dots become slashes).
_USERNS_SWITCHES = (
    ("kernel.unprivileged_userns_clone", "0"),
    ("user.max_user_namespaces", "0"),
    ("kernel.apparmor_restrict_unprivileged_userns", "1"),
)


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
            "run Chamberlain on Linux with bubblewrap installed to use commands; everything "
            "else works here",
        )
    program = shutil.which("bwrap")
    if program is None:
        return SandboxStatus(
            False,
            None,
            "bubblewrap (bwrap), which builds the sandbox every command runs in, is not installed",
            "install the bubblewrap package (Debian/Ubuntu: sudo apt install bubblewrap; "
            "Fedora: sudo dnf install bubblewrap) and start Chamberlain again",
        )
    return probe_bubblewrap(program)


def probe_bubblewrap(program: str, sysctl: Path = Path("/proc/sys")) -> SandboxStatus:
    """Run `true` inside the walls a command gets, each way of forbidding user namespaces in
    turn; the first that works is the one commands use. `sysctl` is read only to explain a
    failure."""
    failures: list[str] = []
    setuid = _is_setuid(program)
    for userns in USERNS_WAYS:
        candidate = SandboxStatus(True, program, f"bubblewrap ({program})", "", userns, setuid)
        probe = [program, *_probe_args(candidate), "--", "true"]
        try:
            done = subprocess.run(
                probe, capture_output=True, timeout=10, check=False, env={"PATH": "/usr/bin:/bin"}
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return SandboxStatus(
                False,
                program,
                f"bubblewrap ({program}) could not be started: {exc}",
                "reinstall the bubblewrap package",
            )
        if done.returncode == 0:
            return candidate
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        failures.append(lines[0][:300] if lines else f"exit {done.returncode}")
        log.info("bubblewrap probe with %s failed: %s", " ".join(userns), failures[-1])
    why, remedy = _explain(program, failures, sysctl)
    return SandboxStatus(False, program, why, remedy, setuid=setuid)


def _probe_args(status: SandboxStatus) -> list[str]:
    """The walls every command gets, on nothing of the user's: what must work for any to run."""
    return [
        *_base_args(network=False, status=status),
        *("--ro-bind", "/", "/", "--proc", "/proc"),
        *_dev(status, SHM_SIZE_BYTES),
        *_private_tmp(status),
    ]


def _dev(status: SandboxStatus, shm_bytes: int) -> list[str]:
    """A minimal /dev, read-only, with a /dev/shm of its own capped at `shm_bytes`.

    bubblewrap's /dev is a writable tmpfs with the kernel's default size (half the memory), and
    its /dev/shm a folder in it: without this a command could fill the memory through either.
    Its device nodes are mounts of their own, so /dev read-only still lets /dev/null be written.
    """
    if status.setuid:
        # A setuid bubblewrap refuses --size: /dev/shm has the kernel's cap (half the memory).
        shm = ["--tmpfs", "/dev/shm"]
    else:
        shm = ["--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    return ["--dev", "/dev", *shm, "--remount-ro", "/dev"]


def _private_tmp(status: SandboxStatus) -> list[str]:
    if status.setuid:
        # A setuid bubblewrap refuses --size: its /tmp has the kernel's cap (half the memory).
        return ["--tmpfs", "/tmp"]
    return ["--size", str(TMP_SIZE_BYTES), "--tmpfs", "/tmp"]


def _explain(program: str, failures: Sequence[str], sysctl: Path) -> tuple[str, str]:
    """What is missing for a sandbox, and how a person gets it, from what bubblewrap said and the
    kernel's switches. Never the unsandboxed setting: that is giving up the walls, not a fix."""
    said = failures[0] if failures else "no reason given"
    if any("Unknown option" in line or "unrecognized option" in line for line in failures):
        return (
            f"the installed bubblewrap ({program}) is too old for Chamberlain's sandbox, which "
            f"needs 0.8.0 or newer to stop a command from making user namespaces ({said})",
            "install bubblewrap 0.8.0 or newer (Debian 12 and Ubuntu 24.04 ship it) and start "
            "Chamberlain again",
        )
    if any("Can't mount proc" in line for line in failures):
        return (
            f"bubblewrap cannot mount a fresh /proc here ({said}), as happens inside a "
            "container that hides parts of /proc",
            "run Chamberlain on the computer itself rather than in this container, or start "
            "the container with /proc unmasked",
        )
    if _is_setuid(program):
        # A setuid bubblewrap holds root's privileges while it sets up: the kernel's switches
        # for normal users do not stop it, and it cannot forbid the command user namespaces.
        return (
            f"the installed bubblewrap ({program}) is setuid root, and that kind cannot stop a "
            f"command from making user namespaces on this computer ({said})",
            "install your distribution's standard bubblewrap package (not setuid), with user "
            "namespaces allowed for normal users, and start Chamberlain again",
        )
    blocked = _userns_switch(sysctl)
    if blocked == "kernel.apparmor_restrict_unprivileged_userns":
        return (
            "AppArmor lets only programs with a profile that allows it make user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 23.10 and later), "
            f"and bubblewrap has none here ({said})",
            f"give bubblewrap such a profile — the file /etc/apparmor.d/bwrap with the rule "
            f"'profile bwrap {program} flags=(unconfined) {{ userns, }}', shown in full in the "
            "README's 'The command sandbox' — then run sudo systemctl reload apparmor; or ask "
            "whoever runs this computer",
        )
    if blocked is not None:
        value = "1" if blocked == "kernel.unprivileged_userns_clone" else "15000"
        return (
            "user namespaces, which bubblewrap needs, are turned off for normal users on this "
            f"computer ({blocked} = 0)",
            f"turn them on with sudo sysctl -w {blocked}={value}, and keep that after a restart "
            f"with the line '{blocked} = {value}' in /etc/sysctl.d/60-userns.conf; or ask "
            "whoever runs this computer",
        )
    if any("ENOSPC" in line or "No space left" in line for line in failures):
        return (
            "bubblewrap may make no more user namespaces here: the limit is reached, which "
            f"usually means Chamberlain itself runs inside a sandbox or container that allows "
            f"none ({said})",
            "run Chamberlain outside that sandbox or container; or ask whoever runs this "
            "computer to raise user.max_user_namespaces",
        )
    return (
        f"bubblewrap ({program}) cannot create a sandbox here ({said})",
        "bubblewrap needs user namespaces allowed for normal users and a /proc it may mount; "
        "the README's 'The command sandbox' says how to check both, or ask whoever runs this "
        "computer",
    )


def _userns_switch(sysctl: Path) -> str | None:
    """The sysctl that keeps normal users from making user namespaces here, if one does."""
    for name, blocking in _USERNS_SWITCHES:
        try:
            value = (sysctl / name.replace(".", "/")).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if value == blocking:
            return name
    return None


def _is_setuid(program: str) -> bool:
    try:
        return bool(os.stat(program).st_mode & stat.S_ISUID)
    except OSError:
        return False


def _base_args(*, network: bool, status: SandboxStatus) -> list[str]:
    """The namespaces and limits of every command: a new session (no TIOCSTI into the terminal),
    killed with its parent, no capabilities, and no user namespaces of its own. Never the host's
    network namespace: a sandbox's network is a namespace of its own (tools.netns), so
    `network` must be False (kept for callers' clarity)."""
    if network:
        raise NetworkUnavailable("a sandbox never shares the host's network namespace")
    args = ["--die-with-parent", "--new-session", "--unshare-all"]
    args += ["--cap-drop", "ALL"]
    args += status.userns or USERNS_WAYS[0]
    return args


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def installation_places(
    executables: Iterable[str], home: Path, visible: Sequence[Path]
) -> list[Path]:
    """What the sandbox must show read-only for programs installed where it hides things.

    A program under a home folder (`~/.local/bin/tool`, a pyenv or nvm install, a venv) needs
    its whole installation, not just its file: the top folder it lies in under the hidden area
    (`~/.pyenv`, `~/.local`). A program already inside a place the call sees needs nothing
    more. Private places inside stay covered.
    """
    # The deepest hidden area a program lies in decides (the home, even inside /tmp).
    areas = [Path(p) for p in HIDDEN_TOP] + [home]
    tops = sorted(areas, key=lambda t: len(t.parts), reverse=True)
    places: list[Path] = []
    for exe in executables:
        for candidate in dict.fromkeys([Path(exe), Path(os.path.realpath(exe))]):
            if any(is_within(candidate, seen) for seen in visible):
                continue
            for top in tops:
                if candidate != top and is_within(candidate, top):
                    places.append(top / candidate.relative_to(top).parts[0])
                    break
    return list(dict.fromkeys(places))


def hidden_roots(home: Path, hide: Sequence[Path] = ()) -> list[Path]:
    """The folders the sandbox covers with an empty tmpfs before mounting a call's own places:
    HIDDEN_TOP, the user's home and `hide`, each once (none inside another)."""
    roots = [Path(p) for p in HIDDEN_TOP]
    for extra in (home, *hide):
        if not any(within(extra, r) for r in roots):
            roots.append(extra)
    return roots


def bwrap_args(
    plan: SandboxPlan,
    argv: Sequence[str],
    *,
    status: SandboxStatus | None = None,
    network: StageNetwork | None = None,
) -> list[str]:
    """The bubblewrap arguments (program excluded) that run `argv` inside `plan`'s walls, the
    way `status` (default: this machine's probe) found bubblewrap works here.

    A plan with the network needs a `network`: a network namespace of its own that `network`
    attaches to (tools.netns), never the host's (without one it raises NetworkUnavailable)."""
    status = status if status is not None else sandbox_status()
    if plan.network and network is None:
        raise NetworkUnavailable("a networked sandbox was given no network of its own")
    args = _base_args(network=False, status=status)
    if plan.network and network is not None:
        args += network.bwrap_args()
    shm = plan.limits.shm_bytes if plan.limits is not None else SHM_SIZE_BYTES
    args += ["--ro-bind", "/", "/", "--proc", "/proc", *_dev(status, shm)]
    hidden = hidden_roots(plan.home, plan.hide)
    for root in hidden:
        if root != Path("/tmp") and root.is_dir() and not root.is_symlink():
            args += ["--tmpfs", os.fspath(root)]
    args += _private_tmp(status)
    if plan.scratch is not None:
        args += ["--bind", os.fspath(plan.scratch), os.fspath(plan.cwd)]
    if plan.network:
        # Name resolution often lives under /run (systemd-resolved's stub file).
        args += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
        if network is not None:
            args += network.mounts()
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
    args += _holds(plan)
    args += _covers(plan, hidden, mounted)
    if plan.limits is not None:
        # The process limit counts only the sandbox's processes in a user namespace of its
        # own; without one (--assert-userns-disabled) it would count all of the person's.
        argv, _ = with_rlimits(plan.limits, argv, argv[0], sandboxed=status.own_users)
    args += ["--chdir", os.fspath(plan.cwd), "--", *argv]
    return args


# A writable folder whose own top level must stay read-only (a startup file missing in it) has
# its entries bound writable one by one, up to this many; past it the folder stays read-only.
MAX_SEALED_ENTRIES = 1000


def _holds(plan: SandboxPlan) -> list[str]:
    """Hold every startup place inside a writable folder read-only (`plan.keep`).

    An existing place is bound read-only over itself: it can be neither written nor replaced
    (a rename onto a mount point fails), and the folders between it and the writable folder are
    bound over themselves so none can be renamed away and rebuilt. A place that does not exist
    yet, or is a symlink (which can be replaced), is held by the nearest real folder above it:
    bound read-only, or, when that is the writable folder itself, that folder's top level is
    read-only and its entries are bound writable one by one. Nothing is created on the host.
    """
    writable = sorted(
        (w for w in plan.write if os.path.isdir(w) and not os.path.islink(w)),
        key=lambda p: len(p.parts),
        reverse=True,
    )
    if not writable or not plan.keep:
        return []
    ro: set[Path] = set()
    pins: set[Path] = set()
    sealed: set[Path] = set()
    keep = list(plan.keep)
    for place in plan.keep:
        if os.path.islink(place):
            # A dotfile manager's link (~/.bashrc -> ~/dotfiles/bashrc): the file it leads to
            # is what runs, so it is held too.
            keep.append(Path(os.path.realpath(place)))
    for place in dict.fromkeys(keep):
        owner = next((w for w in writable if within(place, w)), None)
        if owner is None:
            continue
        if place == owner:
            ro.add(place)
            continue
        held = owner
        between: list[Path] = []
        for part in place.relative_to(owner).parts:
            step = held / part
            real = os.path.lexists(step) and not os.path.islink(step)
            if not real or (step != place and not os.path.isdir(step)):
                break
            if step == place:
                held = step
                break
            between.append(step)
            held = step
        if held == place:
            ro.add(place)
            pins.update(between)
        elif held == owner:
            sealed.add(owner)
        else:
            ro.add(held)
            pins.update(between[:-1] if between and between[-1] == held else between)

    def in_ro(path: Path) -> bool:
        return any(within(path, r) for r in ro)

    args: list[str] = []
    for owner in sorted(sealed, key=lambda p: len(p.parts)):
        args += ["--ro-bind", os.fspath(owner), os.fspath(owner)]
        try:
            with os.scandir(owner) as listing:
                entries = [Path(e.path) for e in listing]
        except OSError:
            entries = []
        if len(entries) > MAX_SEALED_ENTRIES:
            continue
        for entry in sorted(entries):
            if in_ro(entry) or os.path.islink(entry):
                continue
            args += ["--bind", os.fspath(entry), os.fspath(entry)]
        for path in plan.read:
            if path not in plan.write and path != owner and within(path, owner) and _exists(path):
                args += ["--ro-bind", os.fspath(path), os.fspath(path)]
    steps = [(p, "--bind") for p in pins if not in_ro(p)] + [(p, "--ro-bind") for p in ro]
    for path, how in sorted(steps, key=lambda s: len(s[0].parts)):
        if how == "--ro-bind" and any(r != path and within(path, r) for r in ro):
            continue  # inside a folder already held read-only
        args += [how, os.fspath(path), os.fspath(path)]
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


def wrap_stage(
    plan: SandboxPlan, argv: Sequence[str], program: str, network: StageNetwork | None = None
) -> tuple[list[str], str]:
    """(argv, executable) that run one stage of a command inside the sandbox. A stage whose
    plan has the network needs its `network` (tools.netns): it never gets the host's."""
    status = sandbox_status()
    if not status.available or status.program is None:
        raise RuntimeError(status.why)
    if status.program == _SANDBOX_EXEC:
        return [status.program, "-p", macos_profile(plan), program, *argv[1:]], status.program
    if plan.network and network is None:
        raise NetworkUnavailable("a networked stage was given no network of its own")
    wrapped = bwrap_args(plan, [program, *argv[1:]], status=status, network=network)
    return [status.program, *wrapped], status.program


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
    for place in plan.keep:
        # Startup places stay read-only inside a writable folder (created ones included).
        lines.append(f"(deny file-write* (subpath {quoted(place)}))")
    if plan.private is not None:
        for place in plan.private.all():
            lines.append(f"(deny file-read* file-write* (subpath {quoted(place)}))")
    return "\n".join(lines) + "\n"

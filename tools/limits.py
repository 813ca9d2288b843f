"""What one command may use: memory, processes, CPU time and /dev/shm, and how that is held.

Each limit is a setting (`tools.command_memory_mb`, `tools.command_max_processes`,
`tools.command_cpu_s`, `tools.command_shm_mb`), enforced on every stage of a command:

- **A cgroup** where a service manager answers: `systemd-run --user --scope` for a person (as
  root, the system manager's `systemd-run --scope`). Each stage's whole sandbox — every process
  it starts, the pages it writes to its tmpfs included — is one scope with `MemoryMax` (no swap)
  and `TasksMax`. Found once per process by starting a real scope and reading its limits back;
  a manager that takes the scope but cannot hold the limits (cgroup v1, controllers not
  delegated) does not count.
- **rlimits otherwise**, set inside the sandbox by util-linux's `prlimit` just before the
  program runs: `RLIMIT_DATA` for memory, per process. Not `RLIMIT_AS`: that counts address
  space a program only reserves (V8, Go, Java and sanitizers map large inaccessible regions), so
  ordinary programs would fail; `RLIMIT_DATA` counts writable private memory, what a process
  can really fill. `RLIMIT_NPROC` for processes: the kernel counts a uid's processes per user
  namespace, and the sandbox has its own, so the count starts at the sandbox's own processes;
  outside a sandbox it would count every process the person has, so an unsandboxed command gets
  none. The kernel never applies it to root: root's commands have no process limit without a
  cgroup, and the plan says so.
- **CPU time** is always `RLIMIT_CPU`, per process (no cgroup setting ends a command after N CPU
  seconds): SIGXCPU at the limit, SIGKILL a second later. `RLIMIT_CORE` 0, so a stopped command
  leaves no core file in the person's folder.
- **/dev/shm** is a tmpfs of its own with the size cap (`tools.sandbox`), and /dev itself is
  read-only, so neither can hold more than the cap.

A limit hit ends the command with a sentence naming the limit and its setting. Where the kernel
or the manager says which limit it was (SIGXCPU, which the kernel sends only at the CPU limit —
a program could send it to itself, and would be told it used its CPU time; the scope's
`oom-kill`), the sentence says so; where only the command's own words suggest it (MemoryError,
"Cannot fork", "error writing '/dev/shm/…': No space left on device"), it says "probably".

This module never raises a limit a setting gave, never claims a limit that is not held (the plan
says "not limited" and why), and never calls a failure a limit's when it cannot tell.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.manual import HealthCheck

log = logging.getLogger("chamberlain.tools.limits")

__all__ = [
    "CommandLimits",
    "LimitHit",
    "LimitWays",
    "Scopes",
    "explain",
    "limit_ways",
    "limits_health",
    "limits_plan",
    "with_rlimits",
]

MIB = 1024 * 1024
# The settings that hold each limit, named in every sentence about it.
SETTINGS = {
    "memory": "tools.command_memory_mb",
    "processes": "tools.command_max_processes",
    "cpu": "tools.command_cpu_s",
    "shm": "tools.command_shm_mb",
}
# How long finding a service manager may take, once per process.
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class CommandLimits:
    """The limits one command runs under (from the settings; these are their defaults)."""

    memory_mb: int = 1024
    max_processes: int = 128
    cpu_s: int = 60
    shm_mb: int = 64

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * MIB

    @property
    def shm_bytes(self) -> int:
        return self.shm_mb * MIB


@dataclass(frozen=True)
class LimitWays:
    """How limits are held on this machine. `scope` is the `systemd-run` command line that makes
    a cgroup scope (None: no service manager holds limits here), with `scope_env` the variables
    it needs to find its manager; `prlimit` the program that sets rlimits (None: not Linux, or
    util-linux missing); `root` whether commands run as root; `why` in words for doctor."""

    scope: tuple[str, ...] | None
    scope_env: tuple[tuple[str, str], ...]
    prlimit: str | None
    root: bool
    why: str

    @property
    def cgroup(self) -> bool:
        return self.scope is not None


@functools.lru_cache(maxsize=1)
def limit_ways() -> LimitWays:
    """How limits can be held here (found once per process)."""
    return find_ways(os.environ)


def find_ways(environ: Mapping[str, str]) -> LimitWays:
    """A cgroup scope when a service manager answers and holds its limits, else rlimits."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    prlimit = shutil.which("prlimit") if sys.platform.startswith("linux") else None
    scope, env, why = _find_scope(environ, root)
    if scope is None and prlimit is None:
        why += "; no prlimit (util-linux) either, so commands run without limits"
    elif scope is None:
        why += "; rlimits are used instead"
    return LimitWays(scope, env, prlimit, root, why)


def _find_scope(
    environ: Mapping[str, str], root: bool
) -> tuple[tuple[str, ...] | None, tuple[tuple[str, str], ...], str]:
    """The `systemd-run` command line that makes a limited scope here, what it needs from the
    environment, and in words why there is none. Quick where there is no manager: only a
    manager's socket makes it start anything."""
    if not sys.platform.startswith("linux"):
        return None, (), f"no cgroups on {sys.platform}"
    program = shutil.which("systemd-run")
    if program is None:
        return None, (), "systemd-run is not installed"
    if root:
        if not os.path.isdir("/run/systemd/system"):
            return None, (), "no systemd service manager runs here (as root)"
        scope: tuple[str, ...] = (program, "--scope", "--quiet")
        env: tuple[tuple[str, str], ...] = ()
    else:
        runtime = environ.get("XDG_RUNTIME_DIR", "")
        if not runtime or not os.path.exists(os.path.join(runtime, "bus")):
            return None, (), "no user service manager answers here (no session bus)"
        scope = (program, "--user", "--scope", "--quiet")
        env = (("XDG_RUNTIME_DIR", runtime),)
    # The probe starts a scope exactly as a command's is started (`Scopes.wrap`), asks for
    # limits and reads them back from inside: a manager that makes scopes but cannot hold memory
    # or process limits in them (cgroup v1, controllers not delegated to the person) would
    # otherwise look like one that can. It also checks the command does not get the variable
    # that found the manager.
    candidate = LimitWays(scope, env, None, root, "")
    script = (
        'p=$(sed -n "s/^0:://p" /proc/self/cgroup); '
        'cat "/sys/fs/cgroup$p/memory.max" "/sys/fs/cgroup$p/pids.max"; '
        'echo "${XDG_RUNTIME_DIR:-unset}"'
    )
    probe, program, probe_env = Scopes(
        CommandLimits(memory_mb=64, max_processes=16), candidate
    ).wrap(["/bin/sh", "-c", script], "/bin/sh", {"PATH": "/usr/bin:/bin"})
    try:
        done = subprocess.run(
            probe,
            executable=program,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            env=probe_env,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, (), f"the service manager did not make a scope ({exc})"
    if done.returncode != 0 or done.stdout.split() != [str(64 * MIB), "16", "unset"]:
        said = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0][:200]
        log.info("no cgroup scope for command limits: %s / %r", said, done.stdout[:200])
        return None, (), f"the service manager cannot hold memory and process limits ({said})"
    return scope, env, "a cgroup scope per command (systemd-run) holds memory and processes"


def _scope_properties(limits: CommandLimits) -> list[str]:
    return [
        *("-p", f"MemoryMax={limits.memory_bytes}"),
        *("-p", "MemorySwapMax=0"),
        *("-p", f"TasksMax={limits.max_processes}"),
    ]


# --- the plan a prompt shows ---------------------------------------------------------------------


def limits_plan(
    limits: CommandLimits,
    ways: LimitWays | None = None,
    *,
    sandboxed: bool = True,
    shm_capped: bool = True,
    own_users: bool = True,
) -> tuple[tuple[str, str], ...]:
    """(what, how much) for the call's CallPlan: exactly what will hold, and "not limited" with
    the reason where nothing does. `shm_capped`: the sandbox can give /dev/shm a size (a setuid
    bubblewrap cannot). `own_users`: the sandbox has a user namespace of its own, where the
    process limit counts only its processes."""
    ways = ways if ways is not None else limit_ways()
    if ways.cgroup:
        memory = f"{limits.memory_mb} MiB"
        processes = str(limits.max_processes)
    elif ways.prlimit is None:
        memory = processes = "not limited (no cgroup or rlimits here)"
    else:
        # RLIMIT_DATA: what a process can fill privately; shared mappings are not counted.
        memory = f"{limits.memory_mb} MiB private per process (shared memory not counted)"
        if ways.root:
            processes = "not limited (the kernel does not limit root's processes)"
        elif not sandboxed or not own_users:
            processes = "not limited (only a sandbox's own users count a command's own processes)"
        else:
            processes = str(limits.max_processes)
    cpu = (
        f"{limits.cpu_s} s per process"
        if ways.prlimit is not None
        else "not limited (no rlimits here)"
    )
    plan = [("memory", memory), ("processes", processes), ("CPU time", cpu)]
    if sandboxed:
        shm = f"{limits.shm_mb} MiB" if shm_capped else "not capped (setuid bubblewrap)"
        plan.append(("/dev/shm", shm))
    return tuple(plan)


def limits_health(limits: CommandLimits, ways: LimitWays | None = None) -> HealthCheck:
    """What `chamberlain doctor` says of the limits here: each one and how it is held. Not
    required: a limit that cannot be held here is said, and commands still run."""
    ways = ways if ways is not None else limit_ways()
    plan = limits_plan(limits, ways)
    words = ", ".join(f"{what} {value}" for what, value in plan)
    held = not any(value.startswith("not ") for _, value in plan)
    fix = ""
    if not held and ways.root and not ways.cgroup:
        fix = "run Chamberlain as a normal user (or where systemd runs) to limit processes too"
    elif not held:
        fix = "install util-linux (prlimit) on Linux to limit commands"
    return HealthCheck("command limits", held, f"{words}; {ways.why}", required=False, fix=fix)


# --- running under the limits -------------------------------------------------------------------


def with_rlimits(
    limits: CommandLimits,
    argv: Sequence[str],
    program: str,
    *,
    sandboxed: bool,
    ways: LimitWays | None = None,
) -> tuple[list[str], str]:
    """(argv, program) that set the rlimits and then run `program` with `argv`'s arguments.

    Inside the sandbox this runs after bubblewrap made its user namespace, which is what makes
    RLIMIT_NPROC count only the sandbox's processes. Both soft and hard limits are set; the
    command cannot raise them again (that takes CAP_SYS_RESOURCE, which it does not have).
    """
    ways = ways if ways is not None else limit_ways()
    if ways.prlimit is None:
        return list(argv), program
    options = [f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}", "--core=0"]
    if not ways.cgroup:
        options.append(f"--data={limits.memory_bytes}")
        if sandboxed and not ways.root:
            options.append(f"--nproc={limits.max_processes}")
    return [ways.prlimit, *options, "--", program, *argv[1:]], ways.prlimit


class Scopes:
    """The cgroup scopes of one command's stages: how each stage is started in its own, and,
    after it ended, whether the manager stopped it for its memory."""

    def __init__(self, limits: CommandLimits, ways: LimitWays) -> None:
        self.limits = limits
        self.ways = ways
        self.units: list[str] = []

    def wrap(
        self, argv: Sequence[str], program: str, env: Mapping[str, str]
    ) -> tuple[list[str], str, dict[str, str]]:
        """(argv, program, environment) that run the stage in a new limited scope. The scope's
        manager is found through XDG_RUNTIME_DIR, which the command itself never gets."""
        assert self.ways.scope is not None
        unit = f"chamberlain-cmd-{os.getpid()}-{secrets.token_hex(6)}.scope"
        self.units.append(unit)
        scope_env = dict(self.ways.scope_env)
        wrapped = [
            *self.ways.scope,
            f"--unit={unit}",
            *_scope_properties(self.limits),
            "--",
            *(("/usr/bin/env", *(f"--unset={name}" for name in scope_env)) if scope_env else ()),
            program,
            *argv[1:],
        ]
        return wrapped, self.ways.scope[0], {**env, **scope_env}

    def oom_killed(self, index: int) -> bool:
        """Whether the manager recorded that stage `index`'s scope ran out of memory. A scope
        that failed is kept by the manager until it is reset: this reads and resets it."""
        if self.ways.scope is None or index >= len(self.units):
            return False
        manager = [a for a in self.ways.scope if a == "--user"]
        # systemctl is installed beside systemd-run (both are systemd's).
        systemctl = os.path.join(os.path.dirname(self.ways.scope[0]), "systemctl")
        env = {"PATH": "/usr/bin:/bin", **dict(self.ways.scope_env)}
        unit = self.units[index]
        try:
            shown = subprocess.run(
                [systemctl, *manager, "show", "--property=Result", "--value", unit],
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
                env=env,
                stdin=subprocess.DEVNULL,
            )
            subprocess.run(
                [systemctl, *manager, "reset-failed", unit],
                capture_output=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
                env=env,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.info("could not ask the service manager how %s ended: %s", unit, exc)
            return False
        return shown.stdout.strip() == "oom-kill"


# --- what ended a command -----------------------------------------------------------------------


@dataclass(frozen=True)
class LimitHit:
    """A limit that ended (or, `certain` False, probably ended) a command: which, the setting
    that holds it, its value in words, and the sentence a person reads."""

    limit: str  # "memory", "processes", "cpu" or "shm"
    setting: str
    value: str
    certain: bool

    @property
    def sentence(self) -> str:
        what = {
            "memory": f"more than {self.value} of memory",
            "processes": f"more than {self.value} processes",
            "cpu": f"more than {self.value} of CPU time",
            "shm": f"more than {self.value} in /dev/shm",
        }[self.limit]
        if self.certain:
            return f"the command was stopped: it used {what} ({self.setting})"
        if self.limit == "shm":
            return (
                f"the command failed, probably because it filled /dev/shm, which holds at most "
                f"{self.value} ({self.setting})"
            )
        reached = {
            "memory": f"the memory limit of {self.value}",
            "processes": f"the limit of {self.value} processes",
            "cpu": f"the CPU time limit of {self.value}",
        }[self.limit]
        return f"the command failed, probably because it reached {reached} ({self.setting})"

    def as_data(self) -> dict[str, object]:
        return {
            "limit": self.limit,
            "setting": self.setting,
            "value": self.value,
            "certain": self.certain,
            "sentence": self.sentence,
        }


# What programs print when an allocation fails (Python, glibc and coreutils, bash, C++, Rust,
# Go, node) or when a process or thread cannot be made (EAGAIN from fork or clone).
_NO_MEMORY = re.compile(
    r"MemoryError|Cannot allocate memory|memory exhausted|out of memory|bad_alloc|"
    r"memory allocation of \d+ bytes failed|xmalloc: cannot allocate|heap out of memory",
    re.IGNORECASE,
)
# A full /dev/shm, where the program names it (a full /tmp or disk says the same words).
_SHM_FULL = re.compile(r"/dev/shm\S*.*No space left on device", re.IGNORECASE)
_NO_PROCESS = re.compile(
    r"Cannot fork|can't fork|fork: retry|fork failed|Resource temporarily unavailable|"
    r"can't start new thread|pthread_create|Cannot create thread",
    re.IGNORECASE,
)


def _signal_of(code: int | None, sandboxed: bool) -> int | None:
    """The signal that ended a stage: negative codes are the stage's own, and bubblewrap
    reports its program's as 128 + the signal (so could a program that exits with that code:
    the callers only trust it together with what else they know)."""
    if code is None:
        return None
    if code < 0:
        return -code
    if sandboxed and 128 < code < 128 + 65:
        return code - 128
    return None


def explain(
    limits: CommandLimits,
    ways: LimitWays,
    *,
    exit_codes: Sequence[int | None],
    cpu_s: Sequence[float],
    stderr: str,
    sandboxed: bool,
    scopes: Scopes | None = None,
) -> LimitHit | None:
    """Which limit, if any, ended a command that did not end on its own accord, from how its
    stages ended (`exit_codes`), the CPU seconds each used, and its error output."""
    if not exit_codes or all(code == 0 for code in exit_codes):
        return None
    if ways.prlimit is not None:
        for code, used in zip(exit_codes, cpu_s, strict=False):
            sig = _signal_of(code, sandboxed)
            # The kernel sends SIGXCPU only at the CPU time limit; SIGKILL comes a second later,
            # to a program that ignored SIGXCPU, and is the limit's only where the CPU seconds
            # say so (a sandbox's are not counted back through bubblewrap: 0 there).
            if sig == signal.SIGXCPU:
                return _hit("cpu", limits, certain=True)
            if sig == signal.SIGKILL and used >= limits.cpu_s + 1 - 0.05:
                return _hit("cpu", limits, certain=True)
    if scopes is not None:
        for index, code in enumerate(exit_codes):
            if _signal_of(code, sandboxed) is not None and scopes.oom_killed(index):
                return _hit("memory", limits, certain=True)
    memory_held = ways.cgroup or ways.prlimit is not None
    processes_held = ways.cgroup or (ways.prlimit is not None and sandboxed and not ways.root)
    if memory_held and _NO_MEMORY.search(stderr):
        return _hit("memory", limits, certain=False)
    if processes_held and _NO_PROCESS.search(stderr):
        return _hit("processes", limits, certain=False)
    if sandboxed and _SHM_FULL.search(stderr):
        return _hit("shm", limits, certain=False)
    if ways.cgroup and any(_signal_of(c, sandboxed) == signal.SIGKILL for c in exit_codes):
        # The kernel's OOM killer in a scope the manager did not mark (or could not be asked).
        return _hit("memory", limits, certain=False)
    return None


def _hit(limit: str, limits: CommandLimits, *, certain: bool) -> LimitHit:
    value = {
        "memory": f"{limits.memory_mb} MiB",
        "processes": str(limits.max_processes),
        "cpu": f"{limits.cpu_s} s",
        "shm": f"{limits.shm_mb} MiB",
    }[limit]
    return LimitHit(limit, SETTINGS[limit], value, certain)

"""The system tools: run a command (`system_execute`), open a file or a link (`open_path`,
`open_url`) with the desktop's default application.

`system_execute` runs programs with arguments, never through a shell, and always inside the OS
sandbox `tools.sandbox` builds from the call's plan (or, only where none works and the user
opted in, unconfined and warned). The command line is read by `tools.commands` (the bash
grammar, then the rules): one command or a pipeline of commands, each a real process in its own
sandbox; pipes between them are OS pipes made here. Every process starts in its own session and
process group, with no standard input and no controlling terminal (so nothing can prompt for a
password), in a working folder inside the configured roots, with an environment built from an
allowlist. A time limit kills every process group of the command (SIGTERM, then SIGKILL); the
sandbox's PID namespace ends with it, so nothing the command started outlives it, even in a
session of its own. Output is capped per stream and the truncation is marked. Memory, processes
and CPU time are limited per command (`tools.limits`), and a limit that ends one is named in its
result.

`targets()` reports the command's class and line (`readonly:`, `command:` or `code:<argv>`),
its folder (`cwd:`), the other places the sandbox mounts for it (`dir:`) and `net:` when it gets
the network (see `tools.scopes`), and refuses what the rules never allow before anyone is asked.
`run()` checks the line again and runs exactly what was checked, in exactly that sandbox; if
the verdict changed in between (a symlink swapped while the user read the prompt), it does not
run.

This module must never run anything through a shell, never run a command the rules did not pass,
never give a command standard input or a terminal, and never log command output (lengths and
exit codes only, at debug level).
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import logging
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field

from tools.arguments import NOT_BLANK, ToolArguments
from tools.changes import Changes, changes_of
from tools.commands.assess import CommandCheck, assess_command, command_target
from tools.commands.locate import locate_program
from tools.commands.options import options_and_operands
from tools.commands.parse import MAX_COMMAND_CHARS, argv_text, parse_command
from tools.commands.readonly import readonly_problem
from tools.commands.wrappers import unwrap
from tools.limits import (
    CommandLimits,
    LimitHit,
    LimitWays,
    Scopes,
    explain,
    limit_ways,
    limits_health,
    limits_plan,
    with_rlimits,
)
from tools.manual import (
    CallPlan,
    Capability,
    HealthCheck,
    Prepared,
    RequestWords,
    Tool,
    ToolError,
    ToolManual,
    ToolRefused,
    ToolResult,
    typed_tool,
)
from tools.netns import (
    LOOPBACK_NEEDS_PASTA,
    NetworkHelper,
    StageNetwork,
    find_helper,
    network_helper,
)
from tools.paths import MAX_PATH_CHARS, is_within, resolve_path
from tools.private import PrivatePlaces, private_places
from tools.registry import ToolConfig
from tools.sandbox import (
    HIDDEN_TOP,
    SandboxPlan,
    SandboxStatus,
    command_environment,
    hidden_roots,
    installation_places,
    sandbox_status,
    wrap_stage,
)
from tools.scopes import WHOLE_HOME, exact_command_scope
from tools.startup_places import StartupPlace, place_of, places_in
from tools.stop import Stopped, current_stop

log = logging.getLogger("chamberlain.tools.system")

__all__ = [
    "KILL_GRACE_S",
    "CommandOutcome",
    "Opener",
    "command_target",
    "make_system_tools",
    "normalise_url",
    "parse_command",
    "run_argv",
    "system_opener",
]

# Where a command runs when no folder was named: an empty scratch folder, made for the run and
# removed after it, shown at this path inside the sandbox (and used by the rules for relative
# paths). Never the home: a command sees only the folders the person or the prompt named.
SCRATCH = Path("/tmp/.chamberlain-scratch")
# After SIGTERM, how long the command's processes get to exit before SIGKILL.
KILL_GRACE_S = 1.0
# How often a running command looks at the turn's Stop.
STOP_POLL_S = 0.05
# How long the opener waits for xdg-open / open to report a failure before assuming success.
OPENER_WAIT_S = 5.0
MAX_URL_CHARS = 2048
_READ_CHUNK = 64 * 1024

# --- environment --------------------------------------------------------------------------------

# What a desktop application needs to reach the user's session (open_path / open_url only).
_DESKTOP_NAMES = frozenset(
    {
        "DBUS_SESSION_BUS_ADDRESS", "XDG_SESSION_TYPE", "XDG_SESSION_DESKTOP", "XDG_SESSION_ID",
        "DESKTOP_SESSION", "XDG_CURRENT_DESKTOP", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
        "XDG_RUNTIME_DIR",
    }
)  # fmt: skip


# --- running a pipeline -------------------------------------------------------------------------


@dataclass
class _Stream:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        # An incremental decoder drops a character the cap cut in half instead of mangling it.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(bytes(self.data), final=not self.truncated)
        if self.truncated:
            text += f"\n… [truncated: {self.total:,} bytes, first {self.cap:,} shown]"
        return text


@dataclass(frozen=True)
class CommandOutcome:
    """What running a command produced."""

    exit_codes: tuple[int | None, ...]
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    duration_s: float
    # The limit that ended the command (tools.limits), when one did or probably did.
    limit: LimitHit | None = None
    # The CPU seconds each stage used, with everything it waited for.
    cpu_s: tuple[float, ...] = ()

    @property
    def exit_code(self) -> int | None:
        """The last stage's exit code, as a shell reports a pipeline's (negative: a signal)."""
        return self.exit_codes[-1] if self.exit_codes else None

    @property
    def truncated(self) -> bool:
        return self.stdout_truncated or self.stderr_truncated


def _signal_groups(procs: Sequence[subprocess.Popen[bytes]], sig: int) -> None:
    # Each stage leads its own process group (pgid == pid). It is signalled only while its
    # leader is unreaped, so the group id cannot have been reused by an unrelated process.
    for proc in procs:
        if proc.returncode is not None:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


class _ExitWatch:
    """Knows which stage leaders have exited, without reaping them (pidfd where there is one)."""

    def __init__(self, procs: Sequence[subprocess.Popen[bytes]], sel: selectors.BaseSelector):
        self.procs = list(procs)
        self.exited: set[int] = set()
        self.pidfds: dict[int, int] = {}
        self._sel = sel
        pidfd_open = getattr(os, "pidfd_open", None)
        for proc in procs:
            if pidfd_open is None:
                break
            try:
                fd = pidfd_open(proc.pid)
            except OSError:
                break
            self.pidfds[proc.pid] = fd
            sel.register(fd, selectors.EVENT_READ, ("pid", proc.pid))
        if len(self.pidfds) != len(self.procs):
            self.close()

    @property
    def polling(self) -> bool:
        return not self.pidfds

    def mark(self, pid: int) -> None:
        self.exited.add(pid)
        fd = self.pidfds.pop(pid, None)
        if fd is not None:
            self._sel.unregister(fd)
            os.close(fd)

    def poll(self) -> None:
        """Without pidfds: ask the kernel, still without reaping where waitid allows it."""
        for proc in self.procs:
            if proc.pid in self.exited:
                continue
            waitid = getattr(os, "waitid", None)
            if waitid is not None:
                try:
                    info = waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    info = True
                if info is not None:
                    self.exited.add(proc.pid)
            elif proc.poll() is not None:
                self.exited.add(proc.pid)

    @property
    def all_exited(self) -> bool:
        return len(self.exited) == len(self.procs)

    def close(self) -> None:
        for pid in list(self.pidfds):
            fd = self.pidfds.pop(pid)
            self._sel.unregister(fd)
            os.close(fd)


def _spawn(
    stages: Sequence[Sequence[str]],
    executables: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    limited: _Limited | None = None,
    networks: Sequence[StageNetwork | None] = (),
) -> tuple[list[subprocess.Popen[bytes]], int, int]:
    """Start every stage, connected by OS pipes; returns the processes and the read ends.
    With `limited`, each stage starts under the command's limits: in a cgroup scope of its own
    where one can be had, and with rlimits set here when it has no sandbox to set them in."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    procs: list[subprocess.Popen[bytes]] = []
    previous: int | None = None
    starting = stages[0][0]
    try:
        for index, (argv, executable) in enumerate(zip(stages, executables, strict=True)):
            starting = argv[0]
            last = index == len(stages) - 1
            if last:
                pipe_r, pipe_w = -1, out_w
            else:
                pipe_r, pipe_w = os.pipe()
            stage_env = dict(env)
            if limited is not None:
                argv, executable, stage_env = limited.wrap(argv, executable, stage_env)
            # A networked stage's sandbox waits for its own network (tools.netns) to be attached.
            network = networks[index] if index < len(networks) else None
            try:
                proc = subprocess.Popen(
                    list(argv),
                    executable=executable,
                    stdin=previous if previous is not None else subprocess.DEVNULL,
                    stdout=pipe_w,
                    stderr=err_w,
                    cwd=cwd,
                    env=stage_env,
                    shell=False,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=network.pass_fds if network is not None else (),
                )
            finally:
                if previous is not None:
                    os.close(previous)
                    previous = None
                if not last:
                    os.close(pipe_w)
            procs.append(proc)
            if network is not None:
                network.attach()
            previous = pipe_r if not last else None
    except OSError as exc:
        if previous is not None:
            os.close(previous)
        _signal_groups(procs, signal.SIGKILL)
        for proc in procs:
            proc.wait()
        os.close(out_r)
        os.close(err_r)
        raise ToolError(f"Could not start {starting}: {exc.strerror or exc}") from exc
    finally:
        os.close(out_w)
        os.close(err_w)
    return procs, out_r, err_r


def run_argv(
    stages: Sequence[Sequence[str]],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_cap: int,
    executables: Sequence[str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    limits: CommandLimits | None = None,
    sandboxed: bool = True,
    ways: LimitWays | None = None,
    networks: Sequence[StageNetwork | None] = (),
) -> CommandOutcome:
    """Run a pipeline of argv lists (no shell) and collect its output, within `timeout_s`.

    With `limits`, under them (tools.limits): a sandboxed stage's rlimits are set inside its
    sandbox (`SandboxPlan.limits`), an unsandboxed one's here; a cgroup scope is made here for
    each stage where one can be had (`ways`: how, default this machine's). A limit that ended
    it is named in the outcome's `limit`. `networks` gives each networked stage its own network
    (tools.netns), attached once its sandbox has started and before its command runs.
    """
    if sys.platform == "win32":
        raise ToolError("Running commands is not supported on Windows yet")
    exes = list(executables) if executables is not None else [s[0] for s in stages]
    limited: _Limited | None = None
    if limits is not None:
        limited = _Limited(limits, ways if ways is not None else limit_ways(), sandboxed)
    started = clock()
    procs, out_r, err_r = _spawn(stages, exes, cwd, env, limited, networks)
    streams = {out_r: _Stream(output_cap), err_r: _Stream(output_cap)}
    sel = selectors.DefaultSelector()
    for fd in streams:
        sel.register(fd, selectors.EVENT_READ, ("stream", fd))
    watch = _ExitWatch(procs, sel)
    open_fds = set(streams)
    deadline = started + timeout_s
    timed_out = False
    stragglers_killed = False
    # The person's Stop ends the command as the time limit would; the wait below wakes often
    # enough to notice it (a stop costs at most STOP_POLL_S more).
    stop = current_stop()
    stopped = False

    def pump(wait: float) -> None:
        for key, _ in sel.select(wait):
            kind, value = key.data
            if kind == "pid":
                watch.mark(value)
                continue
            chunk = os.read(value, _READ_CHUNK)
            if chunk:
                streams[value].feed(chunk)
            else:
                sel.unregister(value)
                os.close(value)
                open_fds.discard(value)

    try:
        while open_fds or not watch.all_exited:
            if watch.polling:
                watch.poll()
            if watch.all_exited and not stragglers_killed:
                # The leaders are gone; whatever they left in their groups would hold the pipes
                # open (and outlive the command): end it. Something that escaped to a session
                # of its own may still hold them: stop reading shortly after.
                _signal_groups(procs, signal.SIGKILL)
                stragglers_killed = True
                deadline = min(deadline, clock() + KILL_GRACE_S)
            remaining = deadline - clock()
            if remaining <= 0:
                timed_out = not watch.all_exited
                break
            if stop is not None:
                if stop.stopped:
                    stopped = timed_out = not watch.all_exited
                    break
                remaining = min(remaining, STOP_POLL_S)
            pump(min(remaining, 0.01) if watch.polling else remaining)
        if timed_out:
            log.debug(
                "command %s; ending its process groups",
                "stopped" if stopped else f"timed out after {timeout_s:.1f} s",
            )
            _signal_groups(procs, signal.SIGTERM)
            grace_end = clock() + KILL_GRACE_S
            while not watch.all_exited and clock() < grace_end:
                if watch.polling:
                    watch.poll()
                pump(0.01 if watch.polling else max(0.0, grace_end - clock()))
            _signal_groups(procs, signal.SIGKILL)
            drain_end = clock() + 0.5
            while open_fds and clock() < drain_end:
                pump(max(0.0, drain_end - clock()))
    finally:
        watch.close()
        for fd in list(open_fds):
            sel.unregister(fd)
            os.close(fd)
        sel.close()
        codes: list[int | None] = []
        cpu: list[float] = []
        for proc in procs:
            code, used = _reap(proc, 5.0)
            if code is None:
                log.warning("a command process (pid %d) did not end after SIGKILL", proc.pid)
            codes.append(code)
            cpu.append(used)
    out, err = streams[out_r], streams[err_r]
    duration = clock() - started
    hit: LimitHit | None = None
    if limited is not None and not timed_out:
        hit = explain(
            limited.limits,
            limited.ways,
            exit_codes=codes,
            cpu_s=cpu,
            stderr=err.text(),
            sandboxed=sandboxed,
            scopes=limited.scopes,
        )
        if hit is not None:
            log.info("a command ended at a limit: %s", hit.sentence)
    log.debug(
        "command ended: exit %s, %d stdout bytes, %d stderr bytes, %.3f s",
        codes[-1] if codes else None,
        out.total,
        err.total,
        duration,
    )
    if stopped:
        raise Stopped("The command was stopped; its processes were ended.")
    return CommandOutcome(
        exit_codes=tuple(codes),
        stdout=out.text(),
        stderr=err.text(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        timed_out=timed_out,
        duration_s=round(duration, 4),
        limit=hit,
        cpu_s=tuple(round(c, 3) for c in cpu),
    )


class _Limited:
    """How one command's stages are started under its limits (see `_spawn`)."""

    def __init__(self, limits: CommandLimits, ways: LimitWays, sandboxed: bool) -> None:
        self.limits = limits
        self.ways = ways
        self.sandboxed = sandboxed
        self.scopes = Scopes(limits, ways) if ways.cgroup else None

    def wrap(
        self, argv: Sequence[str], program: str, env: dict[str, str]
    ) -> tuple[list[str], str, dict[str, str]]:
        if not self.sandboxed:
            argv, program = with_rlimits(self.limits, argv, program, sandboxed=False)
        if self.scopes is not None:
            return self.scopes.wrap(argv, program, env)
        return list(argv), program, env


def _reap(proc: subprocess.Popen[bytes], wait_s: float) -> tuple[int | None, float]:
    """Wait for a stage leader (at most `wait_s`): its exit code and the CPU seconds it and
    everything it waited for used (wait4's rusage; what tells a CPU limit from a signal)."""
    end = time.monotonic() + wait_s
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            # Reaped elsewhere (SIGCHLD ignored, say): Popen.wait would then report 0 too.
            return (proc.returncode if proc.returncode is not None else 0), 0.0
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() >= end:
            return None, 0.0
        time.sleep(0.005)


def _find_program(word: str, env: Mapping[str, str], cwd: Path) -> str:
    if "/" in word:
        path = Path(word) if os.path.isabs(word) else cwd / word
        if not path.is_file():
            raise ToolError(f"The program {word!r} was not found ({path} is not a file)")
        if not os.access(path, os.X_OK):
            raise ToolError(f"{path} is not executable")
        return os.fspath(path)
    found = shutil.which(word, path=env.get("PATH", ""))
    if found is None:
        raise ToolError(
            f"The program {word!r} was not found on this machine (not in any folder of PATH)"
        )
    return found


# --- arguments ----------------------------------------------------------------------------------


# --- system_execute -----------------------------------------------------------------------------


def _render(check: CommandCheck, outcome: CommandOutcome, timeout_s: float) -> str:
    lines = [f"$ {argv_text(check.stages)}"]
    if outcome.stdout:
        lines.append(outcome.stdout.rstrip("\n"))
    if outcome.stderr:
        lines.append("--- error output ---")
        lines.append(outcome.stderr.rstrip("\n"))
    code = outcome.exit_code
    if code is not None and code < 0:
        try:
            status = f"ended by signal {signal.Signals(-code).name}"
        except ValueError:
            status = f"ended by signal {-code}"
    else:
        status = f"exit code {code}"
    footer = f"[{status} · {outcome.duration_s:.2f} s"
    if outcome.timed_out:
        footer += f" · stopped at the {timeout_s:g} s time limit"
    if outcome.truncated:
        footer += " · output truncated"
    lines.append(footer + "]")
    if outcome.limit is not None:
        lines.append(f"[{outcome.limit.sentence}]")
    return "\n".join(lines)


@dataclass(frozen=True)
class _Checked:
    """One command call, checked: the rules' verdict, where it runs, and its sandbox."""

    check: CommandCheck
    cwd: Path
    env: dict[str, str]
    # The program file each stage runs, found once: what ran is what was checked.
    executables: tuple[str, ...]
    targets: tuple[str, ...]
    plan: SandboxPlan | None  # None: run without a sandbox (the user turned that on)
    # What the prompt and the audit render: argv as run, folders, writes, changes, startup.
    call_plan: CallPlan = field(default_factory=CallPlan)
    # True: no folder was named, and the command runs in an empty scratch folder (`SCRATCH`).
    scratch: bool = False


@dataclass(frozen=True)
class _Writes:
    """Where a command may write, what it will change, and the startup places it names."""

    places: tuple[Path, ...] = ()
    changes: tuple[Path, ...] = ()
    known: bool = True
    startup: tuple[StartupPlace, ...] = ()
    # Startup places inside a writable folder that the call did not name: held read-only.
    keep: tuple[Path, ...] = ()


class _CommandTool:
    """system_execute: the checks `targets()` made are the checks `run()` holds the line to."""

    def __init__(
        self,
        config: ToolConfig,
        home: Path | None,
        environ: Mapping[str, str] | None,
        sandbox: SandboxStatus | None = None,
        network: NetworkHelper | None = None,
    ) -> None:
        self.config = config
        self._home = home
        self._environ = environ
        self._sandbox = sandbox
        self._network = network

    @property
    def home(self) -> Path:
        return resolve_path(os.fspath(self._home)) if self._home is not None else Path.home()

    @property
    def sandbox(self) -> SandboxStatus:
        return self._sandbox if self._sandbox is not None else sandbox_status()

    @property
    def network(self) -> NetworkHelper:
        """The user-mode networking a networked stage gets (tools.netns)."""
        return self._network if self._network is not None else network_helper()

    @property
    def forwarder(self) -> NetworkHelper:
        """The helper of a stage that names ports of this computer's loopback: pasta only."""
        if self._network is not None and self._network.kind == "pasta":
            return self._network
        return find_helper(prefer=("pasta",))

    def _refuse_without_network(self, local: bool = False) -> None:
        """A command that needs the network is refused where it cannot have one of its own:
        it never gets the computer's own network instead."""
        if local and not self.forwarder.available:
            raise ToolRefused(
                f"refused: {LOOPBACK_NEEDS_PASTA}. To get it: install passt (Debian/Ubuntu: "
                "sudo apt install passt) and start Chamberlain again."
            )
        helper = self.network
        if not helper.available:
            raise ToolRefused(
                "refused: this command needs the network, and a command gets only a network of "
                f"its own, which cannot be made here: {helper.why}. To get one: {helper.remedy}."
            )

    def private(self) -> PrivatePlaces:
        return private_places(self.home, self.config.app_dirs)

    def roots(self) -> list[Path]:
        if self.config.command_roots is None:
            return [self.home]
        return [resolve_path(os.fspath(r)) for r in self.config.command_roots]

    def cwd(self, args: SystemExecuteArguments) -> Path | None:
        """The folder the call named (None: none, and it runs in an empty scratch folder)."""
        raw = args.cwd
        roots = self.roots()
        if raw is None or not raw.strip():
            return None
        try:
            path = resolve_path(raw, home=self.home, cwd=self.home)
        except ValueError as exc:
            raise ToolError(f"Cannot use the folder {raw.strip()[:200]!r}: {exc}") from exc
        if not any(is_within(path, root) for root in roots):
            shown = ", ".join(os.fspath(r) for r in roots)
            raise ToolRefused(
                f"refused: commands may only run in {shown} (or a folder inside); {path} is not"
            )
        if not path.is_dir():
            raise ToolError(f"{path} is not an existing folder")
        return path

    def assess(self, args: SystemExecuteArguments) -> _Checked:
        """The rules' verdict, the folder, the environment, the targets and the sandbox."""
        line = args.command
        status = self.sandbox
        if not status.available and not self.config.unsandboxed_commands:
            # What is missing and how to get it; never the unsandboxed setting as the way out.
            remedy = f" To get one: {status.remedy}." if status.remedy else ""
            raise ToolRefused(
                "refused: commands run only inside a sandbox, and there is none here: "
                f"{status.why}.{remedy}"
            )
        named = self.cwd(args)
        cwd = named if named is not None else SCRATCH
        private = self.private()
        env = self.environment(cwd)
        check = assess_command(
            line,
            cwd=cwd,
            home=self.home,
            protected=self.config.protected_paths,
            private=private,
            search_path=env["PATH"],
        )
        executables = tuple(_find_program(stage[0], env, cwd) for stage in check.stages)
        places = _mounted_places(check.paths, cwd, self.home)
        # Only what was named is visible: the folder the call names (never the home by
        # default) and the places its arguments name.
        visible = (named, *places) if named is not None else tuple(places)
        programs = installation_places(executables, self.home, visible)
        writes = self._writes(check, cwd, visible, env["PATH"], private)
        target = check.target
        if writes.startup and check.code is None:
            # A startup place runs later, outside any sandbox: only a once grant may allow it,
            # and only when the person typed the line (as for code that cannot be shown).
            target = "code:" + target.split(":", 1)[1]
        shown = os.fspath(named) if named is not None else ""
        # Every place the command can see is a target: the prompt names it, the grant covers it.
        targets = [target, f"cwd:{shown}", *(f"dir:{p}" for p in (*places, *programs))]
        if any(is_within(self.home, p) for p in visible):
            # The whole home: no read-only grant covers it, only one for exactly this line.
            targets.append(WHOLE_HOME)
        if check.network:
            targets.append("net:")
            targets += [f"net:localhost:{p}" for p in _ports(check)]
            if status.available and sys.platform.startswith("linux"):
                self._refuse_without_network(bool(check.local_ports))
        plan: SandboxPlan | None = None
        if status.available:
            plan = SandboxPlan(
                cwd=cwd,
                home=self.home,
                read=(*visible, *programs),
                write=writes.places,
                network=check.network,
                private=private,
                hide=tuple(self.config.app_dirs),
                keep=writes.keep,
                limits=self.config.command_limits,
            )
        call_plan = CallPlan(
            stages=tuple(
                (exe, *stage[1:]) for stage, exe in zip(check.stages, executables, strict=True)
            ),
            cwd=os.fspath(named) if named is not None else None,
            reads=tuple(os.fspath(p) for p in (*visible, *programs) if p not in writes.places),
            writes=tuple(os.fspath(p) for p in writes.places),
            files=tuple(os.fspath(p) for p in _operands(check, cwd, self.home)),
            changes=tuple(os.fspath(p) for p in writes.changes),
            changes_known=writes.known,
            startup=tuple((os.fspath(p.path), p.when) for p in writes.startup),
            network_stages=check.network_stages,
            network=(
                ("internet", *(f"127.0.0.1:{p}" for p in _ports(check))) if check.network else ()
            ),
            limits=limits_plan(
                self.config.command_limits,
                sandboxed=plan is not None,
                shm_capped=not status.setuid,
                own_users=status.own_users,
            ),
        )
        return _Checked(
            check,
            cwd,
            env,
            executables,
            tuple(targets),
            plan,
            call_plan=call_plan,
            scratch=named is None,
        )

    def _writes(
        self,
        check: CommandCheck,
        cwd: Path,
        visible: Sequence[Path],
        search_path: str,
        private: PrivatePlaces,
    ) -> _Writes:
        """What the command may change: nothing for a read-only one; for a program that writes
        wherever it is told (`tools.changes`) only its destination; else what it names. The
        startup places it would reach are named (the prompt says when they run) or held."""
        if check.readonly:
            return _Writes()
        places: list[Path] = []
        changed: list[Path] = []
        known = True
        generic = False

        def resolve(raw: str) -> Path | None:
            try:
                return resolve_path(raw, home=self.home, cwd=cwd)
            except ValueError:
                return None

        for stage in check.stages:
            chain = unwrap(stage)
            if readonly_problem(chain, lambda w: locate_program(w, search_path, cwd)) is None:
                continue
            inner = chain[-1]
            found: Changes | None = changes_of(inner.name, inner.args, cwd, resolve)
            if found is None:
                generic = True
                continue
            known = known and found.known
            changed += found.files
            for destination in found.destinations:
                if is_within(destination, SCRATCH) and cwd == SCRATCH:
                    continue  # the scratch folder is writable anyway, and is nobody's
                owner = next((v for v in visible if is_within(destination, v)), None)
                if owner is None:
                    continue  # not a place it sees: it cannot write there at all
                while not os.path.lexists(destination) and destination != owner:
                    destination = destination.parent
                places.append(destination)
        if generic:
            places += visible
        writable = _outermost(places)
        named: dict[Path, StartupPlace] = {}
        for path in (*writable, *changed, *(p for p in check.paths if _inside_any(p, writable))):
            hit = place_of(path, self.home, self.config.app_dirs)
            if hit is not None:
                named.setdefault(hit.path, hit)
        keep: list[Path] = []
        too_big: list[Path] = []
        for folder in writable:
            if not folder.is_dir():
                continue
            inside = places_in(folder, self.home, self.config.app_dirs, skip=private.all())
            if inside is None:
                # Too many folders to be sure no repository hides inside: seen read-only.
                log.info("a writable folder is too big to search for startup places; read-only")
                too_big.append(folder)
                continue
            keep += [p.path for p in inside if not any(is_within(p.path, n) for n in named)]
        writable = [w for w in writable if w not in too_big]
        return _Writes(
            places=tuple(writable),
            changes=tuple(dict.fromkeys(changed)),
            known=known,
            startup=tuple(named.values()),
            keep=tuple(dict.fromkeys(keep)),
        )

    def prepare(self, args: SystemExecuteArguments) -> Prepared:
        """Check the call once; the result is what the runner checks and `run_checked` runs."""
        checked = self.assess(args)
        return Prepared.of(
            args, checked.targets, checked.check.reversibility, checked, checked.call_plan
        )

    def user_scopes(self, words: RequestWords) -> list[str]:
        """The command line the user typed, in the folder they named (none named: the empty
        scratch folder such a call runs in, shown as no folder)."""
        if not words.command:
            return []
        try:
            cwd = resolve_path(words.cwd, home=self.home, cwd=self.home) if words.cwd else None
            check = assess_command(
                words.command,
                cwd=cwd if cwd is not None else SCRATCH,
                home=self.home,
                protected=self.config.protected_paths,
            )
        except (ToolError, ValueError):
            return []  # a line the rules refuse names no scope; the runner says why
        where = os.fspath(cwd) if cwd is not None else ""
        return [exact_command_scope(argv_text(check.stages), where)]

    def health(self) -> list[HealthCheck]:
        try:
            parse_command("echo ok")
        except ToolError as exc:  # the grammar did not load: no command can be judged, none runs
            parser = HealthCheck("commands", False, f"the command parser does not work: {exc}")
        else:
            parser = HealthCheck("commands", True, "bash grammar loaded; no shell is used")
        status = self.sandbox
        if status.available:
            network = self._network_health()
            walls = HealthCheck(
                "command sandbox",
                network is None,
                f"{status.why}: commands see only the folders they name, never credentials or "
                "Chamberlain's files, and no network unless they need it, "
                + (
                    f"then one of their own ({self.network.why}: internet only, never this "
                    "computer's services)"
                    if network is None
                    else f"and a command that needs it is refused: {network}"
                ),
                required=network is None,
                fix="" if network is None else self.network.remedy,
            )
        elif self.config.unsandboxed_commands:
            walls = HealthCheck(
                "command sandbox",
                False,
                f"{status.why}. WARNING: tools.unsandboxed_commands is on, so commands run "
                "unconfined and can read or change anything you can",
                fix=status.remedy,
            )
        else:
            walls = HealthCheck(
                "command sandbox",
                False,
                f"{status.why}; commands are refused until a sandbox works",
                fix=status.remedy,
            )
        return [parser, walls, limits_health(self.config.command_limits)]

    def _network_health(self) -> str | None:
        """Why a networked command cannot get a network of its own here (None: it can): the
        helper is found, then a real sandbox with it must see a default route of its own."""
        if not sys.platform.startswith("linux"):
            return None
        helper = self.network
        if not helper.available:
            return helper.why
        place = Path(tempfile.mkdtemp(prefix="chamberlain-netprobe-"))
        try:
            plan = SandboxPlan(cwd=place, home=place, read=(place,), network=True)
            with StageNetwork(helper) as network:
                argv, exe = wrap_stage(plan, ["cat", "/proc/net/route"], "/bin/cat", network)
                outcome = run_argv(
                    [argv],
                    cwd=place,
                    env={"PATH": "/usr/bin:/bin"},
                    timeout_s=10.0,
                    output_cap=64 * 1024,
                    executables=[exe],
                    networks=[network],
                )
        except (ToolError, OSError, RuntimeError) as exc:
            return f"{helper.kind} could not give a test command a network ({exc})"
        finally:
            shutil.rmtree(place, ignore_errors=True)
        routes = [line.split() for line in outcome.stdout.splitlines()[1:]]
        if outcome.exit_code != 0 or not any(r[1:2] == ["00000000"] for r in routes):
            said = (outcome.stderr.strip().splitlines() or [f"exit {outcome.exit_code}"])[-1]
            return f"{helper.kind} gave a test command no route out ({said[:200]})"
        return None

    def environment(self, cwd: Path) -> dict[str, str]:
        source = self._environ if self._environ is not None else os.environ
        return command_environment(source, home=self.home, cwd=cwd)

    def run_checked(self, args: SystemExecuteArguments, prepared: Prepared) -> ToolResult:
        """Run exactly the checked command in exactly its sandbox.

        The line is checked once more first, only to notice a change (a link it names swapped
        while the user read the prompt): then nothing runs. What runs is the prepared plan.
        """
        fresh = prepared.plan
        if not isinstance(fresh, _Checked):
            raise ToolError("system_execute was given a call it did not prepare; it was not run")
        if self.assess(args).targets != fresh.targets:
            raise ToolError(
                "The command means something else now than when it was checked (a file or link "
                "it names changed); it was not run. Ask again to check it anew."
            )
        with _scratch_folder(fresh.scratch) as scratch:
            outcome = self._run(fresh, scratch)
        check, cwd = fresh.check, fresh.cwd
        walls = fresh.plan.describe() if fresh.plan is not None else "no sandbox"
        data = {
            "argv": check.argv,
            "exit_code": outcome.exit_code,
            "exit_codes": list(outcome.exit_codes),
            "stdout": outcome.stdout,
            "stderr": outcome.stderr,
            "truncated": outcome.truncated,
            "timed_out": outcome.timed_out,
            "duration_s": outcome.duration_s,
            "reversibility": check.reversibility,
            "cwd": None if fresh.scratch else os.fspath(cwd),
            "sandbox": walls,
            "limit": outcome.limit.as_data() if outcome.limit is not None else None,
        }
        return ToolResult(
            data=data,
            text=_render(check, outcome, self.config.command_timeout_s),
            truncated=outcome.truncated,
            meta={
                "target": check.target,
                "readonly": check.readonly,
                "reversibility": check.reversibility,
                "reason": check.reason,
                "sandbox": walls,
            },
        )

    def _stage_network(self, check: CommandCheck, index: int) -> StageNetwork:
        """Stage `index`'s own network: the internet, and the ports of this computer's loopback
        its own arguments name (through pasta), nothing else."""
        ports = [port for stage, port in check.local_ports if stage == index]
        if ports:
            return StageNetwork(self.forwarder, ports)
        return StageNetwork(self.network)

    def _run(self, fresh: _Checked, scratch: Path | None) -> CommandOutcome:
        check, cwd, plan = fresh.check, fresh.cwd, fresh.plan
        if scratch is not None:
            cwd = scratch
            if plan is not None:
                plan = dataclasses.replace(plan, scratch=scratch)
        executables = list(fresh.executables)
        stages: list[list[str]] = [list(stage) for stage in check.stages]
        with contextlib.ExitStack() as held:
            networks: list[StageNetwork | None] = []
            if plan is not None:
                # Only the stages that need the network get one, each its own (tools.netns);
                # the others have none (`curl … | tar x`: tar none).
                per_stage = [
                    dataclasses.replace(plan, network=index in check.network_stages)
                    for index in range(len(stages))
                ]
                networks = [
                    held.enter_context(self._stage_network(check, index))
                    if each.network and sys.platform.startswith("linux")
                    else None
                    for index, each in enumerate(per_stage)
                ]
                # Inside the sandbox the scratch folder is at SCRATCH, where the rules saw it.
                wrapped = [
                    wrap_stage(each, stage, exe, network)
                    for each, stage, exe, network in zip(
                        per_stage, stages, executables, networks, strict=True
                    )
                ]
                stages = [argv for argv, _ in wrapped]
                executables = [exe for _, exe in wrapped]
            else:
                log.warning("running a command WITHOUT a sandbox (tools.unsandboxed_commands on)")
            log.debug("running a %d-stage command in %s", len(stages), cwd)
            return run_argv(
                stages,
                cwd=cwd,
                env=fresh.env,
                timeout_s=self.config.command_timeout_s,
                output_cap=self.config.command_output_cap,
                executables=executables,
                limits=self.config.command_limits,
                sandboxed=plan is not None,
                networks=networks,
            )


def _ports(check: CommandCheck) -> list[int]:
    """The ports of this computer's loopback the command's networked stages name, each once."""
    return list(dict.fromkeys(port for _, port in check.local_ports))


@contextlib.contextmanager
def _scratch_folder(wanted: bool) -> Iterator[Path | None]:
    """An empty folder of its own for a call that named none (None when it named one), removed
    with whatever the command left in it."""
    if not wanted:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="chamberlain-scratch-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """Each path once, none inside another (the outer one covers it)."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(is_within(path, k) for k in kept):
            kept.append(path)
    return kept


def _inside_any(path: Path, folders: Sequence[Path]) -> bool:
    return any(is_within(path, f) for f in folders)


def _operands(check: CommandCheck, cwd: Path, home: Path) -> list[Path]:
    """The files and folders a command's operands name, resolved (not its options' values,
    nor names inside the scratch folder, which hold nothing of the person's)."""
    found: list[Path] = []
    for stage in check.stages:
        inner = unwrap(stage)[-1]
        for operand in options_and_operands(inner.args)[1]:
            path = next((p for p in check.paths if _names(operand, p, cwd, home)), None)
            if path is not None and not is_within(path, SCRATCH):
                found.append(path)
    return list(dict.fromkeys(found))


def _names(operand: str, path: Path, cwd: Path, home: Path) -> bool:
    try:
        return resolve_path(operand, home=home, cwd=cwd) == path
    except ValueError:
        return False


def _hidden(path: Path, home: Path) -> bool:
    """Whether the sandbox hides `path` unless it is mounted for the call."""
    return any(is_within(path, root) for root in hidden_roots(home))


def _refuse_sockets(place: Path) -> None:
    """A socket is a door to another program (an agent, a display, a terminal multiplexer)
    outside the sandbox: never mounted, nor a folder in /tmp that holds one."""
    try:
        st = os.lstat(place)
        if stat.S_ISSOCK(st.st_mode):
            raise ToolRefused(f"refused: {place} is a socket to another program; never mounted")
        if stat.S_ISDIR(st.st_mode) and any(
            is_within(place, Path(t)) for t in ("/tmp", "/var/tmp")
        ):
            with os.scandir(place) as entries:
                for count, entry in enumerate(entries):
                    if count >= 4096:
                        break
                    if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                        raise ToolRefused(
                            f"refused: {place} holds a socket to another program "
                            f"({entry.name}); it is never mounted"
                        )
    except OSError:
        return  # what cannot be looked at is not mounted with anything special in it


def _mounted_places(paths: Sequence[Path], cwd: Path, home: Path) -> list[Path]:
    """The places besides `cwd` the sandbox must mount for the paths a command names.

    Only what the sandbox would otherwise hide (the home, /tmp, /home, …): the rest of the
    system is visible read-only anyway. A path that does not exist yet is mounted through its
    nearest existing folder, unless that is a whole hidden area (/tmp, /home) itself. Sockets
    are refused (`_refuse_sockets`).
    """
    tops = {Path(p) for p in HIDDEN_TOP}
    found: list[Path] = []
    for path in paths:
        if not _hidden(path, home) or is_within(path, cwd):
            continue
        place = path
        while not os.path.lexists(place) and place != place.parent:
            place = place.parent
        if place in tops or place == Path("/"):
            continue
        _refuse_sockets(place)
        found.append(place)
    return _outermost(found)


# --- open_path / open_url -----------------------------------------------------------------------

Opener = Callable[[str], None]

# Kinds of file whose default "open" action runs them (a program, a script, an installer, a
# launcher), on one desktop or another. open_path opens documents and folders, not programs.
_LAUNCHABLE_SUFFIXES = frozenset(
    {
        ".desktop", ".app", ".command", ".tool", ".workflow", ".action", ".terminal", ".exe",
        ".msi", ".msp", ".bat", ".cmd", ".com", ".scr", ".pif", ".cpl", ".msc", ".ps1", ".psm1",
        ".vbs", ".vbe", ".js", ".jse", ".wsf", ".wsh", ".hta", ".lnk", ".url", ".webloc",
        ".inetloc", ".fileloc", ".jar", ".sh", ".bash", ".zsh", ".csh", ".fish", ".run", ".bin",
        ".appimage", ".deb", ".rpm", ".pkg", ".mpkg", ".dmg", ".apk", ".flatpakref", ".snap",
        ".py", ".pyw", ".pl", ".rb", ".reg", ".inf", ".scpt", ".applescript", ".library-ms",
        ".settingcontent-ms", ".appref-ms",
    }
)  # fmt: skip


def system_opener(environ: Mapping[str, str] | None = None, *, home: Path | None = None) -> Opener:
    """Hand a path or URL to the desktop's default handler: xdg-open, `open`, os.startfile."""

    def open_with_default(target: str) -> None:
        if sys.platform == "win32":
            try:
                os.startfile(target)
            except OSError as exc:
                raise ToolError(f"Windows could not open {target}: {exc.strerror or exc}") from exc
            return
        source = environ if environ is not None else os.environ
        env = command_environment(
            source, home=home or Path.home(), keep=frozenset(_DESKTOP_NAMES & set(source))
        )
        name = "open" if sys.platform == "darwin" else "xdg-open"
        program = shutil.which(name, path=env.get("PATH", ""))
        if program is None:
            hint = "" if sys.platform == "darwin" else " (install the xdg-utils package)"
            raise ToolError(
                f"No program to open files and links was found: {name} is missing{hint}"
            )
        proc = subprocess.Popen(
            [program, target],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        try:
            _, err = proc.communicate(timeout=OPENER_WAIT_S)
        except subprocess.TimeoutExpired:
            # Still starting the application: that is success; reap it when it ends.
            threading.Thread(target=proc.communicate, name="opener-reaper", daemon=True).start()
            return
        if proc.returncode != 0:
            first = err.decode("utf-8", "replace").strip().splitlines()[:1]
            detail = f": {first[0][:200]}" if first else ""
            if proc.returncode == 3:
                raise ToolError(f"No application is set up to open {target}{detail}")
            raise ToolError(f"{name} could not open {target} (exit {proc.returncode}){detail}")

    return open_with_default


def normalise_url(raw: str) -> str:
    """The URL open_url hands on: http, https or mailto only, host lower-case IDNA, no userinfo."""
    text = raw.strip()
    if not text:
        raise ToolError("'url' is required")
    if len(text) > MAX_URL_CHARS:
        raise ToolError(f"the link is longer than {MAX_URL_CHARS} characters")
    for ch in text:
        if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Cn"):
            raise ToolRefused(
                f"refused: the link contains a space, control or invisible character "
                f"(U+{ord(ch):04X})"
            )
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise ToolError(f"not a valid link: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "mailto"):
        shown = f"{scheme}:" if scheme else "a link without http:// or https://"
        raise ToolRefused(f"refused: only http, https and mailto links are opened, not {shown}")
    if scheme == "mailto":
        if not parts.path:
            raise ToolError("a mailto link needs an address")
        return urlunsplit((scheme, "", parts.path, parts.query, parts.fragment))
    if "@" in parts.netloc:
        raise ToolRefused(
            "refused: a link with a user name or password before the host (user@host) can "
            "disguise where it really goes"
        )
    host = parts.hostname
    if not host:
        raise ToolError("the link has no host name")
    try:
        port = parts.port
    except ValueError as exc:
        raise ToolError(f"the link's port is not valid: {exc}") from exc
    if ":" in host:
        netloc = f"[{host.lower()}]"
    else:
        try:
            netloc = host.rstrip(".").encode("idna").decode("ascii").lower()
        except UnicodeError as exc:
            raise ToolError(f"the host name {host!r} is not valid") from exc
    default_port = 80 if scheme == "http" else 443
    if port is not None and port != default_port:
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, parts.fragment))


class _OpenTools:
    def __init__(self, home: Path | None, opener: Opener, app_dirs: Sequence[Path] = ()) -> None:
        self._home = home
        self.opener = opener
        self._app_dirs = tuple(app_dirs)

    def resolve(self, args: OpenPathArguments) -> Path:
        raw = args.path
        home = resolve_path(os.fspath(self._home)) if self._home is not None else None
        try:
            path = resolve_path(raw, home=home, cwd=home)
        except ValueError as exc:
            raise ToolError(f"Cannot use the path {raw.strip()[:200]!r}: {exc}") from exc
        private = private_places(home or Path.home(), self._app_dirs).hit(path)
        if private is not None:
            raise ToolRefused(f"refused: {private.describe()}; it is never opened")
        if not path.exists():
            raise ToolError(f"{path} does not exist")
        suffix = path.suffix.lower()
        if suffix in _LAUNCHABLE_SUFFIXES:
            raise ToolRefused(
                f"refused: {path.name} is a program, script, installer or launcher ({suffix}); "
                "Chamberlain opens documents and folders, not programs"
            )
        if path.is_file() and os.access(path, os.X_OK) and sys.platform != "win32":
            raise ToolRefused(
                f"refused: {path.name} is executable, and opening it could run it; Chamberlain "
                "opens documents and folders, not programs"
            )
        return path

    def prepare_path(self, args: OpenPathArguments) -> Prepared:
        path = self.resolve(args)
        return Prepared.of(args, [f"path:{path}"], "easy", path)

    def open_path(self, args: OpenPathArguments, prepared: Prepared) -> ToolResult:
        # Checked again just before it is handed over: what was allowed must still be there,
        # still a document, and still what the path leads to.
        path = self.resolve(args)
        if path != prepared.plan:
            raise ToolError(
                f"{args.path.strip()[:200]!r} leads somewhere else now than when it was checked; "
                "it was not opened"
            )
        self.opener(os.fspath(path))
        kind = "folder" if path.is_dir() else "file"
        return ToolResult(
            data={"opened": os.fspath(path), "kind": kind},
            text=f"Opened the {kind} {path} with its default application.",
        )

    @staticmethod
    def prepare_url(args: OpenUrlArguments) -> Prepared:
        url = normalise_url(args.url)
        return Prepared.of(args, [f"url:{url}"], "easy", url)

    def open_url(self, args: OpenUrlArguments, prepared: Prepared) -> ToolResult:
        url = prepared.plan if isinstance(prepared.plan, str) else normalise_url(args.url)
        self.opener(url)
        return ToolResult(data={"opened": url}, text=f"Opened {url} in the default application.")


# --- the tools ----------------------------------------------------------------------------------


class SystemExecuteArguments(ToolArguments):
    command: Annotated[str, NOT_BLANK] = Field(
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description="The command line, e.g. `df -h` or `ps aux | grep x`.",
    )
    cwd: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)] | None = Field(
        None,
        description=(
            "Working folder, absolute or starting with ~; without it, an empty scratch folder."
        ),
    )


class OpenPathArguments(ToolArguments):
    path: Annotated[str, NOT_BLANK] = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="The file or folder, absolute or starting with ~.",
    )


class OpenUrlArguments(ToolArguments):
    url: Annotated[str, NOT_BLANK] = Field(
        min_length=1,
        max_length=MAX_URL_CHARS,
        description="The link, e.g. https://example.org/page.",
    )


def make_system_tools(
    config: ToolConfig,
    *,
    home: Path | None = None,
    opener: Opener | None = None,
    environ: Mapping[str, str] | None = None,
    sandbox: SandboxStatus | None = None,
    network: NetworkHelper | None = None,
) -> list[Tool]:
    """system_execute, open_path and open_url, built from the user's tool settings.

    `home` is the user's home (default: the real one); `opener` hands a path or URL to the
    desktop (default: `system_opener`); `environ` is the environment commands start from, before
    scrubbing (default: this process's). Tests inject all three.
    """
    command = _CommandTool(config, home, environ, sandbox, network)
    cap = config.command_output_cap
    execute = typed_tool(
        ToolManual(
            name="system_execute",
            description=(
                "Run one program with arguments, or a pipeline of programs joined by |, on the "
                "user's machine. No shell: no ;, &&, ||, redirections, $variables, globs or "
                "$( ). Quote arguments as in bash. Read-only commands (ls, cat, df, ps, grep, "
                "…) are covered by a session grant; anything else asks the user first. cwd "
                "is the folder to work in: without it the command runs in an empty scratch "
                "folder and sees only the paths it names. Returns stdout, stderr and the exit "
                "code."
            ),
            parameters=SystemExecuteArguments.parameters(),
            capability=Capability.SYSTEM_EXECUTE,
            category="system",
            risk="dangerous",
            mutating=True,
            # The worst case; each call's own reversibility is in its result and its reason.
            reversibility="irreversible",
            # Longer than the command's own limit plus the kill grace: the tool does the
            # killing, and reports what the command printed before it was stopped.
            timeout_s=config.command_timeout_s + KILL_GRACE_S + 5.0,
            output_cap=2 * cap + 32 * 1024,
        ),
        SystemExecuteArguments,
        prepare=command.prepare,
        run=command.run_checked,
        user_scopes_of=command.user_scopes,
        health=command.health,
    )
    openers = _OpenTools(home, opener or system_opener(environ, home=home), config.app_dirs)
    open_path = typed_tool(
        ToolManual(
            name="open_path",
            description=(
                "Open a file or folder in the user's default application (a document in its "
                "viewer, a folder in the file manager). Programs and scripts are not opened."
            ),
            parameters=OpenPathArguments.parameters(),
            capability=Capability.OPEN_EXTERNAL,
            category="system",
            risk="moderate",
            timeout_s=OPENER_WAIT_S + 5.0,
        ),
        OpenPathArguments,
        prepare=openers.prepare_path,
        run=openers.open_path,
    )
    open_url = typed_tool(
        ToolManual(
            name="open_url",
            description=(
                "Open an http, https or mailto link in the user's default browser or mail program."
            ),
            parameters=OpenUrlArguments.parameters(),
            capability=Capability.OPEN_EXTERNAL,
            category="system",
            risk="moderate",
            timeout_s=OPENER_WAIT_S + 5.0,
        ),
        OpenUrlArguments,
        prepare=openers.prepare_url,
        run=openers.open_url,
    )
    return [execute, open_path, open_url]

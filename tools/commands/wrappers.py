"""Wrapper programs: `unwrap` turns a stage into every program it runs, outermost first.

`env`, `nice`, `ionice`, `timeout`, `nohup`, `stdbuf`, `time`, `command`, `exec` and the
multi-call binaries (`busybox`, `toybox`) are unwrapped, so the program inside is checked too;
a wrapper option the rules do not understand is refused, since it could take the command as its
value or change what runs. Programs that run as another user (`sudo`, `su`, `chroot`, …) or run
others in ways the rules cannot follow (`xargs`, `setsid`, `tmux`, tracers, …) are refused.

This module must never run anything, and never let a wrapper hide the program it runs: where
the inner program starts must be certain, or the stage is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tools.commands.grammar import refuse
from tools.commands.options import long_matches, program_name
from tools.commands.parse import SHELL_ONLY, strip_stage_prefix
from tools.commands.words import check_program

MAX_WRAPPER_DEPTH = 8

_ELEVATE = frozenset(
    {
        "sudo", "doas", "su", "pkexec", "run0", "sudoedit", "runuser", "gosu", "su-exec",
        "chroot", "nsenter", "unshare", "setpriv", "capsh", "sg", "newgrp", "calife", "ksu",
    }
)  # fmt: skip
# Programs that run other programs in ways the rules cannot follow (from input, from a string,
# later, detached, or under a tracer): refused; run the inner program directly instead.
_RUNS_OTHERS: dict[str, str] = {
    "xargs": "runs programs built from its input, which the rules cannot see",
    "parallel": "runs programs built from its input, which the rules cannot see",
    "watch": "runs its command through a shell",
    "script": "runs a shell",
    "setsid": "detaches its program from Chamberlain's control (it would survive the time limit)",
    "daemonize": "detaches its program from Chamberlain's control",
    "start-stop-daemon": "detaches its program from Chamberlain's control",
    "systemd-run": "hands its program to the service manager, outside Chamberlain's control",
    "at": "schedules a shell command for later",
    "batch": "schedules a shell command for later",
    "tmux": "runs a shell",
    "screen": "runs a shell",
    "byobu": "runs a shell",
    "expect": "runs a script of commands",
    "flock": "runs another program (possibly through a shell with -c)",
    "chrt": "runs another program",
    "taskset": "runs another program",
    "prlimit": "runs another program",
    "numactl": "runs another program",
    "cgexec": "runs another program",
    "strace": "runs another program under a tracer",
    "ltrace": "runs another program under a tracer",
    "gdb": "can run any program or shell command",
    "valgrind": "runs another program",
    "unbuffer": "runs another program",
    "faketime": "runs another program",
    "firejail": "runs another program",
    "bwrap": "runs another program",
    "proxychains": "runs another program",
    "proxychains4": "runs another program",
    "torsocks": "runs another program",
    "chronic": "runs another program",
    "systemd-inhibit": "runs another program",
    "dbus-run-session": "runs another program",
    "ssh-agent": "runs another program",
    "entr": "runs programs whenever files change",
    "find2perl": "writes programs",
}


# Multi-call binaries: the first argument names the program they act as.
MULTI_CALL = ("busybox", "toybox")


@dataclass(frozen=True)
class Invocation:
    """One program in a stage, after unwrapping: `nice -n 5 ls` is nice, then ls."""

    name: str
    argv: tuple[str, ...]
    wrapper: bool = False

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    @property
    def written(self) -> str:
        return self.argv[0]


def _inner_after_options(
    name: str,
    args: Sequence[str],
    *,
    flags: Sequence[str] = (),
    valued: Sequence[str] = (),
    long_flags: Sequence[str] = (),
    long_valued: Sequence[str] = (),
    refused: dict[str, str] | None = None,
    numeric: bool = False,
) -> int | None:
    """Index in `args` where the wrapped command starts (None: there is none).

    Unknown options are refused: a wrapper option we do not understand could take the command
    as its value, or change what runs.
    """
    refused = refused or {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        for option, why in refused.items():
            if arg == option or (option.startswith("--") and long_matches(arg, [option[2:]])):
                raise refuse(f"`{name} {arg}` {why}")
            if not option.startswith("--") and arg.startswith(option) and len(option) == 2:
                raise refuse(f"`{name} {arg}` {why}")
        if numeric and re.fullmatch(r"--?\d+", arg):
            i += 1
            continue
        if arg.startswith("--"):
            given = arg[2:].split("=", 1)[0]
            valued_hit = [n for n in long_valued if n.startswith(given)]
            flag_hit = [n for n in long_flags if n.startswith(given)]
            if given in long_valued or (valued_hit and not flag_hit):
                i += 1 if "=" in arg else 2
                continue
            if given in long_flags or (flag_hit and not valued_hit):
                i += 1
                continue
            raise refuse(f"`{name} {arg}` is an option Chamberlain does not understand")
        letters = arg[1:]
        j = 0
        consumed_next = False
        while j < len(letters):
            letter = letters[j]
            if letter in valued:
                if j == len(letters) - 1:
                    consumed_next = True
                break
            if letter not in flags:
                raise refuse(f"`{name} {arg}` is an option Chamberlain does not understand")
            j += 1
        i += 2 if consumed_next else 1
    if i >= len(args):
        return None
    return i


def unwrap_once(inv_argv: Sequence[str]) -> tuple[Invocation, list[str] | None]:
    """The invocation itself, and the argv of the program it wraps (or None)."""
    name = program_name(inv_argv[0])
    args = list(inv_argv[1:])
    inv = Invocation(name, tuple(inv_argv))
    start: int | None
    if name in _ELEVATE:
        raise refuse(f"`{name}` runs a program as another user; Chamberlain never elevates")
    if name in _RUNS_OTHERS:
        raise refuse(f"`{name}` {_RUNS_OTHERS[name]}; run the program itself instead")
    if name in SHELL_ONLY:
        raise refuse(f"`{name}` is a shell builtin; Chamberlain runs programs without a shell")
    if name == "env":
        start = _inner_after_options(
            name,
            args,
            flags="i0v",
            valued="u",
            long_flags=("ignore-environment", "null", "debug", "list-signal-handling"),
            long_valued=("unset",),
            refused={
                "-S": "splits a string into a hidden command",
                "--split-string": "splits a string into a hidden command",
                "-C": "changes the working folder outside the checked one",
                "--chdir": "changes the working folder outside the checked one",
                "-P": "changes where the program is looked up",
                "--block-signal": "changes signal handling",
                "--default-signal": "changes signal handling",
                "--ignore-signal": "changes signal handling",
            },
        )
        if start is not None:
            if "=" in args[start]:
                raise refuse(
                    f"`env {args[start]}` sets a variable for the program; Chamberlain does not "
                    "set variables for commands"
                )
            if args[start] == "-":
                raise refuse("`env -` with a command is not supported")
    elif name == "nice":
        start = _inner_after_options(
            name, args, valued="n", long_valued=("adjustment",), numeric=True
        )
    elif name == "ionice":
        start = _inner_after_options(
            name,
            args,
            flags="t",
            valued="cn",
            long_flags=("ignore",),
            long_valued=("class", "classdata"),
            refused={
                "-p": "changes the priority of other processes",
                "-P": "changes the priority of other processes",
                "-u": "changes the priority of other processes",
                "--pid": "changes the priority of other processes",
                "--pgid": "changes the priority of other processes",
                "--uid": "changes the priority of other processes",
            },
        )
    elif name == "timeout":
        start = _inner_after_options(
            name,
            args,
            flags="v",
            valued="sk",
            long_flags=("preserve-status", "foreground", "verbose"),
            long_valued=("signal", "kill-after"),
        )
        if start is not None:
            if not re.fullmatch(r"\d+(\.\d+)?[smhd]?", args[start]):
                raise refuse(f"`timeout` needs a duration before the command, not {args[start]!r}")
            start = start + 1 if start + 1 < len(args) else None
    elif name == "nohup":
        start = _inner_after_options(name, args, long_flags=("help", "version"))
    elif name == "stdbuf":
        start = _inner_after_options(
            name, args, valued="ioe", long_valued=("input", "output", "error")
        )
    elif name == "time":
        start = _inner_after_options(
            name,
            args,
            flags="pvq",
            valued="f",
            long_flags=("portability", "verbose", "quiet"),
            long_valued=("format",),
            refused={
                "-o": "writes its report to a file",
                "-a": "writes its report to a file",
                "--output": "writes its report to a file",
                "--append": "writes its report to a file",
            },
        )
    elif name in ("command", "exec"):
        stripped = strip_stage_prefix([name, *args])
        return Invocation(name, tuple(inv_argv), wrapper=True), stripped
    elif name.startswith(MULTI_CALL):
        if args and args[0] in ("--install", "--install-s"):
            raise refuse(f"`{name} --install` creates links all over a folder")
        start = 0 if args and not args[0].startswith("-") else None
    else:
        return inv, None
    if start is None:
        return inv, None
    return Invocation(name, tuple(inv_argv), wrapper=True), args[start:]


def unwrap(argv: Sequence[str]) -> list[Invocation]:
    """Every program a stage runs, outermost first; refuses wrappers that hide what they run."""
    chain: list[Invocation] = []
    current: list[str] | None = list(argv)
    while current is not None:
        if len(chain) >= MAX_WRAPPER_DEPTH:
            raise refuse(f"more than {MAX_WRAPPER_DEPTH} wrapper programs in one command")
        if not current:
            raise refuse(f"`{chain[-1].name}` has no program to run")
        check_program(current[0])
        inv, current = unwrap_once(current)
        chain.append(inv)
    return chain

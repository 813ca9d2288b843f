"""The read-only allowlist: the programs a session grant for read-only commands covers.

A stage is read-only when every program in it is on the list (wrappers only if they change
nothing a read-only command does), is run by its plain name, resolves into a system folder, and
is given no option that writes or reads whole folders (checked on the arguments as written and
in their NFKC form). `readonly_problem` says why a stage is not read-only.

This module must never call a command read-only when in doubt: a program that is not listed,
is run by path or is found outside the system folders makes the command one that asks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from tools.commands.characters import fold
from tools.commands.locate import SYSTEM_PROGRAM_DIRS
from tools.commands.options import long_matches, options_and_operands, short_cluster
from tools.commands.wrappers import Invocation

ReadonlyCheck = Callable[[Sequence[str]], str | None]


def _ro_any(_args: Sequence[str]) -> str | None:
    return None


def _ro_forbid(
    short: str = "", long: Sequence[str] = (), max_operands: int | None = None
) -> ReadonlyCheck:
    def check(args: Sequence[str]) -> str | None:
        options, operands = options_and_operands(args)
        for option in options:
            if long_matches(option, long):
                return f"{option} can write or change something"
            cluster = short_cluster(option)
            if cluster and any(letter in cluster for letter in short):
                return f"{option} can write or change something"
        if max_operands is not None and len(operands) > max_operands:
            return "a further file name is where it writes its output"
        return None

    return check


def _ro_date(args: Sequence[str]) -> str | None:
    base = _ro_forbid("s", ("set",))(args)
    if base is not None:
        return base
    _, operands = options_and_operands(args)
    if any(not op.startswith("+") for op in operands):
        return "a date given as an operand sets the clock"
    return None


def _ro_hostname(args: Sequence[str]) -> str | None:
    base = _ro_forbid("Fb", ("file", "boot"), max_operands=0)(args)
    return "a name given to hostname sets it" if base is not None else None


def _ro_grep(args: Sequence[str]) -> str | None:
    base = _ro_forbid("rR", ("recursive", "dereference-recursive"))(args)
    if base is not None:
        return "a recursive grep reads whole folders, including private ones"
    if any(a.endswith("recurse") for a in args):
        return "a recursive grep reads whole folders, including private ones"
    return None


def _ro_find(args: Sequence[str]) -> str | None:
    for arg in args:
        if arg in ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls"):
            return f"`find {arg}` deletes or writes files"
    return None


_READONLY: dict[str, ReadonlyCheck] = {
    **dict.fromkeys(
        (
            "ls", "dir", "vdir", "cat", "tac", "head", "tail", "wc", "nl", "df", "du", "ps",
            "uname", "whoami", "id", "groups", "logname", "users", "who", "w", "uptime", "free",
            "pwd", "which", "whereis", "stat", "echo", "printf", "cut", "tr", "lsblk", "lscpu",
            "lsusb", "lspci", "lsmem", "nproc", "printenv", "basename", "dirname", "realpath",
            "readlink", "true", "false", "seq", "sleep", "md5sum", "sha1sum", "sha224sum",
            "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "comm", "diff",
            "cmp", "paste", "join", "fold", "fmt", "expand", "unexpand", "column", "rev", "od",
            "hexdump", "strings", "getconf", "locale", "arch", "tty", "factor", "numfmt", "expr",
            "cal", "ncal", "pgrep", "pidof", "jq", "getent", "env", "look", "zcat",
        ),
        _ro_any,
    ),
    "grep": _ro_grep,
    "egrep": _ro_grep,
    "fgrep": _ro_grep,
    "date": _ro_date,
    "hostname": _ro_hostname,
    "sort": _ro_forbid("oT", ("output", "compress-program", "temporary-directory")),
    "uniq": _ro_forbid(max_operands=1),
    "file": _ro_forbid("C", ("compile",)),
    "find": _ro_find,
    "tree": _ro_forbid("oR", ("output",)),
    "xxd": _ro_forbid("r", ("revert",), max_operands=1),
    "ss": _ro_forbid("K", ("kill",)),
    "dmesg": _ro_forbid("cCnDE", ("clear", "read-clear", "console-level", "console-off")),
}  # fmt: skip
# Wrappers that change nothing a read-only command does (env without assignments, nice, …).
_READONLY_WRAPPERS = frozenset(
    {"env", "nice", "ionice", "timeout", "nohup", "stdbuf", "time", "command", "exec"}
)


def readonly_problem(
    chain: Sequence[Invocation], locate: Callable[[str], Path | None]
) -> str | None:
    """Why this stage is not read-only, or None when it is."""
    for inv in chain:
        listed = _READONLY_WRAPPERS if inv.wrapper else _READONLY
        if inv.name not in listed:
            return f"`{inv.name}` is not on the read-only list"
        if "/" in inv.written or inv.written != inv.name:
            return f"{inv.written!r} is run by path or under another spelling, not by name"
        real = locate(inv.written)
        if real is None:
            return f"`{inv.written}` was not found on this machine"
        if not os.fspath(real).startswith(SYSTEM_PROGRAM_DIRS):
            return f"`{inv.written}` runs {real}, which is not in a system folder"
        if inv.wrapper:
            continue
        check = _READONLY[inv.name]
        problem = check(inv.args)
        if problem is None:
            problem = check([fold(a) for a in inv.args])
        if problem is not None:
            return f"`{inv.name}`: {problem}"
    return None

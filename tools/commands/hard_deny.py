"""Hard-deny rules: commands refused whatever the person says.

Formatting or repartitioning disks; shutting down or restarting (directly, through systemctl or
loginctl, or over D-Bus); recursive or forced deletion and permission changes aimed at the
root, a home, a folder holding one or a top-level system folder (or at a literal glob, `..` or
`$HOME`); killing every process, init or Chamberlain itself; `dd` onto a device; `find -delete`,
`mv` and `rsync --delete` of such folders; `crontab -r`.

This module must never soften a refusal into a question: a rule here refuses or says nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from tools.commands.grammar import refuse
from tools.commands.options import has_flag, long_matches, options_and_operands
from tools.commands.paths import RuleContext, broad_literal, dangerous_path, resolve
from tools.commands.wrappers import Invocation

_DISK_TOOLS = frozenset(
    {
        "mke2fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "wipefs", "fdisk", "sfdisk",
        "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted", "gparted", "blkdiscard", "zpool",
        "mdadm", "cryptsetup", "dmsetup", "badblocks", "hdparm", "sg_format", "nvme",
    }
)  # fmt: skip
_POWER = frozenset({"shutdown", "reboot", "poweroff", "halt", "telinit", "init", "killall5"})
_POWER_VERBS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "soft-reboot", "emergency", "rescue", "isolate",
     "default", "hibernate", "hybrid-sleep", "suspend-then-hibernate"}
)  # fmt: skip
_POWER_TARGETS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "shutdown", "soft-reboot", "emergency", "rescue",
     "ctrl-alt-del", "exit", "final", "hibernate", "hybrid-sleep", "suspend-then-hibernate"}
)  # fmt: skip
_POWER_METHODS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybridsleep",
     "suspendthenhibernate", "rebootwithflags", "poweroffwithflags", "haltwithflags",
     "setrebootparameter", "logout", "requestshutdown", "requestreboot", "shutdown"}
)  # fmt: skip
_PERMISSIONS = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl", "chcon"})
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "srm", "wipe", "trash", "trash-put"})


def _deny_rm(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    options, operands = options_and_operands(args)
    recursive = has_flag(options, "rR", ("recursive",))
    force = has_flag(options, "f", ("force",))
    if any(long_matches(o, ("no-preserve-root",)) for o in options):
        raise refuse(f"`{inv.name} --no-preserve-root` is never run")
    if inv.name == "rm" and not (recursive or force):
        return
    for operand in operands:
        broad = broad_literal(operand)
        if broad is not None:
            raise refuse(
                f"`{inv.name}` with recursive or force options aimed at {broad} is never run"
            )
        path = resolve(operand, ctx)
        danger = dangerous_path(path, ctx) if path is not None else None
        if danger is not None:
            raise refuse(
                f"`{inv.name}` with recursive or force options aimed at {danger} is never run"
            )


def _deny_permissions(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    options, operands = options_and_operands(args)
    if any(long_matches(o, ("no-preserve-root",)) for o in options):
        raise refuse(f"`{inv.name} --no-preserve-root` is never run")
    for operand in operands:
        if operand.startswith(("$HOME", "${HOME}")) or operand in ("*", "~/*", "/*"):
            raise refuse(f"`{inv.name}` aimed at {operand!r} is never run")
        path = resolve(operand, ctx)
        danger = dangerous_path(path, ctx) if path is not None else None
        if danger is not None:
            raise refuse(f"`{inv.name}` on {danger} would break the system; it is never run")


_KILL_FLAGS = (
    "exact", "ignore-case", "interactive", "regexp", "verbose", "wait", "newest", "oldest",
    "inverse", "full", "list-full", "list-name", "count", "quiet", "process-group", "echo",
    "help", "version",
)  # fmt: skip


def _deny_kill(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    rest = list(args)
    if inv.name == "kill":
        if rest and rest[0] in ("-s", "-n", "--signal"):
            rest = rest[2:]
        elif rest and rest[0].startswith("-") and rest[0] not in ("--", "-1"):
            rest = rest[1:]
        elif rest and rest[0] == "-1" and len(rest) > 1:
            rest = rest[1:]  # `kill -1 PID` sends SIGHUP to PID; the pids follow
        pids = [a for a in rest if a != "--"]
        for pid in pids:
            if pid in ("-1", "1"):
                raise refuse("`kill` aimed at every process (-1) or at init (1) is never run")
            if pid.lstrip("-").isdigit() and int(pid.lstrip("-")) in ctx.own_pids:
                raise refuse("`kill` aimed at Chamberlain itself is never run")
        return
    # pkill, killall: a pattern matching everything, or a whole user's (group's …) processes
    valued = "uUgGsPtFo" if inv.name == "pkill" else "usoyZn"
    options: list[str] = []
    patterns: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            patterns.extend(args[i + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            options.append(arg)
            takes_value = (len(arg) == 2 and arg[1] in valued) or (
                arg.startswith("--") and "=" not in arg and not long_matches(arg, _KILL_FLAGS)
            )
            if takes_value:
                i += 1
        else:
            patterns.append(arg)
        i += 1
    broad = {"", ".", ".*", ".+", "^", "$", "^.*$", "*", "^.*", "^.+"}
    if any(p in broad for p in patterns):
        raise refuse(f"`{inv.name}` with a pattern that matches every process is never run")
    if not patterns:
        raise refuse(
            f"`{inv.name}` without a process name selects every process of a user, group or "
            "session; it is never run"
        )


def _deny_dd(args: Sequence[str], ctx: RuleContext) -> None:
    for arg in args:
        if arg.startswith("of="):
            path = resolve(arg[3:], ctx)
            if (
                path is not None
                and os.fspath(path).startswith("/dev/")
                and (os.fspath(path) != "/dev/null")
            ):
                raise refuse("`dd` writing onto a device (of=/dev/…) is never run")


def _deny_power(inv: Invocation, args: Sequence[str]) -> None:
    if inv.name in _POWER:
        raise refuse(f"`{inv.name}` shuts down or restarts the machine; it is never run")
    if inv.name in ("systemctl", "loginctl"):
        _, operands = options_and_operands(args)
        for operand in operands:
            if operand in _POWER_VERBS or operand.removesuffix(".target") in _POWER_TARGETS:
                raise refuse(f"`{inv.name} {operand}` shuts down or restarts; it is never run")
    if inv.name in ("busctl", "dbus-send", "gdbus", "qdbus", "qdbus6", "dbus-call"):
        for arg in args:
            method = arg.rsplit(".", 1)[-1].lower()
            if method in _POWER_METHODS:
                raise refuse(f"`{inv.name}` calling {arg} shuts down or restarts; never run")


def deny_invocation(inv: Invocation, args: Sequence[str], ctx: RuleContext) -> None:
    if inv.name.startswith(("mkfs", "mke2fs", "mkfs.")) or inv.name in _DISK_TOOLS:
        raise refuse(f"`{inv.name}` formats or repartitions disks; it is never run")
    _deny_power(inv, args)
    if inv.name in _DELETERS:
        _deny_rm(inv, args, ctx)
    if inv.name in _PERMISSIONS:
        _deny_permissions(inv, args, ctx)
    if inv.name in ("kill", "pkill", "killall"):
        _deny_kill(inv, args, ctx)
    if inv.name == "dd":
        _deny_dd(args, ctx)
    if inv.name == "find" and "-delete" in args:
        starts: list[str] = []
        rest = list(args)
        while rest and (rest[0] in ("-H", "-L", "-P") or rest[0].startswith(("-D", "-O"))):
            takes_value = rest[0] in ("-D", "-O")
            rest = rest[2:] if takes_value else rest[1:]
        for arg in rest:
            if arg.startswith("-") or arg in ("(", "!", ")"):
                break
            starts.append(arg)
        for operand in starts or ["."]:
            path = resolve(operand, ctx)
            danger = dangerous_path(path, ctx) if path is not None else None
            if danger is not None:
                raise refuse(f"`find -delete` under {danger} is never run")
    if inv.name == "mv":
        options, operands = options_and_operands(args)
        target_dir = has_flag(options, "t", ("target-directory",))
        for operand in operands if target_dir else operands[:-1]:
            path = resolve(operand, ctx)
            danger = dangerous_path(path, ctx) if path is not None else None
            if danger is not None:
                raise refuse(f"`mv` of {danger} is never run")
    if inv.name == "rsync" and any(
        long_matches(o, ("delete", "del", "remove-source-files")) for o in args
    ):
        for operand in options_and_operands(args)[1]:
            path = resolve(operand, ctx)
            danger = dangerous_path(path, ctx) if path is not None else None
            if danger is not None:
                raise refuse(f"`rsync --delete` into or from {danger} is never run")
    if inv.name == "crontab" and has_flag(options_and_operands(args)[0], "r", ("remove",)):
        raise refuse("`crontab -r` deletes every scheduled job; it is never run")

"""What a command's arguments lead to: `RuleContext` (where the command runs, whose home, which
files are Chamberlain's own, which places are private) and what the rules make of a path.

An argument may name a path as itself, after `=`, or after a short option (`-o/etc/x`); each
such candidate is resolved (`~`, `..`, symlinks) before it is compared. A path can be dangerous
to delete or re-permission (the root, a home or a folder holding one, a top-level system
folder), one of Chamberlain's own files (inside one, a hard link to one, the folder holding one,
or a folder above one), a disk device, another process's memory or a device, or a private place;
a /proc link (`/proc/self/cwd/.ssh`) is refused because it hides where a path really leads.

This module only resolves and looks (stat): it must never create, open or change a file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tools.commands.grammar import refuse
from tools.paths import is_within, resolve_path
from tools.private import PrivatePlaces


@dataclass(frozen=True)
class RuleContext:
    """What the rules need to know about where a command runs."""

    cwd: Path
    home: Path
    # Resolved: the app's own grants, settings, audit and memory files (or their folder).
    protected: tuple[Path, ...] = ()
    private: PrivatePlaces | None = None
    own_pids: frozenset[int] = frozenset()


def _path_candidates(arg: str) -> list[str]:
    """The strings in `arg` a program might take as a path: itself, after `=`, after `-x`."""
    candidates = [arg]
    if "=" in arg:
        candidates.append(arg.split("=", 1)[1])
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        candidates.append(arg[2:])
        for index, ch in enumerate(arg[2:], start=2):
            if ch in "/~":
                candidates.append(arg[index:])
                break
    return [c for c in dict.fromkeys(candidates) if c and c != "-"]


def resolve(candidate: str, ctx: RuleContext) -> Path | None:
    try:
        return resolve_path(candidate, home=ctx.home, cwd=ctx.cwd)
    except ValueError:
        return None


def resolved_args(args: Iterable[str], ctx: RuleContext) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for arg in args:
        for candidate in _path_candidates(arg):
            path = resolve(candidate, ctx)
            if path is not None:
                found.append((arg, path))
    return found


def _homes(ctx: RuleContext) -> list[Path]:
    homes = [ctx.home]
    try:
        real = Path(os.path.realpath(os.path.expanduser("~")))
    except (OSError, RuntimeError):
        return homes
    if real != ctx.home:
        homes.append(real)
    return homes


def broad_literal(arg: str) -> str | None:
    """A literal glob, `..` or `$HOME` given to a deleting program (nothing expands them here)."""
    if arg in ("*", ".*", "./*", "*/", "~/*") or arg.endswith(("/*", "/.*")):
        return f"{arg!r} (a glob matching everything there)"
    if ".." in arg.replace("\\", "/").split("/"):
        return f"{arg!r} (a parent folder, ..)"
    if arg.startswith(("$HOME", "${HOME}")):
        return f"{arg!r} (your home folder)"
    return None


def dangerous_path(path: Path, ctx: RuleContext) -> str | None:
    """Why deleting or re-permissioning `path` would wreck the system or the home, or None."""
    if path == Path(path.anchor):
        return "the root folder /"
    for home in _homes(ctx):
        if path == home:
            return f"your home folder ({home})"
        try:
            if is_within(home, path):
                return f"{path}, which contains your home folder"
        except ValueError:
            continue
    if len(path.parts) <= 2:
        return f"{path}, a top-level system folder"
    return None


def is_disk_device(path: Path) -> bool:
    text = os.fspath(path)
    if not text.startswith("/dev/"):
        return False
    if re.match(
        r"/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|sr|nbd|zram|ram|mtd|ubi|rbd|bcache|"
        r"mapper/|disk/|block/|mem$|kmem$|port$)",
        text,
    ):
        return True
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def protected_hit(path: Path, ctx: RuleContext) -> tuple[Path, str] | None:
    """(protected path, how): `path` "is" it (or inside it, or a hard link to it), "holds" it
    (is the folder it lies in), or "contains" it further down."""
    file_id = _file_id(path) if ctx.protected else None
    for protected in ctx.protected:
        if file_id is not None and file_id == _file_id(protected):
            return protected, "is"
        try:
            if is_within(path, protected):
                return protected, "is"
            if path == protected.parent:
                return protected, "holds"
            if is_within(protected, path):
                return protected, "contains"
        except ValueError:
            continue
    return None


def sensitive_hit(path: Path) -> str | None:
    text = os.fspath(path)
    if re.match(r"/proc/(\d+|self|thread-self)(/|$)", text):
        return f"{path} (another process's memory, environment or files)"
    if text.startswith("/dev/") and text not in ("/dev/null", "/dev/zero"):
        return f"{path} (a device)"
    return None


# /proc's links to other places: through them a path names what a process sees, not what the
# line says (`/proc/self/cwd/.ssh` is the command's own working folder's .ssh).
_PROC_LINK = re.compile(
    r"/proc/(\d+|self|thread-self)(/task/\d+)?/(cwd|root|fd|fdinfo|exe|map_files)(/|$)"
)


def check_private(arg: str, path: Path, ctx: RuleContext) -> None:
    """Refuse an argument that leads into a private place or through a /proc link."""
    for candidate in _path_candidates(arg):
        if candidate.startswith("/") and _PROC_LINK.match(os.path.normpath(candidate)):
            raise refuse(
                f"{arg!r} reaches files through a /proc link ({candidate}), which hides where "
                "they really are; name the file itself"
            )
    if ctx.private is None:
        return
    hit = ctx.private.hit(path)
    if hit is not None:
        raise refuse(f"{arg!r}: {hit.describe()}; no command may read or change it")

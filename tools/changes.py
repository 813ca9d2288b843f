"""What a program that writes wherever it is told will change, read before it runs.

`patch`, `git apply`, `tar x`, `unzip`, `rsync` and `cp` write where their input or their
operands say, not where the line shows: `patch -p0 -i fix.diff` writes whatever files the diff
names. For these the command's writable folder is only its destination (`destination`), the
files it reads from stay read-only, and the prompt lists the files it will change where they can
be known in advance: a diff's target files (its `---`/`+++` headers, after `-p`), an archive's
members (tarfile / zipfile listings). What cannot be known is said so (`Changes.known` False).

This module reads a diff or an archive's table of contents, never more than a bounded amount,
and only regular files (a FIFO would block); it never writes, extracts or runs anything.
"""

from __future__ import annotations

import os
import re
import stat
import tarfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.commands.options import has_flag, long_matches, options_and_operands

# The most a diff may be to have its targets listed, and the most members listed.
MAX_DIFF_BYTES = 8 * 1024 * 1024
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024
MAX_MEMBERS = 10_000
# How far into an archive's unpacked stream its listing may read (a small compressed file can
# unpack to far more: the listing stops there and says it could not be known).
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024

Resolve = Callable[[str], Path | None]


@dataclass(frozen=True)
class Changes:
    """Where a write-anywhere program may write, what it reads, and what it will change.

    `destinations`: the folders (or files) it may change, made writable; `sources`: what it
    reads, mounted read-only; `files`: the paths it will change, resolved; `known`: whether
    `files` is the whole list (False: the input could not be read or listed in full).
    """

    destinations: tuple[Path, ...]
    sources: tuple[Path, ...] = ()
    files: tuple[Path, ...] = field(default=())
    known: bool = True


def _regular(path: Path, most: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= most


def _read_text(path: Path) -> str | None:
    if not _regular(path, MAX_DIFF_BYTES):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_DIFF_BYTES).decode("utf-8", "replace")


_HEADER = re.compile(r"^(?:---|\+\+\+|\*\*\*) (?P<name>[^\t\n]+?)(?:\t.*)?$")
_GIT_HEADER = re.compile(r"^diff --git (?P<a>\S+) (?P<b>\S+)$")
_INDEX = re.compile(r"^Index: (?P<name>.+)$")
_RENAME = re.compile(r"^(?:rename|copy) (?:from|to) (?P<name>.+)$")


def diff_names(text: str) -> list[str]:
    """Every file name a diff's headers give (old and new sides, renames), as written."""
    names: list[str] = []
    for line in text.splitlines():
        for pattern in (_HEADER, _INDEX, _RENAME):
            match = pattern.match(line)
            if match:
                names.append(match.group("name").strip())
        match = _GIT_HEADER.match(line)
        if match:
            names += [match.group("a"), match.group("b")]
    return [n.strip('"') for n in dict.fromkeys(names) if n and n != "/dev/null"]


def strip_components(name: str, strip: int | None) -> str | None:
    """The name `patch -p<strip>` uses: `strip` leading components off (None: the base name,
    as GNU patch does without -p); None when the name has fewer components than that."""
    if strip is None:
        return name.rsplit("/", 1)[-1] or None
    parts = [p for p in name.split("/") if p]
    if name.startswith("/") and strip == 0:
        return name
    if len(parts) <= strip:
        return None
    return "/".join(parts[strip:])


def _value(args: Sequence[str], short: str, long: str) -> str | None:
    """The value of `-X VALUE`, `-XVALUE`, `--long=VALUE` or `--long VALUE` (last one wins)."""
    found: str | None = None
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if long_matches(arg, (long,)):
            if "=" in arg:
                found = arg.split("=", 1)[1]
            elif index + 1 < len(args):
                found = args[index + 1]
        elif short and arg.startswith("-" + short) and not arg.startswith("--"):
            rest = arg[2:]
            found = rest if rest else (args[index + 1] if index + 1 < len(args) else None)
    return found


def _strip_of(args: Sequence[str]) -> int | None:
    raw = _value(args, "p", "strip")
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _some(path: Path | None) -> tuple[Path, ...]:
    return (path,) if path is not None else ()


def _listed(names: Sequence[str], base: Path, resolve: Resolve) -> tuple[Path, ...]:
    files: list[Path] = []
    for name in names[:MAX_MEMBERS]:
        path = resolve(name if os.path.isabs(name) else os.fspath(base / name))
        if path is not None:
            files.append(path)
    return tuple(dict.fromkeys(files))


def _patch(args: Sequence[str], cwd: Path, resolve: Resolve) -> Changes:
    _, operands = options_and_operands(args)
    directory = _value(args, "d", "directory")
    base = resolve(directory) if directory else cwd
    base = base or cwd
    diff_arg = _value(args, "i", "input")
    # `patch FILE PATCHFILE`: the first operand is the file to change, the second the diff.
    values = {v for v in (directory, diff_arg, _value(args, "p", "strip")) if v}
    plain = [o for o in operands if o not in values]
    target = resolve(plain[0]) if plain else None
    if diff_arg is None and len(plain) > 1:
        diff_arg = plain[1]
    source = resolve(diff_arg) if diff_arg else None
    output = _value(args, "o", "output")
    destinations = [base]
    if target is not None:
        destinations = [target.parent]
    out_path = resolve(output) if output and output != "-" else None
    if out_path is not None:
        destinations = [out_path.parent]
    if target is not None or out_path is not None:
        files = tuple(p for p in (target, out_path) if p is not None)
        return Changes(tuple(destinations), (source,) if source else (), files, True)
    text = _read_text(source) if source is not None else None
    if text is None:
        return Changes(tuple(destinations), (source,) if source else (), (), False)
    strip = _strip_of(args)
    names = [n for n in (strip_components(x, strip) for x in diff_names(text)) if n]
    return Changes(tuple(destinations), _some(source), _listed(names, base, resolve), True)


def _git_apply(args: Sequence[str], cwd: Path, resolve: Resolve) -> Changes | None:
    options: list[str] = []
    index = 0
    base = cwd
    while index < len(args) and args[index].startswith("-"):
        if args[index] == "-C" and index + 1 < len(args):
            base = resolve(args[index + 1]) or cwd
            index += 2
            continue
        options.append(args[index])
        index += 1
    if index >= len(args) or args[index] != "apply":
        return None
    rest = list(args[index + 1 :])
    flags, operands = options_and_operands(rest)
    if has_flag(flags, "", ("check", "stat", "numstat", "summary")) and not has_flag(
        flags, "", ("apply",)
    ):
        return Changes((), tuple(p for p in map(resolve, operands) if p), (), True)
    raw_strip = next((f[2:] for f in flags if f.startswith("-p") and f[2:].isdigit()), "1")
    directory = _value(rest, "", "directory") or ""
    sources = tuple(p for p in map(resolve, operands) if p is not None)
    names: list[str] = []
    known = bool(sources)
    for source in sources:
        text = _read_text(source)
        if text is None:
            known = False
            continue
        for name in diff_names(text):
            stripped = strip_components(name, int(raw_strip))
            if stripped:
                names.append(os.path.join(directory, stripped) if directory else stripped)
    return Changes((base,), sources, _listed(names, base, resolve), known)


def archive_members(path: Path) -> list[str] | None:
    """The member names of a tar (any compression tarfile reads) or zip archive, or None."""
    if not _regular(path, MAX_ARCHIVE_BYTES):
        return None
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                return archive.namelist()[: MAX_MEMBERS + 1]
        with tarfile.open(path) as archive:
            names: list[str] = []
            for member in archive:
                names.append(member.name)
                if len(names) > MAX_MEMBERS:
                    break
                if member.offset_data + member.size > MAX_UNPACKED_BYTES:
                    # Reaching the next header would unpack this much first (a compressed
                    # archive is read through): the list cannot be known in time.
                    return None
            return names
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, ValueError):
        return None


def _tar_values(args: Sequence[str]) -> tuple[str, dict[str, str]]:
    """(every short option letter given, the values of -f and -C) of a tar line, reading
    clusters the way tar does: `-xvf A` and `-xfA` give A to f, `xf A` is the old style."""
    letters = ""
    values: dict[str, str] = {}
    rest = list(args)
    if rest and not rest[0].startswith("-"):
        rest[0] = "-" + rest[0]  # old style: the first word is a cluster without its dash
    index = 0
    while index < len(rest):
        arg = rest[index]
        index += 1
        if arg == "--":
            break
        for long, letter in (("file", "f"), ("directory", "C")):
            if long_matches(arg, (long,)):
                if "=" in arg:
                    values[letter] = arg.split("=", 1)[1]
                elif index < len(rest):
                    values[letter] = rest[index]
                    index += 1
        if not arg.startswith("-") or arg.startswith("--"):
            continue
        cluster = arg[1:]
        for position, letter in enumerate(cluster):
            letters += letter
            if letter in "fC":
                tail = cluster[position + 1 :]
                if tail:
                    values[letter] = tail
                elif index < len(rest):
                    values[letter] = rest[index]
                    index += 1
                break
    return letters, values


def _tar(args: Sequence[str], cwd: Path, resolve: Resolve) -> Changes:
    letters, values = _tar_values(args)
    extract = "x" in letters or any(long_matches(a, ("extract", "get")) for a in args)
    archive_arg = values.get("f")
    archive = resolve(archive_arg) if archive_arg and archive_arg != "-" else None
    if not extract:
        # Creating or updating: the archive file is what changes.
        if archive is None:
            return Changes((), (), (), True)
        return Changes((archive.parent,), (), (archive,), True)
    directory = values.get("C")
    base = (resolve(directory) if directory else cwd) or cwd
    members = archive_members(archive) if archive is not None else None
    if members is None:
        return Changes((base,), (archive,) if archive else (), (), False)
    keep_absolute = "P" in letters or any(long_matches(a, ("absolute-names",)) for a in args)
    names = [m if keep_absolute else m.lstrip("/") for m in members]
    known = len(members) <= MAX_MEMBERS
    return Changes((base,), _some(archive), _listed(names, base, resolve), known)


def _unzip(args: Sequence[str], cwd: Path, resolve: Resolve) -> Changes:
    options, operands = options_and_operands(args)
    directory = _value(args, "d", "")
    values = {directory} if directory else set()
    plain = [o for o in operands if o not in values]
    if has_flag(options, "lptvZ", ()):
        return Changes((), tuple(p for p in map(resolve, plain[:1]) if p), (), True)
    archive = resolve(plain[0]) if plain else None
    base = (resolve(directory) if directory else cwd) or cwd
    members = archive_members(archive) if archive is not None else None
    if members is None or len(plain) > 1:
        return Changes((base,), (archive,) if archive else (), (), False)
    names = [m.lstrip("/") for m in members]
    return Changes(
        (base,), _some(archive), _listed(names, base, resolve), len(members) <= MAX_MEMBERS
    )


def _copy(args: Sequence[str], cwd: Path, resolve: Resolve) -> Changes:
    _, operands = options_and_operands(args)
    target_dir = _value(args, "t", "target-directory")
    values = {target_dir} if target_dir else set()
    plain = [o for o in operands if o not in values]
    if target_dir:
        destination = resolve(target_dir)
        sources = plain
    else:
        destination = resolve(plain[-1]) if plain else None
        sources = plain[:-1]
    resolved_sources = tuple(p for p in map(resolve, sources) if p is not None)
    if destination is None:
        return Changes((), resolved_sources, (), False)
    # An existing folder receives the sources; anything else is created (or replaced) as is.
    where = destination if destination.is_dir() else destination.parent
    if destination.is_dir():
        files = tuple(where / s.name for s in resolved_sources)
    else:
        files = (destination,)
    return Changes((where,), resolved_sources, files, True)


def changes_of(name: str, args: Sequence[str], cwd: Path, resolve: Resolve) -> Changes | None:
    """Where program `name` with `args` may write, when it is one that writes wherever it is
    told (None: it is not, and its named places are its writable ones as for any command).

    `resolve` turns an argument into the resolved path it leads to (None if it cannot)."""
    if name == "patch":
        return _patch(args, cwd, resolve)
    if name == "git":
        return _git_apply(args, cwd, resolve)
    if name in ("tar", "bsdtar", "gtar"):
        return _tar(args, cwd, resolve)
    if name == "unzip":
        return _unzip(args, cwd, resolve)
    if name in ("cp", "rsync"):
        if name == "rsync" and any(":" in o.split("/", 1)[0] for o in args if o[:1] != "-"):
            return None  # a remote end: the rules ask about the network; nothing to list here
        return _copy(args, cwd, resolve)
    return None

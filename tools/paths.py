"""Path scope: turning a path the user or the model wrote into the one real place it names.

Both the file tools (`targets()` and `run()`) and the permission runner use these functions, so a
grant for `~/Documents` and a tool call for `~/Documents/../.ssh/id_rsa` are compared as the
kernel would see them: `~` expanded, made absolute, every symlink and `..` resolved. Containment
is decided on whole path components, never on string prefixes.

This module must never touch a file's contents, never create anything, and never decide who may
do what: it only answers "where does this path really lead" and "is that inside this prefix".
"""

from __future__ import annotations

import errno
import logging
import os
import re
from pathlib import Path

log = logging.getLogger("chamberlain.tools.paths")

# Quote pairs a user or a model likes to wrap paths in ("~/My Notes", `notes.txt`, 'a b').
_QUOTES = ('""', "''", "``", "“”", "‘’")

# Longer than any real path (PATH_MAX is 4096 on Linux); bounds the work on hostile input.
MAX_PATH_CHARS = 4096
# A Windows path: a drive letter (S:\Payroll) or a share (\\fs01\public). On this system
# it names no file: joined to the working directory it would name a file nobody meant.
_WINDOWS_PATH_RE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\]+\\)")


def _strip_quotes(raw: str) -> str:
    text = raw.strip()
    # One pair only: a name that really starts and ends with a quote is vanishingly rare, and a
    # path wrapped twice is not something anyone writes.
    for pair in _QUOTES:
        if len(text) >= 2 and text[0] == pair[0] and text[-1] == pair[1]:
            return text[1:-1].strip()
    return text


def _expand_home(text: str, home: Path | None) -> str:
    if text == "~" or text.startswith("~/") or text.startswith("~" + os.sep):
        base = os.fspath(home) if home is not None else os.path.expanduser("~")
        return base + text[1:]
    if text.startswith("~"):
        # "~alice/x": another user's home, from the password database.
        return os.path.expanduser(text)
    return text


def resolve_path(raw: str, *, home: Path | None = None, cwd: Path | None = None) -> Path:
    """The absolute, symlink-free path `raw` leads to (it need not exist yet).

    `~` is the injected `home` when given, else the real home. Relative paths are taken against
    `cwd` (default: the process's working directory). Surrounding whitespace and one pair of
    quotes are stripped. Raises ValueError for an empty path, a NUL byte, an overlong path, or a
    path that runs into a symlink loop.
    """
    if not isinstance(raw, str):
        raise ValueError(f"a path must be text, not {type(raw).__name__}")
    if "\x00" in raw:
        raise ValueError("the path contains a NUL byte, which no file name can hold")
    text = _strip_quotes(raw)
    if not text:
        raise ValueError("the path is empty; give a file or folder name")
    if len(text) > MAX_PATH_CHARS:
        raise ValueError(f"the path is longer than {MAX_PATH_CHARS} characters")

    if os.name != "nt" and _WINDOWS_PATH_RE.match(text):
        raise ValueError(
            f"{text} is a Windows path (a drive letter or a network share); this computer names "
            "its files from / — give the folder as this computer sees it (where the drive or "
            "share is mounted, for instance /mnt/…)"
        )
    text = _expand_home(text, home)
    if not os.path.isabs(text):
        base = os.fspath(cwd) if cwd is not None else os.getcwd()
        text = os.path.join(base, text)

    try:
        # Strict first: it is exact, and it is the only way to notice a symlink loop.
        return Path(os.path.realpath(text, strict=True))
    except (FileNotFoundError, NotADirectoryError):
        # The path (or part of it) does not exist yet: resolve what exists, keep the rest.
        resolved = os.path.realpath(text)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(f"{raw.strip()!r} runs into a symlink loop") from exc
        # Permission denied on a component, and the like: resolve as far as we can see. The
        # kernel will refuse the same component when the tool runs.
        log.debug("strict resolution of a path failed (%s); resolving leniently", exc.strerror)
        try:
            resolved = os.path.realpath(text)
        except OSError as again:
            # Even the lenient walk is refused (`/proc/1/root` as a user, or in a container):
            # the place cannot be known, so it cannot be checked; say so rather than crash.
            raise ValueError(
                f"{raw.strip()[:200]!r} cannot be looked at ({again.strerror or again})"
            ) from again
    return Path(resolved)


def components(path: Path) -> tuple[str, ...]:
    """The parts `is_within` compares: ValueError for a path not absolute or still holding
    `..`."""
    if not path.is_absolute():
        raise ValueError(f"{os.fspath(path)!r} is not absolute; resolve it first")
    parts = path.parts
    if ".." in parts:
        raise ValueError(f"{os.fspath(path)!r} still holds '..'; resolve it first")
    return tuple(os.path.normcase(p) for p in parts)


def is_within(target: Path, prefix: Path) -> bool:
    """True when `target` is `prefix` or lies under it, compared component by component.

    Both must already be resolved (see `resolve_path`); a relative path or one that still holds
    `..` raises ValueError rather than being guessed at. `/home/a/Documents2` is not within
    `/home/a/Documents`; a path is within itself; `/` contains every absolute path.
    """
    t = components(target)
    p = components(prefix)
    return len(t) >= len(p) and t[: len(p)] == p


def path_in_scope(
    raw: str, scope: str, *, home: Path | None = None, cwd: Path | None = None
) -> bool:
    """Whether the path `raw` really leads inside the grant scope `scope`.

    A target that is not a valid path at all is in no scope (False). A scope that is not a valid
    path raises ValueError: that is a broken grant, not untrusted input.
    """
    prefix = resolve_path(scope, home=home, cwd=cwd)
    try:
        target = resolve_path(raw, home=home, cwd=cwd)
    except ValueError:
        return False
    return is_within(target, prefix)

"""The read-only file tools: list a folder, read a text file, search under a folder.

Each tool's arguments are a model (`FileListArguments`, ...). A call is prepared once: the fully
resolved path it will touch, which the runner holds against the grant's path scope before
anything is opened; the run then works on exactly that prepared path, opened without following a
symlink in any component, so a link swapped in after the check fails instead of redirecting.

These tools must never write, rename or delete anything, never follow a symlink out of the folder
they were pointed at, never load a file whole when only its head is wanted, and never log file
contents (names and sizes at most, at debug level). They never open anything in a private place
(tools.private: credential stores and Chamberlain's own folder), whatever the grants say: a call
aimed at one is refused before anyone is asked, and a listing or search that meets one leaves it
out, saying only how many entries it withheld.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fnmatch
import functools
import logging
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import charset_normalizer
from pydantic import Field, create_model

from tools.arguments import NOT_BLANK, ToolArguments
from tools.escapes import path_from_visible, visible_name, visible_path
from tools.manual import (
    CallPlan,
    Capability,
    Prepared,
    RequestWords,
    Tool,
    ToolError,
    ToolManual,
    ToolRefused,
    ToolResult,
    typed_tool,
)
from tools.paths import MAX_PATH_CHARS, is_within, resolve_path
from tools.private import PrivateHit, PrivatePlaces, private_places
from tools.units import human_size

log = logging.getLogger("chamberlain.tools.files")

DEFAULT_READ_CAP = 256 * 1024
DEFAULT_SEARCH_MAX_FILES = 50_000
DEFAULT_SEARCH_CONTENT_LIMIT = 2 * 1024 * 1024
DEFAULT_SEARCH_TIME_LIMIT_S = 10.0
# A folder with more entries than this is listed from its first entries only: sorting needs
# every name in memory, and nobody reads a listing that long.
LIST_SCAN_CAP = 100_000
MAX_LIST_ENTRIES = 5_000
MAX_SEARCH_RESULTS = 1_000
SNIPPET_CHARS = 200
# Chamberlain's own folders are walked (for hard links to their files) up to this many entries,
# nearest first: the keys, grants and logs sit at the top.
OWN_FILES_SCAN_CAP = 10_000

_O_PATH = getattr(os, "O_PATH", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the open
_O_BINARY = getattr(os, "O_BINARY", 0)
_READ_FLAGS = os.O_RDONLY | _O_NONBLOCK | _O_BINARY
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY

# Longest first: the UTF-32-LE mark begins with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
    (codecs.BOM_UTF8, "utf-8", "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
)

# DOS and classic-Mac code pages: charset-normalizer often prefers one of them for short
# Western text (French Latin-1 comes out as mac_latin2), and files in them are rare today.
_RARE_ENCODINGS = [
    "cp037", "cp273", "cp424", "cp437", "cp500", "cp720", "cp737", "cp775", "cp850", "cp852",
    "cp855", "cp856", "cp857", "cp858", "cp860", "cp861", "cp862", "cp863", "cp864", "cp865",
    "cp866", "cp869", "cp875", "cp1006", "cp1026", "cp1125", "cp1140", "hp_roman8",
    "mac_cyrillic", "mac_greek", "mac_iceland", "mac_latin2", "mac_roman", "mac_turkish",
]  # fmt: skip
# When several single-byte readings are about equally plausible, the Western one wins.
_PREFERRED_ENCODINGS = ("cp1252", "latin_1", "iso8859_15")
_CHAOS_TIE = 0.01


# --- arguments -----------------------------------------------------------------------------------

PathText = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS), NOT_BLANK]


class FileListArguments(ToolArguments):
    path: PathText = Field(description="The folder to list, absolute or starting with ~.")
    show_hidden: bool = False
    max_entries: int = Field(500, ge=1, le=MAX_LIST_ENTRIES)


class FileReadArguments(ToolArguments):
    path: PathText = Field(description="The file to read, absolute or starting with ~.")
    max_bytes: int = Field(DEFAULT_READ_CAP, ge=1, le=DEFAULT_READ_CAP)


def file_read_arguments(read_cap: int) -> type[FileReadArguments]:
    """The file_read model for a cap: max_bytes defaults to it and may never exceed it."""
    if read_cap == DEFAULT_READ_CAP:
        return FileReadArguments
    return _capped_read_arguments(read_cap)


@functools.cache
def _capped_read_arguments(read_cap: int) -> type[FileReadArguments]:
    return create_model(
        "FileReadArguments",
        __base__=FileReadArguments,
        max_bytes=(int, Field(read_cap, ge=1, le=read_cap)),
    )


class FileSearchArguments(ToolArguments):
    root: PathText = Field(description="The folder to search in, absolute or starting with ~.")
    name_glob: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    content: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    max_results: int = Field(200, ge=1, le=MAX_SEARCH_RESULTS)
    show_hidden: bool = False


# --- paths: resolve once, open without following links -----------------------------------------


class _PathBook:
    """Resolves path arguments for the file tools.

    A call is prepared once (`for_targets`: resolved, checked against the private places) and
    run on exactly that path (`for_run` given the prepared path): resolving again in between
    would let a symlink changed meanwhile (say, while the user looks at the permission dialog)
    point the tool somewhere unchecked.
    """

    def __init__(self, home: Path | None, cwd: Path | None, private: PrivatePlaces) -> None:
        self._home = home
        self._cwd = cwd
        self.private = private

    def resolve(self, raw: str) -> Path:
        try:
            path = resolve_path(raw, home=self._home, cwd=self._cwd)
        except ValueError as exc:
            shown = visible_path(raw.strip()[:200])
            raise ToolError(f"Cannot use the path '{shown}': {exc}") from exc
        if os.path.lexists(path):
            return path
        # A name these tools showed escaped ("report\xff.txt" for a name that is not UTF-8),
        # handed back as it was shown: it names the file it was shown for. A file really called
        # that, escapes and all, wins (it was looked up first).
        unescaped = path_from_visible(raw)
        if unescaped is None:
            return path
        try:
            other = resolve_path(unescaped, home=self._home, cwd=self._cwd)
        except ValueError:
            return path
        return other if os.path.lexists(other) else path

    def for_targets(self, raw: str) -> Path:
        path = self.resolve(raw)
        _refuse_private_path(path, _PrivateCheck(self.private))
        return path

    def for_run(self, raw: str, prepared: Path | None = None) -> tuple[Path, _PrivateCheck]:
        """The prepared path (resolved afresh only for a call nobody prepared), checked again:
        Chamberlain's folder may have gained a hard link since. With the check for the run."""
        path = prepared if prepared is not None else self.resolve(raw)
        check = _PrivateCheck(self.private)
        _refuse_private_path(path, check)
        return path, check


# --- private places: never opened, never listed ---------------------------------------------


_PRIVATE_WORDS = {"credentials": "credentials", "chamberlain": "Chamberlain's own files"}


class _PrivateCheck:
    """Answers "is this private" for one tool call (tools.private decides what is).

    By path: the resolved path lies in a private place. By name, while walking: an entry of a
    folder is itself one of the places (looked up by parent, so a search costs one dict lookup
    per entry). By identity: a file or folder that is one of Chamberlain's own under another
    name (a hard link, a bind mount), which only its (device, inode) can tell. Chamberlain's
    folders are small and change (memory.db-wal, rotated logs), so each call walks them afresh,
    and only when something could be such an alias.
    """

    def __init__(self, places: PrivatePlaces) -> None:
        self.places = places
        self._own: dict[tuple[int, int], Path] | None = None
        self._own_inodes: frozenset[int] | None = None

    def path(self, path: Path) -> PrivateHit | None:
        return self.places.hit(path)

    def child(self, folder: Path, name: str) -> PrivateHit | None:
        """The private place `folder / name` is (`folder` resolved and not itself private)."""
        names = _private_children(self.places).get(folder)
        return names.get(name) if names else None

    def own(self, st: os.stat_result) -> PrivateHit | None:
        """The Chamberlain folder holding the file or folder `st` describes, or None."""
        if not self.places.app_dirs:
            return None
        if stat.S_ISREG(st.st_mode):
            if st.st_nlink < 2:
                return None  # its only name is the path, which `path()` judges
        elif not stat.S_ISDIR(st.st_mode):
            return None
        place = self._own_files().get((st.st_dev, st.st_ino))
        return PrivateHit(place, "chamberlain") if place is not None else None

    def own_inodes(self) -> frozenset[int]:
        """Inode numbers of Chamberlain's own files (a cheap first test on a DirEntry)."""
        if self._own_inodes is None:
            owned = self._own_files() if self.places.app_dirs else {}
            self._own_inodes = frozenset(ino for _, ino in owned)
        return self._own_inodes

    def _own_files(self) -> dict[tuple[int, int], Path]:
        if self._own is None:
            self._own = _own_identities(self.places.app_dirs)
        return self._own


@functools.lru_cache(maxsize=8)
def _private_children(places: PrivatePlaces) -> dict[Path, dict[str, PrivateHit]]:
    """The private places by parent folder, then by name (Chamberlain's folders first)."""
    children: dict[Path, dict[str, PrivateHit]] = {}
    kinds = [(place, "chamberlain") for place in places.app_dirs]
    kinds += [(place, "credentials") for place in places.credentials]
    for place, kind in kinds:
        children.setdefault(place.parent, {}).setdefault(place.name, PrivateHit(place, kind))
    return children


def _own_identities(app_dirs: tuple[Path, ...]) -> dict[tuple[int, int], Path]:
    """(device, inode) of every file and folder in Chamberlain's folders -> the folder."""
    found: dict[tuple[int, int], Path] = {}
    for place in app_dirs:
        try:
            st = os.stat(place)
        except OSError:
            continue
        found[(st.st_dev, st.st_ino)] = place
        queue = [place]
        seen = 0
        while queue and seen < OWN_FILES_SCAN_CAP:
            folder = queue.pop(0)
            try:
                with os.scandir(folder) as it:
                    for entry in it:
                        seen += 1
                        st = entry.stat(follow_symlinks=False)
                        found[(st.st_dev, st.st_ino)] = place
                        if stat.S_ISDIR(st.st_mode):
                            queue.append(Path(entry.path))
                        if seen >= OWN_FILES_SCAN_CAP:
                            log.warning(
                                "%s has over %d entries; not all were checked for hard links",
                                place,
                                OWN_FILES_SCAN_CAP,
                            )
                            break
            except OSError as exc:
                log.debug("could not walk a Chamberlain folder (%s)", exc.strerror)
    return found


def _shown(path: Path | str) -> str:
    """A path as messages and results show it: escaped where it would mislead or break."""
    return visible_path(str(path))


def _refusal(path: Path, hit: PrivateHit) -> ToolRefused:
    why = f"{hit.describe()}; Chamberlain's tools never read it"
    try:
        inside = is_within(path, hit.place)
    except ValueError:
        inside = False
    if inside:
        return ToolRefused(f"refused: {why}")
    alias = "a bind mount" if path.is_dir() else "a hard link"
    return ToolRefused(f"refused: {_shown(path)} is another name ({alias}) for something in {why}")


def _refuse_private_path(path: Path, check: _PrivateCheck) -> None:
    """Raise ToolRefused when the resolved `path` is, or is an alias of, something private."""
    hit = check.path(path)
    if hit is None and check.places.app_dirs:
        # A path that does not exist (yet) is no alias: opening it will say it is missing.
        with contextlib.suppress(OSError, ValueError):
            hit = check.own(os.stat(path))
    if hit is not None:
        raise _refusal(path, hit)


def _refuse_opened(path: Path, st: os.stat_result, check: _PrivateCheck) -> None:
    """Raise ToolRefused when what was opened as `path` turns out to be Chamberlain's own."""
    hit = check.own(st)
    if hit is not None:
        raise _refusal(path, hit)


def _entry_private(
    folder: Path, entry: os.DirEntry[str], check: _PrivateCheck
) -> PrivateHit | None:
    """Whether a folder entry, already past the by-name test, leads somewhere private: a
    symlink into a private place, or another name for one of Chamberlain's files or folders."""
    try:
        if entry.is_symlink():
            real = Path(os.path.realpath(folder / entry.name))
            hit = check.path(real)
            if hit is None and check.places.app_dirs:
                try:
                    hit = check.own(os.stat(real))
                except OSError:
                    return None  # a dangling link leads nowhere
            return hit
        if not check.places.app_dirs:
            return None
        if entry.is_dir(follow_symlinks=False) or entry.inode() in check.own_inodes():
            return check.own(entry.stat(follow_symlinks=False))
    except OSError:
        return None
    return None


def _withheld_note(count: int, kinds: list[str]) -> str:
    words = ", ".join(_PRIVATE_WORDS.get(k, k) for k in kinds)
    return f"{_plural(count, 'private entry', 'private entries')} not shown ({words})"


def _kinds(hits: list[str]) -> list[str]:
    return [k for k in _PRIVATE_WORDS if k in hits]


def _open_no_symlinks(path: Path, flags: int) -> int:
    """Open an already resolved path without following a symlink in any of its components.

    Raises OSError (ELOOP or ENOTDIR) if a component has become a symlink since it was resolved.
    Where the platform lacks O_PATH, only the last component is protected.
    """
    flags |= _O_NOFOLLOW | _O_CLOEXEC
    parts = path.parts
    if not _O_PATH or os.open not in os.supports_dir_fd or len(parts) == 1:
        return os.open(path, flags)
    # O_PATH opens a folder for walking through, with execute permission only (like the kernel
    # needs for /home/alice when it is mode 711), not for reading.
    walk_flags = _O_PATH | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
    fd = os.open(parts[0], _O_PATH | _O_DIRECTORY | _O_CLOEXEC)
    try:
        for part in parts[1:-1]:
            inner = os.open(part, walk_flags, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], flags, dir_fd=fd)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _open_error(exc: OSError, path: Path, *, want_dir: bool) -> ToolError:
    """A plain-words ToolError for a failed open of the resolved `path`."""
    shown = _shown(path)
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"{shown} does not exist")
    if isinstance(exc, PermissionError):
        return ToolError(f"Permission denied: {_shown(path)} cannot be read by Chamberlain's user")
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            # NotADirectoryError: a parent is a file ("notes.txt/sub").
            return ToolError(f"{shown} does not exist")
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISLNK(mode):
            if want_dir and not stat.S_ISDIR(mode):
                return ToolError(
                    f"{shown} is not a folder (it is {_kind(mode)}); use file_read to read a file"
                )
            if not want_dir and stat.S_ISDIR(mode):
                return ToolError(f"{shown} is a folder; use file_list to see what is in it")
        return ToolError(
            f"{shown} changed while it was being opened (a symlink appeared); try again"
        )
    return ToolError(f"Cannot open {shown}: {exc.strerror or exc}")


def _read_head(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from the start of an open file."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


# --- text decoding -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodedText:
    text: str
    encoding: str


def _decode(data: bytes, codec: str, complete: bool) -> str:
    # An incremental decoder drops a character cut in half at the end of a truncated head.
    decoder = codecs.getincrementaldecoder(codec)(errors="strict")
    return decoder.decode(data, final=complete)


def _detect_encoding(data: bytes) -> str | None:
    matches = charset_normalizer.from_bytes(data, cp_exclusion=_RARE_ENCODINGS)
    best = matches.best()
    if best is None:
        return None
    for match in matches:
        if match.chaos <= best.chaos + _CHAOS_TIE and any(
            enc in match.could_be_from_charset for enc in _PREFERRED_ENCODINGS
        ):
            return next(enc for enc in _PREFERRED_ENCODINGS if enc in match.could_be_from_charset)
    return str(best.encoding)


def decode_text(data: bytes, *, complete: bool = True) -> DecodedText | None:
    """Decode file bytes as text, or None when they do not look like text.

    Byte-order marks decide first (UTF-8, UTF-16, UTF-32); then NUL bytes mean binary; then
    UTF-8 is tried; then charset-normalizer guesses. `complete=False` says `data` is the head of
    a longer file, so a multi-byte character cut at the end is dropped rather than refused.
    """
    if not data:
        return DecodedText("", "utf-8")
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                return DecodedText(_decode(data[len(bom) :], codec, complete), label)
            except UnicodeDecodeError:
                return None
    if b"\x00" in data:
        return None
    try:
        return DecodedText(_decode(data, "utf-8", complete), "utf-8")
    except UnicodeDecodeError:
        pass
    encoding = _detect_encoding(data)
    if encoding is None:
        return None
    try:
        return DecodedText(_decode(data, encoding, complete), encoding)
    except (UnicodeDecodeError, LookupError):
        return None


# --- rendering -----------------------------------------------------------------------------------


def _iso_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).astimezone().isoformat(timespec="seconds")


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {many or word + 's'}"


# --- file_list -----------------------------------------------------------------------------------


def _entry_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _list_folder(book: _PathBook, args: FileListArguments, at: Path | None = None) -> ToolResult:
    path, check = book.for_run(args.path, at)
    show_hidden = args.show_hidden
    max_entries = args.max_entries

    try:
        fd = _open_no_symlinks(path, _DIR_FLAGS)
    except OSError as exc:
        raise _open_error(exc, path, want_dir=True) from exc

    hidden_skipped = 0
    withheld: list[str] = []  # the kinds of the private entries left out
    scan_capped = False
    entries: list[dict[str, Any]] = []
    try:
        _refuse_opened(path, os.fstat(fd), check)
        # (is not a dir, folded name, name, entry); DirEntry.stat() below still needs `fd` open.
        keyed: list[tuple[bool, str, str, os.DirEntry[str]]] = []
        with os.scandir(fd) as it:
            for entry in it:
                if len(keyed) + hidden_skipped + len(withheld) >= LIST_SCAN_CAP:
                    scan_capped = True
                    break
                # Private before hidden, so the count says the same whether or not hidden
                # entries are shown; the name of a private entry is never shown either way.
                hit = check.child(path, entry.name)
                if hit is not None:
                    withheld.append(hit.kind)
                    continue
                if entry.name.startswith(".") and not show_hidden:
                    hidden_skipped += 1
                    continue
                hit = _entry_private(path, entry, check)
                if hit is not None:
                    withheld.append(hit.kind)
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                keyed.append((not is_dir, entry.name.casefold(), entry.name, entry))
        keyed.sort(key=lambda k: (k[0], k[1], k[2]))
        for _, _, name, entry in keyed[:max_entries]:
            entries.append(_describe_entry(fd, name, entry))
    except PermissionError as exc:
        raise ToolError(
            f"Permission denied: {_shown(path)} cannot be read by Chamberlain's user"
        ) from exc
    except OSError as exc:
        raise ToolError(f"Cannot list {_shown(path)}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)

    total = len(keyed)
    truncated = total > max_entries or scan_capped
    data = {
        "path": _shown(path),
        "entries": entries,
        "total": total,
        "shown": len(entries),
        "hidden_skipped": hidden_skipped,
        "private_withheld": len(withheld),
        "private_kinds": _kinds(withheld),
        "truncated": truncated,
    }
    if scan_capped:
        data["note"] = f"the folder has more than {LIST_SCAN_CAP:,} entries; only some were read"
    listed = tuple(os.path.join(_shown(path), e["name"]) for e in entries)
    return ToolResult(data=data, text=_render_listing(data), truncated=truncated, listed=listed)


def _describe_entry(dir_fd: int, name: str, entry: os.DirEntry[str]) -> dict[str, Any]:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        # Deleted between the listing and the stat: still report the name.
        return {"name": visible_name(name), "type": "other", "size": None, "modified": None}
    kind = _entry_type(st.st_mode)
    # Names as they are shown everywhere (escaped when not UTF-8, or holding control, bidi or
    # zero-width characters); a later call may use the name as shown.
    item: dict[str, Any] = {
        "name": visible_name(name),
        "type": kind,
        "size": st.st_size if kind == "file" else None,
        "modified": _iso_time(st.st_mtime),
    }
    if kind == "symlink":
        try:
            item["link_target"] = _shown(os.readlink(name, dir_fd=dir_fd))
        except OSError:
            item["link_target"] = None
    return item


_KIND_WORDS = {
    "dir": ("folder", "folders"),
    "file": ("file", "files"),
    "symlink": ("symlink", "symlinks"),
    "other": ("other entry", "other entries"),
}


def _render_listing(data: dict[str, Any]) -> str:
    entries: list[dict[str, Any]] = data["entries"]
    if data["truncated"]:
        summary = f"showing {len(entries):,} of {data['total']:,} entries"
    else:
        counts = {kind: sum(1 for e in entries if e["type"] == kind) for kind in _KIND_WORDS}
        summary = (
            ", ".join(_plural(n, *_KIND_WORDS[kind]) for kind, n in counts.items() if n) or "empty"
        )
    lines = [f"{data['path']}: {summary}"]
    for e in entries:
        size = human_size(e["size"]) if e["size"] is not None else "-"
        modified = (e["modified"] or "")[:16].replace("T", " ")
        name = e["name"]
        if e["type"] == "dir":
            name += "/"
        elif e["type"] == "symlink":
            name += f" -> {e.get('link_target') or '?'}"
        lines.append(f"  {size:>10}  {modified:<16}  {name}")
    notes = []
    if data["truncated"]:
        notes.append(f"{data['total'] - len(entries):,} more not shown")
    if data["hidden_skipped"]:
        hidden = _plural(data["hidden_skipped"], "hidden entry", "hidden entries")
        notes.append(f"{hidden} not shown")
    if notes:
        lines.append("(" + "; ".join(notes) + ")")
    if data["private_withheld"]:
        lines.append(_withheld_note(data["private_withheld"], data["private_kinds"]))
    return "\n".join(lines)


# --- file_read -----------------------------------------------------------------------------------


def _read_file(book: _PathBook, args: FileReadArguments, at: Path | None = None) -> ToolResult:
    path, check = book.for_run(args.path, at)
    limit = args.max_bytes

    try:
        fd = _open_no_symlinks(path, _READ_FLAGS)
    except OSError as exc:
        raise _open_error(exc, path, want_dir=False) from exc
    try:
        st = os.fstat(fd)
        _refuse_opened(path, st, check)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{_shown(path)} is a folder; use file_list to see what is in it")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(
                f"{_shown(path)} is {_kind(st.st_mode)}, not a regular file; it cannot be read"
            )
        # One byte past the limit tells a file of exactly `limit` bytes from a longer one, even
        # where st_size lies (files under /proc report 0).
        head = _read_head(fd, limit + 1)
    except PermissionError as exc:
        raise ToolError(
            f"Permission denied: {_shown(path)} cannot be read by Chamberlain's user"
        ) from exc
    except OSError as exc:
        raise ToolError(f"Cannot read {_shown(path)}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)

    truncated = len(head) > limit
    head = head[:limit]
    size = max(st.st_size, len(head) + (1 if truncated else 0))
    decoded = decode_text(head, complete=not truncated)
    if decoded is None:
        raise ToolError(
            f"{_shown(path)} looks like a binary file ({size:,} bytes); "
            "Chamberlain reads text files only"
        )
    log.debug("read %d of %d bytes from a file (%s)", len(head), size, decoded.encoding)
    data = {
        "path": _shown(path),
        "encoding": decoded.encoding,
        "size": size,
        "bytes_read": len(head),
        "truncated": truncated,
        "content": decoded.text,
    }
    header = f"── {_shown(path)} ({human_size(size)}, {decoded.encoding}) ──"
    text = f"{header}\n{decoded.text}"
    if truncated:
        text += (
            f"\n── truncated: showing the first {human_size(len(head))} of {human_size(size)} ──"
        )
    return ToolResult(data=data, text=text, truncated=truncated)


# --- file_search ---------------------------------------------------------------------------------


# A folder waiting to be walked: its path, and the (device, inode) its parent's listing showed.
_Pending = tuple[Path, tuple[int, int]]


@dataclass
class _SearchState:
    root: Path
    name_glob: str | None
    needle: str | None
    max_results: int
    show_hidden: bool
    max_entries: int
    content_limit: int
    deadline: float
    private: _PrivateCheck
    hits: list[dict[str, Any]] = field(default_factory=list)
    entries_scanned: int = 0
    files_content_checked: int = 0
    dirs_unreadable: int = 0
    symlink_escapes_skipped: int = 0
    hidden_skipped: int = 0
    content_skipped_large: int = 0
    content_skipped_binary: int = 0
    content_skipped_unreadable: int = 0
    withheld: list[str] = field(default_factory=list)  # the kinds of private entries left out
    stopped: str | None = None  # why the walk ended early, if it did


def _search(
    book: _PathBook,
    limits: tuple[int, int, float],
    clock: Callable[[], float],
    args: FileSearchArguments,
    at: Path | None = None,
) -> ToolResult:
    max_entries, content_limit, time_limit = limits
    root, check = book.for_run(args.root, at)
    name_glob, content = args.name_glob, args.content
    state = _SearchState(
        root=root,
        name_glob=name_glob.casefold() if name_glob else None,
        needle=content.casefold() if content else None,
        max_results=args.max_results,
        show_hidden=args.show_hidden,
        max_entries=max_entries,
        content_limit=content_limit,
        deadline=clock() + time_limit,
        private=check,
    )

    try:
        fd = _open_no_symlinks(root, _DIR_FLAGS)
    except OSError as exc:
        raise _open_error(exc, root, want_dir=True) from exc
    try:
        st = os.fstat(fd)
        _refuse_opened(root, st, check)
    finally:
        os.close(fd)

    # Depth-first with an explicit stack: no recursion limit, however deep the tree.
    stack: list[_Pending] = [(root, (st.st_dev, st.st_ino))]
    while stack and state.stopped is None:
        folder, identity = stack.pop()
        subdirs = _search_folder(folder, identity, state, clock)
        # Reversed, so the alphabetically first subfolder is searched next.
        stack.extend(reversed(subdirs))

    truncated = state.stopped is not None
    data: dict[str, Any] = {
        "root": _shown(root),
        "name_glob": name_glob,
        "content": content,
        "hits": state.hits,
        "entries_scanned": state.entries_scanned,
        "files_content_checked": state.files_content_checked,
        "dirs_unreadable": state.dirs_unreadable,
        "symlink_escapes_skipped": state.symlink_escapes_skipped,
        "hidden_skipped": state.hidden_skipped,
        "content_skipped_large": state.content_skipped_large,
        "content_skipped_binary": state.content_skipped_binary,
        "content_skipped_unreadable": state.content_skipped_unreadable,
        "private_withheld": len(state.withheld),
        "private_kinds": _kinds(state.withheld),
        "truncated": truncated,
        "stopped_because": state.stopped,
    }
    listed = tuple(str(hit["path"]) for hit in state.hits)
    return ToolResult(data=data, text=_render_search(data), truncated=truncated, listed=listed)


def _open_folder(folder: Path, identity: tuple[int, int]) -> int:
    """Open a folder met during the walk, refusing it if it is not the folder that was listed.

    Walking every path from / component by component would cost a system call per level per
    folder. Instead the last component is opened without following a link, and what opens must
    be the (device, inode) its parent's listing showed: a folder swapped for a symlink anywhere
    along the path since then leads somewhere else, and is refused.
    """
    fd = os.open(folder, _DIR_FLAGS | _O_NOFOLLOW | _O_CLOEXEC)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != identity:
        os.close(fd)
        raise OSError(errno.ESTALE, "the folder was replaced during the search", str(folder))
    return fd


def _search_folder(
    folder: Path, identity: tuple[int, int], state: _SearchState, clock: Callable[[], float]
) -> list[_Pending]:
    """Examine one folder's entries; return its subfolders to walk next."""
    try:
        fd = _open_folder(folder, identity)
    except OSError as exc:
        state.dirs_unreadable += 1
        log.debug("search: skipping an unreadable folder (%s)", exc.strerror)
        return []
    subdirs: list[_Pending] = []
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: (e.name.casefold(), e.name))
        # The entries' stat() and the file opens below are relative to `fd`: keep it open.
        for entry in entries:
            if state.entries_scanned >= state.max_entries:
                state.stopped = f"looked at {state.max_entries:,} entries"
                break
            if clock() > state.deadline:
                state.stopped = "ran out of time"
                break
            state.entries_scanned += 1
            # Private before hidden, as file_list does; a private folder is never walked into.
            hit = state.private.child(folder, entry.name)
            if hit is not None:
                state.withheld.append(hit.kind)
                continue
            if entry.name.startswith(".") and not state.show_hidden:
                state.hidden_skipped += 1
                continue
            subdir = _search_entry(fd, folder, entry, state)
            if subdir is not None:
                subdirs.append(subdir)
            if state.stopped is not None:
                break
    except OSError as exc:
        state.dirs_unreadable += 1
        log.debug("search: a folder could not be listed (%s)", exc.strerror)
    finally:
        os.close(fd)
    return subdirs


def _search_entry(
    dir_fd: int, folder: Path, entry: os.DirEntry[str], state: _SearchState
) -> _Pending | None:
    """Match one entry (adding a hit to `state`); return it if it is a folder to walk into."""
    path = real = folder / entry.name
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None  # gone since the listing

    private = _entry_private(folder, entry, state.private)
    if private is not None:
        state.withheld.append(private.kind)
        return None

    if stat.S_ISLNK(st.st_mode):
        # A link is reported only if it leads somewhere inside the root, and never walked into.
        real = Path(os.path.realpath(path))
        try:
            inside = is_within(real, state.root)
        except ValueError:
            inside = False
        if not inside:
            state.symlink_escapes_skipped += 1
            return None
        kind = "symlink"
    elif stat.S_ISDIR(st.st_mode):
        kind = "dir"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        return None  # pipes, sockets, devices: nothing to find in them
    subdir = (path, (st.st_dev, st.st_ino)) if kind == "dir" else None

    if state.name_glob is not None and not fnmatch.fnmatchcase(
        entry.name.casefold(), state.name_glob
    ):
        return subdir
    hit: dict[str, Any] | None
    if state.needle is None:
        size = st.st_size if kind == "file" else _file_size(real) if kind == "symlink" else None
        hit = {"size": size}
    elif kind == "file":
        name = entry.name
        hit = _content_hit(
            lambda: os.open(name, _READ_FLAGS | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dir_fd),
            state.needle,
            state,
        )
    elif kind == "symlink":
        hit = _content_hit(lambda: _open_no_symlinks(real, _READ_FLAGS), state.needle, state)
    else:
        hit = None  # a folder has no text of its own
    if hit is not None:
        hit = {"path": _shown(path), "type": kind, **hit}
        if kind == "symlink":
            hit["link_target"] = _shown(real)
        _add_hit(hit, state)
    return subdir


def _add_hit(hit: dict[str, Any], state: _SearchState) -> None:
    if len(state.hits) >= state.max_results:
        # This is hit max_results + 1: there really are more, so the cut is marked truthfully.
        state.stopped = f"reached {state.max_results:,} results"
        return
    state.hits.append(hit)


def _file_size(real: Path) -> int | None:
    try:
        st = os.stat(real, follow_symlinks=False)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _content_hit(
    opener: Callable[[], int], needle: str, state: _SearchState
) -> dict[str, Any] | None:
    """The first line of a text file holding `needle`, or None (counting why it was skipped)."""
    try:
        fd = opener()
    except OSError:
        state.content_skipped_unreadable += 1
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if state.private.own(st) is not None:
            # Became a hard link to one of Chamberlain's files since the listing.
            state.withheld.append("chamberlain")
            return None
        if st.st_size > state.content_limit:
            state.content_skipped_large += 1
            return None
        data = _read_head(fd, state.content_limit + 1)
    except OSError:
        state.content_skipped_unreadable += 1
        return None
    finally:
        os.close(fd)
    if len(data) > state.content_limit:
        state.content_skipped_large += 1
        return None
    state.files_content_checked += 1
    decoded = decode_text(data)
    if decoded is None:
        state.content_skipped_binary += 1
        return None
    if needle not in decoded.text.casefold():
        return None
    first: tuple[int, str] | None = None
    matching = 0
    for number, line in enumerate(decoded.text.splitlines(), start=1):
        if needle in line.casefold():
            matching += 1
            if first is None:
                first = (number, _snippet(line, needle))
    if first is None:  # the match spans a line break
        return None
    return {"size": st.st_size, "line": first[0], "snippet": first[1], "matching_lines": matching}


def _snippet(line: str, needle: str) -> str:
    line = line.strip()
    if len(line) <= SNIPPET_CHARS:
        return line
    folded = line.casefold()
    # casefold can change the length ("ß" -> "ss"); only centre on the match when it did not.
    at = folded.find(needle) if len(folded) == len(line) else 0
    start = max(0, min(at - (SNIPPET_CHARS - len(needle)) // 2, len(line) - SNIPPET_CHARS + 2))
    piece = line[start : start + SNIPPET_CHARS - 2]
    return ("…" if start > 0 else "") + piece + ("…" if start + len(piece) < len(line) else "")


def _render_search(data: dict[str, Any]) -> str:
    root = Path(data["root"])
    what = []
    if data["name_glob"]:
        what.append(f"names matching {data['name_glob']!r}")
    if data["content"]:
        what.append(f"text {data['content']!r}")
    hits: list[dict[str, Any]] = data["hits"]
    lines = [
        f"Searched {root} for {' containing '.join(what) or 'everything'}: "
        f"{_plural(len(hits), 'match', 'matches')} among {data['entries_scanned']:,} entries"
    ]
    for hit in hits:
        rel = os.path.relpath(hit["path"], root)
        if hit["type"] == "dir":
            rel += "/"
        if "line" in hit:
            lines.append(f"  {rel}:{hit['line']}: {hit['snippet']}")
        elif hit["size"] is not None:
            lines.append(f"  {rel}  ({human_size(hit['size'])})")
        else:
            lines.append(f"  {rel}")
    notes = []
    if data["stopped_because"]:
        notes.append(f"stopped early: {data['stopped_because']}")
    if data["dirs_unreadable"]:
        notes.append(f"{_plural(data['dirs_unreadable'], 'folder')} could not be read")
    if data["symlink_escapes_skipped"]:
        escapes = _plural(data["symlink_escapes_skipped"], "symlink")
        notes.append(f"skipped {escapes} leading outside {root}")
    if data["content_skipped_large"]:
        notes.append(f"{_plural(data['content_skipped_large'], 'file')} too large to search")
    if notes:
        lines.append("(" + "; ".join(notes) + ")")
    if data["private_withheld"]:
        lines.append(_withheld_note(data["private_withheld"], data["private_kinds"]))
    return "\n".join(lines)


# --- the tools -----------------------------------------------------------------------------------


def make_file_tools(
    read_cap: int = DEFAULT_READ_CAP,
    home: Path | None = None,
    *,
    cwd: Path | None = None,
    search_max_entries: int = DEFAULT_SEARCH_MAX_FILES,
    search_content_limit: int = DEFAULT_SEARCH_CONTENT_LIMIT,
    search_time_limit_s: float = DEFAULT_SEARCH_TIME_LIMIT_S,
    clock: Callable[[], float] = time.monotonic,
    private: PrivatePlaces | None = None,
) -> list[Tool]:
    """file_list, file_read and file_search.

    `read_cap` is the most file_read ever returns (a call may ask for less, never more); `home`
    is what `~` means; `cwd` is what relative paths are relative to (default: the process's).
    The search limits bound one file_search call: entries looked at, size of a file whose text
    is searched, and wall time (measured with `clock`). `private` is what no call may reach
    (default: the credential stores of `home`; the registry adds Chamberlain's own folder).
    """
    if read_cap < 1:
        raise ValueError("read_cap must be at least 1 byte")
    if private is None:
        private = private_places(home if home is not None else Path.home())
    book = _PathBook(home, cwd, private)

    def prepared(raw: str, values: ToolArguments) -> Prepared:
        path = book.for_targets(raw)
        # The one place the call reads, resolved: the prompt names it, not its folder.
        shown = CallPlan(files=(str(path),))
        return Prepared.of(values, (str(path),), "easy", path, shown)

    def at(prepared: Prepared) -> Path | None:
        return prepared.plan if isinstance(prepared.plan, Path) else None

    file_list = typed_tool(
        ToolManual(
            name="file_list",
            description=(
                "List a folder: name, type (file, dir, symlink, other), size and modification "
                "time of each entry, folders first. Hidden entries (names starting with '.') "
                "are left out unless show_hidden is true. Credential stores (~/.ssh, keyrings, "
                "browser profiles) and Chamberlain's own files are always left out."
            ),
            parameters=FileListArguments.parameters(),
            capability=Capability.FILE_READ,
            category="files",
        ),
        FileListArguments,
        prepare=lambda values: prepared(values.path, values),
        run=lambda values, call: _list_folder(book, values, at(call)),
        # The folders and files the user's own words named are the file tools' user scopes.
        user_scopes_of=_named_paths,
    )

    read_arguments = file_read_arguments(read_cap)
    file_read = typed_tool(
        ToolManual(
            name="file_read",
            description=(
                f"Read a text file. Returns at most {human_size(read_cap)} (max_bytes can ask "
                "for less); a longer file comes back cut, marked truncated, with its full size. "
                "Binary files are refused, and so is anything in a credential store (~/.ssh, "
                "keyrings, browser profiles) or among Chamberlain's own files."
            ),
            parameters=read_arguments.parameters(),
            capability=Capability.FILE_READ,
            category="files",
            # The content rides in both data and text; leave room for both plus the framing.
            output_cap=2 * read_cap + 64 * 1024,
        ),
        read_arguments,
        prepare=lambda values: prepared(values.path, values),
        run=lambda values, call: _read_file(book, values, at(call)),
    )

    limits = (search_max_entries, search_content_limit, search_time_limit_s)
    file_search = typed_tool(
        ToolManual(
            name="file_search",
            description=(
                "Find files and folders under a folder. name_glob matches the name only, "
                "case-insensitively ('*.pdf', 'report*'); content finds text files containing "
                "that text, case-insensitively, and gives the first matching line. Give either "
                "or both. Symlinked folders are not entered; hidden entries are skipped unless "
                "show_hidden is true; credential stores and Chamberlain's own files always are."
            ),
            parameters=FileSearchArguments.parameters(),
            capability=Capability.FILE_READ,
            category="files",
            timeout_s=max(15.0, search_time_limit_s + 5.0),
        ),
        FileSearchArguments,
        prepare=lambda values: prepared(values.root, values),
        run=lambda values, call: _search(book, limits, clock, values, at(call)),
    )
    return [file_list, file_read, file_search]


def _named_paths(words: RequestWords) -> list[str]:
    return list(words.paths)


FILE_TOOLS: list[Tool] = make_file_tools()

"""Reading a message: the normalised, length-capped view the intent rules look at.

`_make_view` pulls out, as written, what a direct action would need: a command (backticked,
quoted, or after "run"/"execute") and the folder it runs in, a URL, paths and file names, and
well-known folders ("my downloads"). `_topics`, `_pattern` and `_type_pattern` read the system
topics and file globs a message names. Nothing is decided here: no intent, confidence or risk.

This module must never resolve or touch a path, run anything, or look past `SCAN_LIMIT`
characters of a message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.router.patterns import (
    _BACKTICK_RE,
    _BARE_FOLDER_RE,
    _DONT_RUN_RE,
    _EXTENSIONS,
    _FILENAME_RE,
    _FILLER,
    _FOR_ME_RE,
    _GLOB_RE,
    _IN_FOLDER_RE,
    _IN_PATH_RE,
    _JOINERS,
    _KNOWN_FOLDER_RE,
    _KNOWN_FOLDERS,
    _LINE_AFTER_COLON_RE,
    _NAMED_TASK,
    _NORMALISE,
    _NOT_A_COMMAND,
    _NOT_A_TYPE,
    _PATH_LIKE_RE,
    _PATH_RE,
    _QUOTED_LINE_RE,
    _QUOTED_NAME_WORDS,
    _QUOTED_RE,
    _RUN_OR_TYPE_RE,
    _RUN_RE,
    _RUN_VERB_RE,
    _RUNNABLE,
    _RUNNABLE_WITHIN,
    _SEPARATOR_RE,
    _TOKEN_RE,
    _TOPIC_RES,
    _TRAILING_PUNCT,
    _TYPE_OR_DO_IT_RE,
    _TYPE_WORD_RE,
    _URL_RE,
    _WHAT_IT_MEANS_RE,
    _WORD_TOKEN_RE,
)

# Heuristics look at this many characters at most. Longer input still routes, but it is never
# a "clear direct request": confidence is capped and command/fact are not extracted from a
# truncated view (a command cut in half must never reach the executor).
SCAN_LIMIT = 2000
# More paths than this in one message is not a request we act on directly.
MAX_PATHS = 32


@dataclass
class _View:
    """The normalised, length-capped text the heuristics look at."""

    text: str
    truncated: bool
    command: str | None = None
    command_span: tuple[int, int] | None = None
    # Where the command runs, as written ("./frontend"), and whether the words say so plainly.
    cwd: str | None = None
    certain: bool = True
    # Several backticked commands in one message: none is run directly.
    commands: list[str] = field(default_factory=list)
    run_task: bool = False
    url: str | None = None
    url_span: tuple[int, int] | None = None
    paths: list[str] = field(default_factory=list)
    folder_paths: list[str] = field(default_factory=list)
    path_in: set[str] = field(default_factory=set)


def _strip_trailing(token: str) -> str:
    while len(token) > 1 and token[-1] in _TRAILING_PUNCT:
        # "./." and "~/." are paths in their own right, not a path and a full stop.
        if token.endswith(("/.", "\\.")):
            break
        token = token[:-1]
    return token


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _find_paths(text: str, view: _View) -> tuple[list[tuple[int, str]], str]:
    """Paths as written: quoted ones (spaces allowed), then ~, ./, /abs, C:\\, bare file names.

    Returns the paths with their positions, and `text` with every path blanked out.
    """
    found: list[tuple[int, str]] = []
    scan = text
    for match in _QUOTED_RE.finditer(text):
        inner = (match.group(1) or match.group(2) or "").strip()
        if inner and (_PATH_LIKE_RE.match(inner) or _quoted_name(inner)):
            found.append((match.start(), inner))
            scan = _blank(scan, match.start(), match.end())
    for regex in (_PATH_RE, _FILENAME_RE):
        for match in regex.finditer(scan):
            token = _strip_trailing(match.group(1))
            if token in ("/", ".", ".."):
                continue
            if regex is _FILENAME_RE and token.rsplit(".", 1)[-1].lower() not in _EXTENSIONS:
                continue
            found.append((match.start(), token))
            scan = _blank(scan, match.start(), match.end())
            if len(found) >= MAX_PATHS:
                break
    for pos, token in found:
        before = text[max(0, pos - 24) : pos]
        if before.endswith('"') or before.endswith("'"):
            before = before[:-1]
        if _IN_PATH_RE.search(before):
            view.path_in.add(token)
    found.sort()
    return found, scan


def _quoted_name(inner: str) -> bool:
    """A quoted file name ("old notes.txt", 'My Documents/notes 2024.txt'), not a quoted phrase."""
    if len(inner.split()) > _QUOTED_NAME_WORDS:
        return False
    last = inner.rstrip("/\\").rsplit("/", 1)[-1]
    return "." in last and last.rsplit(".", 1)[-1].lower() in _EXTENSIONS


def _folder(where: str) -> tuple[str, bool] | None:
    """The folder the words after "in" name, as written, and whether they name it plainly.

    A path (`~/Desktop`, `./web`, `"~/My Stuff"`) or a known folder ("my home dir") is plain; a
    bare word ("in frontend") may be a folder or part of the command, so it is only a guess.
    Anything else ("in 10 minutes", "in the trash") is not a folder.
    """
    where = where.strip()
    quoted = where.rstrip(".,;:!?")
    if len(quoted) > 2 and quoted[0] in "\"'" and quoted[-1] == quoted[0]:
        inner = quoted[1:-1].strip()
        return (inner, True) if inner and quoted[0] not in inner else None
    where = _strip_trailing(where)
    if where == "/" or _PATH_RE.fullmatch(where):
        return where, True
    known = _KNOWN_FOLDER_RE.fullmatch(where)
    if known is not None and (known.group(2) or not where.lower().startswith("the")):
        return _KNOWN_FOLDERS[known.group(1).lower()], True
    if _BARE_FOLDER_RE.fullmatch(where) and where.lower() not in _FILLER:
        return where, False
    return None


def _split_folder(cmd: str) -> tuple[str, tuple[str, bool] | None]:
    """`cmd` without a trailing "in <folder>", and that folder (see `_folder`), if it has one."""
    found = list(_IN_FOLDER_RE.finditer(cmd))
    if not found:
        return cmd, None
    last = found[-1]
    folder = _folder(cmd[last.end() :])
    if folder is None:
        return cmd, None
    return cmd[: last.start()].strip(), folder


def _unquoted(cmd: str) -> str | None:
    """The inside of a command given whole in quotes (`run "df -h"`), else None."""
    if len(cmd) > 2 and cmd[0] in "\"'" and cmd[-1] == cmd[0] and cmd[0] not in cmd[1:-1]:
        return cmd[1:-1].strip() or None
    return None


def _is_sentence(cmd: str) -> bool:
    """English filler among the bare words after the program: a sentence, not a command line."""
    for token in _TOKEN_RE.findall(cmd)[1:]:
        if _WORD_TOKEN_RE.fullmatch(token) and token.lower() in _FILLER:
            return True
    return False


def _find_command(text: str, view: _View) -> None:
    """A command is run directly only when it is unambiguous: in backticks or quotes after
    run/execute (or nothing but backticks), or "run <one command line>" whose words are not
    English filler. A trailing "in <folder>" is where it runs, not part of the line.
    """
    ticks = _BACKTICK_RE.findall(text)
    tick = _BACKTICK_RE.search(text)
    if tick is not None and _DONT_RUN_RE.search(text):
        return  # "no need to run anything": commands to talk about
    if tick is not None:
        lead = text[: tick.start()]
        if lead.strip(" ,.:") == "" or _RUN_VERB_RE.search(lead):
            if len(ticks) > 1:
                between = _SEPARATOR_RE.split(_BACKTICK_RE.sub(" ", text))
                if _RUN_VERB_RE.search(lead) or all(w.lower() in _JOINERS for w in between if w):
                    # `df -h` and `free -m`: run neither rather than one of them silently.
                    view.commands = [t.strip() for t in ticks]
                    view.run_task = True
                return
            tail = text[tick.end() :]
            folder = None
            if tail.strip(" .!") and (where := _IN_FOLDER_RE.match(tail)) is not None:
                folder = _folder(tail[where.end() :])
            if lead.strip(" ,.:") == "" and tail.strip(" .!") and folder is None:
                return  # "`ls -la` is what?": a question about a command
            view.command = tick.group(1).strip()
            view.command_span = (tick.start(), len(text) if folder else tick.end())
            if folder is not None:
                view.cwd, view.certain = folder
            return
    run = _RUN_RE.match(text)
    if run is None:
        _line_after_colon(text, view)
        if not view.run_task:
            _quoted_line(text, view)
        return
    cmd = run.group("cmd")
    for _ in range(3):
        cmd = _FOR_ME_RE.sub("", cmd)
    cmd = cmd.strip().rstrip("?!")
    if cmd.endswith(".") and len(cmd) > 1 and cmd[-2].isalnum():
        cmd = cmd[:-1]
    first = cmd.split(maxsplit=1)[0].lower() if cmd else ""
    if first in _NAMED_TASK:
        view.run_task = True
        return
    if first in ("a", "an") and _RUNNABLE.intersection(
        word.lower() for word in cmd.split()[1 : 1 + _RUNNABLE_WITHIN]
    ):
        view.run_task = True
        return
    if not cmd or first in _NOT_A_COMMAND:
        return
    line, folder = _split_folder(cmd)
    quoted = _unquoted(line)
    if quoted is not None:
        line = quoted
    elif not line or _is_sentence(line):
        # "run find out which app is using the camera": something to run, not a command line.
        view.run_task = True
        return
    view.command = line
    view.command_span = run.span("cmd")
    if folder is not None:
        view.cwd, view.certain = folder


def _line_after_colon(text: str, view: _View) -> None:
    """A command line after the last colon of a sentence that speaks of running or typing it:
    a task to run (the model proposes the line, the prompt shows it), and the line's switches
    are not paths ("shutdown /r /t 0")."""
    after = _LINE_AFTER_COLON_RE.search(text)
    if after is None or _DONT_RUN_RE.search(text):
        return
    if _RUN_OR_TYPE_RE.search(text[: after.start()]) is None:
        return
    line = after.group("line").strip().rstrip(".!")
    first = line.split(maxsplit=1)[0] if line else ""
    if not first or _WORD_TOKEN_RE.fullmatch(first) is None or _is_sentence(line):
        return
    view.run_task = True
    view.command_span = after.span("line")


def _quoted_line(text: str, view: _View) -> None:
    """A command line in quotes in a message that speaks of typing or running it: a task to
    run (the model proposes the line; the prompt shows it), and the line's switches and words
    are not paths ("shutdown /s /t 0")."""
    if _DONT_RUN_RE.search(text) or _TYPE_OR_DO_IT_RE.search(text) is None:
        return
    if _WHAT_IT_MEANS_RE.search(text):
        return  # "what does 'sudo apt update' mean? my nephew told me type it"
    for quoted in _QUOTED_LINE_RE.finditer(text):
        line = quoted.group("line").strip()
        if " " in line and not _is_sentence(line):
            view.run_task = True
            view.command_span = quoted.span("line")
            return


def _make_view(raw: str) -> _View:
    truncated = len(raw) > SCAN_LIMIT
    text = raw[:SCAN_LIMIT].translate(_NORMALISE).strip()
    view = _View(text=text, truncated=truncated)

    scan = text
    _find_command(text, view)
    if view.command_span is not None:
        scan = _blank(scan, *view.command_span)

    url = _URL_RE.search(scan)
    if url is not None:
        view.url = _strip_trailing(url.group(0))
        view.url_span = url.span()
        scan = _blank(scan, *url.span())

    found, scan = _find_paths(scan, view)
    view.paths = _dedupe(token for _, token in found)
    for match in _KNOWN_FOLDER_RE.finditer(scan):
        name = match.group(1).lower()
        # "the desktop" alone is ambiguous (screen vs folder); "my desktop" / "the X folder" not.
        if match.group(0).lower().startswith("the") and not match.group(2):
            continue
        view.folder_paths.append(_KNOWN_FOLDERS[name])
    view.folder_paths = _dedupe(view.folder_paths)
    return view


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def _topics(text: str) -> list[str]:
    return [name for name, regex in _TOPIC_RES if regex.search(text)]


def _pattern(text: str) -> str | None:
    glob = _GLOB_RE.search(text)
    if glob is not None:
        return glob.group(1)
    return _type_pattern(text)


def _type_pattern(text: str) -> str | None:
    """Map "PDF files", ".docx files" or "pdfs" to "*.pdf"; None when no file type is named."""
    for match in _TYPE_WORD_RE.finditer(text):
        word = (match.group(1) or match.group(2) or "").lower()
        if word in _EXTENSIONS and word not in _NOT_A_TYPE:
            return "*." + word
    return None

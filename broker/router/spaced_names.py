"""File names with spaces, written without quotes: "summarise Q3 budget.csv".

The patterns find `budget.csv`; the person meant `Q3 budget.csv`. Only the disk can say which,
so this module offers the names the words could make (the name found, with up to
SPACED_NAME_WORDS words before it) and keeps the longest one that names a file that exists: in a
folder the message names ("in Downloads", "~/Work", "my documents"), else in the person's usual
places (USUAL_FOLDERS). With no such file the path stays as the patterns found it: a name is
never made up, and a file that does not exist is never chosen.

This module must never read the disk itself: whether a file exists is asked through the
`exists` callable it is given (the session passes one that looks). It never widens what a turn
may do: the tools still check every path (private places are refused there), and the path it
chooses is one the person's own words spell out, with its folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from broker.router.extraction import _dedupe, _make_view
from broker.router.patterns import _I, _KNOWN_FOLDERS, _PATH_RE
from broker.types import RouterOutput

# How many words before the found name may belong to it ("my Q3 budget 2026 final.csv").
SPACED_NAME_WORDS = 4
# Where a file name is looked for when the message names no folder, in this order.
USUAL_FOLDERS = ("~/Documents", "~", "~/Desktop", "~/Downloads")
# A word that can be part of a file name; a quote, a comma or a colon ends the name.
_NAME_WORD_RE = re.compile(r"[\w\-()&+'’]+")
# "in Downloads", "from ~/Work", "inside the projects folder".
_FOLDER_WORDS_RE = re.compile(
    r"\b(?:in|inside|from|under)\s+(?:my\s+|the\s+)?(?P<where>[~/.\w][\w.\-~/]*)", _I
)


def spaced_names(text: str, name: str) -> list[str]:
    """The names with spaces that `name` (a file name found in `text`) may be the end of,
    longest first, without `name` itself: "summarise Q3 budget.csv" gives
    ["summarise Q3 budget.csv", "Q3 budget.csv"]. Words are joined by the single spaces the
    person typed; nothing here says that any of them exists."""
    found = re.search(rf"(?<!\S){re.escape(name)}", text)
    if found is None:
        return []
    words: list[str] = []
    rest = text[: found.start()]
    while len(words) < SPACED_NAME_WORDS and rest.endswith(" ") and not rest.endswith("  "):
        rest = rest[:-1]
        word = re.search(r"\S+$", rest)
        if word is None or not _NAME_WORD_RE.fullmatch(word.group(0)):
            break
        words.insert(0, word.group(0))
        rest = rest[: word.start()]
    return [" ".join([*words[start:], name]) for start in range(len(words))]


def named_folders(router: RouterOutput) -> list[str]:
    """The folders the message names, as paths: the command's folder, a known folder ("my
    downloads", "in Downloads"), a path after "in" or "from"."""
    text = router.text
    folders = [router.arguments.cwd] if router.arguments.cwd else []
    folders.extend(_make_view(text).folder_paths)
    for match in _FOLDER_WORDS_RE.finditer(text):
        where = match.group("where").rstrip(".,;:!?")
        known = _KNOWN_FOLDERS.get(where.lower())
        if known is not None:
            folders.append(known)
        elif _PATH_RE.fullmatch(where) and "." not in where.rsplit("/", 1)[-1]:
            folders.append(where)
    return _dedupe(folders)


def with_spaced_names(router: RouterOutput, exists: Callable[[str], bool]) -> RouterOutput:
    """`router` with each bare file name it found replaced by the longest name with spaces the
    words before it make that `exists` says is a file: in the folders the message names, or
    (when it names none) in the usual ones, with that folder ("~/Documents/Q3 budget.csv").
    Unchanged when there is none."""
    args = router.arguments
    bare = [p for p in args.paths if not any(c in p for c in "/\\~")]
    if not bare or not router.text:
        return router
    # A folder the person named is where the file is; the usual places only when they named none.
    folders = named_folders(router) or list(USUAL_FOLDERS)
    chosen: dict[str, str] = {}
    used: set[str] = set()
    for name in bare:
        for candidate in spaced_names(router.text, name):
            folder = next((f for f in folders if exists(f"{f.rstrip('/')}/{candidate}")), None)
            if folder is not None:
                chosen[name] = f"{folder.rstrip('/')}/{candidate}"
                used.add(folder)
                break
    if not chosen:
        return router
    # The folder named as where the file is ("from ~/Work") is now part of its path.
    paths = _dedupe(chosen.get(path, path) for path in args.paths if path not in used)
    return router.model_copy(update={"arguments": args.model_copy(update={"paths": paths})})

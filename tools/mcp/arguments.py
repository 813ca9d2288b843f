"""An MCP call's arguments, checked before anyone is asked: the paths they name, and the plan.

A server's tool takes whatever JSON its schema allows, so Chamberlain cannot know which string
is a path. It takes every string (object keys too, nested in objects and arrays) that could be
one: absolute, `~`, `file://`, or relative to one of the server's roots or its working folder.
Each is resolved as the kernel would (tools/paths.py) and checked as the file tools check theirs
(tools/private.py, tools/files.py's alias check): one that lands in a credential store or in
Chamberlain's own folder (token.key, settings, grants, audit, memory, or another name for one of
them) makes the call refused, with a sentence, before any prompt; the runner audits the refusal.
The sandbox (tools/mcp/sandbox.py) keeps the server itself from those places; this keeps the
model from asking a server that could reach them (an HTTP server, an unsandboxed one) to do it.

This module never runs a call and never reads a file; it only resolves paths and says why not.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.escapes import visible_path
from tools.files import _PrivateCheck, _refuse_private_path
from tools.manual import CallPlan, ToolRefused
from tools.paths import MAX_PATH_CHARS, resolve_path
from tools.private import PrivatePlaces
from tools.startup_places import place_of

# Nested deeper than this, an argument is not looked into further (the runner caps its size).
MAX_DEPTH = 64


def _strings(value: Any, where: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(where, text) for every string in an argument's value, keys included."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if isinstance(key, str):
                yield f"{where}.{key}", key
            yield from _strings(inner, f"{where}.{key}", depth + 1)
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            yield from _strings(inner, f"{where}[{index}]", depth + 1)


def _candidates(text: str, home: Path, bases: Sequence[Path]) -> list[tuple[Path, bool]]:
    """The places a string could name, each with whether it plainly is a path (absolute, `~`,
    `./`, `../`, or an existing file under a base) rather than only possibly one."""
    stripped = text.strip()
    if not stripped or len(stripped) > MAX_PATH_CHARS or "\0" in stripped:
        return []
    if stripped.startswith("file://"):
        stripped = stripped.removeprefix("file://")
    found: list[tuple[Path, bool]] = []
    try:
        if stripped.startswith(("/", "~")):
            return [(resolve_path(stripped, home=home, cwd=Path("/")), True)]
        plain = stripped.startswith(("./", "../")) or stripped in (".", "..")
        for base in bases:
            path = resolve_path(stripped, home=home, cwd=base)
            found.append((path, plain or os.path.lexists(path)))
    except ValueError:
        return found
    return found


def checked_arguments(
    tool: str,
    arguments: Mapping[str, Any],
    *,
    private: PrivatePlaces,
    home: Path,
    bases: Sequence[Path] = (),
) -> list[Path]:
    """The paths the call's arguments name (resolved), or ToolRefused when one is private.

    `bases` are what a relative path is taken against: the server's roots and working folder."""
    check = _PrivateCheck(private)
    named: list[Path] = []
    for name, value in arguments.items():
        for where, text in _strings(value, name):
            for path, plain in _candidates(text, home, bases):
                try:
                    _refuse_private_path(path, check)
                except ToolRefused as exc:
                    said = str(exc).removeprefix("refused: ")
                    raise ToolRefused(
                        f"refused: {tool}'s argument {visible_path(where)} names "
                        f"{visible_path(os.fspath(path))}, and {said}; no MCP server is given "
                        "it either"
                    ) from None
                if plain:
                    named.append(path)
    return list(dict.fromkeys(named))


def refuse_startup_places(
    tool: str,
    arguments: Mapping[str, Any],
    *,
    home: Path,
    bases: Sequence[Path] = (),
    app_dirs: Sequence[Path] = (),
) -> None:
    """ToolRefused when a call names a place that runs code later (an rc file, autostart, a
    repository's .git, a .pth file; tools/startup_places.py), existing or not (a write creates
    it). Every call is checked: whether a tool writes is known only from the name its server
    gave it. Its sandbox holds such places read-only whatever the grant, and an HTTP or
    unsandboxed server has no sandbox: the call is refused before the prompt, saying where and
    when it would run."""
    for name, value in arguments.items():
        for _, text in _strings(value, name):
            for path, _plain in _candidates(text, home, bases):
                place = place_of(path, home, app_dirs)
                if place is not None:
                    raise ToolRefused(
                        f"refused: {tool} names {visible_path(os.fspath(path))}, which "
                        f"{place.when}; an MCP server is never given such places"
                    )


def call_plan(
    server: str, remote: str, arguments: Mapping[str, Any], files: Sequence[Path]
) -> CallPlan:
    """What the call will send, whole: every argument as JSON text, in the order the model gave
    them (a `content` sent before its `path` is shown with it), nothing cut."""
    return CallPlan(
        mcp_server=server,
        mcp_tool=remote,
        mcp_arguments=tuple(
            (str(name), json.dumps(value, ensure_ascii=False, default=str))
            for name, value in arguments.items()
        ),
        files=tuple(os.fspath(p) for p in files),
    )

"""What a permission question shows, as rows of plain text, built from the request's structure.

The desktop dialog and the terminal prompt both render these rows, so the two say the same thing.
Every row comes from a field of `PermissionRequest` or its `CallPlan` (a command's words per
stage, its folder, what it reads and writes, its network, the files it changes, the places that
run code later, an MCP tool's every argument, a URL with its method and body, the limits);
without a plan, from the tool's name and every argument.

Guarantees a person relies on: nothing shown is cut (a long value is wrapped or scrolled by the
front end, never dropped); every string is shown with control, bidi and zero-width characters
escaped (`tools.escapes`), so `report\\u202efdp.sh` never reads as `reporths.pdf`; a command's
words are shell-quoted one by one, so a `;` inside a word stays visibly inside it; arguments that
name a place come before the others, so a long `content` cannot push the target out of sight.

This module never imports Qt (the CLI uses it), never parses prose and never decides policy:
what may be answered is the broker's (`request.once_only`, `request.always_unavailable`).
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from typing import Any

from app.windows.words import TOOL_WORDS
from broker.permissions import PermissionRequest
from tools.escapes import visible, visible_path
from tools.manual import CallPlan, Capability
from tools.scopes import (
    ANY,
    MCP_CAPS,
    UNSCOPED_CAPS,
    describe_scope,
    read_only_command_scope,
)

# Argument names that name a place: shown first, whatever order the model sent them in.
_PLACE_WORDS = (
    "path",
    "file",
    "dir",
    "folder",
    "root",
    "target",
    "dest",
    "source",
    "src",
    "uri",
    "url",
    "where",
    "name",
)


@dataclass(frozen=True)
class Row:
    """One line of the question: a label and its value lines, each already escaped.

    `exact`: a literal (a command, a path, an argument) shown in a fixed-width font, wrapped
    anywhere, never elided."""

    label: str
    lines: tuple[str, ...]
    exact: bool = True


def shown_words(argv: tuple[str, ...] | list[str]) -> str:
    """A command's words as one line: each escaped, then shell-quoted on its own, so the line
    reads back as exactly these words ("find . -name 'notes; see below' -delete")."""
    return " ".join(shlex.quote(visible(word)) for word in argv)


def _json_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _names_a_place(name: str, value_text: str) -> bool:
    lowered = name.lower()
    if any(word in lowered for word in _PLACE_WORDS):
        return True
    text = value_text.strip('"')
    return text.startswith(("/", "~", "./", "../", "file:", "http:", "https:"))


def ordered_arguments(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Arguments that name a place first, then short ones, then long ones (each group in the
    order given): what the call reaches is read before what it carries."""

    def key(item: tuple[int, tuple[str, str]]) -> tuple[int, int]:
        index, (name, text) = item
        group = 0 if _names_a_place(name, text) else (1 if len(text) <= 200 else 2)
        return (group, index)

    return [pair for _, pair in sorted(enumerate(pairs), key=key)]


def argument_lines(pairs: list[tuple[str, str]]) -> tuple[str, ...]:
    """`name = value` per argument, every value in full (JSON text, escaped)."""
    return tuple(f"{visible(name)} = {visible(text)}" for name, text in ordered_arguments(pairs))


def _network_words(network: tuple[str, ...]) -> str:
    if not network:
        return "none"
    if network == ("internet",):
        return "the internet only (not this computer's own services, not your local network)"
    hosts = [visible(h) for h in network if h != "internet"]
    extra = "the internet, and " if "internet" in network else ""
    return f"{extra}only {', '.join(hosts)}"


def _paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(visible_path(p) for p in paths)


# What a program that writes where its input says will change, when that input cannot be read
# before it runs (a diff piped in).
_CHANGES_UNKNOWN = "(and whatever its input names: not known in advance)"


def _files_label(paths: tuple[str, ...]) -> str:
    """The row's label: "Folder" for one folder (a listing's), "File" for one file, else "Files"."""
    if len(paths) != 1:
        return "Files"
    return "Folder" if os.path.isdir(paths[0]) else "File"


def plan_rows(plan: CallPlan) -> list[Row]:
    rows: list[Row] = []
    for index, stage in enumerate(plan.stages):
        label = "Command" if len(plan.stages) == 1 else f"Stage {index + 1}"
        if index in plan.network_stages and len(plan.stages) > 1:
            label += " (network)"
        rows.append(Row(label, (shown_words(stage),)))
    if plan.cwd is not None:
        rows.append(Row("Folder", (visible_path(plan.cwd),)))
    if plan.mcp_server is not None:
        rows.append(Row("Server", (visible(plan.mcp_server),)))
    if plan.mcp_tool is not None:
        rows.append(Row("Tool", (visible(plan.mcp_tool),)))
    if plan.mcp_server is not None or plan.mcp_tool is not None:
        lines = argument_lines(list(plan.mcp_arguments))
        rows.append(Row("Arguments", lines or ("none",)))
    if plan.url is not None:
        rows.append(Row("Address", (visible(plan.url),)))
    if plan.method is not None:
        rows.append(Row("Method", (visible(plan.method),)))
    if plan.body is not None:
        rows.append(Row("Sends", (visible(plan.body, lines=True),)))
    if plan.files:
        rows.append(Row(_files_label(plan.files), _paths(plan.files)))
    reads = tuple(p for p in plan.reads if p not in plan.files)
    if reads:
        rows.append(Row("Can read", _paths(reads)))
    if plan.stages or plan.writes:
        rows.append(Row("Can change", _paths(plan.writes) or ("nothing of yours",)))
    if plan.changes or not plan.changes_known:
        unknown = (
            () if plan.changes_known else ("(and whatever its input says: not known in advance)",)
        )
        rows.append(Row("Will change", (*_paths(plan.changes), *unknown)))
    if plan.startup:
        rows.append(
            Row(
                "Runs code later",
                tuple(f"{visible_path(path)}: {visible(when)}" for path, when in plan.startup),
            )
        )
    # "none" is said only for a command, whose plan always names its network; an MCP plan
    # that names none may not know its server's (the row then says nothing rather than "none").
    if plan.stages or plan.network:
        rows.append(Row("Network", (_network_words(plan.network),), exact=False))
    if plan.limits:
        rows.append(
            Row(
                "Limits",
                (", ".join(f"{visible(what)} {visible(much)}" for what, much in plan.limits),),
                exact=False,
            )
        )
    return rows


def _has_rows(plan: CallPlan | None) -> bool:
    return plan is not None and plan != CallPlan()


def prompt_rows(request: PermissionRequest) -> list[Row]:
    """The question's detail rows, in the order they are shown."""
    if request.plan is not None and _has_rows(request.plan):
        rows = plan_rows(request.plan)
        if request.plan.mcp_server is None and not request.plan.stages:
            # A builtin tool's plan names what it reaches; its other arguments (a size, a
            # pattern) are still part of what is approved.
            rows.insert(0, _tool_row(request.tool))
            extra = [
                (name, _json_value(value))
                for name, value in request.arguments.items()
                if not _shown_in_plan(value, request.plan)
            ]
            if extra:
                rows.insert(1, Row("Arguments", argument_lines(extra)))
        return rows
    pairs = [(name, _json_value(value)) for name, value in request.arguments.items()]
    return [
        _tool_row(request.tool),
        Row("Arguments", argument_lines(pairs) or ("none",)),
    ]


def _tool_row(tool: str) -> Row:
    """The tool in words ("List a folder"); an MCP tool, which has none, by its exact name."""
    if tool in TOOL_WORDS:
        return Row("Tool", (TOOL_WORDS[tool],), exact=False)
    return Row("Tool", (visible(tool),))


def _shown_in_plan(value: Any, plan: CallPlan) -> bool:
    """Whether an argument is already shown by a row of the plan (a file tool's path)."""
    if not isinstance(value, str):
        return False
    expanded = os.path.expanduser(value)
    return any(expanded == p or os.path.realpath(expanded) == p for p in plan.files) or (
        value == plan.url
    )


def scope_words(request: PermissionRequest) -> str:
    """What the request's scope covers, in words, escaped."""
    return describe_scope(request.capability, request.scope).replace("`", "")


def shown_target(request: PermissionRequest) -> str | None:
    """The one place the call reaches when the plan names exactly one (escaped), else None."""
    plan = request.plan
    if plan is None or len(plan.files) != 1:
        return None
    return visible_path(plan.files[0])


def covers_note(request: PermissionRequest) -> str:
    """What a longer answer than "once" covers, when that is more than what this call reaches
    ("" when the scope is exactly the one file shown, or there is no scope)."""
    if request.once_only:
        return ""
    capability, scope = request.capability, request.scope
    if capability in UNSCOPED_CAPS or scope == ANY:
        return ""
    if capability is Capability.SYSTEM_EXECUTE and not read_only_command_scope(scope):
        return ""  # exactly this line in this folder: nothing more to say
    target = shown_target(request)
    if target is not None and target == visible_path(scope):
        return ""
    if capability in (Capability.FILE_READ, Capability.FILE_WRITE) and os.path.isdir(scope):
        return f"Any answer but once also covers everything in {visible_path(scope)}."
    return f"Any answer but once also covers {scope_words(request)}."


def always_words(request: PermissionRequest) -> str:
    """The rule "Always allow" saves, in words: "Always allow reading files in /home/ann"."""
    capability, scope = request.capability, request.scope
    described = scope_words(request)
    path = visible_path(scope)
    folder = os.path.isdir(scope)
    if capability is Capability.FILE_READ:
        what = f"reading files in {path}" if folder else f"reading {path}"
    elif capability is Capability.FILE_WRITE:
        what = f"changing files in {path}" if folder else f"changing {path}"
    elif capability is Capability.SYSTEM_EXECUTE:
        what = f"running {described}"
    elif capability is Capability.WEB_ACCESS:
        what = f"visiting {described} and its subdomains"
    elif capability is Capability.SCREEN_READ:
        what = "seeing any display" if scope == ANY else f"seeing display {described}"
    elif capability is Capability.OPEN_EXTERNAL:
        what = f"opening {described} in another app"
    elif capability is Capability.SYSTEM_READ:
        what = "looking up system information"
    elif capability in MCP_CAPS:
        what = f"using {described}"
    else:
        what = "remembering things about you"
    return f"Always allow {what}"


_RUNS_CODE = (
    "This runs code that cannot be shown here, so it can only be allowed once: "
    "Chamberlain will ask again next time."
)
_STARTUP = (
    "This changes a place that runs code later (listed above), so it can only be allowed "
    "once: Chamberlain will ask again next time."
)
_ONCE = "This can only be allowed once: Chamberlain will ask again next time."


def once_only_words(request: PermissionRequest) -> str:
    """Why only "once" is offered ("" when more is): a request with a reason of its own (shown
    as its note) says only the rule; one that changes a startup place says so; otherwise it
    is code that cannot be shown."""
    if not request.once_only:
        return ""
    if request.reason:
        return _ONCE
    return _STARTUP if request.plan is not None and request.plan.startup else _RUNS_CODE


def no_always_words(request: PermissionRequest) -> str:
    """Why "Always" is not offered, as the prompt says it ("" when it is offered)."""
    if not request.always_unavailable or request.once_only:
        return ""
    return f"“Always” is not offered: {visible(request.always_unavailable)}."

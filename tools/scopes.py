"""What a grant's scope covers, for every capability: the one place scope matching is defined.

A tool names what a call would touch as *targets* (`Tool.targets(args)`); a grant has a *scope*.
Both are strings whose form depends on the capability:

- file_read, file_write: the target is a resolved absolute path; the scope a resolved folder
  or file, which covers the target when the target is it or lies inside it.
- system_execute: one call has several targets: its class and command line (`readonly:<argv>`,
  `command:<argv>` or `code:<argv>`), where it runs (`cwd:<abs>`), each other place the sandbox
  mounts for it (`dir:<abs>`), `net:` when it gets the network (and `net:localhost:<port>` for
  each port of this computer its line names: only its exact line covers it); `cwd:` with nothing
  after it is a call that named no folder and runs in an empty scratch folder. Scopes:
  `readonly-in:<abs>` covers read-only commands whose folders all lie inside that folder (never
  the network), and `readonly-in:` alone only those that see none of the person's folders; a
  command that sees the whole home (target `home:`) is covered only by its exact line;
  `command:<argv>` + `\nin <abs>` covers exactly that command line run in exactly that folder,
  with whatever it names and the network it needs (the prompt showed both); `readonly` (read-only
  commands anywhere) and a bare `command:<argv>` (any folder) only come from an explicit rule.
  Commands are refused before any of this when they name a private place (`tools.private`).
- web_access: `domain:<host>` for both; covers the same host or a subdomain of it.
- screen_read: `display:<name>` for both, or the scope `*` for any display.
- open_external: `path:<abs>` or `url:<url>`; covers only exactly the same string.
- system_read, memory_write: no targets; the scope is `*`.
- mcp_read, mcp_write, mcp_execute: the target is `mcp:<server>__<tool>`; the scope is the same
  string (that tool), or `mcp:<server>__*` (every tool of that server in that class).

`<argv>` is the normalised command line (`shlex.join` of each command, ` | ` between the commands
of a pipeline). Hosts are lower-case IDNA. This module never touches the filesystem for scopes
that are already resolved, and never decides policy: it only answers "is this inside that".
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tools.escapes import visible
from tools.manual import PATH_SCOPED as PATH_CAPS
from tools.manual import Capability
from tools.paths import is_within, resolve_path

ANY = "*"
READONLY = "readonly"
READONLY_IN = "readonly-in:"
_IN = "\nin "
_CLASSES = ("readonly:", "command:", "code:")
# The target of a command that sees the whole home folder (its folder is the home, or above it).
WHOLE_HOME = "home:"

UNSCOPED_CAPS = frozenset({Capability.SYSTEM_READ, Capability.MEMORY_WRITE})
MCP_CAPS = frozenset({Capability.MCP_READ, Capability.MCP_WRITE, Capability.MCP_EXECUTE})
MCP_PREFIX = "mcp:"


def mcp_server_scope(target: str) -> str | None:
    """`mcp:<server>__*` for an MCP tool's target `mcp:<server>__<tool>` (None: not one)."""
    if not target.startswith(MCP_PREFIX) or "__" not in target:
        return None
    return target.split("__", 1)[0] + "__*"


def _host_of(value: str) -> str | None:
    if not value.startswith("domain:"):
        return None
    host = value[len("domain:") :].strip().rstrip(".").lower()
    return host or None


def covers_one(capability: Capability, scope: str, target: str, *, resolve_scope: bool) -> bool:
    if capability in UNSCOPED_CAPS:
        return scope == ANY
    if capability in PATH_CAPS:
        if scope == ANY:
            return False  # a path capability is never granted for "everywhere"
        try:
            prefix = resolve_path(scope) if resolve_scope else Path(scope)
            return is_within(Path(target), prefix)
        except ValueError:
            return False
    if capability is Capability.SYSTEM_EXECUTE:
        return _command_covers(scope, target)
    if capability is Capability.WEB_ACCESS:
        granted, wanted = _host_of(scope), _host_of(target)
        if granted is None or wanted is None:
            return False
        return wanted == granted or wanted.endswith("." + granted)
    if capability is Capability.SCREEN_READ:
        return scope in (ANY, target)
    if capability in MCP_CAPS:
        if scope.endswith("__*") and scope.startswith(MCP_PREFIX):
            return target.startswith(scope[:-1]) and "*" not in target
        return scope == target and scope != ANY
    return scope == target and scope != ANY


def exact_command_scope(argv: str, cwd: str) -> str:
    """The scope of exactly this command line run in exactly this folder."""
    return f"command:{argv}{_IN}{cwd}"


def _split_exact(scope: str) -> tuple[str | None, str | None]:
    """(argv, cwd or None) of an exact command scope; (None, None) for any other scope."""
    for prefix in ("command:", "readonly:"):
        if scope.startswith(prefix):
            argv, sep, cwd = scope[len(prefix) :].partition(_IN)
            return argv, (cwd if sep else None)
    return None, None


def _inside(place: str, folder: str) -> bool:
    try:
        return is_within(Path(place), Path(folder))
    except ValueError:
        return False


def _command_covers(scope: str, target: str) -> bool:
    argv, cwd = _split_exact(scope)
    if target == "cwd:":
        # No folder: an empty scratch folder, which shows nothing of the person's. Any read-only
        # scope covers it; an exact command's only when that command named no folder either.
        return read_only_command_scope(scope) or cwd in (None, "")
    if target.startswith(("cwd:", "dir:")):
        place = target.split(":", 1)[1]
        if scope == READONLY:
            return True
        if scope.startswith(READONLY_IN):
            return _inside(place, scope[len(READONLY_IN) :])
        if argv is None:
            return False
        # An exact command's other places follow from its line and its folder.
        return cwd is None or target.startswith("dir:") or place == cwd
    if target.startswith("net:"):  # the network, or a named port of this computer's loopback
        return scope.startswith("command:")
    if target == WHOLE_HOME:
        # A reader of the whole home: only a grant for exactly its line covers it, never
        # "read-only commands" (the review's `zcat -rf .` under the read-only grant).
        return argv is not None
    if target.startswith(READONLY_IN):  # a prompt's scope, matched against a rule's
        return scope == READONLY or (
            scope.startswith(READONLY_IN)
            and _inside(target[len(READONLY_IN) :], scope[len(READONLY_IN) :])
        )
    kind, _, line = target.partition(":")
    if target.startswith("command:") and _IN in target:  # an exact scope against a rule's
        t_argv, t_cwd = _split_exact(target)
        return argv == t_argv and cwd in (None, t_cwd) and scope.startswith("command:")
    if kind + ":" not in _CLASSES:
        return False
    if read_only_command_scope(scope):
        return kind == "readonly"
    if scope.startswith("command:"):
        return line == argv
    if scope.startswith("readonly:"):
        return kind == "readonly" and line == argv
    return False


def natural_command_scope(targets: Iterable[str]) -> str:
    """What to ask about for a command call: its folder for read-only ones, else exactly it."""
    listed = list(targets)
    line = next((t for t in listed if t.startswith(_CLASSES)), "command:")
    kind, _, argv = line.partition(":")
    cwd = next((t[4:] for t in listed if t.startswith("cwd:")), None)
    if kind == "readonly" and cwd is not None and WHOLE_HOME not in listed:
        # An empty cwd is the scratch folder: it adds no place ("readonly-in:" alone covers only
        # commands that see none of the person's folders).
        places = [p for p in [cwd, *(t[4:] for t in listed if t.startswith("dir:"))] if p]
        return READONLY_IN + (os.path.commonpath(places) if places else "")
    return exact_command_scope(argv, cwd) if cwd is not None else f"command:{argv}"


def read_only_command_scope(scope: str) -> bool:
    """Whether a system_execute scope is the read-only class (`readonly`, `readonly-in:…`)."""
    return scope == READONLY or scope.startswith(READONLY_IN)


def scope_covers(
    capability: Capability, scope: str, targets: Iterable[str], *, resolve_scope: bool = True
) -> bool:
    """Whether every target lies inside the scope.

    Targets are already normalised by the tool. A path scope the user typed is resolved here; a
    grant's scope was resolved when it was granted and is not re-resolved (`resolve_scope=False`):
    a symlink changed later must not move what was granted.
    """
    return all(
        covers_one(capability, scope, target, resolve_scope=resolve_scope) for target in targets
    )


def natural_scope(capability: Capability, target: str) -> str:
    """The scope to ask about when the user's words did not name one: as narrow as the call.

    A read-only command asks for the read-only class (a session grant then covers `ls`, `df`, …
    for the session); anything else asks for exactly what it touches.
    """
    if capability in UNSCOPED_CAPS:
        return ANY
    if capability is Capability.SYSTEM_EXECUTE:
        return natural_command_scope([target])
    return target


def describe_scope(capability: Capability, scope: str) -> str:
    """The scope in words for a prompt or a message: "read-only commands", "`df -h`", …

    A path or name in it that holds control, bidi or zero-width characters, or bytes that are
    not UTF-8, is shown escaped (tools.escapes): what a prompt shows must be what it means."""
    return visible(_scope_words(capability, scope))


def _scope_words(capability: Capability, scope: str) -> str:
    if scope == ANY:
        return "anything" if capability in UNSCOPED_CAPS else "any display"
    if capability is Capability.SYSTEM_EXECUTE:
        if scope == READONLY:
            return "read-only commands anywhere"
        if scope.startswith(READONLY_IN):
            where = scope[len(READONLY_IN) :]
            if not where:
                return "read-only commands that see none of your folders"
            return f"read-only commands in {where}"
        argv, cwd = _split_exact(scope)
        if argv is not None:
            return f"`{argv}`" + (f" in {cwd}" if cwd else "")
        for prefix in _CLASSES:
            if scope.startswith(prefix):
                return f"`{scope[len(prefix) :]}`"
    if capability in MCP_CAPS and scope.startswith(MCP_PREFIX):
        server, _, tool = scope[len(MCP_PREFIX) :].partition("__")
        if tool == "*":
            return f"every tool of MCP server '{server}' that {_MCP_VERB[capability]}"
        return f"the tool {tool} of MCP server '{server}'"
    for prefix in ("domain:", "display:", "path:", "url:"):
        if scope.startswith(prefix):
            return scope[len(prefix) :]
    return scope


_MCP_VERB = {
    Capability.MCP_READ: "only reads",
    Capability.MCP_WRITE: "changes things",
    Capability.MCP_EXECUTE: "runs things",
}

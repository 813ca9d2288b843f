"""What a grant's scope covers, for every capability: the one place scope matching is defined.

A tool names what a call would touch as *targets* (`Tool.targets(args)`); a grant has a *scope*.
Both are strings whose form depends on the capability:

- file_read, file_write: the target is a resolved absolute path; the scope a resolved folder
  or file, which covers the target when the target is it or lies inside it.
- system_execute: the target is `readonly:<argv>` or `command:<argv>`; the scope `readonly`
  covers every `readonly:` target, and `command:X` covers exactly `command:X` / `readonly:X`.
- web_access: `domain:<host>` for both; covers the same host or a subdomain of it.
- screen_read: `display:<name>` for both, or the scope `*` for any display.
- open_external: `path:<abs>` or `url:<url>`; covers only exactly the same string.
- system_read, memory_write: no targets; the scope is `*`.

`<argv>` is the normalised command line (`shlex.join` of each command, ` | ` between the commands
of a pipeline). Hosts are lower-case IDNA. This module never touches the filesystem for scopes
that are already resolved, and never decides policy: it only answers "is this inside that".
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tools.manual import PATH_SCOPED as PATH_CAPS
from tools.manual import Capability
from tools.paths import is_within, resolve_path

ANY = "*"
READONLY = "readonly"

UNSCOPED_CAPS = frozenset({Capability.SYSTEM_READ, Capability.MEMORY_WRITE})


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
        if scope == READONLY:
            return target.startswith("readonly:")
        if scope.startswith("command:"):
            argv = scope[len("command:") :]
            return target in (scope, f"readonly:{argv}")
        if scope.startswith("readonly:"):
            return target == scope
        return False
    if capability is Capability.WEB_ACCESS:
        granted, wanted = _host_of(scope), _host_of(target)
        if granted is None or wanted is None:
            return False
        return wanted == granted or wanted.endswith("." + granted)
    if capability is Capability.SCREEN_READ:
        return scope in (ANY, target)
    return scope == target and scope != ANY


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
    if capability is Capability.SYSTEM_EXECUTE and target.startswith("readonly:"):
        return READONLY
    return target


def describe_scope(capability: Capability, scope: str) -> str:
    """The scope in words for a prompt or a message: "read-only commands", "`df -h`", …"""
    if scope == ANY:
        return "anything" if capability in UNSCOPED_CAPS else "any display"
    if capability is Capability.SYSTEM_EXECUTE:
        if scope == READONLY:
            return "read-only commands"
        for prefix in ("command:", "readonly:"):
            if scope.startswith(prefix):
                return f"`{scope[len(prefix) :]}`"
    for prefix in ("domain:", "display:", "path:", "url:"):
        if scope.startswith(prefix):
            return scope[len(prefix) :]
    return scope

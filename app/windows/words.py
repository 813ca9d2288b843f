"""Words the windows share: what each capability and tool does, counts, moments and spans of time.

A capability has two wordings on purpose: the Permissions and Activity windows list what a
capability lets Chamberlain do ("Run commands"), the permission dialog asks for one action of it
("Run a command").

A window's title says what the window is ("Settings", "Permissions"), never the app's name: Qt
adds " — Chamberlain" (the application display name) where the desktop lists windows, unless the
title already ends with it, so every window reads "Settings — Chamberlain" there, and a title
such as "Chamberlain — Settings" would read "Chamberlain — Settings — Chamberlain".

Plain functions of their arguments: no Qt, no I/O.
"""

from __future__ import annotations

from datetime import datetime

from tools.escapes import visible
from tools.manual import Capability
from tools.scopes import ANY, describe_scope

# What each capability lets Chamberlain do, as the windows list a capability.
CAPABILITY_WORDS: dict[str, str] = {
    "screen_read": "See your screen",
    "file_read": "Read files",
    "file_write": "Change files",
    "system_read": "Read system information",
    "system_execute": "Run commands",
    "web_access": "Use the web",
    "open_external": "Open files and links in other apps",
    "memory_write": "Remember things",
    "mcp_read": "Use MCP tools that read",
    "mcp_write": "Use MCP tools that change things",
    "mcp_execute": "Use MCP tools that run things",
}


# One action of each capability, as the permission dialog asks for it.
ACTION_WORDS: dict[Capability, str] = {
    Capability.FILE_READ: "Read files",
    Capability.FILE_WRITE: "Change files",
    Capability.SYSTEM_READ: "Look up system information",
    Capability.SYSTEM_EXECUTE: "Run a command",
    Capability.WEB_ACCESS: "Use the web",
    Capability.SCREEN_READ: "See your screen",
    Capability.OPEN_EXTERNAL: "Open something in another app",
    Capability.MEMORY_WRITE: "Remember something about you",
    Capability.MCP_READ: "Use an MCP tool that reads",
    Capability.MCP_WRITE: "Use an MCP tool that changes things",
    Capability.MCP_EXECUTE: "Use an MCP tool that runs things",
}


# What each built-in tool does, as the windows name a tool ("List a folder", never `file_list`).
# An MCP tool has no entry: it is shown by the name its server gives it.
TOOL_WORDS: dict[str, str] = {
    "file_list": "List a folder",
    "file_read": "Read a file",
    "file_search": "Search files",
    "get_active_window": "See which window is active",
    "open_path": "Open a file or folder",
    "open_url": "Open a link",
    "screen_capture": "Take a screenshot",
    "system_execute": "Run a command",
    "system_info": "Look up system information",
    "web_fetch": "Fetch a web page",
    "web_search": "Search the web",
}


def tool_words(tool: str) -> str:
    """What the tool does, in words ("List a folder"); an MCP tool by its own name."""
    return TOOL_WORDS.get(tool, tool)


def waiting_words(tool: str, capability: Capability, scope: str) -> str:
    """What the chat says while a permission question is open: "Waiting for your permission:
    List a folder (/home/ann/Documents)…". The tool's name and the scope may come from the
    model, so both are escaped; a scope that covers anything is not said ("(*)" means nothing
    to a person)."""
    where = "" if scope == ANY else f" ({describe_scope(capability, scope).replace('`', '')})"
    return f"Waiting for your permission: {visible(tool_words(tool))}{where}…"


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """A count with its noun: "1 permission", "3 permissions", "0 facts"."""
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def span(seconds: float) -> str:
    """How long something lasts, in whole words: "5 minutes", "1 hour 30 minutes", "45 seconds".
    (``duration`` is the countdown's short form, to the second.)"""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return counted(hours, "hour") + (f" {counted(minutes, 'minute')}" if minutes else "")
    if minutes:
        return counted(minutes, "minute") + (f" {counted(secs, 'second')}" if secs else "")
    return counted(secs, "second")


def capability_words(capability: str) -> str:
    """What the capability lets Chamberlain do: "Read files", "Run commands"…"""
    return CAPABILITY_WORDS.get(capability, capability.replace("_", " ").capitalize())


def action_words(capability: Capability) -> str:
    """One action of the capability, as a prompt asks for it: "Read files", "Run a command"…"""
    return ACTION_WORDS[capability]


def when(timestamp: float | None) -> str:
    """A moment in local time, as a person reads it ("2026-11-24 16:09"); "—" for none."""
    if timestamp is None:
        return "—"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def when_exactly(timestamp: float | None) -> str:
    """A moment to the second, for the activity log ("2026-11-24 16:09:40")."""
    if timestamp is None:
        return "—"
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float) -> str:
    """A span in words, to the second: "4 min 05 s", "1 h 02 min", "12 s"."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"

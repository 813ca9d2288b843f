"""Words the windows share: what each capability lets Chamberlain do, moments and spans of time.

A capability has two wordings on purpose: the Permissions and Activity windows list what a
capability lets Chamberlain do ("Run commands"), the permission dialog asks for one action of it
("Run a command").

Plain functions of their arguments: no Qt, no I/O.
"""

from __future__ import annotations

from datetime import datetime

from tools.manual import Capability

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

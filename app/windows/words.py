"""Words the windows share: what each capability lets Chamberlain do, moments and spans of time.

Plain functions of their arguments: no Qt, no I/O.
"""

from __future__ import annotations

from datetime import datetime

# What each capability lets Chamberlain do, in the words a prompt would use.
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


def capability_words(capability: str) -> str:
    return CAPABILITY_WORDS.get(capability, capability.replace("_", " ").capitalize())


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

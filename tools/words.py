"""What each tool and capability does, in the words a person reads.

One table for the windows (app/windows/words.py imports it) and for the sentences the broker
words itself (a refusal, a denial, a reply to a call that did not run), which reach a person on a
chat card, in a reply or on the command line, and the model too. A tool's or capability's id
(`file_list`, `system_execute`) belongs in the audit log and JSON output, never in such a
sentence.

A capability has two wordings on purpose: the Permissions and Activity windows list what a
capability lets Chamberlain do ("Run commands"), a question or a sentence names one action of it
("Run a command").

Plain data and functions of their arguments: no I/O, no Qt. A tool's name may be the model's own
(a tool it made up) or an MCP server's; it is shown escaped, never trusted as words.
"""

from __future__ import annotations

from tools.escapes import visible
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


def capability_words(capability: str) -> str:
    """What the capability lets Chamberlain do: "Read files", "Run commands"…"""
    return CAPABILITY_WORDS.get(capability, capability.replace("_", " ").capitalize())


def action_words(capability: Capability) -> str:
    """One action of the capability, as a prompt asks for it: "Read files", "Run a command"…"""
    return ACTION_WORDS[capability]


def _lower_first(words: str) -> str:
    return words[:1].lower() + words[1:]


def tool_action(tool: str) -> str:
    """The tool's action inside a sentence: "list a folder" ("I did not list a folder"); a tool
    with no words (an MCP tool, or a name the model made up) is "use the tool `name`", its name
    escaped and cut short."""
    words = TOOL_WORDS.get(tool)
    if words is not None:
        return _lower_first(words)
    shown = visible(tool if len(tool) <= 80 else tool[:80] + "…")
    return f"use the tool {shown}"


def capability_action(capability: Capability) -> str:
    """The capability's action inside a sentence: "read files", "run a command"."""
    return _lower_first(ACTION_WORDS[capability])

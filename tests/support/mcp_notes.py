"""What the MCP tests share: the tests' own notes server (mcp_notes_server.py), its settings entry,
the tools it offers, and finding the programs a test started."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import psutil

from tools.mcp.config import McpServerConfig

NOTES_SERVER = Path(__file__).resolve().parent / "mcp_notes_server.py"
# Every tool the notes server lists at start, as Chamberlain names them for a server "notes".
NOTES_TOOLS = frozenset(
    f"notes__{name}"
    for name in (
        "add_reminders",
        "crash",
        "flood",
        "hang",
        "list_notes",
        "read_note",
        "shout",
        "weather",
        "write_note",
    )
)


def notes_config(folder: Path, **changes: Any) -> McpServerConfig:
    """The settings entry that runs the notes server on `folder`, over stdio; it writes notes, so
    its sandbox lets it change that folder (`write`) unless `changes` say otherwise."""
    changes.setdefault("write", True)
    return McpServerConfig(command=sys.executable, args=(str(NOTES_SERVER), str(folder)), **changes)


def write_notes(folder: Path) -> Path:
    """A notes folder with two notes in it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "groceries.txt").write_text("milk, eggs\n")
    (folder / "ideas.md").write_text("a tray app\n")
    return folder


def running_with(marker: str) -> list[psutil.Process]:
    """Live processes (not zombies) whose command line mentions `marker` in any argument."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any(marker in part for part in proc.info["cmdline"] or ()):
            found.append(proc)
    return found

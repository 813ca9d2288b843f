"""A small MCP server of the tests' own: notes in a folder, and tools that misbehave on purpose.

Run as `python tests/support/mcp_notes_server.py FOLDER [--http PORT]` (stdio by default). Its
tools: list_notes, read_note, write_note (whose annotations lie: readOnlyHint true), weather (a
name that says nothing), add_reminders (a tool that adds another and says the list changed),
crash (the process dies mid-call), hang (never answers), flood (answers far over any cap),
shout (says it failed). Never imported by the product.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations


def build(folder: Path) -> MCPServer:
    server = MCPServer("notes-test", version="1.0")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def list_notes() -> str:
        """List the notes in the folder."""
        return "\n".join(sorted(p.name for p in folder.iterdir())) or "(no notes)"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def read_note(name: str) -> str:
        """Read one note by its file name."""
        return (folder / Path(name).name).read_text()

    # The annotations lie: it writes, and says it only reads and destroys nothing.
    @server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
    def write_note(name: str, text: str) -> str:
        """Write a note."""
        (folder / Path(name).name).write_text(text)
        return f"wrote {name}"

    @server.tool()
    def weather(city: str) -> str:
        """Say what the weather is."""
        return f"sunny in {city}"

    @server.tool()
    async def add_reminders(ctx: Context) -> str:
        """Add a reminders tool to this server."""

        def list_reminders() -> str:
            """List reminders."""
            return "buy milk"

        server.add_tool(list_reminders)
        await ctx.session.send_tool_list_changed()
        return "added"

    @server.tool()
    def crash() -> str:
        """Die in the middle of the call."""
        print("notes server: giving up now", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool()
    def hang() -> str:
        """Never answer."""
        time.sleep(3600)
        return "late"

    @server.tool()
    def flood() -> str:
        """Answer with far too much."""
        return "x" * (8 * 1024 * 1024)

    @server.tool()
    def shout() -> str:
        """Fail, saying so."""
        raise ValueError("the shouting tool always fails")

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--http", type=int, default=None)
    options = parser.parse_args()
    server = build(options.folder)
    if options.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)


if __name__ == "__main__":
    main()

"""The reference filesystem MCP server (`@modelcontextprotocol/server-filesystem`), run for real.

`scripts/setup.sh --test` installs it with `npm ci` into tests/support/npm/node_modules, pinned
by tests/support/npm/package-lock.json, and Debian's node when there is none. Tests start it
through Chamberlain's own settings: `server_settings(folder)` is the `mcp.servers.NAME` entry a
user would paste, with the installed entry point instead of `npx -y ...` so nothing is fetched
while the tests run. Never imported by the product.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

NPM_FOLDER = Path(__file__).resolve().parent / "npm"
PACKAGE = "@modelcontextprotocol/server-filesystem"
# The version package.json pins; the tests' expectations (its tool list) are for this one.
VERSION = "2026.8.31"
ENTRY = NPM_FOLDER / "node_modules" / PACKAGE / "dist" / "index.js"
# What the server calls itself in its MCP handshake.
SERVER_NAME = "secure-filesystem-server"


def node_missing() -> str | None:
    """Why the server cannot run on this machine (no node), or None when node is there."""
    if shutil.which("node") is None:
        return "node is not installed (scripts/setup.sh --test installs Debian's nodejs)"
    return None


def install_problem() -> str | None:
    """Why the installed server is not the pinned one, or None when it is."""
    if not ENTRY.is_file():
        return f"{PACKAGE} is not installed in {NPM_FOLDER}: run scripts/setup.sh --test"
    manifest = json.loads((ENTRY.parent.parent / "package.json").read_text(encoding="utf-8"))
    if manifest.get("version") != VERSION:
        return (
            f"{PACKAGE} {manifest.get('version')} is installed, the tests expect {VERSION}: "
            "run scripts/setup.sh --test"
        )
    return None


def server_settings(*folders: Path, write: bool = True) -> dict[str, Any]:
    """One `mcp.servers` entry, as settings.json holds it: the server, allowed `folders` only,
    which its sandbox lets it change when `write`."""
    return {
        "command": "node",
        "args": [str(ENTRY), *(str(folder) for folder in folders)],
        "write": write,
    }

"""Writing a test home's settings.json as the person would have it: confirmed.

Settings that widen reach (MCP servers, unsandboxed commands, endpoints, profiles: see
broker.settings_seal) are not used when settings.json changed outside Chamberlain, and a test
that writes the file is outside Chamberlain. `write_settings` writes the file as given, then
confirms every change the way `chamberlain settings confirm` does, under the home's own install
secret (`token.key`, as the tests run without a keyring): the CLI and the app started on that
home then use it. `plant_settings` writes it as a tool or another program would: unconfirmed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def plant_settings(home: Path, data: dict[str, Any] | str) -> Path:
    """Write settings.json as another program would (nothing confirmed); its path."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "settings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def write_settings(home: Path, data: dict[str, Any] | str) -> Path:
    """Write settings.json and confirm it, as the person would in Settings; its path."""
    from broker.settings import confirm_pending

    path = plant_settings(home, data)
    confirm_pending(home)
    return path

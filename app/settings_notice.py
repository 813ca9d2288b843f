"""What the front ends say about a broken settings.json, and how a read-only command goes on.

A command that only reads the settings (`ask`, `policy`, `models list`, `mcp`, `memory`)
goes on with the settings in use — the file's broken keys, or all of it, at their defaults — and
says so once on stderr, in one line. A command that writes the settings loads them strictly
(`broker.settings.load_settings`) and stops with the same sentence instead, so it never replaces
the broken file. A change made outside Chamberlain to a sealed setting (broker.settings_seal) is
said the same way, one line naming each change, which is not used until the person confirms it.

Plain Python: the headless CLI imports this, so it must never import Qt.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.settings import LoadedSettings, Settings

# The files already reported by this process: one warning each, however often they are read.
_reported: set[Path] = set()


def in_use(loaded: LoadedSettings) -> str:
    """What Chamberlain uses instead of the broken part: "the default settings" or "the default
    for llm.url" (for "llm.url and executor", "the defaults for …")."""
    if loaded.whole_file or not loaded.defaulted:
        return "the default settings"
    keys = list(loaded.defaulted)
    if len(keys) == 1:
        return f"the default for {keys[0]}"
    return f"the defaults for {', '.join(keys[:-1])} and {keys[-1]}"


def one_line(loaded: LoadedSettings) -> str:
    """The problem, where it is, and what is used meanwhile: one sentence without a full stop."""
    assert loaded.problem is not None
    return f"{loaded.problem.problem}; using {in_use(loaded)} until it is fixed or moved aside"


def settings_for_reading(home: Path) -> Settings:
    """The settings for a command that only reads them; a broken file is said once on stderr
    and worked around. An invalid environment variable is still a SettingsError."""
    from broker.settings import read_settings

    loaded = read_settings(home)
    problem = loaded.problem
    if problem is not None and problem.path not in _reported:
        if problem.path is not None:
            _reported.add(problem.path)
        sys.stderr.write(f"chamberlain: {one_line(loaded)}\n")
        sys.stderr.flush()
    said = home / "settings.seal.json"
    if (loaded.pending or loaded.seal_problem) and said not in _reported:
        _reported.add(said)
        sys.stderr.write(f"chamberlain: {pending_line(loaded)}\n")
        sys.stderr.flush()
    return loaded.settings


def pending_line(loaded: LoadedSettings) -> str:
    """One line naming each change to a sealed setting made outside Chamberlain, and how to
    confirm or discard them; or what is wrong with the seal."""
    if not loaded.pending:
        assert loaded.seal_problem is not None
        return f"{loaded.seal_problem}; `chamberlain settings pending` lists what waits"
    changes = "; ".join(change.describe() for change in loaded.pending)
    return (
        f"settings.json was changed outside Chamberlain and waits for your confirmation, so "
        f"these changes are not used: {changes} (review them with `chamberlain settings "
        "pending`, then `chamberlain settings confirm` or `chamberlain settings discard`)"
    )


def pending_summary(loaded: LoadedSettings) -> str:
    """What the desktop app says at start: how many changes wait, and where to review them."""
    count = len(loaded.pending)
    what = "a change" if count == 1 else f"{count} changes"
    return (
        f"Chamberlain's settings file holds {what} made outside Chamberlain (by another program "
        "or by hand). Until you confirm them, Chamberlain keeps using the settings you last "
        "confirmed. Review them in Settings."
    )

"""Words the windows share: what each capability and tool does, counts, moments and spans of time.

What each tool and capability does is tools/words.py's table, and a count is core/words.py's
`counted`: the broker's own sentences (a refusal, a reply to a call that did not run) use the
same ones, and they are imported from here by the windows as they were.

A window's title says what the window is ("Settings", "Permissions"), never the app's name: Qt
adds " — Chamberlain" (the application display name) where the desktop lists windows, unless the
title already ends with it, so every window reads "Settings — Chamberlain" there, and a title
such as "Chamberlain — Settings" would read "Chamberlain — Settings — Chamberlain".

Plain functions of their arguments: no Qt, no I/O.
"""

from __future__ import annotations

from datetime import datetime

from core.words import counted as counted
from core.words import span as span
from tools.escapes import visible
from tools.manual import Capability
from tools.scopes import ANY, describe_scope
from tools.words import ACTION_WORDS as ACTION_WORDS
from tools.words import CAPABILITY_WORDS as CAPABILITY_WORDS
from tools.words import TOOL_WORDS as TOOL_WORDS
from tools.words import action_words as action_words
from tools.words import capability_words as capability_words
from tools.words import tool_words as tool_words


def waiting_words(tool: str, capability: Capability, scope: str) -> str:
    """What the chat says while a permission question is open: "Waiting for your permission:
    List a folder (/home/ann/Documents)…". The tool's name and the scope may come from the
    model, so both are escaped; a scope that covers anything is not said ("(*)" means nothing
    to a person)."""
    where = "" if scope == ANY else f" ({describe_scope(capability, scope).replace('`', '')})"
    return f"Waiting for your permission: {visible(tool_words(tool))}{where}…"


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

"""A real MemoryStore on a real SQLite file, and what its files hold, for the store's tests.

``open_store`` opens the file the way the app does (SQLCipher with a fixed test key, or
plaintext where a test reads the file's raw bytes); ``holds`` says which of the database's
files (main, WAL, shared memory) hold a marker's bytes, which is how the tests see that a
forgotten text is gone from the disk and not only from the queries.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from core.clock import Clock
from memory.db import open_database
from memory.store.facts import MemoryStore
from memory.types import EventKind, Fact

KEY = bytes(range(32))
DAY = 86400.0
# The test clocks start here (a fixed time, so expiry and recency are exact).
START = 1_700_000_000.0


def open_store(path: Path, encrypted: bool, clock: Clock, **kwargs: Any) -> MemoryStore:
    """A store on ``path``: encrypted with the test key, or plaintext."""
    database = open_database(path, key=KEY if encrypted else None, encrypted=encrypted)
    return MemoryStore(database, clock, **kwargs)


def kinds(store: MemoryStore, fact_id: str) -> list[EventKind]:
    """The kinds of a fact's events, oldest first."""
    return [e.kind for e in reversed(store.events(fact_id=fact_id))]


def file_bytes(path: Path) -> dict[str, bytes]:
    """The bytes of the database's files that exist: "" (main), "-wal" and "-shm"."""
    return {
        suffix: Path(f"{path}{suffix}").read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(f"{path}{suffix}").exists()
    }


def holds(path: Path, marker: str) -> list[str]:
    """Which of the database's files hold the marker's bytes (in any case)."""
    needles = {marker.encode(), marker.lower().encode(), marker.upper().encode()}
    return [
        suffix or "main"
        for suffix, data in file_bytes(path).items()
        if any(needle in data for needle in needles)
    ]


def fact_dict(text: str, **fields: Any) -> dict[str, Any]:
    """A fact as an export holds it."""
    return Fact(
        id="x" + hashlib.md5(text.encode()).hexdigest()[:8],
        text=text,
        created_at=1_600_000_000.0,
        **fields,
    ).model_dump(mode="json")


def export_of(facts: list[dict[str, Any]]) -> dict[str, Any]:
    """An export document holding these facts and no anchors."""
    return {"schema": "chamberlain.memory", "schema_version": 1, "facts": facts, "anchors": []}

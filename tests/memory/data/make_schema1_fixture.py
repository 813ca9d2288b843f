"""Writes ``schema1.db`` (and ``schema1.json``, what it holds): a memory database as the code of
schema 1 wrote it, before sqlite-utils created the schema, for tests/memory/test_migrations.py.

    .venv/bin/python -m tests.memory.data.make_schema1_fixture

It was run once, on the tree where ``memory/db.py`` still created every table by hand
(commit ``47ea32d``, issue 8), and its output is committed. Running it again with later
code writes a file made by that code, which is not what the tests mean by "an old store"; do
not regenerate it, add a new fixture for a new schema instead.

The file is encrypted with KEY (SQLCipher, raw key), like a real store. It holds every kind
of row the schema knows: active, pending, superseded (an edit and a slot), secret, expiring,
used (use counts and USED events), a forgotten fact (only its events remain), anchors.
"""

from __future__ import annotations

import json
from pathlib import Path

from core.clock import ManualClock
from memory.db import open_database
from memory.store.facts import MemoryStore
from memory.types import FactStatus, Sensitivity

HERE = Path(__file__).resolve().parent
KEY = bytes(range(32))
START = 1_700_000_000.0


class _TickingClock(ManualClock):
    """A second passes at every reading, so each row the script writes has its own moment (the
    committed file was written this way)."""

    def now(self) -> float:
        self.advance(1.0)
        return super().now()


def main() -> None:
    path = HERE / "schema1.db"
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)
    store = MemoryStore(open_database(path, key=KEY), _TickingClock(START))
    try:
        store.add("my sister Anna lives in Lisbon", sensitivity=Sensitivity.LOW, category="people")
        store.add("I am allergic to peanuts", sensitivity=Sensitivity.PERSONAL, category="health")
        store.add("I work as a nurse in Porto", sensitivity=Sensitivity.LOW, slot="job")
        store.add("I work as a pilot in Oslo", sensitivity=Sensitivity.LOW, slot="job")
        pending = store.add("my bank is Caixa", sensitivity=Sensitivity.PERSONAL).fact
        assert pending.status is FactStatus.PENDING
        approved = store.add("my blood type is O negative", sensitivity=Sensitivity.PERSONAL)
        store.approve(approved.fact.id)
        edited = store.add("my dog is called Rex", sensitivity=Sensitivity.LOW, category="pets")
        store.edit(edited.fact.id, "my dog is called Rex the Second")
        store.add(
            "the café on Rua Augusta closes at 18:00 — naïve résumé ✓",
            sensitivity=Sensitivity.LOW,
            expires_at=START + 10 * 365 * 86400,
        )
        store.add("my passport number is X1234567", sensitivity=Sensitivity.SECRET)
        gone = store.add("I used to live in Berlin", sensitivity=Sensitivity.LOW).fact
        store.forget(gone.id)
        for i in range(40):
            store.add(
                f"note {i}: I go climbing every Friday with friend {i}", sensitivity=Sensitivity.LOW
            )
        assert store.recall("where does my sister live")
        assert store.recall("climbing on friday")
        store.add_anchor("Answer in British English.")
        store.add_anchor("Keep answers short.")
        snapshot = {
            "facts": [
                f.model_dump(mode="json") for f in store.facts(include_superseded=True, limit=1000)
            ],
            "anchors": [a.model_dump(mode="json") for a in store.anchors()],
            "events": len(store.events(limit=10_000)),
        }
    finally:
        store.close()
    (HERE / "schema1.json").write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()

"""The schema through sqlite-utils: what it creates, what it upgrades, and when it is loaded.

``memory/db.py`` creates and upgrades the schema through sqlite-utils, which costs ~0.16 s to
import, so it is loaded only when a migration step is pending (a new store, an upgrade) and
for export and import; opening an up-to-date store, recall, add and forget never load it.
Whether a module was imported can only be seen in a fresh interpreter, so those checks run in
real subprocesses. ``data/schema1.db`` is a store written by the code of schema 1 before
sqlite-utils created the schema (``data/make_schema1_fixture.py``; ``data/schema1.json`` is
what it held when written).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from core.clock import ManualClock
from memory import db as memory_db
from memory.db import open_database, schema_version
from memory.store.facts import MemoryStore
from memory.types import Fact, FactStatus, Sensitivity

if TYPE_CHECKING:
    import sqlite_utils

DATA = Path(__file__).resolve().parent / "data"
KEY = bytes(range(32))
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    shutil.copyfile(DATA / "schema1.db", path)
    return path


def _written() -> dict[str, Any]:
    return json.loads((DATA / "schema1.json").read_text("utf-8"))


def _everything(store: MemoryStore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    facts = store.facts(include_superseded=True, limit=1000)
    return (
        [f.model_dump(mode="json") for f in sorted(facts, key=lambda f: f.id)],
        [a.model_dump(mode="json") for a in store.anchors()],
    )


def _by_id(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: r["id"])


# --- an old store ----------------------------------------------------------------------------


def test_a_store_written_by_schema_1_code_opens_with_every_fact_anchor_and_event(old_store):
    written = _written()
    with MemoryStore(open_database(old_store, key=KEY), ManualClock()) as store:
        assert store.database.version == schema_version()
        facts, anchors = _everything(store)
        assert facts == _by_id(written["facts"])
        assert anchors == written["anchors"]
        assert len(store.events(limit=10_000)) == written["events"]
        assert store.integrity_check() == "ok"
        # Its full-text index still answers, and new writes are indexed beside the old ones.
        assert [f.text for f in store.recall("where does my sister live")] == [
            "my sister Anna lives in Lisbon"
        ]
        added = store.add("my sister Clara lives in Turin", sensitivity=Sensitivity.LOW).fact
        assert {f.id for f in store.recall("sister lives")} >= {added.id}
        store.forget(added.id)
        assert store.integrity_check() == "ok"


def _add_pinned_column(db: sqlite_utils.Database) -> None:
    db.table("facts").add_column("pinned", int, not_null_default=0)
    db.table("facts").create_index(["pinned"], index_name="facts_pinned", if_not_exists=True)


def test_a_sqlite_utils_migration_step_upgrades_an_old_store_and_keeps_every_fact(
    old_store, monkeypatch
):
    written = _written()
    current = schema_version()
    monkeypatch.setattr(memory_db, "MIGRATIONS", [*memory_db.MIGRATIONS, _add_pinned_column])
    with MemoryStore(open_database(old_store, key=KEY), ManualClock()) as store:
        assert store.database.version == current + 1
        facts, anchors = _everything(store)
        assert facts == _by_id(written["facts"])
        assert anchors == written["anchors"]
        pinned = store.database.conn.execute("SELECT count(*) FROM facts WHERE pinned = 0")
        assert pinned.fetchone()[0] == len(written["facts"])
        assert store.recall("climbing on friday")
        assert store.integrity_check() == "ok"
    with MemoryStore(open_database(old_store, key=KEY), ManualClock()) as store:
        assert store.database.version == current + 1  # not migrated twice
        assert len(store.facts(include_superseded=True, limit=1000)) == len(written["facts"])


# --- a new store -----------------------------------------------------------------------------


def _shape(conn: sqlite3.Connection) -> dict[str, Any]:
    """Everything the schema says, with the spelling sqlite-utils and hand-written SQL differ
    in (quotes, spaces) taken out: objects, their SQL, columns, indexes (with their columns,
    uniqueness and WHERE) and triggers."""

    def plain(sql: str | None) -> str:
        text = re.sub(r"\s+", " ", (sql or "").replace('"', "")).strip()
        return text.replace("( ", "(").replace(" )", ")")

    objects = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE 'facts_fts_%' OR type = 'trigger' ORDER BY name"
    ).fetchall()
    shape: dict[str, Any] = {name: (kind, table, plain(sql)) for kind, name, table, sql in objects}
    for kind, name, _table, _sql in objects:
        if kind == "table":
            shape[f"{name} columns"] = conn.execute(f"PRAGMA table_xinfo({name})").fetchall()
        if kind == "index":
            shape[f"{name} columns"] = conn.execute(f"PRAGMA index_xinfo({name})").fetchall()
    return shape


def test_a_new_store_has_exactly_the_schema_that_schema_1_code_wrote(tmp_path, old_store):
    new = open_database(tmp_path / "new.db", key=KEY)
    old = open_database(old_store, key=KEY)
    try:
        assert _shape(new.conn) == _shape(old.conn)
        # The CHECK constraints sqlite-utils cannot write are there, and enforced.
        with pytest.raises(memory_db.IntegrityError, match="CHECK"):
            new.conn.execute(
                "INSERT INTO facts (id, text, norm_digest, sensitivity, sensitivity_rank, "
                "status, source, created_at) VALUES ('x', 't', 'd', 'public', 0, 'active', "
                "'import', 0)"
            )
    finally:
        new.close()
        old.close()


def test_export_and_import_through_sqlite_utils_round_trip_every_kind_of_fact(old_store, tmp_path):
    with MemoryStore(open_database(old_store, key=KEY), ManualClock()) as store:
        exported = store.export_json()
    facts = [Fact.model_validate(f) for f in exported["facts"]]
    assert _by_id([f.model_dump(mode="json") for f in facts]) == _by_id(_written()["facts"])
    with MemoryStore(open_database(tmp_path / "new.db", key=KEY), ManualClock()) as fresh:
        imported = fresh.import_json(exported)
        # Superseded versions stay behind; every other fact arrives once, pending, indexed.
        expected = sorted(f.text for f in facts if f.status is not FactStatus.SUPERSEDED)
        assert sorted(f.text for f in imported) == expected
        assert sorted(f.text for f in fresh.facts(limit=1000)) == expected
        assert {f.status for f in fresh.facts(limit=1000)} == {FactStatus.PENDING}
        approved = fresh.approve(imported[0].id)
        assert approved.id in {f.id for f in fresh.recall(approved.text)}
        assert fresh.import_json(exported) == []  # all duplicates now
        assert fresh.integrity_check() == "ok"


# --- when sqlite-utils is loaded ---------------------------------------------------------------


def _run(script: str) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter from the repo root; it prints one JSON line."""
    prelude = textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        from memory.db import open_database
        from memory.store.facts import MemoryStore
        from memory.types import Sensitivity
        KEY = bytes(range(32))
        def loaded():
            return "sqlite_utils" in sys.modules
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_opening_an_existing_store_recall_add_and_forget_never_load_sqlite_utils(old_store):
    # Brought up to date first: an upgrade is a migration step, which does load sqlite-utils.
    open_database(old_store, key=KEY).close()
    result = _run(
        f"""
        steps = {{"imported": loaded()}}
        store = MemoryStore(open_database(Path({str(old_store)!r}), key=KEY))
        steps["open"] = loaded()
        steps["recall"] = [f.text for f in store.recall("where does my sister live")]
        added = store.add("my cousin Omar lives in Graz", sensitivity=Sensitivity.LOW).fact
        store.forget(added.id)
        store.expire()
        store.facts()
        steps["after writes"] = loaded()
        store.export_json()
        steps["export"] = loaded()
        store.close()
        print(json.dumps(steps))
        """
    )
    assert result == {
        "imported": False,
        "open": False,
        "recall": ["my sister Anna lives in Lisbon"],
        "after writes": False,
        "export": True,
    }


def test_creating_a_new_store_loads_sqlite_utils_to_build_the_schema(tmp_path):
    result = _run(
        f"""
        before = loaded()
        database = open_database(Path({str(tmp_path / "memory.db")!r}), key=KEY)
        print(json.dumps({{"before": before, "after": loaded(), "version": database.version}}))
        database.close()
        """
    )
    assert result == {"before": False, "after": True, "version": schema_version()}

"""memory/store/connection.py: what every write goes through. Events never hold a text, the
refuse hook stops every way text is written, a closed store says so, readers and writers in
other connections and threads go on together, and a full disk or a read-only file is a plain
error that loses nothing.
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory.db import MemoryDiskError, MemoryDiskFullError, MemoryStoreError
from memory.store.errors import (
    CredentialRefused,
)
from memory.store.facts import MemoryStore
from memory.types import Sensitivity
from tests.support.memory_store import export_of, fact_dict, holds, open_store

LOW, PERSONAL, SECRET = Sensitivity.LOW, Sensitivity.PERSONAL, Sensitivity.SECRET


def test_events_hold_digests_never_text(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = open_store(path, False, clock)
    texts = ["my dog is called QXEVENTDOG", "I have QXEVENTSECRET", "my city is QXEVENTCITY"]
    dog = store.add(texts[0], sensitivity=LOW, slot="user.dog").fact
    secret = store.add(texts[1], sensitivity=SECRET).fact
    store.add(texts[2], sensitivity=LOW, slot="user.city")
    store.add("my city is QXEVENTTOWN", sensitivity=LOW, slot="user.city")
    store.recall("dog")
    store.add(texts[0], sensitivity=LOW)
    store.edit(dog.id, "my dog is called QXEVENTREX")
    store.reject(secret.id)
    store.add_anchor("QXEVENTANCHOR first")
    store.export_json()
    store.export_markdown()
    store.forget_all()

    rows = list(store.database.db["events"].rows)
    kinds = {row["kind"] for row in rows}
    assert {
        "ADD",
        "USED",
        "CONFIRM",
        "EDIT",
        "SUPERSEDE",
        "REJECT",
        "ANCHOR_SET",
        "EXPORT",
        "DELETE",
    } <= kinds
    for row in rows:
        for value in row.values():
            assert "QXEVENT" not in str(value).upper(), row
    digests = {row["digest"] for row in rows if row["kind"] == "ADD"}
    assert hashlib.sha256(texts[1].encode()).hexdigest() in digests
    store.close()
    assert holds(path, "QXEVENT") == []


def _refuse(text: str) -> str | None:
    return "That looks like a password; it was not stored." if "hunter2" in text else None


def test_refuse_hook_blocks_every_way_text_is_written(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = open_store(path, False, clock, refuse=_refuse)
    fact = store.add("my dog is called Rex", sensitivity=LOW).fact
    events_before = len(store.events())

    attempts = [
        lambda: store.add("my password is hunter2", sensitivity=LOW),
        lambda: store.add("a harmless fact", sensitivity=LOW, evidence="pw hunter2"),
        lambda: store.edit(fact.id, "my dog's password is hunter2"),
        lambda: store.add_anchor("always use hunter2"),
        lambda: store.import_json(export_of([fact_dict("login hunter2")])),
    ]
    for attempt in attempts:
        with pytest.raises(CredentialRefused, match="looks like a password"):
            attempt()

    assert store.count() == 1
    assert store.anchors() == []
    assert len(store.events()) == events_before
    store.close()
    assert holds(path, "hunter2") == []


def test_closed_store_says_so(tmp_path, clock):
    store = open_store(tmp_path / "memory.db", False, clock)
    store.close()
    store.close()
    with pytest.raises(MemoryStoreError, match="closed"):
        store.add("x y", sensitivity=LOW)


def test_integrity_check_is_ok(store):
    store.add("I am allergic to peanuts", sensitivity=LOW)
    store.add("my dog is called Rex", sensitivity=LOW)
    store.recall("dog")
    assert store.integrity_check() == "ok"


# --- concurrency ---------------------------------------------------------------------------------


@pytest.mark.parametrize("encrypted", [False, True], ids=["plaintext", "encrypted"])
def test_reader_connection_reads_while_another_writes(tmp_path, clock, encrypted):
    path = tmp_path / "memory.db"
    writer = open_store(path, encrypted, clock)
    reader = open_store(path, encrypted, clock)
    writer.add("fact zero", sensitivity=LOW)
    errors: list[BaseException] = []
    seen: list[int] = []
    done = threading.Event()

    def write() -> None:
        try:
            for i in range(1, 150):
                writer.add(f"fact number {i}", sensitivity=LOW)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(len(reader.facts(limit=10_000)))
                reader.search("fact")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write), threading.Thread(target=read)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == []
        assert seen
        assert seen == sorted(seen)  # never went backwards, never saw half a write
        assert reader.count() == 150
    finally:
        writer.close()
        reader.close()


def test_open_read_snapshot_does_not_block_the_writer(tmp_path, clock):
    path = tmp_path / "memory.db"
    writer = open_store(path, False, clock)
    reader = open_store(path, False, clock)
    try:
        writer.add("first", sensitivity=LOW)
        conn = reader.database.conn
        conn.execute("BEGIN")
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 1
        # WAL: the write goes through while the reader's snapshot stays open. Without it the
        # commit would wait for this same thread to end its read, which it never does, and the
        # add would fail as busy once the busy timeout ran out.
        writer.add("second", sensitivity=LOW)
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 1  # its snapshot
        conn.execute("COMMIT")
        assert reader.count() == 2
    finally:
        writer.close()
        reader.close()


def test_one_store_from_many_worker_threads(tmp_path, clock):
    store = open_store(tmp_path / "memory.db", True, clock)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            outcomes = list(
                pool.map(lambda i: store.add(f"worker fact {i % 25}", sensitivity=LOW), range(100))
            )
            list(pool.map(lambda _: store.recall("worker fact"), range(20)))
        assert store.count() == 25
        assert sum(o.action == "added" for o in outcomes) == 25
        assert store.integrity_check() == "ok"
    finally:
        store.close()


# --- a full disk, a read-only file ---------------------------------------------------------------


def _fill_the_disk(store: MemoryStore) -> None:
    """Stand-in for a full disk: SQLite's page cap, at the pages the file has now, makes the
    next write that needs a page fail with SQLITE_FULL ("database or disk is full"), the same
    error, from the same place in SQLite, that a full disk gives."""
    conn = store.database.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def _add_until_it_fails(store: MemoryStore) -> None:
    for i in range(2000):
        store.add(f"another fact {i} " + "x" * 300, sensitivity=LOW)


def test_a_full_disk_during_add_is_a_plain_error_and_loses_nothing(store):
    kept = [store.add(f"fact number {i}", sensitivity=LOW).fact for i in range(20)]
    _fill_the_disk(store)
    with pytest.raises(MemoryDiskFullError) as caught:
        _add_until_it_fails(store)
    folder = store.database.path.parent
    assert str(caught.value) == (
        f"The disk holding {folder} is full: the fact was not saved, and nothing already "
        "saved was lost; free some space, then try again."
    )
    assert isinstance(caught.value, MemoryStoreError)
    assert not store.database.conn.in_transaction
    assert {f.id for f in kept} <= {f.id for f in store.facts()}
    assert store.integrity_check() == "ok"
    # Space freed: the store goes on as before.
    store.database.conn.execute("PRAGMA max_page_count = 1073741823")
    assert store.add("written after space was freed", sensitivity=LOW).action == "added"


def test_a_read_only_memory_file_says_so_and_never_calls_the_file_damaged(store):
    """Stand-in for a read-only home: query_only makes SQLite refuse writes with the error a
    read-only file gives (SQLITE_READONLY)."""
    store.add("my dog is called Rex", sensitivity=LOW)
    store.database.conn.execute("PRAGMA query_only = 1")
    with pytest.raises(MemoryDiskError) as caught:
        store.add("my cat is called Tom", sensitivity=LOW)
    message = str(caught.value)
    assert "read-only" in message
    assert "the fact was not saved" in message
    assert "damaged" not in message
    assert "wrong key" not in message
    store.database.conn.execute("PRAGMA query_only = 0")
    assert [f.text for f in store.facts()] == ["my dog is called Rex"]

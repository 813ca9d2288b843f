"""Opening the memory database: keys, pragmas, migrations, and never harming a file it cannot open.

Real SQLite/SQLCipher files in tmp_path, encrypted and plaintext. Every failed open is checked
against the file's bytes before and after: the promise is that nothing was changed.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import sqlcipher3  # type: ignore[import-untyped]

from core.clock import ManualClock
from memory import db as memory_db
from memory.db import (
    MemoryCorruptError,
    MemoryDatabase,
    MemoryLockedError,
    MemorySchemaError,
    MemoryStoreError,
    open_database,
    schema_version,
)
from memory.store.facts import MemoryStore
from memory.types import Sensitivity

if TYPE_CHECKING:
    import sqlite_utils

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
PASSPHRASE = "correct horse 'battery' staple"


def _snapshot(directory: Path, *, ignore_shm: bool = False) -> dict[str, bytes]:
    """Every file in the directory, by name, with its bytes. The -shm file is only an index
    of the WAL that any reader may rebuild; with ignore_shm its bytes are not compared."""
    return {
        p.name: b"" if ignore_shm and p.name.endswith("-shm") else p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def _make(
    path: Path, *, encrypted: bool, facts: tuple[str, ...] = ("my dog is called Rex",)
) -> None:
    database = open_database(path, key=KEY if encrypted else None, encrypted=encrypted)
    store = MemoryStore(database, ManualClock(1_700_000_000.0))
    for text in facts:
        store.add(text, sensitivity=Sensitivity.LOW)
    store.close()


def _assert_refused_unchanged(
    path: Path,
    opener: Callable[[], object],
    error: type[MemoryStoreError],
    *,
    ignore_shm: bool = False,
) -> MemoryStoreError:
    before = _snapshot(path.parent, ignore_shm=ignore_shm)
    with pytest.raises(error) as caught:
        opener()
    after = _snapshot(path.parent, ignore_shm=ignore_shm)
    assert after == before, "a failed open changed or created files"
    assert "nothing was changed" in str(caught.value)
    return caught.value


@pytest.fixture(params=[True, False], ids=["encrypted", "plaintext"])
def encrypted(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def _open(path: Path, encrypted: bool) -> MemoryDatabase:
    return open_database(path, key=KEY if encrypted else None, encrypted=encrypted)


# --- a fresh database -----------------------------------------------------------------------


def test_new_database_has_the_schema_and_the_pragmas(tmp_path, encrypted):
    database = _open(tmp_path / "memory.db", encrypted)
    try:
        conn = database.conn
        assert database.version == schema_version() >= 1
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema_version()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        tables = set(database.db.table_names())
        assert {"facts", "anchors", "events", "facts_fts"} <= tables
        fts_sql = database.db["facts_fts"].schema
        assert "porter unicode61" in fts_sql
        assert database.integrity_check() == "ok"
        assert database.encrypted is encrypted
    finally:
        database.close()


def test_new_file_is_private_to_the_user(tmp_path, encrypted):
    path = tmp_path / "memory.db"
    _open(path, encrypted).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_reopening_keeps_the_data_and_does_not_migrate_again(tmp_path, encrypted):
    path = tmp_path / "memory.db"
    _make(path, encrypted=encrypted)
    database = _open(path, encrypted)
    try:
        assert database.conn.execute("SELECT text FROM facts").fetchall() == [
            ("my dog is called Rex",)
        ]
    finally:
        database.close()


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(MemoryStoreError, match="cannot be created"):
        open_database(tmp_path / "nowhere" / "memory.db", key=KEY)


# --- migrations ---------------------------------------------------------------------------------


def _add_notes_table(db: sqlite_utils.Database) -> None:
    db.table("notes").create({"id": int, "body": str}, pk="id")
    db.execute("INSERT INTO notes (body) SELECT 'from ' || id FROM facts")


def test_a_new_migration_step_upgrades_an_old_file_in_place(tmp_path, encrypted, monkeypatch):
    path = tmp_path / "memory.db"
    _make(path, encrypted=encrypted)
    monkeypatch.setattr(memory_db, "MIGRATIONS", [*memory_db.MIGRATIONS, _add_notes_table])

    database = _open(path, encrypted)
    try:
        assert database.version == schema_version() == len(memory_db.MIGRATIONS)
        assert database.conn.execute("PRAGMA user_version").fetchone()[0] == schema_version()
        assert database.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 1
        assert database.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 1
    finally:
        database.close()


def test_a_failing_migration_leaves_the_old_schema_whole(tmp_path, encrypted, monkeypatch):
    path = tmp_path / "memory.db"
    _make(path, encrypted=encrypted)

    def half_done(db: sqlite_utils.Database) -> None:
        db.table("half").create({"x": int})
        db.execute("INSERT INTO no_such_table VALUES (1)")

    current = schema_version()
    monkeypatch.setattr(memory_db, "MIGRATIONS", [*memory_db.MIGRATIONS, half_done])
    with pytest.raises(MemorySchemaError, match=f"left at schema {current}"):
        _open(path, encrypted)

    monkeypatch.undo()
    database = _open(path, encrypted)
    try:
        assert database.version == current
        assert "half" not in database.db.table_names()
        assert database.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 1
    finally:
        database.close()


@pytest.mark.parametrize("wal_left", [False, True], ids=["closed-cleanly", "died-with-a-wal"])
def test_a_newer_schema_is_refused_and_the_file_untouched(tmp_path, encrypted, wal_left):
    written = tmp_path / "written"
    written.mkdir()
    _make(written / "memory.db", encrypted=encrypted)
    newer = sqlcipher3.connect(str(written / "memory.db"), isolation_level=None)
    if encrypted:
        newer.execute(f"PRAGMA key = \"x'{KEY.hex()}'\"")
    newer.execute(f"PRAGMA user_version = {schema_version() + 5}")
    newer.execute("CREATE TABLE from_the_future (x)")
    if not wal_left:
        newer.close()
    # What the newer version left on disk (copied while it is still open, if it "died").
    path = _copy_files(written, tmp_path / "found") / "memory.db"
    newer.close()
    assert Path(f"{path}-wal").exists() is wal_left

    error = _assert_refused_unchanged(
        path, lambda: _open(path, encrypted), MemorySchemaError, ignore_shm=wal_left
    )
    assert "newer version of Chamberlain" in str(error)


def _copy_files(source: Path, target: Path) -> Path:
    target.mkdir()
    for file in source.iterdir():
        (target / file.name).write_bytes(file.read_bytes())
    return target


# --- keys --------------------------------------------------------------------------------------


def test_wrong_key_is_refused_and_the_file_untouched(tmp_path, capfd):
    path = tmp_path / "memory.db"
    _make(path, encrypted=True)
    capfd.readouterr()
    error = _assert_refused_unchanged(
        path, lambda: open_database(path, key=OTHER_KEY), MemoryLockedError
    )
    assert "wrong key or passphrase" in str(error)
    # The message is ours alone: SQLCipher's own diagnostics do not reach the terminal.
    assert capfd.readouterr().err == ""


def test_passphrase_opens_what_it_made_and_a_wrong_one_is_refused(tmp_path):
    path = tmp_path / "memory.db"
    database = open_database(path, passphrase=PASSPHRASE)
    MemoryStore(database, ManualClock(1_700_000_000.0)).add(
        "my cat is Tom", sensitivity=Sensitivity.LOW
    )
    database.close()

    _assert_refused_unchanged(
        path, lambda: open_database(path, passphrase="correct horse"), MemoryLockedError
    )
    # The raw key is not the passphrase either.
    _assert_refused_unchanged(path, lambda: open_database(path, key=KEY), MemoryLockedError)

    database = open_database(path, passphrase=PASSPHRASE)
    try:
        assert database.conn.execute("SELECT text FROM facts").fetchall() == [("my cat is Tom",)]
    finally:
        database.close()


def test_encrypted_file_opened_as_plaintext_is_refused(tmp_path):
    path = tmp_path / "memory.db"
    _make(path, encrypted=True)
    error = _assert_refused_unchanged(
        path, lambda: open_database(path, encrypted=False), MemoryLockedError
    )
    assert "encrypted" in str(error)


def test_plaintext_file_opened_with_a_key_is_refused(tmp_path):
    path = tmp_path / "memory.db"
    _make(path, encrypted=False)
    error = _assert_refused_unchanged(path, lambda: open_database(path, key=KEY), MemoryLockedError)
    assert "not encrypted" in str(error)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "neither a key nor a passphrase"),
        ({"key": KEY, "passphrase": "x"}, "not both"),
        ({"key": b"short"}, "must be 32 bytes"),
        ({"passphrase": ""}, "empty"),
        ({"key": KEY, "encrypted": False}, "takes no key"),
        ({"passphrase": "x", "encrypted": False}, "takes no key"),
    ],
)
def test_unusable_key_arguments_are_refused_before_touching_anything(tmp_path, kwargs, message):
    path = tmp_path / "memory.db"
    with pytest.raises(MemoryLockedError, match=message):
        open_database(path, **kwargs)
    assert not path.exists()


# --- damaged files --------------------------------------------------------------------------------


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plaintext"])
@pytest.mark.parametrize("size", [1000, 8192], ids=["odd-size", "page-sized"])
def test_garbage_is_refused_and_left_as_it_was(tmp_path, encrypted, size):
    path = tmp_path / "memory.db"
    path.write_bytes(os.urandom(size))
    before = path.read_bytes()

    with pytest.raises(MemoryStoreError) as caught:
        _open(path, encrypted)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    assert "nothing was changed" in str(caught.value)
    if size % 512:
        # Not a whole number of pages: certainly not a database, whatever the key.
        assert isinstance(caught.value, MemoryCorruptError)


def test_damaged_plaintext_file_is_called_damaged(tmp_path):
    path = tmp_path / "memory.db"
    _make(path, encrypted=False)
    data = bytearray(path.read_bytes())
    data[16:100] = os.urandom(84)  # the header after the magic string: page size, counts
    path.write_bytes(bytes(data))

    _assert_refused_unchanged(
        path, lambda: open_database(path, encrypted=False), MemoryCorruptError
    )


# --- what the bytes on disk hold --------------------------------------------------------------


def test_encrypted_file_does_not_hold_the_text_and_plaintext_does(tmp_path):
    marker = "zanzibarquokka"
    for encrypted in (True, False):
        path = tmp_path / f"memory-{encrypted}.db"
        _make(path, encrypted=encrypted, facts=(f"my favourite animal is the {marker}",))
        raw = path.read_bytes()
        assert (marker.encode() in raw) is (not encrypted)
        assert raw.startswith(b"SQLite format 3\x00") is (not encrypted)


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plaintext"])
def test_refused_open_leaves_an_unfinished_wal_alone(tmp_path, encrypted):
    """A store that died with committed pages still in its WAL, opened with the wrong key:
    neither the main file nor the WAL is touched, and the right key later recovers it all."""
    live = tmp_path / "live"
    live.mkdir()
    database = _open(live / "memory.db", encrypted)
    store = MemoryStore(database, ManualClock(1_700_000_000.0))
    store.add("my dog is called Rex", sensitivity=Sensitivity.LOW)
    store.add("my cat is called Tom", sensitivity=Sensitivity.LOW)
    crashed = _copy_files(live, tmp_path / "crashed")  # as a killed process would leave it
    store.close()
    path = crashed / "memory.db"
    assert (crashed / "memory.db-wal").stat().st_size > 0

    wrong: Callable[[], object] = (
        (lambda: open_database(path, key=OTHER_KEY))
        if encrypted
        else (lambda: open_database(path, key=KEY))
    )
    _assert_refused_unchanged(path, wrong, MemoryLockedError, ignore_shm=True)
    assert (crashed / "memory.db-wal").stat().st_size > 0

    recovered = _open(path, encrypted)
    try:
        assert recovered.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 2
        assert recovered.integrity_check() == "ok"
    finally:
        recovered.close()


# --- the disk and the folder, told apart from the file ----------------------------------------


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plaintext"])
def test_a_truncated_file_is_called_damaged_not_a_wrong_key(tmp_path, encrypted):
    """A file cut short at a page boundary (a full disk during a copy, a bad restore): the key
    reads its first page, so it is damaged, and the message never blames the key."""
    path = tmp_path / "memory.db"
    _make(path, encrypted=encrypted, facts=tuple(f"fact {i} " + "x" * 200 for i in range(200)))
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.truncate(size - 3 * 4096)

    error = _assert_refused_unchanged(
        path, lambda: _open(path, encrypted), MemoryCorruptError, ignore_shm=True
    )
    message = str(error)
    assert "damaged" in message
    assert "wrong key" not in message
    assert "passphrase" not in message


class _FailingFirstRead:
    """A fake at the edge: the driver connection of a home SQLite cannot use (a read-only
    mount, a full disk), which a test cannot make for real without mounting a file system.
    It fails the first read with the error SQLite gives there; everything else is the real
    connection."""

    def __init__(self, conn: sqlite3.Connection, error: Exception) -> None:
        self._conn = conn
        self._error = error

    def execute(self, sql: str, *args: object) -> object:
        if "sqlite_master" in sql:
            raise self._error
        return self._conn.execute(sql, *args)

    def close(self) -> None:
        self._conn.close()


@pytest.mark.parametrize(
    ("sqlite_says", "read_only_mount", "expected"),
    [
        ("unable to open database file", True, "mounted read-only"),
        ("attempt to write a readonly database", False, "read-only or belongs to another user"),
        ("database or disk is full", False, "is full"),
        ("disk I/O error", False, "failed (disk I/O error)"),
    ],
    ids=["read-only-mount", "read-only-file", "disk-full", "io-error"],
)
def test_disk_and_folder_problems_are_not_reported_as_a_wrong_key(
    tmp_path, monkeypatch, sqlite_says, read_only_mount, expected
):
    """Each problem of the disk or the folder says what it is, that the file is intact, and
    never "wrong key … move the file aside", which would steer the user to discard it."""
    path = tmp_path / "memory.db"
    _make(path, encrypted=True)
    real_connect = memory_db._connect

    def connect(p: Path, *, read_only: bool) -> object:
        return _FailingFirstRead(
            real_connect(p, read_only=read_only), sqlcipher3.OperationalError(sqlite_says)
        )

    monkeypatch.setattr(memory_db, "_connect", connect)
    if read_only_mount:
        real_statvfs = os.statvfs

        class ReadOnly:
            f_flag = os.ST_RDONLY

        monkeypatch.setattr(
            os, "statvfs", lambda p: ReadOnly() if Path(p) == tmp_path else real_statvfs(p)
        )

    error = _assert_refused_unchanged(path, lambda: _open(path, True), MemoryStoreError)
    message = str(error)
    assert expected in message
    assert "wrong key" not in message
    assert "move the file aside" not in message
    assert not isinstance(error, MemoryLockedError | MemoryCorruptError)
    if sqlite_says == "database or disk is full":
        assert isinstance(error, memory_db.MemoryDiskFullError)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (errno.ENOSPC, "is full"),
        (errno.EROFS, "mounted read-only"),
        (errno.EACCES, "belongs to another user"),
    ],
    ids=["ENOSPC", "EROFS", "EACCES"],
)
def test_a_new_memory_file_that_cannot_be_created_says_why(tmp_path, monkeypatch, code, expected):
    """A fake at the edge: os.open fails as it would on a full, read-only or foreign folder
    (a root test run cannot be refused by permissions, and mounting is not portable)."""
    real_open = os.open

    def failing_open(p: object, flags: int, *args: object) -> int:
        if Path(str(p)).name == "memory.db":
            raise OSError(code, os.strerror(code), str(p))
        return real_open(p, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", failing_open)
    with pytest.raises(memory_db.MemoryDiskError) as caught:
        open_database(tmp_path / "memory.db", key=KEY)
    assert expected in str(caught.value)
    assert "wrong key" not in str(caught.value)
    assert not (tmp_path / "memory.db").exists()


# --- an empty memory file ------------------------------------------------------------------------


def test_an_empty_memory_file_is_set_up_in_place_and_then_checks_ok(tmp_path, encrypted, caplog):
    """Decision: a zero-byte file with no WAL holds no page, so there is nothing in it to lose
    (a first start cut short by a crash or a full disk leaves one; so does a file emptied by
    something else). It is set up as new memory, and the integrity check doctor runs agrees
    that it is whole. The warning says what was found, where, and — since it cannot know why
    the file is empty — that facts saved before, if any, were already gone."""
    path = tmp_path / "memory.db"
    path.write_bytes(b"")
    with caplog.at_level("WARNING", logger="chamberlain.memory.db"):
        database = _open(path, encrypted)
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"found an empty memory file (0 bytes) at {path}")
    assert "if you had saved facts, they were lost before this start" in warning
    assert "interrupted" not in warning
    try:
        assert database.version == schema_version()
        assert database.integrity_check() == "ok"
    finally:
        database.close()
    reopened = _open(path, encrypted)
    reopened.close()


@pytest.mark.parametrize(
    "content",
    [b"x", b"my notes\n" * 3, b"\0" * 4096, b"\0" * 65536, b"SQLite format 3\0" + b"\0" * 496],
    ids=["one-byte", "text", "a-page-of-zeros", "many-pages-of-zeros", "a-bare-header"],
)
def test_a_file_that_is_not_empty_and_not_a_database_is_never_set_up_over(
    tmp_path, encrypted, content
):
    """Only a zero-byte file is set up in place. Anything else that is not a database — a few
    bytes, text, pages of zeros a crash left, a header with nothing behind it — is refused, and
    the folder is exactly as it was."""
    path = tmp_path / "memory.db"
    path.write_bytes(content)
    error = _assert_refused_unchanged(path, lambda: _open(path, encrypted), MemoryStoreError)
    assert "wrong key" not in str(error) or encrypted
    assert path.read_bytes() == content


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plaintext"])
def test_an_empty_memory_file_beside_a_wal_with_data_is_refused_and_kept(tmp_path, encrypted):
    """The main file lost (cut to zero bytes) while its WAL still holds committed pages:
    opening would replay a fragment over an empty file and go on writing into a file the
    integrity check calls damaged. It is refused, and both files are left as they were."""
    live = tmp_path / "live"
    live.mkdir()
    store = MemoryStore(_open(live / "memory.db", encrypted), ManualClock(1_700_000_000.0))
    store.add("my dog is called Rex", sensitivity=Sensitivity.LOW)
    crashed = _copy_files(live, tmp_path / "crashed")
    store.close()
    path = crashed / "memory.db"
    path.write_bytes(b"")
    assert (crashed / "memory.db-wal").stat().st_size > 0

    error = _assert_refused_unchanged(
        path, lambda: _open(path, encrypted), MemoryCorruptError, ignore_shm=True
    )
    assert "write-ahead log" in str(error)
    assert "wrong key" not in str(error)


# --- read-only use -------------------------------------------------------------------------------


def test_a_session_that_only_read_does_not_wait_for_the_writer_when_closing(tmp_path):
    """Closing checkpoints the WAL only after a write: a checkpoint that empties the WAL waits
    for (and holds off) any writer, which a reading command must never do."""
    path = tmp_path / "memory.db"
    _make(path, encrypted=True)
    writer = sqlcipher3.connect(str(path), isolation_level=None)
    writer.execute(f"PRAGMA key = \"x'{KEY.hex()}'\"")
    writer.execute("BEGIN IMMEDIATE")
    try:
        reader = open_database(path, key=KEY)
        # Waiting for the writer would take the whole busy timeout (30 s): a close that ends
        # within a third of it did not wait, however loaded the machine.
        reader.conn.execute("PRAGMA busy_timeout = 30000")
        reader.conn.execute("SELECT count(*) FROM facts").fetchone()
        started = time.monotonic()
        reader.close()
        assert time.monotonic() - started < 10.0
    finally:
        writer.execute("ROLLBACK")
        writer.close()

"""Opening Chamberlain's memory database: encryption, pragmas, schema migrations.

The memory lives in one SQLite file, encrypted at rest with SQLCipher 4 (the ``sqlcipher3``
wheel, which bundles SQLCipher with FTS5). The key is either 32 raw bytes (used directly, no key
derivation: the keyring holds it) or a passphrase the user gave (SQLCipher's PBKDF2). A plaintext
file is an explicit opt-in (``encrypted=False``); the caller warns the user about it. Both modes
use the same bundled SQLite build, so the two behave the same apart from the cipher.

Every connection gets WAL mode (readers never block the writer), ``secure_delete`` (deleted
content is overwritten with zeros), foreign keys, a busy timeout (a second writer waits instead
of failing) and ``synchronous = FULL`` (a committed fact survives a crash or power loss). The
schema is versioned with ``PRAGMA user_version``: each step in ``MIGRATIONS`` runs in order, all
pending steps in one transaction.

What it must never do: overwrite, truncate or re-create a file it could not open. A wrong key,
a file that is not a database, a damaged file, or a file written by a newer Chamberlain raises a
``MemoryStoreError`` with a message the user can act on, and the file is left exactly as it was.
When a WAL is left over (a crash, or another process has the file open), the key and the
version are first proved on a read-only connection, because closing a read-write connection
checkpoints the WAL into the main file even after a failed read. The schema's tables are
created here, by the migration steps; what their rows mean is ``memory/store.py``'s business.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import sqlcipher3  # type: ignore[import-untyped]
import sqlite_utils

log = logging.getLogger("chamberlain.memory.db")

KEY_BYTES = 32
BUSY_TIMEOUT_S = 5.0
SQLITE_HEADER = b"SQLite format 3\x00"
# Every SQLite and SQLCipher file is a whole number of pages, and pages are at least 512 bytes.
_MIN_PAGE = 512

# The driver's exceptions. sqlcipher3 mirrors the stdlib sqlite3 module but its classes are its
# own, so code that catches database errors must catch these.
DatabaseError: type[Exception] = sqlcipher3.DatabaseError
OperationalError: type[Exception] = sqlcipher3.OperationalError
IntegrityError: type[Exception] = sqlcipher3.IntegrityError


class MemoryStoreError(Exception):
    """Anything that stops the memory store from doing what was asked. The message is for
    the user: what happened and what to do."""


class MemoryLockedError(MemoryStoreError):
    """The file could not be read with the key (or lack of one) that was given."""


class MemoryCorruptError(MemoryStoreError):
    """The file is damaged or is not a database at all."""


class MemorySchemaError(MemoryStoreError):
    """The file was written by a newer Chamberlain, or a migration failed."""


# --- the schema -----------------------------------------------------------------------------

Migration = Callable[[sqlite3.Connection], None]

_SCHEMA_V1: tuple[str, ...] = (
    # `seq` is the row's stable integer key: the FTS index refers to facts by it (a table
    # without an INTEGER PRIMARY KEY may renumber its rowids on VACUUM). `id` is the public id.
    # `norm_digest` is the SHA-256 of the normalised text, for dedupe: a second copy of the text
    # would be one more place a forgotten fact could linger.
    """
    CREATE TABLE facts (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        norm_digest TEXT NOT NULL,
        subject TEXT NOT NULL DEFAULT 'user',
        slot TEXT,
        category TEXT NOT NULL DEFAULT 'general',
        sensitivity TEXT NOT NULL CHECK (sensitivity IN ('low', 'personal', 'secret')),
        sensitivity_rank INTEGER NOT NULL CHECK (sensitivity_rank BETWEEN 0 AND 2),
        reasons TEXT NOT NULL DEFAULT '[]',
        status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'superseded')),
        source TEXT NOT NULL
            CHECK (source IN ('user_explicit', 'extracted', 'user_edit', 'import')),
        evidence TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        confirmed_at REAL,
        last_used_at REAL,
        use_count INTEGER NOT NULL DEFAULT 0,
        expires_at REAL,
        superseded_by TEXT REFERENCES facts (id) ON DELETE SET NULL
    )
    """,
    "CREATE INDEX facts_norm ON facts (norm_digest)",
    "CREATE INDEX facts_slot ON facts (subject, slot) WHERE slot IS NOT NULL",
    "CREATE INDEX facts_status ON facts (status, created_at)",
    "CREATE INDEX facts_category ON facts (category)",
    "CREATE INDEX facts_superseded_by ON facts (superseded_by)",
    "CREATE INDEX facts_expires ON facts (expires_at) WHERE expires_at IS NOT NULL",
    # Contentless: the index holds terms and positions, never a copy of the text, and rows are
    # deleted by rowid alone. The triggers keep it in step inside whatever transaction writes.
    """
    CREATE VIRTUAL TABLE facts_fts USING fts5 (
        text, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
    )
    """,
    """
    CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts (rowid, text) VALUES (new.seq, new.text);
    END
    """,
    """
    CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
        DELETE FROM facts_fts WHERE rowid = old.seq;
    END
    """,
    """
    CREATE TRIGGER facts_fts_update AFTER UPDATE OF text ON facts BEGIN
        DELETE FROM facts_fts WHERE rowid = old.seq;
        INSERT INTO facts_fts (rowid, text) VALUES (new.seq, new.text);
    END
    """,
    """
    CREATE TABLE anchors (
        id TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        position INTEGER NOT NULL,
        created_at REAL NOT NULL
    )
    """,
    # Events outlive the facts they describe, so fact_id is not a foreign key. They hold a
    # digest of the content, never the content.
    """
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        fact_id TEXT,
        at REAL NOT NULL,
        digest TEXT,
        detail TEXT NOT NULL DEFAULT ''
    )
    """,
    "CREATE INDEX events_fact ON events (fact_id)",
)


def _schema_v1(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V1:
        conn.execute(statement)


# Applied in order: MIGRATIONS[i] takes a database from user_version i to i + 1. Append only.
MIGRATIONS: list[Migration] = [_schema_v1]


def schema_version() -> int:
    """The schema version this code writes."""
    return len(MIGRATIONS)


# --- opening ----------------------------------------------------------------------------------


@dataclass
class MemoryDatabase:
    """An open memory database: the driver connection and the sqlite-utils view of it."""

    path: Path
    conn: sqlite3.Connection
    db: sqlite_utils.Database
    encrypted: bool
    version: int
    _closed: bool = field(default=False, repr=False)

    def integrity_check(self) -> str:
        """SQLite's full integrity check plus FTS5's own: "ok", or what is wrong."""
        rows = [str(r[0]) for r in self.conn.execute("PRAGMA integrity_check").fetchall()]
        result = "\n".join(rows)
        if result != "ok":
            return result
        try:
            self.conn.execute(
                "INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)"
            )
        except DatabaseError as exc:
            return f"full-text index: {exc}"
        return "ok"

    def checkpoint(self) -> bool:
        """Copy the WAL into the main file and truncate it to zero bytes. False when a reader
        elsewhere still needed older pages, so the WAL could not be emptied completely."""
        busy, _log_frames, _done = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(DatabaseError):
            # Leaves the main file complete and the WAL empty for whoever opens it next.
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()


def scratch_connection() -> sqlite3.Connection:
    """A private in-memory database on the same SQLite build (FTS5, the same tokenizers), for
    work that must not touch the memory file."""
    conn = sqlcipher3.connect(":memory:", isolation_level=None, check_same_thread=False)
    return cast(sqlite3.Connection, conn)


_NOT_OPENED = "nothing was changed"


def _locked_message(path: Path) -> str:
    return (
        f"The memory database {path} could not be opened with this key: wrong key or "
        f"passphrase, or not a Chamberlain memory file; {_NOT_OPENED}. Check the key in the "
        "system keyring or the passphrase you set, or move the file aside to start afresh."
    )


def _classify_unreadable(path: Path, *, encrypted: bool, size: int, header: bytes) -> Exception:
    """The error for a file SQLite refused to read, from what its bytes say it is."""
    if size % _MIN_PAGE:
        return MemoryCorruptError(
            f"The memory database {path} is damaged or is not a database file "
            f"({size} bytes is not a whole number of pages); {_NOT_OPENED}. Restore it from a "
            "backup or move it aside to start afresh."
        )
    if header == SQLITE_HEADER:
        if encrypted:
            return MemoryLockedError(
                f"The memory database {path} is not encrypted, but a key was given; "
                f"{_NOT_OPENED}. Open it with memory encryption off, or export it and import "
                "into a new encrypted store."
            )
        return MemoryCorruptError(
            f"The memory database {path} is damaged (SQLite could not read it); {_NOT_OPENED}. "
            "Restore it from a backup or move it aside to start afresh."
        )
    if not encrypted:
        return MemoryLockedError(
            f"The memory database {path} is encrypted (or is not a database file), and no key "
            f"was given; {_NOT_OPENED}. Turn memory encryption on so its key is used."
        )
    return MemoryLockedError(_locked_message(path))


def _key_pragma(key: bytes | None, passphrase: str | None) -> str:
    if key is not None:
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            raise MemoryLockedError(
                f"The memory key must be {KEY_BYTES} bytes; this one is not usable. "
                f"{_NOT_OPENED.capitalize()}."
            )
        # A raw key: SQLCipher uses it as is, with no key derivation.
        return f"PRAGMA key = \"x'{key.hex()}'\""
    assert passphrase is not None
    if not passphrase or "\x00" in passphrase:
        raise MemoryLockedError(
            f"The memory passphrase is empty or contains a NUL character; {_NOT_OPENED}."
        )
    escaped = passphrase.replace("'", "''")
    return f"PRAGMA key = '{escaped}'"


def _read_head(path: Path) -> tuple[int, bytes]:
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return 0, b""
    except OSError as exc:
        raise MemoryStoreError(f"The memory database {path} cannot be read: {exc}") from exc
    return size, header


def open_database(
    path: Path,
    *,
    key: bytes | None = None,
    passphrase: str | None = None,
    encrypted: bool = True,
) -> MemoryDatabase:
    """Open (or create) the memory database at ``path`` and bring its schema up to date.

    Encrypted (the default) needs exactly one of ``key`` (32 raw bytes) or ``passphrase``.
    ``encrypted=False`` opens a plaintext file and takes neither. Raises ``MemoryLockedError``
    (wrong key, missing key, plaintext file opened with a key), ``MemoryCorruptError`` (damaged
    or not a database), ``MemorySchemaError`` (written by a newer version, or a migration
    failed) or ``MemoryStoreError`` (cannot open the file at all); in every case the file is
    unchanged.
    """
    path = Path(path)
    if encrypted:
        if key is None and passphrase is None:
            raise MemoryLockedError(
                "The memory database is encrypted, but neither a key nor a passphrase was "
                "given. Make the system keyring available, or set a memory passphrase; to "
                "store memory unencrypted instead, turn memory encryption off."
            )
        if key is not None and passphrase is not None:
            raise MemoryLockedError("Give the memory database a key or a passphrase, not both.")
        pragma: str | None = _key_pragma(key, passphrase)
    else:
        if key is not None or passphrase is not None:
            raise MemoryLockedError(
                "A plaintext memory database takes no key or passphrase; turn encryption on "
                "to use one."
            )
        pragma = None

    size, header = _read_head(path)
    if size == 0 and not path.exists():
        try:
            # Created by us, private from the start; SQLite gives the WAL and shm files the
            # same permissions as the main file.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            size, header = _read_head(path)
        except OSError as exc:
            raise MemoryStoreError(
                f"The memory database {path} cannot be created: {exc.strerror or exc}. "
                "Check that its folder exists and is writable."
            ) from exc

    if size and _wal_pending(path):
        # Closing a connection checkpoints a leftover WAL into the main file, even after a
        # failed read. So when one is there (a crash, or another process has the file open),
        # the key and the schema version are proved on a read-only connection first, which
        # cannot write either file.
        probe = _connect(path, read_only=True)
        try:
            _check_version(
                path, _unlock(probe, pragma, path, encrypted=encrypted, size=size, header=header)
            )
        finally:
            probe.close()
    conn = _connect(path, read_only=False)
    try:
        version = _unlock(conn, pragma, path, encrypted=encrypted, size=size, header=header)
        _check_version(path, version)
        _configure(conn)
        version = _migrate(conn, path, version)
    except BaseException:
        conn.close()
        raise
    # Plugins are third-party code: none of it runs on the memory connection.
    database = sqlite_utils.Database(conn, execute_plugins=False)
    log.debug("opened %s (encrypted=%s, schema %d)", path, encrypted, version)
    return MemoryDatabase(path=path, conn=conn, db=database, encrypted=encrypted, version=version)


def _wal_pending(path: Path) -> bool:
    try:
        return Path(f"{path}-wal").stat().st_size > 0
    except OSError:
        return False


def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    target, uri = (f"{path.resolve().as_uri()}?mode=ro", True) if read_only else (str(path), False)
    try:
        raw = sqlcipher3.connect(
            target,
            uri=uri,
            timeout=BUSY_TIMEOUT_S,
            check_same_thread=False,
            isolation_level=None,
        )
    except DatabaseError as exc:
        raise MemoryStoreError(f"The memory database {path} cannot be opened: {exc}") from exc
    # SQLCipher otherwise prints its own lines to stderr ("hmac check failed for pgno=1") on a
    # wrong key; every failure reaches the caller as an exception with a message instead.
    raw.execute("PRAGMA cipher_log_level = NONE")
    return cast(sqlite3.Connection, raw)


def _check_version(path: Path, version: int) -> None:
    if version > schema_version():
        raise MemorySchemaError(
            f"The memory database {path} was written by a newer version of Chamberlain "
            f"(schema {version}; this version knows up to {schema_version()}); "
            f"{_NOT_OPENED}. Update Chamberlain to use it."
        )


def _unlock(
    conn: sqlite3.Connection,
    pragma: str | None,
    path: Path,
    *,
    encrypted: bool,
    size: int,
    header: bytes,
) -> int:
    """Apply the key and prove it reads the file, touching nothing. Returns user_version."""
    try:
        if pragma is not None:
            conn.execute(pragma)
        # The first read of the file: this is where a wrong key or a damaged header shows.
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except OperationalError as exc:
        message = str(exc)
        if "locked" in message or "busy" in message:
            raise MemoryStoreError(
                f"The memory database {path} is locked by another program; try again shortly."
            ) from exc
        raise _classify_unreadable(path, encrypted=encrypted, size=size, header=header) from exc
    except DatabaseError as exc:
        raise _classify_unreadable(path, encrypted=encrypted, size=size, header=header) from exc
    return version


def _configure(conn: sqlite3.Connection) -> None:
    # busy_timeout first: switching to WAL itself may have to wait for another connection.
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise MemoryStoreError(f"The memory database could not switch to WAL mode (got {mode}).")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA foreign_keys = ON")


def _migrate(conn: sqlite3.Connection, path: Path, version: int) -> int:
    """Apply the missing migration steps, all in one transaction. Returns the new version."""
    target = schema_version()
    if version >= target:
        return version
    steps: Sequence[Migration] = MIGRATIONS[version:target]
    try:
        conn.execute("BEGIN IMMEDIATE")
        # Another process may have migrated between our first read and the write lock.
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if current != version:
            conn.execute("ROLLBACK")
            if current > target:
                raise MemorySchemaError(
                    f"The memory database {path} was just upgraded by a newer version of "
                    f"Chamberlain (schema {current}); update Chamberlain to use it."
                )
            return _migrate(conn, path, current)
        for step in steps:
            step(conn)
        conn.execute(f"PRAGMA user_version = {target}")
        conn.execute("COMMIT")
    except DatabaseError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise MemorySchemaError(
            f"Upgrading the memory database {path} from schema {version} to {target} failed "
            f"({exc}); it was left at schema {version}."
        ) from exc
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    log.info("memory database %s upgraded from schema %d to %d", path, version, target)
    return target

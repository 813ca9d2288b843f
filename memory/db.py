"""Opening Chamberlain's memory database: encryption, pragmas, schema migrations.

The memory lives in one SQLite file, encrypted at rest with SQLCipher 4 (the ``sqlcipher3``
wheel, which bundles SQLCipher with FTS5). The key is either 32 raw bytes (used directly, no key
derivation: the keyring holds it) or a passphrase the user gave (SQLCipher's PBKDF2). A plaintext
file is an explicit opt-in (``encrypted=False``); the caller warns the user about it. Both modes
use the same bundled SQLite build, so the two behave the same apart from the cipher.

Every connection gets WAL mode (readers never block the writer), ``secure_delete`` (deleted
content is overwritten with zeros), foreign keys, a busy timeout (a second writer waits instead
of failing) and ``synchronous = FULL`` (a committed fact survives a crash or power loss; the
store lowers it for recall's use-count bookkeeping alone). A connection that wrote nothing
closes without the checkpoint that would wait for other writers. The
schema is versioned with ``PRAGMA user_version``: each step in ``MIGRATIONS`` runs in order, all
pending steps in one transaction, through sqlite-utils (table and index creation, and table
rebuilds for later steps), which is imported only then: opening an up-to-date store reads
``user_version`` and never loads it.

What it must never do: overwrite, truncate or re-create a file it could not open. A wrong key,
a file that is not a database, a damaged file, or a file written by a newer Chamberlain raises a
``MemoryStoreError`` with a message the user can act on, and the file is left exactly as it was.
Problems of the disk or the folder (a full disk, a read-only or foreign folder, an I/O error)
are told apart from a wrong key or a damaged file by SQLite's error code, and never advise
moving an intact file aside; a full disk is called full even when SQLite calls it an I/O error
(``memory/disk.py``). One file is initialised in place: a zero-byte ``memory.db`` with no WAL. It
holds no page, so there is nothing in it to lose (a first start cut short by a crash or a full
disk leaves one; so does a file emptied by something else, which the warning says, naming the
file, so a person who had facts knows they were gone before); refusing it would only make the
user delete it by hand. A zero-byte file beside a WAL that holds data is refused as damaged: the
WAL is all that is left. Any other file that is not a database — a few bytes, a page of zeros,
text — is refused and left exactly as it was, whatever its size.
When a WAL is left over (a crash, or another process has the file open), the key and the
version are first proved on a read-only connection, because closing a read-write connection
checkpoints the WAL into the main file even after a failed read. The schema's tables are
created here, by the migration steps; what their rows mean is ``memory/store/``'s business
(facts, anchors, events) and ``memory/conversations.py``'s (conversations, from schema 2).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import sqlcipher3  # type: ignore[import-untyped]

from core.errors import StorageError
from memory.disk import DiskProblem, diagnose, diagnose_os_error, shown

if TYPE_CHECKING:
    # Imported only when the sqlite-utils view is asked for (`MemoryDatabase.db`): it pulls in
    # numpy and costs about 0.16 s, which opening a store, recall and add must never pay.
    import sqlite_utils

log = logging.getLogger("chamberlain.memory.db")

KEY_BYTES = 32
BUSY_TIMEOUT_S = 5.0
SQLITE_HEADER = b"SQLite format 3\x00"
# Every SQLite and SQLCipher file is a whole number of pages, and pages are at least 512 bytes.
_MIN_PAGE = 512

# The driver's exceptions. sqlcipher3 mirrors the stdlib sqlite3 module but its classes are its
# own, so code that catches database errors must catch these.
Error: type[Exception] = sqlcipher3.Error
DatabaseError: type[Exception] = sqlcipher3.DatabaseError
OperationalError: type[Exception] = sqlcipher3.OperationalError
IntegrityError: type[Exception] = sqlcipher3.IntegrityError


class MemoryStoreError(StorageError):
    """Anything that stops the memory store from doing what was asked. The message is for
    the user: what happened and what to do."""


class MemoryLockedError(MemoryStoreError):
    """The file could not be read with the key (or lack of one) that was given."""


class MemoryCorruptError(MemoryStoreError):
    """The file is damaged or is not a database at all."""


class MemorySchemaError(MemoryStoreError):
    """The file was written by a newer Chamberlain, or a migration failed."""


class MemoryDiskError(MemoryStoreError):
    """The disk or the folder failed us (read-only, not ours, an I/O error); the file is intact."""


class MemoryDiskFullError(MemoryDiskError):
    """The disk is full: what was being written was not saved, and nothing else was lost."""


# SQLite's primary result codes for trouble with the disk or the folder, not with the file.
_DISK_FULL_CODES = frozenset({"SQLITE_FULL"})
_DISK_CODES = frozenset({"SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_PERM"})
_DISK_FULL_TEXT = ("database or disk is full",)
_DISK_TEXT = ("readonly database", "unable to open database", "disk i/o error", "access permission")


def _error_name(exc: BaseException) -> str:
    """SQLite's primary result code name ("SQLITE_IOERR" for SQLITE_IOERR_SHORT_READ), or ""."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    for primary in (*_DISK_FULL_CODES, *_DISK_CODES, "SQLITE_CORRUPT", "SQLITE_NOTADB"):
        if name == primary or name.startswith(primary + "_"):
            return primary
    return name


def is_disk_full(exc: BaseException) -> bool:
    """Whether a driver error (or an OSError) says the disk is full."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return _error_name(exc) in _DISK_FULL_CODES or any(
        t in str(exc).lower() for t in _DISK_FULL_TEXT
    )


def is_disk_problem(exc: BaseException) -> bool:
    """Whether a driver error says the folder or the disk failed (not the file's contents)."""
    if isinstance(exc, OSError):
        return True
    return _error_name(exc) in _DISK_CODES or any(t in str(exc).lower() for t in _DISK_TEXT)


def _diagnose(path: Path, exc: BaseException) -> DiskProblem:
    """What a driver error (or an OSError) met at ``path`` says about the disk or the folder."""
    if isinstance(exc, OSError):
        return diagnose_os_error(path, exc)
    name = _error_name(exc)
    text = str(exc).lower()
    extended = str(getattr(exc, "sqlite_errorname", "") or "")
    # SQLITE_IOERR_READ and _SHORT_READ are reads: free space has nothing to do with them.
    reading = extended.startswith("SQLITE_IOERR") and "READ" in extended
    return diagnose(
        path,
        full=name in _DISK_FULL_CODES or any(t in text for t in _DISK_FULL_TEXT),
        denied=name in ("SQLITE_READONLY", "SQLITE_PERM")
        or "readonly" in text
        or "access permission" in text,
        write_failed=not reading
        and (
            name in ("SQLITE_IOERR", "SQLITE_CANTOPEN")
            or "disk i/o error" in text
            or "unable to open database" in text
        ),
        detail=str(exc),
    )


def disk_error(path: Path, exc: BaseException, *, outcome: str) -> MemoryDiskError:
    """The error for a disk or folder problem met at ``path``; ``outcome`` says what became of
    the request ("nothing was changed", "the fact was not saved"). A full disk is told apart
    from an I/O error even when SQLite calls it one (see ``memory/disk.py``)."""
    problem = _diagnose(path, exc)
    if problem.kind == "full":
        why = problem.why
        return MemoryDiskFullError(
            f"{why[0].upper()}{why[1:]}: {outcome}, and nothing already saved was lost; "
            f"{problem.fix}, then try again."
        )
    return MemoryDiskError(
        f"The memory database {path} cannot be used: {problem.why}; {outcome}, and the file "
        f"is intact (do not move it aside). To fix: {problem.fix}, then try again."
    )


# --- the schema -----------------------------------------------------------------------------

# A migration step gets the sqlite-utils view of the connection, inside the one transaction
# `_migrate` holds: sqlite-utils creates tables and indexes and rebuilds tables (`transform`)
# where SQLite's own ALTER TABLE cannot, and it is imported only when a step is pending, i.e.
# when a store is created or upgraded, never when an up-to-date one is opened.
Migration = Callable[["sqlite_utils.Database"], None]

# What sqlite-utils cannot say, and so stays SQL (each checked against the store schema 1 wrote,
# tests/memory/test_db_migrations.py): the CHECK constraints on `facts`, partial indexes,
# AUTOINCREMENT on `events`, and the full-text index. `enable_fts` makes an external-content
# table whose update trigger fires on every column, so each recall's use-count UPDATE would
# re-index the fact; this one is contentless and re-indexed only when the text changes.
# `seq` is the row's stable integer key: the FTS index refers to facts by it (a table without
# an INTEGER PRIMARY KEY may renumber its rowids on VACUUM). `id` is the public id.
# `norm_digest` is the SHA-256 of the normalised text, for dedupe: a second copy of the text
# would be one more place a forgotten fact could linger.
_FACTS_V1 = """
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
"""
_FACTS_PARTIAL_INDEXES_V1 = (
    "CREATE INDEX facts_slot ON facts (subject, slot) WHERE slot IS NOT NULL",
    "CREATE INDEX facts_expires ON facts (expires_at) WHERE expires_at IS NOT NULL",
)
_FACTS_INDEXES_V1: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("facts_norm", ("norm_digest",)),
    ("facts_status", ("status", "created_at")),
    ("facts_category", ("category",)),
    ("facts_superseded_by", ("superseded_by",)),
)
# Contentless: the index holds terms and positions, never a copy of the text, and rows are
# deleted by rowid alone. The triggers keep it in step inside whatever transaction writes.
_FTS_V1: tuple[str, ...] = (
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
)
# Events outlive the facts they describe, so fact_id is not a foreign key. They hold a digest
# of the content, never the content. AUTOINCREMENT: an event id is never reused after pruning.
_EVENTS_V1 = """
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        fact_id TEXT,
        at REAL NOT NULL,
        digest TEXT,
        detail TEXT NOT NULL DEFAULT ''
    )
"""


def _schema_v1(db: sqlite_utils.Database) -> None:
    db.execute(_FACTS_V1)
    facts = db.table("facts")
    for name, columns in _FACTS_INDEXES_V1:
        facts.create_index(columns, index_name=name, if_not_exists=True)
    for statement in (*_FACTS_PARTIAL_INDEXES_V1, *_FTS_V1):
        db.execute(statement)
    db.table("anchors").create(
        {"id": str, "text": str, "position": int, "created_at": float},
        pk="id",
        not_null={"text", "position", "created_at"},
        if_not_exists=True,
    )
    db.execute(_EVENTS_V1)
    db.table("events").create_index(["fact_id"], index_name="events_fact", if_not_exists=True)


# Schema 2: conversations kept across restarts (``memory/conversations.py``), under the same key
# as the facts. `seq` orders a conversation's messages (two may share a timestamp); `id` is the
# public id. The role CHECK and the cascading foreign key are SQL: sqlite-utils cannot say them.
# Nothing indexes a message's text, so deleting the row (secure_delete) is deleting the text.
_CHAT_MESSAGES_V2 = """
    CREATE TABLE chat_messages (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'notice')),
        text TEXT NOT NULL,
        meta TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL
    )
"""


def _schema_v2(db: sqlite_utils.Database) -> None:
    conversations = db.table("conversations")
    conversations.create(
        {"id": str, "title": str, "created_at": float, "updated_at": float},
        pk="id",
        not_null={"title", "created_at", "updated_at"},
        if_not_exists=True,
    )
    conversations.create_index(
        ["updated_at"], index_name="conversations_updated", if_not_exists=True
    )
    db.execute(_CHAT_MESSAGES_V2)
    db.table("chat_messages").create_index(
        ["conversation_id", "seq"], index_name="chat_messages_conversation", if_not_exists=True
    )


# Applied in order: MIGRATIONS[i] takes a database from user_version i to i + 1. Append only.
MIGRATIONS: list[Migration] = [_schema_v1, _schema_v2]


def schema_version() -> int:
    """The schema version this code writes."""
    return len(MIGRATIONS)


# --- opening ----------------------------------------------------------------------------------


@dataclass
class MemoryDatabase:
    """An open memory database: the driver connection, and the sqlite-utils view of it on
    demand (``db``), built the first time it is asked for."""

    path: Path
    conn: sqlite3.Connection
    encrypted: bool
    version: int
    _closed: bool = field(default=False, repr=False)
    _db: sqlite_utils.Database | None = field(default=None, repr=False)

    @property
    def db(self) -> sqlite_utils.Database:
        """The sqlite-utils view of the same connection (imported here, not at start-up)."""
        if self._db is None:
            self._db = _sqlite_utils_view(self.conn)
        return self._db

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
        if self.conn.total_changes:
            with contextlib.suppress(DatabaseError):
                # Leaves the main file complete and the WAL empty for whoever opens it next.
                # Only after a write: this checkpoint waits for (and holds off) any writer, and
                # a session that only read has nothing of its own in the WAL.
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()


def _sqlite_utils_view(conn: sqlite3.Connection) -> sqlite_utils.Database:
    """sqlite-utils on an open connection. Imported here, on first use: it pulls in numpy and
    costs about 0.16 s, which opening an up-to-date store, recall, add and forget never pay."""
    import sqlite_utils

    # Plugins are third-party code: none of it runs on the memory connection. sqlite-utils
    # 4 nests its own writes in a savepoint inside the caller's transaction (`atomic`).
    return sqlite_utils.Database(conn, execute_plugins=False)


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


def _classify_unreadable(
    path: Path, *, encrypted: bool, size: int, header: bytes, cause: BaseException | None = None
) -> Exception:
    """The error for a file SQLite refused to read, from SQLite's error code and what the
    file's bytes say it is. A disk or folder problem is never called a wrong key; and a file
    SQLite calls malformed (SQLITE_CORRUPT: its first page was read, so the key was right, but
    the rest is cut short or damaged) is called damaged, never a wrong key."""
    if cause is not None and (is_disk_full(cause) or is_disk_problem(cause)):
        return disk_error(path, cause, outcome=_NOT_OPENED)
    if size and size < _MIN_PAGE:
        return MemoryCorruptError(
            f"The memory database {path} is damaged: it is cut short ({size} bytes, less than "
            f"one page); {_NOT_OPENED}. Restore it from a backup; keep this file until then."
        )
    if cause is not None and _error_name(cause) == "SQLITE_CORRUPT":
        return MemoryCorruptError(
            f"The memory database {path} is damaged: the key was accepted, but the file is "
            f"cut short or corrupted ({size} bytes); {_NOT_OPENED}. Restore it from a backup; "
            "keep this file until then, some facts may still be recoverable."
        )
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
        raise disk_error(path, exc, outcome=_NOT_OPENED) from exc
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
        except FileNotFoundError as exc:
            raise MemoryStoreError(
                f"The memory database {path} cannot be created: {exc.strerror or exc}. "
                "Check that its folder exists and is writable."
            ) from exc
        except OSError as exc:
            raise disk_error(path, exc, outcome="no memory database was created") from exc
    elif size == 0 and _wal_pending(path):
        # The main file was lost or cut to nothing, but its WAL still holds pages: opening
        # would replay them over an empty file into a fragment of a database, and writes
        # would go on into a file the integrity check calls damaged.
        raise MemoryCorruptError(
            f"The memory database {path} is empty, but its write-ahead log {path}-wal still "
            f"holds data: the main file was lost or cut short; {_NOT_OPENED}. Restore "
            f"{path.name} from a backup; keep both files until then."
        )
    elif 0 < size < _MIN_PAGE:
        # Less than a page is never a database. SQLite would take a one-byte file for an empty
        # one and write a new database over it; this file is refused before SQLite sees it.
        raise _classify_unreadable(path, encrypted=encrypted, size=size, header=header)
    elif size == 0:
        # Nothing to lose: a file of no pages never held a committed fact. But a person who
        # had facts must learn they were gone before this start, not find an empty memory.
        log.warning(
            "found an empty memory file (0 bytes) at %s, with nothing in it to keep: it was "
            "set up as a new, empty memory; if you had saved facts, they were lost before "
            "this start (restore %s from a backup to get them back)",
            shown(path),
            path.name,
        )

    if _wal_pending(path):
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
        _configure(conn, path)
        version = _migrate(conn, path, version)
    except BaseException:
        conn.close()
        raise
    log.debug("opened %s (encrypted=%s, schema %d)", path, encrypted, version)
    return MemoryDatabase(path=path, conn=conn, encrypted=encrypted, version=version)


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
        if is_disk_problem(exc) or is_disk_full(exc):
            raise disk_error(path, exc, outcome=_NOT_OPENED) from exc
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
        raise _classify_unreadable(
            path, encrypted=encrypted, size=size, header=header, cause=exc
        ) from exc
    except DatabaseError as exc:
        raise _classify_unreadable(
            path, encrypted=encrypted, size=size, header=header, cause=exc
        ) from exc
    return version


def _configure(conn: sqlite3.Connection, path: Path) -> None:
    # busy_timeout first: switching to WAL itself may have to wait for another connection.
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    try:
        # Only a file not yet in WAL mode is switched: the switch is a write.
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    except OperationalError as exc:
        if is_disk_full(exc) or is_disk_problem(exc):
            raise disk_error(path, exc, outcome=_NOT_OPENED) from exc
        raise
    if str(mode).lower() != "wal":
        raise MemoryStoreError(f"The memory database could not switch to WAL mode (got {mode}).")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA foreign_keys = ON")
    # What sqlite-utils set on every connection when it was built at each open; kept now that
    # it is built only on demand, so triggers behave the same either way.
    conn.execute("PRAGMA recursive_triggers = ON")


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
        if steps:
            db = _sqlite_utils_view(conn)
            for step in steps:
                step(db)
        conn.execute(f"PRAGMA user_version = {target}")
        conn.execute("COMMIT")
    except DatabaseError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if is_disk_full(exc) or is_disk_problem(exc):
            raise disk_error(
                path, exc, outcome=f"it was left at schema {version}, nothing was changed"
            ) from exc
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

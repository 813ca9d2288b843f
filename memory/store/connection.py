"""The memory database as the store uses it: the lock, transactions, their errors, the events.

``StoreConnection`` is the base every part of ``MemoryStore`` builds on (the facts' writes,
recall, anchors, export and import). Every write is one transaction (``BEGIN IMMEDIATE``)
under one in-process lock; SQLite's own locking, with the busy timeout, keeps writers in other
processes one at a time, and WAL lets readers go on meanwhile. The store may be used from any
one thread at a time (a worker thread is fine): the lock serialises calls. Reads never take
the write lock. A driver error becomes the user's: a busy database says so, a full disk is
``MemoryDiskFullError`` ("The disk holding ~/.chamberlain is full: the fact was not saved,
…") with the transaction rolled back, so everything stored before is whole, and a damaged
file is ``MemoryCorruptError``. After a deletion the full-text index is merged and the WAL
checkpointed and truncated, so no page image of a forgotten text lingers.

What it must never do: write an event that holds a text (events carry a SHA-256 digest and
ids only; ``detail`` is built from ids, enum values and counts), write a text the ``refuse``
hook refused (a refusal raises CredentialRefused before anything is written), leave a
transaction open after an error, or import anything from the broker, the app or Qt.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Self

from core.clock import Clock, SystemClock
from memory.db import (
    DatabaseError,
    MemoryCorruptError,
    MemoryDatabase,
    MemoryStoreError,
    OperationalError,
    disk_error,
    is_disk_full,
    is_disk_problem,
)
from memory.store.errors import CredentialRefused
from memory.store.rows import MAX_TEXT_CHARS, check_text, text_digest
from memory.types import EventKind

log = logging.getLogger("chamberlain.memory.store")


class StoreConnection:
    """The connection, lock and transactions a ``MemoryStore`` is built on. See the module
    docstring."""

    def __init__(
        self,
        db: MemoryDatabase,
        clock: Clock | None = None,
        *,
        refuse: Callable[[str], str | None] | None = None,
    ) -> None:
        self._database = db
        self._conn: sqlite3.Connection = db.conn
        self._clock: Clock = clock or SystemClock()
        self._refuse = refuse
        self._lock = threading.RLock()

    # --- plumbing -------------------------------------------------------------------------

    @property
    def database(self) -> MemoryDatabase:
        return self._database

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Checkpoint the WAL into the main file and close. Safe to call twice."""
        with self._lock:
            self._database.close()

    def _now(self, now: float | None = None) -> float:
        return self._clock.now() if now is None else float(now)

    def _check_open(self) -> None:
        if self._database.closed:
            raise MemoryStoreError("The memory store is closed.")

    @contextlib.contextmanager
    def _translated(self, outcome: str = "nothing was changed") -> Iterator[None]:
        """Driver errors as the user's: ``outcome`` says what became of the request when the
        disk or the folder failed (the transaction was rolled back, so nothing else was)."""
        try:
            yield
        except OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise MemoryStoreError(
                    "The memory database is busy (another Chamberlain is writing to it); "
                    "try again in a moment."
                ) from exc
            if is_disk_full(exc) or is_disk_problem(exc):
                raise disk_error(self._database.path, exc, outcome=outcome) from exc
            raise
        except DatabaseError as exc:
            if is_disk_full(exc) or is_disk_problem(exc):
                raise disk_error(self._database.path, exc, outcome=outcome) from exc
            message = str(exc)
            if "malformed" in message or "not a database" in message:
                raise MemoryCorruptError(
                    f"The memory database {self._database.path} is damaged ({message}). "
                    "Export what you can, then restore it from a backup or start afresh."
                ) from exc
            raise

    @contextlib.contextmanager
    def _write(self, outcome: str = "nothing was changed") -> Iterator[sqlite3.Connection]:
        """One write transaction: BEGIN IMMEDIATE takes the database's write lock up front,
        so a transaction never has to upgrade a stale read snapshot (which fails at once,
        whatever the busy timeout). On a full disk it raises MemoryDiskFullError saying
        ``outcome``; the transaction is rolled back, so what was stored before is whole."""
        with self._lock, self._translated(outcome):
            self._check_open()
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every statement inside sees the same snapshot."""
        with self._lock, self._translated():
            self._check_open()
            conn = self._conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    # --- for the other tables in the same file (memory/conversations.py) -----------------------

    def now(self) -> float:
        """The store's clock (a test's manual clock, when one was given)."""
        return self._now()

    @contextlib.contextmanager
    def write_transaction(
        self, outcome: str = "nothing was changed"
    ) -> Iterator[sqlite3.Connection]:
        """A write transaction on this store's connection, under its lock, with its error
        translation: what the fact store's own writes use, for tables beside the facts."""
        with self._write(outcome) as conn:
            yield conn

    @contextlib.contextmanager
    def read_transaction(self) -> Iterator[sqlite3.Connection]:
        """A read transaction (one snapshot) on this store's connection, under its lock."""
        with self._read() as conn:
            yield conn

    def scrub_wal(self) -> None:
        """After a deletion: checkpoint the WAL into the main file and truncate it."""
        self._scrub_wal()

    def _event(
        self,
        conn: sqlite3.Connection,
        kind: EventKind,
        fact_id: str | None,
        at: float,
        *,
        text: str | None = None,
        detail: str = "",
    ) -> None:
        # `detail` is built only from ids, enum values and counts — never from a text.
        conn.execute(
            "INSERT INTO events (kind, fact_id, at, digest, detail) VALUES (?, ?, ?, ?, ?)",
            (kind.value, fact_id, at, text_digest(text) if text is not None else None, detail),
        )

    def _check_text(self, text: str, what: str = "text", limit: int = MAX_TEXT_CHARS) -> str:
        return check_text(text, what, limit)

    def _screen(self, *texts: str) -> None:
        """The defence-in-depth credential check: a refusal raises and nothing is written."""
        if self._refuse is None:
            return
        for text in texts:
            if not text:
                continue
            message = self._refuse(text)
            if message is not None:
                raise CredentialRefused(message)

    def _scrub_index(self, conn: sqlite3.Connection) -> None:
        """Merge the full-text index into one segment, dropping deleted entries for good (the
        pages they lived on are zeroed by secure_delete). Runs inside the deleting transaction."""
        conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')")

    def _scrub_wal(self) -> None:
        """Copy the WAL into the main file and truncate it, so no old page image lingers."""
        done = "the deletion was saved, but old copies stay in the WAL until the next start"
        with self._lock, self._translated(done):
            if not self._database.checkpoint():
                log.warning(
                    "another reader kept the memory WAL from being emptied; deleted text leaves "
                    "it at the next checkpoint"
                )

    # --- health -------------------------------------------------------------------------------

    def integrity_check(self) -> str:
        """Return "ok", or what SQLite (and the full-text index's own check) found wrong."""
        with self._lock, self._translated():
            self._check_open()
            return self._database.integrity_check()

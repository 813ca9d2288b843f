"""The fact store: what Chamberlain remembers, and the user's control over all of it.

``MemoryStore`` keeps facts, anchors and an event log in the database ``memory/db.py`` opened.
It adds facts (deduplicated by normalised text; a new value for a single-valued slot supersedes
the old one, which stays visible as history), moves them through consent (pending → active, or
rejected), recalls the best few for a message (FTS5, bm25 blended with recency, confirmation and
use), and forgets them for good: a hard delete across the tables and the full-text index, with
``secure_delete`` on, the index merged and the WAL checkpointed, so the text is gone from the
file. Anchors are the user's pinned notes, always in the prompt, in order, within a budget.

Every write is one transaction (``BEGIN IMMEDIATE``) under one in-process lock; SQLite's own
locking, with the busy timeout, keeps writers in other processes one at a time, and WAL lets
readers go on meanwhile. The store may be used from any one thread at a time (a worker thread
is fine): the lock serialises calls. Reads never take the write lock: ``expire`` (run as every
command starts) looks first and writes only when something is due. Adds, edits and forgets
commit at ``synchronous = FULL``; recall's use counts commit at NORMAL (no fsync), and a recall
whose counts cannot be written (a full disk, a read-only home) still returns its facts. A full
disk is ``MemoryDiskFullError`` ("The disk holding ~/.chamberlain is full: the fact was not
saved, …"): the transaction is rolled back, so everything stored before is whole.

What it must never do: decide sensitivity, category or slot (the caller passes them in; the
detectors live elsewhere), write an event that holds a fact's text (events carry a SHA-256
digest and ids only), keep any trace of a forgotten fact's text, recall a pending, superseded
or expired fact, store a credential (the optional ``refuse`` hook is called on every text
written, and a refusal writes nothing), or import anything from the broker, the app or Qt.
Nothing here is reachable from a model: the broker decides who may call what.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import logging
import re
import secrets
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, NamedTuple

from core.clock import Clock, SystemClock
from memory.db import (
    DatabaseError,
    MemoryCorruptError,
    MemoryDatabase,
    MemoryDiskError,
    MemoryDiskFullError,
    MemoryStoreError,
    OperationalError,
    disk_error,
    is_disk_full,
    is_disk_problem,
    scratch_connection,
)
from memory.store.export import ImportFormatError, build_export, parse_import, render_markdown
from memory.slots import normalise
from memory.types import (
    SENSITIVITY_ORDER,
    Anchor,
    EventKind,
    Fact,
    FactSource,
    FactStatus,
    MemoryEvent,
    Sensitivity,
    highest,
)

log = logging.getLogger("chamberlain.memory.store")

__all__ = [
    "AddOutcome",
    "AnchorNotFoundError",
    "AnchorsPrompt",
    "Clock",
    "CredentialRefused",
    "FactNotFoundError",
    "FactStateError",
    "ImportFormatError",
    "InvalidInputError",
    "Listing",
    "MemoryDiskError",
    "MemoryDiskFullError",
    "MemoryStore",
    "SystemClock",
    "build_match_query",
    "check_text",
    "normalise",
    "query_terms",
    "text_digest",
]

MAX_TEXT_CHARS = 4000
MAX_EVIDENCE_CHARS = 4000
MAX_RECALL = 100
MAX_QUERY_WORDS = 16
DEFAULT_LIST_LIMIT = 1000

# The recall blend (see MemoryStore.recall): relevance × (1 + boosts); the boosts add at most
# RECENCY_WEIGHT + CONFIRMED_WEIGHT + USE_WEIGHT (×1.7 in all), so relevance stays in charge.
RECENCY_WEIGHT = 0.3
RECENCY_HALF_LIFE_S = 30 * 86400.0
CONFIRMED_WEIGHT = 0.2
USE_WEIGHT = 0.2
USE_CAP = 20
# How many of the best text matches recall re-ranks, widened while too few pass its filters.
RECALL_CANDIDATES = (32, 512)

Action = Literal["added", "duplicate", "superseded"]


class CredentialRefused(MemoryStoreError):
    """The refuse hook found a credential in text about to be written; nothing was written."""


class FactNotFoundError(MemoryStoreError, LookupError):
    """No fact (or anchor) with that id."""


class AnchorNotFoundError(FactNotFoundError):
    """No anchor with that id."""


class FactStateError(MemoryStoreError, ValueError):
    """The fact is not in a state that allows this (e.g. rejecting an active fact)."""


class InvalidInputError(MemoryStoreError, ValueError):
    """Text or arguments the store will not write (empty, too long, a past expiry, ...)."""


@dataclass(frozen=True)
class AddOutcome:
    """What add() did: stored a new fact, confirmed an existing one, or superseded older ones."""

    fact: Fact
    action: Action
    superseded: list[Fact] = field(default_factory=list)


@dataclass(frozen=True)
class Listing:
    """One page of facts, and how many matched in all: ``more`` says the page is not all."""

    facts: builtins.list[Fact]
    total: int

    @property
    def more(self) -> bool:
        return self.total > len(self.facts)


@dataclass(frozen=True)
class AnchorsPrompt:
    """The anchors as they go into the system prompt, and what did not fit."""

    text: str
    used_chars: int
    budget_chars: int
    omitted: list[Anchor] = field(default_factory=list)


# --- text helpers -------------------------------------------------------------------------------


USED_EVENTS_KEEP_S = 365 * 86400


def check_text(text: object, what: str = "text", limit: int = MAX_TEXT_CHARS) -> str:
    """The text as the store would write it (stripped), or InvalidInputError saying why not.

    Cheap checks only, length first, so a caller can reject a megabyte before any detector
    scans it. Text from the command line may hold lone surrogates (bytes that were not UTF-8,
    kept by Python as "surrogate escapes"); SQLite and the digests need real UTF-8, so such
    text is refused here, plainly, instead of crashing later.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"The {what} to remember must be a string.")
    text = text.strip()
    if len(text) > limit:
        raise InvalidInputError(
            f"The {what} to remember is too long ({len(text)} characters; at most {limit}); "
            "nothing was stored."
        )
    if not text:
        raise InvalidInputError(f"The {what} to remember is empty; nothing was stored.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"The {what} to remember holds bytes that are not valid UTF-8 text (a terminal or "
            "file in another encoding?); nothing was stored. Type it again as plain text."
        ) from None
    return text


def text_digest(text: str) -> str:
    """The SHA-256 of a text, as events record it instead of the text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Function words carry no meaning for recall, and at 100k facts a query term such as "my"
# matches half the index: scoring all of those rows is what makes a recall slow.
_STOPWORD_TEXT = """
    a about am an and any are as at be been but by can could d did do does doing for from had
    has have how i if in into is it its ll m me my myself no not of on or our re s so t than
    that the their them then there these they this those to too us ve was we were what when
    where which who whom why will with would you your yours
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Word characters, as unicode61 sees them: letters, digits and marks; "_" separates.
_WORD = re.compile(r"[^\W_]+")
_PREFIX_MIN_WORD = 5
_PREFIX_MIN, _PREFIX_MAX = 4, 6


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def query_terms(text: str) -> builtins.list[str]:
    """One FTS5 expression per distinct word of untrusted text ([] when it holds no words).

    Each word becomes a quoted phrase, so nothing in the text is FTS syntax. Porter stemming
    matches "peanut"/"peanuts" but not "allergy"/"allergic" (stems "allergi" and "allerg"), so
    a word of five letters or more also gets a prefix term: its first len-2 letters, kept
    between 4 and 6 ("allergy" → '"allergy" OR "aller"*', matching "allergic", "allergies").
    Function words are dropped unless nothing else is left; at most 16 words are used.
    """
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    content = [w for w in words if w not in _STOPWORDS] or words
    terms: builtins.list[str] = []
    seen: set[str] = set()
    for word in content:
        if word in seen:
            continue
        seen.add(word)
        term = _quote(word)
        if len(word) >= _PREFIX_MIN_WORD:
            cut = min(max(len(word) - 2, _PREFIX_MIN), _PREFIX_MAX)
            term += " OR " + _quote(word[:cut]) + "*"
        terms.append(term)
        if len(terms) == MAX_QUERY_WORDS:
            break
    return terms


def build_match_query(text: str) -> str | None:
    """The FTS5 MATCH expression recall and search use: every word's terms, OR-joined."""
    terms = query_terms(text)
    return " OR ".join(terms) if terms else None


class _WordCoverage:
    """How many of a query's words each candidate fact contains, by the index's own rules.

    bm25 alone ranks a fact that matches one word strongly above one that matches every word
    weakly, and in a small memory a word found in most facts scores nothing at all: "allergy
    peanut" would put "my sister has a pollen allergy" above "I am allergic to peanuts". So
    recall counts, per candidate, the query words it matches. The candidates' texts go into a
    private in-memory FTS5 table with the same tokenizer, one MATCH per word, and the
    transaction is rolled back: nothing is kept, nothing touches the disk.
    """

    def __init__(self) -> None:
        self._conn = scratch_connection()
        self._conn.execute(
            "CREATE VIRTUAL TABLE words USING fts5 (text, tokenize = 'porter unicode61')"
        )

    def count(self, terms: Sequence[str], texts: dict[int, str]) -> dict[int, int]:
        counts = dict.fromkeys(texts, 0)
        if len(terms) < 2:
            return dict.fromkeys(texts, len(terms))
        conn = self._conn
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO words (rowid, text) VALUES (?, ?)", texts.items())
            for term in terms:
                for (rowid,) in conn.execute(
                    "SELECT rowid FROM words WHERE words MATCH ?", (term,)
                ):
                    counts[rowid] += 1
        finally:
            conn.execute("ROLLBACK")
        return counts

    def close(self) -> None:
        self._conn.close()


# --- rows ----------------------------------------------------------------------------------------

_FACT_COLUMNS = (
    "id",
    "text",
    "subject",
    "slot",
    "category",
    "sensitivity",
    "reasons",
    "status",
    "source",
    "evidence",
    "created_at",
    "confirmed_at",
    "last_used_at",
    "use_count",
    "expires_at",
    "superseded_by",
)
_SELECT_FACT = ", ".join(f"f.{c}" for c in _FACT_COLUMNS)


def _fact(row: Sequence[Any]) -> Fact:
    values = dict(zip(_FACT_COLUMNS, row, strict=False))
    values["reasons"] = json.loads(values["reasons"])
    return Fact.model_validate(values)


def _fact_from_record(record: dict[str, Any]) -> Fact:
    return _fact([record[c] for c in _FACT_COLUMNS])


def _fact_record(fact: Fact) -> dict[str, Any]:
    """A fact as the row ``facts`` holds: the columns Fact has, plus the dedupe digest and the
    sensitivity rank recall filters on (keys in _ROW_COLUMNS order)."""
    values = (
        fact.id,
        fact.text,
        text_digest(normalise(fact.text)),
        fact.subject,
        fact.slot,
        fact.category,
        fact.sensitivity.value,
        _rank(fact.sensitivity),
        json.dumps(fact.reasons, ensure_ascii=False),
        fact.status.value,
        fact.source.value,
        fact.evidence,
        fact.created_at,
        fact.confirmed_at,
        fact.last_used_at,
        fact.use_count,
        fact.expires_at,
        fact.superseded_by,
    )
    return dict(zip(_ROW_COLUMNS, values, strict=True))


# A stored row: the fact's columns, plus the digest used for dedupe and the sensitivity's rank.
_ROW_COLUMNS = (
    "id",
    "text",
    "norm_digest",
    *_FACT_COLUMNS[2 : _FACT_COLUMNS.index("sensitivity") + 1],
    "sensitivity_rank",
    *_FACT_COLUMNS[_FACT_COLUMNS.index("sensitivity") + 1 :],
)
_INSERT_FACT = (
    f"INSERT INTO facts ({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))})"
)


def _anchor(row: Sequence[Any]) -> Anchor:
    return Anchor(id=row[0], text=row[1], position=row[2], created_at=row[3])


def _new_id() -> str:
    return secrets.token_hex(8)


def _rank(level: Sensitivity) -> int:
    return SENSITIVITY_ORDER[level]


class _Candidate(NamedTuple):
    """What recall ranks a matching fact by."""

    seq: int
    relevance: float  # -bm25
    created_at: float
    confirmed_at: float | None
    use_count: int
    text: str


def _blend(candidate: _Candidate, now: float) -> float:
    """The recall score (see MemoryStore.recall), before word coverage."""
    age = max(0.0, now - max(candidate.created_at, candidate.confirmed_at or 0.0))
    recency = 1.0 / (1.0 + age / RECENCY_HALF_LIFE_S)
    confirmed = 0.0 if candidate.confirmed_at is None else 1.0
    use = min(candidate.use_count, USE_CAP) / USE_CAP
    boost = RECENCY_WEIGHT * recency + CONFIRMED_WEIGHT * confirmed + USE_WEIGHT * use
    return candidate.relevance * (1.0 + boost)


def _merge_reasons(*groups: Iterable[str]) -> list[str]:
    merged: list[str] = []
    for group in groups:
        for reason in group:
            if reason not in merged:
                merged.append(reason)
    return merged


class MemoryStore:
    """Facts, anchors and events in one memory database. See the module docstring."""

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
        self._word_coverage: _WordCoverage | None = None

    # --- plumbing -------------------------------------------------------------------------

    @property
    def database(self) -> MemoryDatabase:
        return self._database

    def __enter__(self) -> MemoryStore:
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
            if self._word_coverage is not None:
                self._word_coverage.close()
                self._word_coverage = None
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

    def _fetch(self, conn: sqlite3.Connection, fact_id: str) -> Fact | None:
        row = conn.execute(
            f"SELECT {_SELECT_FACT} FROM facts f WHERE f.id = ?", (fact_id,)
        ).fetchone()
        return _fact(row) if row else None

    def _require(self, conn: sqlite3.Connection, fact_id: str) -> Fact:
        fact = self._fetch(conn, fact_id)
        if fact is None:
            raise FactNotFoundError(f"There is no fact with id {fact_id!r} in memory.")
        return fact

    def _insert(self, conn: sqlite3.Connection, fact: Fact) -> None:
        conn.execute(_INSERT_FACT, tuple(_fact_record(fact).values()))

    def _same_slot_active(self, conn: sqlite3.Connection, fact: Fact) -> builtins.list[Fact]:
        if fact.slot is None:
            return []
        rows = conn.execute(
            f"SELECT {_SELECT_FACT} FROM facts f WHERE f.subject = ? AND f.slot = ? "
            "AND f.status = 'active' AND f.id != ? ORDER BY f.created_at, f.seq",
            (fact.subject, fact.slot, fact.id),
        ).fetchall()
        return [_fact(r) for r in rows]

    def _supersede(
        self, conn: sqlite3.Connection, olds: Sequence[Fact], new: Fact, at: float
    ) -> builtins.list[Fact]:
        done: builtins.list[Fact] = []
        for old in olds:
            conn.execute(
                "UPDATE facts SET status = 'superseded', superseded_by = ? WHERE id = ?",
                (new.id, old.id),
            )
            self._event(conn, EventKind.SUPERSEDE, old.id, at, text=old.text, detail=f"by {new.id}")
            done.append(
                old.model_copy(update={"status": FactStatus.SUPERSEDED, "superseded_by": new.id})
            )
        return done

    def _chain_ids(self, conn: sqlite3.Connection, fact_ids: Iterable[str]) -> set[str]:
        """The given facts and every version linked to them through superseded_by."""
        found: set[str] = set()
        frontier = [i for i in fact_ids]
        while frontier:
            fact_id = frontier.pop()
            if fact_id in found:
                continue
            row = conn.execute(
                "SELECT superseded_by FROM facts WHERE id = ?", (fact_id,)
            ).fetchone()
            if row is None:
                continue
            found.add(fact_id)
            if row[0]:
                frontier.append(row[0])
            frontier.extend(
                r[0]
                for r in conn.execute("SELECT id FROM facts WHERE superseded_by = ?", (fact_id,))
            )
        return found

    def _delete_facts(
        self, conn: sqlite3.Connection, ids: Iterable[str], kind: EventKind, at: float, detail: str
    ) -> int:
        count = 0
        for fact_id in sorted(ids):
            row = conn.execute("SELECT text FROM facts WHERE id = ?", (fact_id,)).fetchone()
            if row is None:
                continue
            self._event(conn, kind, fact_id, at, text=row[0], detail=detail)
            conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,))
            count += 1
        return count

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

    # --- adding ------------------------------------------------------------------------------

    def add(
        self,
        text: str,
        *,
        sensitivity: Sensitivity,
        category: str = "general",
        reasons: Sequence[str] = (),
        source: FactSource = FactSource.USER_EXPLICIT,
        evidence: str = "",
        subject: str = "user",
        slot: str | None = None,
        status: FactStatus | None = None,
        expires_at: float | None = None,
    ) -> AddOutcome:
        """Store a fact, or confirm the same one already stored.

        Status defaults to active for ``low`` and pending otherwise. A fact whose normalised
        text matches a pending or active fact confirms that one instead (CONFIRM; its
        sensitivity is raised if this call's is higher; a pending one is activated if this
        call asks for ``active``). A new active fact with a slot supersedes the active facts
        with the same (subject, slot), unless one of them was edited by the user: then the new
        fact waits as pending, with the conflict as its reason. Pending facts supersede nothing
        until approved.
        """
        text = self._check_text(text)
        evidence = (evidence or "").strip()[:MAX_EVIDENCE_CHARS]
        if evidence:
            evidence = evidence.encode("utf-8", "replace").decode("utf-8")
        level = Sensitivity(sensitivity)
        source = FactSource(source)
        status = (
            FactStatus(status)
            if status is not None
            else (FactStatus.ACTIVE if level is Sensitivity.LOW else FactStatus.PENDING)
        )
        if status is FactStatus.SUPERSEDED:
            raise InvalidInputError("A new fact cannot be stored as superseded.")
        category = (category or "general").strip() or "general"
        now = self._now()
        if expires_at is not None and expires_at <= now:
            raise InvalidInputError("The fact's expiry is already past; nothing was stored.")
        self._screen(text, evidence)
        norm_digest = text_digest(normalise(text))

        with self._write("the fact was not saved") as conn:
            row = conn.execute(
                f"SELECT {_SELECT_FACT} FROM facts f WHERE f.norm_digest = ? "
                "AND f.status != 'superseded' AND (f.expires_at IS NULL OR f.expires_at > ?) "
                "ORDER BY f.status = 'active' DESC, f.created_at LIMIT 1",
                (norm_digest, now),
            ).fetchone()
            if row is not None:
                return self._confirm_duplicate(conn, _fact(row), level, reasons, status, now)

            fact = Fact(
                id=_new_id(),
                text=text,
                subject=subject,
                slot=slot,
                category=category,
                sensitivity=level,
                reasons=_merge_reasons(reasons),
                status=status,
                source=source,
                evidence=evidence,
                created_at=now,
                expires_at=expires_at,
            )
            olds = self._same_slot_active(conn, fact) if status is FactStatus.ACTIVE else []
            edited = [old for old in olds if old.source is FactSource.USER_EDIT]
            if edited:
                fact = fact.model_copy(
                    update={
                        "status": FactStatus.PENDING,
                        "reasons": _merge_reasons(
                            fact.reasons,
                            [f"conflicts with a fact you edited ({edited[0].id})"],
                        ),
                    }
                )
                olds = []
            self._insert(conn, fact)
            self._event(
                conn,
                EventKind.ADD,
                fact.id,
                now,
                text=fact.text,
                detail=f"status={fact.status.value} sensitivity={fact.sensitivity.value} "
                f"source={fact.source.value}",
            )
            superseded = self._supersede(conn, olds, fact, now)
        log.info("added fact %s (%s, %s)", fact.id, fact.status.value, fact.sensitivity.value)
        return AddOutcome(
            fact=fact, action="superseded" if superseded else "added", superseded=superseded
        )

    def _confirm_duplicate(
        self,
        conn: sqlite3.Connection,
        existing: Fact,
        level: Sensitivity,
        reasons: Sequence[str],
        status: FactStatus,
        now: float,
    ) -> AddOutcome:
        raised = highest(existing.sensitivity, level)
        merged = _merge_reasons(existing.reasons, reasons if raised is level else ())
        conn.execute(
            "UPDATE facts SET confirmed_at = ?, sensitivity = ?, sensitivity_rank = ?, "
            "reasons = ? WHERE id = ?",
            (now, raised.value, _rank(raised), json.dumps(merged, ensure_ascii=False), existing.id),
        )
        self._event(
            conn, EventKind.CONFIRM, existing.id, now, text=existing.text, detail="repeated"
        )
        superseded: builtins.list[Fact] = []
        if existing.status is FactStatus.PENDING and status is FactStatus.ACTIVE:
            current = self._require(conn, existing.id)
            # Activating here is automatic, so an edited fact in the slot still wins.
            if not any(
                old.source is FactSource.USER_EDIT for old in self._same_slot_active(conn, current)
            ):
                superseded = self._activate(conn, current, now)
        return AddOutcome(
            fact=self._require(conn, existing.id), action="duplicate", superseded=superseded
        )

    def _activate(self, conn: sqlite3.Connection, fact: Fact, now: float) -> builtins.list[Fact]:
        """Pending → active, superseding every other active fact in its slot (the user chose
        this one, so an edited fact yields too)."""
        conn.execute(
            "UPDATE facts SET status = 'active', confirmed_at = ? WHERE id = ?", (now, fact.id)
        )
        self._event(conn, EventKind.CONFIRM, fact.id, now, text=fact.text, detail="approved")
        return self._supersede(conn, self._same_slot_active(conn, fact), fact, now)

    # --- consent ------------------------------------------------------------------------------

    def approve(self, fact_id: str) -> Fact:
        """Make a pending fact active (CONFIRM), applying the slot rule now. An active fact is
        returned as it is."""
        now = self._now()
        with self._write() as conn:
            fact = self._require(conn, fact_id)
            if fact.status is FactStatus.ACTIVE:
                return fact
            if fact.status is FactStatus.SUPERSEDED:
                raise FactStateError(
                    f"Fact {fact_id} is an earlier version (superseded by {fact.superseded_by}); "
                    "only a pending fact can be approved."
                )
            if fact.expires_at is not None and fact.expires_at <= now:
                raise FactStateError(f"Fact {fact_id} has expired; it cannot be approved.")
            self._activate(conn, fact, now)
            approved = self._require(conn, fact_id)
        log.info("approved fact %s", fact_id)
        return approved

    def reject(self, fact_id: str) -> None:
        """Delete a pending fact for good (REJECT): nothing of its text is kept."""
        now = self._now()
        with self._write() as conn:
            fact = self._require(conn, fact_id)
            if fact.status is not FactStatus.PENDING:
                raise FactStateError(
                    f"Fact {fact_id} is {fact.status.value}, not pending; use forget to delete it."
                )
            self._delete_facts(conn, [fact_id], EventKind.REJECT, now, "rejected while pending")
            self._scrub_index(conn)
        self._scrub_wal()
        log.info("rejected fact %s", fact_id)

    def edit(
        self,
        fact_id: str,
        text: str,
        *,
        sensitivity: Sensitivity | None = None,
        reasons: Sequence[str] | None = None,
        category: str | None = None,
    ) -> Fact:
        """Replace a fact's text with the user's own: a new active version (source user_edit)
        that supersedes the old one (EDIT). Sensitivity, reasons and category carry over unless
        given (the caller re-assesses the new text). The new version is active even when the
        old one was pending (the user wrote it), and it supersedes any other active fact in its
        slot. An edited fact is never superseded automatically afterwards."""
        text = self._check_text(text)
        self._screen(text)
        now = self._now()
        with self._write("the edit was not saved") as conn:
            old = self._require(conn, fact_id)
            if old.status is FactStatus.SUPERSEDED:
                raise FactStateError(
                    f"Fact {fact_id} is an earlier version (superseded by {old.superseded_by}); "
                    "edit the current one."
                )
            new = Fact(
                id=_new_id(),
                text=text,
                subject=old.subject,
                slot=old.slot,
                category=(category or old.category).strip() or "general",
                sensitivity=Sensitivity(sensitivity)
                if sensitivity is not None
                else old.sensitivity,
                reasons=_merge_reasons(reasons if reasons is not None else old.reasons),
                status=FactStatus.ACTIVE,
                source=FactSource.USER_EDIT,
                evidence=text,
                created_at=now,
                confirmed_at=now,
                expires_at=old.expires_at,
            )
            self._insert(conn, new)
            self._event(
                conn, EventKind.EDIT, new.id, now, text=new.text, detail=f"replaces {old.id}"
            )
            # The user wrote this version, so it is their choice over anything else in the slot.
            self._supersede(conn, [old, *self._same_slot_active(conn, new)], new, now)
        log.info("edited fact %s into %s", fact_id, new.id)
        return new

    # --- forgetting ---------------------------------------------------------------------------

    def forget(self, fact_id: str) -> int:
        """Hard-delete a fact and every version of it (its history); 0 when there is none."""
        now = self._now()
        with self._write("nothing was forgotten") as conn:
            ids = self._chain_ids(conn, [fact_id])
            count = self._delete_facts(conn, ids, EventKind.DELETE, now, "forgotten")
            if count:
                self._scrub_index(conn)
        if count:
            self._scrub_wal()
        return count

    def forget_category(self, category: str) -> int:
        """Hard-delete every fact in a category (all statuses, with their versions)."""
        now = self._now()
        with self._write("nothing was forgotten") as conn:
            seeds = [
                r[0] for r in conn.execute("SELECT id FROM facts WHERE category = ?", (category,))
            ]
            ids = self._chain_ids(conn, seeds)
            count = self._delete_facts(conn, ids, EventKind.DELETE, now, "forgotten by category")
            if count:
                self._scrub_index(conn)
        if count:
            self._scrub_wal()
        return count

    def forget_all(self) -> int:
        """Hard-delete every fact and every anchor. Returns the number of facts deleted.
        One DELETE event records the counts (events already hold no text)."""
        now = self._now()
        with self._write("nothing was forgotten") as conn:
            facts = int(conn.execute("SELECT count(*) FROM facts").fetchone()[0])
            anchors = int(conn.execute("SELECT count(*) FROM anchors").fetchone()[0])
            conn.execute("DELETE FROM facts")
            conn.execute("DELETE FROM anchors")
            # With every row gone, 'delete-all' resets the index outright.
            conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('delete-all')")
            self._scrub_index(conn)
            self._event(
                conn,
                EventKind.DELETE,
                None,
                now,
                detail=f"forgot everything: facts={facts} anchors={anchors}",
            )
        self._scrub_wal()
        log.info("forgot everything: %d facts, %d anchors", facts, anchors)
        return facts

    def expire(self, now: float | None = None) -> int:
        """Hard-delete the facts whose expiry has passed (EXPIRE). Returns how many.

        Also drops USED events older than USED_EVENTS_KEEP_S: every recall adds one, and the
        fact's own use count and last-used time already say what they summed up.
        """
        at = self._now(now)
        # Run at every start of a command, most often with nothing to do: a read finds out
        # first, so a command that only reads never waits for (or holds) the write lock.
        with self._read() as conn:
            due = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM facts WHERE expires_at IS NOT NULL "
                "AND expires_at <= ?) OR EXISTS (SELECT 1 FROM events WHERE kind = ? AND at < ?)",
                (at, EventKind.USED.value, at - USED_EVENTS_KEEP_S),
            ).fetchone()[0]
        if not due:
            return 0
        with self._write() as conn:
            conn.execute(
                "DELETE FROM events WHERE kind = ? AND at < ?",
                (EventKind.USED.value, at - USED_EVENTS_KEEP_S),
            )
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM facts WHERE expires_at IS NOT NULL AND expires_at <= ?", (at,)
                )
            ]
            count = self._delete_facts(conn, ids, EventKind.EXPIRE, at, "expired")
            if count:
                self._scrub_index(conn)
        if count:
            self._scrub_wal()
            log.info("expired %d facts", count)
        return count

    # --- reading ------------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        with self._read() as conn:
            return self._fetch(conn, fact_id)

    def listing(
        self,
        status: FactStatus | str | None = None,
        category: str | None = None,
        sensitivity: Sensitivity | str | None = None,
        include_superseded: bool = False,
        limit: int = DEFAULT_LIST_LIMIT,
    ) -> Listing:
        """Facts, newest first, at most ``limit`` of them, with how many matched in all (so a
        caller can say the list goes on). Superseded versions only when asked (or
        status=superseded)."""
        where, params = self._filters(status, category, sensitivity, include_superseded)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        sql = (
            f"SELECT {_SELECT_FACT} FROM facts f{clause} "
            "ORDER BY f.created_at DESC, f.seq DESC LIMIT ?"
        )
        with self._read() as conn:
            rows = conn.execute(sql, (*params, max(0, int(limit)))).fetchall()
            total = int(conn.execute(f"SELECT count(*) FROM facts f{clause}", params).fetchone()[0])
        return Listing(facts=[_fact(r) for r in rows], total=total)

    def list(
        self,
        status: FactStatus | str | None = None,
        category: str | None = None,
        sensitivity: Sensitivity | str | None = None,
        include_superseded: bool = False,
        limit: int = DEFAULT_LIST_LIMIT,
    ) -> builtins.list[Fact]:
        """The facts of ``listing`` alone; use ``listing`` to learn whether there were more."""
        return self.listing(status, category, sensitivity, include_superseded, limit).facts

    @staticmethod
    def _filters(
        status: FactStatus | str | None,
        category: str | None,
        sensitivity: Sensitivity | str | None,
        include_superseded: bool,
    ) -> tuple[builtins.list[str], builtins.list[Any]]:
        where: builtins.list[str] = []
        params: builtins.list[Any] = []
        if status is not None:
            where.append("f.status = ?")
            params.append(FactStatus(status).value)
        elif not include_superseded:
            where.append("f.status != 'superseded'")
        if category is not None:
            where.append("f.category = ?")
            params.append(category)
        if sensitivity is not None:
            where.append("f.sensitivity = ?")
            params.append(Sensitivity(sensitivity).value)
        return where, params

    def history(self, fact_id: str) -> builtins.list[Fact]:
        """Every version of a fact, oldest first ([] when there is no such fact)."""
        with self._read() as conn:
            ids = self._chain_ids(conn, [fact_id])
            facts = [f for f in (self._fetch(conn, i) for i in ids) if f is not None]
        return sorted(facts, key=lambda f: (f.created_at, f.status is not FactStatus.SUPERSEDED))

    def search(
        self,
        text: str,
        *,
        status: FactStatus | str | None = None,
        category: str | None = None,
        sensitivity: Sensitivity | str | None = None,
        include_superseded: bool = True,
        limit: int = 50,
    ) -> builtins.list[Fact]:
        """The user's search: every status (filters optional), best match first. Not a use of
        the facts, so no counter moves and no event is written."""
        match = build_match_query(text)
        if match is None:
            return []
        where, params = self._filters(status, category, sensitivity, include_superseded)
        sql = (
            f"SELECT {_SELECT_FACT} FROM facts_fts JOIN facts f ON f.seq = facts_fts.rowid "
            "WHERE facts_fts MATCH ?"
        )
        for clause in where:
            sql += " AND " + clause
        sql += " ORDER BY bm25(facts_fts), f.created_at DESC LIMIT ?"
        with self._read() as conn:
            rows = conn.execute(sql, (match, *params, max(0, int(limit)))).fetchall()
        return [_fact(r) for r in rows]

    def events(self, limit: int = 100, *, fact_id: str | None = None) -> builtins.list[MemoryEvent]:
        """The newest events first."""
        sql = "SELECT id, kind, fact_id, at, digest, detail FROM events"
        params: builtins.list[Any] = []
        if fact_id is not None:
            sql += " WHERE fact_id = ?"
            params.append(fact_id)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(max(0, int(limit)))
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            MemoryEvent(
                id=r[0], kind=EventKind(r[1]), fact_id=r[2], at=r[3], digest=r[4], detail=r[5]
            )
            for r in rows
        ]

    def count(self, status: FactStatus | str | None = None) -> int:
        """How many facts (of one status, or all)."""
        with self._read() as conn:
            if status is None:
                row = conn.execute("SELECT count(*) FROM facts").fetchone()
            else:
                row = conn.execute(
                    "SELECT count(*) FROM facts WHERE status = ?", (FactStatus(status).value,)
                ).fetchone()
        return int(row[0])

    # --- recall -------------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        limit: int = 5,
        max_sensitivity: Sensitivity = Sensitivity.SECRET,
        now: float | None = None,
    ) -> builtins.list[Fact]:
        """The active, unexpired facts at or below ``max_sensitivity`` that best match a
        message, best first. Each one returned counts as used (use_count, last_used_at, USED).

        Ranking: facts that contain more of the message's words come first (see
        _WordCoverage); among those that contain as many, the higher score wins:

            score = relevance × (1 + 0.3·recency + 0.2·confirmed + 0.2·use)

        where relevance is −bm25 over the words' terms (see query_terms), recency is
        1 / (1 + age / 30 days) with age counted from the later of created and confirmed,
        confirmed is 1 once the fact was confirmed or approved, and use is
        min(use_count, 20) / 20. The boosts multiply relevance by at most 1.7, so they order
        facts that match about equally well and never lift a poor match over a good one.

        For speed the ranking looks at the best text matches rather than every match: the 32
        best by bm25 (FTS5 finds those from its index alone), widened to 512 and then to all
        matches whenever too few of them pass the filters. Filtering is therefore exact; only
        a fact outside the 32 best text matches can miss a boost that would have lifted it.
        Facts holding every word are looked for first (FTS5 then ranks only that
        intersection); the best of those holding any word are added when too few do.
        """
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join(terms)
        at = self._now(now)
        limit = max(1, min(int(limit), MAX_RECALL))
        rank = _rank(Sensitivity(max_sensitivity))
        try:
            with self._bookkeeping(), self._write() as conn:
                return self._recall_in(conn, terms, match, rank, at, limit, count_use=True)
        except MemoryDiskError as exc:
            # A full disk or a read-only home must not take recall down with the use counts:
            # the facts are read as they are, and nothing is counted this time.
            log.warning("recall could not count its uses: %s", exc)
            with self._read() as conn:
                return self._recall_in(conn, terms, match, rank, at, limit, count_use=False)

    def _recall_in(
        self,
        conn: sqlite3.Connection,
        terms: builtins.list[str],
        match: str,
        rank: int,
        at: float,
        limit: int,
        *,
        count_use: bool,
    ) -> builtins.list[Fact]:
        candidates: builtins.list[_Candidate] = []
        if len(terms) > 1:
            # Facts holding every word rank first whatever their score (see _WordCoverage), so
            # when enough of them pass the filters they are the answer, and FTS5 ranks only
            # their intersection instead of every fact holding any one word.
            every = " AND ".join(f"({term})" for term in terms)
            candidates = self._recall_candidates(conn, every, rank, at, limit)
        if len(candidates) < limit:
            # Too few hold every word: the best of those holding any join them.
            found = {c.seq for c in candidates}
            candidates += [
                c
                for c in self._recall_candidates(conn, match, rank, at, limit)
                if c.seq not in found
            ]
        coverage = self._coverage().count(terms, {c.seq: c.text for c in candidates})
        candidates.sort(
            key=lambda c: (coverage[c.seq], _blend(c, at), c.created_at, c.seq), reverse=True
        )
        facts: builtins.list[Fact] = []
        for candidate in candidates[:limit]:
            row = conn.execute(
                f"SELECT {_SELECT_FACT} FROM facts f WHERE f.seq = ?", (candidate.seq,)
            ).fetchone()
            fact = _fact(row)
            if not count_use:
                facts.append(fact)
                continue
            conn.execute(
                "UPDATE facts SET use_count = use_count + 1, last_used_at = ? WHERE seq = ?",
                (at, candidate.seq),
            )
            self._event(conn, EventKind.USED, fact.id, at, text=fact.text, detail="recall")
            facts.append(
                fact.model_copy(update={"use_count": fact.use_count + 1, "last_used_at": at})
            )
        return facts

    @contextlib.contextmanager
    def _bookkeeping(self) -> Iterator[None]:
        """Commit at synchronous=NORMAL: no fsync of the WAL for this commit. Use counts and
        USED events only, which a power cut may roll back a few recalls (never corrupting the
        file); every add and forget still commits at FULL, and its fsync also makes earlier
        bookkeeping durable. Without this, every recall that finds facts waits for the disk."""
        with self._lock:
            self._check_open()
            self._conn.execute("PRAGMA synchronous = NORMAL")
            try:
                yield
            finally:
                if not self._database.closed:
                    self._conn.execute("PRAGMA synchronous = FULL")

    def _coverage(self) -> _WordCoverage:
        if self._word_coverage is None:
            self._word_coverage = _WordCoverage()
        return self._word_coverage

    @staticmethod
    def _recall_candidates(
        conn: sqlite3.Connection, match: str, rank: int, at: float, limit: int
    ) -> builtins.list[_Candidate]:
        """Matching facts that pass the recall filters: from the best text matches, widened
        until enough of them pass."""
        # The unary + keeps the planner on the rowid lookups: without it, it may scan the
        # status index (every active fact) to filter a short list of rowids.
        filters = (
            "+f.status = 'active' AND +f.sensitivity_rank <= ? "
            "AND (+f.expires_at IS NULL OR +f.expires_at > ?)"
        )
        columns = "f.seq, f.created_at, f.confirmed_at, f.use_count, f.text"
        for width in RECALL_CANDIDATES:
            ranked = conn.execute(
                "SELECT rowid, bm25(facts_fts) FROM facts_fts WHERE facts_fts MATCH ? "
                "ORDER BY rank LIMIT ?",
                (match, width),
            ).fetchall()
            if not ranked:
                return []
            relevance = {int(seq): -float(score) for seq, score in ranked}
            marks = ", ".join("?" * len(relevance))
            rows = conn.execute(
                f"SELECT {columns} FROM facts f WHERE f.seq IN ({marks}) AND {filters}",
                (*relevance, rank, at),
            ).fetchall()
            if len(rows) >= limit or len(ranked) < width:
                return [_Candidate(r[0], relevance[r[0]], r[1], r[2], r[3], r[4]) for r in rows]
        rows = conn.execute(
            f"SELECT {columns}, bm25(facts_fts) FROM facts_fts "
            f"JOIN facts f ON f.seq = facts_fts.rowid WHERE facts_fts MATCH ? AND {filters}",
            (match, rank, at),
        ).fetchall()
        return [_Candidate(r[0], -float(r[5]), r[1], r[2], r[3], r[4]) for r in rows]

    # --- anchors ------------------------------------------------------------------------------

    def add_anchor(self, text: str) -> Anchor:
        """Pin a note at the end of the anchors (only the user does this)."""
        text = self._check_text(text, "anchor")
        self._screen(text)
        now = self._now()
        with self._write("the anchor was not saved") as conn:
            position = int(conn.execute("SELECT count(*) FROM anchors").fetchone()[0])
            anchor = Anchor(id=_new_id(), text=text, position=position, created_at=now)
            conn.execute(
                "INSERT INTO anchors (id, text, position, created_at) VALUES (?, ?, ?, ?)",
                (anchor.id, anchor.text, anchor.position, anchor.created_at),
            )
            self._event(
                conn,
                EventKind.ANCHOR_SET,
                anchor.id,
                now,
                text=text,
                detail=f"pinned at {position}",
            )
        return anchor

    def anchors(self) -> builtins.list[Anchor]:
        """The anchors in prompt order."""
        with self._read() as conn:
            return self._anchors(conn)

    @staticmethod
    def _anchors(conn: sqlite3.Connection) -> builtins.list[Anchor]:
        rows = conn.execute(
            "SELECT id, text, position, created_at FROM anchors ORDER BY position, created_at"
        ).fetchall()
        return [_anchor(r) for r in rows]

    @staticmethod
    def _renumber(conn: sqlite3.Connection, ordered: Sequence[Anchor]) -> builtins.list[Anchor]:
        result: builtins.list[Anchor] = []
        for position, anchor in enumerate(ordered):
            if anchor.position != position:
                conn.execute("UPDATE anchors SET position = ? WHERE id = ?", (position, anchor.id))
            result.append(anchor.model_copy(update={"position": position}))
        return result

    def move_anchor(self, anchor_id: str, position: int) -> Anchor:
        """Move an anchor to a position (0 is first; clamped to the list)."""
        now = self._now()
        with self._write() as conn:
            ordered = self._anchors(conn)
            found = [a for a in ordered if a.id == anchor_id]
            if not found:
                raise AnchorNotFoundError(f"There is no anchor with id {anchor_id!r}.")
            ordered.remove(found[0])
            target = max(0, min(int(position), len(ordered)))
            ordered.insert(target, found[0])
            moved = self._renumber(conn, ordered)[target]
            self._event(
                conn,
                EventKind.ANCHOR_SET,
                anchor_id,
                now,
                text=moved.text,
                detail=f"moved to {target}",
            )
        return moved

    def remove_anchor(self, anchor_id: str) -> None:
        """Unpin an anchor; its text is deleted for good."""
        now = self._now()
        with self._write() as conn:
            ordered = self._anchors(conn)
            found = [a for a in ordered if a.id == anchor_id]
            if not found:
                raise AnchorNotFoundError(f"There is no anchor with id {anchor_id!r}.")
            conn.execute("DELETE FROM anchors WHERE id = ?", (anchor_id,))
            ordered.remove(found[0])
            self._renumber(conn, ordered)
            self._event(conn, EventKind.ANCHOR_REMOVE, anchor_id, now, text=found[0].text)
        self._scrub_wal()

    def anchors_prompt(self, budget_chars: int) -> AnchorsPrompt:
        """The anchors as prompt text ("- text" lines, in order) within ``budget_chars``.

        Anchors go in order until the next one would not fit; it and every later anchor are
        omitted (listed so the user can see what was left out), so the anchors that are sent
        are always the user's first N.
        """
        budget = max(0, int(budget_chars))
        lines: builtins.list[str] = []
        omitted: builtins.list[Anchor] = []
        used = 0
        for anchor in self.anchors():
            line = "- " + anchor.text
            cost = len(line) + (1 if lines else 0)
            if omitted or used + cost > budget:
                omitted.append(anchor)
                continue
            lines.append(line)
            used += cost
        text = "\n".join(lines)
        return AnchorsPrompt(text=text, used_chars=len(text), budget_chars=budget, omitted=omitted)

    # --- export and import --------------------------------------------------------------------

    def _everything(self) -> tuple[builtins.list[Fact], builtins.list[Anchor]]:
        """Every fact and anchor, in one read snapshot, through sqlite-utils (loaded here:
        export is not a path a turn takes)."""
        with self._read():
            db = self._database.db
            facts = db.table("facts").rows_where(
                select=", ".join(_FACT_COLUMNS), order_by="created_at, seq"
            )
            anchors = db.table("anchors").rows_where(order_by="position, created_at")
            return [_fact_from_record(r) for r in facts], [
                Anchor.model_validate(r) for r in anchors
            ]

    def _log_export(self, what: str, body: str, facts: int, anchors: int) -> None:
        now = self._now()
        with self._write() as conn:
            self._event(
                conn,
                EventKind.EXPORT,
                None,
                now,
                text=body,
                detail=f"{what}: facts={facts} anchors={anchors}",
            )

    def export_json(self) -> dict[str, Any]:
        """Everything, schema-versioned: facts of every status (history included), anchors."""
        facts, anchors = self._everything()
        data = build_export(facts, anchors, self._now())
        self._log_export("json", json.dumps(data, sort_keys=True), len(facts), len(anchors))
        return data

    def export_markdown(self) -> str:
        """Everything, for reading."""
        facts, anchors = self._everything()
        body = render_markdown(facts, anchors, self._now())
        self._log_export("markdown", body, len(facts), len(anchors))
        return body

    def import_json(
        self,
        data: object,
        *,
        sensitivity_floor: Callable[[str], Sensitivity] | None = None,
    ) -> builtins.list[Fact]:
        """Import an export: each pending or active fact arrives as a new PENDING fact with
        source ``import`` (text, subject, slot, category, reasons, evidence and expiry kept;
        sensitivity at least as given, and at least ``sensitivity_floor(text)`` when the caller
        passes its detectors). Superseded versions, expired facts and duplicates of stored (or
        earlier imported) facts are skipped. Anchors are validated but not imported: they go
        into every prompt, so the user pins them again by hand. All or nothing: any invalid
        fact, or a refused credential, raises and nothing is written.
        """
        records = parse_import(data)
        now = self._now()
        prepared: builtins.list[Fact] = []
        for index, record in enumerate(records):
            if record.status is FactStatus.SUPERSEDED:
                continue
            if record.expires_at is not None and record.expires_at <= now:
                continue
            try:
                text = self._check_text(record.text)
            except InvalidInputError as exc:
                raise ImportFormatError(f"fact {index + 1}: {exc}") from None
            self._screen(text, record.evidence)
            level = record.sensitivity
            if sensitivity_floor is not None:
                level = highest(level, sensitivity_floor(text))
            prepared.append(
                Fact(
                    id=_new_id(),
                    text=text,
                    subject=record.subject,
                    slot=record.slot,
                    category=record.category.strip() or "general",
                    sensitivity=level,
                    reasons=_merge_reasons(record.reasons),
                    status=FactStatus.PENDING,
                    source=FactSource.IMPORT,
                    evidence=record.evidence[:MAX_EVIDENCE_CHARS],
                    created_at=now,
                    expires_at=record.expires_at,
                )
            )
        imported: builtins.list[Fact] = []
        with self._write("nothing was imported") as conn:
            seen: set[str] = set()
            for fact in prepared:
                digest = text_digest(normalise(fact.text))
                if digest in seen:
                    continue
                seen.add(digest)
                exists = conn.execute(
                    "SELECT 1 FROM facts WHERE norm_digest = ? AND status != 'superseded'",
                    (digest,),
                ).fetchone()
                if not exists:
                    imported.append(fact)
            # sqlite-utils writes the rows in batches, inside this transaction; the triggers
            # index each fact's text as it is inserted.
            db = self._database.db
            db.table("facts").insert_all(_fact_record(fact) for fact in imported)
            db.table("events").insert_all(
                {
                    "kind": EventKind.IMPORT.value,
                    "fact_id": fact.id,
                    "at": now,
                    "digest": text_digest(fact.text),
                    "detail": f"pending sensitivity={fact.sensitivity.value}",
                }
                for fact in imported
            )
        log.info("imported %d of %d facts (as pending)", len(imported), len(records))
        return imported

    # --- health -------------------------------------------------------------------------------

    def integrity_check(self) -> str:
        """Return "ok", or what SQLite (and the full-text index's own check) found wrong."""
        with self._lock, self._translated():
            self._check_open()
            return self._database.integrity_check()

"""Recall: the few active facts that best match a message, and the full-text queries it runs.

``query_terms`` turns untrusted text into quoted FTS5 terms (nothing in it is FTS syntax);
``RecallMethods.recall`` ranks the matching facts by how many of the message's words each
holds, then by bm25 blended with recency, confirmation and use (see its docstring), and counts
each fact it returns as used. The use counts commit at ``synchronous = NORMAL`` (no fsync), and
a recall whose counts cannot be written (a full disk, a read-only home) still returns its facts.

What it must never do: recall a pending, superseded or expired fact, or one above the caller's
sensitivity ceiling (the filters are exact, however many better matches they drop); pass a
message's text to FTS5 as syntax; write an event holding a text; or keep the candidates' texts
anywhere but a private in-memory table that is rolled back.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sqlite3
import unicodedata
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from memory.db import MemoryDiskError, scratch_connection
from memory.store.connection import StoreConnection
from memory.store.rows import SELECT_FACT, fact_from_row, sensitivity_rank
from memory.types import EventKind, Fact, Sensitivity

log = logging.getLogger("chamberlain.memory.store")

MAX_RECALL = 100
MAX_QUERY_WORDS = 16


# The recall blend (see MemoryStore.recall): relevance × (1 + boosts); the boosts add at most
# RECENCY_WEIGHT + CONFIRMED_WEIGHT + USE_WEIGHT (×1.7 in all), so relevance stays in charge.
RECENCY_WEIGHT = 0.3
RECENCY_HALF_LIFE_S = 30 * 86400.0
CONFIRMED_WEIGHT = 0.2
USE_WEIGHT = 0.2
USE_CAP = 20
# How many of the best text matches recall re-ranks, widened while too few pass its filters.
RECALL_CANDIDATES = (32, 512)

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


def query_terms(text: str) -> list[str]:
    """One FTS5 expression per distinct word of untrusted text ([] when it holds no words).

    Each word becomes a quoted phrase, so nothing in the text is FTS syntax. Porter stemming
    matches "peanut"/"peanuts" but not "allergy"/"allergic" (stems "allergi" and "allerg"), so
    a word of five letters or more also gets a prefix term: its first len-2 letters, kept
    between 4 and 6 ("allergy" → '"allergy" OR "aller"*', matching "allergic", "allergies").
    Function words are dropped unless nothing else is left; at most 16 words are used.
    """
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    content = [w for w in words if w not in _STOPWORDS] or words
    terms: list[str] = []
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


class RecallMethods(StoreConnection):
    """``MemoryStore``'s recall (see the module docstring)."""

    _word_coverage: _WordCoverage | None = None

    def close(self) -> None:
        """Close the recall's scratch table too, then the database. Safe to call twice."""
        with self._lock:
            if self._word_coverage is not None:
                self._word_coverage.close()
                self._word_coverage = None
            super().close()

    def recall(
        self,
        query: str,
        *,
        limit: int = 5,
        max_sensitivity: Sensitivity = Sensitivity.SECRET,
        now: float | None = None,
    ) -> list[Fact]:
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
        rank = sensitivity_rank(Sensitivity(max_sensitivity))
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
        terms: list[str],
        match: str,
        rank: int,
        at: float,
        limit: int,
        *,
        count_use: bool,
    ) -> list[Fact]:
        candidates: list[_Candidate] = []
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
        facts: list[Fact] = []
        for candidate in candidates[:limit]:
            row = conn.execute(
                f"SELECT {SELECT_FACT} FROM facts f WHERE f.seq = ?", (candidate.seq,)
            ).fetchone()
            fact = fact_from_row(row)
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
    ) -> list[_Candidate]:
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

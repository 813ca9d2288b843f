"""``MemoryStore``: a fact's life from add, through consent and edits, to forgetting; reading facts.

``MemoryStore`` keeps facts, anchors and an event log in the database ``memory/db.py`` opened.
It is one class built from the package's parts: the transactions it writes through
(``connection``), ``recall``, ``anchors``, and ``export`` and import; this module holds the
facts' own write paths and reads. It adds facts (deduplicated by normalised text; a new value
for a single-valued slot supersedes the old one, which stays visible as history), moves them
through consent (pending → active, or rejected), and forgets them for good: a hard delete
across the tables and the full-text index, with ``secure_delete`` on, the index merged and the
WAL checkpointed, so the text is gone from the file. ``expire`` (run as every command starts)
looks first and writes only when something is due. Adds, edits and forgets commit at
``synchronous = FULL``; the user's own search and listing are reads, never a use of a fact.

What it must never do: decide sensitivity, category or slot (the caller passes them in; the
detectors live elsewhere), write an event that holds a fact's text (events carry a SHA-256
digest and ids only), keep any trace of a forgotten fact's text, store a credential (the
optional ``refuse`` hook is called on every text written, and a refusal writes nothing), or
import anything from the broker, the app or Qt. Nothing here is reachable from a model: the
broker decides who may call what.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memory.slots import normalise
from memory.store.anchors import AnchorMethods
from memory.store.errors import FactNotFoundError, FactStateError, InvalidInputError
from memory.store.export import ExportMethods
from memory.store.recall import RecallMethods, build_match_query
from memory.store.rows import (
    INSERT_FACT,
    MAX_EVIDENCE_CHARS,
    SELECT_FACT,
    fact_from_row,
    fact_record,
    merge_reasons,
    new_id,
    sensitivity_rank,
    text_digest,
)
from memory.types import (
    EventKind,
    Fact,
    FactSource,
    FactStatus,
    MemoryEvent,
    Sensitivity,
    highest,
)

log = logging.getLogger("chamberlain.memory.store")

DEFAULT_LIST_LIMIT = 1000
USED_EVENTS_KEEP_S = 365 * 86400

Action = Literal["added", "duplicate", "superseded"]


@dataclass(frozen=True)
class AddOutcome:
    """What add() did: stored a new fact, confirmed an existing one, or superseded older ones."""

    fact: Fact
    action: Action
    superseded: list[Fact] = field(default_factory=list)


@dataclass(frozen=True)
class Listing:
    """One page of facts, and how many matched in all: ``more`` says the page is not all."""

    facts: list[Fact]
    total: int

    @property
    def more(self) -> bool:
        return self.total > len(self.facts)


class MemoryStore(RecallMethods, AnchorMethods, ExportMethods):
    """Facts, anchors and events in one memory database. See the module docstring.

    Its methods live with what they do: ``recall`` in recall.py, the anchors in anchors.py,
    export and import in export.py, and the transactions all of them write through in
    connection.py (``StoreConnection``, the base of each part); the facts' own are here.
    """

    # --- facts by id, slot and history ----------------------------------------------------

    def _fetch(self, conn: sqlite3.Connection, fact_id: str) -> Fact | None:
        row = conn.execute(
            f"SELECT {SELECT_FACT} FROM facts f WHERE f.id = ?", (fact_id,)
        ).fetchone()
        return fact_from_row(row) if row else None

    def _require(self, conn: sqlite3.Connection, fact_id: str) -> Fact:
        fact = self._fetch(conn, fact_id)
        if fact is None:
            raise FactNotFoundError(f"There is no fact with id {fact_id!r} in memory.")
        return fact

    def _insert(self, conn: sqlite3.Connection, fact: Fact) -> None:
        conn.execute(INSERT_FACT, tuple(fact_record(fact).values()))

    def _same_slot_active(self, conn: sqlite3.Connection, fact: Fact) -> list[Fact]:
        if fact.slot is None:
            return []
        rows = conn.execute(
            f"SELECT {SELECT_FACT} FROM facts f WHERE f.subject = ? AND f.slot = ? "
            "AND f.status = 'active' AND f.id != ? ORDER BY f.created_at, f.seq",
            (fact.subject, fact.slot, fact.id),
        ).fetchall()
        return [fact_from_row(r) for r in rows]

    def _supersede(
        self, conn: sqlite3.Connection, olds: Sequence[Fact], new: Fact, at: float
    ) -> list[Fact]:
        done: list[Fact] = []
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
                f"SELECT {SELECT_FACT} FROM facts f WHERE f.norm_digest = ? "
                "AND f.status != 'superseded' AND (f.expires_at IS NULL OR f.expires_at > ?) "
                "ORDER BY f.status = 'active' DESC, f.created_at LIMIT 1",
                (norm_digest, now),
            ).fetchone()
            if row is not None:
                return self._confirm_duplicate(
                    conn, fact_from_row(row), level, reasons, status, now
                )

            fact = Fact(
                id=new_id(),
                text=text,
                subject=subject,
                slot=slot,
                category=category,
                sensitivity=level,
                reasons=merge_reasons(reasons),
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
                        "reasons": merge_reasons(
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
        merged = merge_reasons(existing.reasons, reasons if raised is level else ())
        conn.execute(
            "UPDATE facts SET confirmed_at = ?, sensitivity = ?, sensitivity_rank = ?, "
            "reasons = ? WHERE id = ?",
            (
                now,
                raised.value,
                sensitivity_rank(raised),
                json.dumps(merged, ensure_ascii=False),
                existing.id,
            ),
        )
        self._event(
            conn, EventKind.CONFIRM, existing.id, now, text=existing.text, detail="repeated"
        )
        superseded: list[Fact] = []
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

    def _activate(self, conn: sqlite3.Connection, fact: Fact, now: float) -> list[Fact]:
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
                id=new_id(),
                text=text,
                subject=old.subject,
                slot=old.slot,
                category=(category or old.category).strip() or "general",
                sensitivity=Sensitivity(sensitivity)
                if sensitivity is not None
                else old.sensitivity,
                reasons=merge_reasons(reasons if reasons is not None else old.reasons),
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
            f"SELECT {SELECT_FACT} FROM facts f{clause} "
            "ORDER BY f.created_at DESC, f.seq DESC LIMIT ?"
        )
        with self._read() as conn:
            rows = conn.execute(sql, (*params, max(0, int(limit)))).fetchall()
            total = int(conn.execute(f"SELECT count(*) FROM facts f{clause}", params).fetchone()[0])
        return Listing(facts=[fact_from_row(r) for r in rows], total=total)

    def facts(
        self,
        status: FactStatus | str | None = None,
        category: str | None = None,
        sensitivity: Sensitivity | str | None = None,
        include_superseded: bool = False,
        limit: int = DEFAULT_LIST_LIMIT,
    ) -> list[Fact]:
        """The facts of ``listing`` alone; use ``listing`` to learn whether there were more."""
        return self.listing(status, category, sensitivity, include_superseded, limit).facts

    @staticmethod
    def _filters(
        status: FactStatus | str | None,
        category: str | None,
        sensitivity: Sensitivity | str | None,
        include_superseded: bool,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
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

    def history(self, fact_id: str) -> list[Fact]:
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
    ) -> list[Fact]:
        """The user's search: every status (filters optional), best match first. Not a use of
        the facts, so no counter moves and no event is written."""
        match = build_match_query(text)
        if match is None:
            return []
        where, params = self._filters(status, category, sensitivity, include_superseded)
        sql = (
            f"SELECT {SELECT_FACT} FROM facts_fts JOIN facts f ON f.seq = facts_fts.rowid "
            "WHERE facts_fts MATCH ?"
        )
        for clause in where:
            sql += " AND " + clause
        sql += " ORDER BY bm25(facts_fts), f.created_at DESC LIMIT ?"
        with self._read() as conn:
            rows = conn.execute(sql, (match, *params, max(0, int(limit)))).fetchall()
        return [fact_from_row(r) for r in rows]

    def events(self, limit: int = 100, *, fact_id: str | None = None) -> list[MemoryEvent]:
        """The newest events first."""
        sql = "SELECT id, kind, fact_id, at, digest, detail FROM events"
        params: list[Any] = []
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

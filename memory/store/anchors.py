"""Anchors: the user's pinned notes, always in the prompt, in their order, within a budget.

Only the user pins, moves and unpins an anchor; ``anchors_prompt`` gives the anchors as the
system prompt takes them, the user's first N that fit, and lists what was left out.

What it must never do: send an anchor out of order or skip one to fit a later one, keep the
text of an unpinned anchor (it is deleted and the WAL scrubbed), write an event holding a text,
or pin a text the ``refuse`` hook refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.store.connection import StoreConnection
from memory.store.errors import AnchorNotFoundError
from memory.store.rows import anchor_from_row, new_id
from memory.types import Anchor, EventKind


@dataclass(frozen=True)
class AnchorsPrompt:
    """The anchors as they go into the system prompt, and what did not fit."""

    text: str
    used_chars: int
    budget_chars: int
    omitted: list[Anchor] = field(default_factory=list)


class AnchorMethods(StoreConnection):
    """``MemoryStore``'s anchors (see the module docstring)."""

    def add_anchor(self, text: str) -> Anchor:
        """Pin a note at the end of the anchors (only the user does this)."""
        text = self._check_text(text, "anchor")
        self._screen(text)
        now = self._now()
        with self._write("the anchor was not saved") as conn:
            position = int(conn.execute("SELECT count(*) FROM anchors").fetchone()[0])
            anchor = Anchor(id=new_id(), text=text, position=position, created_at=now)
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

    def anchors(self) -> list[Anchor]:
        """The anchors in prompt order."""
        with self._read() as conn:
            return self._anchors(conn)

    @staticmethod
    def _anchors(conn: sqlite3.Connection) -> list[Anchor]:
        rows = conn.execute(
            "SELECT id, text, position, created_at FROM anchors ORDER BY position, created_at"
        ).fetchall()
        return [anchor_from_row(r) for r in rows]

    @staticmethod
    def _renumber(conn: sqlite3.Connection, ordered: Sequence[Anchor]) -> list[Anchor]:
        result: list[Anchor] = []
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
        lines: list[str] = []
        omitted: list[Anchor] = []
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

"""How the store keeps facts and anchors in SQLite: columns, conversions, ids, text checks.

``FACT_COLUMNS`` are the columns a ``Fact`` has; a stored row (``_ROW_COLUMNS``) adds the digest
of the normalised text that dedupe looks up and the sensitivity's rank that recall filters on.
``check_text`` is what every written text goes through first (stripped, not empty, within its
limit, real UTF-8), and ``text_digest`` is what events record instead of a text.

What it must never do: touch a connection, a transaction or the disk (the callers run the SQL
these build, inside the store's own transactions), decide a fact's sensitivity, category or
slot (they arrive on the Fact), or let a text through ``check_text`` that SQLite or the digests
cannot take whole.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from memory.slots import normalise
from memory.store.errors import InvalidInputError
from memory.types import SENSITIVITY_ORDER, Anchor, Fact, Sensitivity

MAX_TEXT_CHARS = 4000
MAX_EVIDENCE_CHARS = 4000


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


# --- rows ----------------------------------------------------------------------------------------

FACT_COLUMNS = (
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
SELECT_FACT = ", ".join(f"f.{c}" for c in FACT_COLUMNS)


def fact_from_row(row: Sequence[Any]) -> Fact:
    values = dict(zip(FACT_COLUMNS, row, strict=False))
    values["reasons"] = json.loads(values["reasons"])
    return Fact.model_validate(values)


def fact_from_record(record: dict[str, Any]) -> Fact:
    return fact_from_row([record[c] for c in FACT_COLUMNS])


def fact_record(fact: Fact) -> dict[str, Any]:
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
        sensitivity_rank(fact.sensitivity),
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
    *FACT_COLUMNS[2 : FACT_COLUMNS.index("sensitivity") + 1],
    "sensitivity_rank",
    *FACT_COLUMNS[FACT_COLUMNS.index("sensitivity") + 1 :],
)
INSERT_FACT = (
    f"INSERT INTO facts ({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))})"
)


def anchor_from_row(row: Sequence[Any]) -> Anchor:
    return Anchor(id=row[0], text=row[1], position=row[2], created_at=row[3])


def new_id() -> str:
    return secrets.token_hex(8)


def sensitivity_rank(level: Sensitivity) -> int:
    return SENSITIVITY_ORDER[level]


def merge_reasons(*groups: Iterable[str]) -> list[str]:
    merged: list[str] = []
    for group in groups:
        for reason in group:
            if reason not in merged:
                merged.append(reason)
    return merged

"""What the person's choice does to a fact waiting for consent, wherever they make it (the chat
line's buttons, the Memory window): approve it, reject it, or replace it with their own words.

Each function is one call for the QtSession's io thread, so the check of what the fact is now
and the write are made together: the same fact may have been approved in the Memory window
while the chat line still offered its buttons. The sentences a failure carries name no id and no
command; the front ends show them as they are. This module never imports Qt and never decides
what may be remembered: the store refuses a credential, the detectors set the level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memory.db import MemoryStoreError
from memory.sensitivity.assessment import assess, combine
from memory.sensitivity.categories import normalise_category
from memory.store.errors import FactNotFoundError
from memory.store.facts import MemoryStore
from memory.types import Fact, FactStatus, highest

GONE = "It is no longer in memory: it was rejected or forgotten meanwhile."


@dataclass(frozen=True)
class Settled:
    """How a choice ended: "approved" (or approved before), "rejected" (or already gone),
    "edited" (the person's text, now remembered); `fact` is what is remembered now, if any."""

    outcome: Literal["approved", "rejected", "edited"]
    fact: Fact | None


def edit_fact(store: MemoryStore, fact: Fact, text: str) -> Fact:
    """Replace a fact's text with the person's, re-assessed: the new text can only keep or
    raise the level (an edit never quietly makes a fact shareable). A credential is refused
    by the store. The new version is remembered at once (the person wrote it)."""
    found = assess(text)
    if found.refused:
        raise MemoryStoreError(found.refused)
    level = highest(fact.sensitivity, combine(found.level, None, normalise_category(fact.category)))
    return store.edit(fact.id, text, sensitivity=level, reasons=[*fact.reasons, *found.reasons])


def approve(store: MemoryStore, fact_id: str) -> Settled:
    """Remember a waiting fact; one approved already stays as it is."""
    fact = store.get(fact_id)
    if fact is None or fact.status is FactStatus.SUPERSEDED:
        raise FactNotFoundError(f"Not approved. {GONE}")
    if fact.status is FactStatus.ACTIVE:
        return Settled("approved", fact)
    return Settled("approved", store.approve(fact_id))


def reject(store: MemoryStore, fact_id: str) -> Settled:
    """Keep nothing of the fact: a waiting one is rejected; one approved meanwhile (in another
    window) is forgotten, since "no" is what the person said last; one gone already stays gone."""
    fact = store.get(fact_id)
    if fact is not None and fact.status is FactStatus.PENDING:
        store.reject(fact_id)
    elif fact is not None and fact.status is FactStatus.ACTIVE:
        store.forget(fact_id)
    return Settled("rejected", None)


def edit(store: MemoryStore, fact_id: str, text: str) -> Settled:
    """Remember the person's own text in place of the fact (waiting or approved)."""
    fact = store.get(fact_id)
    if fact is None or fact.status is FactStatus.SUPERSEDED:
        raise FactNotFoundError(f"Your edit was not saved. {GONE}")
    return Settled("edited", edit_fact(store, fact, text))


def status_of(store: MemoryStore, fact_ids: list[str]) -> dict[str, FactStatus | None]:
    """What each fact is now (None: gone), for lines that show facts to catch up with a change
    made elsewhere."""
    found: dict[str, FactStatus | None] = {}
    for fact_id in fact_ids:
        fact = store.get(fact_id)
        found[fact_id] = fact.status if fact is not None else None
    return found

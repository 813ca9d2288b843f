"""Health: a term from `vocabulary.HEALTH_KINDS` (a condition, mental health, disability,
pregnancy or fertility, an allergy, medication, sexual health) or care whose existence reveals a
condition ("my therapist", "seeing a psychiatrist"), and whether it is said of a person
(secret), as a topic ("a book about diabetes": personal) or of an animal ("my dog is on
insulin": not personal data). The nearest telling word before the term in its clause decides;
a fact with no subject at all is about the user. A generic term ("diagnosed", "medication")
gives the reason only when the fact names nothing more specific.

What this module must never do: put anything in a reason but the kind and the vocabulary term
found ("health condition (diabetes)").
"""

from __future__ import annotations

from collections.abc import Iterator

from memory.sensitivity.text import Finding, Text
from memory.sensitivity.vocabulary import (
    HEALTH_CARE,
    HEALTH_FIRST,
    HEALTH_LINK,
    HEALTH_TERMS,
    HEALTH_TOPIC,
    HEALTH_TOPIC_AFTER,
    HUMAN_SUBJECT,
    PETS,
    POSSESSIVES,
)
from memory.types import Sensitivity

# Terms that say "health" without saying what: a more specific term in the text wins the reason.
_HEALTH_GENERIC = frozenset(
    {("diagnosis",), ("diagnosed",), ("medication",), ("medications",), ("meds",),
     ("prescription",), ("prescribed",)}
)  # fmt: skip


def health_findings(text: Text) -> Iterator[Finding]:
    """At most one finding: health said of a person (secret) or as a topic (personal)."""
    tokens = text.tokens
    if HEALTH_FIRST.isdisjoint(text.words) and HEALTH_CARE.isdisjoint(text.words):
        return
    weak: str | None = None
    strong: tuple[str, ...] | None = None
    for index, token in enumerate(tokens):
        if token in HEALTH_CARE:
            before = tokens[max(0, index - 2) : index]
            if any(w in POSSESSIVES or w.endswith("'s") for w in before[-1:]) or (
                len(before) == 2
                and before[0] in ("see", "sees", "seeing", "saw")
                and before[1] == "a"
            ):
                yield Finding(
                    Sensitivity.SECRET, f"mental or specialist health care ({token})", "health"
                )
                return
            continue
        if token not in HEALTH_FIRST:
            continue
        term = _health_term_at(text, index)
        if term is None:
            continue
        verdict = _health_link(text, index, index + len(term))
        if verdict == "animal":
            continue
        if verdict == "topic":
            weak = weak or " ".join(term)
            continue
        if strong is None or strong in _HEALTH_GENERIC:
            strong = term
        if strong not in _HEALTH_GENERIC:
            break
    if strong is not None:
        yield Finding(Sensitivity.SECRET, f"{HEALTH_TERMS[strong]} ({' '.join(strong)})", "health")
    elif weak is not None:
        yield Finding(Sensitivity.PERSONAL, f"mentions a health topic ({weak})", None)


def _health_term_at(text: Text, index: int) -> tuple[str, ...] | None:
    """The longest health term starting at token `index`, within one clause."""
    tokens, clauses = text.tokens, text.clauses
    for size in (3, 2, 1):
        candidate = tuple(tokens[index : index + size])
        if (
            len(candidate) == size
            and candidate in HEALTH_TERMS
            and clauses[index + size - 1] == clauses[index]
        ):
            return candidate
    return None


def _health_link(text: Text, start: int, end: int) -> str:
    """'person' when the term at tokens[start:end] is about a person, 'topic' when it is a
    subject of interest, 'animal' when about a pet."""
    tokens, clauses = text.tokens, text.clauses
    clause = clauses[start]
    if (
        end < len(tokens)
        and clauses[end] == clause
        and tokens[end] in HEALTH_TOPIC_AFTER
        and not (start > 0 and tokens[start - 1] in POSSESSIVES)
    ):
        return "topic"
    window = [tokens[i] for i in range(max(0, start - 8), start) if clauses[i] == clause]
    has_pet = any(w in PETS or (w.endswith("'s") and w[:-2] in PETS) for w in window)
    if has_pet and not any(w in HUMAN_SUBJECT for w in window):
        return "animal"
    for word in reversed(window):
        if word in HEALTH_TOPIC:
            return "topic"
        if word in HEALTH_LINK or word.endswith("'s"):
            return "person"
    # No subject at all: facts are about the user unless they say otherwise.
    return "person"

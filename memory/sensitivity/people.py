"""People's names: a name after a relationship ("my sister Anna"), before one ("Anna is my
sister"), or a first name from `vocabulary.FIRST_NAMES` in a person context ("call Anna", "Tom
from accounts", "Anna's birthday"). A name the fact gives a pet is not a person's: "our puppy
Charlie is scared of fireworks" stays low.

What this module must never do: take a word as a name outside a person context ("I love Harry
Potter" is low), or put the name in its reason (it is always "a person's name").
"""

from __future__ import annotations

from collections.abc import Iterator

from memory.sensitivity.text import Finding, Text, rx
from memory.sensitivity.vocabulary import (
    FIRST_NAMES,
    NAME_AFTER,
    NAME_BEFORE,
    NOT_NAMES,
    PET_ALT,
    PETS,
    REL_ALT,
    REL_MODS,
    RELATIONS,
)
from memory.types import Sensitivity

_REL_THEN_NAME_RE = rx(
    r"\b(?:my|our|his|her|their)\s+" + REL_MODS + rf"(?:{REL_ALT})"
    r"(?:(?P<via>'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+called|\s+named|\s+goes\s+by)"
    r"|\s*,)?\s+(?P<name>[^\W\d_][\w'-]*)"
)
_NAME_THEN_REL_RE = rx(
    r"(?<![\w'])(?P<name>[^\W\d_][\w'-]*)\s+(?:is|was|'s)\s+(?:my|our)\s+"
    + REL_MODS
    + rf"(?:{REL_ALT})\b"
)
_PET_NAME_RES = (
    rx(
        rf"\b(?:my|our|his|her|their|the)\s+(?:[\w-]+\s+){{0,2}}?(?:{PET_ALT})"
        r"(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+called|\s+named|\s*,)?\s+"
        r"(?P<name>[^\W\d_][\w'-]*)"
    ),
    rx(rf"(?P<name>[^\W\d_][\w'-]*)\s+is\s+(?:my|our)\s+(?:[\w-]+\s+){{0,2}}?(?:{PET_ALT})\b"),
)


def _plausible_name(word: str, *, named: bool) -> bool:
    lowered = word.lower()
    if lowered in NOT_NAMES or lowered in RELATIONS or lowered in PETS:
        return False
    return named or word[0].isupper() or lowered in FIRST_NAMES


def _pet_names(text: Text) -> set[str]:
    if PETS.isdisjoint(text.words):
        return set()
    names: set[str] = set()
    for pattern in _PET_NAME_RES:
        for match in pattern.finditer(text.text):
            names.add(match.group("name").lower())
    return names


def name_findings(text: Text) -> Iterator[Finding]:
    """At most one finding: the fact names a person (never a pet)."""
    pets = _pet_names(text)
    if not RELATIONS.isdisjoint(text.words):
        for match in _REL_THEN_NAME_RE.finditer(text.text):
            name = match.group("name")
            if name.lower() not in pets and _plausible_name(
                name, named=match.group("via") is not None
            ):
                yield Finding(Sensitivity.PERSONAL, "a person's name", "relationships")
                return
        for match in _NAME_THEN_REL_RE.finditer(text.text):
            name = match.group("name")
            if name.lower() not in pets and _plausible_name(name, named=False):
                yield Finding(Sensitivity.PERSONAL, "a person's name", "relationships")
                return
    if FIRST_NAMES.isdisjoint(text.words):
        return
    tokens = text.tokens
    for index, token in enumerate(tokens):
        base = token[:-2] if token.endswith("'s") else token
        if base not in FIRST_NAMES or base in pets:
            continue
        possessive = token != base
        before = tokens[index - 1] if index > 0 else ""
        after = tokens[index + 1] if index + 1 < len(tokens) else ""
        same_clause_before = index > 0 and text.clauses[index - 1] == text.clauses[index]
        same_clause_after = (
            index + 1 < len(tokens) and text.clauses[index + 1] == text.clauses[index]
        )
        if (
            possessive
            or (same_clause_before and before in NAME_BEFORE)
            or (same_clause_after and after in NAME_AFTER)
        ):
            yield Finding(Sensitivity.PERSONAL, "a person's name", "relationships")
            return

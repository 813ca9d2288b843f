"""The candidate fact as every detector reads it, and what a detector finds in it.

`Text` tokenises the fact once: lowercased words, the clause each word is in, the set of words
(with "'s" taken off too) that gates each rule, and whether any digit appears. `Finding` is what
a detector yields: a level, a reason a person can read, and the category it implies, if any.
`rx` compiles the detectors' patterns, case-insensitive unless a pattern says otherwise.

What this module must never do: change the text's offsets (quotes are normalised one character
for one, so a match's offsets are those of the raw text), or log the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.types import Sensitivity


def rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    """A detector's pattern, compiled once at import; case-insensitive unless told otherwise."""
    return re.compile(pattern, flags)


_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'"})
_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_CLAUSE_BREAK_RE = re.compile(r"[.;!?,:\n()\"]")
_DIGIT_RE = re.compile(r"\d")


class Text:
    """The candidate fact, tokenised once for every detector."""

    __slots__ = ("clauses", "has_digit", "text", "tokens", "words")

    def __init__(self, raw: str) -> None:
        # One character for one: match offsets stay those of the raw text.
        self.text = raw.translate(_QUOTES)
        tokens: list[str] = []
        clauses: list[int] = []
        clause = 0
        prev_end = 0
        for match in _WORD_RE.finditer(self.text):
            start = match.start()
            if _CLAUSE_BREAK_RE.search(self.text, prev_end, start):
                clause += 1
            prev_end = match.end()
            tokens.append(match.group().lower())
            clauses.append(clause)
        self.tokens = tokens
        self.clauses = clauses
        words = set(tokens)
        words.update(t[:-2] for t in tokens if t.endswith("'s"))
        self.words = frozenset(words)
        self.has_digit = _DIGIT_RE.search(self.text) is not None


@dataclass(frozen=True, slots=True)
class Finding:
    level: Sensitivity
    reason: str
    # The category this finding implies, or None when it should not decide the category.
    category: str | None

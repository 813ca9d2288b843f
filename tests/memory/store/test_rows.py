"""memory/store/rows.py: the text checks every written text goes through first (empty, too
long, not valid UTF-8), seen through the store's writes and ``check_text`` itself.
"""

from __future__ import annotations

import pytest

from memory.store.errors import (
    InvalidInputError,
)
from memory.store.rows import MAX_TEXT_CHARS, check_text
from memory.types import Sensitivity
from tests.support.memory_store import open_store

LOW, PERSONAL, SECRET = Sensitivity.LOW, Sensitivity.PERSONAL, Sensitivity.SECRET


@pytest.mark.parametrize("text", ["", "   ", "x" * 4001])
def test_empty_or_huge_text_is_refused(store, text):
    with pytest.raises(InvalidInputError):
        store.add(text, sensitivity=LOW)
    assert store.count() == 0


def test_text_that_is_not_valid_utf8_is_a_clear_error_not_a_crash(store):
    """`memory add $'bad \\xff utf8'`: Python keeps the byte as a lone surrogate."""
    bad = "bad \udcff utf8"
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        store.add(bad, sensitivity=LOW)
    fact = store.add("my dog is called Rex", sensitivity=LOW).fact
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        store.edit(fact.id, bad)
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        store.add_anchor(bad)
    assert [f.text for f in store.facts()] == ["my dog is called Rex"]
    # The user's own words kept as evidence are stored with the bad byte replaced.
    kept = store.add("my cat is called Tom", sensitivity=LOW, evidence=bad).fact
    assert kept.evidence == "bad ? utf8"


def test_a_megabyte_of_text_is_refused_on_its_length_before_any_detector_reads_it(tmp_path, clock):
    screened: list[str] = []

    def refuse(text: str) -> str | None:
        screened.append(text)
        return None

    store = open_store(tmp_path / "memory.db", False, clock, refuse=refuse)
    huge = "my dog is called Rex " * 50_000
    with pytest.raises(InvalidInputError, match=f"at most {MAX_TEXT_CHARS}"):
        check_text(huge)
    with pytest.raises(InvalidInputError, match="too long"):
        store.add(huge, sensitivity=LOW)
    assert screened == []
    assert check_text("  my dog is called Rex ") == "my dog is called Rex"
    store.close()

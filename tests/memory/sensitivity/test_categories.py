"""Tests for memory/sensitivity/categories.py: every fact gets one category from the set, and
its level is never below that category's floor.
"""

from __future__ import annotations

import pytest

from memory.sensitivity.assessment import assess, categorize
from memory.sensitivity.categories import CATEGORIES, CATEGORY_FLOORS, normalise_category
from memory.types import SENSITIVITY_ORDER, Sensitivity
from tests.memory.sensitivity_corpus import CORPUS, HOLDOUT

SECRET = Sensitivity.SECRET


def test_every_category_has_a_floor_and_categorize_stays_in_the_set() -> None:
    assert set(CATEGORIES) == set(CATEGORY_FLOORS)
    for example in CORPUS:
        assert categorize(example.text) in CATEGORIES
        assert categorize(example.text) == assess(example.text).category


def test_the_level_is_never_below_the_category_floor() -> None:
    for example in (*CORPUS, *HOLDOUT):
        found = assess(example.text)
        floor = CATEGORY_FLOORS[found.category]
        assert SENSITIVITY_ORDER[found.level] >= SENSITIVITY_ORDER[floor], example.text


def test_finance_facts_without_a_number_still_reach_the_finance_floor() -> None:
    found = assess("my salary is about forty grand")
    assert (found.category, found.level) == ("finance", SECRET)


@pytest.mark.parametrize(
    ("given", "expected"),
    [("Health", "health"), (" medical ", "health"), ("people", "relationships"), ("??", "general")],
)
def test_normalise_category(given: str, expected: str) -> None:
    assert normalise_category(given) == expected

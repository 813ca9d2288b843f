"""Tests for memory/sensitivity/numbers.py: a checksum, not the number of digits, decides
whether digits in a fact are a card number, however they are grouped or followed.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.sensitivity.assessment import assess
from memory.sensitivity.checksums import luhn_valid
from memory.types import Sensitivity

LOW = Sensitivity.LOW
SECRET = Sensitivity.SECRET


def test_a_sixteen_digit_number_failing_luhn_is_not_a_card() -> None:
    assert assess("the number 4111 1111 1111 1112").level is LOW
    found = assess("the number 4111 1111 1111 1111")
    assert found.level is SECRET
    assert "card number (passes the Luhn check)" in found.reasons


def test_a_card_followed_by_its_expiry_is_still_a_card() -> None:
    assert "card number (passes the Luhn check)" in assess("4111 1111 1111 1111 12 27").reasons


def _luhn_complete(body: list[int]) -> str:
    """Append the check digit that makes `body` pass Luhn."""
    for check in range(10):
        candidate = "".join(map(str, [*body, check]))
        if luhn_valid(candidate):
            return candidate
    raise AssertionError("unreachable: one check digit always fits")


@st.composite
def formatted_cards(draw: st.DrawFn) -> str:
    length = draw(st.integers(min_value=13, max_value=19))
    body = draw(st.lists(st.integers(0, 9), min_size=length - 1, max_size=length - 1))
    number = _luhn_complete(body)
    style = draw(st.sampled_from(["plain", "spaces", "dashes", "mixed"]))
    if style == "plain":
        return number
    rng = random.Random(draw(st.integers(0, 2**32)))
    groups: list[str] = []
    rest = number
    while rest:
        size = rng.randint(1, 6)
        groups.append(rest[:size])
        rest = rest[size:]
    if style == "spaces":
        return " ".join(groups)
    if style == "dashes":
        return "-".join(groups)
    return "".join(g + rng.choice([" ", "-"]) for g in groups[:-1]) + groups[-1]


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(card=formatted_cards(), template=st.sampled_from(["{}", "my card is {}", "{} exp soon"]))
def test_every_valid_luhn_card_is_at_least_secret(card: str, template: str) -> None:
    found = assess(template.format(card))
    assert found.level is SECRET
    assert "card number (passes the Luhn check)" in found.reasons

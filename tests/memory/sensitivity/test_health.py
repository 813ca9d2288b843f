"""Tests for memory/sensitivity/health.py: health said of a person is secret, as a topic
personal, and allergies count as health.
"""

from __future__ import annotations

from memory.sensitivity.assessment import assess
from memory.types import Sensitivity

PERSONAL = Sensitivity.PERSONAL
SECRET = Sensitivity.SECRET


def test_health_topic_without_a_person_is_personal_not_secret() -> None:
    assert assess("I read a book about diabetes").level is PERSONAL
    assert assess("I read a book about it because I have diabetes").level is SECRET
    assert assess("I'm worried about my diabetes").level is SECRET


def test_allergies_are_health_and_secret() -> None:
    found = assess("allergic to peanuts")
    assert found.level is SECRET
    assert found.category == "health"

"""Tests for memory/slots.py: which facts are single-valued (and so supersede each other), the
dedupe form of a fact, and the fact taken out of a "remember that …" request.

A wrong slot retires a fact the user still holds true, so the negative cases matter as much as
the positive ones: facts that say two things, negations, past tense, pets and other people.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.slots import SLOTS, detect_slot, fact_from_request, normalise

SLOTTED: list[tuple[str, str]] = [
    ("my name is Sam Patel", "user.name"),
    ("call me Sam", "user.name"),
    ("I'm called Alex", "user.name"),
    ("you can call me Jo", "user.name"),
    ("remember that my name's Priya", "user.name"),
    ("I live in Leeds", "user.home_city"),
    ("i live in leeds now", "user.home_city"),
    ("I moved to Bristol last month", "user.home_city"),
    ("I'm based in Berlin", "user.home_city"),
    ("fyi we live in Cardiff", "user.home_city"),
    ("I live at 12 High Street, Leeds LS1 4AP", "user.address"),
    ("my address is 4 Elm Close, Bath", "user.address"),
    ("my new address: Flat 2, 9 Mill Lane, York", "user.address"),
    ("I work at Acme", "user.employer"),
    ("I work for Marks and Spencer", "user.employer"),
    ("my employer is Globex", "user.employer"),
    ("fyi I work at Acme now", "user.employer"),
    ("I work as a nurse", "user.job_title"),
    ("I'm a nurse", "user.job_title"),
    ("I'm a senior software engineer", "user.job_title"),
    ("I'm a plumber by trade", "user.job_title"),
    ("I'm retired", "user.job_title"),
    ("my birthday is 3 May", "user.birthday"),
    ("I was born on 1990-05-03", "user.birthday"),
    ("I was born in 1990", "user.birthday"),
    ("my wife is Anna", "user.partner"),
    ("my wife is called Anna", "user.partner"),
    ("my husband's name is Gareth", "user.partner"),
    ("Anna is my wife", "user.partner"),
    ("my wife Anna", "user.partner"),
    ("my partner is Jo Smith", "user.partner"),
    ("I'm married to Chris", "user.partner"),
    ("my email is sam@example.com", "user.email"),
    ("my email address is sam@example.com", "user.email"),
    ("email me at sam@example.com", "user.email"),
    ("my work email is s.patel@globex.com", "user.work_email"),
    ("my mobile number is 07700 900123", "user.phone"),
    ("call me on +44 7700 900123", "user.phone"),
    ("my work phone is (415) 555-2671", "user.work_phone"),
    ("my timezone is Europe/London", "user.timezone"),
    ("I'm on UK time", "user.timezone"),
    ("I'm in the EST time zone", "user.timezone"),
]

UNSLOTTED: list[str] = [
    # two statements in one fact: superseding either would retire the other
    "my name is Sam and I live in Leeds",
    "I work at Acme and I love it",
    "I live in Leeds but I work in York",
    # negation, past tense, questions
    "I don't live in Leeds anymore",
    "I used to live in Leeds",
    "I live in Leeds no longer",
    "I no longer work at Acme",
    "where do I live?",
    "call me back tomorrow",
    # not the value itself
    "I live in a flat",
    "my address is sam@example.com",
    "I was born in Leeds",
    "I'm a big fan of jazz",
    "my job is boring",
    "I'm in London",
    # about someone else, or something the user can have several of
    "my wife is pregnant",
    "my partner Jo is vegan",
    "my ex-wife is called Jo",
    "my brother is called Tom",
    "my mum's birthday is 12 June",
    "my dog is called Rex",
    "I like green tea",
    "",
]


@pytest.mark.parametrize(("text", "slot"), SLOTTED)
def test_detect_slot(text: str, slot: str) -> None:
    assert detect_slot(text) == slot


@pytest.mark.parametrize("text", UNSLOTTED)
def test_no_slot(text: str) -> None:
    assert detect_slot(text) is None


def test_every_slot_is_reachable() -> None:
    assert {slot for _, slot in SLOTTED} == set(SLOTS)


def test_a_new_value_gets_the_same_slot_as_the_old() -> None:
    """What supersession relies on: two values of the same thing, phrased differently."""
    assert detect_slot("I live in Leeds") == detect_slot("I'm based in York now")
    assert detect_slot("my email is a@example.com") == detect_slot("email me at b@example.org")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My dog is called Rex.", "my dog is called rex"),
        ('"That my dog is called Rex."', "my dog is called rex"),
        ("that my dog is called Rex", "my dog is called rex"),
        ("  my   dog\tis called\nRex!! ", "my dog is called rex"),
        ("  «My  Dog»\tis REX.  ", "my dog» is rex"),
        ("My dog’s name is Rex", "my dog's name is rex"),
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # casefold, not lower
        ("ＲＥＸ", "rex"),  # NFKC
        ("...", ""),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_normalise_makes_duplicates_equal() -> None:
    forms = [
        "my dog is called Rex",
        "My dog is called Rex.",
        "that my dog is called Rex!",
        "  my dog  is called rex ",
    ]
    assert len({normalise(f) for f in forms}) == 1
    assert normalise("my dog is called Rex") != normalise("my dog is called Max")


@pytest.mark.parametrize(
    ("request_text", "fact"),
    [
        ("that my dog is called Rex", "my dog is called Rex"),
        ("I like green tea", "I like green tea"),
        ("remember that I like green tea, thanks", "I like green tea"),
        ("/remember my dog is Rex", "my dog is Rex"),
        ("Remember: my wife is Anna.", "my wife is Anna"),
        ("can you remember that my wife is Anna please", "my wife is Anna"),
        ("don't forget I'm vegetarian!", "I'm vegetarian"),
        ("note to self: the bins go out on Tuesday", "the bins go out on Tuesday"),
        ("keep in mind that I hate coriander", "I hate coriander"),
        ("that car is mine", "that car is mine"),  # "that" is the subject here
        ("remember to buy milk", "remember to buy milk"),  # a reminder, kept whole
        ("remember", ""),
        ("/remember", ""),
        ("   ", ""),
    ],
)
def test_fact_from_request(request_text: str, fact: str) -> None:
    assert fact_from_request(request_text) == fact


def test_fact_from_request_keeps_the_user_s_words() -> None:
    """Conservative: no pronoun rewriting, no case changes inside the fact."""
    text = "my Partner's name is JO and she likes the BBC"
    assert fact_from_request(text) == text


@settings(deadline=None, max_examples=300)
@given(st.text(max_size=300))
def test_random_text_never_crashes(text: str) -> None:
    slot = detect_slot(text)
    assert slot is None or slot in SLOTS
    once = normalise(text)
    assert normalise(once) == once
    assert isinstance(fact_from_request(text), str)

"""Tests for memory/sensitivity/assessment.py, the detectors' entry points: what they find, what
is refused, how the model's label and the category floor combine, and that no input can make
them slow or crash.

The corpus (tests/memory/sensitivity_corpus.py) gives the accuracy figures; the unit tests
below pin the guarantees users rely on: credentials are never stored, reasons never repeat what
the user said, and the model can only raise a level. The checksums, numbers, health and
categories tests sit beside this file.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.sensitivity.assessment import (
    REFUSAL_MESSAGE,
    assess,
    combine,
    parse_level,
    refuse_credentials,
)
from memory.sensitivity.categories import CATEGORIES
from memory.sensitivity.vocabulary import FIRST_NAMES
from memory.types import Sensitivity
from tests.memory.sensitivity_corpus import CORPUS, HOLDOUT, Example

LOW = Sensitivity.LOW
PERSONAL = Sensitivity.PERSONAL
SECRET = Sensitivity.SECRET


def _correct(example: Example) -> bool:
    found = assess(example.text)
    return (
        found.level is example.level
        and (found.refused is not None) == example.refused
        and (example.category is None or found.category == example.category)
    )


# --------------------------------------------------------------------------------- corpus


def test_corpus_is_big_enough_and_covers_every_level() -> None:
    assert len(CORPUS) >= 120
    for level in Sensitivity:
        assert sum(1 for e in CORPUS if e.level is level and not e.refused) >= 20, level
    assert sum(1 for e in CORPUS if e.refused) >= 25


def test_corpus_accuracy() -> None:
    # Measured: 197/197 = 100% (level, refusal and, where labelled, category). The corpus was
    # written alongside the detectors, so this is an upper bound; see the held-out figure.
    correct = [e for e in CORPUS if _correct(e)]
    accuracy = len(correct) / len(CORPUS)
    assert accuracy >= 0.97, [e.text for e in CORPUS if not _correct(e)]


def test_holdout_accuracy() -> None:
    """Written after the detectors were frozen. First run, untuned: 51/60 = 85.0%, with 2 of 9
    credentials missed ("wifi pass: …", "backup codes for google: …"). Every miss was then
    fixed with a general rule (short password labels, a label glued to its colon, "moving
    to", "hayfever", "X and I are", debts, family words used as names, "new job at"), so the
    set is no longer held out: the floor guards against regressions only."""
    correct = [e for e in HOLDOUT if _correct(e)]
    assert len(correct) / len(HOLDOUT) >= 0.95, [e.text for e in HOLDOUT if not _correct(e)]


@pytest.mark.parametrize(
    "text", [e.text for e in (*CORPUS, *HOLDOUT) if e.refused], ids=lambda t: t[:40]
)
def test_every_credential_in_the_corpus_is_refused(text: str) -> None:
    found = assess(text)
    assert found.refused is not None, found
    assert found.level is SECRET
    assert refuse_credentials(text) == found.refused


@pytest.mark.parametrize(
    "text", [e.text for e in (*CORPUS, *HOLDOUT) if not e.refused], ids=lambda t: t[:40]
)
def test_no_ordinary_fact_in_the_corpus_is_refused(text: str) -> None:
    assert refuse_credentials(text) is None
    assert assess(text).refused is None


def test_reasons_never_repeat_numbers_or_names_from_the_fact() -> None:
    """Reasons are shown and logged; they come from a fixed vocabulary, never the user's words."""
    for example in (*CORPUS, *HOLDOUT):
        found = assess(example.text)
        shown = " ".join([*found.reasons, found.refused or ""]).lower()
        assert not any(c.isdigit() for c in shown), (example.text, shown)
        for word in example.text.replace("'", " ").split():
            if word.lower() in FIRST_NAMES:
                assert word.lower() not in shown.split(), (example.text, shown)


# ---------------------------------------------------------------------------- credentials


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("my password is hunter2", "hunter2"),
        ("the wifi password is BlueSky2024!", "BlueSky2024!"),
        (
            "my openai key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv",
            "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv",
        ),
        ("my PIN is 1234", "1234"),
    ],
)
def test_refusal_message_is_clear_and_never_holds_the_secret(text: str, secret: str) -> None:
    found = assess(text)
    assert found.refused is not None
    assert REFUSAL_MESSAGE in found.refused
    assert "password manager" in found.refused
    assert secret not in found.refused
    assert all(secret not in reason for reason in found.reasons)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("my password is hunter2", "a password"),
        ("pw: correcthorsebatterystaple", "a password"),
        ("my PIN is 1234", "a PIN"),
        ("github token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "an API key or token"),
        ("AKIAIOSFODNN7EXAMPLE", "an API key or token"),
        ("xoxb-123456789012-abcdefghijkl", "an API key or token"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl", "an API"),
        ("Bearer abcdefghijklmnopqrstuvwxyz123456", "an API key or token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA", "a private key"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "a private key"),
        ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 me@host", "an SSH key"),
        ("recovery codes: 1234-5678 2345-6789", "recovery or backup codes"),
        ("seed phrase: abandon ability able about above absent", "a recovery or seed phrase"),
        ("https://sam:s3cret@example.com/repo.git", "a password in a web address"),
        ("the door code is 4821", "a door or security code"),
        ("cvv 123", "a card security code"),
        ("security answer: fluffy", "a security answer"),
        ("Q8fZ3kLm9Pw2Xy7RtV4nB6cD1sH5jK0aE", "a key or token"),
    ],
)
def test_each_credential_detector(text: str, kind: str) -> None:
    message = refuse_credentials(text)
    assert message is not None
    assert kind in message


@pytest.mark.parametrize(
    "text",
    [
        "remind me to change my password on Friday",
        "Bitwarden is my password manager",
        "my password is stored in Bitwarden",
        "the password reset email went to spam",
        "the area code is 0161",
        "error code 404 means not found",
        "the meeting code for zoom is 834 2291 0042",
        "my keys are in the blue bowl",
        "I use 2FA on everything",
        "the seed potatoes go in in March",
        "ThisIsMyVeryLongCamelCaseVariableName2",  # words, not randomness
        "iPhone15ProMaxSpaceBlack256GB",
        # A git commit (hex, one case) named as one. A bare 40-hex run is a key to the shared
        # detector (the audit blanks it; GitHub's older tokens had that shape).
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "pin the tab",
    ],
)
def test_mentions_of_credentials_without_a_value_are_not_refused(text: str) -> None:
    assert refuse_credentials(text) is None


def test_a_credential_at_the_end_of_a_long_text_is_still_refused() -> None:
    text = "I like tea. " * 9_000 + "my password is hunter2"
    assert len(text) > 100_000
    assert refuse_credentials(text) is not None


# -------------------------------------------------------------------------- detectors


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("remember that I have diabetes", "health condition (diabetes)"),
        ("I'm allergic to peanuts", "allergy or intolerance (allergic)"),
        ("I was diagnosed with ADHD", "mental health (adhd)"),
        ("I'm on sertraline", "medication (sertraline)"),
        ("my wife is pregnant", "pregnancy or fertility (pregnant)"),
        ("I see a therapist", "mental or specialist health care (therapist)"),
        ("my email is sam@example.com", "email address"),
        ("call me on +44 20 7946 0958", "phone number"),
        ("my number is (415) 555-2671", "phone number"),
        ("07700 900123", "phone number"),
        ("my IBAN is GB82 WEST 1234 5698 7654 32", "bank account number (IBAN, valid checksum)"),
        ("my ssn is 536-22-8726", "US Social Security number"),
        ("NI number AB 12 34 56 C", "UK National Insurance number"),
        ("passport no. 502135326", "passport number"),
        ("I'm a practising Catholic", "religion (catholic)"),
        ("I vote Green", "political opinion"),
        ("I'm gay", "sexual orientation or gender identity"),
        ("I'm of Pakistani descent", "racial or ethnic origin"),
        ("I'm a member of Unison", "trade-union membership"),
        ("I did a 23andMe DNA test", "genetic data"),
        ("my wife Anna", "relationship (wife)"),
        ("Anna is my sister", "a person's name"),
        ("call Anna back", "a person's name"),
        ("I live at 12 High Street", "home address"),
        ("send it to 221B Baker Street", "street address"),
        ("it's LS1 4AP", "postcode"),
        ("I live in Leeds", "where you live or are"),
        ("my birthday is 3 May", "date of birth"),
        ("I work at Acme", "employer"),
        ("I read a book about diabetes", "mentions a health topic (diabetes)"),
    ],
)
def test_detector_reason(text: str, reason: str) -> None:
    assert reason in assess(text).reasons


@pytest.mark.parametrize(
    "text",
    [
        "my dog is called Rex",
        "my dog is on insulin",  # an animal's health is not personal data
        "our puppy Charlie is scared of fireworks",  # a pet with a person's name
        "I love Harry Potter",
        "my favourite band is Queen",
        "the church hall is booked on Saturday",
        "I'm white-water rafting next weekend",
        "I'm straight out of ideas",
        "I like Python",
    ],
)
def test_things_that_only_look_personal_are_low(text: str) -> None:
    found = assess(text)
    assert found.level is LOW, found


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("the cancer research fun run is on Sunday", PERSONAL),
        ("my son's inhaler", SECRET),
        ("I'm Catholic", SECRET),
        ("my wife votes Green", SECRET),
        ("the meeting is at the church hall", LOW),
        ("I'm French", PERSONAL),
        ("I'm non-binary", SECRET),
        ("my pronouns are they/them", PERSONAL),
        ("my dentist is on Elm Street", PERSONAL),
        ("my oncologist is Dr Reed", SECRET),
        ("my mother's maiden name is Smith", PERSONAL),
        ("area code 0161", LOW),
        ("the code to the front door is 2580", SECRET),
    ],
)
def test_borderline_choices_documented_in_the_module(text: str, level: Sensitivity) -> None:
    assert assess(text).level is level


def test_the_issue_examples() -> None:
    assert assess("my dog is called Rex").level is LOW
    diabetes = assess("I have diabetes")
    assert (diabetes.level, diabetes.category, diabetes.refused) == (SECRET, "health", None)
    assert assess("my password is hunter2").refused is not None


# -------------------------------------------------------------------------------- combine


@pytest.mark.parametrize(
    ("detected", "label", "category", "expected"),
    [
        (LOW, None, "general", LOW),
        (LOW, "secret", "general", SECRET),  # the model may raise
        (LOW, Sensitivity.PERSONAL, "general", PERSONAL),
        (LOW, " SECRET\n", "general", SECRET),  # case and whitespace are tolerated
        (SECRET, "low", "general", SECRET),  # ...never lower
        (PERSONAL, "low", "general", PERSONAL),
        (LOW, "definitely fine", "general", LOW),  # garbage is ignored
        (PERSONAL, "", "general", PERSONAL),
        (LOW, None, "health", SECRET),  # the category floor
        (LOW, "low", "finance", SECRET),
        (LOW, None, "contact", PERSONAL),
        (LOW, None, "pet", LOW),
        (LOW, None, "no such category", LOW),
        (PERSONAL, "low", "Health", SECRET),
    ],
)
def test_combine(
    detected: Sensitivity, label: Sensitivity | str | None, category: str, expected: Sensitivity
) -> None:
    assert combine(detected, label, category) is expected


@pytest.mark.parametrize("garbage", [3, 2.5, ["secret"], {"level": "low"}, object(), b"low"])
def test_combine_ignores_labels_of_the_wrong_type(garbage: object) -> None:
    """The model's JSON is untrusted: a label of any type must not crash or lower the level."""
    assert combine(PERSONAL, garbage, "general") is PERSONAL  # type: ignore[arg-type]
    assert parse_level(garbage) is None


def test_nothing_the_user_said_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="chamberlain")
    assess("my password is hunter2 and I have diabetes")
    refuse_credentials("my password is hunter2")
    combine(LOW, "hunter2 is a nice password", "general")
    assert "hunter2" not in caplog.text
    assert "diabetes" not in caplog.text


# ------------------------------------------------------------------- size and robustness

_LONG_INPUTS = {
    "letters": "a" * 100_000,
    "digits": "1" * 100_000,
    "digit groups": "1 " * 50_000,
    "dashed digits": "1-" * 50_000,
    "at signs": "a@" * 50_000,
    "domains": "@a.aa.aa " * 11_000,
    "dots": "a." * 50_000,
    "jwt starts": "eyJ-" * 25_000,
    "relations": "my wife is " * 10_000,
    "password words": "password is " * 9_000,
    "mixed case": "Ab1-" * 25_000,
    "postcodes": "AB12 " * 20_000,
    "nino": "AB123456C " * 10_000,
    "phone": "+1 " * 33_000,
    "street": "12 aa " * 17_000,
    "apostrophes": "a'" * 50_000,
    "code words": "code " * 20_000,
}


@pytest.mark.parametrize("name", sorted(_LONG_INPUTS))
def test_long_inputs_return(name: str) -> None:
    """100 KB pastes of shapes that make careless regexes backtrack; timing-free on purpose
    (bench/ measures speed): quadratic behaviour would hit the suite's timeout."""
    text = _LONG_INPUTS[name]
    assert len(text) >= 99_000
    found = assess(text)
    assert found.category in CATEGORIES


@settings(deadline=None, max_examples=300)
@given(
    text=st.one_of(
        st.text(max_size=400),
        st.text(alphabet="ab1 -+@.:/'\n_=AB9xyzé€", max_size=400),
    )
)
def test_random_text_never_crashes(text: str) -> None:
    found = assess(text)
    assert found.level in Sensitivity
    assert found.category in CATEGORIES
    assert (found.refused is None) == (refuse_credentials(text) is None)
    assert combine(found.level, None, found.category) is found.level

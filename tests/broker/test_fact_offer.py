"""broker/fact_offer.py: which of a person's own sentences are offered to be remembered when
nothing kept them. Messages written for this test (none from any evaluation corpus)."""

from __future__ import annotations

import pytest

from broker.fact_offer import (
    MAX_MESSAGE_CHARS,
    OFFER_SURE,
    forget_request,
    kept_words,
    offer_of,
)


@pytest.mark.parametrize(
    ("message", "offered"),
    [
        ("I'm allergic to shellfish. Please don't forget that.", "I'm allergic to shellfish."),
        ("heads up: I moved to Bristol last month", "I moved to Bristol last month."),
        ("just so you know my wife's name is Priya", "My wife's name is Priya."),
        ("fyi vegan now", "Vegan now."),
        ("call me Sam from now on", "Call me Sam."),
        ("I prefer short answers", "I prefer short answers."),
        ("my birthday is 3 March", "My birthday is 3 March."),
        ("I'm a nurse", "I'm a nurse."),
        # The statement of a mixed message; its question is not offered.
        ("I live in Leeds. What's the weather like there tomorrow?", "I live in Leeds."),
        ("note: dentist appointment moved to friday", "Dentist appointment moved to friday."),
        # A misspelt "remember", a keep-marker's clause cut off, French as people mix it in.
        ("rember my cats name is Pixel", "My cats name is Pixel."),
        (
            "I moved to a standing desk, so keep that in mind for posture tips",
            "I moved to a standing desk.",
        ),
        ("souviens-toi que je suis allergique aux arachides", "Je suis allergique aux arachides."),
    ],
)
def test_a_lasting_fact_or_one_marked_to_keep_is_offered(message: str, offered: str) -> None:
    assert offer_of(message) == offered


@pytest.mark.parametrize(
    "message",
    [
        "I'm tired",  # a passing mood
        "I hate this printer",
        "I'm a bit confused about this",
        "what's the capital of France?",
        "list files in ~/Documents",
        "can you tell me where I live?",
        "thanks!",
        "Please don't forget that.",  # a marker with nothing to keep
        "remember to include hidden files: list ~/.config",  # an instruction, not a fact
        "remember when we fixed the printer? it broke again",
        "whats the weather in leeds",
        "",
    ],
)
def test_questions_requests_and_passing_remarks_are_not_offered(message: str) -> None:
    assert offer_of(message) is None


def test_a_pasted_essay_is_not_offered() -> None:
    assert offer_of("I live in Leeds. " * (MAX_MESSAGE_CHARS // 10)) is None


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        ("my shoe size is 9 UK, keep it for future", "my shoe size is 9 UK"),
        ("our bins go out on tuesdays now, save please", "our bins go out on tuesdays now"),
        ("I'm coeliac btw, so keep that in mind for recipes", "I'm coeliac"),
        ("kumbuka: my sister lives in Mombasa", "my sister lives in Mombasa"),
        ("save my library card number: 29384756", "my library card number: 29384756"),
        ("my router is upstairs just so u know", "my router is upstairs"),
        # Forgetting the old, then the new: the new is what is kept.
        ("forget what I said about Leeds, I live in York now", "I live in York now"),
        ("Forget my old number; my mobile is 07700 900456.", "my mobile is 07700 900456."),
        # The new words lean on the old: all is kept.
        (
            "forget my old address, I don't live there anymore",
            "forget my old address, I don't live there anymore",
        ),
        # Only words pointing at something said before: no fact of their own.
        ("keep that in mind for me", ""),
        # "keep" inside the fact is not a keep word.
        ("I keep bees in the garden", "I keep bees in the garden"),
        # Words to the assistant about the fact, pointing back at it, are not the fact.
        (
            "I'm allergic to penicillin. not a joke, put it somewhere you'll find it",
            "I'm allergic to penicillin",
        ),
        (
            "My doctor is Dr. Patel at the Venice clinic. Write that down.",
            "My doctor is Dr. Patel at the Venice clinic",
        ),
        ("My son Leo is 7 now. Make sure you hang on to that.", "My son Leo is 7 now"),
        ("my gym locker is 212 - jot it down for me", "my gym locker is 212"),
        ("Dog's name is Biscuit. Add that to what you know about me.", "Dog's name is Biscuit"),
        # "put" with no pointer back is the fact's own word.
        ("I put in 40 hours a week at the depot", "I put in 40 hours a week at the depot"),
    ],
)
def test_the_words_kept_are_the_fact_without_the_request_to_keep_it(
    message: str, kept: str
) -> None:
    assert kept_words(message) == kept


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("forget my home address. delete it. now.", ("my home address", "")),
        ("delete everything u know about my ex, her name and all", ("my ex", "")),
        ("please forget about my sister's phone number", ("my sister's phone number", "")),
        ("forget what I told you about my allergy", ("my allergy", "")),
        # what is true now is said after the break: it is kept, the old is offered to forget
        (
            "forget my old gmail, my email is now jo@example.org",
            ("my old gmail", "my email is now jo@example.org"),
        ),
        (
            "olvida lo que te dije de mi dirección en la Roma, ya me mudé a Coyoacán",
            ("mi dirección en la Roma", "ya me mudé a Coyoacán"),
        ),
        # leaning on what is forgotten: nothing stands on its own to keep
        ("forget my old address, I don't live there anymore", ("my old address", "")),
        ("forget it", None),  # what was said before: nothing named here
        ("my dog is called Rex", None),
        ("I forget my keys all the time", None),
    ],
)
def test_a_request_to_forget_names_what_goes_and_what_is_true_now(text, asked):
    assert forget_request(text) == asked


@pytest.mark.parametrize(
    ("text", "chance", "offered"),
    [
        # No word here looks lasting, but the classifier found a memory write likely enough.
        (
            "wife's called Morag. birthday 3rd june",
            OFFER_SURE,
            "Wife's called Morag. birthday 3rd june",
        ),
        ("wife's called Morag. birthday 3rd june", OFFER_SURE - 0.01, None),
        ("wife's called Morag, when is her name day?", 0.9, None),  # a question
        ("remember to call mum on sunday", 0.9, None),  # an instruction
        ("quit Excel, it is frozen", 0.9, None),  # a request
    ],
)
def test_a_statement_the_classifier_finds_likely_to_keep_is_offered_whole(text, chance, offered):
    assert offer_of(text, chance) == offered

"""How the rules and the learned classifier combine (broker/router/classifier.py).

The classifier is replaced by one that answers what each test says, so every promise is checked
against a known second reading: the rules' unambiguous forms are never overruled, a contested
keyword hit loses its direct action and falls below the refinement threshold, a sure classifier
overrules a keyword collision, a guess stays below the threshold, and nothing the classifier
says becomes a command, a fact or a direct action.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import broker.router.classifier as combination
from broker.intent_model import INTENTS, Prediction
from broker.router import (
    CLASSIFIER_SURE,
    CONTESTED_CONFIDENCE,
    DIRECT_ACTION_CONFIDENCE,
    OVERRULE,
    refine_with_model,
    route_heuristic,
    route_rules,
)
from broker.settings import Settings
from broker.types import Intent
from tests.broker.test_router import FakeModel, only

THRESHOLD = Settings().router.confidence_threshold


class Stub:
    """A classifier that reads every message as `intent` with `probability`, and counts calls."""

    def __init__(self, intent: Intent, probability: float) -> None:
        self.intent, self.probability, self.calls = intent, probability, 0

    def predict(self, text: str) -> Prediction:
        self.calls += 1
        rest = (1.0 - self.probability) / (len(INTENTS) - 1)
        ranked = [(self.intent, self.probability)] + [
            (other, rest) for other in INTENTS if other is not self.intent
        ]
        return Prediction(self.intent, self.probability, ranked)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Callable[[Intent, float], Stub]:
    def install(intent: Intent, probability: float) -> Stub:
        stub = Stub(intent, probability)
        monkeypatch.setattr(combination, "_classifier", lambda: stub)
        return stub

    return install


@pytest.mark.parametrize(
    "text",
    [
        "run `df -h`",  # a backticked command
        "/screen",  # a prefix
        "remember that my dog is called Rex",  # a fact in the person's words
        "take a screenshot",  # a short screen request
        "list files in ~/Documents",  # an explicit path with a file verb
    ],
)
def test_the_rules_unambiguous_forms_are_never_overruled(reads, text: str) -> None:
    rules = route_rules(text)
    stub = reads(Intent.CHAT_ONLY, 0.999)
    out = route_heuristic(text)
    assert out == rules
    assert out.intent is not Intent.CHAT_ONLY
    assert stub.calls == 0


def _keyword_hit() -> str:
    """A message the rules read at the direct-action level, with a direct action, but below
    the level they decide alone."""
    text = "what's my screen name on reddit, i told you before"
    rules = route_rules(text)
    assert DIRECT_ACTION_CONFIDENCE <= rules.confidence < combination.RULES_DECIDE
    assert rules.intent is Intent.SCREEN_OBSERVE
    return text


def test_a_sure_classifier_overrules_a_keyword_collision_and_its_direct_action(reads) -> None:
    text = _keyword_hit()
    reads(Intent.MEMORY_READ, OVERRULE)
    out = route_heuristic(text)
    assert (out.intent, out.source) == (Intent.MEMORY_READ, "classifier")
    assert out.arguments.action is None
    assert not out.needs_screen_read
    assert THRESHOLD <= out.confidence < DIRECT_ACTION_CONFIDENCE


def test_a_contested_keyword_hit_keeps_its_intent_but_not_its_direct_action(reads) -> None:
    text = _keyword_hit()
    reads(Intent.MEMORY_READ, OVERRULE - 0.01)
    out = route_heuristic(text)
    assert (out.intent, out.source) == (Intent.SCREEN_OBSERVE, "heuristic")
    assert out.confidence == CONTESTED_CONFIDENCE < THRESHOLD
    assert out.arguments.action is None


def test_agreement_makes_a_reading_surer_but_never_a_direct_action(reads) -> None:
    text = "any good hiking trails near seattle in winter"
    rules = route_rules(text)
    assert rules.confidence < THRESHOLD
    assert rules.arguments.action is None
    reads(rules.intent, 0.99)
    out = route_heuristic(text)
    assert out.intent is rules.intent
    assert THRESHOLD <= out.confidence < DIRECT_ACTION_CONFIDENCE
    assert out.arguments.action is None


def test_an_unsure_reading_is_decided_by_the_classifier_at_its_probability(reads) -> None:
    text = "any good hiking trails near seattle in winter"
    reads(Intent.LOOKUP_SEARCH, 0.7)
    out = route_heuristic(text)
    assert (out.intent, out.source, out.confidence) == (Intent.LOOKUP_SEARCH, "classifier", 0.7)
    assert out.needs_web
    assert out.needs_search
    assert out.arguments.query is None
    assert out.arguments.action is None


@pytest.mark.parametrize("intent", [Intent.SYSTEM_TASK, Intent.FILE_TASK, Intent.SCREEN_OBSERVE])
def test_a_guess_stays_below_the_threshold_and_names_no_command(reads, intent: Intent) -> None:
    reads(intent, CLASSIFIER_SURE - 0.01)
    out = route_heuristic("meh, whatever works")
    assert (out.intent, out.source) == (intent, "classifier")
    assert out.confidence <= CONTESTED_CONFIDENCE < THRESHOLD
    assert out.arguments.command is None
    assert out.arguments.action is None
    assert not out.needs_system_execute  # no command to run: a system task is a question


def test_the_classifier_never_picks_a_memory_write(reads) -> None:
    text = "my landlord is very strict about noise"
    rules = route_rules(text)
    assert rules.intent is not Intent.MEMORY_WRITE
    reads(Intent.MEMORY_WRITE, 0.99)
    out = route_heuristic(text)
    assert out.intent is rules.intent
    assert not out.needs_memory_write
    assert out.arguments.fact is None
    assert out.confidence < THRESHOLD


def test_a_long_paste_is_never_made_sure_by_the_classifier(reads) -> None:
    text = "please have a look at this: " + "lorem ipsum dolor sit amet " * 2000
    reads(Intent.LOOKUP_SEARCH, 0.99)
    out = route_heuristic(text)
    assert out.confidence <= 0.6  # a truncated view is never a clear request


def test_a_refining_model_cannot_take_a_classifier_guess_where_the_words_never_asked(
    reads,
) -> None:
    """The classifier guessed a system task for small talk, the model agrees: the rules'
    reading (chat) stands, below the threshold, not the guess."""
    text = "meh, whatever works"
    reads(Intent.SYSTEM_TASK, 0.4)
    base = route_heuristic(text)
    assert base.intent is Intent.SYSTEM_TASK
    model = FakeModel(only("system_task", needs_system_execute=True))
    out = refine_with_model(base, text, model, THRESHOLD)
    assert out.intent is Intent.CHAT_ONLY
    assert not out.needs_system_execute
    assert out.arguments.action is None


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        (
            "please store that my landlord is mr. okafor, 555-0134",
            "my landlord is mr. okafor, 555-0134",
        ),
        ("jot down that my bike frame is 56cm", "my bike frame is 56cm"),
        ("keep track of this: my therapist is Jordan Blake", "my therapist is Jordan Blake"),
        ("store this for later: policy number AB-552-1190", "policy number AB-552-1190"),
        ("just so you remember, my knee surgery was in 2022", "my knee surgery was in 2022"),
        ("i prefer metric units, remember that going forward", "i prefer metric units"),
    ],
)
def test_everyday_ways_of_asking_to_remember_keep_the_persons_words(text: str, fact: str) -> None:
    out = route_heuristic(text)
    assert (out.intent, out.arguments.fact) == (Intent.MEMORY_WRITE, fact)


@pytest.mark.parametrize(
    "text",
    [
        "store that file in ~/backup",
        "write down that error message for me",
        "save that as report.pdf",
        "keep track of my expenses this month?",
    ],
)
def test_storing_words_without_a_fact_about_the_person_are_not_memory_writes(text: str) -> None:
    assert route_rules(text).intent is not Intent.MEMORY_WRITE

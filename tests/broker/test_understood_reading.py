"""Saying what an unsure reading was taken as, when no model refined it.

With no model (or the embedded one, which does not refine), the rules' and classifier's best
guess stands; where another reading had real weight, the reply says what the message was taken
as and the words that ask for the other reading plainly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.router import route_heuristic, understood_reading
from broker.router.understood import ASK_PLAINLY, READINGS
from broker.session import Session
from broker.settings import Settings
from broker.types import Intent
from core.clock import ManualClock
from tests.support.classifier import read_as

# Each suggestion, filled in as a person would: it must route to the reading it names.
FILLED = {
    Intent.CHAT_ONLY: "/chat what is a black hole",
    Intent.LOOKUP_SEARCH: "search for the best budget keyboards",
    Intent.BROWSE_ONCE: "https://example.com/keyboards",
    Intent.ONE_SHOT_DISCOVERY: "why is my disk full",
    Intent.SCREEN_OBSERVE: "what's on my screen",
    Intent.FILE_TASK: "list files in ~/Documents",
    Intent.SYSTEM_TASK: "run `df -h`",
    Intent.MEMORY_READ: "what do you remember about my car",
    Intent.MEMORY_WRITE: "remember that my car is a blue golf",
}


@pytest.mark.parametrize("intent", list(Intent))
def test_every_suggested_wording_routes_to_the_reading_it_names(intent: Intent) -> None:
    suggestion = ASK_PLAINLY[intent]
    example = FILLED[intent]
    # The filled-in example uses the suggestion's own words.
    words = [w for w in suggestion.replace("…", " ").replace('"', " ").split() if len(w) > 3]
    assert any(w.lower().strip(".,`") in example.lower() for w in words) or intent in (
        Intent.BROWSE_ONCE,
        Intent.SYSTEM_TASK,
    )
    assert route_heuristic(example).intent is intent
    assert READINGS[intent]


def _session(tmp_path: Path) -> Session:
    return Session(home=tmp_path / "home", settings=Settings(), clock=ManualClock())


def test_without_a_model_an_unsure_search_says_how_to_just_talk(tmp_path, monkeypatch) -> None:
    read_as(monkeypatch, Intent.LOOKUP_SEARCH, 0.55)  # a guess: below the threshold
    turn = _session(tmp_path).ask("keyboards people seem to like")
    assert turn.router.intent is Intent.LOOKUP_SEARCH
    assert turn.router.confidence < Settings().router.confidence_threshold
    assert turn.reply.endswith(
        "I took this as a web search, not a question for me to answer from what I know — "
        "start with /chat to just talk."
    )


def test_without_a_model_an_unsure_chat_says_how_to_search(tmp_path, monkeypatch) -> None:
    text = "keyboards people seem to like"
    read_as(monkeypatch, Intent.CHAT_ONLY, 0.3)  # agrees with "nothing matched": still unsure
    # The classifier's runner-up: a search, with real weight.
    monkeypatch.setattr(
        "broker.router.understood._classifier",
        lambda weights=None: _Ranked([(Intent.CHAT_ONLY, 0.3), (Intent.LOOKUP_SEARCH, 0.25)]),
    )
    turn = _session(tmp_path).ask(text)
    assert turn.router.intent is Intent.CHAT_ONLY
    assert turn.reply.endswith(
        "I took this as a question for me to answer from what I know, not a web search — "
        'say "search for …" to look it up.'
    )


class _Ranked:
    def __init__(self, ranked: list[tuple[Intent, float]]) -> None:
        self.ranked = ranked

    def predict(self, text: str) -> _Ranked:
        return self


def test_no_note_when_no_other_reading_has_weight(monkeypatch) -> None:
    monkeypatch.setattr(
        "broker.router.understood._classifier",
        lambda weights=None: _Ranked([(Intent.CHAT_ONLY, 0.9), (Intent.LOOKUP_SEARCH, 0.05)]),
    )
    out = route_heuristic("keyboards people seem to like").model_copy(
        update={"intent": Intent.CHAT_ONLY, "confidence": 0.4}
    )
    assert understood_reading(out) is None


def test_a_sure_reading_a_direct_action_or_a_question_gets_no_note(tmp_path, monkeypatch) -> None:
    session = _session(tmp_path)
    docs = tmp_path / "Documents"
    docs.mkdir()
    (docs / "plan.txt").write_text("x\n")
    listed = session.ask(f"list files in {docs}")
    assert "I took this as" not in listed.reply
    read_as(monkeypatch, Intent.SYSTEM_TASK, 0.4)  # an unsure command: a question instead
    asked = session.ask("whatever, sort it out")
    assert asked.reply.startswith("I'm not sure what you'd like here")
    assert "I took this as" not in asked.reply

"""The learned follow-up reader (broker/router/followup_model.py) only ever chooses an intent:
whatever it chooses, a follow-up gets no direct action, no fact from an earlier turn and no
lower risk, and a weight file that cannot be used leaves the rules' reading. The readers here
are real `FollowupModel`s whose weights are set by hand to be sure of one intent (what a
trained file does for some messages), so each case does not hang on what training learned."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from broker.router import Earlier, route
from broker.router.followup_model import FollowupModel, followup_model
from broker.router.heuristic import (
    _route,
    decide_follow_up,
    read_in_conversation,
    route_in_conversation,
)
from broker.router.intent_model import INTENTS, IntentModelError
from broker.types import Intent

DOCS = Earlier(
    "list my documents",
    Intent.FILE_TASK,
    named=("~/Documents",),
    listed=("~/Documents/notes.txt", "~/Documents/budget.xlsx", "~/Documents/report.pdf"),
)


def sure_of(intent: Intent) -> FollowupModel:
    bias = tuple(12.0 if each is intent else 0.0 for each in INTENTS)
    return FollowupModel(buckets=1, bias=bias, weights={}, metadata={})


def read(text: str, earlier: list[Earlier]):  # type: ignore[no-untyped-def]
    return read_in_conversation(text, earlier, _route(text, classifier=True))


def test_another_intent_chosen_over_a_picked_file_keeps_the_file_but_no_direct_action() -> None:
    reading = read("open the second one", [DOCS])
    rules, _ = decide_follow_up(reading, None)
    assert rules.arguments.action == "read_file"
    out, followed = decide_follow_up(reading, sure_of(Intent.SYSTEM_TASK))
    assert followed
    assert out.intent is Intent.SYSTEM_TASK
    assert out.arguments.paths == ["~/Documents/budget.xlsx"]
    assert out.arguments.action is None
    assert out.arguments.command is None
    assert out.confidence < 0.85


@pytest.mark.parametrize("intent", [i for i in Intent if i is not Intent.BROWSE_ONCE])
def test_whatever_intent_the_reader_chooses_risk_never_drops_and_no_action_is_set(
    intent: Intent,
) -> None:
    reading = read("delete the second one", [DOCS])
    rules, _ = decide_follow_up(reading, None)
    out, _ = decide_follow_up(reading, sure_of(intent))
    assert out.intent is intent
    if intent is not rules.intent:
        assert out.arguments.action is None
        assert out.confidence < 0.85
    if intent in (Intent.FILE_TASK, Intent.SYSTEM_TASK):
        assert out.risk_level == "high"


def test_a_file_picked_from_a_listing_is_never_read_as_a_page_however_sure_the_reader() -> None:
    found = Earlier("find my resume", Intent.FILE_TASK, listed=("~/Documents/cv-2026.pdf",))
    out, _ = decide_follow_up(read("open it", [found]), sure_of(Intent.BROWSE_ONCE))
    assert (out.intent, out.arguments.paths) == (Intent.FILE_TASK, ["~/Documents/cv-2026.pdf"])


def test_a_plain_request_of_its_own_is_never_reread() -> None:
    out, _ = decide_follow_up(read("take a screenshot", [DOCS]), sure_of(Intent.CHAT_ONLY))
    assert out.intent is Intent.SCREEN_OBSERVE
    assert out.arguments.action == "screenshot"


def test_a_memory_write_chosen_by_the_reader_takes_no_fact_from_the_earlier_turns() -> None:
    earlier = [Earlier("read ~/secrets/pin.txt", Intent.FILE_TASK, named=("~/secrets/pin.txt",))]
    out, _ = decide_follow_up(read("ok", earlier), sure_of(Intent.MEMORY_WRITE))
    assert out.intent is Intent.MEMORY_WRITE
    assert out.arguments.fact is None
    assert out.arguments.paths == []


def test_a_prefix_is_never_reread() -> None:
    out, _ = decide_follow_up(read("/search cheap flights", [DOCS]), sure_of(Intent.FILE_TASK))
    assert out.intent is Intent.LOOKUP_SEARCH


def test_a_damaged_weight_file_leaves_the_rules_reading(tmp_path: Path) -> None:
    damaged = tmp_path / "followup_model.json"
    damaged.write_text('{"format": "chamberlain-followup-model", "version": 1, "weights": 3}')
    with pytest.raises(IntentModelError, match="follow-up model"):
        FollowupModel.load(damaged)
    assert followup_model(damaged) is None
    out, followed = route_in_conversation("the last one", [DOCS], followup_weights=damaged)
    rules, _ = decide_follow_up(read("the last one", [DOCS]), None)
    assert (out, followed) == (rules, True)
    assert out.arguments.paths == ["~/Documents/report.pdf"]


def test_the_shipped_reader_loads_and_reads_a_follow_up() -> None:
    model = followup_model()
    assert model is not None
    out = route("summarise the second one", earlier=[DOCS])
    assert (out.intent, out.arguments.paths) == (Intent.FILE_TASK, ["~/Documents/budget.xlsx"])


def test_the_shipped_reader_was_trained_on_the_dialogues_in_the_repository() -> None:
    """If a dialogues_tuning*.jsonl or a router_*.jsonl file changed, re-run
    scripts/train_followup_model.py."""
    model = followup_model()
    assert model is not None
    data = Path(__file__).parent / "data"
    files = sorted(data.glob("dialogues_tuning*.jsonl"))
    files += [data / "router_tuning.jsonl", data / "router_heldout.jsonl"]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    training = model.metadata["training"]
    assert training["sha256"] == digest.hexdigest(), "re-run scripts/train_followup_model.py"
    assert "dialogues_heldout.jsonl" not in training["dialogue_files"]

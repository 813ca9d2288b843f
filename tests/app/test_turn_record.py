"""The turn record both chats keep (app/turn_record.py), fed by a real turn: the real Session
with its router, runner and audit, the model scripted in process (tests/support/scripted_model.py,
a fake at the model's edge only). What is asserted is what the app shows when it opens a kept
conversation: each card's words and the reply's state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.turn_record import TITLE_CHARS, TurnRecord, conversation_title
from broker.conversation import Conversation
from broker.llm.base import ModelError
from broker.permissions import PermissionRequest, PromptDecision, Prompter, RulePrompter
from broker.session import Session
from broker.settings import Settings
from core.clock import ManualClock
from tests.support.cli import make_user
from tests.support.rig import Approving
from tests.support.scripted_model import Request, ScriptedModel, replies


class NobodyAnswers(RulePrompter):
    """The person is away: every permission question ends unanswered at its deadline (a stand-in
    for the clock running out, which the broker's own tests drive)."""

    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=False, reason="timeout")


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A person's home with ~/Documents/plan.txt (tests.support.cli's), as HOME."""
    monkeypatch.setenv("HOME", str(make_user(tmp_path / "person")))
    return tmp_path / "person"


def asked(
    tmp_path: Path, model: ScriptedModel, text: str, prompter: Prompter | None = None
) -> tuple[TurnRecord, Any, Any]:
    """`text` asked as a turn of a new conversation, recorded; (record, result, kept turn)."""
    settings = Settings()
    settings.router.model_refinement = False
    session = Session(
        home=tmp_path / "ch",
        settings=settings,
        clock=ManualClock(),
        model=model,
        prompter=prompter or Approving(),
    )
    record = TurnRecord(text)
    conversation = Conversation()
    try:
        result = session.ask(text, events=record.take, conversation=conversation)
    finally:
        session.close()
    return record, result, conversation.turns[-1]


def test_a_call_nobody_allowed_in_time_is_kept_as_not_run_not_as_timed_out_in_no_time(
    tmp_path: Path, person: Path
) -> None:
    # Reading a file named in the message is a direct action: the model is not asked.
    model = ScriptedModel(replies("never asked"))
    record, result, kept = asked(
        tmp_path, model, "read ~/Documents/plan.txt", prompter=NobodyAnswers()
    )

    assert record.turn_id is not None
    [call] = record.calls.values()
    assert call.tool == "file_read"
    assert not call.ran
    assert call.status_words() == "Not run"
    cards, meta = record.kept_meta(kept, result)
    assert cards[call.call_id]["duration_s"] is None
    assert cards[call.call_id]["status"] == "timeout"
    assert meta["details"]["intent"] == record.details.intent


def test_a_reply_that_could_not_be_given_is_kept_as_failed(tmp_path: Path, person: Path) -> None:
    def broken(request: Request) -> Any:
        raise ModelError("The model server answered HTTP 500: out of memory")

    record, result, kept = asked(tmp_path, ScriptedModel(broken), "tell me a story")
    assert result.failed
    _, meta = record.kept_meta(kept, result)
    # Reopened, the reply reads as the request that failed it was when it ended.
    assert meta["status"] == "failed"


def test_a_call_that_ran_keeps_its_result_on_its_card_and_not_beside_the_reply(
    tmp_path: Path, person: Path
) -> None:
    model = ScriptedModel(replies("never asked"))
    record, result, kept = asked(tmp_path, model, "read ~/Documents/plan.txt")

    [call] = record.calls.values()
    assert call.ran
    assert call.status == "ok"
    assert "Call the bank" in (call.result or "")
    cards, meta = record.kept_meta(kept, result)
    assert "Call the bank" in cards[call.call_id]["result"]
    # Its exchange is in the conversation, so its card is kept with it, not with the reply.
    assert meta["tools"] == []


def test_a_conversation_is_titled_by_its_first_message_on_one_line_and_shortened() -> None:
    assert conversation_title("  what's\nthe   capital? ") == "what's the capital?"
    long = conversation_title("word " * 40)
    assert len(long) == TITLE_CHARS
    assert long.endswith("…")

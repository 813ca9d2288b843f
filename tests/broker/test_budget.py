"""Fitting a turn into the model's context: what is kept, what is cut, and the person is told."""

from __future__ import annotations

import pytest

from broker.llm.budget import (
    CUT_NOTE,
    DROPPED_NOTE,
    describe_cuts,
    estimate_tokens,
    fit,
    message_tokens,
)
from broker.llm.embedded import EmbeddedChatModel, embedded_problem


def words(text: str) -> int:
    """A tokenizer stand-in that is easy to reason about: one token a word."""
    return len(text.split())


def turn(*results: str) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You help. Anchor: the user is vegan."},
        {"role": "user", "content": "summarise my notes please"},
    ]
    for n, result in enumerate(results):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "file_read", "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": result})
    return messages


def test_a_request_that_fits_is_sent_as_it_is() -> None:
    messages = turn("short result")
    fitted = fit(messages, context_tokens=4096, reply_tokens=512, count=words)
    assert fitted.messages == messages
    assert fitted.cuts == []
    assert not fitted.over


def test_older_tool_results_go_first_and_the_system_prompt_and_message_stay() -> None:
    old, middle, newest = ("old " * 300), ("middle " * 300), ("newest " * 100)
    messages = turn(old, middle, newest)
    total = sum(message_tokens(m, words) for m in messages)
    # Room for everything but about one big result.
    fitted = fit(messages, context_tokens=total - 250 + 100, reply_tokens=100, count=words)
    contents = [m.get("content") for m in fitted.messages]
    assert contents[0] == messages[0]["content"]  # system prompt, anchors included
    assert contents[1] == messages[1]["content"]  # the person's message
    assert DROPPED_NOTE in contents  # the oldest result
    assert contents[-1] == newest  # the one the model is about to use
    assert middle in contents  # cut only as far as needed
    assert fitted.cuts == ["an earlier tool result"]
    assert not fitted.over
    assert [m["role"] for m in fitted.messages] == [m["role"] for m in messages]


def test_the_newest_result_is_cut_in_the_middle_keeping_its_head_and_tail() -> None:
    result = "HEAD " + "filler " * 5000 + "TAIL"
    fitted = fit(turn(result), context_tokens=1000, reply_tokens=200, count=words)
    cut = fitted.messages[-1]["content"]
    assert isinstance(cut, str)
    assert cut.startswith("HEAD ")
    assert cut.endswith("TAIL")
    assert "characters cut here to fit the model's context" in cut
    assert fitted.tokens <= 800
    assert fitted.cuts == ["part of the latest tool result"]


def test_a_message_too_long_for_the_model_is_shortened_and_the_person_is_told() -> None:
    messages = turn()
    messages[1]["content"] = "please read this: " + "word " * 10000
    fitted = fit(messages, context_tokens=2000, reply_tokens=500, count=words)
    assert fitted.cuts == ["part of your message"]
    assert fitted.tokens <= 1500
    said = describe_cuts(fitted.cuts)
    assert said is not None
    assert "part of your message" in said


def test_a_system_prompt_too_big_for_any_cut_is_reported_as_over() -> None:
    messages = turn()
    messages[0]["content"] = "rule " * 5000
    fitted = fit(messages, context_tokens=1000, reply_tokens=100, count=words)
    assert fitted.over
    assert fitted.messages[0]["content"] == messages[0]["content"]  # never dropped


def test_the_estimate_over_counts_rather_than_under_counts() -> None:
    english = "The quick brown fox jumps over the lazy dog. " * 20
    assert estimate_tokens(english) >= len(english) / 4
    assert estimate_tokens("日本語のテキスト") >= 8  # bytes, not characters


def test_the_note_names_each_kind_of_cut_once_with_a_count() -> None:
    said = describe_cuts(
        ["an earlier tool result", "an earlier tool result", "part of your message"]
    )
    assert said == (
        "To fit the model's context, I left out an earlier tool result (2×), part of your "
        "message. A model with a larger context would have seen all of it."
    )
    assert describe_cuts([]) is None
    assert CUT_NOTE.format(n=5).startswith("[…")


@pytest.mark.skipif(embedded_problem() is not None, reason=f"{embedded_problem()}")
def test_the_embedded_model_answers_a_turn_bigger_than_its_context_and_says_what_it_cut() -> None:
    model = EmbeddedChatModel(context_tokens=1024, max_reply_tokens=32, idle_unload_s=0)
    try:
        big = "\n".join(f"line {n}: the meeting moved to room {n % 7}" for n in range(2000))
        answer = model.chat(turn("x " * 3000, big))
    finally:
        model.close()
    assert "an earlier tool result" in answer.context_cuts
    assert "part of the latest tool result" in answer.context_cuts


def test_a_reply_says_what_the_backend_left_out(tmp_path, monkeypatch) -> None:
    from broker.llm.base import AssistantMessage
    from broker.types import Intent
    from tests.broker.test_session import open_session, routing_model
    from tests.support.classifier import read_as

    cutting = routing_model(
        reply=AssistantMessage(content="Here it is.", context_cuts=("part of your message",))
    )
    read_as(monkeypatch, Intent.CHAT_ONLY, 0.9)
    turn = open_session(tmp_path, model=cutting).ask("a very long question")
    assert turn.reply.startswith("Here it is.")
    assert "I left out part of your message" in turn.reply


def test_a_reply_cut_short_still_says_what_was_left_out_of_the_request(
    tmp_path, monkeypatch
) -> None:
    """The embedded model often runs out of reply tokens (its replies are capped); what was cut
    from the person's message to fit its context is said then too."""
    from broker.llm.base import AssistantMessage
    from broker.types import Intent
    from tests.broker.test_session import open_session, routing_model
    from tests.support.classifier import read_as

    cutting = routing_model(
        reply=AssistantMessage(
            content="The first part", cut=True, context_cuts=("part of your message",)
        )
    )
    read_as(monkeypatch, Intent.CHAT_ONLY, 0.9)
    turn = open_session(tmp_path, model=cutting).ask("a very long question")
    assert turn.reply.startswith("The first part")
    assert "cut off" in turn.reply
    assert "I left out part of your message" in turn.reply


# --- a conversation's earlier turns ----------------------------------------------------------


def earlier_turn(n: int, result: str) -> list[dict[str, object]]:
    """Turn `n` of a conversation as the executor sends it: the person's message, a tool call
    with its result, the reply (an assistant message without calls ends every earlier turn)."""
    return [
        {"role": "user", "content": f"question {n}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"e{n}",
                    "type": "function",
                    "function": {"name": "file_read", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"e{n}", "content": result},
        {"role": "assistant", "content": f"answer {n}"},
    ]


def conversation(*results: str, now: tuple[str, ...] = ()) -> list[dict[str, object]]:
    """A system prompt, one earlier turn per result, then the current turn (with `now`'s
    results)."""
    current = turn(*now)
    history = [m for n, result in enumerate(results) for m in earlier_turn(n, result)]
    return [current[0], *history, *current[1:]]


def test_a_conversation_loses_its_old_tool_results_before_any_of_its_words() -> None:
    messages = conversation("old " * 400, "older " * 400, now=("fresh " * 50,))
    total = sum(message_tokens(m, words) for m in messages)
    fitted = fit(messages, context_tokens=total - 300 + 100, reply_tokens=100, count=words)
    contents = [m.get("content") for m in fitted.messages]
    # The oldest result went first; every message of every turn is still there.
    assert contents[3] == DROPPED_NOTE
    assert "older " * 400 in contents
    assert [m["role"] for m in fitted.messages] == [m["role"] for m in messages]
    assert "question 0" in contents
    assert "answer 0" in contents
    assert contents[-1] == "fresh " * 50  # this turn's newest result is kept whole
    assert fitted.cuts == ["an earlier tool result"]


def test_then_the_earliest_turns_are_left_out_whole_and_the_model_and_person_are_told() -> None:
    chat = [f"line {n} of a long earlier answer" for n in range(60)]
    messages = conversation("a " * 50, "b " * 50, "c " * 50, now=("fresh " * 50,))
    for message in messages:
        if str(message.get("content")).startswith("answer"):
            message["content"] = " ".join(chat)
    total = sum(message_tokens(m, words) for m in messages)
    # Room for everything but about one and a half earlier turns, even with no results at all.
    fitted = fit(messages, context_tokens=total - 600 + 100, reply_tokens=100, count=words)
    contents = [m.get("content") for m in fitted.messages]
    # Turn 0 and turn 1 went whole (4 messages each), oldest first; turn 2 stayed whole.
    assert "question 0" not in contents
    assert "question 1" not in contents
    assert "question 2" in contents
    assert not any(m.get("tool_call_id") in ("e0", "e1") for m in fitted.messages)
    assert any(m.get("tool_call_id") == "e2" for m in fitted.messages)
    # The system prompt keeps its words and says how many messages were left out.
    system = fitted.messages[0]["content"]
    assert system.startswith(messages[0]["content"])
    assert "8 earlier messages of this conversation were left out" in system
    # This turn is untouched: the person's message and the newest result.
    assert fitted.messages[-3]["content"] == "summarise my notes please"
    assert contents[-1] == "fresh " * 50
    assert fitted.cuts == [
        "an earlier tool result",
        "an earlier tool result",
        "an earlier tool result",
        "the 8 earliest messages of our conversation",
    ]
    said = describe_cuts(fitted.cuts)
    assert said is not None
    assert "the 8 earliest messages of our conversation" in said
    assert not fitted.over
    assert fitted.tokens <= total - 600


def test_an_earlier_turns_last_result_is_not_taken_for_the_one_the_model_is_about_to_use() -> None:
    """The current turn has no result yet: every earlier result may go, and none is shortened
    as if it were this turn's newest."""
    messages = conversation("x " * 500, "y " * 500)
    total = sum(message_tokens(m, words) for m in messages)
    fitted = fit(messages, context_tokens=total - 900 + 100, reply_tokens=100, count=words)
    results = [m["content"] for m in fitted.messages if m["role"] == "tool"]
    assert results == [DROPPED_NOTE, DROPPED_NOTE]
    assert "part of the latest tool result" not in fitted.cuts
    assert fitted.messages[-1]["content"] == "summarise my notes please"

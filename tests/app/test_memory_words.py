"""What memory did, as a person reads it: the terminal's sentences for each typed event.

The sentences are the ones `chamberlain ask` printed when the broker still wrote them into the
reply; they are pinned here word for word (the approve, reject and forget commands included),
because scripts and people read them. Real parts: real turns through a real Session on a real
(plaintext) memory file, where a test needs what the broker really reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.memory_words import app_line, memory_json, memory_notice, reply_with_notices
from broker.conversation import Conversation, save_turn
from broker.session import Session
from broker.settings import Settings
from broker.types import MemoryEvent
from core.clock import ManualClock
from memory.conversations import ConversationStore
from memory.db import open_database
from memory.store.facts import MemoryStore
from memory.types import FactSource, FactStatus, Sensitivity


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    memory = MemoryStore(open_database(tmp_path / "memory.db", key=None, encrypted=False))
    yield memory
    memory.close()


def remember(tmp_path: Path, store: MemoryStore, *texts: str) -> list[MemoryEvent]:
    """Each text said in its own turn of one session; what memory did in the last one."""
    settings = Settings()
    settings.router.model_refinement = False
    session = Session(home=tmp_path / "home", settings=settings, clock=ManualClock(), memory=store)
    try:
        turns = [session.ask(text) for text in texts]
    finally:
        session.close()
    return turns[-1].memory


def test_a_fact_remembered_when_asked_is_said_with_the_command_that_undoes_it(tmp_path, store):
    [event] = remember(tmp_path, store, "remember that my dog is called Rex")
    assert event.fact_id is not None
    assert store.get(event.fact_id).text == "my dog is called Rex"
    assert memory_notice(event) == (
        f'Remembered: "my dog is called Rex" (undo: `chamberlain memory forget {event.fact_id}`).'
    )


def test_a_new_value_says_which_fact_it_replaces(tmp_path, store):
    [event] = remember(
        tmp_path, store, "remember that my timezone is CET", "remember that my timezone is UTC+1"
    )
    assert (event.action, event.replaces) == ("superseded", "my timezone is CET")
    assert memory_notice(event) == (
        f'Remembered: "my timezone is UTC+1"; replaces "my timezone is CET" '
        f"(undo: `chamberlain memory forget {event.fact_id}`)."
    )


def test_a_fact_waiting_for_consent_names_the_commands_that_approve_and_reject_it(tmp_path, store):
    [event] = remember(tmp_path, store, "remember that I have diabetes")
    assert event.status is FactStatus.PENDING
    reasons = ", ".join(event.reasons)
    assert reasons  # the detectors say why it is secret
    assert memory_notice(event) == (
        f'To remember "I have diabetes" I need your approval: it is secret ({reasons}). '
        f"Approve with `chamberlain memory approve {event.fact_id}`, or drop it with "
        f"`chamberlain memory reject {event.fact_id}`."
    )


def test_a_fact_said_twice_is_already_remembered(tmp_path, store):
    [event] = remember(
        tmp_path, store, "remember that I like green tea", "remember that I like green tea"
    )
    assert event.action == "duplicate"
    assert memory_notice(event) == 'Already remembered: "I like green tea".'


def test_a_credential_is_refused_in_the_memory_layers_own_words(tmp_path, store):
    [event] = remember(tmp_path, store, "remember that my password is hunter2hunter2")
    assert (event.action, event.fact_id) == ("refused", None)
    assert memory_notice(event) == event.refusal
    assert memory_notice(event).startswith("Not remembered: that looks like")
    assert store.count() == 0


def test_a_fact_taken_from_the_message_says_so():
    event = MemoryEvent(
        "added",
        fact_id="f-7",
        text="likes hiking",
        sensitivity=Sensitivity.LOW,
        status=FactStatus.ACTIVE,
        source=FactSource.EXTRACTED,
    )
    assert memory_notice(event) == (
        'Remembered from your message: "likes hiking" (undo: `chamberlain memory forget f-7`).'
    )


@pytest.mark.parametrize(
    ("event", "said"),
    [
        (MemoryEvent("empty"), "What should I remember? Nothing was stored."),
        (MemoryEvent("temporary"), "This is a temporary chat: nothing was remembered."),
        (MemoryEvent("paused"), "Memory is paused (memory.paused): nothing was remembered."),
        (
            MemoryEvent("too_long", limit=300),
            "That is too long to remember as one fact (over 300 characters); nothing was stored.",
        ),
    ],
    ids=["empty", "temporary", "paused", "too_long"],
)
def test_nothing_kept_is_said_as_before(event, said):
    assert memory_notice(event) == said


def test_the_terminal_shows_each_notice_under_the_reply_the_model_wrote():
    kept = MemoryEvent("added", fact_id="f-1", text="likes tea", source=FactSource.EXTRACTED)
    assert reply_with_notices("Tea it is.", [kept, MemoryEvent("temporary")]) == (
        "Tea it is.\n\n"
        'Remembered from your message: "likes tea" (undo: `chamberlain memory forget f-1`).\n\n'
        "This is a temporary chat: nothing was remembered."
    )
    assert reply_with_notices("", [MemoryEvent("empty")]) == (
        "What should I remember? Nothing was stored."
    )
    assert reply_with_notices("Just the reply.", []) == "Just the reply."


def test_ask_json_keeps_the_shape_it_had_a_kept_fact_with_its_notice_and_a_refusal_without_ids():
    kept = MemoryEvent(
        "pending",
        fact_id="f-2",
        text="my sister lives in Oslo",
        sensitivity=Sensitivity.PERSONAL,
        status=FactStatus.PENDING,
        category="people",
        reasons=("relationship (sister)",),
        source=FactSource.EXTRACTED,
    )
    assert memory_json(kept) == {
        "action": "pending",
        "fact_id": "f-2",
        "text": "my sister lives in Oslo",
        "sensitivity": "personal",
        "status": "pending",
        "reasons": ["relationship (sister)"],
        "notice": memory_notice(kept),
    }
    refused = MemoryEvent("refused", refusal="Not remembered: that looks like a password.")
    assert memory_json(refused) == {
        "action": "refused",
        "notice": "Not remembered: that looks like a password.",
    }


def test_the_desktop_says_a_waiting_fact_with_why_it_waits_and_never_a_command(tmp_path, store):
    """The chat line and the notification are read by someone who never opens a terminal: they
    say what waits and why, and where to act in the app; the terminal's notice keeps its
    commands."""
    from app.memory_words import app_line, waiting_notification

    [event] = remember(tmp_path, store, "remember that I take insulin every morning")
    assert event.status is FactStatus.PENDING
    assert app_line(event) == (
        "To remember “I take insulin every morning” I need your approval — it looks "
        "secret: medication (insulin)."
    )
    title, text = waiting_notification(event)
    assert title == "A memory waits for your approval"
    assert text == (
        "Chamberlain would like to remember “I take insulin every morning” — it looks secret: "
        "medication (insulin). Click here to approve, edit or reject it in Memory, or use the "
        "buttons in the chat."
    )
    for said in (app_line(event), title, text):
        assert "chamberlain memory" not in said
        assert str(event.fact_id) not in said
    assert f"chamberlain memory approve {event.fact_id}" in memory_notice(event)


def test_the_desktop_says_a_remembered_fact_and_what_it_replaces_without_the_undo_command(
    tmp_path, store
):
    from app.memory_words import app_line

    [event] = remember(
        tmp_path, store, "remember that my timezone is CET", "remember that my timezone is UTC+1"
    )
    assert app_line(event) == "Remembered: my timezone is UTC+1 (replaces “my timezone is CET”)"


def test_asked_to_forget_the_turn_names_each_match_with_the_command_that_forgets_it(
    tmp_path, store
):
    """A real turn: "forget my address" finds the address it was told and says how to forget
    it; it keeps nothing of its own ("forget my address" is not a fact)."""
    events = remember(
        tmp_path, store, "remember that my address is 4 Elm Road", "forget my address"
    )
    [event] = events
    assert event.action == "forget_match"
    assert store.get(event.fact_id).text == "my address is 4 Elm Road"
    assert memory_notice(event) == (
        'Matches what you asked me to forget: "my address is 4 Elm Road". Forget it with '
        f"`chamberlain memory forget {event.fact_id}`."
    )
    assert [f.text for f in store.facts()] == ["my address is 4 Elm Road"]
    [_new, older] = remember(
        tmp_path, store, "the address I gave you is wrong, it's 9 Oak Lane now"
    )
    assert older.fact_id == event.fact_id
    assert memory_notice(older) == (
        'You told me before: "my address is 4 Elm Road". If that no longer holds, forget it '
        f"with `chamberlain memory forget {event.fact_id}`."
    )
    assert app_line(older) == (
        "You told me before: “my address is 4 Elm Road” — forget it if it no longer holds"
    )
    [nothing] = remember(tmp_path, store, "what's the weather like", "forget that")
    assert memory_notice(nothing) == (
        'Nothing was kept just before this in the conversation for "that" to point at: nothing '
        "was forgotten or stored. `chamberlain memory list` shows what is remembered."
    )
    assert app_line(nothing).startswith("Nothing was kept just before this in the chat")
    assert "chamberlain" not in app_line(nothing)  # the app never sends people to a command
    [none] = remember(tmp_path, store, "forget my cat")
    assert memory_notice(none) == (
        'Nothing I remember matches "my cat": nothing was forgotten or stored.'
    )


def test_forget_that_points_at_what_its_own_conversation_kept_also_once_reopened(tmp_path, store):
    """The app serves every conversation from one session: "forget that" shows what the turn
    before it in the same conversation kept, also after that conversation is reopened from the
    store, and never what another conversation kept just before."""
    settings = Settings()
    settings.router.model_refinement = False
    session = Session(home=tmp_path / "home", settings=settings, clock=ManualClock(), memory=store)
    chats = ConversationStore(store)
    lockers, other = Conversation(), Conversation()
    try:
        [kept] = session.ask("remember that my locker is 14", conversation=lockers).memory
        assert save_turn(chats, lockers, lockers.turns[-1])
        [none] = session.ask("forget that", conversation=other).memory
        assert (none.action, none.fact_id) == ("forget_none", None)
        reopened = Conversation.load(chats, str(lockers.id))
        [shown] = session.ask("forget that", conversation=reopened).memory
        assert (shown.action, shown.fact_id, shown.text) == (
            "forget_match",
            kept.fact_id,
            "my locker is 14",
        )
    finally:
        session.close()
    assert [f.text for f in store.facts()] == ["my locker is 14"]  # shown, never forgotten


def test_never_mind_what_i_said_about_something_keeps_the_new_and_shows_the_old(tmp_path, store):
    """ "nvm what i said abt my gamertag, changed it to …" corrects what was told: what holds now
    is kept and the older fact is shown to forget (not forgotten by itself)."""
    [kept, older] = remember(
        tmp_path,
        store,
        "remember that my gamertag is Jaydn99",
        "nvm what i said abt my gamertag, changed it to xJaydnFlickz",
    )
    assert kept.action in ("added", "superseded", "pending")
    assert store.get(kept.fact_id).text == "my gamertag, changed it to xJaydnFlickz"
    assert older.action == "forget_match"
    assert store.get(older.fact_id).text == "my gamertag is Jaydn99"

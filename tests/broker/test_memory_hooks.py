"""Recall and the memory post-hook against a real SQLite store in tmp_path.

The model here is a small in-process fake: a model endpoint outside loopback cannot be run on
this machine (only loopback is reachable), and egress rules are about exactly that case. The
real HTTP protocol is exercised in tests/app/test_memory_cli.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from broker.audit import AuditLog
from broker.clock import ManualClock
from broker.memory_hooks import MemoryWriter, egress_limit, recollect
from broker.settings import MemorySettings
from broker.types import Intent, PolicyDecision, RouterArguments, RouterOutput, TurnResult
from memory.db import open_database
from memory.sensitivity import refuse_credentials
from memory.store import MemoryStore
from memory.types import FactSource, FactStatus, Sensitivity


class FakeModel:
    """A ChatModel at the edge: records JSON requests and answers them from a script."""

    def __init__(
        self,
        *,
        loopback: bool,
        base_url: str = "https://llm.example/v1",
        answers: list[str] | None = None,
    ) -> None:
        self.is_loopback = loopback
        self.is_embedded = False
        self.base_url = base_url
        self.name = "fake"
        self.answers = list(answers or [])
        self.seen: list[list[dict[str, Any]]] = []

    def chat(self, messages, tools=None):  # pragma: no cover - not used by memory hooks
        raise AssertionError("memory hooks never chat")

    def chat_json(self, messages, schema, schema_name):
        self.seen.append(messages)
        return self.answers.pop(0) if self.answers else '{"facts": []}'


@pytest.fixture
def store(tmp_path: Path):
    db = open_database(tmp_path / "memory.db", encrypted=False)
    memory = MemoryStore(db, ManualClock(), refuse=refuse_credentials)
    yield memory
    memory.close()


@pytest.fixture
def audit(tmp_path: Path) -> AuditLog:
    return AuditLog(tmp_path / "audit.jsonl", ManualClock())


def turn_for(text: str, intent: Intent = Intent.CHAT_ONLY, fact: str | None = None) -> TurnResult:
    router = RouterOutput(intent=intent, text=text, arguments=RouterArguments(fact=fact))
    policy = PolicyDecision(
        intent=intent, allowed_tools=[], forbidden_tools=[], required_capabilities=[]
    )
    return TurnResult(router=router, policy=policy)


def test_egress_limit_keeps_personal_facts_on_this_machine():
    settings = MemorySettings()
    assert egress_limit(None, settings) is Sensitivity.SECRET
    assert egress_limit(FakeModel(loopback=True), settings) is Sensitivity.SECRET
    remote = FakeModel(loopback=False)
    assert egress_limit(remote, settings) is Sensitivity.LOW
    allowed = MemorySettings(allow_remote=["https://llm.example/v1/"])
    assert egress_limit(remote, allowed) is Sensitivity.SECRET


def test_recall_holds_back_facts_above_the_egress_limit(store):
    store.add("my dog is called Rex", sensitivity=Sensitivity.LOW)
    store.add(
        "my dog's vet is Dr Nandi", sensitivity=Sensitivity.PERSONAL, status=FactStatus.ACTIVE
    )
    found = recollect(
        store, "who is my dog's vet", MemorySettings(), Sensitivity.LOW, temporary=False
    )
    assert [f.text for f in found.facts] == ["my dog is called Rex"]
    assert found.held_back == 1
    everything = recollect(
        store, "who is my dog's vet", MemorySettings(), Sensitivity.SECRET, temporary=False
    )
    assert "my dog's vet is Dr Nandi" in [f.text for f in everything.facts]


def test_temporary_recalls_nothing_but_anchors(store):
    store.add("my dog is called Rex", sensitivity=Sensitivity.LOW)
    store.add_anchor("Answer in French.")
    found = recollect(store, "dog", MemorySettings(), Sensitivity.SECRET, temporary=True)
    assert found.facts == []
    assert "Answer in French." in found.anchors


def test_explicit_write_stores_low_at_once_and_asks_for_personal(store, audit):
    writer = MemoryWriter(store, MemorySettings(), audit)
    [low] = writer.after_turn(
        turn_for("remember that I like green tea", Intent.MEMORY_WRITE, "I like green tea"), "t1"
    )
    assert low["status"] == "active"
    [personal] = writer.after_turn(
        turn_for("remember my sister is Ana", Intent.MEMORY_WRITE, "my sister is Ana"), "t2"
    )
    assert personal["status"] == "pending"
    assert store.get(personal["fact_id"]).status is FactStatus.PENDING


def test_remote_model_is_not_shown_a_personal_fact_to_label(store, audit):
    model = FakeModel(loopback=False, answers=['{"sensitivity": "low"}'])
    writer = MemoryWriter(store, MemorySettings(extract=False), audit, model)
    writer.after_turn(
        turn_for("remember my sister is Ana", Intent.MEMORY_WRITE, "my sister is Ana"), "t1"
    )
    assert model.seen == []


def test_model_label_can_raise_but_not_lower(store, audit):
    model = FakeModel(loopback=True, answers=['{"sensitivity": "secret"}'])
    writer = MemoryWriter(store, MemorySettings(extract=False), audit, model)
    [event] = writer.after_turn(
        turn_for("remember I go to choir", Intent.MEMORY_WRITE, "I go to choir"), "t1"
    )
    assert event["sensitivity"] == "secret"
    lowering = FakeModel(loopback=True, answers=['{"sensitivity": "low"}'])
    writer = MemoryWriter(store, MemorySettings(extract=False), audit, lowering)
    [event] = writer.after_turn(
        turn_for("remember my brother is Tom", Intent.MEMORY_WRITE, "my brother is Tom"), "t2"
    )
    assert event["sensitivity"] == "personal"


def test_proposals_without_a_quote_are_dropped_and_credentials_never_stored(store, audit):
    answer = json.dumps(
        {
            "facts": [
                {
                    "text": "likes hiking",
                    "evidence": "I love hiking",
                    "category": "preference",
                    "sensitivity": "low",
                },
                {
                    "text": "is a pilot",
                    "evidence": "I am a pilot",
                    "category": "work",
                    "sensitivity": "low",
                },
                {
                    "text": "wifi password is swordfish",
                    "evidence": "wifi password is swordfish",
                    "category": "general",
                    "sensitivity": "low",
                },
            ]
        }
    )
    model = FakeModel(loopback=True, answers=[answer])
    writer = MemoryWriter(store, MemorySettings(extract=True), audit, model)
    message = "I love hiking, and the wifi password is swordfish"
    events = writer.after_turn(turn_for(message), "t1")
    assert [e["text"] for e in events] == ["likes hiking"]
    assert events[0]["status"] == "active"
    stored = [f.text for f in store.list()]
    assert stored == ["likes hiking"]
    assert store.get(events[0]["fact_id"]).source is FactSource.EXTRACTED


def test_broken_proposal_json_stores_nothing(store, audit):
    model = FakeModel(loopback=True, answers=["this is not json"])
    writer = MemoryWriter(store, MemorySettings(extract=True), audit, model)
    assert writer.after_turn(turn_for("I love hiking"), "t1") == []
    assert store.list() == []


def test_no_extraction_in_temporary_or_paused(store, audit):
    model = FakeModel(loopback=True, answers=['{"facts": []}'] * 3)
    for writer in (
        MemoryWriter(store, MemorySettings(extract=True), audit, model, temporary=True),
        MemoryWriter(store, MemorySettings(extract=True, paused=True), audit, model),
    ):
        assert writer.after_turn(turn_for("I love hiking"), "t1") == []
    assert model.seen == []


def test_the_model_is_told_when_facts_were_held_back(store):
    store.add(
        "my dog's vet is Dr Nandi", sensitivity=Sensitivity.PERSONAL, status=FactStatus.ACTIVE
    )
    found = recollect(
        store, "who is my dog's vet", MemorySettings(), Sensitivity.LOW, temporary=False
    )
    lines = "\n".join(found.context_lines())
    assert "Dr Nandi" not in lines
    assert "1 more remembered fact(s)" in lines
    assert "memory.allow_remote" in lines

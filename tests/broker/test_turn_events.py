"""What a turn tells its observer, and Stop: the seams the desktop app and the CLI are built on.

Real parts: the builtin tools on real files, a real home (audit log, grants, keys), the real
OpenAI client against the scripted OpenAI server on 127.0.0.1, and a real command in the real
bubblewrap sandbox for Stop during a command. The prompters stand in for the person.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from broker.events import (
    PermissionAnswered,
    PermissionAsked,
    PolicyDecided,
    Routed,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionQuestion, PermissionRequest, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.support.openai_server import ScriptedOpenAIServer, Stall, Text, Trickle
from tools.sandbox import sandbox_status
from tools.stop import StopSignal


class AllowOnce(RulePrompter):
    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


class Recorder:
    def __init__(self) -> None:
        self.events: list[TurnEvent] = []

    def __call__(self, event: TurnEvent) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def session_at(tmp_path: Path, **options: Any) -> Session:
    options.setdefault("prompter", AllowOnce())
    settings = options.pop("settings", Settings())
    settings.router.model_refinement = False
    return Session(home=tmp_path / "home", settings=settings, clock=ManualClock(), **options)


def audit(session: Session, name: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in session.audit.path.read_text().splitlines()]
    return [r["data"] for r in records if r["event"] == name]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "plan.txt").write_text("Buy milk\n")
    return folder


def test_a_granted_file_turn_reports_every_step_in_order(tmp_path, docs):
    seen = Recorder()
    turn = session_at(tmp_path).ask(f"list files in {docs}", events=seen)

    kinds = [type(e) for e in seen.events]
    assert kinds == [
        TurnStarted,
        Routed,
        PolicyDecided,
        PermissionAsked,
        PermissionAnswered,
        ToolStarted,
        ToolFinished,
        TurnEnded,
    ]
    assert len({e.turn_id for e in seen.events}) == 1
    [asked] = seen.of(PermissionAsked)
    assert (asked.tool, asked.capability.value) == ("file_list", "file_read")
    assert asked.scope == str(docs)
    [answer] = seen.of(PermissionAnswered)
    assert (answer.outcome, answer.allowed) == ("once", True)
    [started] = seen.of(ToolStarted)
    assert str(docs) in started.summary
    [finished] = seen.of(ToolFinished)
    assert finished.call_id == started.call_id
    assert (finished.status, finished.duration_s >= 0) == ("ok", True)
    assert "plan.txt" in (finished.result_text or "")
    [ended] = seen.of(TurnEnded)
    assert (ended.status, ended.result) == ("done", turn)


def test_a_denied_call_is_reported_as_denied_and_never_started(tmp_path, docs):
    class Deny(RulePrompter):
        def decide(self, request: PermissionRequest) -> PromptDecision:
            return PromptDecision(allow=False)

    seen = Recorder()
    session_at(tmp_path, prompter=Deny()).ask(f"read {docs}/plan.txt", events=seen)
    assert [a.outcome for a in seen.of(PermissionAnswered)] == ["denied"]
    assert seen.of(ToolStarted) == []
    assert [f.status for f in seen.of(ToolFinished)] == ["denied"]


def test_an_observer_that_raises_never_breaks_the_turn(tmp_path, docs):
    def broken(event: TurnEvent) -> None:
        raise RuntimeError("a bug in the window")

    turn = session_at(tmp_path).ask(f"list files in {docs}", events=broken)
    assert (turn.status, turn.failed) == ("done", False)
    assert "plan.txt" in turn.reply


def test_the_model_reply_streams_as_text_deltas_that_add_up_to_the_reply(tmp_path):
    with ScriptedOpenAIServer([Text("Paris is the capital of France, on the Seine.")]) as server:
        model = OpenAIChatModel(server.base_url, model="scripted")
        seen = Recorder()
        turn = session_at(tmp_path, model=model).ask("what is the capital of france", events=seen)
        model.close()
    pieces = [d.text for d in seen.of(TextDelta)]
    assert len(pieces) > 1
    assert "".join(pieces) == turn.reply == "Paris is the capital of France, on the Seine."


def test_stop_during_a_streaming_reply_ends_the_turn_as_cancelled_and_audits_it(tmp_path):
    # 400 pieces of ~200 bytes each, a byte every 2 ms: about three minutes in all.
    long_reply = Text("word " * 16000)
    with ScriptedOpenAIServer([Trickle(long_reply, interval=0.002)], fragments=400) as server:
        model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=100)
        session = session_at(tmp_path, model=model)
        stop = StopSignal()
        seen = Recorder()

        def observe(event: TurnEvent) -> None:
            seen(event)
            if isinstance(event, TextDelta) and len(seen.of(TextDelta)) == 1:
                threading.Timer(0.3, stop.stop).start()

        started = time.monotonic()
        turn = session.ask("tell me a long story", events=observe, stop=stop)
        elapsed = time.monotonic() - started
        model.close()

    assert (turn.status, turn.failed) == ("cancelled", True)
    assert elapsed < 20  # the whole reply would take minutes
    assert seen.of(TextDelta)  # it was streaming when stopped
    [ended] = seen.of(TurnEnded)
    assert ended.status == "cancelled"
    [summary] = audit(session, "POSTHOOK_SUMMARY")
    assert summary["status"] == "cancelled"


class Waiting:
    """A person who looks at the prompt and never answers; the prompt can be closed."""

    def __init__(self) -> None:
        self.shown = threading.Event()
        self.closed: list[PermissionQuestion] = []

    def present(self, question: PermissionQuestion) -> None:
        question.add_done_callback(self.closed.append)
        self.shown.set()


def test_stop_at_an_open_prompt_cancels_it_closes_it_and_grants_nothing(tmp_path, docs):
    prompter = Waiting()
    session = session_at(tmp_path, prompter=prompter)
    stop = StopSignal()
    seen = Recorder()

    def press_stop() -> None:
        prompter.shown.wait(10)
        stop.stop()

    threading.Thread(target=press_stop, daemon=True).start()
    turn = session.ask(f"read {docs}/plan.txt", events=seen, stop=stop)

    assert turn.status == "cancelled"
    assert [a.outcome for a in seen.of(PermissionAnswered)] == ["cancelled"]
    [closed] = prompter.closed
    assert closed.cancelled
    assert session.permissions.grants.live() == []
    assert "Buy milk" not in turn.reply
    assert [d["why"] for d in audit(session, "PERMISSION_DENIED")] == ["cancelled"]
    assert audit(session, "PERMISSION_TIMEOUT") == []
    assert audit(session, "TOOL_CALL_START") == []


def test_a_turn_stopped_before_it_starts_runs_nothing(tmp_path, docs):
    stop = StopSignal()
    stop.stop()
    session = session_at(tmp_path)
    turn = session.ask(f"list files in {docs}", stop=stop)
    assert turn.status == "cancelled"
    assert audit(session, "PERMISSION_CHECK") == []
    assert audit(session, "TOOL_CALL_START") == []


def _processes_with(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.mark.skipif(not sandbox_status().available, reason="needs bubblewrap (scripts/setup.sh)")
def test_stop_during_a_running_command_ends_its_whole_process_group(tmp_path):
    marker = "61.0417"  # a sleep length no other process here uses
    session = session_at(tmp_path)
    stop = StopSignal()
    seen = Recorder()

    def observe(event: TurnEvent) -> None:
        seen(event)
        if isinstance(event, ToolStarted):
            threading.Timer(0.8, stop.stop).start()

    started = time.monotonic()
    turn = session.ask(f"run `sleep {marker}`", events=observe, stop=stop)
    elapsed = time.monotonic() - started

    assert turn.status == "cancelled"
    assert elapsed < 20  # the command would run for a minute
    [finished] = seen.of(ToolFinished)
    assert finished.status == "cancelled"
    deadline = time.monotonic() + 5
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == []
    ends = audit(session, "TOOL_CALL_END")
    assert [e["status"] for e in ends] == ["cancelled"]
    # The one-shot grant for the stopped call ended with its turn.
    assert [g for g in session.permissions.grants.live() if g.mode is GrantMode.ONCE] == []


def test_stop_before_the_model_server_has_answered_at_all_still_ends_the_turn(tmp_path):
    """A server still loading its model sends no response headers for a long while."""
    with ScriptedOpenAIServer([Stall(60, Text("far too late"))]) as server:
        model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=100)
        session = session_at(tmp_path, model=model)
        stop = StopSignal()
        threading.Timer(0.5, stop.stop).start()
        started = time.monotonic()
        turn = session.ask("tell me a long story", stop=stop)
        elapsed = time.monotonic() - started
        model.close()
    assert turn.status == "cancelled"
    assert elapsed < 20  # the server would answer after a minute
    [summary] = audit(session, "POSTHOOK_SUMMARY")
    assert summary["status"] == "cancelled"


# --- what memory did: typed events beside the reply ---------------------------------------------


def test_a_turn_that_remembers_a_fact_reports_it_as_a_typed_event_and_words_none_of_it(tmp_path):
    from broker.events import MemoryNotice
    from broker.types import MemoryEvent
    from memory.db import open_database
    from memory.store.facts import MemoryStore
    from memory.types import FactSource, FactStatus, Sensitivity

    store = MemoryStore(open_database(tmp_path / "memory.db", key=None, encrypted=False))
    seen = Recorder()
    try:
        session = session_at(tmp_path, memory=store)
        turn = session.ask("remember that my dog is called Rex", events=seen)
        [event] = turn.memory
        assert event.fact_id is not None
        fact = store.get(event.fact_id)
    finally:
        store.close()
    assert fact.text == "my dog is called Rex"
    assert event == MemoryEvent(
        "added",
        fact_id=fact.id,
        text="my dog is called Rex",
        sensitivity=Sensitivity.LOW,
        status=FactStatus.ACTIVE,
        category=fact.category,
        reasons=tuple(fact.reasons),
        source=FactSource.USER_EXPLICIT,
    )
    # The observer hears the same event before the turn ends, with the turn's id.
    [notice] = seen.of(MemoryNotice)
    assert notice.memory == event
    [ended] = seen.of(TurnEnded)
    assert notice.turn_id == ended.turn_id
    assert seen.events.index(notice) < seen.events.index(ended)
    # The broker words nothing: no sentence and no command in the reply (the front ends say it).
    assert turn.reply == ""
    assert (turn.status, turn.failed) == ("done", False)


def test_a_fact_taken_from_a_chat_message_leaves_the_models_reply_exactly_as_written(tmp_path):
    from memory.db import open_database
    from memory.store.facts import MemoryStore
    from memory.types import FactSource

    said = 'Remembered from your message: "likes hiking". Hiking is a fine habit.'
    proposal = {"text": "likes hiking", "evidence": "I love hiking", "category": "hobbies"}
    answer = json.dumps({"facts": [{**proposal, "sensitivity": "low"}]})
    store = MemoryStore(open_database(tmp_path / "memory.db", key=None, encrypted=False))
    with ScriptedOpenAIServer([Text(said), Text(answer)]) as server:
        model = OpenAIChatModel(server.base_url, model="scripted")
        try:
            turn = session_at(tmp_path, model=model, memory=store).ask("I love hiking")
        finally:
            model.close()
            store.close()
    [event] = turn.memory
    assert (event.action, event.text) == ("added", "likes hiking")
    assert event.source is FactSource.EXTRACTED
    assert turn.reply == said

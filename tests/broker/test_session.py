"""Session.ask end to end, in-process: router → policy → permissions → executor → post-hooks.

Real parts: the builtin tools on real files under tmp_path, the bundled policy table, a real
home with its audit log and token key, a ManualClock. The prompter grants (as a user clicking
"allow once" would); the model, where there is one, is a fake at the edge (see routing_model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from broker.audit.verify import verify
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.router import NEEDS_FIELDS, route_heuristic
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode, Intent, MemoryEvent, RouterOutput, TurnResult
from core.clock import ManualClock
from tests.support.classifier import read_as
from tests.support.scripted_model import ScriptedModel, Step, by_kind, replies


class AllowOnce(RulePrompter):
    """The user answers every permission prompt with "allow once"."""

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


def routing_model(
    intent: Intent = Intent.SYSTEM_TASK, confidence: float = 0.9, reply: Step = "fake reply"
) -> ScriptedModel:
    """A model at the edge: a fixed routing verdict for `chat_json`, `reply` to every chat.

    The real HTTP protocol, JSON-schema routing requests included, is tested against a real
    OpenAI-compatible server on 127.0.0.1 in tests/app/test_cli.py and tests/broker/test_llm.py;
    here only whether the session asks the model to route, and what it does with the answer,
    is under test.
    """
    verdict: dict[str, Any] = {name: False for name in NEEDS_FIELDS}
    verdict.update(intent=intent.value, risk_level="low", confidence=confidence)
    handler = by_kind(chat=replies(reply), json=replies(json.dumps(verdict)))
    return ScriptedModel(handler, name="fake-router")


class RecordingHook:
    """A memory hook as the memory store will plug in: sees each finished turn, returns events."""

    def __init__(self) -> None:
        self.turns: list[TurnResult] = []

    def after_turn(
        self, turn: TurnResult, turn_id: str, earlier_kept: tuple[str, ...] = ()
    ) -> list[MemoryEvent]:
        self.turns.append(turn.model_copy(deep=True))
        return [MemoryEvent("added", fact_id=f"f-{len(self.turns)}")]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "plan.txt").write_text("Buy milk\nCall the bank\n")
    (folder / "budget.csv").write_text("rent,900\n")
    return folder


def open_session(tmp_path: Path, **options: Any) -> Session:
    options.setdefault("prompter", AllowOnce())
    return Session(home=tmp_path / "home", settings=Settings(), clock=ManualClock(), **options)


def audit_events(session: Session, name: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in session.audit.path.read_text().splitlines()]
    return [r for r in records if r["event"] == name]


def test_ask_lists_a_folder_under_a_granted_permission(tmp_path, docs):
    prompter = AllowOnce()
    session = open_session(tmp_path, prompter=prompter)
    turn = session.ask(f"list files in {docs}")

    assert turn.router.intent is Intent.FILE_TASK
    assert turn.router.source == "heuristic"
    assert turn.policy.allowed_tools == ["file_list", "file_read", "file_search", "open_path"]
    assert turn.direct is True
    assert turn.failed is False
    assert turn.model is None
    assert turn.iterations == 0
    [call] = turn.tool_calls
    assert (call.tool, call.status, call.capability) == ("file_list", "ok", "file_read")
    assert call.token_id
    assert "plan.txt" in turn.reply
    assert "budget.csv" in turn.reply
    assert [r.scope for r in prompter.asked] == [str(docs)]


def test_without_a_grant_the_turn_fails_and_nothing_is_read(tmp_path, docs):
    class Deny(RulePrompter):
        def decide(self, request: PermissionRequest) -> PromptDecision:
            return PromptDecision(allow=False)

    session = open_session(tmp_path, prompter=Deny())
    turn = session.ask(f"read {docs}/plan.txt")
    assert turn.failed is True
    assert [c.status for c in turn.tool_calls] == ["denied"]
    assert "Buy milk" not in turn.reply
    assert audit_events(session, "TOOL_CALL_START") == []


def test_once_grants_end_with_their_turn(tmp_path, docs):
    prompter = AllowOnce()
    session = open_session(tmp_path, prompter=prompter)
    first = session.ask(f"list files in {docs}")
    assert [c.status for c in first.tool_calls] == ["ok"]
    assert [g for g in session.permissions.grants.live() if g.mode is GrantMode.ONCE] == []
    granted = audit_events(session, "PERMISSION_GRANTED")
    revoked = audit_events(session, "PERMISSION_REVOKED")
    assert [g["data"]["mode"] for g in granted] == ["once"]
    assert [r["data"]["grant_id"] for r in revoked] == [granted[0]["data"]["grant_id"]]
    # The next turn has to ask again.
    session.ask(f"list files in {docs}")
    assert len(prompter.asked) == 2


def test_the_audit_chain_verifies_after_several_turns(tmp_path, docs):
    session = open_session(tmp_path)
    replies = [
        session.ask(f"list files in {docs}").reply,
        session.ask(f"read {docs}/plan.txt").reply,
        session.ask("tell me a joke").reply,
    ]
    assert "Buy milk" in replies[1]
    result = verify(session.audit.path)
    assert result.ok, result.reason
    assert len(audit_events(session, "ROUTER_OUTPUT")) == 3
    assert len(audit_events(session, "POSTHOOK_SUMMARY")) == 3
    # The file was read, and its text is still nowhere in the log.
    assert "Buy milk" not in session.audit.path.read_text()


def test_a_sure_heuristic_is_not_sent_to_the_model_for_routing(tmp_path, docs):
    model = routing_model(intent=Intent.CHAT_ONLY)
    session = open_session(tmp_path, model=model)
    turn = session.ask(f"list files in {docs}")
    assert turn.router.confidence >= 0.85
    assert model.json_requests == []
    assert turn.router.source == "heuristic"
    assert turn.direct is True
    assert turn.reply == "fake reply"
    assert turn.model == "fake-router"


def test_an_unsure_heuristic_is_refined_by_the_model_which_may_change_the_intent(tmp_path):
    model = routing_model(intent=Intent.SYSTEM_TASK, confidence=0.9)
    session = open_session(tmp_path, model=model)
    # Unsure to the heuristics, but it does ask for something to be done on the machine: the
    # model may turn it into a system task (it may not where the message has no such sign).
    text = "could you maybe restart the audio service"
    turn = session.ask(text)
    assert len(model.json_requests) == 1
    assert text in model.json_requests[0].last["content"]
    assert turn.router.source == "model"
    assert turn.router.intent is Intent.SYSTEM_TASK
    assert turn.policy.allowed_tools == ["system_execute", "system_info"]
    # The loop then showed the model exactly the tools of the refined intent.
    shown = model.chat_requests[0].tool_names
    assert shown == ["system_execute", "system_info"]
    assert turn.reply == "fake reply"


def test_a_message_no_rule_matched_is_refined_by_a_connected_model(tmp_path, monkeypatch):
    """Chat is only the fallback when nothing matched: it scores below the refinement
    threshold, so the model is asked about exactly the messages the rules could not place."""
    read_as(monkeypatch, Intent.CHAT_ONLY, 0.3)  # the classifier cannot place it either
    model = routing_model(intent=Intent.SYSTEM_TASK, confidence=0.9)
    session = open_session(tmp_path, model=model)
    text = "do the thing"
    session.route(text)
    assert len(model.json_requests) == 1  # asked (what it may change is tested elsewhere)
    assert text in model.json_requests[0].last["content"]
    assert route_heuristic(text).confidence < Settings().router.confidence_threshold


def test_refinement_switched_off_keeps_the_heuristics(tmp_path, monkeypatch):
    read_as(monkeypatch, Intent.CHAT_ONLY, 0.3)
    model = routing_model(intent=Intent.SYSTEM_TASK)
    settings = Settings()
    settings.router.model_refinement = False
    session = Session(
        home=tmp_path / "home",
        settings=settings,
        clock=ManualClock(),
        prompter=AllowOnce(),
        model=model,
    )
    turn = session.ask("hmm ok so about that thing yesterday")
    assert model.json_requests == []
    assert turn.router.intent is Intent.CHAT_ONLY


def test_memory_hooks_run_once_per_turn_and_their_events_land_in_the_result(tmp_path, docs):
    hook = RecordingHook()
    session = open_session(tmp_path, memory_hooks=[hook])
    first = session.ask(f"list files in {docs}")
    second = session.ask("tell me a joke")

    assert len(hook.turns) == 2
    assert first.memory == [MemoryEvent("added", fact_id="f-1")]
    assert second.memory == [MemoryEvent("added", fact_id="f-2")]
    # The hook saw the finished turn: its reply and its tool calls.
    assert hook.turns[0].reply == first.reply
    assert [c.tool for c in hook.turns[0].tool_calls] == ["file_list"]
    assert [e["data"]["events"] for e in audit_events(session, "POSTHOOK_MEMORY")] == [1, 1]


def test_the_token_secret_falls_back_to_a_file_in_the_home(tmp_path):
    session = open_session(tmp_path)
    assert session.secret.in_keyring is False
    assert (tmp_path / "home" / "token.key").exists()


# --- a turn always ends ---------------------------------------------------------------------


class InterruptedPrompter(RulePrompter):
    """The person presses Ctrl-C while the permission prompt waits (asked inline, as the
    terminal's Ctrl-C reaches the main thread that waits for the answer)."""

    def decide(self, request: PermissionRequest) -> PromptDecision:
        raise KeyboardInterrupt


def test_an_exception_inside_a_turn_ends_it_as_failed_and_audited(tmp_path):
    # A model client with a bug of its own: raises something no stage expects (then mended).
    bug = RecursionError("maximum recursion depth exceeded while decoding")
    model = routing_model(reply=replies(bug, "fake reply"))
    session = open_session(tmp_path, model=model)
    turn = session.ask("tell me a joke")
    assert turn.failed
    assert turn.status == "failed"
    assert "RecursionError" in turn.reply
    assert "Traceback" not in turn.reply
    (summary,) = audit_events(session, "POSTHOOK_SUMMARY")
    assert summary["data"]["status"] == "failed"
    assert verify(session.audit.path).ok
    # The session goes on: the next turn works.
    assert session.ask("tell me a joke").reply == "fake reply"


def test_ctrl_c_at_a_prompt_cancels_the_turn_ends_its_grants_and_audits_it(tmp_path, docs):
    session = open_session(tmp_path, prompter=InterruptedPrompter())
    with pytest.raises(KeyboardInterrupt):
        session.ask(f"list files in {docs}")
    (summary,) = audit_events(session, "POSTHOOK_SUMMARY")
    assert summary["data"]["status"] == "cancelled"
    assert session.permissions.grants.live() == []
    assert verify(session.audit.path).ok


def test_a_dead_model_costs_one_deadline_per_turn_routing_included(tmp_path, scripted_server):
    """Routing refinement asks first; when that call misses its deadline, neither the executor
    nor memory extraction asks the same model again in the turn."""
    import time

    from broker.llm.openai_client import OpenAIChatModel
    from tests.support.openai_server import KeepAlive, Text

    server = scripted_server([KeepAlive(60, Text("too late"), interval=0.1)] * 3)
    model = OpenAIChatModel(server.base_url, model="scripted-model", timeout_s=1.0)
    session = open_session(tmp_path, model=model)
    started = time.monotonic()
    turn = session.ask("do the thing")  # unsure: the model is asked to route it
    elapsed = time.monotonic() - started
    assert len(server.requests) == 1
    # Without the deadline the keep-alives hold it 60 s: a third of that still catches it.
    assert elapsed < 20.0
    assert turn.failed
    assert "did not answer within 1 s" in turn.reply


# --- memory is opened only when a turn needs it ----------------------------------------------


class CountingOpener:
    """Opens a real, unencrypted memory store under the home, counting how often it is asked to.

    It stands where the CLI's opener asks for the passphrase: a call here is a prompt there."""

    def __init__(self, home: Path, fail_with: str | None = None) -> None:
        self.home = home
        self.fail_with = fail_with
        self.calls = 0
        self.opened: list[Any] = []

    def __call__(self) -> Any:
        from broker.memory_hooks import open_memory
        from broker.session import MemoryUnavailable

        self.calls += 1
        if self.fail_with is not None:
            raise MemoryUnavailable(self.fail_with)
        settings = Settings()
        settings.memory.encryption = "off"
        store = open_memory(self.home, settings.memory, ManualClock())
        self.opened.append(store)
        return store


def test_turns_that_need_no_memory_never_open_it(tmp_path, docs):
    opener = CountingOpener(tmp_path / "home")
    session = open_session(tmp_path, memory_opener=opener)
    listed = session.ask(f"list files in {docs}")
    chatted = session.ask("tell me a joke")
    assert "plan.txt" in listed.reply
    assert chatted.failed  # no model: it says how to connect one
    assert opener.calls == 0
    assert audit_events(session, "MEMORY_RECALL") == []


def test_memory_is_opened_once_on_first_need_used_and_closed_by_the_session(tmp_path):
    opener = CountingOpener(tmp_path / "home")
    session = open_session(tmp_path, memory_opener=opener)
    stored = session.ask("remember that my dog is called Rex")
    recalled = session.ask("what is my dog called?")
    assert not stored.failed, stored.reply
    assert "Rex" in recalled.reply
    assert opener.calls == 1
    (store,) = opener.opened
    session.close()
    assert store.database.closed
    assert session.memory is None


def test_a_memory_that_cannot_be_opened_is_named_in_the_reply_and_tried_again_next_turn(tmp_path):
    opener = CountingOpener(tmp_path / "home", fail_with="the passphrase typed did not open it")
    session = open_session(tmp_path, memory_opener=opener)
    first = session.ask("remember that my dog is called Rex")
    second = session.ask("what is my dog called?")
    assert first.failed
    assert second.failed
    assert first.reply == "Memory is not available: the passphrase typed did not open it"
    assert "the passphrase typed did not open it" in second.reply
    assert opener.calls == 2


def test_importing_the_session_loads_neither_the_model_sdk_nor_the_memory_side():
    import subprocess
    import sys

    probe = (
        "import sys, broker.session; "
        "print(sorted(m for m in ('openai', 'sqlite_utils', 'numpy', 'sqlcipher3', "
        "'memory.sensitivity', 'keyring') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("intent", "needs"),
    [
        (Intent.SYSTEM_TASK, {"needs_system_execute": True}),
        (Intent.FILE_TASK, {"needs_file_access": True}),
        (Intent.ONE_SHOT_DISCOVERY, {"needs_file_access": True}),
    ],
)
def test_an_unsure_reading_that_would_act_asks_one_question_and_runs_nothing(
    tmp_path, intent, needs
):
    """Routing is unsure (below the threshold, no model to refine it) and its best reading
    would run a command or touch files: the turn asks instead of acting."""
    prompter = AllowOnce()
    session = open_session(tmp_path, prompter=prompter)
    unsure = RouterOutput(intent=intent, confidence=0.3, text="meh", **needs)
    session.route = lambda text, turn_id=None, earlier=(): unsure  # type: ignore[method-assign]
    turn = session.ask("meh")
    assert turn.reply.startswith("I'm not sure what you'd like here")
    assert "?" in turn.reply
    assert turn.tool_calls == []
    assert prompter.asked == []
    assert audit_events(session, "TOOL_CALL_START") == []
    assert audit_events(session, "PERMISSION_CHECK") == []


def test_a_sure_reading_or_a_chat_is_never_questioned(tmp_path, docs):
    session = open_session(tmp_path)
    assert "plan.txt" in session.ask(f"list files in {docs}").reply
    unsure_chat = RouterOutput(intent=Intent.CHAT_ONLY, confidence=0.3, text="meh")
    session.route = lambda text, turn_id=None, earlier=(): unsure_chat  # type: ignore[method-assign]
    assert not session.ask("meh").reply.startswith("I'm not sure what you'd like here")


def test_the_first_reply_a_model_writes_names_the_model_once(tmp_path, monkeypatch):
    from broker.events import BackendNamed

    read_as(monkeypatch, Intent.CHAT_ONLY, 0.9)
    named: list[str] = []
    session = open_session(
        tmp_path,
        model=routing_model(),
        events=lambda e: named.append(e.text) if isinstance(e, BackendNamed) else None,
    )
    first = session.ask("tell me about penguins")
    assert first.reply == "fake reply"  # the note is an event beside the reply, not in it
    session.ask("and about seals")
    assert named == ["Answered by fake-router."]
    session.use_model(routing_model())  # another model: the next reply names it again
    session.ask("and walruses")
    assert len(named) == 2


def test_a_direct_action_without_a_model_names_no_model(tmp_path, docs):
    from broker.events import BackendNamed

    named: list[object] = []
    session = open_session(tmp_path, events=named.append)
    session.ask(f"list files in {docs}")
    assert not [e for e in named if isinstance(e, BackendNamed)]


def _failing_model(exc: BaseException) -> ScriptedModel:
    """A backend that fails in a way no model error covers (a bug, or a file of ours)."""

    def handler(request: Any) -> Any:
        raise exc

    return ScriptedModel(handler, name="failing")


def test_a_turn_stopped_by_a_file_it_cannot_write_says_so_and_the_cli_words_what_to_do(
    tmp_path: Path,
) -> None:
    from app.errors import FrontEnd, worded
    from core.errors import Remedy

    denied = PermissionError(13, "Permission denied", "/home/x/.chamberlain/grants.json")
    session = open_session(tmp_path, model=_failing_model(denied))

    turn = session.ask("tell me a joke")

    assert turn.status == "failed"
    assert turn.remedy is Remedy.CHECK_HOME_OWNER
    assert worded(turn.reply, turn.remedy, FrontEnd.CLI) == (
        "This request was stopped, and nothing more was run: permission denied: "
        "/home/x/.chamberlain/grants.json — check the home directory's owner"
    )


def test_a_turn_stopped_by_an_expected_failure_carries_its_remedy_for_the_front_end(
    tmp_path: Path,
) -> None:
    from core.errors import ConfigError, Remedy

    failure = ConfigError("the settings say two things at once", remedy=Remedy.FIX_SETTINGS)
    session = open_session(tmp_path, model=_failing_model(failure))

    turn = session.ask("tell me a joke")

    assert turn.reply == (
        "This request was stopped, and nothing more was run: the settings say two things at once"
    )
    assert turn.remedy is Remedy.FIX_SETTINGS


def test_a_bug_in_a_turn_is_something_that_went_wrong_inside_chamberlain(tmp_path: Path) -> None:
    session = open_session(tmp_path, model=_failing_model(KeyError("slot")))

    turn = session.ask("tell me a joke")

    assert turn.status == "failed"
    assert turn.reply.startswith("Something went wrong inside Chamberlain (KeyError)")
    assert turn.remedy is None


def test_an_embedded_model_not_installed_says_what_is_missing_and_reinstalling_fixes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker says what is missing, never a script to run; each front end words the fix.
    An install without llama-cpp-python is the one edge faked here (it is installed on this
    machine): `runtime_available` answers as it would there."""
    import broker.llm.embedded
    from app.errors import FrontEnd, worded
    from broker.session import connect_model
    from core.errors import Remedy

    monkeypatch.setattr(broker.llm.embedded, "runtime_available", lambda: False)

    choice = connect_model(Settings(), "embedded")

    assert choice.model is None
    assert choice.problem == "The embedded model needs llama-cpp-python, which is not installed"
    assert choice.remedy is Remedy.REINSTALL
    assert worded(choice.problem, choice.remedy, FrontEnd.CLI) == (
        "The embedded model needs llama-cpp-python, which is not installed. Reinstall Chamberlain"
    )

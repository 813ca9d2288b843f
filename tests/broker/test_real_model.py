"""Chamberlain against a REAL OpenAI-compatible server: llama-cpp-python's own server running the
bundled SmolLM2-135M model on 127.0.0.1 (see tests/support/llama_server.py).

Nothing is scripted: the real openai SDK speaks real HTTP and SSE to a third-party server, whose
grammar constrains forced tool calls; the calls the model makes go through the session's real
ToolRunner, permission broker and audit log. A 135M model's words vary, so the tests assert
shapes (non-empty, streamed, statuses, audit order), never wording or timing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from broker.conversation import Conversation
from broker.events import BackendNamed, TextDelta, TurnEvent
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.runner import TurnScope
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from tests.support.cli import make_user
from tests.support.llama_server import (
    MODEL_ALIAS,
    LlamaServer,
    serving_bundled_model,
)

SHORT_QUESTION = "What is the capital of France?"

# pytest-timeout only as a safety net: no test here should come near it.
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    """One real server for the module, stopped by its PID at the end even if a test failed."""
    with serving_bundled_model() as running:
        yield running


class AllowOnce(RulePrompter):
    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


class Deny(RulePrompter):
    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=False)


def open_session(home: Path, model: OpenAIChatModel | None = None, **options: Any) -> Session:
    settings = Settings()
    # Routing refinement is not under test here: every turn below is a plain question.
    settings.router.model_refinement = False
    return Session(home=home, settings=settings, model=model, **options)


def audit_kinds(session: Session) -> list[str]:
    lines = session.audit.path.read_text().splitlines()
    return [json.loads(line)["event"] for line in lines]


def without_max_length(value: Any) -> Any:
    """`value` with every "maxLength" removed. llama.cpp cannot compile a grammar for the real
    file_list schema's `"maxLength": 4096` (its server dies with SIGSEGV on such a request; see
    test_embedded.py's xfail), so the model is shown the schema without it; the runner still
    validates the call against the real schema."""
    if isinstance(value, dict):
        return {k: without_max_length(v) for k, v in value.items() if k != "maxLength"}
    if isinstance(value, list):
        return [without_max_length(v) for v in value]
    return value


def test_a_chat_turn_through_the_real_server_streams_a_reply(tmp_path, server):
    # No model named: the client asks the server which it has, as `--llm URL` does.
    model = OpenAIChatModel(server.base_url, timeout_s=240)
    try:
        assert model.name == MODEL_ALIAS
        session = open_session(tmp_path / "home", model)
        events: list[TurnEvent] = []
        turn = session.ask(SHORT_QUESTION, events=events.append)
    finally:
        model.close()

    assert turn.status == "done", turn.reply
    assert turn.failed is False, turn.reply
    assert turn.model == MODEL_ALIAS
    assert turn.reply.strip()
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1, "the reply arrived in one piece: it was not streamed"
    assert turn.reply.startswith("".join(deltas).strip())
    [named] = [e for e in events if isinstance(e, BackendNamed)]
    assert server.base_url in named.text


def forced_file_list_call(server: LlamaServer, session: Session, folder: Path) -> tuple[str, str]:
    """(name, arguments) of a file_list call the real model was made to write, exactly as sent."""
    [tool] = [t for t in session.tools if t.name == "file_list"]
    schema = without_max_length(tool.manual.openai_schema())
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=240)
    try:
        response = client.chat.completions.create(
            model=MODEL_ALIAS,
            messages=[{"role": "user", "content": f"List the files in the folder {folder}"}],
            tools=[schema],
            tool_choice={"type": "function", "function": {"name": "file_list"}},
            max_tokens=128,
        )
    finally:
        client.close()
    [call] = response.choices[0].message.tool_calls or []
    return call.function.name, call.function.arguments


def test_a_forced_tool_call_goes_through_the_runner_and_its_permission_check(
    tmp_path,
    monkeypatch,
    server,
):
    user = make_user(tmp_path / "user")
    monkeypatch.setenv("HOME", str(user))
    folder = user / "Documents"
    denied_session = open_session(tmp_path / "denied-home", prompter=Deny())
    name, arguments = forced_file_list_call(server, denied_session, folder)

    # The server's grammar held the model to the tool and to a JSON object.
    assert name == "file_list"
    assert isinstance(json.loads(arguments), dict)

    scope = TurnScope(turn_id="t-forced-deny", allowed=["file_list"], user_scopes=[])
    denied = denied_session.runner.execute(scope, name, arguments)
    kinds = audit_kinds(denied_session)
    assert denied.record.status in ("denied", "error", "refused"), denied.record
    assert "TOOL_CALL_START" not in kinds
    assert "plan.txt" not in denied.model_text
    if denied.record.status == "denied":
        assert "PERMISSION_CHECK" in kinds
        assert "PERMISSION_DENIED" in kinds

    allowed_session = open_session(tmp_path / "allowed-home", prompter=AllowOnce())
    scope = TurnScope(turn_id="t-forced-allow", allowed=["file_list"], user_scopes=[])
    allowed = allowed_session.runner.execute(scope, name, arguments)
    kinds = audit_kinds(allowed_session)
    assert allowed.record.status in ("ok", "error", "refused"), allowed.record
    if allowed.record.status != "ok":
        # Arguments that did not fit the tool, or a folder it could not list: it says why.
        assert allowed.record.reason
    if "TOOL_CALL_START" in kinds:
        # Whatever the tool then made of them, it ran only after the check and the grant.
        start = kinds.index("TOOL_CALL_START")
        assert "PERMISSION_CHECK" in kinds[:start]
        assert "PERMISSION_GRANTED" in kinds[:start]
        assert allowed.record.token_id
    else:
        assert allowed.record.status != "ok"
    if json.loads(arguments).get("path") == str(folder):
        assert allowed.record.status == "ok", allowed.record
        assert "plan.txt" in allowed.model_text


def test_an_unknown_model_name_still_ends_the_turn(tmp_path, server):
    """llama-cpp-python's server answers with its only model whatever name is asked for: the
    turn must end either way, with a reply (it must not hang or crash)."""
    model = OpenAIChatModel(server.base_url, model="no-such-model", timeout_s=240)
    try:
        turn = open_session(tmp_path / "home", model).ask(SHORT_QUESTION)
    finally:
        model.close()
    assert turn.status in ("done", "failed")
    assert turn.reply.strip()


def test_a_request_the_server_rejects_ends_the_turn_with_its_reason(tmp_path, server):
    """Over the server's context window (n_ctx 1024). Streaming, llama-cpp-python's server then
    answers 200 with an empty event stream (its error goes only to its log), so the turn can
    only say the server sent nothing usable; without streaming it would be HTTP 400."""
    model = OpenAIChatModel(server.base_url, model=MODEL_ALIAS, timeout_s=240)
    try:
        session = open_session(tmp_path / "home", model)
        turn = session.ask("Please summarise this: " + "word " * 3000)
    finally:
        model.close()
    assert turn.failed is True
    assert turn.reply.startswith("The model failed")
    assert server.base_url in turn.reply


def test_a_server_stopped_mid_session_ends_the_next_turn_with_a_clear_message(tmp_path):
    with serving_bundled_model() as doomed:
        model = OpenAIChatModel(doomed.base_url, model=MODEL_ALIAS, timeout_s=240)
        try:
            session = open_session(tmp_path / "home", model)
            first = session.ask(SHORT_QUESTION)
            assert first.reply.strip()
            assert first.model == MODEL_ALIAS

            doomed.stop()
            assert not doomed.running
            second = session.ask(SHORT_QUESTION)
        finally:
            model.close()
    assert second.failed is True
    assert f"No model answers at {doomed.base_url}" in second.reply


def test_a_follow_up_is_answered_from_the_earlier_turn_through_the_real_server(tmp_path, server):
    """Memory is off: only the conversation, sent over real HTTP, holds the sister's name."""
    model = OpenAIChatModel(server.base_url, timeout_s=240, temperature=0.0, reply_tokens=64)
    session = open_session(tmp_path / "home", model)
    try:
        assert session.memory is None
        assert session.memory_opener is None
        conversation = Conversation()
        session.ask("My sister's name is Ingrid.", conversation=conversation)
        answer = session.ask("What is my sister's name?", conversation=conversation)
        alone = session.ask("What is my sister's name?")
    finally:
        session.close()
        model.close()

    assert answer.status == "done", answer.reply
    assert "ingrid" in answer.reply.lower(), answer.reply
    assert "ingrid" not in alone.reply.lower(), alone.reply

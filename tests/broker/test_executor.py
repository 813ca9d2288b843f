"""The executor: direct actions, the no-model reply, and the model's bounded tool loop.

The runner, permission broker, token authority and audit log are the real ones; tools are small
test tools whose `run()` records every call. Only the model is a fake at the edge (tests/support/
scripted_model.py): the loop's logic, not the wire format, is under test here; the real HTTP
protocol is tested against a real OpenAI-compatible server on 127.0.0.1 further down and in
tests/broker/test_llm.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from broker.audit.writer import AuditLog
from broker.executor import (
    NO_MODEL_HELP,
    Executor,
    describe_failure,
    direct_arguments,
)
from broker.llm.base import (
    CUT_OFF_NOTE,
    AssistantMessage,
    ChatModel,
    ModelError,
    ModelToolCall,
    ModelUnavailable,
)
from broker.llm.openai_client import OpenAIChatModel
from broker.memory_hooks import MemoryWriter
from broker.permissions import (
    PermissionRequest,
    PromptDecision,
    RulePrompter,
)
from broker.runner import TurnScope
from broker.settings import ExecutorSettings, MemorySettings
from broker.types import (
    GrantMode,
    Intent,
    PolicyDecision,
    RouterArguments,
    RouterOutput,
    ToolCallRecord,
    TurnResult,
)
from core.clock import ManualClock
from memory.db import open_database
from memory.sensitivity.assessment import refuse_credentials
from memory.store.facts import MemoryStore
from tests.support.openai_server import (
    Cut,
    KeepAlive,
    Raw,
    ScriptedOpenAIServer,
    ServerFactory,
    Text,
    ToolCalls,
)
from tests.support.rig import make_rig
from tests.support.scripted_model import AsIs, Request, ScriptedModel, replies
from tools.manual import Capability, Tool, ToolManual, ToolResult
from tools.registry import ToolRegistry

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "topics": {"type": "array"}},
    "additionalProperties": False,
}


def calls(*pairs: tuple[str, dict[str, Any] | str]) -> ToolCalls:
    """An answer asking for these tool calls (dict arguments are sent as JSON)."""
    return ToolCalls(list(pairs))


def say(text: str) -> Text:
    return Text(text)


class Body:
    """A tool body that records each call and returns its arguments back, or waits first."""

    def __init__(self, block: threading.Event | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.block = block

    def __call__(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append(arguments)
        if self.block is not None:
            self.block.wait(10)
        return ToolResult({"echo": arguments}, f"echo {arguments}")


def manual(name: str, **extra: Any) -> ToolManual:
    return ToolManual(
        name=name,
        description=f"the {name} test tool",
        parameters=SCHEMA,
        capability=Capability.SYSTEM_READ,
        category="test",
        **extra,
    )


class Granting(RulePrompter):
    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


class Refusing(RulePrompter):
    """The person answers No to every question."""

    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=False)


class Rig:
    """An executor over real runner parts, with `probe` allowed and `hidden` registered."""

    def __init__(
        self,
        tmp_path: Path,
        model: ChatModel | None,
        *,
        settings: ExecutorSettings | None = None,
        tools: dict[str, Body] | None = None,
        manuals: dict[str, ToolManual] | None = None,
        model_problem: str | None = None,
        prompter: RulePrompter | None = None,
    ) -> None:
        self.bodies = tools or {"probe": Body(), "hidden": Body()}
        manuals = manuals or {}
        registry = ToolRegistry(
            Tool(manuals.get(name) or manual(name), body) for name, body in self.bodies.items()
        )
        stack = make_rig(tmp_path, registry=registry, prompter=prompter or Granting())
        self.audit_path = stack.audit_path
        self.model = model
        self.executor = Executor(
            stack.runner,
            registry,
            model,
            settings or ExecutorSettings(),
            stack.audit,
            model_problem,
        )

    def run(
        self,
        allowed: Sequence[str] = ("probe",),
        router: RouterOutput | None = None,
    ):
        router = router or RouterOutput(
            intent=Intent.ONE_SHOT_DISCOVERY, confidence=0.6, text="look around my computer"
        )
        policy = PolicyDecision(
            intent=router.intent,
            allowed_tools=list(allowed),
            forbidden_tools=sorted(set(self.bodies) - set(allowed)),
            required_capabilities=[Capability.SYSTEM_READ] if allowed else [],
        )
        return self.executor.run(router, policy, TurnScope("t-exec", list(allowed)))

    def events(self, name: str) -> list[dict[str, Any]]:
        if not self.audit_path.exists():
            return []
        records = [json.loads(line) for line in self.audit_path.read_text().splitlines()]
        return [r for r in records if r["event"] == name]


# --- direct_arguments ------------------------------------------------------------------------


def _router(confidence: float = 0.9, **arguments: Any) -> RouterOutput:
    return RouterOutput(
        intent=Intent.FILE_TASK,
        confidence=confidence,
        arguments=RouterArguments(**arguments),
        text="request",
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"action": "list_files", "paths": ["~/Documents"]},
            ("file_list", {"path": "~/Documents"}),
        ),
        ({"action": "read_file", "paths": ["~/a.txt"]}, ("file_read", {"path": "~/a.txt"})),
        (
            {"action": "search_files", "paths": ["~/Documents"], "pattern": "*.pdf"},
            ("file_search", {"root": "~/Documents", "name_glob": "*.pdf"}),
        ),
        (
            {"action": "search_files", "query": "invoice"},
            ("file_search", {"root": "~", "content": "invoice"}),
        ),
        (
            {"action": "search_files", "paths": ["/srv"], "pattern": "*.md", "query": "todo"},
            ("file_search", {"root": "/srv", "name_glob": "*.md", "content": "todo"}),
        ),
        (
            {"action": "system_info", "topics": ["memory", ""]},
            ("system_info", {"topics": ["memory"]}),
        ),
        ({"action": "system_info"}, ("system_info", {})),
    ],
    ids=[
        "list",
        "read",
        "search-glob",
        "search-content-home",
        "search-both",
        "system-topics",
        "system-all",
    ],
)
def test_direct_arguments_for_each_action(arguments, expected):
    assert direct_arguments(_router(**arguments)) == expected


@pytest.mark.parametrize(
    "router",
    [
        _router(0.84, action="list_files", paths=["~/Documents"]),
        _router(0.95),
        _router(action="list_files"),
        _router(action="read_file", paths=["~/a", "~/b"]),
        _router(action="search_files", paths=["~/Documents"]),
        _router(action="search_files", paths=["~/a", "~/b"], pattern="*.txt"),
    ],
    ids=[
        "unsure",
        "no-action",
        "no-path",
        "two-paths",
        "search-for-nothing",
        "search-two-roots",
    ],
)
def test_no_direct_action_unless_the_tool_and_arguments_are_certain(router):
    assert direct_arguments(router) is None


def test_a_direct_action_runs_through_the_runner_and_renders_without_a_model(tmp_path):
    rig = Rig(tmp_path, None, tools={"system_info": Body()})
    router = RouterOutput(
        intent=Intent.SYSTEM_TASK,
        confidence=0.9,
        arguments=RouterArguments(action="system_info", topics=["memory"]),
        text="how much memory is free",
    )
    result = rig.run(allowed=["system_info"], router=router)
    assert result.direct is True
    assert result.failed is False
    assert rig.bodies["system_info"].calls == [{"topics": ["memory"]}]
    assert result.reply == "echo {'topics': ['memory']}"
    assert [e["data"]["status"] for e in rig.events("TOOL_CALL_END")] == ["ok"]


def test_a_direct_action_the_person_refuses_says_in_words_what_was_not_done_and_the_audit_keeps_ids(
    tmp_path,
):
    """The reply names the tool and the capability by what they do ("look up system
    information"), as the person and the model read it; the ids stay in the audit line."""
    rig = Rig(
        tmp_path,
        None,
        tools={"system_info": Body()},
        manuals={"system_info": manual("system_info")},
        prompter=Refusing(),
    )
    router = RouterOutput(
        intent=Intent.SYSTEM_TASK,
        confidence=0.9,
        arguments=RouterArguments(action="system_info", topics=["memory"]),
        text="how much memory is free",
    )
    result = rig.run(allowed=["system_info"], router=router)
    assert result.failed is True
    assert rig.bodies["system_info"].calls == []
    assert result.reply == (
        "I did not look up system information: "
        "you did not give permission to look up system information."
    )
    (denied,) = rig.events("PERMISSION_DENIED")
    assert (denied["data"]["tool"], denied["data"]["capability"]) == ("system_info", "system_read")


@pytest.mark.parametrize(
    ("status", "reason", "said"),
    [
        ("error", "error: no such file", "I could not read a file: no such file."),
        ("refused", "refused: it is private.", "I did not read a file: it is private."),
        ("cancelled", "", "I did not read a file."),
    ],
)
def test_a_call_that_did_not_run_is_one_sentence_naming_the_tool_in_words(status, reason, said):
    record = ToolCallRecord(tool="file_read", arguments={}, status=status, reason=reason)
    assert describe_failure(record) == said


def test_a_tool_that_failed_in_the_loop_is_listed_by_what_it_does_when_the_loop_stops(tmp_path):
    """The "I stopped" reply lists each call that did not work in words; a tool with no words
    (an MCP tool, a name the model made up) is named as it is, escaped."""
    answer = calls(("system_info", '{"n": 1'), ("x\u202etool", "{}"), ("system_info", '{"n": 2'))
    model = ScriptedModel(replies(answer, answer))
    rig = Rig(
        tmp_path,
        model,
        tools={"system_info": Body()},
        manuals={"system_info": manual("system_info")},
        settings=ExecutorSettings(max_iterations=10, max_tool_errors=3),
    )
    result = rig.run(allowed=["system_info"])
    lines = result.reply.splitlines()
    assert lines[0].startswith("I stopped: 3 tool calls in a row failed or were refused")
    assert lines[1].startswith("- I could not look up system information: arguments are not valid")
    assert lines[2] == (
        "- I did not use the tool x\\u202etool: there is no tool named 'x\\u202etool' in this turn."
    )
    assert "system_info" not in result.reply


def test_a_direct_action_is_phrased_by_the_model_without_tools(tmp_path):
    model = ScriptedModel(replies(say("Plenty of memory is free.")))
    rig = Rig(tmp_path, model, tools={"system_info": Body()})
    router = RouterOutput(
        intent=Intent.SYSTEM_TASK,
        confidence=0.9,
        arguments=RouterArguments(action="system_info"),
        text="how much memory is free",
    )
    result = rig.run(allowed=["system_info"], router=router)
    assert result.reply == "Plenty of memory is free."
    assert len(model.requests) == 1
    assert model.requests[0].tools is None


def test_a_direct_action_the_policy_does_not_allow_is_not_taken(tmp_path):
    rig = Rig(tmp_path, None, tools={"system_info": Body()})
    router = RouterOutput(
        intent=Intent.SYSTEM_TASK,
        confidence=0.9,
        arguments=RouterArguments(action="system_info"),
        text="how much memory is free",
    )
    result = rig.run(allowed=[], router=router)
    assert result.direct is False
    assert result.failed is True
    assert rig.bodies["system_info"].calls == []


# --- no model ----------------------------------------------------------------------------------


def test_chat_without_a_model_fails_with_the_help_text(tmp_path):
    rig = Rig(tmp_path, None, model_problem="No model is configured (--llm none).")
    result = rig.run(
        allowed=[], router=RouterOutput(intent=Intent.CHAT_ONLY, confidence=0.85, text="a joke")
    )
    assert result.failed is True
    assert result.reply.startswith("No model is configured (--llm none).")
    assert NO_MODEL_HELP in result.reply
    assert result.tool_calls == []
    assert rig.events("TOOL_CALL_END") == []


def test_an_unclear_tool_request_without_a_model_suggests_a_direct_one(tmp_path):
    rig = Rig(tmp_path, None)
    result = rig.run()
    assert result.failed is True
    assert "could not tell exactly which tool" in result.reply
    assert NO_MODEL_HELP in result.reply
    assert rig.bodies["probe"].calls == []


# --- the model's tool loop ---------------------------------------------------------------------


def test_the_loop_runs_a_tool_and_returns_the_final_answer(tmp_path):
    model = ScriptedModel(replies(calls(("probe", {"n": 7})), say("  The answer is 7.  ")))
    rig = Rig(tmp_path, model)
    result = rig.run()
    assert result.reply == "The answer is 7."
    assert result.failed is False
    assert result.direct is False
    assert result.iterations == 2
    assert [(c.tool, c.status) for c in result.tool_calls] == [("probe", "ok")]
    assert rig.bodies["probe"].calls == [{"n": 7}]
    # The tool's result went back to the model as a tool message for its call id.
    tool_message = model.requests[1].messages[-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_1_0"
    assert json.loads(tool_message["content"]) == {"echo": {"n": 7}}


def test_the_model_is_shown_only_the_allowed_tools(tmp_path):
    model = ScriptedModel(replies(say("done")))
    rig = Rig(tmp_path, model)
    rig.run(allowed=["probe"])
    assert model.requests[0].tools == [manual("probe").openai_schema()]


def test_with_no_allowed_tools_the_model_is_sent_none(tmp_path):
    model = ScriptedModel(replies(say("hello")))
    rig = Rig(tmp_path, model)
    result = rig.run(allowed=[])
    assert model.requests[0].tools is None
    assert result.reply == "hello"


def test_a_tool_the_model_was_not_shown_is_refused_and_the_loop_goes_on(tmp_path):
    model = ScriptedModel(replies(calls(("hidden", {"n": 1})), say("I can't.")))
    rig = Rig(tmp_path, model)
    result = rig.run()
    assert [(c.tool, c.status) for c in result.tool_calls] == [("hidden", "refused")]
    assert rig.bodies["hidden"].calls == []
    assert result.reply == "I can't."
    refusal = model.requests[1].messages[-1]["content"]
    assert refusal.startswith("error (refused):")


def test_the_iteration_budget_ends_the_loop(tmp_path):
    def wander(request: Request) -> ToolCalls:
        step = sum(1 for m in request.messages if m["role"] == "tool")
        return calls(("probe", {"n": step}))

    model = ScriptedModel(replies(wander))
    rig = Rig(tmp_path, model, settings=ExecutorSettings(max_iterations=3))
    result = rig.run()
    assert result.iterations == 3
    assert len(model.requests) == 3
    assert [c.status for c in result.tool_calls] == ["ok", "ok", "ok"]
    assert result.reply.startswith("I stopped: the model used its budget of 3 steps")
    assert [e["data"]["iterations"] for e in rig.events("EXECUTOR_STOPPED")] == [3]


def test_the_same_call_again_and_again_is_stopped_as_a_stall(tmp_path):
    model = ScriptedModel(replies(calls(("probe", {"n": 1}))))
    rig = Rig(tmp_path, model, settings=ExecutorSettings(max_iterations=10, stall_repeats=3))
    result = rig.run()
    assert result.iterations == 3
    assert len(rig.bodies["probe"].calls) == 3
    assert "kept asking for the same tool call" in result.reply
    assert len(rig.events("EXECUTOR_STOPPED")) == 1


def test_the_same_arguments_spelled_differently_are_still_a_stall(tmp_path):
    spellings = ['{"n": 1}', '{ "n":1 }', '{"n":1}']
    model = ScriptedModel(replies(*[calls(("probe", s)) for s in spellings]))
    rig = Rig(tmp_path, model, settings=ExecutorSettings(max_iterations=10, stall_repeats=3))
    result = rig.run()
    assert result.iterations == 3
    assert "same tool call" in result.reply


def test_a_stall_inside_one_answer_stops_the_rest_of_its_calls(tmp_path):
    model = ScriptedModel(replies(calls(*[("probe", {"n": 1})] * 12)))
    rig = Rig(tmp_path, model, settings=ExecutorSettings(max_iterations=10, stall_repeats=3))
    result = rig.run()
    assert len(rig.bodies["probe"].calls) == 3
    assert len(result.tool_calls) == 3
    assert result.iterations == 1
    assert "same tool call" in result.reply


def test_consecutive_tool_errors_end_the_loop(tmp_path):
    def broken(request: Request) -> ToolCalls:
        step = sum(1 for m in request.messages if m["role"] == "tool")
        return calls(("probe", f'{{"n": {step}'))  # distinct each time, never valid JSON

    model = ScriptedModel(replies(broken))
    rig = Rig(tmp_path, model, settings=ExecutorSettings(max_iterations=10, max_tool_errors=3))
    result = rig.run()
    assert result.iterations == 3
    assert [c.status for c in result.tool_calls] == ["error"] * 3
    assert result.reply.startswith("I stopped: 3 tool calls in a row failed or were refused")
    assert "- I could not use the tool probe: arguments are not valid JSON" in result.reply
    assert rig.bodies["probe"].calls == []


def test_consecutive_errors_inside_one_answer_stop_the_rest_of_its_calls(tmp_path):
    model = ScriptedModel(replies(calls(*[("nope", {"n": i}) for i in range(20)])))
    rig = Rig(tmp_path, model, settings=ExecutorSettings(max_iterations=10, max_tool_errors=3))
    result = rig.run()
    assert [c.status for c in result.tool_calls] == ["refused"] * 3
    assert "3 tool calls in a row" in result.reply


def test_a_success_resets_the_error_count(tmp_path):
    model = ScriptedModel(
        replies(
            calls(("hidden", {"n": 1})),
            calls(("hidden", {"n": 2})),
            calls(("probe", {"n": 3})),
            calls(("hidden", {"n": 4})),
            calls(("hidden", {"n": 5})),
            say("finally"),
        )
    )
    rig = Rig(tmp_path, model, settings=ExecutorSettings(max_iterations=10, max_tool_errors=3))
    result = rig.run()
    assert result.reply == "finally"
    assert [c.status for c in result.tool_calls] == ["refused", "refused", "ok"] + ["refused"] * 2
    assert rig.events("EXECUTOR_STOPPED") == []


def test_a_model_error_mid_loop_keeps_earlier_calls_and_fails(tmp_path):
    model = ScriptedModel(
        replies(calls(("probe", {"n": 1})), ModelError("HTTP 500 from the server"))
    )
    rig = Rig(tmp_path, model)
    result = rig.run()
    assert result.failed is True
    assert result.reply == "The model failed: HTTP 500 from the server"
    assert [(c.tool, c.status) for c in result.tool_calls] == [("probe", "ok")]
    assert result.iterations == 2


def test_a_model_that_goes_away_mid_loop_explains_how_to_connect_one(tmp_path):
    model = ScriptedModel(replies(calls(("probe", {"n": 1})), ModelUnavailable("nothing answers")))
    rig = Rig(tmp_path, model)
    result = rig.run()
    assert result.failed is True
    assert result.reply.startswith("nothing answers")
    assert NO_MODEL_HELP in result.reply
    assert len(result.tool_calls) == 1


def test_a_hung_tool_times_out_and_the_loop_continues(tmp_path):
    release = threading.Event()
    model = ScriptedModel(replies(calls(("slow", {"n": 1})), say("It took too long.")))
    rig = Rig(
        tmp_path,
        model,
        tools={"slow": Body(block=release)},
        manuals={"slow": manual("slow", timeout_s=0.05)},
    )
    try:
        result = rig.run(allowed=["slow"])
    finally:
        release.set()
    assert [c.status for c in result.tool_calls] == ["timeout"]
    assert result.reply == "It took too long."
    assert "did not finish" in model.requests[1].messages[-1]["content"]


def test_an_empty_final_answer_is_replaced_by_a_sentence(tmp_path):
    rig = Rig(tmp_path, ScriptedModel(replies(say("   "))))
    assert rig.run().reply == "The model returned an empty answer."


def test_one_turn_makes_at_most_max_tool_calls(tmp_path):
    """Distinct calls that all succeed are still bounded per turn."""
    many = calls(*[("probe", {"n": n}) for n in range(30)])
    rig = Rig(tmp_path, ScriptedModel(replies(many)), settings=ExecutorSettings(max_tool_calls=7))
    result = rig.run()
    assert len(result.tool_calls) == 7
    assert len(rig.bodies["probe"].calls) == 7
    assert "7 tool calls" in result.reply


def test_a_screenshot_image_reaches_the_model_as_image_content(tmp_path):
    """A tool result carrying an image (screen_capture with attach_images) is shown to the
    model as OpenAI image content after the tool message."""

    def shot(arguments):
        return ToolResult({"ocr_text": "hello"}, "hello", meta={"image_png_b64": "iVBORw0KGgo="})

    rig = Rig(
        tmp_path,
        ScriptedModel(replies(calls(("probe", {"n": 1})), say("I see hello."))),
        tools={"probe": shot, "hidden": Body()},
    )
    result = rig.run()
    assert result.reply == "I see hello."
    second = rig.model.requests[1].messages
    image_parts = [
        part
        for message in second
        if isinstance(message.get("content"), list)
        for part in message["content"]
    ]
    assert image_parts == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    ]


# --- model output of every shape, from a real server on 127.0.0.1 -----------------------------


def real_model(server: ScriptedOpenAIServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("timeout_s", 10.0)
    return OpenAIChatModel(server.base_url, model="scripted-model", **options)


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


def test_deeply_nested_tool_arguments_go_back_to_the_model_as_an_error(tmp_path, scripted_server):
    server = scripted_server([ToolCalls([("probe", "[" * 5000)]), "I could not do that."])
    rig = Rig(tmp_path, real_model(server))

    result = rig.run()

    assert result.reply == "I could not do that."
    assert [c.status for c in result.tool_calls] == ["error"]
    assert rig.bodies["probe"].calls == []
    assert len(tool_messages(server.requests[1])) == 1


_SHAPES: dict[str, tuple[Any, str]] = {
    # name: (the model's turn, what must happen: "sent back" to the model or "ended" the turn)
    "nested-arguments": (ToolCalls([("probe", "[" * 5000)]), "sent back"),
    "balanced-nesting": (ToolCalls([("probe", "[" * 900 + "]" * 900)]), "sent back"),
    "huge-argument-string": (ToolCalls([("probe", {"topics": ["x" * 300_000]})]), "sent back"),
    "unknown-argument-fields": (ToolCalls([("probe", {"n": 1, "surprise": True})]), "sent back"),
    "argument-of-wrong-type": (ToolCalls([("probe", {"n": "seven"})]), "sent back"),
    "arguments-not-an-object": (ToolCalls([("probe", "[1, 2, 3]")]), "sent back"),
    "unknown-tool": (ToolCalls([("rm_rf", {})]), "sent back"),
    "huge-tool-name": (ToolCalls([("p" * 100_000, {})]), "sent back"),
    "thousands-of-calls": (ToolCalls([("probe", {"n": n}) for n in range(3000)]), "sent back"),
    "name-of-wrong-type": (
        Raw(
            200,
            'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",'
            ' "function": {"name": 5, "arguments": "{}"}}]}}]}\n\n',
            "text/event-stream",
        ),
        "ended",
    ),
    "unknown-fields-in-the-reply": (
        Raw(
            200,
            'data: {"choices": [{"index": 0, "delta": {"content": "fine", "x-extra": [1]},'
            ' "finish_reason": "stop", "mystery": {}}], "unexpected": true}\n\n'
            "data: [DONE]\n\n",
            "text/event-stream",
        ),
        "answered",
    ),
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
def test_model_output_of_any_shape_is_sent_back_or_ends_the_turn_never_raises(
    tmp_path, scripted_server, shape
):
    turn, expected = _SHAPES[shape]
    server = scripted_server([turn, "Understood."])
    # A generous deadline: streaming thousands of calls on a loaded machine takes seconds, and
    # what is under test is what becomes of the answer, not how fast it came.
    rig = Rig(tmp_path, real_model(server, timeout_s=60.0))

    result = rig.run()

    assert result.reply.strip()
    if expected == "sent back":
        assert result.reply == "Understood."
        assert 1 <= len(result.tool_calls) <= ExecutorSettings().max_tool_calls
        assert tool_messages(server.requests[1])
    elif expected == "ended":
        assert result.failed is True
        assert result.reply.startswith("The model failed:")
        assert len(server.requests) == 1
    else:
        assert result.reply == "fine"


@pytest.mark.parametrize(
    "answer",
    [
        AssistantMessage(content=None),  # type: ignore[arg-type]
        AssistantMessage(content=["text"]),  # type: ignore[arg-type]
        AssistantMessage(tool_calls=[ModelToolCall(id="a", name=None, arguments="{}")]),  # type: ignore[arg-type]
        AssistantMessage(tool_calls=[ModelToolCall(id="a", name="probe", arguments={"n": 1})]),  # type: ignore[arg-type]
        AssistantMessage(tool_calls="probe"),  # type: ignore[arg-type]
        AsIs("just a string"),
    ],
    ids=[
        "content-none",
        "content-list",
        "name-none",
        "arguments-dict",
        "calls-str",
        "not-a-message",
    ],
)
def test_an_answer_of_the_wrong_types_from_any_backend_ends_the_turn_with_a_sentence(
    tmp_path, answer
):
    """The fake stands for in-process backends (the embedded model), which skip the OpenAI
    client's own checks; a real server cannot send these shapes past the client."""
    rig = Rig(tmp_path, ScriptedModel(replies(answer)))

    result = rig.run()

    assert result.failed is True
    assert "unusable answer" in result.reply
    assert rig.bodies["probe"].calls == []


# --- replies cut off, and a model that failed once ----------------------------------------------


def test_a_reply_cut_off_mid_stream_says_so_and_marks_the_result(tmp_path, scripted_server):
    server = scripted_server([Cut(Text("The three steps are: first, open the"))])
    rig = Rig(tmp_path, real_model(server))

    result = rig.run()

    assert result.reply == f"The three steps are: first, open the\n\n{CUT_OFF_NOTE}"
    assert result.cut is True
    assert result.failed is True


def test_a_reply_whose_server_hung_up_mid_stream_keeps_its_text_and_says_so(
    tmp_path, scripted_server
):
    server = scripted_server(
        [Cut(Text("First part. Second part. Third part. Fourth."), at_byte=700)]
    )
    rig = Rig(tmp_path, real_model(server))

    result = rig.run()

    text, note = result.reply.split("\n\n")
    assert text.startswith("First part.")
    assert note == (
        "[the model's reply was cut off: the model server closed the connection in the middle "
        "of its reply]"
    )
    assert result.cut is True
    assert result.failed is True


def test_tool_calls_in_a_cut_off_reply_are_not_run(tmp_path, scripted_server):
    server = scripted_server([Cut(ToolCalls([("probe", {"n": 1}), ("probe", {"n": 2})]))])
    rig = Rig(tmp_path, real_model(server))

    result = rig.run()

    assert rig.bodies["probe"].calls == []
    assert result.cut is True
    assert "cut off" in result.reply
    assert len(server.requests) == 1


def test_a_model_that_missed_its_deadline_is_not_called_again_in_the_turn(
    tmp_path, scripted_server: ServerFactory
):
    # Keep-alives for a minute: without one deadline per call, this turn would last minutes.
    server = scripted_server([KeepAlive(60, Text("too late"), interval=0.1)])
    model = real_model(server, timeout_s=1.0)
    rig = Rig(tmp_path, model)
    db = open_database(tmp_path / "memory.db", encrypted=False)
    store = MemoryStore(db, ManualClock(), refuse=refuse_credentials)
    writer = MemoryWriter(
        store, MemorySettings(extract=True), AuditLog(tmp_path / "memory-audit.jsonl"), model
    )

    started = time.monotonic()
    try:
        result = rig.run()
        router = RouterOutput(intent=Intent.CHAT_ONLY, text="my sister Ana lives in Lisbon")
        policy = PolicyDecision(
            intent=Intent.CHAT_ONLY, allowed_tools=[], forbidden_tools=[], required_capabilities=[]
        )
        events = writer.after_turn(TurnResult(router=router, policy=policy), "t-exec")
        again = rig.run()
    finally:
        store.close()
    elapsed = time.monotonic() - started

    assert len(server.requests) == 1, "one failure per turn: nothing asks the dead model again"
    # Without the deadline the keep-alives hold it 60 s: a third of that still catches it.
    assert elapsed < 20.0
    assert result.failed is True
    assert result.reply.startswith("The model failed: ")
    assert "did not answer within 1 s" in result.reply
    assert events == []
    assert again.reply == result.reply

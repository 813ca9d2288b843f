"""The runner, THE enforcement point: allowed set, argument checks, tokens, limits and audit.

Real parts throughout: a real AuditLog file, a real PermissionBroker with a real TokenAuthority,
and tools defined here whose `run()` records every call, so "never runs" is checked directly.
Time is a ManualClock; only the hung-tool test waits, for a 50 ms tool timeout.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from broker.audit.verify import verify
from broker.permissions import (
    TOKEN_LIFETIME_S,
    PermissionToken,
    PromptDecision,
)
from broker.policy import IntentPolicy, PolicyTable, load_policy_table
from broker.runner import SelfTestError, TurnScope, self_test
from broker.types import GrantMode, Intent
from tests.support.rig import Approving, Rig, make_rig
from tools.arguments import ToolArguments
from tools.manual import (
    Capability,
    Prepared,
    Tool,
    ToolError,
    ToolManual,
    ToolRefused,
    ToolResult,
    typed_tool,
)
from tools.registry import ToolRegistry, builtin_registry

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 0},
        "note": {"type": "string"},
    },
    "required": ["n"],
    "additionalProperties": False,
}


class Body:
    """A tool body that records every call; it returns `data`, or raises / blocks when told."""

    def __init__(
        self,
        data: Any = None,
        *,
        raises: BaseException | None = None,
        block: threading.Event | None = None,
    ) -> None:
        self.data = {"ok": True} if data is None else data
        self.raises = raises
        self.block = block
        self.calls: list[dict[str, Any]] = []

    def __call__(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append(arguments)
        if self.block is not None:
            self.block.wait(10)
        if self.raises is not None:
            raise self.raises
        return ToolResult(self.data, f"rendered {self.data}")


def make_tool(
    name: str,
    body: Callable[[dict[str, Any]], ToolResult],
    *,
    parameters: dict[str, Any] | None = None,
    targets: Callable[[dict[str, Any]], list[str]] | None = None,
    **manual: Any,
) -> Tool:
    spec = ToolManual(
        name=name,
        description=f"the {name} test tool",
        parameters=SCHEMA if parameters is None else parameters,
        capability=manual.pop("capability", Capability.SYSTEM_READ),
        category="test",
        **manual,
    )
    if targets is None:
        return Tool(spec, body)
    return Tool(spec, body, targets)


def runner_rig(
    tmp_path: Path,
    tools: list[Tool],
    *,
    allowed: list[str] | None = None,
    mode: GrantMode = GrantMode.ONCE,
) -> Rig:
    """The support rig as these tests use it: a person who approves with `mode`, grants in a
    file, arguments capped at 1 KiB."""
    return make_rig(
        tmp_path,
        tools,
        prompter=Approving(mode),
        grants_path=tmp_path / "grants.json",
        prompt_timeout_s=5.0,
        max_argument_bytes=1024,
        allowed=allowed,
    )


# --- the allowed set ---------------------------------------------------------------------------


def test_a_registered_tool_outside_the_allowed_set_is_refused_and_never_runs(tmp_path):
    allowed, hidden = Body(), Body()
    rig = runner_rig(
        tmp_path,
        [make_tool("probe", allowed), make_tool("hidden", hidden)],
        allowed=["probe"],
    )
    outcome = rig.runner.execute(rig.turn, "hidden", '{"n": 1}')
    assert outcome.record.status == "refused"
    assert "probe" in outcome.model_text  # tells the model what it may use instead
    # The reason is also read on the call's card: no tool id there.
    assert outcome.record.reason == "this request does not allow Chamberlain to use the tool hidden"
    assert outcome.result is None
    assert hidden.calls == []
    assert rig.prompter.asked == []  # a refused call never reaches a permission prompt
    assert rig.events("TOOL_CALL_START") == []
    assert [e["data"]["status"] for e in rig.events("TOOL_CALL_END")] == ["refused"]


def test_an_unregistered_name_is_refused(tmp_path):
    body = Body()
    rig = runner_rig(tmp_path, [make_tool("probe", body)])
    outcome = rig.runner.execute(rig.turn, "delete_everything", '{"path": "/"}')
    assert outcome.record.status == "refused"
    assert "there is no tool named" in outcome.record.reason
    assert outcome.model_text.startswith("error (refused):")
    assert body.calls == []
    assert rig.prompter.asked == []


def test_an_absurd_tool_name_is_not_echoed_back_in_full(tmp_path):
    rig = runner_rig(tmp_path, [make_tool("probe", Body())])
    outcome = rig.runner.execute(rig.turn, "x" * 100_000, "{}")
    assert outcome.record.status == "refused"
    assert len(outcome.record.tool) <= 80
    assert len(outcome.record.reason) < 500
    assert len(outcome.model_text) < 500


def test_run_with_token_refuses_a_tool_outside_the_allowed_set(tmp_path):
    body = Body()
    tool = make_tool("probe", body)
    rig = runner_rig(tmp_path, [tool])
    token = rig.token_for(tool, "call-x", {"n": 1})
    closed = TurnScope(turn_id="t-other", allowed=[])
    outcome = rig.runner.run_with_token(closed, tool, "call-x", {"n": 1}, [], token)
    assert outcome.record.status == "refused"
    assert body.calls == []


# --- arguments are untrusted input -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"n": 1', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"just a string"', "must be a JSON object"),
        ("{}", "'n' is a required property"),
        ('{"n": "one"}', "n: 'one' is not of type 'integer'"),
        ('{"n": -1}', "n: -1 is less than the minimum"),
        ('{"n": 1, "extra": true}', "Additional properties are not allowed"),
        ('{"n": 1, "note": "' + "x" * 5000 + '"}', "over the 1024-byte limit"),
        ('{"n": 1, "note": ' + "[" * 400 + "]" * 400 + "}", "invalid arguments"),
        ("[" * 100_000, "over the 1024-byte limit"),
    ],
    ids=[
        "broken-json",
        "array",
        "string",
        "missing",
        "wrong-type",
        "out-of-range",
        "extra-property",
        "oversized",
        "nested",
        "huge-nesting",
    ],
)
def test_bad_arguments_are_an_error_and_the_tool_never_runs(tmp_path, raw, expected):
    body = Body()
    rig = runner_rig(tmp_path, [make_tool("probe", body)])
    outcome = rig.runner.execute(rig.turn, "probe", raw)
    assert outcome.record.status == "error"
    assert expected in outcome.record.reason
    assert body.calls == []
    assert rig.prompter.asked == []
    assert rig.events("TOOL_CALL_START") == []


def test_arguments_nested_beyond_the_parser_are_an_error_not_a_crash(tmp_path):
    body = Body()
    rig = runner_rig(tmp_path, [make_tool("probe", body)])
    rig.runner.max_argument_bytes = 16 * 1024  # the default: this fits under it
    raw = '{"n": 1, "note": ' + "[" * 8000 + "]" * 8000 + "}"
    outcome = rig.runner.execute(rig.turn, "probe", raw)
    assert outcome.record.status == "error"
    assert "nested too deeply" in outcome.record.reason
    assert body.calls == []


def test_targets_raising_value_error_is_an_error_and_the_tool_never_runs(tmp_path):
    def targets(arguments: dict[str, Any]) -> list[str]:
        raise ValueError("the path is empty; give a file or folder name")

    body = Body()
    rig = runner_rig(tmp_path, [make_tool("probe", body, targets=targets)])
    outcome = rig.runner.execute(rig.turn, "probe", {"n": 1})
    assert outcome.record.status == "error"
    assert outcome.record.reason == "the path is empty; give a file or folder name"
    assert body.calls == []
    assert rig.prompter.asked == []


def test_a_path_the_tool_may_not_look_at_is_an_audited_error_not_a_crash(tmp_path):
    """`ls /proc/1/root/` as a user: the check itself hits PermissionError."""

    def targets(arguments: dict[str, Any]) -> list[str]:
        raise PermissionError(13, "Permission denied", "/proc/1/root")

    body = Body()
    rig = runner_rig(tmp_path, [make_tool("probe", body, targets=targets)])
    outcome = rig.runner.execute(rig.turn, "probe", {"n": 1})
    assert outcome.record.status == "error"
    assert "Permission denied" in outcome.record.reason
    assert body.calls == []
    ends = rig.events("TOOL_CALL_END")
    assert [e["data"]["status"] for e in ends] == ["error"]


def test_good_arguments_run_the_tool_with_exactly_those_arguments(tmp_path):
    body = Body({"answer": 42})
    rig = runner_rig(tmp_path, [make_tool("probe", body)])
    outcome = rig.runner.execute(rig.turn, "probe", '{"n": 3, "note": "hi"}')
    assert outcome.record.status == "ok", outcome.record.reason
    assert body.calls == [{"n": 3, "note": "hi"}]
    assert outcome.record.token_id
    assert json.loads(outcome.model_text) == {"answer": 42}


# --- tokens: the runner checks them against exactly this call ----------------------------------


def _forge(rig: Rig, token: PermissionToken) -> tuple[PermissionToken | None, str, dict]:
    return dataclasses.replace(token, mac="0" * 64), "call-a", {"n": 1}


def _expire(rig: Rig, token: PermissionToken) -> tuple[PermissionToken | None, str, dict]:
    rig.clock.advance(TOKEN_LIFETIME_S + 1)
    return token, "call-a", {"n": 1}


def _revoke(rig: Rig, token: PermissionToken) -> tuple[PermissionToken | None, str, dict]:
    rig.permissions.revoke(token.grant_id, "the user revoked it")
    return token, "call-a", {"n": 1}


def _missing(rig: Rig, token: PermissionToken) -> tuple[PermissionToken | None, str, dict]:
    return None, "call-a", {"n": 1}


def _other_arguments(rig: Rig, token: PermissionToken) -> tuple[PermissionToken | None, str, dict]:
    return token, "call-a", {"n": 2}


def _other_call(rig: Rig, token: PermissionToken) -> tuple[PermissionToken | None, str, dict]:
    return token, "call-b", {"n": 1}


@pytest.mark.parametrize(
    ("spoil", "problem"),
    [
        (_missing, "missing"),
        (_forge, "forged"),
        (_expire, "expired"),
        (_revoke, "revoked"),
        (_other_arguments, "arguments_changed"),
        (_other_call, "wrong_call"),
    ],
)
@pytest.mark.parametrize("mode", [GrantMode.ONCE, GrantMode.SESSION])
def test_a_bad_token_is_denied_audited_and_the_tool_never_runs(tmp_path, spoil, problem, mode):
    body = Body()
    tool = make_tool("probe", body)
    rig = runner_rig(tmp_path, [tool], mode=mode)
    token = rig.token_for(tool, "call-a", {"n": 1})
    given, call_id, arguments = spoil(rig, token)

    outcome = rig.runner.run_with_token(rig.turn, tool, call_id, arguments, [], given)

    assert outcome.record.status == "denied"
    assert outcome.record.reason.startswith(f"{problem}: ")
    assert outcome.result is None
    assert body.calls == []
    refused = rig.events("TOKEN_REFUSED")
    assert [e["data"]["problem"] for e in refused] == [problem]
    assert refused[0]["data"]["call_id"] == call_id
    assert rig.events("TOOL_CALL_START") == []
    assert [e["data"]["status"] for e in rig.events("TOOL_CALL_END")] == ["denied"]


def test_a_token_is_spent_by_its_call_and_a_replay_is_denied(tmp_path):
    body = Body()
    tool = make_tool("probe", body)
    rig = runner_rig(tmp_path, [tool], mode=GrantMode.SESSION)
    token = rig.token_for(tool, "call-a", {"n": 1})

    first = rig.runner.run_with_token(rig.turn, tool, "call-a", {"n": 1}, [], token)
    again = rig.runner.run_with_token(rig.turn, tool, "call-a", {"n": 1}, [], token)

    assert first.record.status == "ok"
    assert again.record.status == "denied"
    assert again.record.reason.startswith("replayed: ")
    assert len(body.calls) == 1
    assert [e["data"]["problem"] for e in rig.events("TOKEN_REFUSED")] == ["replayed"]


def test_the_token_never_reaches_the_model_text(tmp_path):
    body = Body()
    tool = make_tool("probe", body)
    rig = runner_rig(tmp_path, [tool], mode=GrantMode.SESSION)
    token = rig.token_for(tool, "call-a", {"n": 1})
    outcome = rig.runner.run_with_token(rig.turn, tool, "call-a", {"n": 1}, [], token)
    assert outcome.record.status == "ok"
    assert token.mac not in outcome.model_text
    assert token.mac not in rig.audit_path.read_text()


# --- limits: time, failures, output size -------------------------------------------------------


def test_a_hung_tool_times_out_and_the_turn_goes_on(tmp_path):
    release = threading.Event()
    hung, quick = Body(block=release), Body({"quick": True})
    rig = runner_rig(
        tmp_path,
        [make_tool("hang", hung, timeout_s=0.05), make_tool("quick", quick)],
    )
    try:
        slow = rig.runner.execute(rig.turn, "hang", {"n": 1})
        after = rig.runner.execute(rig.turn, "quick", {"n": 1})
    finally:
        release.set()
    assert slow.record.status == "timeout"
    assert "did not finish within 0.05 s" in slow.record.reason
    assert slow.result is None
    assert after.record.status == "ok"
    assert quick.calls == [{"n": 1}]


def test_a_tool_error_is_an_error_with_its_message(tmp_path):
    body = Body(raises=ToolError("the folder /x does not exist"))
    rig = runner_rig(tmp_path, [make_tool("probe", body)])
    outcome = rig.runner.execute(rig.turn, "probe", {"n": 1})
    assert outcome.record.status == "error"
    assert outcome.record.reason == "the folder /x does not exist"
    assert outcome.model_text == "error (error): the folder /x does not exist"
    assert len(body.calls) == 1


def test_an_unexpected_exception_is_an_error_without_a_traceback(tmp_path):
    body = Body(raises=KeyError("internal-detail-7f3a"))
    rig = runner_rig(tmp_path, [make_tool("probe", body)])
    outcome = rig.runner.execute(rig.turn, "probe", {"n": 1})
    assert outcome.record.status == "error"
    assert outcome.record.reason == "it failed unexpectedly (KeyError)"
    for text in (outcome.record.reason, outcome.model_text, rig.audit_path.read_text()):
        assert "Traceback" not in text
        assert "internal-detail-7f3a" not in text


def test_output_over_the_cap_is_truncated_and_marked_for_the_model(tmp_path):
    body = Body({"text": "y" * 5000})
    rig = runner_rig(tmp_path, [make_tool("probe", body, output_cap=100)])
    outcome = rig.runner.execute(rig.turn, "probe", {"n": 1})
    assert outcome.record.status == "ok"
    full = json.dumps({"text": "y" * 5000})
    assert outcome.model_text.startswith(full[:100])
    assert full[:101] not in outcome.model_text
    assert outcome.model_text.endswith("[output truncated at 100 characters]")
    # The cap bounds the model's view only; the user's rendering is the tool's own, uncut.
    assert outcome.result is not None
    assert outcome.result.truncated is False
    assert outcome.record.output_len == len(outcome.model_text)


def test_output_under_the_cap_is_passed_whole(tmp_path):
    body = Body({"text": "y" * 50})
    rig = runner_rig(tmp_path, [make_tool("probe", body, output_cap=100)])
    outcome = rig.runner.execute(rig.turn, "probe", {"n": 1})
    assert outcome.model_text == json.dumps({"text": "y" * 50})
    assert outcome.result is not None
    assert outcome.result.truncated is False


# --- the audit trail ---------------------------------------------------------------------------


def test_audit_starts_only_executed_calls_ends_every_call_and_holds_no_output(tmp_path):
    marker = "MARKER-8c1d-output-never-audited"
    good, hidden = Body({"secret_text": marker}), Body()
    tool = make_tool("probe", good)
    rig = runner_rig(tmp_path, [tool, make_tool("hidden", hidden)], allowed=["probe"])

    refused = rig.runner.execute(rig.turn, "hidden", "{}")
    broken = rig.runner.execute(rig.turn, "probe", "{nope")
    denied = rig.runner.run_with_token(rig.turn, tool, "call-z", {"n": 5}, [], None)
    ran = rig.runner.execute(rig.turn, "probe", {"n": 1})

    starts = rig.events("TOOL_CALL_START")
    assert [s["data"]["call_id"] for s in starts] == [ran.record.call_id]
    ends = rig.events("TOOL_CALL_END")
    assert [(e["data"]["call_id"], e["data"]["status"]) for e in ends] == [
        (refused.record.call_id, "refused"),
        (broken.record.call_id, "error"),
        (denied.record.call_id, "denied"),
        (ran.record.call_id, "ok"),
    ]
    assert all(e["turn"] == "t-test" for e in starts + ends)
    # The output is recorded as a digest and a length, never as text.
    assert ends[-1]["data"]["output"] == {
        "sha256": ran.record.output_digest,
        "len": len(ran.model_text),
    }
    assert marker in ran.model_text
    assert marker not in rig.audit_path.read_text()
    assert verify(rig.audit_path).ok


# --- the start-up self-test --------------------------------------------------------------------


def _table(allowed: list[str]) -> PolicyTable:
    intents = {intent: IntentPolicy() for intent in Intent}
    intents[Intent.SYSTEM_TASK] = IntentPolicy(allowed=allowed)
    return PolicyTable(intents=intents)


def test_self_test_passes_for_covered_tools_with_valid_schemas():
    self_test(ToolRegistry([make_tool("probe", Body())]), _table(["probe"]))
    self_test(builtin_registry(), load_policy_table())


def test_self_test_fails_for_a_tool_no_intent_allows():
    registry = ToolRegistry([make_tool("probe", Body()), make_tool("stray", Body())])
    with pytest.raises(SelfTestError, match="'stray' is registered but no intent"):
        self_test(registry, _table(["probe"]))


def test_self_test_fails_for_an_invalid_argument_schema():
    broken = make_tool("probe", Body(), parameters={"type": "no-such-type"})
    with pytest.raises(SelfTestError, match="'probe' has an invalid argument schema"):
        self_test(ToolRegistry([broken]), _table(["probe"]))


def test_self_test_fails_for_a_tool_without_a_capability():
    manual = ToolManual.model_construct(
        name="probe",
        description="no capability",
        parameters=SCHEMA,
        capability=None,
        category="test",
    )
    with pytest.raises(SelfTestError, match="'probe' has no capability"):
        self_test(ToolRegistry([Tool(manual, Body())]), _table(["probe"]))


def test_a_call_is_prepared_once_and_exactly_the_prepared_call_runs(tmp_path):
    """The check and the use share one object: nothing is resolved again in between."""
    import dataclasses

    from tools.manual import Prepared

    prepared_calls: list[Prepared] = []
    ran: list[Prepared] = []

    def prepare(arguments: dict[str, Any]) -> Prepared:
        plan = object()  # what the tool resolved: a path, a parsed command, a URL
        call = Prepared(arguments, ("probe-target",), "easy", plan)
        prepared_calls.append(call)
        return call

    def run_prepared(call: Prepared) -> ToolResult:
        ran.append(call)
        return ToolResult(data={"ok": True}, text="ok")

    base = make_tool("probe", Body())
    tool = dataclasses.replace(base, prepare_of=prepare, run_prepared=run_prepared)
    rig = runner_rig(tmp_path, [tool])
    outcome = rig.runner.execute(rig.turn, "probe", {"n": 1})
    assert outcome.record.status == "ok", outcome.record.reason
    assert len(prepared_calls) == 1
    assert ran == prepared_calls
    assert ran[0].plan is prepared_calls[0].plan


# --- a tool with an arguments model --------------------------------------------------------------


class ProbeArguments(ToolArguments):
    n: int = Field(ge=0, le=100)
    note: Annotated[str, Field(max_length=50)] | None = None
    loud: bool = False


def make_typed_tool(name: str = "typed") -> tuple[Tool, list[ProbeArguments]]:
    """A tool built from ProbeArguments, recording the values it was handed."""
    seen: list[ProbeArguments] = []

    def run(values: ProbeArguments, _call: Prepared) -> ToolResult:
        seen.append(values)
        return ToolResult({"n": values.n}, "ran")

    manual = ToolManual(
        name=name,
        description="a tool with a model",
        parameters=ProbeArguments.parameters(),
        capability=Capability.SYSTEM_READ,
        category="test",
    )
    tool = typed_tool(
        manual,
        ProbeArguments,
        prepare=lambda values: Prepared.of(values, (f"n:{values.n}",), "easy"),
        run=run,
    )
    return tool, seen


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"n": true}', "invalid arguments for typed: n: Input should be a valid integer"),
        ('{"n": "1"}', "invalid arguments for typed: n: Input should be a valid integer"),
        ('{"n": 1.0}', "invalid arguments for typed: n: Input should be a valid integer"),
        (
            '{"n": 1, "loud": 1}',
            "invalid arguments for typed: loud: Input should be a valid boolean",
        ),
        (
            '{"n": 1, "extra": 2}',
            "invalid arguments for typed: extra: Extra inputs are not permitted",
        ),
        ("{}", "invalid arguments for typed: n: Field required"),
        ('{"n": -1}', "n: Input should be greater than or equal to 0"),
        ('{"n": 101}', "n: Input should be less than or equal to 100"),
        ('{"n": 1, "note": "' + "y" * 51 + '"}', "note: String should have at most 50 characters"),
        ('{"n": 1, "note": ' + "[" * 400 + "]" * 400 + "}", "note: Input should be a valid string"),
    ],
    ids=[
        "bool-for-int",
        "string-for-int",
        "float-for-int",
        "int-for-bool",
        "unknown-field",
        "missing",
        "below-bound",
        "above-bound",
        "long-string",
        "nested",
    ],
)
def test_a_model_tool_refuses_what_its_model_refuses_and_never_runs(tmp_path, raw, expected):
    tool, seen = make_typed_tool()
    rig = runner_rig(tmp_path, [tool])
    outcome = rig.runner.execute(rig.turn, "typed", raw)
    assert outcome.record.status == "error"
    assert expected in outcome.record.reason
    assert outcome.model_text == f"error (error): {outcome.record.reason}"
    assert "yyyy" not in outcome.record.reason  # the rule, never the value
    assert seen == []
    assert rig.prompter.asked == []
    assert rig.events("TOOL_CALL_START") == []


def test_a_model_tool_is_handed_validated_values_while_digest_and_audit_keep_what_was_sent(
    tmp_path,
):
    tool, seen = make_typed_tool()
    rig = runner_rig(tmp_path, [tool])
    outcome = rig.runner.execute(rig.turn, "typed", '{"n": 7}')
    assert outcome.record.status == "ok", outcome.record.reason
    assert seen == [ProbeArguments(n=7, note=None, loud=False)]
    (start,) = rig.events("TOOL_CALL_START")
    assert start["data"]["arguments"] == {"n": 7}  # no defaults added to the audit
    assert start["data"]["targets"] == ["n:7"]
    assert outcome.record.arguments == {"n": 7}


def test_run_with_token_validates_a_model_tools_arguments_too(tmp_path):
    """A caller holding only arguments (and a token for exactly them) is checked the same way."""
    tool, seen = make_typed_tool()
    rig = runner_rig(tmp_path, [tool])
    token = rig.token_for(tool, "call-x", {"n": 1})
    outcome = rig.runner.run_with_token(rig.turn, tool, "call-x", {"n": 1}, ["n:1"], token)
    assert outcome.record.status == "ok", outcome.record.reason
    assert [v.n for v in seen] == [1]
    bad = {"n": True}
    token = rig.permissions.authorize(
        tool="typed",
        capability=tool.capability,
        arguments=bad,
        targets=["n:1"],
        call_id="call-y",
        user_scopes=[],
        turn_id=rig.turn.turn_id,
    )
    assert isinstance(token, PermissionToken)
    refused = rig.runner.run_with_token(rig.turn, tool, "call-y", bad, ["n:1"], token)
    assert refused.record.status == "error"
    assert (
        refused.record.reason == "invalid arguments for typed: n: Input should be a valid integer"
    )
    assert [v.n for v in seen] == [1]


def test_self_test_fails_for_a_tool_whose_manual_is_not_its_models_schema():
    tool, _ = make_typed_tool("probe")
    hand_written = tool.manual.model_copy(update={"parameters": SCHEMA})
    drifted = dataclasses.replace(tool, manual=hand_written)
    with pytest.raises(SelfTestError, match="'probe' shows a schema other than its arguments"):
        self_test(ToolRegistry([drifted]), _table(["probe"]))
    self_test(ToolRegistry([tool]), _table(["probe"]))


def test_self_test_fails_for_a_model_with_no_json_schema():
    class Unshowable(ToolArguments):
        check: Callable[[], None] | None = None

    tool, _ = make_typed_tool("probe")
    broken = dataclasses.replace(tool, arguments=Unshowable)
    with pytest.raises(SelfTestError, match="'probe' has an arguments model with no JSON schema"):
        self_test(ToolRegistry([broken]), _table(["probe"]))


# --- private data in, data out (broker/taint.py) ----------------------------------------------


def reader_and_sender(refuse: bool = False) -> tuple[Body, Body, list[Tool]]:
    """A file-reading tool and a web tool, both recording their calls."""
    read, send = Body({"content": "the private note"}), Body({"status": 200})

    def read_targets(args: dict[str, Any]) -> list[str]:
        if refuse:
            raise ToolRefused("that place is never read")
        return ["/srv/notes.txt"]

    tools = [
        make_tool("reader", read, capability=Capability.FILE_READ, targets=read_targets),
        make_tool(
            "sender",
            send,
            capability=Capability.WEB_ACCESS,
            targets=lambda args: ["domain:example.org"],
        ),
    ]
    return read, send, tools


def test_after_a_read_ran_the_next_outbound_call_is_asked_anew_despite_the_session_grant(
    tmp_path: Path,
) -> None:
    _read, send, tools = reader_and_sender()
    rig = runner_rig(tmp_path, tools, mode=GrantMode.SESSION)
    assert rig.runner.execute(rig.turn, "sender", {"n": 1}).record.status == "ok"
    assert rig.runner.execute(rig.turn, "reader", {"n": 1}).record.status == "ok"
    asked = len(rig.prompter.asked)

    outcome = rig.runner.execute(rig.turn, "sender", {"n": 2, "note": "the private note"})

    assert outcome.record.status == "ok"  # this person said yes again
    (question,) = rig.prompter.asked[asked:]
    assert question.once_only
    assert question.reason.startswith("this turn has read private data (/srv/notes.txt)")
    assert len(send.calls) == 2
    # The next turn read nothing yet: the session grant covers the site again, unasked.
    next_turn = TurnScope(turn_id="t-next", allowed=["reader", "sender"])
    again = len(rig.prompter.asked)
    assert rig.runner.execute(next_turn, "sender", {"n": 3}).record.status == "ok"
    assert len(rig.prompter.asked) == again


@pytest.mark.parametrize("how", ["refused", "denied"])
def test_a_read_that_never_ran_does_not_mark_the_turn(tmp_path: Path, how: str) -> None:
    read, _send, tools = reader_and_sender(refuse=how == "refused")
    rig = runner_rig(tmp_path, tools, mode=GrantMode.SESSION)
    assert rig.runner.execute(rig.turn, "sender", {"n": 1}).record.status == "ok"
    if how == "denied":
        rig.prompter.decide = lambda request: PromptDecision(allow=False)  # type: ignore[method-assign]
    assert rig.runner.execute(rig.turn, "reader", {"n": 1}).record.status == how
    assert read.calls == []
    asked = len(rig.prompter.asked)

    assert rig.runner.execute(rig.turn, "sender", {"n": 2}).record.status == "ok"
    assert not rig.turn.taint.private
    assert len(rig.prompter.asked) == asked  # the session grant still covers it

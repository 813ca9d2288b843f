"""THE enforcement point: the only code path that executes a tool.

Every call — from the model's tool loop or a direct action — comes through `ToolRunner.execute`:
the tool must be in this turn's allowed set, its arguments must fit its arguments model (strict
JSON types, bounds, no unknown fields; a tool without a model: its manual's JSON schema), a
permission token must authorise exactly this call (capability, scope, call id, argument digest,
expiry), and it runs under a timeout with an output cap. Start and end are audited, with outputs
as digests and lengths only.

Nothing here trusts the model: names, arguments and sizes are checked as untrusted input.
"""

from __future__ import annotations

import contextvars
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic import PydanticUserError

from broker.audit.events import AuditEvent
from broker.audit.redaction import digest
from broker.audit.writer import AuditLog
from broker.events import ToolFinished, ToolStarted, TurnObserver, emit, summarize_arguments
from broker.permissions import (
    TOKEN_PROBLEM_TEXT,
    Denial,
    PermissionBroker,
    PermissionToken,
    args_digest,
)
from broker.policy import PolicyTable, coverage_problems
from broker.taint import Egress, TurnTaint
from broker.types import ToolCallRecord, ToolStatus
from core.errors import InstallationError
from tools.arguments import ToolArguments
from tools.escapes import visible
from tools.manual import (
    Capability,
    InvalidArguments,
    Prepared,
    Tool,
    ToolError,
    ToolRefused,
    ToolResult,
    ToolTimedOut,
)
from tools.registry import ToolRegistry
from tools.stop import Stopped, StopSignal, check_stopped, current_stop
from tools.words import capability_action, tool_action

log = logging.getLogger("chamberlain.broker.runner")


class SelfTestError(InstallationError):
    """A registered tool has no capability or no policy coverage: refuse to start."""

    # The message names what is missing; the policy table it checks holds the person's own
    # overrides too, so "reinstall" would not be the whole truth.
    remedy = None


def self_test(registry: ToolRegistry, table: PolicyTable) -> None:
    problems: list[str] = []
    for tool in registry:
        if getattr(tool.manual, "capability", None) is None:
            problems.append(f"tool {tool.name!r} has no capability")
        problems += _schema_problems(tool)
    problems += coverage_problems(table, {t.name: t.capability for t in registry})
    if problems:
        raise SelfTestError("start-up self-test failed: " + "; ".join(problems))


def _schema_problems(tool: Tool) -> list[str]:
    """A tool's argument schema must be valid JSON Schema; with a model, it must be the schema
    generated from that model (what the model is shown is what the runner accepts)."""
    schema = tool.manual.parameters
    if tool.arguments is not None:
        try:
            schema = tool.arguments.parameters()
        except (PydanticUserError, TypeError, ValueError) as exc:
            return [f"tool {tool.name!r} has an arguments model with no JSON schema: {exc}"]
        if schema != tool.manual.parameters:
            return [f"tool {tool.name!r} shows a schema other than its arguments model's"]
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return [f"tool {tool.name!r} has an invalid argument schema: {exc.message}"]
    return []


@dataclass
class CallOutcome:
    record: ToolCallRecord
    result: ToolResult | None = None
    # What goes back to the model (a tool message), capped and never containing the token.
    model_text: str = ""


@dataclass
class TurnScope:
    """What the runner needs to know about the current turn."""

    turn_id: str
    allowed: Collection[str]
    user_scopes: list[str] = field(default_factory=list)
    # What each allowed tool could do when the policy gate showed it: a tool whose capability
    # changed since (an MCP server listing it again as something else) is refused this turn.
    capabilities: Mapping[str, Capability] | None = None
    # Told when a call starts and ends, and of permission questions (broker/events.py).
    events: TurnObserver | None = None
    # The private data this turn has let in: an outbound call after it is asked anew.
    taint: TurnTaint = field(default_factory=TurnTaint)


_Job = tuple[Callable[[], object], list[object], threading.Event]


class _ToolWorker:
    """One long-lived thread that runs tools, so a call costs a hand-off, not a thread start.

    A call that overstays its timeout is abandoned with its thread (tools that own processes kill
    their process group themselves); the next call gets a fresh thread. The abandoned thread
    exits once its call returns.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._lock = threading.Lock()

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
        while (job := jobs.get()) is not None:
            work, box, done = job
            try:
                box.append(work())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who reports it
                box.append(exc)
            done.set()

    def call(
        self, work: Callable[[], object], timeout_s: float, stop: StopSignal | None = None
    ) -> tuple[bool, object]:
        """(True, result or the exception it raised), or (False, None) after `timeout_s`.

        When `stop` fires, the tool is given STOP_GRACE_S to end (a command ends its process
        groups on the same signal) before it is abandoned like one that timed out."""
        with self._lock:
            if self._jobs is None:
                self._jobs = queue.SimpleQueue()
                threading.Thread(
                    target=self._serve, args=(self._jobs,), name="tool-worker", daemon=True
                ).start()
            jobs = self._jobs
        box: list[object] = []
        done = threading.Event()
        jobs.put((work, box, done))
        if stop is None:
            finished = done.wait(timeout_s)
        else:
            with_stop = stop.on_stop(done.set)  # wakes the wait; `box` tells the two apart
            try:
                done.wait(timeout_s)
            finally:
                with_stop()
            finished = bool(box) or (stop.stopped and _wait_for(box, done, STOP_GRACE_S))
        if finished and box:
            return True, box[0]
        with self._lock:
            if self._jobs is jobs:
                self._jobs = None
        jobs.put(None)  # the stuck thread leaves when its call finally returns
        return False, None


STOP_GRACE_S = 3.0


def _wait_for(box: list[object], done: threading.Event, seconds: float) -> bool:
    """Wait up to `seconds` for the worker to put its result in `box`."""
    end = time.monotonic() + seconds
    while not box and time.monotonic() < end:
        done.clear()
        if box:
            break
        done.wait(min(0.05, max(0.0, end - time.monotonic())))
    return bool(box)


class ToolRunner:
    def __init__(
        self,
        registry: ToolRegistry,
        permissions: PermissionBroker,
        audit: AuditLog,
        *,
        max_argument_bytes: int = 16 * 1024,
        egress: Egress | None = None,
    ) -> None:
        self.registry = registry
        # Which calls let private data in and which can send data out (broker/taint.py).
        self.egress = egress if egress is not None else Egress()
        self.permissions = permissions
        self.audit = audit
        self.max_argument_bytes = max_argument_bytes
        self._worker = _ToolWorker()
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}

    # The executor hands over what the model sent, unparsed; direct actions hand over a dict.
    def execute(
        self, turn: TurnScope, name: str, raw_arguments: str | dict[str, Any]
    ) -> CallOutcome:
        call_id = "call-" + uuid.uuid4().hex[:12]
        tool = self.registry.get(name) if isinstance(name, str) else None
        if tool is None or name not in turn.allowed:
            # The name is the model's: cap it before echoing it into the reason and back. The
            # reason is read on the call's card too, so it names no id of ours; which tools the
            # model may call instead (their ids) is told to the model alone.
            short = str(name)[:80]
            why = (
                f"there is no tool named '{visible(short)}' in this turn"
                if tool is None
                else f"this request does not allow Chamberlain to {tool_action(short)}"
            )
            shown = ", ".join(sorted(turn.allowed)) or "none"
            return self._finish(
                turn,
                call_id,
                short,
                raw_arguments,
                "refused",
                why,
                tool,
                model_note=f" (the tools you may call: {shown})",
            )

        was = turn.capabilities.get(name) if turn.capabilities is not None else None
        if was is not None and tool.capability is not was:
            # In words (the person reads it on the call's card); the ids are in the audit line.
            why = (
                f"{visible(name)} now asks to {capability_action(tool.capability)}, not to "
                f"{capability_action(was)} as when it was offered for this request; ask again"
            )
            return self._finish(turn, call_id, name, raw_arguments, "refused", why, tool)
        check_stopped()  # nothing is asked or run for a turn the person already stopped
        arguments, values, problem = self._parse_arguments(tool, raw_arguments)
        if arguments is None:
            return self._finish(turn, call_id, name, raw_arguments, "error", problem, tool)
        try:
            # The tool is handed the validated values; the digest and the audit keep the
            # arguments as sent (strict validation changes nothing, it only fills defaults).
            prepared = tool.prepare(values if values is not None else arguments)
        except ToolRefused as exc:
            return self._finish(turn, call_id, name, arguments, "refused", str(exc), tool)
        except (ValueError, ToolError) as exc:
            return self._finish(turn, call_id, name, arguments, "error", str(exc), tool)
        except OSError as exc:
            # A path the tool could not look at (`ls /proc/1/root/` as a user): an error for
            # this call, never a turn that ends half-audited.
            why = f"what it would touch could not be looked at ({exc.strerror or exc})"
            return self._finish(turn, call_id, name, arguments, "error", why, tool)
        targets = list(prepared.targets)
        reversibility = prepared.reversibility
        grant = self.permissions.authorize(
            tool=name,
            capability=tool.capability,
            arguments=arguments,
            targets=targets,
            call_id=call_id,
            user_scopes=turn.user_scopes,
            risk=tool.manual.risk,
            reversibility=reversibility,
            turn_id=turn.turn_id,
            events=turn.events,
            fresh=turn.taint.outbound(self.egress, tool, prepared),
            plan=prepared.call_plan,
        )
        if isinstance(grant, Denial):
            return self._finish(turn, call_id, name, arguments, grant.status, grant.reason, tool)
        return self.run_with_token(
            turn, tool, call_id, arguments, targets, grant, prepared=prepared
        )

    def _parse_arguments(
        self, tool: Tool, raw: str | dict[str, Any]
    ) -> tuple[dict[str, Any] | None, ToolArguments | None, str]:
        """The arguments as sent and, for a tool with a model, the validated values; or why not."""
        if isinstance(raw, str):
            if len(raw.encode("utf-8", "replace")) > self.max_argument_bytes:
                return (
                    None,
                    None,
                    (
                        f"arguments are {len(raw)} characters, over the "
                        f"{self.max_argument_bytes}-byte limit"
                    ),
                )
            try:
                parsed = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                why = f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
                return None, None, why
            except RecursionError:
                # A few kilobytes of "[[[[..." are enough to exhaust the parser's stack.
                return None, None, "arguments are nested too deeply to parse"
        else:
            parsed = raw
        if not isinstance(parsed, dict):
            return None, None, "arguments must be a JSON object"
        if tool.arguments is not None:
            try:
                values = tool.read_arguments(parsed)
            except InvalidArguments as exc:
                return None, None, str(exc)
            except RecursionError:
                return None, None, "arguments are nested too deeply to check"
            return parsed, values, ""
        validator = self._validators.get(tool.name)
        if validator is None:
            validator = jsonschema.Draft202012Validator(tool.manual.parameters)
            self._validators[tool.name] = validator
        error = jsonschema.exceptions.best_match(validator.iter_errors(parsed))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "arguments"
            return None, None, f"invalid arguments for {tool.name}: {where}: {error.message[:200]}"
        return parsed, None, ""

    def run_with_token(
        self,
        turn: TurnScope,
        tool: Tool,
        call_id: str,
        arguments: dict[str, Any],
        targets: list[str],
        token: PermissionToken | None,
        *,
        prepared: Prepared | None = None,
    ) -> CallOutcome:
        """Check the token against exactly this call, then run the tool under its limits.

        `prepared` is the call as `execute` checked it; the tool runs exactly that. Without it
        (a caller holding only arguments) the call is prepared here, and its targets must be
        the ones the token was issued for.
        """
        if tool.name not in turn.allowed:
            why = f"this request does not allow Chamberlain to {tool_action(tool.name)}"
            return self._finish(turn, call_id, tool.name, arguments, "refused", why, tool)
        problem = self.permissions.tokens.check(
            token,
            capability=tool.capability,
            targets=targets,
            tool_call_id=call_id,
            digest=args_digest(arguments),
            grants=self.permissions.grants,
        )
        token_id = token.id if token else None
        if problem is not None:
            self.audit.append(
                AuditEvent.TOKEN_REFUSED,
                turn_id=turn.turn_id,
                tool=tool.name,
                call_id=call_id,
                token_id=token_id,
                problem=problem,
            )
            return self._finish(
                turn,
                call_id,
                tool.name,
                arguments,
                "denied",
                f"{problem}: {TOKEN_PROBLEM_TEXT[problem]}",
                tool,
                token_id,
            )

        if prepared is not None and list(prepared.targets) == list(targets):
            call = prepared
        else:
            try:
                call = tool.prepare(arguments)  # a tool with a model validates them first
            except (ToolError, ValueError, OSError) as exc:
                return self._finish(turn, call_id, tool.name, arguments, "error", str(exc), tool)
            if list(call.targets) != list(targets):
                why = "the call reaches other places now than when it was allowed; it was not run"
                return self._finish(turn, call_id, tool.name, arguments, "denied", why, tool)
        self.audit.append(
            AuditEvent.TOOL_CALL_START,
            turn_id=turn.turn_id,
            tool=tool.name,
            call_id=call_id,
            capability=tool.capability.value,
            token_id=token_id,
            arguments=(
                arguments if tool.audited_arguments is None else tool.audited_arguments(arguments)
            ),
            targets=targets,
            reversibility=call.reversibility,
        )
        started = time.monotonic()
        emit(
            turn.events,
            ToolStarted(
                turn.turn_id, call_id, tool.name, tool.capability, summarize_arguments(arguments)
            ),
        )
        # The tool runs on the worker thread, in this turn's context: it sees the turn's Stop.
        context = contextvars.copy_context()
        stop = current_stop()
        finished, value = self._worker.call(
            lambda: context.run(tool.execute, call), tool.manual.timeout_s, stop
        )
        if stop is not None and stop.stopped:
            self._finish(
                turn,
                call_id,
                tool.name,
                arguments,
                "cancelled",
                "stopped",
                tool,
                token_id,
                started=started,
            )
            raise Stopped()
        if finished:
            # What it read goes back to the model now, as a result or inside an error.
            turn.taint.note(self.egress.private_source(tool, call, call_id))
        if not finished:
            why = f"it did not finish within {tool.manual.timeout_s:g} s"
            return self._finish(
                turn, call_id, tool.name, arguments, "timeout", why, tool, token_id, started=started
            )
        if isinstance(value, ToolTimedOut):
            return self._finish(
                turn,
                call_id,
                tool.name,
                arguments,
                "timeout",
                str(value),
                tool,
                token_id,
                started=started,
            )
        if not isinstance(value, ToolResult):
            if isinstance(value, ToolError | OSError | ValueError):
                why = str(value)
            else:
                exc_info = value if isinstance(value, BaseException) else None
                log.error("tool %s crashed", tool.name, exc_info=exc_info)
                why = f"it failed unexpectedly ({type(value).__name__})"
            return self._finish(
                turn, call_id, tool.name, arguments, "error", why, tool, token_id, started=started
            )
        result = value
        model_text = json.dumps(result.data, ensure_ascii=False, default=str)
        cap = tool.manual.output_cap
        # The cap bounds what the model sees; the user's rendering (result.text) is the tool's own.
        if len(model_text) > cap:
            model_text = model_text[:cap] + f"… [output truncated at {cap} characters]"
        outcome = self._finish(
            turn,
            call_id,
            tool.name,
            arguments,
            "ok",
            "",
            tool,
            token_id,
            model_text,
            started=started,
            result_text=result.text,
        )
        outcome.result = result
        return outcome

    def _finish(
        self,
        turn: TurnScope,
        call_id: str,
        name: str,
        arguments: str | dict[str, Any],
        status: ToolStatus,
        reason: str,
        tool: Tool | None,
        token_id: str | None = None,
        output: str | None = None,
        *,
        started: float | None = None,
        result_text: str | None = None,
        model_note: str = "",
    ) -> CallOutcome:
        """The call's record, event and audit line, and what the model is given back.
        `model_note` is for the model alone (the tool ids it may call instead), after the reason
        a person reads on the call's card."""
        shown_args: str | dict[str, Any] = arguments
        if isinstance(arguments, str) and len(arguments) > 2000:
            shown_args = arguments[:2000] + "…"
        record = ToolCallRecord(
            tool=name,
            arguments=shown_args,
            status=status,
            reason=reason,
            capability=tool.capability if tool else None,
            token_id=token_id,
            call_id=call_id,
        )
        out = digest(output) if output is not None else None
        if out is not None:
            record.output_digest = str(out["sha256"])
            record.output_len = int(out["len"])
        self.audit.append(
            AuditEvent.TOOL_CALL_END,
            turn_id=turn.turn_id,
            tool=name,
            call_id=call_id,
            status=status,
            reason=reason,
            capability=tool.capability.value if tool else None,
            token_id=token_id,
            output=out,
        )
        emit(
            turn.events,
            ToolFinished(
                turn.turn_id,
                call_id,
                name,
                tool.capability if tool else None,
                status,
                time.monotonic() - started if started is not None else 0.0,
                reason,
                result_text,
            ),
        )
        model_text = (
            output
            if status == "ok" and output is not None
            else f"error ({status}): {reason}{model_note}"
        )
        return CallOutcome(record=record, model_text=model_text)

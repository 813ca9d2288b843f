"""What a tool is: its manual (capability, risk, schema) and the callable behind it.

A tool never checks permissions itself and never runs on its own: `broker/runner.py` is the only
caller. A tool's arguments are a pydantic model (`tools.arguments.ToolArguments`); its manual shows
the model's schema, and the tool reads only validated values. A tool reports the resources it
would touch when it is prepared, so the runner can check them against a grant before it runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core import errors
from tools.arguments import ToolArguments, explain


class Capability(StrEnum):
    """What a permission grants. Every tool maps to exactly one."""

    SCREEN_READ = "screen_read"
    FILE_READ = "file_read"
    FILE_WRITE = "file_write"
    SYSTEM_READ = "system_read"
    SYSTEM_EXECUTE = "system_execute"
    WEB_ACCESS = "web_access"
    # Handing a path or URL to the desktop's default application (outside our sandbox).
    OPEN_EXTERNAL = "open_external"
    MEMORY_WRITE = "memory_write"
    # A tool of an MCP server, by what it does (tools/mcp/classify.py). Scope `mcp:<tool>`,
    # or `mcp:<server>__*` for every tool of that class on that server.
    MCP_READ = "mcp_read"
    MCP_WRITE = "mcp_write"
    MCP_EXECUTE = "mcp_execute"


# Capabilities whose scope is a filesystem path prefix. Others are scoped by "*" for now
# (a command rule, a domain or a display arrive with their tools).
PATH_SCOPED: frozenset[Capability] = frozenset({Capability.FILE_READ, Capability.FILE_WRITE})

Risk = Literal["safe", "moderate", "dangerous"]
Reversibility = Literal["easy", "effort", "irreversible"]


class ToolManual(BaseModel):
    """Everything the broker and the model are told about a tool."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{1,63}$")
    description: str
    parameters: dict[str, Any]
    capability: Capability
    category: str
    risk: Risk = "safe"
    mutating: bool = False
    reversibility: Reversibility = "easy"
    source: Literal["builtin", "mcp"] = "builtin"
    server: str | None = None
    timeout_s: float = 15.0
    output_cap: int = 64 * 1024

    def openai_schema(self) -> dict[str, Any]:
        """The function-tool description sent to an OpenAI-compatible model."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolError(errors.ToolError):
    """A tool failed in a way the user (and the model) should be told about, in plain words."""


class ToolTimedOut(ToolError):
    """The tool gave up waiting on what it runs (a server that does not answer): reported as a
    timeout, like a call the runner itself ended."""


class InvalidArguments(ToolError):
    """The arguments do not fit the tool's model: told to the model, which may try again."""


class ToolRefused(ToolError):
    """The call is never allowed, whatever the grants (a hard-denied command, a forbidden
    address): raised from `targets()`, it is refused before anyone is asked, with the reason."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: structured data for the model, and a readable rendering."""

    data: Any
    text: str
    truncated: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
    # What the result lists, in the order shown (a folder's entries, found files, as paths), so
    # that a follow-up's "the second one" can point at one: data, never a request.
    listed: tuple[str, ...] = ()


class CallPlan(BaseModel):
    """What one call will do, as structure: the prompt, the CLI question, Permissions and the
    audit render from this and nothing is parsed back out of prose (invariant 10).

    Every field is filled by the tool's `prepare` from what `run` will execute; a field a tool
    has nothing for stays empty. Paths are absolute; strings are shown escaped by front ends.
    """

    model_config = ConfigDict(frozen=True)

    # A command: each stage's argv exactly as it runs (the resolved program first), and the
    # working folder. `network_stages` are the indexes of the stages that get a network.
    stages: tuple[tuple[str, ...], ...] = ()
    cwd: str | None = None
    network_stages: tuple[int, ...] = ()
    # What the sandbox shows of the person's files: read-only, and writable.
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    # What the call may reach over the network: empty = nothing; "internet" = internet egress
    # only (no loopback, no LAN); otherwise host names or addresses the person named.
    network: tuple[str, ...] = ()
    # The files or folders the call reads or changes by name (a file tool's path, a command's
    # operands), and the files it will change where that can be known in advance (a patch's
    # targets, an archive's members).
    files: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    # False: the call writes where its input says and that input could not be read in advance
    # (a diff piped in, an archive too big to list): `changes` is not the whole list, and the
    # prompt must say so. A command with no folder named has `cwd` None: it runs in an empty
    # scratch folder of its own.
    changes_known: bool = True
    # Places the call may change that run code later: (path, when it runs), e.g.
    # ("~/.bashrc", "runs at your next login").
    startup: tuple[tuple[str, str], ...] = ()
    # An MCP call: the server, the tool and every argument (name, JSON text in full).
    mcp_server: str | None = None
    mcp_tool: str | None = None
    mcp_arguments: tuple[tuple[str, str], ...] = ()
    # A request that leaves the computer: the full destination and what it carries.
    url: str | None = None
    method: str | None = None
    body: str | None = None
    # The limits a command runs under: (what, how much), e.g. ("memory", "1 GiB").
    limits: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Prepared:
    """One tool call, checked once: what it touches, how undoable it is, and the exact plan.

    The runner checks the permission token against `targets` and then runs exactly this object;
    nothing is resolved again between the check and the use. `plan` is the tool's own: a
    resolved path, a parsed command with its sandbox, a normalised URL.
    """

    arguments: Mapping[str, Any]
    targets: tuple[str, ...]
    reversibility: Reversibility
    plan: object = None
    # The validated arguments, for a tool that has an arguments model.
    values: ToolArguments | None = None
    # What the call will do, as structure, for the prompt and the audit (None: nothing to show
    # beyond the tool's name and arguments).
    call_plan: CallPlan | None = None

    @classmethod
    def of(
        cls,
        values: ToolArguments,
        targets: Iterable[str],
        reversibility: Reversibility,
        plan: object = None,
        call_plan: CallPlan | None = None,
    ) -> Prepared:
        """A call prepared from validated values (its `arguments`: what the caller gave)."""
        arguments = values.model_dump(exclude_unset=True)
        return cls(arguments, tuple(targets), reversibility, plan, values, call_plan)


@dataclass(frozen=True)
class HealthCheck:
    """What works on this machine for a tool, in plain words (`chamberlain doctor`)."""

    name: str
    ok: bool
    detail: str
    # A failed required check makes `doctor` exit 1; optional ones only inform.
    required: bool = True
    # What a person does to make a failed check pass, when there is something to do.
    fix: str = ""


@dataclass(frozen=True)
class RequestWords:
    """What the router read in the user's own words, as the tools need it (no broker types)."""

    paths: tuple[str, ...] = ()
    url: str | None = None
    command: str | None = None
    cwd: str | None = None
    needs_screen_read: bool = False
    # The message itself, as the user wrote it (a fast-path prefix removed).
    text: str = ""


@dataclass(frozen=True)
class Tool:
    """A registered tool: the manual, its arguments model, and the callables behind it.

    `targets(args)` names the resources the call would touch, normalised (for file tools: fully
    resolved absolute paths). The runner checks each against the grant's scope *before* `run`.
    `run(args)` does the work on exactly those normalised targets. A tool built with
    `typed_tool` has an `arguments` model: every entry point validates with it first, and the
    tool itself only ever sees the validated values. A tool without one (a test double, later an
    MCP tool) is validated by the runner against its manual's JSON schema.
    """

    manual: ToolManual
    run: Callable[[dict[str, Any]], ToolResult]
    targets: Callable[[dict[str, Any]], list[str]] = field(default=lambda _args: [])
    # How undoable this particular call is, when it depends on the arguments (a command);
    # None: the manual's own value. Shown in the permission prompt and the audit.
    reversibility_of: Callable[[dict[str, Any]], Reversibility] | None = None
    # The scopes the user's own request names for this tool (their folder, site, display,
    # command line): a prompt for one of these is "the user's scope". None: it names none.
    user_scopes_of: Callable[[RequestWords], list[str]] | None = None
    # What works on this machine for this tool; each tool group reports on itself.
    health: Callable[[], list[HealthCheck]] | None = None
    # Tools that resolve what they touch: check once (`prepare_of`) and run exactly that
    # (`run_prepared`). Without them a call is prepared from `targets` and run from its arguments.
    prepare_of: Callable[[Any], Prepared] | None = None
    run_prepared: Callable[[Prepared], ToolResult] | None = None
    # The arguments model: the manual's `parameters` are its schema. None: the manual's schema.
    arguments: type[ToolArguments] | None = None
    # What the audit keeps of a call's arguments, for a tool whose arguments may hold content
    # (an MCP server's write_file); None: the arguments, redacted of secrets.
    audited_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def read_arguments(self, args: Mapping[str, Any]) -> ToolArguments | None:
        """The validated values (None for a tool without a model), or `InvalidArguments`."""
        return None if self.arguments is None else _read(self.name, self.arguments, args)

    def prepare(self, args: Mapping[str, Any] | ToolArguments) -> Prepared:
        """Check the call once: targets, reversibility and the plan `execute` will run.

        `args` are the raw arguments, or values already read with this tool's model."""
        if self.prepare_of is not None:
            return self.prepare_of(args)
        if isinstance(args, ToolArguments):
            args = args.model_dump(exclude_unset=True)
        else:
            self.read_arguments(args)  # a model without `typed_tool` still checks what it is given
        raw = dict(args)
        return Prepared(raw, tuple(self.targets(raw)), self.reversibility(raw))

    def execute(self, prepared: Prepared) -> ToolResult:
        """Run exactly the prepared call."""
        if self.run_prepared is not None:
            return self.run_prepared(prepared)
        return self.run(dict(prepared.arguments))

    def reversibility(self, args: dict[str, Any]) -> Reversibility:
        if self.reversibility_of is None:
            return self.manual.reversibility
        try:
            return self.reversibility_of(args)
        except (ToolError, ValueError):
            return self.manual.reversibility

    @property
    def name(self) -> str:
        return self.manual.name

    @property
    def capability(self) -> Capability:
        return self.manual.capability


A = TypeVar("A", bound=ToolArguments)


def _read(name: str, model: type[A], args: Mapping[str, Any]) -> A:
    try:
        return model.read(args)
    except ValidationError as exc:
        raise InvalidArguments(f"invalid arguments for {name}: {explain(exc)}") from exc


def typed_tool(
    manual: ToolManual,
    arguments: type[A],
    prepare: Callable[[A], Prepared],
    run: Callable[[A, Prepared], ToolResult],
    *,
    user_scopes_of: Callable[[RequestWords], list[str]] | None = None,
    health: Callable[[], list[HealthCheck]] | None = None,
) -> Tool:
    """A tool whose arguments are the model `arguments` (its manual must show that model's
    schema: `parameters=arguments.parameters()`).

    `prepare(values)` checks the call once (`Prepared.of(values, targets, ...)`); `run(values,
    prepared)` runs exactly that. Every entry point validates first: the runner hands over values
    it read already; a direct caller's raw arguments are read here, with the same errors.
    """
    if manual.parameters != arguments.parameters():
        raise ValueError(f"the manual of {manual.name} does not show its arguments model")

    def values_of(args: Mapping[str, Any] | ToolArguments) -> A:
        if isinstance(args, arguments):
            return args
        if isinstance(args, ToolArguments):
            raise InvalidArguments(f"{manual.name} was given another tool's arguments")
        return _read(manual.name, arguments, args)

    def prepare_call(args: Mapping[str, Any] | ToolArguments) -> Prepared:
        values = values_of(args)
        prepared = prepare(values)
        return (
            prepared if prepared.values is values else dataclasses.replace(prepared, values=values)
        )

    def run_call(prepared: Prepared) -> ToolResult:
        values = prepared.values
        if not isinstance(values, arguments):
            values = values_of(prepared.arguments)
        return run(values, prepared)

    return Tool(
        manual=manual,
        run=lambda args: run_call(prepare_call(args)),
        targets=lambda args: list(prepare_call(args).targets),
        reversibility_of=lambda args: prepare_call(args).reversibility,
        user_scopes_of=user_scopes_of,
        health=health,
        prepare_of=prepare_call,
        run_prepared=run_call,
        arguments=arguments,
    )

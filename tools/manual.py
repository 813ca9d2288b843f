"""What a tool is: its manual (capability, risk, schema) and the callable behind it.

A tool never checks permissions itself and never runs on its own: `broker/runner.py` is the only
caller. A tool may assume its arguments were validated against its schema, and must report the
resources it would touch through `targets()` so the runner can check them against a grant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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


class ToolError(Exception):
    """A tool failed in a way the user (and the model) should be told about, in plain words."""


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


@dataclass(frozen=True)
class HealthCheck:
    """What works on this machine for a tool, in plain words (`chamberlain doctor`)."""

    name: str
    ok: bool
    detail: str
    # A failed required check makes `doctor` exit 1; optional ones only inform.
    required: bool = True


@dataclass(frozen=True)
class RequestWords:
    """What the router read in the user's own words, as the tools need it (no broker types)."""

    paths: tuple[str, ...] = ()
    url: str | None = None
    command: str | None = None
    cwd: str | None = None
    needs_screen_read: bool = False


@dataclass(frozen=True)
class Tool:
    """A registered tool: the manual plus two callables.

    `targets(args)` names the resources the call would touch, normalised (for file tools: fully
    resolved absolute paths). The runner checks each against the grant's scope *before* `run`.
    `run(args)` does the work on exactly those normalised targets.
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
    prepare_of: Callable[[dict[str, Any]], Prepared] | None = None
    run_prepared: Callable[[Prepared], ToolResult] | None = None

    def prepare(self, args: dict[str, Any]) -> Prepared:
        """Check the call once: targets, reversibility and the plan `execute` will run."""
        if self.prepare_of is not None:
            return self.prepare_of(args)
        return Prepared(args, tuple(self.targets(args)), self.reversibility(args))

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

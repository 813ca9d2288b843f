"""The policy gate: which tools the model may see for an intent. Pure data in, data out.

`decide()` is a pure function of the router's output, the policy table, the registered tools and
the user's overrides. It never consults a model and never executes anything. Deny always wins:
an intent's `forbidden` list and the user's deny lists beat every `allowed` and every `add`.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from broker.profiles import Resolved
from broker.settings import PolicyOverrides
from broker.types import Intent, PolicyDecision, RouterOutput
from core.errors import ConfigError
from tools.manual import Capability
from tools.mcp.config import McpCategory

log = logging.getLogger("chamberlain.broker.policy")


class PolicyError(ConfigError):
    pass


class IntentPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    allowed: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)
    # Classes of MCP servers' tools (read, write, execute) shown for this intent; a tool the
    # intent forbids by name stays forbidden.
    mcp: list[McpCategory] = Field(default_factory=list)


class PolicyTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    intents: dict[Intent, IntentPolicy]

    @field_validator("intents")
    @classmethod
    def _every_intent_listed(cls, value: dict[Intent, IntentPolicy]) -> dict[Intent, IntentPolicy]:
        missing = set(Intent) - set(value)
        if missing:
            raise ValueError(f"intents missing from the table: {sorted(missing)}")
        if value[Intent.CHAT_ONLY].allowed or value[Intent.CHAT_ONLY].mcp:
            raise ValueError("chat_only must allow no tools: it is where unknown intents land")
        return value

    def named_tools(self) -> set[str]:
        names: set[str] = set()
        for entry in self.intents.values():
            names.update(entry.allowed)
            names.update(entry.forbidden)
        return names


def load_policy_table(path: Path | None = None) -> PolicyTable:
    """The bundled table, or one at `path`. Invalid tables fail loudly: no silent defaults."""
    origin = "the bundled policy.toml" if path is None else str(path)
    try:
        if path is None:
            text = resources.files("resources").joinpath("policy.toml").read_text("utf-8")
        else:
            text = path.read_text("utf-8")
        return PolicyTable.model_validate(tomllib.loads(text))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise PolicyError(f"{origin} is invalid: {exc}") from exc


def decide(
    router: RouterOutput,
    table: PolicyTable,
    tools: Mapping[str, Capability],
    overrides: PolicyOverrides | None = None,
    *,
    mcp_tools: Mapping[str, str] | None = None,
    profile: Resolved | None = None,
) -> PolicyDecision:
    """Allowed and forbidden tools, and the capabilities they need, for this turn.

    `tools` maps every registered tool to its capability; `mcp_tools` maps the ones that come
    from MCP servers to their class (read, write, execute), which the intent's `mcp` list
    allows. Tools the table names but that are not registered are left out; registered tools
    the table does not allow are forbidden. `profile` (the tool profile in use, resolved) only
    narrows: a tool it left out is forbidden whatever else allows it.
    """
    overrides = overrides or PolicyOverrides()
    intent = router.intent if router.intent in table.intents else Intent.CHAT_ONLY
    entry = table.intents[intent]
    reasons = [f"intent {intent.value}: {entry.description or 'no description'}"]

    wanted = list(entry.allowed)
    for name, category in sorted((mcp_tools or {}).items()):
        if category in entry.mcp and name not in wanted:
            wanted.append(name)
    intent_override = overrides.intents.get(intent.value)
    if intent_override:
        for name in intent_override.add:
            if name not in wanted:
                wanted.append(name)
                reasons.append(f"{name}: added by your settings for {intent.value}")

    denied: dict[str, str] = {}
    for name in entry.forbidden:
        denied[name] = f"{name}: forbidden for {intent.value} by the policy table"
    for name in overrides.deny:
        denied.setdefault(name, f"{name}: denied everywhere by your settings")
    if intent_override:
        for name in intent_override.deny:
            denied.setdefault(name, f"{name}: denied for {intent.value} by your settings")

    allowed: list[str] = []
    for name in wanted:
        if name in denied:
            reasons.append(denied[name])
        elif name not in tools:
            reasons.append(f"{name}: not installed")
        elif profile is not None and name not in profile.tools:
            why = profile.dropped.get(name, "not in it")
            reasons.append(f"{name}: left out by the tool profile {profile.profile!r} ({why})")
        else:
            allowed.append(name)

    allowed.sort()
    forbidden = sorted(set(tools) - set(allowed))
    capabilities = sorted({tools[name] for name in allowed}, key=lambda c: c.value)
    return PolicyDecision(
        intent=intent,
        allowed_tools=allowed,
        forbidden_tools=forbidden,
        required_capabilities=capabilities,
        reasons=reasons,
    )


def coverage_problems(
    table: PolicyTable, tools: Mapping[str, Capability], mcp_tools: Mapping[str, str] | None = None
) -> list[str]:
    """Registered tools no intent allows: the start-up self-test refuses to run with any."""
    allowed_somewhere: set[str] = set()
    classes: set[str] = set()
    for entry in table.intents.values():
        allowed_somewhere.update(entry.allowed)
        classes.update(entry.mcp)
    mcp_tools = mcp_tools or {}
    return [
        f"tool {name!r} is registered but no intent in the policy table allows it"
        for name in sorted(tools)
        if name not in allowed_somewhere and mcp_tools.get(name) not in classes
    ]

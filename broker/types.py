"""The data that flows through one turn: router output, policy decision, grants, what memory
did, turn result.

Plain pydantic models and frozen dataclasses with no behaviour beyond validation, so every stage
can be tested and printed as JSON on its own. Nothing here is worded for a person: each front end
says what a `MemoryEvent` means in its own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import Remedy
from memory.types import FactSource, FactStatus, Sensitivity
from tools.manual import Capability
from tools.mcp.failures import McpLeftOut


class Intent(StrEnum):
    CHAT_ONLY = "chat_only"
    LOOKUP_SEARCH = "lookup_search"
    BROWSE_ONCE = "browse_once"
    ONE_SHOT_DISCOVERY = "one_shot_discovery"
    SCREEN_OBSERVE = "screen_observe"
    FILE_TASK = "file_task"
    SYSTEM_TASK = "system_task"
    MEMORY_READ = "memory_read"
    MEMORY_WRITE = "memory_write"


RiskLevel = Literal["low", "medium", "high"]
RISK_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}

# What a direct action does; the executor maps each to one tool.
Action = Literal[
    "list_files",
    "read_file",
    "search_files",
    "system_info",
    "run_command",
    "screenshot",
    "active_window",
    "fetch_url",
    "open_url",
    "web_search",
]


class RouterArguments(BaseModel):
    """What the heuristics pulled out of the user's words. Paths are as the user wrote them."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(default_factory=list)
    command: str | None = None
    # The folder a command runs in, as written ("run npm install in ./frontend"); None: home.
    cwd: str | None = None
    url: str | None = None
    query: str | None = None
    fact: str | None = None
    pattern: str | None = None
    action: Action | None = None
    topics: list[str] = Field(default_factory=list)
    # What a follow-up's referring words point at in an earlier turn of its conversation ("the
    # second one" -> the path listed second; "that site" -> the page opened), whatever the
    # intent: the model is told, so it answers about the right item. It is never a scope of
    # the person's request: a listed name is a tool's output, so it grants no reach.
    refers_to: str | None = None


class RouterOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    intent: Intent = Intent.CHAT_ONLY
    needs_web: bool = False
    needs_search: bool = False
    needs_memory_read: bool = False
    needs_memory_write: bool = False
    needs_file_access: bool = False
    needs_screen_read: bool = False
    needs_system_execute: bool = False
    risk_level: RiskLevel = "low"
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    # Who decided the intent: a fast-path prefix, the rules, the learned classifier (where the
    # rules were unsure and it disagreed), a model's refinement, or the person (who said yes to
    # remembering what they wrote: `Session.ask(remember=True)`).
    source: Literal["prefix", "heuristic", "classifier", "model", "person"] = "heuristic"
    arguments: RouterArguments = Field(default_factory=RouterArguments)
    # A lookup that is research: compare, weigh sources, recommend, plan (broker/router/research).
    research: bool = False
    # The message with any fast-path prefix removed; what the model is asked.
    text: str = ""


class PolicyDecision(BaseModel):
    intent: Intent
    allowed_tools: list[str]
    forbidden_tools: list[str]
    required_capabilities: list[Capability]
    reasons: list[str] = Field(default_factory=list)


class GrantMode(StrEnum):
    ONCE = "once"
    TIMED = "timed"
    SESSION = "session"
    ALWAYS = "always"


class Grant(BaseModel):
    """A lease on one capability within one scope, until it expires or is revoked."""

    id: str
    capability: Capability
    scope: str
    mode: GrantMode
    issued_at: float
    expires_at: float | None = None
    decided_by: Literal["user", "rule", "policy"] = "user"
    # A once-grant binds to exactly one tool call and its argument digest.
    tool_call_id: str | None = None
    args_digest: str | None = None
    revoked: bool = False


# "cancelled": the person stopped the turn while the call was running.
ToolStatus = Literal["ok", "denied", "refused", "error", "timeout", "cancelled"]


class ToolCallRecord(BaseModel):
    tool: str
    arguments: dict[str, Any] | str
    status: ToolStatus
    reason: str = ""
    capability: Capability | None = None
    token_id: str | None = None
    call_id: str = ""
    output_digest: str | None = None
    output_len: int | None = None


# What memory did with one fact after a turn. "added", "superseded" (added, replacing an older
# value of the same slot) and "pending" (kept, waiting for the person's consent) keep something
# new; "duplicate" found it kept already; the rest kept nothing: "refused" (a credential),
# "too_long", "empty" (nothing to remember was said), "temporary" (a temporary chat) and
# "paused" (memory.paused is set).
MemoryAction = Literal[
    "added",
    "superseded",
    "pending",
    "duplicate",
    "refused",
    "too_long",
    "empty",
    "temporary",
    "paused",
    # Nothing kept: the person stated a lasting fact about themselves that the router did not
    # take as a memory write; `text` is what to offer to remember (broker/fact_offer.py).
    "offer",
    # Asked to forget something: a remembered fact that matches (its id, text, level and
    # status), for the person to forget with one click or command; nothing is forgotten by
    # itself (`corrected`: shown because the person corrected it, not asked to forget it).
    # "forget_none": nothing remembered matches `text`, what they asked to forget (no text:
    # "forget that", and the last turn kept nothing).
    "forget_match",
    "forget_none",
]


@dataclass(frozen=True)
class MemoryEvent:
    """What the memory post-hook did with one fact, as data for the front ends to word.

    A kept fact (added, superseded, pending, duplicate) carries its id, text, level, status,
    category, the detectors' reasons and where it came from; `replaces` is the text of the older
    fact it superseded. `refusal` is the memory layer's own sentence for a refused fact, and
    `limit` the most characters one fact may have (for "too_long"). `corrected` marks a
    "forget_match" shown because the person corrected what they told before.
    """

    action: MemoryAction
    fact_id: str | None = None
    text: str = ""
    sensitivity: Sensitivity | None = None
    status: FactStatus | None = None
    category: str = ""
    reasons: tuple[str, ...] = ()
    source: FactSource | None = None
    replaces: str | None = None
    refusal: str = ""
    limit: int | None = None
    corrected: bool = False


class TurnResult(BaseModel):
    router: RouterOutput
    policy: PolicyDecision
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    # What the model (or a direct action) replied; what memory did is not in it (see `memory`).
    reply: str = ""
    memory: list[MemoryEvent] = Field(default_factory=list)
    iterations: int = 0
    direct: bool = False
    model: str | None = None
    # True when the request could not be carried out (the reply says why).
    failed: bool = False
    # How the turn ended: "done", "failed" (a stage raised) or "cancelled" (Ctrl-C, Stop).
    status: Literal["done", "failed", "cancelled"] = "done"
    # MCP servers whose tools this turn could have been shown but did not have, and why (each
    # front end words it: the server did not answer, and how to try it again).
    mcp_left_out: list[McpLeftOut] = Field(default_factory=list)
    # What the person can do about a reply that says what could not be done (connect a model):
    # each front end words it after the reply (app/errors.py).
    remedy: Remedy | None = None

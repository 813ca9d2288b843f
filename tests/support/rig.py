"""The real enforcement stack around a test's tools: `make_rig(tmp_path, tools, **overrides)`.

Real parts only: a `ToolRunner` over a `ToolRegistry`, a `PermissionBroker` with a real
`GrantStore` (in memory, or a grants file under tmp_path) and a real `TokenAuthority`, a real
`AuditLog` file, and a `ManualClock`, so grant and token expiry are tested by moving the clock.
The prompter is the test's own (default: `Approving`, which says yes and records each question).
A test that needs a wider fixture (a home with files, tools built from its config) builds that,
then hands its tools or registry to the rig; the `tool_rig` fixture in tests/conftest.py builds
rigs under tmp_path and closes their audit logs after the test.

Nothing here writes outside the tmp_path it is given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.audit.writer import AuditLog
from broker.permissions import (
    GrantStore,
    PermissionBroker,
    PermissionRequest,
    PermissionToken,
    PromptDecision,
    Prompter,
    RulePrompter,
    TokenAuthority,
)
from broker.runner import ToolRunner, TurnScope
from broker.types import GrantMode
from core.clock import ManualClock
from tools.manual import Tool
from tools.registry import ToolRegistry


class Approving(RulePrompter):
    """A prompter that says yes (with `mode`) to every question and records what it was asked."""

    def __init__(self, mode: GrantMode = GrantMode.ONCE) -> None:
        self.mode = mode
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=self.mode)


@dataclass
class Rig:
    """One runner and what it enforces with; `turn` allows every tool the rig was built with
    (unless told otherwise); `events` reads the audit file back."""

    runner: ToolRunner
    permissions: PermissionBroker
    grants: GrantStore
    tokens: TokenAuthority
    prompter: Prompter
    audit: AuditLog
    audit_path: Path
    clock: ManualClock
    turn: TurnScope

    @property
    def registry(self) -> ToolRegistry:
        return self.runner.registry

    def events(self, name: str | None = None, call_id: str | None = None) -> list[dict[str, Any]]:
        """The audit records written so far, of event `name` and call `call_id` when given."""
        records = [json.loads(line) for line in self.audit_path.read_text().splitlines()]
        return [
            record
            for record in records
            if (name is None or record["event"] == name)
            and (call_id is None or record["data"].get("call_id") == call_id)
        ]

    def token_for(self, tool: Tool, call_id: str, arguments: dict[str, Any]) -> PermissionToken:
        """A token for exactly this call, as the broker issues it (asking the prompter)."""
        token = self.permissions.authorize(
            tool=tool.name,
            capability=tool.capability,
            arguments=arguments,
            targets=tool.targets(arguments),
            call_id=call_id,
            user_scopes=[],
            turn_id=self.turn.turn_id,
        )
        assert isinstance(token, PermissionToken), token
        return token

    def close(self) -> None:
        self.audit.close()


def make_rig(
    tmp_path: Path,
    tools: Iterable[Tool] = (),
    *,
    registry: ToolRegistry | None = None,
    prompter: Prompter | None = None,
    clock: ManualClock | None = None,
    audit_path: Path | None = None,
    grants_path: Path | None = None,
    secret: bytes = b"s" * 32,
    prompt_timeout_s: float | None = None,
    allowed: Sequence[str] | None = None,
    turn_id: str = "t-test",
    user_scopes: Sequence[str] = (),
    **runner_options: Any,
) -> Rig:
    """The stack around `tools` (or a ready `registry`). The audit log is `audit_path`
    (default tmp_path/audit.jsonl); grants live in memory unless `grants_path` names their
    file; the rig's turn allows `allowed` (default: every tool) with the person's
    `user_scopes`; `runner_options` go to ToolRunner (max_argument_bytes, egress)."""
    clock = clock or ManualClock()
    audit_path = audit_path or tmp_path / "audit.jsonl"
    audit = AuditLog(audit_path, clock)
    prompter = prompter if prompter is not None else Approving()
    grants = GrantStore(grants_path, clock)
    tokens = TokenAuthority(secret, clock)
    timeouts = {} if prompt_timeout_s is None else {"prompt_timeout_s": prompt_timeout_s}
    permissions = PermissionBroker(
        grants=grants, tokens=tokens, prompter=prompter, audit=audit, clock=clock, **timeouts
    )
    registry = registry if registry is not None else ToolRegistry(tools)
    runner = ToolRunner(registry, permissions, audit, **runner_options)
    names = registry.names() if allowed is None else list(allowed)
    turn = TurnScope(turn_id=turn_id, allowed=names, user_scopes=list(user_scopes))
    return Rig(runner, permissions, grants, tokens, prompter, audit, audit_path, clock, turn)

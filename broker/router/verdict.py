"""What a language model may answer when asked to route a message, and how its reply is read.

The reply is untrusted input: it is accepted only whole, as exactly the `_ModelVerdict` schema
(strict: no coercion, no extra keys, no NaN) within `MODEL_REPLY_LIMIT` characters; a Markdown
fence around it is tolerated, nothing else. `router_schema` is the same contract as JSON schema,
sent with the request.

This module must never repair, coerce or partly accept a reply, nor log what it says.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from broker.router.scoring import NEEDS_FIELDS
from broker.types import RISK_ORDER, Intent, RiskLevel

log = logging.getLogger("chamberlain.broker.router")

# The largest model reply we will parse.
MODEL_REPLY_LIMIT = 4096


class _ModelVerdict(BaseModel):
    """What the model may say about a message. Strict: no coercion, no extra keys, no NaN."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    intent: Intent
    needs_web: bool
    needs_search: bool
    needs_memory_read: bool
    needs_memory_write: bool
    needs_file_access: bool
    needs_screen_read: bool
    needs_system_execute: bool
    risk_level: RiskLevel
    confidence: float = Field(ge=0.0, le=1.0)


def router_schema() -> dict[str, Any]:
    """The JSON schema the model's answer must match (a fresh copy each call)."""
    properties: dict[str, Any] = {
        "intent": {"type": "string", "enum": [intent.value for intent in Intent]},
    }
    properties.update({name: {"type": "boolean"} for name in NEEDS_FIELDS})
    properties["risk_level"] = {"type": "string", "enum": list(RISK_ORDER)}
    properties["confidence"] = {"type": "number", "minimum": 0, "maximum": 1}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# Some endpoints wrap JSON in a Markdown fence even when asked not to; the content is still
# validated in full.
_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.S)


def _parse_verdict(raw: object) -> _ModelVerdict | None:
    if not isinstance(raw, str):
        log.debug("router model reply is %s, not text; keeping heuristics", type(raw).__name__)
        return None
    if len(raw) > MODEL_REPLY_LIMIT:
        log.debug("router model reply is %d chars; keeping heuristics", len(raw))
        return None
    fenced = _FENCE_RE.match(raw)
    body = fenced.group(1) if fenced is not None else raw
    try:
        return _ModelVerdict.model_validate_json(body.strip())
    except ValidationError as exc:
        log.debug("router model reply rejected (%d errors); keeping heuristics", exc.error_count())
        return None

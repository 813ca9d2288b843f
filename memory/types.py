"""The records of Chamberlain's memory: facts, anchors, events and sensitivity assessments.

Plain pydantic models shared by the store, the sensitivity detectors and the broker's memory
post-hook. Nothing here reads or writes anything.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Sensitivity(StrEnum):
    LOW = "low"
    PERSONAL = "personal"
    SECRET = "secret"


SENSITIVITY_ORDER: dict[Sensitivity, int] = {
    Sensitivity.LOW: 0,
    Sensitivity.PERSONAL: 1,
    Sensitivity.SECRET: 2,
}


def highest(*levels: Sensitivity) -> Sensitivity:
    """The most sensitive of the given levels (LOW when none)."""
    return max(levels, key=SENSITIVITY_ORDER.__getitem__, default=Sensitivity.LOW)


class FactStatus(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    SUPERSEDED = "superseded"


class FactSource(StrEnum):
    USER_EXPLICIT = "user_explicit"
    EXTRACTED = "extracted"
    USER_EDIT = "user_edit"
    IMPORT = "import"


class EventKind(StrEnum):
    ADD = "ADD"
    CONFIRM = "CONFIRM"
    REJECT = "REJECT"
    SUPERSEDE = "SUPERSEDE"
    EDIT = "EDIT"
    DELETE = "DELETE"
    EXPIRE = "EXPIRE"
    USED = "USED"
    EXPORT = "EXPORT"
    IMPORT = "IMPORT"
    ANCHOR_SET = "ANCHOR_SET"
    ANCHOR_REMOVE = "ANCHOR_REMOVE"


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    subject: str = "user"
    # Single-valued things ("user.name", "user.home_city", "user.employer", ...): a new value
    # supersedes the old fact instead of sitting beside it.
    slot: str | None = None
    category: str = "general"
    sensitivity: Sensitivity = Sensitivity.LOW
    reasons: list[str] = Field(default_factory=list)
    status: FactStatus = FactStatus.ACTIVE
    source: FactSource = FactSource.USER_EXPLICIT
    # The user's own words the fact came from.
    evidence: str = ""
    created_at: float
    confirmed_at: float | None = None
    last_used_at: float | None = None
    use_count: int = 0
    expires_at: float | None = None
    superseded_by: str | None = None


class Anchor(BaseModel):
    """A pinned fact only the user writes; always in the system prompt, in order."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    position: int
    created_at: float


class MemoryEvent(BaseModel):
    """One change to memory. Holds a digest of the content, never the text itself."""

    model_config = ConfigDict(extra="forbid")

    id: int
    kind: EventKind
    fact_id: str | None
    at: float
    digest: str | None = None
    detail: str = ""


class Assessment(BaseModel):
    """What the detectors found in a candidate fact."""

    level: Sensitivity = Sensitivity.LOW
    reasons: list[str] = Field(default_factory=list)
    category: str = "general"
    # Credentials are never stored: when set, the fact is refused with this message.
    refused: str | None = None

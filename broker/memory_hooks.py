"""Where the turn meets memory: recall before the executor, writes in the post-hook.

- Before the executor: anchors (always, in order, within their budget) and the few facts that
  match the message go into the model's context. Facts above `low` are held back from a model
  endpoint outside loopback unless the user allowed that endpoint.
- After the reply (post-hook, the only place memory is written): an explicit "remember that …"
  is assessed — credentials refused, `low` stored at once with a visible undo, `personal` and
  `secret` left pending for the user's approval. With a model configured, the model may propose
  facts from the user's own words; a proposal whose evidence is not a quote of the message is
  dropped, and the same rules apply.

The model never writes memory mid-loop, never writes anchors, and can only raise a fact's
sensitivity. The audit log gets ids, levels and digests — never a fact's text.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from broker.audit import AuditEvent, AuditLog, digest
from broker.keys import MemoryKey, load_memory_key, record_keying
from broker.llm.base import ChatModel, ModelError
from broker.settings import MemorySettings
from broker.types import Intent, RouterOutput, TurnResult
from memory.db import open_database
from memory.sensitivity import assess, combine
from memory.slots import detect_slot, fact_from_request
from memory.store import CredentialRefused, MemoryStore
from memory.types import Fact, FactSource, FactStatus, Sensitivity

log = logging.getLogger("chamberlain.broker.memory")

MEMORY_FILE = "memory.db"
MAX_PROPOSALS = 3
MAX_FACT_CHARS = 300


def open_memory(
    home: Path,
    settings: MemorySettings,
    clock: Any,
    *,
    ask_passphrase: Any = None,
) -> MemoryStore:
    """Open (or create) the memory store under `home`, keyed as settings and history say."""
    from memory.sensitivity import refuse_credentials

    home.mkdir(parents=True, exist_ok=True)
    key: MemoryKey = load_memory_key(home, settings.encryption, ask_passphrase=ask_passphrase)
    if not key.encrypted:
        log.warning("memory is stored unencrypted (memory.encryption = off)")
    db = open_database(
        home / MEMORY_FILE,
        key=key.key,
        passphrase=key.passphrase,
        encrypted=key.encrypted,
    )
    record_keying(home, key.keyed_by)
    return MemoryStore(db, clock, refuse=refuse_credentials)


def egress_limit(model: ChatModel | None, settings: MemorySettings) -> Sensitivity:
    """The most sensitive level that may be sent to this model endpoint."""
    if model is None or model.is_loopback or model.is_embedded:
        return Sensitivity.SECRET
    base = str(getattr(model, "base_url", "")).rstrip("/")
    allowed = {url.rstrip("/") for url in settings.allow_remote}
    return Sensitivity.SECRET if base and base in allowed else Sensitivity.LOW


@dataclass
class Recollection:
    """What memory contributes to one turn's context."""

    anchors: str = ""
    facts: list[Fact] = field(default_factory=list)
    held_back: int = 0

    def context_lines(self) -> list[str]:
        lines: list[str] = []
        if self.anchors:
            lines.append("What the user asked you always to keep in mind:\n" + self.anchors)
        if self.facts:
            lines.append(
                "Facts the user told you before (from Chamberlain's memory; use them only if "
                "relevant):\n" + "\n".join(f"- {f.text}" for f in self.facts)
            )
        if self.held_back:
            lines.append(
                f"{self.held_back} more remembered fact(s) matched, but are personal and this "
                "model runs outside the user's machine, so they were held back. If they would "
                "help, say so: the user can allow this endpoint with the setting "
                "memory.allow_remote."
            )
        return lines


def recollect(
    store: MemoryStore,
    text: str,
    settings: MemorySettings,
    limit: Sensitivity,
    *,
    temporary: bool,
) -> Recollection:
    """Anchors always; matching facts unless this is a temporary chat."""
    anchors = store.anchors_prompt(settings.anchor_budget_chars).text
    if temporary or settings.recall_limit == 0:
        return Recollection(anchors=anchors)
    facts = store.recall(text, limit=settings.recall_limit, max_sensitivity=Sensitivity.SECRET)
    allowed = [f for f in facts if _rank(f.sensitivity) <= _rank(limit)]
    return Recollection(anchors=anchors, facts=allowed, held_back=len(facts) - len(allowed))


def _rank(level: Sensitivity) -> int:
    return {Sensitivity.LOW: 0, Sensitivity.PERSONAL: 1, Sensitivity.SECRET: 2}[level]


def answer_from_memory(recollection: Recollection) -> str:
    """The reply to a memory question when there is no model to phrase it."""
    if not recollection.facts:
        return "I don't have anything in memory about that."
    lines = ["From memory:"] + [f"- {fact.text}" for fact in recollection.facts]
    return "\n".join(lines)


# --- writing ----------------------------------------------------------------------------------


class _Proposal(BaseModel):
    model_config = ConfigDict(extra="ignore", str_max_length=2000)

    text: str = Field(min_length=3)
    evidence: str = Field(min_length=3)
    category: str = "general"
    sensitivity: str | None = None


class _Proposals(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: list[_Proposal] = Field(default_factory=list, max_length=10)


PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": MAX_PROPOSALS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "evidence": {"type": "string"},
                    "category": {"type": "string"},
                    "sensitivity": {"type": "string", "enum": ["low", "personal", "secret"]},
                },
                "required": ["text", "evidence", "category", "sensitivity"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}

PROPOSAL_PROMPT = (
    "You help a desktop assistant decide what to remember about its user. From the user's "
    "message below, list at most 3 durable facts the user stated about themselves or their "
    "life (preferences, people, plans, circumstances) that would help in later conversations. "
    "Do not list questions, requests, small talk, or anything about the assistant. For each "
    "fact give: text (a short third-person-free statement such as 'my dog is called Rex'), "
    "evidence (an exact quote from the message), category, and sensitivity (low, personal, or "
    "secret for health, beliefs, ids, finances). Never include passwords, keys or codes. "
    'Answer with JSON only: {"facts": [...]}; {"facts": []} when there is nothing.'
)

LABEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sensitivity": {"type": "string", "enum": ["low", "personal", "secret"]}},
    "required": ["sensitivity"],
    "additionalProperties": False,
}

LABEL_PROMPT = (
    "Classify how sensitive this fact about a person is: low (harmless), personal (identifies "
    "or locates them: names, places, contacts, employer, birthday) or secret (health, beliefs, "
    "sexuality, ethnicity, union membership, biometrics, government ids, account numbers). "
    'Answer with JSON only: {"sensitivity": "..."}.'
)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


class MemoryWriter:
    """The memory post-hook: turns explicit requests and model proposals into stored facts."""

    def __init__(
        self,
        store: MemoryStore,
        settings: MemorySettings,
        audit: AuditLog,
        model: ChatModel | None = None,
        *,
        temporary: bool = False,
    ) -> None:
        self.store = store
        self.settings = settings
        self.audit = audit
        self.model = model
        self.temporary = temporary

    @property
    def extracting(self) -> bool:
        if self.model is None or self.temporary or self.settings.paused:
            return False
        setting = self.settings.extract
        return (not self.model.is_embedded) if setting is None else setting

    def after_turn(self, turn: TurnResult, turn_id: str) -> list[dict[str, Any]]:
        router = turn.router
        if router.intent is Intent.MEMORY_WRITE:
            return [self._explicit(router, turn_id)]
        if not self.extracting or not router.text.strip():
            return []
        return self._proposals(router.text, turn_id)

    # --- explicit "remember that …" ----------------------------------------------------------

    def _explicit(self, router: RouterOutput, turn_id: str) -> dict[str, Any]:
        raw = router.arguments.fact or router.text
        text = fact_from_request(raw).strip()
        if not text:
            return {"action": "empty", "notice": "What should I remember? Nothing was stored."}
        if self.temporary:
            return {
                "action": "temporary",
                "notice": "This is a temporary chat: nothing was remembered.",
            }
        if self.settings.paused:
            return {
                "action": "paused",
                "notice": "Memory is paused (memory.paused): nothing was remembered.",
            }
        return self._store(
            text,
            evidence=router.text,
            source=FactSource.USER_EXPLICIT,
            model_label=None,
            turn_id=turn_id,
        )

    def _store(
        self,
        text: str,
        *,
        evidence: str,
        source: FactSource,
        model_label: str | None,
        turn_id: str,
    ) -> dict[str, Any]:
        if len(text) > MAX_FACT_CHARS:
            return {
                "action": "too_long",
                "notice": f"That is too long to remember as one fact (over {MAX_FACT_CHARS} "
                "characters); nothing was stored.",
            }
        found = assess(text)
        if found.refused:
            self.audit.append(
                AuditEvent.MEMORY_WRITE, turn_id=turn_id, action="refused", source=source.value
            )
            return {"action": "refused", "notice": found.refused}
        if model_label is None and source is FactSource.USER_EXPLICIT:
            model_label = self._label(text, found.level)
        level = combine(found.level, model_label, found.category)
        status = FactStatus.ACTIVE if level is Sensitivity.LOW else FactStatus.PENDING
        try:
            outcome = self.store.add(
                text,
                sensitivity=level,
                category=found.category,
                reasons=found.reasons,
                source=source,
                evidence=evidence,
                slot=detect_slot(text),
                status=status,
            )
        except CredentialRefused as exc:
            self.audit.append(
                AuditEvent.MEMORY_WRITE, turn_id=turn_id, action="refused", source=source.value
            )
            return {"action": "refused", "notice": str(exc)}
        fact = outcome.fact
        self.audit.append(
            AuditEvent.MEMORY_WRITE,
            turn_id=turn_id,
            action=outcome.action,
            fact_id=fact.id,
            status=fact.status.value,
            sensitivity=fact.sensitivity.value,
            source=source.value,
            text=digest(fact.text),
            superseded=[old.id for old in outcome.superseded],
        )
        return {
            "action": "pending" if fact.status is FactStatus.PENDING else outcome.action,
            "fact_id": fact.id,
            "text": fact.text,
            "sensitivity": fact.sensitivity.value,
            "status": fact.status.value,
            "reasons": fact.reasons,
            "notice": _notice(outcome.action, fact, outcome.superseded, source),
        }

    def _label(self, text: str, detected: Sensitivity) -> str | None:
        """The model's sensitivity label, asked only where it can matter and may be sent."""
        if self.model is None or detected is Sensitivity.SECRET:
            return None
        if egress_limit(self.model, self.settings) is Sensitivity.LOW and (
            detected is not Sensitivity.LOW
        ):
            return None  # the text may not leave the machine
        try:
            raw = self.model.chat_json(
                [{"role": "system", "content": LABEL_PROMPT}, {"role": "user", "content": text}],
                LABEL_SCHEMA,
                "fact_sensitivity",
            )
            value = json.loads(raw).get("sensitivity")
        except (ModelError, ValueError, AttributeError) as exc:
            log.info("no sensitivity label from the model: %s", exc)
            return None
        return value if isinstance(value, str) else None

    # --- model proposals -----------------------------------------------------------------

    def _proposals(self, message: str, turn_id: str) -> list[dict[str, Any]]:
        assert self.model is not None
        try:
            raw = self.model.chat_json(
                [
                    {"role": "system", "content": PROPOSAL_PROMPT},
                    {"role": "user", "content": message[:4000]},
                ],
                PROPOSAL_SCHEMA,
                "memory_proposals",
            )
            proposals = _Proposals.model_validate_json(_strip_fence(raw))
        except (ModelError, ValidationError, ValueError) as exc:
            log.info("no memory proposals this turn: %s", exc)
            return []
        said = _squash(message)
        events: list[dict[str, Any]] = []
        for proposal in proposals.facts[:MAX_PROPOSALS]:
            if _squash(proposal.evidence) not in said:
                self.audit.append(
                    AuditEvent.MEMORY_WRITE,
                    turn_id=turn_id,
                    action="dropped",
                    why="evidence is not a quote of the user's message",
                )
                continue
            event = self._store(
                proposal.text.strip(),
                evidence=proposal.evidence,
                source=FactSource.EXTRACTED,
                model_label=proposal.sensitivity,
                turn_id=turn_id,
            )
            if event["action"] == "refused":
                continue  # nobody asked to store it: drop it without a notice
            events.append(event)
        return events


def _strip_fence(raw: str) -> str:
    text = raw.strip()
    if text.startswith("```"):
        text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text)
    return text


def _notice(action: str, fact: Fact, superseded: list[Fact], source: FactSource) -> str:
    quoted = f'"{fact.text}"'
    if fact.status is FactStatus.PENDING:
        why = f" ({', '.join(fact.reasons)})" if fact.reasons else ""
        return (
            f"To remember {quoted} I need your approval: it is {fact.sensitivity.value}{why}. "
            f"Approve with `chamberlain memory approve {fact.id}`, or drop it with "
            f"`chamberlain memory reject {fact.id}`."
        )
    if action == "duplicate":
        return f"Already remembered: {quoted}."
    lead = "Remembered" if source is FactSource.USER_EXPLICIT else "Remembered from your message"
    replaces = f'; replaces "{superseded[0].text}"' if superseded else ""
    return f"{lead}: {quoted}{replaces} (undo: `chamberlain memory forget {fact.id}`)."

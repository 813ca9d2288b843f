"""Where the turn meets memory: recall before the executor, writes in the post-hook.

- Before the executor: anchors (always, in order, within their budget) and the few facts that
  match the message go into the model's context. Facts above `low` are held back from a model
  endpoint outside loopback unless the user allowed that endpoint.
- After the reply (post-hook, the only place memory is written): an explicit "remember that …"
  is assessed — credentials refused, `low` stored at once with a visible undo, `personal` and
  `secret` left pending for the user's approval. With a model configured, the model may propose
  facts from the user's own words, and the same rules apply. A proposal is untrusted: it is
  dropped (and the drop audited with its reason) unless its evidence quotes the message, no
  credential is in the message, the evidence or the text, the text is not an instruction to the
  assistant, and every content word of the text is one the user used in that message.

The model never writes memory mid-loop, never writes anchors, and can only raise a fact's
sensitivity. The audit log gets ids, levels and digests — never a fact's text. What was done is
returned as typed `MemoryEvent`s; this module words none of it for a person (no notice, no
command to undo it): each front end does.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from broker.audit.events import AuditEvent
from broker.audit.redaction import digest
from broker.audit.writer import AuditLog
from broker.fact_offer import correction_of, forget_request, takes_back
from broker.instructions import APOSTROPHES, instruction_to_assistant
from broker.keys import PASSPHRASE_TRIES, MemoryKey, load_memory_key, record_keying
from broker.llm.base import ChatModel, ModelError, failure_in_turn, note_failure
from broker.settings import MemorySettings
from broker.types import Intent, MemoryEvent, RouterOutput, TurnResult
from core.errors import Remedy
from core.words import counted
from memory.db import MemoryLockedError, open_database
from memory.sensitivity.assessment import assess, combine, refuse_credentials
from memory.slots import detect_slot, fact_from_request
from memory.store.errors import CredentialRefused
from memory.store.facts import MemoryStore
from memory.types import Fact, FactSource, FactStatus, Sensitivity

log = logging.getLogger("chamberlain.broker.memory")

MEMORY_FILE = "memory.db"
MAX_PROPOSALS = 3
MAX_FACT_CHARS = 300
# How many remembered facts a "forget …" shows to pick from, best match first.
FORGET_SHOWN = 3


def open_memory(
    home: Path,
    settings: MemorySettings,
    clock: Any,
    *,
    ask_passphrase: Any = None,
) -> MemoryStore:
    """Open (or create) the memory store under `home`, keyed as settings and history say.

    A new memory's passphrase is typed twice; a typed passphrase that does not open an existing
    one is asked again (`PASSPHRASE_TRIES` in all), and the last refusal says what it did.
    """
    home.mkdir(parents=True, exist_ok=True)
    path = home / MEMORY_FILE
    new = _no_database_yet(path)
    key: MemoryKey = load_memory_key(
        home, settings.encryption, ask_passphrase=ask_passphrase, new=new
    )
    if not key.encrypted:
        log.warning("memory is stored unencrypted (memory.encryption = off)")
    tries = 1
    while True:
        try:
            db = open_database(
                path, key=key.key, passphrase=key.passphrase, encrypted=key.encrypted
            )
            break
        except MemoryLockedError as exc:
            if not key.typed or ask_passphrase is None:
                raise
            if tries >= PASSPHRASE_TRIES:
                raise MemoryLockedError(
                    f"The passphrase typed did not open the memory in {path} ({tries} tries), "
                    "so nothing was recalled or remembered this time; the file was not "
                    "changed.",
                    remedy=Remedy.RETYPE_PASSPHRASE,
                ) from exc
        tries += 1
        key = load_memory_key(home, settings.encryption, ask_passphrase=_again(ask_passphrase))
    record_keying(home, key.keyed_by)
    return MemoryStore(db, clock, refuse=refuse_credentials)


def _again(ask: Callable[[str], str | None]) -> Callable[[str], str | None]:
    """The passphrase prompt, saying first that the last one typed did not open the memory."""

    def ask_again(prompt: str) -> str | None:
        return ask(
            "That passphrase did not open the memory (nothing was changed); try again.\n" + prompt
        )

    return ask_again


def _no_database_yet(path: Path) -> bool:
    """True when opening `path` creates the memory: no file, or an empty one with no WAL."""
    try:
        if path.stat().st_size:
            return False
    except FileNotFoundError:
        return True
    except OSError:
        return False  # cannot tell: opening it will say what is wrong
    wal = path.with_name(path.name + "-wal")
    return not (wal.exists() and wal.stat().st_size)


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
            one = self.held_back == 1
            lines.append(
                f"{counted(self.held_back, 'more remembered fact')} matched, but "
                f"{'it is' if one else 'they are'} personal and this model runs outside the "
                f"user's machine, so {'it was' if one else 'they were'} held back. If "
                f"{'it' if one else 'they'} would help, say so: the user can allow this endpoint "
                "with the setting memory.allow_remote."
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
    "Do not list questions, requests, small talk, instructions, or anything about the "
    "assistant. For each fact give: text (a short statement in the user's own words, such as "
    "'my dog is called Rex'), evidence (an exact quote from the message), category, and "
    "sensitivity (low, personal, or secret for health, beliefs, ids, finances). Never include "
    "passwords, keys or codes. "
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


def extracts(model: ChatModel | None, settings: MemorySettings, *, temporary: bool) -> bool:
    """Whether the model is asked to propose facts from the user's words after a turn."""
    if model is None or temporary or settings.paused:
        return False
    setting = settings.extract
    return (not model.is_embedded) if setting is None else setting


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
        return extracts(self.model, self.settings, temporary=self.temporary)

    def after_turn(
        self, turn: TurnResult, turn_id: str, earlier_kept: tuple[str, ...] = ()
    ) -> list[MemoryEvent]:
        router = turn.router
        if router.intent is Intent.MEMORY_WRITE and takes_back(router.text):
            # "forget that", "scratch that": what the conversation's previous turn kept, shown
            # to forget; the pointing words are never a fact of their own.
            return self._taking_back(earlier_kept, turn_id)
        if router.intent is Intent.MEMORY_WRITE:
            forgetting = forget_request(router.text)
            if forgetting is not None:
                return self._forgetting(*forgetting, router, turn_id)
            corrected = correction_of(router.text)
            if corrected is not None:
                # "scratch the old orcid I gave you, the right one is …": kept in the person's
                # words, and the older facts it names shown to forget (none: nothing said).
                stated = router.arguments.fact or router.text
                return self._forgetting(corrected, stated, router, turn_id, correcting=True)
            return [self._explicit(router, turn_id)]
        if not self.extracting or not router.text.strip():
            return []
        return self._proposals(router.text, turn_id)

    # --- explicit "remember that …" ----------------------------------------------------------

    # --- "forget …" ---------------------------------------------------------------------------

    def _forgetting(
        self,
        subject: str,
        stated: str,
        router: RouterOutput,
        turn_id: str,
        *,
        correcting: bool = False,
    ) -> list[MemoryEvent]:
        """Asked to forget `subject` (and maybe told what is true now, `stated`): what is true
        now is kept as any fact is, and the remembered facts that match `subject` are shown
        for the person to forget. A wording match is not leave to delete: nothing goes by
        itself ("forget my home address" may match a work address too)."""
        events = [self._explicit(router, turn_id, stated)] if stated else []
        if self.temporary:
            return events or [MemoryEvent("temporary")]
        kept = {e.fact_id for e in events if e.fact_id}
        replaced = {e.replaces for e in events if e.replaces}
        found = self.store.search(subject, include_superseded=False, limit=FORGET_SHOWN * 2)
        others = [fact for fact in found if fact.id not in kept and fact.text not in replaced]
        shown = self._shown_to_forget(others, turn_id, corrected=correcting)
        if not shown and not correcting:
            return [*events, MemoryEvent("forget_none", text=subject)]
        return [*events, *shown]

    def _taking_back(self, earlier_kept: tuple[str, ...], turn_id: str) -> list[MemoryEvent]:
        """The facts the previous turn kept, still remembered, each shown to forget (nothing
        goes by itself); "forget_none" with no text when it kept nothing."""
        facts = [self.store.get(fact_id) for fact_id in earlier_kept]
        shown = self._shown_to_forget([f for f in facts if f is not None], turn_id)
        return shown or [MemoryEvent("forget_none")]

    def _shown_to_forget(
        self, facts: list[Fact], turn_id: str, *, corrected: bool = False
    ) -> list[MemoryEvent]:
        """The first `FORGET_SHOWN` of `facts` still remembered (active or waiting), each as a
        line to forget, and which ones were shown in the audit (ids only)."""
        remembered = [f for f in facts if f.status in (FactStatus.ACTIVE, FactStatus.PENDING)]
        shown = remembered[:FORGET_SHOWN]
        self.audit.append(
            AuditEvent.MEMORY_WRITE,
            turn_id=turn_id,
            action="forget_asked",
            matches=[fact.id for fact in shown],
        )
        return [_forget_match(fact, corrected=corrected) for fact in shown]

    def _explicit(self, router: RouterOutput, turn_id: str, said: str = "") -> MemoryEvent:
        raw = said or router.arguments.fact or router.text
        text = fact_from_request(raw).strip()
        if not text:
            return MemoryEvent("empty")
        if self.temporary:
            return MemoryEvent("temporary")
        if self.settings.paused:
            return MemoryEvent("paused")
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
    ) -> MemoryEvent:
        if len(text) > MAX_FACT_CHARS:
            return MemoryEvent("too_long", limit=MAX_FACT_CHARS)
        found = assess(text)
        if found.refused:
            self.audit.append(
                AuditEvent.MEMORY_WRITE, turn_id=turn_id, action="refused", source=source.value
            )
            return MemoryEvent("refused", refusal=found.refused, source=source)
        if model_label is None and source is FactSource.USER_EXPLICIT:
            model_label = self._label(text, found.level, turn_id)
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
            return MemoryEvent("refused", refusal=str(exc), source=source)
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
        return MemoryEvent(
            "pending" if fact.status is FactStatus.PENDING else outcome.action,
            fact_id=fact.id,
            text=fact.text,
            sensitivity=fact.sensitivity,
            status=fact.status,
            category=fact.category,
            reasons=tuple(fact.reasons),
            source=source,
            replaces=outcome.superseded[0].text if outcome.superseded else None,
        )

    def _label(self, text: str, detected: Sensitivity, turn_id: str) -> str | None:
        """The model's sensitivity label, asked only where it can matter and may be sent."""
        if self.model is None or detected is Sensitivity.SECRET:
            return None
        if self._failed_earlier(turn_id):
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
        except ModelError as exc:
            note_failure(self.model, turn_id, exc)
            log.info("no sensitivity label from the model: %s", exc)
            return None
        except (ValueError, AttributeError) as exc:
            log.info("no sensitivity label from the model: %s", exc)
            return None
        return value if isinstance(value, str) else None

    # --- model proposals -----------------------------------------------------------------

    def _proposals(self, message: str, turn_id: str) -> list[MemoryEvent]:
        assert self.model is not None
        if refuse_credentials(message) is not None:
            # A model asked to restate a message that holds a credential may reword it past
            # the detectors ("my pin is 4821" → "the user's PIN is 4 8 2 1"): ask nothing.
            self._drop(turn_id, "credential", "the message holds a credential; nothing is taken")
            return []
        if self._failed_earlier(turn_id):
            return []
        shown = message[:4000]
        try:
            raw = self.model.chat_json(
                [
                    {"role": "system", "content": PROPOSAL_PROMPT},
                    {"role": "user", "content": shown},
                ],
                PROPOSAL_SCHEMA,
                "memory_proposals",
            )
            proposals = _Proposals.model_validate_json(_strip_fence(raw))
        except ModelError as exc:
            note_failure(self.model, turn_id, exc)
            log.info("no memory proposals this turn: %s", exc)
            return []
        except (ValidationError, ValueError) as exc:
            log.info("no memory proposals this turn: %s", exc)
            return []
        said = _squash(message)
        own_words = _variants_of(_words_of(shown))
        events: list[MemoryEvent] = []
        for proposal in proposals.facts[:MAX_PROPOSALS]:
            text = proposal.text.strip()
            problem = _rejection(text, proposal.evidence, said, own_words)
            if problem is not None:
                self._drop(turn_id, *problem)
                continue
            event = self._store(
                text,
                evidence=proposal.evidence,
                source=FactSource.EXTRACTED,
                model_label=proposal.sensitivity,
                turn_id=turn_id,
            )
            if event.action == "refused":
                continue  # nobody asked to store it: drop it without a notice
            events.append(event)
        return events

    def _failed_earlier(self, turn_id: str) -> bool:
        """True when the model already failed in this turn: it is not asked again (each call
        could cost a full llm.timeout_s, and the turn's reply already names the failure)."""
        failure = failure_in_turn(self.model, turn_id) if self.model is not None else None
        if failure is not None:
            log.info("the model failed earlier in this turn; not asking it again: %s", failure)
        return failure is not None

    def _drop(self, turn_id: str, reason: str, why: str) -> None:
        """Audit a proposal that was not kept: the reason, never its text (nor a digest of a
        short text, which could be reversed by trying every PIN)."""
        self.audit.append(
            AuditEvent.MEMORY_WRITE,
            turn_id=turn_id,
            action="dropped",
            source=FactSource.EXTRACTED.value,
            reason=reason,
            why=why,
        )


# --- judging a model's proposal --------------------------------------------------------------
#
# The model's proposal is untrusted input, and whatever is kept is later put in front of a model
# as "facts the user told you": a planted instruction there is a standing prompt injection, and
# a reworded credential is a leak. So a proposal must be the user's own words, say nothing to
# the assistant, and hold no credential.


def _forget_match(fact: Fact, *, corrected: bool = False) -> MemoryEvent:
    """A remembered fact shown for the person to forget (one click or command)."""
    return MemoryEvent(
        "forget_match",
        fact_id=fact.id,
        text=fact.text,
        sensitivity=fact.sensitivity,
        status=fact.status,
        category=fact.category,
        source=fact.source,
        corrected=corrected,
    )


def _rejection(
    text: str, evidence: str, said: str, own_words: frozenset[str]
) -> tuple[str, str] | None:
    """Why a proposal must be dropped, as (reason, why), or None when it may be stored."""
    if len(text) > MAX_FACT_CHARS:
        return "too_long", f"the fact is over {MAX_FACT_CHARS} characters"
    if _squash(evidence) not in said:
        return "not_quoted", "evidence is not a quote of the user's message"
    if refuse_credentials(text) is not None or refuse_credentials(evidence) is not None:
        return "credential", "the proposal holds a credential"
    if instruction_to_assistant(text):
        return "instruction", "an instruction to the assistant, not a fact about the user"
    if not supported_by(text, own_words):
        return "unsupported", "the fact's words are not the user's own words in this message"
    return None


_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# "don't" → do not; these three do not just lose their n.
_NEGATED = {"can": "can", "won": "will", "shan": "shall"}
_CONTRACTED = {"m": "am", "re": "are", "ve": "have", "ll": "will", "d": "would"}


def _words_of(text: str) -> list[str]:
    """Lower-case words, possessives dropped ("user's" → user) and contractions opened
    ("don't" → do not, "I'm" → i am). Nothing else after an apostrophe is dropped: it is a
    word of its own ("s'appelle" → s appelle), so it is checked like any other."""
    words: list[str] = []
    for token in _WORD_RE.findall(text.translate(APOSTROPHES).casefold()):
        base, *rest = token.split("'")
        if rest == ["t"] and base.endswith("n"):
            words += [_NEGATED.get(base, base[:-1]), "not"]
        elif base == "cannot" and not rest:
            words += ["can", "not"]
        else:
            words.append(base)
            words += [_CONTRACTED.get(part, part) for part in rest if part != "s"]
    return words


def _variants(word: str) -> set[str]:
    """The word and what it is with a simple plural or third-person -s taken off."""
    found = {word}
    for ending, replacement, shortest in (("ies", "y", 3), ("es", "", 2), ("s", "", 3)):
        stem = word[: -len(ending)] + replacement
        if word.endswith(ending) and len(stem) >= shortest:
            found.add(stem)
    return found


def _variants_of(words: list[str]) -> frozenset[str]:
    return frozenset(v for word in words for v in _variants(word))


# Words a restatement may add to what the user said, matched exactly: grammar, pronouns, and
# the framing of a fact about "the user" ("my dog is called Rex" → "The user's dog is called
# Rex", "I love hiking" → "likes hiking"). Negations ("not", "never", "no") are not here: they
# change what the user said, so they must be the user's own.
_FRAMING_WORDS = """
    a an the this that these those it its there
    i me my mine myself we us our ours ourselves he him his she her hers they them their theirs
    themselves user person
    am is are was were be been being has have had having do does did will would can could
    to of in on at for with by from as about into and or but also
    called named name like likes love loves enjoy enjoys prefer prefers
    said says mentioned mentions stated states
"""
_FRAMING = frozenset(_words_of(_FRAMING_WORDS))


def supported_by(text: str, own_words: frozenset[str]) -> bool:
    """True when every content word of `text` (a word not in _FRAMING) is one the user used:
    `own_words` is `_variants_of(_words_of(message))`. A fact with no content word is not one."""
    content = [w for w in _words_of(text) if w not in _FRAMING]
    return bool(content) and all(not _variants(w).isdisjoint(own_words) for w in content)


def _strip_fence(raw: str) -> str:
    text = raw.strip()
    if text.startswith("```"):
        text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text)
    return text

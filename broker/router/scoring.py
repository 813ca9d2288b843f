"""Scoring a reading: how sure, how risky, which capabilities, and the `RouterOutput` it becomes.

A reading is a `_Guess` (an intent, a confidence, arguments). `_build` turns it into the router's
answer: confidence capped on a truncated view (whose command, folder and fact are dropped), a
direct action only at `DIRECT_ACTION_CONFIDENCE` or above, the needs flags the intent implies,
and the risk of what the words reach (`_risk`, `_high_risk`).

This module must never let a command read from a truncated view through, keep a direct action
below `DIRECT_ACTION_CONFIDENCE`, or rate below high a command, file task or discovery that
reaches a credential file or `/` itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from broker.router.extraction import SCAN_LIMIT, _View
from broker.router.patterns import (
    _DESTRUCTIVE_RE,
    _DOWNLOADERS,
    _FILE_WRITE_VERB_RE,
    _HIGH_RISK_RE,
    _SHELLS,
    _STAGE_SPLIT_RE,
    _WORD_SPLIT_RE,
)
from broker.types import Intent, RiskLevel, RouterArguments, RouterOutput

# A view cut at `SCAN_LIMIT` is never a clear direct request: its confidence is capped at this.
TRUNCATED_CONFIDENCE = 0.6
# Nothing matched: chat is only the fallback, and on the blind held-out set it was right for
# about a quarter of such messages. Below the refinement threshold (router.confidence_threshold,
# 0.5), so a connected model is asked about exactly these.
NOTHING_MATCHED_CONFIDENCE = 0.4
# `arguments.action` (a direct action the executor may run without the model) needs this much.
DIRECT_ACTION_CONFIDENCE = 0.85
# A command read from words that could mean something else: below a direct action.
UNSURE_COMMAND_CONFIDENCE = 0.75

NEEDS_FIELDS: tuple[str, ...] = (
    "needs_web",
    "needs_search",
    "needs_memory_read",
    "needs_memory_write",
    "needs_file_access",
    "needs_screen_read",
    "needs_system_execute",
)

# The flags an intent always implies. system_task adds needs_system_execute only when a command
# is to be run; one_shot_discovery adds needs_file_access when it is about files or disk.
_INTENT_NEEDS: dict[Intent, frozenset[str]] = {
    Intent.CHAT_ONLY: frozenset(),
    Intent.LOOKUP_SEARCH: frozenset({"needs_web", "needs_search"}),
    Intent.BROWSE_ONCE: frozenset({"needs_web"}),
    Intent.ONE_SHOT_DISCOVERY: frozenset(),
    Intent.SCREEN_OBSERVE: frozenset({"needs_screen_read"}),
    Intent.FILE_TASK: frozenset({"needs_file_access"}),
    Intent.SYSTEM_TASK: frozenset(),
    Intent.MEMORY_READ: frozenset({"needs_memory_read"}),
    Intent.MEMORY_WRITE: frozenset({"needs_memory_write"}),
}


@dataclass
class _Guess:
    """One reading of a message before scoring. `execute`: a command is to be run;
    `file_domain`: a discovery is about files or disk."""

    intent: Intent
    confidence: float
    arguments: RouterArguments = field(default_factory=RouterArguments)
    execute: bool = False
    file_domain: bool = False


def _high_risk(subject: str) -> bool:
    """A credential file, `/` itself, a download piped into a shell, `git clean` or
    `git reset --hard`, wherever they sit in the words."""
    if _HIGH_RISK_RE.search(subject):
        return True
    downloaded = False
    for stage in _STAGE_SPLIT_RE.split(subject.lower()):
        words = [w for w in _WORD_SPLIT_RE.split(stage) if w]
        names = {w.rsplit("/", 1)[-1] for w in words}
        if downloaded and words and (names & _SHELLS) and words[0] in ("sudo", *_SHELLS):
            return True
        downloaded = downloaded or bool(names & _DOWNLOADERS)
        if "git" in names and ("clean" in words or ("reset" in words and "--hard" in words)):
            return True
    return False


def _risk(
    intent: Intent,
    text: str,
    command: str | None,
    execute: bool,
    writes: bool,
    cwd: str | None = None,
) -> RiskLevel:
    if intent is Intent.SYSTEM_TASK and execute:
        subject = command if command is not None else text
        if len(subject) > SCAN_LIMIT:
            return "high"  # too long to vet; treat as the worst case
        if cwd is not None:
            subject += " " + cwd  # "rm -rf x in /": the folder is part of what it reaches
        return "high" if _DESTRUCTIVE_RE.search(subject) or _high_risk(subject) else "medium"
    if intent is Intent.FILE_TASK:
        if _DESTRUCTIVE_RE.search(text) or _high_risk(text):
            return "high"
        return "medium" if writes else "low"
    if intent is Intent.ONE_SHOT_DISCOVERY:
        if _high_risk(text):
            return "high"
        if _DESTRUCTIVE_RE.search(text):
            return "medium"
    return "low"


def _needs(intent: Intent, execute: bool, file_domain: bool) -> dict[str, bool]:
    wanted = set(_INTENT_NEEDS[intent])
    if intent is Intent.SYSTEM_TASK and execute:
        wanted.add("needs_system_execute")
    if intent is Intent.ONE_SHOT_DISCOVERY and file_domain:
        wanted.add("needs_file_access")
    return {name: name in wanted for name in NEEDS_FIELDS}


def _build(
    guess: _Guess,
    view: _View,
    full_text: str,
    source: Literal["prefix", "heuristic", "classifier"] = "heuristic",
) -> RouterOutput:
    args = guess.arguments
    confidence = guess.confidence
    if view.truncated and source != "prefix":
        confidence = min(confidence, TRUNCATED_CONFIDENCE)
        args.command = None
        args.cwd = None
        args.fact = None
    if confidence < DIRECT_ACTION_CONFIDENCE:
        args.action = None
    writes = bool(_FILE_WRITE_VERB_RE.search(view.text))
    risk = _risk(guess.intent, view.text, args.command, guess.execute, writes, args.cwd)
    if view.truncated and guess.intent in (Intent.FILE_TASK, Intent.SYSTEM_TASK) and risk == "low":
        risk = "medium"  # words past SCAN_LIMIT were never looked at
    return RouterOutput(
        intent=guess.intent,
        **_needs(guess.intent, guess.execute, guess.file_domain),
        risk_level=risk,
        confidence=confidence,
        source=source,
        arguments=args,
        text=full_text,
    )

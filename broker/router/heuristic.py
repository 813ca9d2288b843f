"""The deterministic route: a `/prefix`, else the rules, else (where the rules are unsure) the
learned classifier. `route_heuristic` is where every turn starts; `route_rules` is the rules
alone; `explain_route` says which reading decided and why.

This module must never call a language model, do I/O beyond reading the classifier's weights once,
or log the user's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from broker.router.classifier import _classifier, _predicted, _rules_decide, _with_classifier
from broker.router.extraction import _make_view
from broker.router.followup import Earlier, follow_up
from broker.router.patterns import _ACTIVE_WINDOW_RE, _PREFIX_RE
from broker.router.rules import _RULES, _file_guess
from broker.router.scoring import (
    NOTHING_MATCHED_CONFIDENCE,
    _build,
    _Guess,
    _needs,
    _risk,
)
from broker.types import Intent, RouterArguments, RouterOutput

PREFIX_INTENTS: dict[str, Intent] = {
    "chat": Intent.CHAT_ONLY,
    "search": Intent.LOOKUP_SEARCH,
    "browse": Intent.BROWSE_ONCE,
    "screen": Intent.SCREEN_OBSERVE,
    "file": Intent.FILE_TASK,
    "run": Intent.SYSTEM_TASK,
    "remember": Intent.MEMORY_WRITE,
    "recall": Intent.MEMORY_READ,
}


def _route_prefix(name: str, rest: str) -> RouterOutput:
    """`/name rest`: the intent is the user's word. Arguments are still extracted from `rest`."""
    intent = PREFIX_INTENTS[name.lower()]
    view = _make_view(rest)
    guess = _Guess(intent, 1.0)
    if intent is Intent.SYSTEM_TASK:
        # After /run the whole message is the command, exactly as typed.
        command = rest.strip()
        guess.arguments = RouterArguments(
            command=command or None, action="run_command" if command else None
        )
        guess.execute = bool(command)
        return RouterOutput(
            intent=intent,
            **_needs(intent, guess.execute, False),
            risk_level=_risk(intent, command, command, guess.execute, False),
            confidence=1.0,
            source="prefix",
            arguments=guess.arguments,
            text=rest,
        )
    if intent is Intent.FILE_TASK:
        guess = _file_guess(view, 1.0)
        guess.confidence = 1.0
    elif intent is Intent.MEMORY_WRITE:
        guess.arguments = RouterArguments(fact=rest.strip() or None)
    elif intent is Intent.LOOKUP_SEARCH:
        query = rest.strip() or None
        guess.arguments = RouterArguments(query=query, action="web_search" if query else None)
    elif intent is Intent.BROWSE_ONCE:
        guess.arguments = RouterArguments(url=view.url, action="fetch_url" if view.url else None)
    elif intent is Intent.SCREEN_OBSERVE:
        active = _ACTIVE_WINDOW_RE.search(rest)
        guess.arguments = RouterArguments(action="active_window" if active else "screenshot")
    return _build(guess, view, rest, source="prefix")


def route_heuristic(
    text: str, *, weights: Path | None = None, earlier: Sequence[Earlier] = ()
) -> RouterOutput:
    """Prefix, then the rules, then — where the rules are unsure — the learned classifier (its
    weight file `weights`, None for the shipped one). Deterministic, no model, no I/O (but
    reading the classifier's weights once). `earlier`: the turns of the conversation this
    message follows, oldest first; a follow-up routes like the last of them unless its own
    words say otherwise (`broker.router.followup`)."""
    return route_in_conversation(text, earlier, weights=weights)[0]


def route_in_conversation(
    text: str, earlier: Sequence[Earlier], *, weights: Path | None = None
) -> tuple[RouterOutput, bool]:
    """`route_heuristic`, and whether the earlier turns decided the reading (a follow-up, which
    a model refining the message alone must not overrule: it never sees the earlier turns)."""
    own = _route(text, classifier=True, weights=weights)
    if not earlier:
        return own, False

    def alone(words: str) -> RouterOutput:
        return _route(words, classifier=True, weights=weights)

    def ranked(words: str) -> dict[Intent, float]:
        predicted = _predicted(weights, words.lstrip())
        return {} if predicted is None else dict(predicted.ranked)

    followed = follow_up(text, earlier, own, alone, route_rules, ranked)
    return (own, False) if followed is None else (followed, True)


def explain_route(text: str, top: int = 6, *, weights: Path | None = None) -> dict[str, Any]:
    """What decided a message's intent, for `chamberlain route --json`: the rules' reading, and
    the classifier's with the features that pushed hardest towards its intent (computed here
    for the person asking; never logged or audited: features quote the message)."""
    out = route_heuristic(text, weights=weights)
    rules = route_rules(text)
    explained: dict[str, Any] = {
        "decided_by": out.source,
        "how": _how(out, rules),
        "rules": {"intent": rules.intent.value, "confidence": round(rules.confidence, 3)},
    }
    classifier = _classifier(weights)
    if rules.source != "prefix" and text.strip() and classifier is not None:
        predicted = classifier.predict(text.strip())
        explained["classifier"] = {
            "intent": predicted.intent.value,
            "probability": round(predicted.probability, 3),
            "features": [[name, round(weight, 3)] for name, weight in predicted.explain(top)],
        }
    return explained


def _how(out: RouterOutput, rules: RouterOutput) -> str:
    """How the two readings made the answer, in words."""
    if out.source == "prefix":
        return "the /prefix names the intent"
    if out.source == "classifier":
        return "the classifier overruled the rules' reading"
    if out.confidence < rules.confidence:
        return (
            "the rules' reading, contested by the classifier: below the refinement threshold, "
            "no direct action"
        )
    if out.confidence > rules.confidence:
        return "the rules and the classifier agree"
    return "the rules' reading stands"


def route_rules(text: str) -> RouterOutput:
    """The rules alone (prefix and heuristics): what the classifier is trained beside and
    measured against (scripts/train_intent_model.py, bench/intent_model.py)."""
    return _route(text, classifier=False)


def _route(text: str, *, classifier: bool, weights: Path | None = None) -> RouterOutput:
    stripped = text.lstrip()
    if not stripped.strip():
        return RouterOutput(intent=Intent.CHAT_ONLY, confidence=1.0, source="heuristic", text="")
    prefix = _PREFIX_RE.match(stripped)
    if prefix is not None:
        return _route_prefix(prefix.group(1), stripped[prefix.end() :].strip())
    view = _make_view(stripped)
    guess = next((g for rule in _RULES if (g := rule(view)) is not None), None)
    if guess is None:
        guess = _Guess(Intent.CHAT_ONLY, NOTHING_MATCHED_CONFIDENCE)
    if not classifier or _rules_decide(guess):
        return _build(guess, view, text.strip())
    return _with_classifier(guess, view, stripped, text, weights)

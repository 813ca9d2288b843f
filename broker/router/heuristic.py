"""The deterministic route: a `/prefix`, else the rules, else (where the rules are unsure) the
learned classifier. `route_heuristic` is where every turn starts; `route_rules` is the rules
alone; `explain_route` says which reading decided and why.

This module must never call a language model, do I/O beyond reading the classifier's weights once,
or log the user's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from broker.router.classifier import _classifier, _predicted, _rules_decide, _with_classifier
from broker.router.extraction import _make_view
from broker.router.followup import Earlier, bare_yes, read_follow_up, reread
from broker.router.followup_model import FollowupModel, Reading, feature_values, followup_model
from broker.router.patterns import _ACTIVE_WINDOW_RE, _PREFIX_RE, _RUNS_IT_RE
from broker.router.research import with_research
from broker.router.rules import _RULES, _file_guess, request_after_openers, request_after_pivot
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
    text: str,
    earlier: Sequence[Earlier],
    *,
    weights: Path | None = None,
    followup_weights: Path | None = None,
) -> tuple[RouterOutput, bool]:
    """`route_heuristic`, and whether the earlier turns decided the reading (a follow-up, which
    a model refining the message alone must not overrule: it never sees the earlier turns).
    `followup_weights`: the learned follow-up reader's weight file, None for the shipped one."""
    own = _route(text, classifier=True, weights=weights)
    if not earlier:
        return with_research(own), False
    reading = read_in_conversation(text, earlier, own, weights=weights)
    out, followed = decide_follow_up(reading, followup_model(followup_weights))
    return with_research(_told_what_it_points_at(out, reading.refers_to)), followed


def _told_what_it_points_at(out: RouterOutput, pointed: str | None) -> RouterOutput:
    """`out` with what its referring words point at, unless its arguments already carry it."""
    args = out.arguments
    if pointed is None or pointed in (*args.paths, args.url, args.cwd):
        return out
    return out.model_copy(update={"arguments": args.model_copy(update={"refers_to": pointed})})


def read_in_conversation(
    text: str, earlier: Sequence[Earlier], own: RouterOutput, *, weights: Path | None = None
) -> Reading:
    """What the rules read of `text` after `earlier` (`own`: `text` routed alone), for the
    learned follow-up reader to weigh."""

    def alone(words: str) -> RouterOutput:
        return _route(words, classifier=True, weights=weights)

    def ranked(words: str) -> dict[Intent, float]:
        predicted = _predicted(weights, words.lstrip())
        return {} if predicted is None else dict(predicted.ranked)

    followed, rule, pointed = read_follow_up(text, earlier, own, alone, route_rules, ranked)
    probabilities = ranked(text) if text.strip() and own.source != "prefix" else {}
    return Reading(text, tuple(earlier), own, followed, rule, probabilities, pointed)


# How sure the learned follow-up reader must be to choose another intent than the rules'
# reading (chosen out of fold: scripts/train_followup_model.py).
FOLLOW_UP_SWITCH = 0.4
# The follow-up rules' verdicts the reader never overrules: not read, the message's own plain
# request (`followup._own_request`), or a bare yes that names nothing (`followup.bare_yes`).
_NOT_REREAD = frozenset({"not_read", "own_request", "corrected_own_request", "consent"})


def decide_follow_up(
    reading: Reading, model: FollowupModel | None, switch: float = FOLLOW_UP_SWITCH
) -> tuple[RouterOutput, bool]:
    """The rules' reading of a follow-up, unless the learned reader is at least `switch` sure
    of another intent it can act on. A `/prefix`, a message the follow-up rules do not read (too
    long) and one whose own words plainly name what they act on ("take a screenshot", a URL, a
    command) are never reread."""
    current = reading.followed or reading.own
    followed = reading.followed is not None
    if model is None or reading.rule in _NOT_REREAD or reading.own.source == "prefix":
        return current, followed
    ranked = model.predict(feature_values(reading))
    intent, probability = next(
        (intent, p) for intent, p in ranked if _can_act_on(intent, current, reading.own)
    )
    if intent is current.intent or probability < switch:
        return current, followed
    out = reread(
        reading.text, reading.earlier, current, reading.own, intent, probability, route_rules
    )
    return out, True


_AS_A_FILE_RE = re.compile(
    r"\bas (?:an? )?(?:pdf|txt|text file|docx?|csv|png|jpe?g|html|markdown|md|zip|file)\b", re.I
)


def _can_act_on(intent: Intent, current: RouterOutput, own: RouterOutput) -> bool:
    """Whether `intent` can act on what the rules found the words point at: a file picked from
    a listing ("open it" after a file was found) is never a page to fetch, and a link picked
    from one is never a program to run."""
    args = current.arguments
    picked_file = bool(args.paths) and args.url is None and own.arguments.url is None
    if picked_file and intent is Intent.BROWSE_ONCE:
        return False
    # "launch the second one" after search results: the link picked is opened, not a program
    # run (a system task would drop the link it points at).
    launched_link = args.url is not None and not args.paths and _RUNS_IT_RE.search(own.text)
    if launched_link and intent is Intent.SYSTEM_TASK:
        return current.intent is Intent.SYSTEM_TASK
    # "save that as a pdf" after a page or a file: kept as a file, never a fact to remember.
    pointed = bool(args.paths) or args.url is not None
    return not (pointed and intent is Intent.MEMORY_WRITE and _AS_A_FILE_RE.search(own.text))


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
    if bare_yes(stripped):
        # A yes with nothing before it to say yes to: talk, never a command to work out.
        return RouterOutput(
            intent=Intent.CHAT_ONLY, confidence=0.9, source="heuristic", text=text.strip()
        )
    request = request_after_openers(stripped) or request_after_pivot(stripped)
    if request is not None:
        # "thanks, now take a screenshot": the request, read without the thanks before it.
        routed = _route(request, classifier=classifier, weights=weights)
        return routed.model_copy(update={"text": text.strip()})
    view = _make_view(stripped)
    guess = next((g for rule in _RULES if (g := rule(view)) is not None), None)
    if guess is None:
        guess = _Guess(Intent.CHAT_ONLY, NOTHING_MATCHED_CONFIDENCE)
    if not classifier or _rules_decide(guess):
        return _build(guess, view, text.strip())
    return _with_classifier(guess, view, stripped, text, weights)

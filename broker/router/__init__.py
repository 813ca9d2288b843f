"""The router: one user message in, one `RouterOutput` out (intent, needs, risk, arguments).
Given the earlier turns of its conversation (`Earlier`: the person's words, what each turn
named and listed), a follow-up routes like the turn it follows unless its own words say
otherwise, and "the second one" resolves to what that turn listed (`followup`; the learned
`followup_model` picks the intent where the rules' reading is outweighed); a follow-up is never
refined by a model, which would read it without those turns.

Deterministic first. A fast-path prefix (`/run df -h`) decides outright; otherwise keyword and
regex heuristics pick the intent and pull out the arguments a direct action needs (paths, a
command, a URL, a fact, a glob). A language model may then refine the intent, but its answer is
untrusted input: it is validated against a small schema, it can only raise risk, it never sets a
direct action, it cannot add commands, files, the screen or memory writes to a message that shows
no sign of them, and any failure falls back to the heuristic answer.

This package must never execute anything, touch the filesystem or the network (except through
the `ChatModel` it is handed), log the user's text, or let the model lower risk. Every regex is
precompiled and written to run in linear time; heuristics scan at most `SCAN_LIMIT` characters,
so a 100 KB paste routes as fast as a short message.

The package, in the order each module imports the ones before it (this `__init__` imports from
them all; none of them imports it):

- `patterns`: every precompiled regex and word set.
- `extraction`: the message view (command and folder, URL, paths, known folders, topics, globs).
- `scoring`: the confidence levels, the needs flags, risk, and `_build` (a guess to an output).
- `rules`: the intent rules, tried in order.
- `verdict`: the schema a model's answer must match, and its parsing.
- `reach`: what a message gives signs of; `_unseen_reach`.
- `intent_model`: the learned classifier's features, weight file and prediction.
- `classifier`: the learned classifier beside the rules, unless they are sure (the rules alone
  when its weight file cannot be used).
- `followup`: `Earlier` (what the router may know of the turns a message follows) and
  `follow_up`: a follow-up routes like the turn it follows, its "the second one" resolved.
- `followup_model`: the learned follow-up reader, which weighs the rules' reading of a
  follow-up against the message's own words and the earlier turns' intents, and may choose
  another intent (never an action, a command or a fact).
- `research`: `is_research`, whether a lookup's words ask for research (several searches and
  pages, weighed into a recommendation); `with_research` marks it on an output.
- `heuristic`: `route_heuristic` (with the earlier turns, `route_in_conversation`),
  `route_rules`, `explain_route` and the `/prefix` fast path.
- `refinement`: `refine_with_model`.
- `understood`: `understood_command`, for a command read but not run; `understood_reading`,
  for an unsure reading nobody refined.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from broker.llm.base import ChatModel
from broker.router.classifier import (
    CLASSIFIER_CAP,
    CLASSIFIER_SURE,
    CONTESTED_CONFIDENCE,
    OVERRULE,
    RULES_DECIDE,
)
from broker.router.extraction import MAX_PATHS, SCAN_LIMIT
from broker.router.followup import Earlier
from broker.router.heuristic import (
    PREFIX_INTENTS,
    explain_route,
    route_heuristic,
    route_in_conversation,
    route_rules,
)
from broker.router.patterns import TOPICS
from broker.router.refinement import MODEL_TEXT_LIMIT, refine_with_model
from broker.router.research import is_research
from broker.router.scoring import (
    DIRECT_ACTION_CONFIDENCE,
    NEEDS_FIELDS,
    NOTHING_MATCHED_CONFIDENCE,
    TRUNCATED_CONFIDENCE,
    UNSURE_COMMAND_CONFIDENCE,
)
from broker.router.understood import understood_command, understood_reading
from broker.router.verdict import MODEL_REPLY_LIMIT, router_schema
from broker.types import RouterOutput

__all__ = [
    "CLASSIFIER_CAP",
    "CLASSIFIER_SURE",
    "CONTESTED_CONFIDENCE",
    "DIRECT_ACTION_CONFIDENCE",
    "MAX_PATHS",
    "MODEL_REPLY_LIMIT",
    "MODEL_TEXT_LIMIT",
    "NEEDS_FIELDS",
    "NOTHING_MATCHED_CONFIDENCE",
    "OVERRULE",
    "PREFIX_INTENTS",
    "RULES_DECIDE",
    "SCAN_LIMIT",
    "TOPICS",
    "TRUNCATED_CONFIDENCE",
    "UNSURE_COMMAND_CONFIDENCE",
    "Earlier",
    "explain_route",
    "is_research",
    "refine_with_model",
    "route",
    "route_heuristic",
    "route_in_conversation",
    "route_rules",
    "router_schema",
    "understood_command",
    "understood_reading",
]


def route(
    text: str,
    model: ChatModel | None = None,
    *,
    threshold: float = 0.5,
    refine: bool = False,
    weights: Path | None = None,
    earlier: Sequence[Earlier] = (),
) -> RouterOutput:
    """Route one message: prefix → heuristics → (if `refine` and a model) model refinement.
    `weights`: the classifier's weight file, None for the shipped one. `earlier`: the turns
    this message follows, oldest first; a follow-up they decide is not refined (the model
    would read the message without them)."""
    base, followed = route_in_conversation(text, earlier, weights=weights)
    if followed or not refine or model is None or base.source == "prefix" or not base.text:
        return base
    return refine_with_model(base, base.text, model, threshold)

"""The learned classifier beside the rules: where the rules are unsure, it reads the message too.

It is consulted only below `DIRECT_ACTION_CONFIDENCE`. Its confidence is capped below that level
(`CLASSIFIER_CAP`); it never picks a memory write on its own and never overrides an explicit
"run"/"execute"; below `CLASSIFIER_SURE` it may not reach for what the message shows no sign of
(`reach`). Its weights are loaded once, on first use.

This module must never give the classifier's reading a command, a fact or a direct action.
"""

from __future__ import annotations

import functools

from broker.intent_model import IntentModel
from broker.router.extraction import _View
from broker.router.reach import _unseen_reach
from broker.router.scoring import DIRECT_ACTION_CONFIDENCE, _build, _Guess
from broker.types import Intent, RouterArguments, RouterOutput

# Below this the classifier is unsure: it may not reach for what the message shows no sign of.
CLASSIFIER_SURE = 0.5
# The classifier's confidence never reaches the direct-action level.
CLASSIFIER_CAP = DIRECT_ACTION_CONFIDENCE - 0.01


@functools.cache
def _classifier() -> IntentModel:
    """Loaded once, on first use (about 80 ms): a message the rules are sure of never pays."""
    return IntentModel.load()


def _arguments_for(intent: Intent, view: _View, rules: _Guess) -> RouterArguments:
    """What the message names that fits `intent` (its paths, its URL), for the prompt to tell
    the person's own scope from the model's; never a command, a fact or a direct action."""
    if rules.intent is intent:
        return rules.arguments
    if intent in (Intent.FILE_TASK, Intent.ONE_SHOT_DISCOVERY):
        return RouterArguments(paths=list(rules.arguments.paths))
    if intent is Intent.BROWSE_ONCE and view.url:
        return RouterArguments(url=view.url)
    return RouterArguments()


def _with_classifier(guess: _Guess, view: _View, stripped: str, text: str) -> RouterOutput:
    """`guess`, the rules' reading of `stripped`, is below the direct-action level: the
    classifier reads the message too, and the answer is built for `text` as given."""
    # The rules are unsure: the learned classifier (broker/intent_model.py) reads the message.
    # Where it disagrees, its intent stands, with its probability as the confidence (capped
    # below the direct-action level: nothing is run on its word). It never picks a memory
    # write on its own: what to remember is extracted by the rules, or nothing is written.
    # An explicit "run"/"execute" stays the rules' reading (the model may still work out what
    # to run, and ask). Where the rules are below the direct-action level the classifier
    # decides: out of fold on the tuning set this is 418 of 490 right, against 341 for the
    # rules alone and 419 for the best split tried (scripts/train_intent_model.py).
    predicted = _classifier().predict(stripped)
    if predicted.intent is guess.intent:
        # Two readings agree: as sure as the surer of them (still below the direct level).
        guess.confidence = max(guess.confidence, min(predicted.probability, CLASSIFIER_CAP))
        return _build(guess, view, text.strip())
    if predicted.intent is Intent.MEMORY_WRITE or guess.execute:
        return _build(guess, view, text.strip())
    chosen = _Guess(predicted.intent, min(predicted.probability, CLASSIFIER_CAP))
    chosen.arguments = _arguments_for(predicted.intent, view, guess)
    chosen.file_domain = predicted.intent is Intent.FILE_TASK
    out = _build(chosen, view, text.strip(), source="classifier")
    if predicted.probability < CLASSIFIER_SURE:
        # Unsure, and reaching for commands, files or the screen where the rules saw no sign
        # of them ("meh" as a system task): the rules' reading stands (a model may refine it).
        rules = _build(guess, view, text.strip())
        if _unseen_reach(rules, text, out) is not None:
            return rules
    return out

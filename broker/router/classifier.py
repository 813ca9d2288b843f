"""The learned classifier beside the rules: unless the rules are sure, it reads the message too.

The rules decide alone for their unambiguous forms (`_rules_decide`: at `RULES_DECIDE` or above,
a command to run, a fact to remember). Otherwise the classifier reads the message and:

- agreeing with the rules, makes the reading surer (never up to a direct action it lacked);
- naming something that would not look at a path the person typed, never contradicts the
  rules' reading of it as about their files;
- disagreeing with a keyword hit at the direct-action level, overrules it when at least
  `OVERRULE` sure; else the hit stands but is contested: below the refinement threshold
  (`CONTESTED_CONFIDENCE`), so its direct action is dropped and a model (or the person) settles it;
- disagreeing with an unsure reading, decides, at its calibrated probability: below
  `CLASSIFIER_SURE` that is `CONTESTED_CONFIDENCE` at most (a guess: refined, or for a command
  or files asked about, never acted on: the turn asks the person one question instead).

It picks a memory write when at least `MEMORY_SURE` sure of one and the message asks nothing
(no "?"): a fact said plainly ("wife's called Morag. birthday 3rd june") as much as one marked to
keep ("…, keep that in mind", "update: …"). Over a direct action of the rules' it needs
`MEMORY_OVERRULE` and a keep word (`KEEP_SIGN_RE`: "my screen name for tourneys is …, dont
forget" is not a look at the screen). The fact is then the person's words with any keep words
taken off (`broker.fact_offer.kept_words`), and it is written with the usual checks and consent.
Otherwise what to keep is the rules' extraction, or nothing is written (a lasting fact, or a
statement it finds likely enough to keep, `keep_probability`, is then offered).
The thresholds were chosen out of fold on the tuning data (scripts/train_intent_model.py prints
the comparison). Its weights are loaded once, on first use. A weight file that cannot be used
(damaged, or trained for other intents than this version's: what adding an intent does until the
model is retrained) is said once, in the log and as `classifier_problem()` for doctor, and the
rules route alone: an unsure message is never a failed turn.

This module must never give the classifier's reading a command or a direct action, nor a fact
but the person's own words.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

from broker.fact_offer import forget_request, kept_words
from broker.instructions import rule_for_assistant
from broker.router.extraction import SCAN_LIMIT, _View
from broker.router.intent_model import IntentModel, IntentModelError, Prediction
from broker.router.patterns import KEEP_SIGN_RE
from broker.router.scoring import (
    DIRECT_ACTION_CONFIDENCE,
    NOTHING_MATCHED_CONFIDENCE,
    _build,
    _Guess,
)
from broker.types import Intent, RouterArguments, RouterOutput

# At or above this the rules' reading stands without a second reader.
RULES_DECIDE = 0.95
# How sure the classifier must be to overrule a keyword hit at the direct-action level.
OVERRULE = 0.85
# Below this probability the classifier's reading is a guess.
CLASSIFIER_SURE = 0.6
# A contested or guessed reading: below the refinement threshold (router.confidence_threshold,
# 0.5 by default), so a capable model is asked, and a command or file reading asks the person.
CONTESTED_CONFIDENCE = 0.45
# How sure the classifier must be of a memory write to choose one. Compared out of fold on the
# tuning data (14,675 messages with blind sets W1-A…W4-B): requiring a keep word at 0.7 took
# 1,197 of 1,464 memory writes and 28 other messages; without one at 0.6 (and nothing asked),
# 1,308 and 36 (issue 24; docs/BENCHMARKS.md, round 3).
MEMORY_SURE = 0.6
# With a keep word, how sure it must be to overrule a direct action of the rules' (out of fold:
# 3 more memory writes, no other message).
MEMORY_OVERRULE = 0.9
# Whether a guess may overrule a reading the rules made (not just their "nothing matched").
GUESS_OVERRULES_RULES = False
# The readings that look at files the person names.
_TOUCH_FILES = frozenset({Intent.FILE_TASK, Intent.ONE_SHOT_DISCOVERY})
# The classifier's confidence never reaches the direct-action level.
CLASSIFIER_CAP = DIRECT_ACTION_CONFIDENCE - 0.01

log = logging.getLogger("chamberlain.broker.router")


@dataclass(frozen=True)
class ClassifierProblem:
    """Why the learned classifier is not used in this process: the rules route alone."""

    # The file is sound but was trained for other intents than this version's.
    mismatch: bool
    # The loader's sentence: which file, and what is wrong with it.
    detail: str


@functools.cache
def _loaded(weights: Path | None) -> IntentModel | ClassifierProblem:
    """Loaded once per weight file, on first use (about 80 ms): a message the rules are sure of
    never pays. A file that cannot be used is logged here, so once per process."""
    try:
        return IntentModel.load(weights)
    except IntentModelError as error:
        log.warning("%s; routing by the rules alone", error)
        return ClassifierProblem(error.mismatch, str(error))


def _classifier(weights: Path | None = None) -> IntentModel | None:
    """The classifier (`weights`: its file, None for the shipped one), or None when that file
    cannot be used."""
    loaded = _loaded(weights)
    return loaded if isinstance(loaded, IntentModel) else None


# The last reading: (classifier, text, prediction). One tuple, replaced whole, so a reader on
# another thread sees an old entry or a new one, and uses it only if both keys match.
_last: tuple[object, str, Prediction] | None = None


def _predicted(weights: Path | None, text: str) -> Prediction | None:
    """The classifier's reading of `text` (None without a usable classifier). The last one is
    kept in memory, never written anywhere: a follow-up reads its message's probabilities
    again in context (broker.router.followup) without paying for a second prediction."""
    global _last
    classifier = _classifier(weights)
    if classifier is None:
        return None
    last = _last
    if last is not None and last[0] is classifier and last[1] == text:
        return last[2]
    predicted = classifier.predict(text)
    _last = (classifier, text, predicted)
    return predicted


def keep_probability(text: str, weights: Path | None = None) -> float:
    """How likely the classifier finds `text` a memory write (0.0 without a usable one): what
    the fact offer weighs for a statement the router did not keep (broker/fact_offer.py)."""
    predicted = _predicted(weights, text.strip())
    if predicted is None:
        return 0.0
    return dict(predicted.ranked).get(Intent.MEMORY_WRITE, 0.0)


def classifier_problem(weights: Path | None = None) -> ClassifierProblem | None:
    """Why the classifier with `weights` is not used (loading it now, if it was not yet), or
    None when it is."""
    loaded = _loaded(weights)
    return loaded if isinstance(loaded, ClassifierProblem) else None


def _rules_decide(guess: _Guess) -> bool:
    """The rules' unambiguous forms: no second reading is asked for."""
    if guess.confidence >= RULES_DECIDE or guess.execute:
        return True
    return guess.intent is Intent.MEMORY_WRITE and bool(guess.arguments.fact)


def _calibrated(probability: float) -> float:
    """The classifier's probability as the router's confidence: never a direct action, and a
    guess (below `CLASSIFIER_SURE`) stays below the refinement threshold."""
    if probability < CLASSIFIER_SURE:
        return min(probability, CONTESTED_CONFIDENCE)
    return min(probability, CLASSIFIER_CAP)


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


def _keeps(predicted: Prediction, rules: _Guess, stripped: str) -> bool:
    """Whether the classifier's memory write is chosen: sure of it, nothing asked, and over a
    direct action of the rules' only when surer still and a keep word marks the message."""
    if (
        predicted.intent is not Intent.MEMORY_WRITE
        or predicted.probability < MEMORY_SURE
        or "?" in stripped
    ):
        return False
    if forget_request(stripped) is None and rule_for_assistant(stripped):
        return False  # "from now on always run commands without asking" is no fact to keep
    if rules.confidence < DIRECT_ACTION_CONFIDENCE:
        return True
    return (
        predicted.probability >= MEMORY_OVERRULE
        and KEEP_SIGN_RE.search(stripped[:SCAN_LIMIT]) is not None
    )


def _with_classifier(
    guess: _Guess, view: _View, stripped: str, text: str, weights: Path | None = None
) -> RouterOutput:
    """`guess`, the rules' reading of `stripped`, is not one they decide alone: the classifier
    reads the message too, and the answer is built for `text` as given. Without a usable
    classifier the rules' reading stands, as `route_rules` gives it."""
    predicted = _predicted(weights, stripped)
    if predicted is None:
        return _build(guess, view, text.strip())
    if predicted.intent is guess.intent:
        if guess.confidence < DIRECT_ACTION_CONFIDENCE:
            guess.confidence = max(guess.confidence, _calibrated(predicted.probability))
        return _build(guess, view, text.strip())
    typed = any(p.startswith("~") or "/" in p or "\\" in p for p in view.paths)
    stated = predicted.intent is Intent.MEMORY_WRITE and guess.confidence < DIRECT_ACTION_CONFIDENCE
    if (
        typed
        and guess.intent in _TOUCH_FILES
        and predicted.intent not in _TOUCH_FILES
        and not stated
    ):
        # A path the person typed: a reading that would not look at it does not contradict
        # the rules' file reading ("look through ~/Documents and tell me what is there"),
        # unless the rules are unsure and it reads a fact ("my dotfiles live in ~/code/…").
        return _build(guess, view, text.strip())
    named_file = bool(view.paths) and view.url is None and guess.intent in _TOUCH_FILES
    if named_file and predicted.intent is Intent.BROWSE_ONCE:
        # A file's name and no address: there is no page to read ("summarise Q3 budget.csv",
        # where "summarise" is mostly said of a page).
        return _build(guess, view, text.strip())
    if _keeps(predicted, guess, stripped):
        kept = _Guess(Intent.MEMORY_WRITE, _calibrated(predicted.probability))
        kept.arguments = RouterArguments(fact=kept_words(stripped) or None)
        return _build(kept, view, text.strip(), source="classifier")
    contested = predicted.intent is Intent.MEMORY_WRITE or (
        guess.confidence >= DIRECT_ACTION_CONFIDENCE and predicted.probability < OVERRULE
    )
    if contested:
        # The rules' reading stands, but another reading contradicts it: not sure enough to
        # act on directly ("what's the diffrence between RAM and storage" is not a RAM readout).
        guess.confidence = min(guess.confidence, CONTESTED_CONFIDENCE)
        return _build(guess, view, text.strip())
    if (
        not GUESS_OVERRULES_RULES
        and predicted.probability < CLASSIFIER_SURE
        and guess.confidence > NOTHING_MATCHED_CONFIDENCE
    ):
        # A guess against a reading the rules made ("which of my documents looks like a
        # budget?" as an investigation, against a file task): the rules' reading stands.
        return _build(guess, view, text.strip())
    chosen = _Guess(predicted.intent, _calibrated(predicted.probability))
    chosen.arguments = _arguments_for(predicted.intent, view, guess)
    chosen.file_domain = predicted.intent is Intent.FILE_TASK
    return _build(chosen, view, text.strip(), source="classifier")

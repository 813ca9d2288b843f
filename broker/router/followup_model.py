"""The learned follow-up reader: which intent a follow-up has, read in its conversation.

The rules of `followup` read a follow-up by its forms ("the second one", "why?", "and
tomorrow?"); this reader weighs what they found against everything else the router knows of
the message, and picks the intent. Its features are general word classes and readings, never
whole phrases: the earlier turns' intents, the message's own reading (rules and classifier:
intent, confidence, the classifier's probabilities), which follow-up rule decided and what it
read, cues (an ordinal, "it"/"that"/"those", a question, a "why", a closer, a continuation,
a keep-that, a path or URL of its own, the length), the class of its first verb ("kill",
"restart", "mute" are one kind) and of the things it names (an app, a page, the screen, a
file), whether the last turn listed files or links, and the message's words. One linear layer
and a softmax over hashed features (`intent_model.bucket`), trained by
`scripts/train_followup_model.py` on the labelled dialogues and, paired with earlier turns,
the first-message corpora; it ships as
`resources/followup_model.json` in the intent model's packed-row form, loaded once on first
use.

It only ever chooses an intent: the arguments are the rules' (`followup.reread`), a memory
write takes its fact from the message's own words or none, and its reading is never surer than
`followup.LIKELY_FOLLOW_UP_CONFIDENCE`, so it never sets a direct action.

This module must never import numpy or Qt, touch the network, log the user's text, or accept a
weight file it has not validated (a damaged one is logged once and the rules read alone).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from broker.router.followup import (
    _ACTING_VERBS,
    _KEEP_THAT_RE,
    _WHY_RE,
    Earlier,
    _closer,
    _continuation,
    _is_url,
    _position,
    talking_turns,
)
from broker.router.intent_model import (
    INTENTS,
    IntentModelError,
    _is_number,
    _read_weights,
    _weights,
    bucket,
    normalise,
    softmax,
)
from broker.router.patterns import _words
from broker.types import Intent, RouterOutput

FORMAT = "chamberlain-followup-model"
FORMAT_VERSION = 1
# The features' own version: a weight file made for other features is refused.
FEATURES = "followup-v4"

log = logging.getLogger("chamberlain.broker.router")

_WORD_RE = re.compile(r"[^\W_]+")
_POINTING_RE = re.compile(
    r"\b(?:it|its|that|this|them|those|these|there|one|ones|he|she|her|him|they|their)\b"
)
_WH = _words("what whats which who whos when where how why is are does do did can")
# Words before the request itself ("ok so can you please ...").
_LEAD_WORDS = _words(
    "ok okay so now and also then just please pls plz can could would will you u yeah yes yep "
    "sure alright right hmm well go ahead i want need like to lets let's actually no nope wait "
    "cool great thanks nice oh but"
)
# What the first word of the request asks for: a general class of verbs, so a verb the
# training data never showed after some turn still counts like its kind.
_VERB_CLASSES: dict[str, frozenset[str]] = {
    "system": _words(
        "kill stop end quit close exit restart reboot shutdown shut update upgrade install "
        "uninstall set change switch turn mute unmute join connect disconnect ping launch start "
        "run execute skip pause resume bounce schedule enable disable increase decrease raise "
        "lower plug unplug eject mount unmount flush clear purge reset force terminate "
        "chmod sudo brew apt pip npm git docker systemctl"
    ),
    "file": _words(
        "open read list ls show display view delete remove move copy rename zip unzip unpack "
        "extract save find search grep bin trash archive compress print attach send share "
        "upload convert edit play summarise summarize sum skim count backup"
    ),
    "web": _words("google lookup look browse fetch visit go navigate download check"),
    "screen": _words("screenshot see watch glance peek"),
    "memory": _words("remember note memorise memorize forget recall remind store keep"),
    "chat": _words(
        "explain translate write rewrite draft tell describe compare suggest recommend make "
        "give help define"
    ),
}
_OBJECT_CLASSES: dict[str, frozenset[str]] = {
    "system": _words(
        "app apps program process processes service server wifi bluetooth volume sound audio "
        "brightness dns network battery cpu ram memory disk drive port driver version installed "
        "laptop computer pc mac machine system settings setting job jobs task update updates"
    ),
    "web": _words(
        "site website page link url online web internet article news price prices review "
        "reviews headline weather score forecast google search results"
    ),
    "screen": _words("screen window windows tab tabs showing visible display monitor front"),
    "file": _words(
        "file files folder folders dir directory pdf doc docx document spreadsheet csv xlsx "
        "photo photos picture pictures image images downloads desktop documents log logs"
    ),
    "memory": _words("remember remembered told forget forgot said mentioned"),
}
# How many of the message's words are read as words (the rest only by the cues).
MAX_WORDS = 40
# A character n-gram counts for less than a word: there are many more of them.
CHAR_VALUE = 0.3


@dataclass(frozen=True)
class Reading:
    """What the router read of a follow-up before this reader weighs it."""

    # The message as the person typed it.
    text: str
    # The turns it follows, oldest first.
    earlier: Sequence[Earlier]
    # The message routed alone (rules and classifier).
    own: RouterOutput
    # The follow-up rules' reading, if one decided, and the rule's name.
    followed: RouterOutput | None
    rule: str
    # The classifier's probability of each intent for the message alone ({} without one).
    probabilities: Mapping[Intent, float]
    # What its referring words point at in the earlier turns (`followup.read_follow_up`).
    refers_to: str | None = None


def _band(confidence: float) -> str:
    if confidence >= 0.95:
        return "sure"
    if confidence >= 0.85:
        return "direct"
    if confidence >= 0.6:
        return "likely"
    return "unsure"


def _length(words: int) -> str:
    if words <= 2:
        return str(words)
    if words <= 4:
        return "3-4"
    if words <= 8:
        return "5-8"
    return "9+" if words <= 16 else "17+"


def feature_values(reading: Reading) -> dict[str, float]:
    """Feature name → value for one follow-up (names quote the message's words: never logged)."""
    talking = talking_turns(reading.earlier)
    last = talking[-1]
    prev = last.intent.value
    before = talking[-2].intent.value if len(talking) > 1 else "none"
    own = reading.own
    current = reading.followed or own
    text = normalise(reading.text)
    words = _WORD_RE.findall(text)[:MAX_WORDS]
    message = " ".join(reading.text.split())
    values: dict[str, float] = {}

    def add(name: str, value: float = 1.0, *, crossed: bool = False) -> None:
        values[name] = value
        if crossed:
            values[name + "|prev=" + prev] = value

    add("prev=" + prev)
    if len(talking) < len(reading.earlier):
        add("after_a_closer", crossed=True)
    add("prev2=" + before + "|prev=" + prev)
    add("own=" + own.intent.value, crossed=True)
    add("own=" + own.intent.value + "|" + _band(own.confidence))
    add("read=" + current.intent.value, crossed=True)
    add("read=" + current.intent.value + "|own=" + own.intent.value)
    add("rule=" + reading.rule, crossed=True)
    add("rule=" + reading.rule + "|read=" + current.intent.value)
    add("len=" + _length(len(words)), crossed=True)
    if own.arguments.action is not None:
        add("own_action", crossed=True)
    if own.arguments.paths:
        add("own_path", crossed=True)
    if own.arguments.url:
        add("own_url", crossed=True)
    if own.arguments.command:
        add("own_command", crossed=True)
    if any(map(_is_url, last.listed)):
        add("listed=links", crossed=True)
    elif last.listed:
        add("listed=files", crossed=True)
    if last.named:
        add("named", crossed=True)
    cues: list[str] = []
    if _position(message) is not None:
        cues.append("ordinal")
    if _POINTING_RE.search(text):
        cues.append("pointing")
    if message.rstrip().endswith("?"):
        cues.append("question")
    if words and words[0] in _WH:
        cues.append("wh")
    if words and words[0] in _ACTING_VERBS:
        cues.append("verb_first")
    if _WHY_RE.match(message):
        cues.append("why")
    if _closer(message):
        cues.append("closer")
    if _continuation(message)[0] is not None:
        cues.append("continuation")
    if _KEEP_THAT_RE.search(message):
        cues.append("keep_that")
    for cue in cues:
        add("cue=" + cue, crossed=True)
    request = [word for word in words if word not in _LEAD_WORDS]
    if request:
        verb = next((k for k, v in _VERB_CLASSES.items() if request[0] in v), "other")
        add("verb=" + verb, crossed=True)
        add("verb=" + verb + "|read=" + current.intent.value)
    for kind, vocabulary in _OBJECT_CLASSES.items():
        if any(word in vocabulary for word in words):
            add("about=" + kind, crossed=True)
    if words:
        add("first=" + words[0])
    for word in dict.fromkeys(words):
        add("w=" + word)
    for first, second in itertools.pairwise(words):
        add("b=" + first + " " + second)
    for intent, probability in reading.probabilities.items():
        values["p=" + intent.value] = probability
    for word in dict.fromkeys(words):
        padded = " " + word + " "
        for size in (3, 4):
            for start in range(len(padded) - size + 1):
                values["c=" + padded[start : start + size]] = CHAR_VALUE
    if reading.probabilities:
        values["p_prev"] = reading.probabilities.get(last.intent, 0.0)
        values["p_read"] = reading.probabilities.get(current.intent, 0.0)
    return values


class FollowupModel:
    """Loaded weights; `predict(values)` gives every intent's probability, likeliest first."""

    def __init__(
        self,
        *,
        buckets: int,
        bias: tuple[float, ...],
        weights: Mapping[int, tuple[float, ...]],
        metadata: dict[str, Any],
    ) -> None:
        self.buckets = buckets
        self.bias = bias
        self.weights = weights
        self.metadata = metadata

    @classmethod
    def load(cls, path: Path | None = None) -> FollowupModel:
        """Read and validate a weight file; by default the one shipped in `resources/`."""
        where = str(path) if path is not None else "resources/followup_model.json"
        try:
            if path is None:
                name = "followup_model.json"
                text = resources.files("resources").joinpath(name).read_text("utf-8")
            else:
                text = _read_weights(path, where)
            data = json.loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise IntentModelError(
                f"The follow-up model at {where} cannot be read ({error}); "
                "re-create it with scripts/train_followup_model.py"
            ) from error
        try:
            return cls.from_dict(data)
        except IntentModelError as error:
            raise IntentModelError(
                f"The follow-up model at {where} {error}", mismatch=error.mismatch
            ) from error

    @classmethod
    def from_dict(cls, data: object) -> FollowupModel:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise IntentModelError(f"is not a {FORMAT} file")
        if data.get("version") != FORMAT_VERSION or data.get("features") != FEATURES:
            raise IntentModelError(
                f"was made for other features ({data.get('features')!r}, this code computes "
                f"{FEATURES!r}): re-create it with scripts/train_followup_model.py"
            )
        if data.get("intents") != [intent.value for intent in INTENTS]:
            raise IntentModelError("was trained for other intents", mismatch=True)
        buckets = data.get("buckets")
        if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 1:
            raise IntentModelError(f"has an invalid bucket count {buckets!r}")
        bias = data.get("bias")
        count = len(INTENTS)
        if not isinstance(bias, list) or len(bias) != count or not all(map(_is_number, bias)):
            raise IntentModelError(f"has an invalid bias (expected {count} finite numbers)")
        weights = _weights(data.get("weights"), buckets, count)
        metadata = {k: v for k, v in data.items() if k not in {"weights", "bias"}}
        return cls(
            buckets=buckets,
            bias=tuple(float(value) for value in bias),
            weights=weights,
            metadata=metadata,
        )

    def predict(self, values: Mapping[str, float]) -> list[tuple[Intent, float]]:
        # Most features share a value (1, or CHAR_VALUE): their rows are summed column by
        # column once per value, in C by zip and sum, as the intent classifier does.
        by_value: dict[float, list[tuple[float, ...]]] = {}
        for name, value in values.items():
            row = self.weights.get(bucket(name, self.buckets))
            if row is not None:
                by_value.setdefault(value, []).append(row)
        scores = list(self.bias)
        for value, rows in by_value.items():
            for k, column in enumerate(zip(*rows, strict=True)):
                scores[k] += value * sum(column)
        probabilities = softmax(scores)
        order = sorted(range(len(INTENTS)), key=lambda k: (-probabilities[k], k))
        return [(INTENTS[k], probabilities[k]) for k in order]


@functools.cache
def _loaded(weights: Path | None) -> FollowupModel | None:
    """Loaded once per weight file, on first use. A file that cannot be used is logged once;
    the rules then read follow-ups alone."""
    try:
        return FollowupModel.load(weights)
    except IntentModelError as error:
        log.warning("%s; reading follow-ups by the rules alone", error)
        return None


def followup_model(weights: Path | None = None) -> FollowupModel | None:
    """The follow-up reader (`weights`: its file, None for the shipped one), or None."""
    return _loaded(weights)

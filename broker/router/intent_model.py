"""The learned intent classifier: hashed word and character n-grams, one linear layer, softmax.

It is trained at development time by `scripts/train_intent_model.py` on labelled messages and
ships as a small weight file, `resources/intent_model.json`: a readable JSON header (settings,
training data digest, cross-validated figures) and the weight rows as two base64 arrays
(little-endian uint32 buckets, float32 values), which load in milliseconds. Inference is pure
Python: the features of one message are hashed into the model's buckets with a stable hash
(blake2b, never Python's salted `hash()`), and the nine logits are a sparse dot product. The
same text always gives the same prediction, on any machine and in any process.

The features are defined here and only here; the training script imports them, so what the
model was trained on and what it sees at run time cannot drift apart.

This module must never import numpy or Qt, touch the network, log the user's text, or accept a
weight file it has not validated: a damaged or foreign file is an `IntentModelError` that says
which file and what is wrong with it.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import itertools
import json
import math
import operator
import os
import re
import stat
import sys
import unicodedata
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from broker.types import Intent
from core.errors import InstallationError

FORMAT = "chamberlain-intent-model"
FORMAT_VERSION = 2
# Only this much of a message is looked at, like the router's SCAN_LIMIT: a 100 KB paste is
# classified as fast as a short message.
MAX_CHARS = 2000
WORD_NGRAMS = (1, 2)
CHAR_NGRAMS = (3, 5)
HASH = "blake2b-64"
NORMALISATION = "binary-l2"
# The weight file's settings must say exactly this, or it was made for other features.
FEATURE_SETTINGS: dict[str, Any] = {
    "hash": HASH,
    "max_chars": MAX_CHARS,
    "word_ngrams": list(WORD_NGRAMS),
    "char_ngrams": list(CHAR_NGRAMS),
    "normalisation": NORMALISATION,
}
INTENTS: tuple[Intent, ...] = tuple(Intent)

_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
# Apostrophes are dropped before tokenising, so "what's" and "whats" are one word.
_APOSTROPHE_RE = re.compile(r"(?<=\w)'(?=\w)")
_WORD_RE = re.compile(r"[^\W_]+")
_URL_RE = re.compile(
    r"\bhttps?://|\bwww\.|\b[a-z0-9-]+\.(?:com|org|net|io|dev|gov|edu|uk|de|fr|rs|ai|app|co)\b"
)
_PATH_RE = re.compile(r"(?:^|[\s\"'(])(?:~[/\\]|\.{1,2}[/\\]|/[\w.-]+/|[a-z]:\\)")
_FILENAME_RE = re.compile(r"\b[\w-]+\.[a-z][a-z0-9]{0,4}\b")

# How each feature kind reads in `Prediction.explain()`.
_KINDS = {
    "w": "word",
    "b": "words",
    "c": "chars",
    "f": "first word",
    "s": "shape",
}
_SEP = "\x1f"


class IntentModelError(InstallationError, ValueError):
    """The weight file is missing, damaged, or was made for other features or intents.

    `mismatch`: the file is sound but was trained for other intents than this version's (what
    adding an intent does until the model is retrained), as opposed to damaged or unreadable.
    """

    def __init__(self, message: str, *, mismatch: bool = False) -> None:
        super().__init__(message)
        self.mismatch = mismatch


def normalise(text: str) -> str:
    """What the features are computed from: NFKC, lowercase, straight quotes, first MAX_CHARS."""
    text = unicodedata.normalize("NFKC", text[: MAX_CHARS * 2])[:MAX_CHARS]
    return _APOSTROPHE_RE.sub("", text.lower().translate(_QUOTES))


def _shape_features(text: str) -> list[str]:
    shapes: list[str] = []
    if _URL_RE.search(text):
        shapes.append("has URL")
    if _PATH_RE.search(text):
        shapes.append("has path")
    if "`" in text:
        shapes.append("has backticks")
    if _FILENAME_RE.search(_URL_RE.sub(" ", text)):
        shapes.append("has file name")
    if text.rstrip().endswith("?"):
        shapes.append("ends with ?")
    return shapes


def feature_names(text: str) -> list[str]:
    """The distinct features of `text`, in a fixed order, each as `kind<US>value`."""
    text = normalise(text)
    words = _WORD_RE.findall(text)
    names: dict[str, None] = {}
    if words:
        names["f" + _SEP + words[0]] = None
    for word in words:
        names["w" + _SEP + word] = None
    for first, second in itertools.pairwise(words):
        names["b" + _SEP + first + " " + second] = None
    low, high = CHAR_NGRAMS
    for word in words:
        padded = " " + word + " "
        for size in range(low, high + 1):
            for start in range(len(padded) - size + 1):
                names["c" + _SEP + padded[start : start + size]] = None
    for shape in _shape_features(text):
        names["s" + _SEP + shape] = None
    return list(names)


def features(text: str, word_weight: float = 1.0) -> dict[str, float]:
    """Feature name → value: each present feature counts once (word, word-pair, first-word and
    shape features `word_weight` times as much as a character n-gram, which are many more), and
    the vector has unit length."""
    names = feature_names(text)
    if not names:
        return {}
    chars = sum(1 for name in names if name.startswith("c" + _SEP))
    norm = math.sqrt(chars + (len(names) - chars) * word_weight * word_weight)
    char_value, word_value = 1.0 / norm, word_weight / norm
    return {name: char_value if name[0] == "c" else word_value for name in names}


def bucket(name: str, buckets: int) -> int:
    """The bucket a feature hashes to: stable across processes, machines and Python versions.

    Not cached: a cache would keep fragments of past messages in memory for no real gain.
    """
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % buckets


def readable(name: str) -> str:
    """'w<US>research' → 'word "research"'; 's<US>has URL' → 'has URL'."""
    kind, _, value = name.partition(_SEP)
    if kind == "s":
        return value
    return f'{_KINDS.get(kind, kind)} "{value}"'


@dataclass(frozen=True)
class Prediction:
    """The chosen intent, its probability, all nine ranked, and why."""

    intent: Intent
    probability: float
    ranked: list[tuple[Intent, float]]
    # (feature, value, weight row) for every feature with weights: what explain() reads.
    evidence: tuple[tuple[str, float, tuple[float, ...]], ...] = field(
        default=(), repr=False, compare=False
    )

    def explain(self, top: int = 5) -> list[tuple[str, float]]:
        """The `top` features that pushed hardest towards the chosen intent, with how much.

        A feature's push is its value times its weight for the chosen intent less its average
        weight over all nine (softmax ignores what is added to every intent alike); largest
        first, readable ('word "research"', 'chars "wif"', 'has URL').
        """
        k = INTENTS.index(self.intent)
        pushes = [
            (readable(name), value * (row[k] - sum(row) / len(row)))
            for name, value, row in self.evidence
        ]
        pushes.sort(key=lambda item: (-item[1], item[0]))
        return pushes[:top]


class WeightRows(Mapping[int, tuple[float, ...]]):
    """bucket → its row of per-intent weights, read from the two packed arrays on demand.

    A row is found by bisecting the ascending bucket array (checked so on load) rather than
    through a dict built at load: building one for ~58,000 rows was a fifth of the load time,
    and a turn looks up only a few hundred buckets."""

    def __init__(self, buckets: Sequence[int], values: Sequence[float], width: int) -> None:
        self._buckets = buckets
        self._values = values
        self._width = width

    def __getitem__(self, bucket: int) -> tuple[float, ...]:
        row = bisect.bisect_left(self._buckets, bucket)
        if row == len(self._buckets) or self._buckets[row] != bucket:
            raise KeyError(bucket)
        start = row * self._width
        return tuple(self._values[start : start + self._width])

    def __iter__(self) -> Iterator[int]:
        return iter(self._buckets)

    def __len__(self) -> int:
        return len(self._buckets)


def _little_endian(values: array[Any]) -> array[Any]:
    if sys.byteorder == "big":
        values.byteswap()
    return values


def encode_weights(rows: Sequence[Sequence[float | int]]) -> dict[str, Any]:
    """`[bucket, w1, …, w9]` rows (buckets ascending) as the file stores them."""
    buckets = _little_endian(array("I", [int(row[0]) for row in rows]))
    values = _little_endian(array("f", [float(v) for row in rows for v in row[1:]]))
    return {
        "rows": len(rows),
        "buckets": base64.b64encode(buckets.tobytes()).decode("ascii"),
        "values": base64.b64encode(values.tobytes()).decode("ascii"),
    }


def _decode(data: object, kind: str, what: str) -> array[Any]:
    if not isinstance(data, str):
        raise IntentModelError(f"has damaged weights ({what} is not base64 text)")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise IntentModelError(f"has damaged weights ({what}: {error})") from error
    values = array(kind)
    if len(raw) % values.itemsize:
        raise IntentModelError(f"has damaged weights ({what} is cut short)")
    values.frombytes(raw)
    return _little_endian(values)


# A weight file larger than this is not read (the shipped one is about 2.9 MB).
MAX_WEIGHTS_BYTES = 8 * 1024 * 1024


def _read_weights(path: Path, where: str) -> str:
    """The text of a weight file a setting names: a regular file of at most `MAX_WEIGHTS_BYTES`.

    The setting may name anything: a FIFO would hang the turn reading it and /dev/zero would
    fill memory. So the file is opened without blocking and checked on the opened descriptor
    (no swap between a check and the read), and never more than the cap is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise IntentModelError(
                f"The intent model at {where} is not a regular file (a pipe or a device is "
                "not read)"
            )
        too_big = IntentModelError(
            f"The intent model at {where} is larger than {MAX_WEIGHTS_BYTES // 2**20} MB, "
            "more than a weight file is; it was not read"
        )
        if info.st_size > MAX_WEIGHTS_BYTES:
            raise too_big
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(MAX_WEIGHTS_BYTES + 1)
        if len(data) > MAX_WEIGHTS_BYTES:  # it grew after the check
            raise too_big
    finally:
        os.close(fd)
    return data.decode("utf-8")


class IntentModel:
    """Loaded weights; `predict(text)` is deterministic and pure Python."""

    def __init__(
        self,
        *,
        buckets: int,
        word_weight: float,
        bias: tuple[float, ...],
        weights: Mapping[int, tuple[float, ...]],
        temperature: float,
        metadata: dict[str, Any],
    ) -> None:
        self.buckets = buckets
        self.word_weight = word_weight
        self.bias = bias
        self.weights = weights
        self.temperature = temperature
        # Everything else the file says (training data digest and counts, settings, CV figures).
        self.metadata = metadata

    @classmethod
    def load(cls, path: Path | str | None = None) -> IntentModel:
        """Read and validate a weight file; by default the one shipped in `resources/`."""
        where = str(path) if path is not None else "resources/intent_model.json"
        try:
            if path is None:
                text = resources.files("resources").joinpath("intent_model.json").read_text("utf-8")
            else:
                text = _read_weights(Path(path), where)
        except (OSError, UnicodeDecodeError) as error:
            raise IntentModelError(
                f"The intent model at {where} cannot be read ({error}); "
                "re-create it with scripts/train_intent_model.py"
            ) from error
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise IntentModelError(
                f"The intent model at {where} is not valid JSON ({error}); it is damaged: "
                "re-create it with scripts/train_intent_model.py"
            ) from error
        try:
            return cls.from_dict(data)
        except IntentModelError as error:
            raise IntentModelError(
                f"The intent model at {where} {error}", mismatch=error.mismatch
            ) from error

    @classmethod
    def from_dict(cls, data: object) -> IntentModel:
        """Validate parsed JSON. Errors read as the end of 'The intent model at X ...'."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise IntentModelError(f"is not a {FORMAT} file")
        if data.get("version") != FORMAT_VERSION:
            raise IntentModelError(
                f"has format version {data.get('version')!r}; this code reads version "
                f"{FORMAT_VERSION}: re-create it with scripts/train_intent_model.py"
            )
        intents = data.get("intents")
        if intents != [intent.value for intent in INTENTS]:
            raise IntentModelError(
                f"was trained for the intents {intents!r}, not {[i.value for i in INTENTS]!r}",
                mismatch=True,
            )
        settings = data.get("features")
        if not isinstance(settings, dict):
            raise IntentModelError("has no feature settings")
        buckets = settings.get("buckets")
        if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 1:
            raise IntentModelError(f"has an invalid bucket count {buckets!r}")
        word_weight = _positive(settings.get("word_weight"), "word weight")
        others = {k: v for k, v in settings.items() if k not in {"buckets", "word_weight"}}
        if others != FEATURE_SETTINGS:
            raise IntentModelError(
                f"was made for other features ({others!r}, this code computes "
                f"{FEATURE_SETTINGS!r}): re-create it with scripts/train_intent_model.py"
            )
        count = len(INTENTS)
        temperature = _positive(data.get("temperature"), "temperature")
        bias = data.get("bias")
        if not isinstance(bias, list) or len(bias) != count or not all(map(_is_number, bias)):
            raise IntentModelError(f"has an invalid bias (expected {count} finite numbers)")
        weights = _weights(data.get("weights"), buckets, count)
        metadata = {
            key: value
            for key, value in data.items()
            if key not in {"weights", "bias", "temperature", "intents", "format", "version"}
        }
        return cls(
            buckets=buckets,
            word_weight=word_weight,
            bias=tuple(float(value) for value in bias),
            weights=weights,
            temperature=temperature,
            metadata=metadata,
        )

    def predict(self, text: str) -> Prediction:
        evidence = []
        for name, value in features(text, self.word_weight).items():
            row = self.weights.get(bucket(name, self.buckets))
            if row is not None:
                evidence.append((name, value, row))
        # Features take only two values (character n-grams and the rest), so the dot product
        # is two column sums of the weight rows, done in C by zip and sum.
        by_value: dict[float, list[tuple[float, ...]]] = {}
        for _, value, row in evidence:
            by_value.setdefault(value, []).append(row)
        scores = list(self.bias)
        for value, rows in by_value.items():
            for k, column in enumerate(zip(*rows, strict=True)):
                scores[k] += value * math.fsum(column)
        probabilities = softmax([score / self.temperature for score in scores])
        order = sorted(range(len(INTENTS)), key=lambda k: (-probabilities[k], k))
        return Prediction(
            intent=INTENTS[order[0]],
            probability=probabilities[order[0]],
            ranked=[(INTENTS[k], probabilities[k]) for k in order],
            evidence=tuple(evidence),
        )


def _weights(packed: object, buckets: int, count: int) -> WeightRows:
    """The two packed arrays, checked: as many rows as said, buckets ascending and below
    `buckets`, `count` finite values a row."""
    if not isinstance(packed, dict) or not isinstance(packed.get("rows"), int):
        raise IntentModelError("has no weights")
    rows = packed["rows"]
    ids = _decode(packed.get("buckets"), "I", "buckets")
    values = _decode(packed.get("values"), "f", "values")
    if len(ids) != rows or len(values) != rows * count:
        raise IntentModelError(
            f"has damaged weights ({len(ids)} buckets and {len(values)} values for {rows} rows "
            f"of {count})"
        )
    # Checked in C (map over the arrays), not a Python loop: loading stays within its budget.
    ascending = all(map(operator.lt, ids, itertools.islice(ids, 1, None)))
    if rows and (ids[-1] >= buckets or not ascending):
        raise IntentModelError(
            f"has damaged weights (buckets must be distinct, ascending and below {buckets})"
        )
    # A sum of float32 values cannot overflow a float: it is finite exactly when every value is
    # (an inf stays inf, or meets a -inf and makes a nan).
    if not math.isfinite(sum(values)):
        raise IntentModelError("has damaged weights (a value is not a finite number)")
    return WeightRows(ids, values, count)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IntentModelError(f"has an invalid {what} {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise IntentModelError(f"has an invalid {what} {value!r}")
    return float(value)


def softmax(scores: list[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]

"""A stand-in for the learned intent classifier: it reads every message as one intent.

`read_as(monkeypatch, intent, probability)` installs it where the router looks for the
classifier, so a test knows exactly what the second reading says.
"""

from __future__ import annotations

import pytest

import broker.router.classifier as combination
from broker.router.intent_model import INTENTS, Prediction
from broker.types import Intent


class StubClassifier:
    """Reads every message as `intent` with `probability`; the rest share what is left."""

    def __init__(self, intent: Intent, probability: float) -> None:
        self.intent, self.probability, self.calls = intent, probability, 0

    def predict(self, text: str) -> Prediction:
        self.calls += 1
        rest = (1.0 - self.probability) / (len(INTENTS) - 1)
        ranked = [(self.intent, self.probability)] + [
            (other, rest) for other in INTENTS if other is not self.intent
        ]
        return Prediction(self.intent, self.probability, ranked)


def read_as(monkeypatch: pytest.MonkeyPatch, intent: Intent, probability: float) -> StubClassifier:
    stub = StubClassifier(intent, probability)
    monkeypatch.setattr(combination, "_classifier", lambda weights=None: stub)
    return stub

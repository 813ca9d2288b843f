"""How well, and how fast, the learned intent classifier routes, beside the heuristic router.

    python -m bench.intent_model [--rounds 20] [--no-cv]

For each set of labelled messages it prints, for the classifier (`broker.intent_model`) and for
`broker.router.route_rules` on the same messages, side by side: accuracy per intent and
overall, the confusion matrix, and calibration (count and accuracy per confidence band, for the
classifier's probability and the router's confidence). A third column applies the combination
the training script suggested from cross-validation on the training data (recorded in the weight
file: rules first above a confidence threshold, or classifier first above a probability).

The sets:

- training data (CORPUS + router_tuning.jsonl) by 5-fold cross-validation with the shipped
  settings, as the training script computed it (needs numpy; `--no-cv` skips it). The heuristic
  figures on CORPUS are inflated: the rules were written while looking at it;
- the old `HOLDOUT` list and tests/broker/data/router_heldout.jsonl (when present): never
  trained or tuned on, scored with the shipped model as it is.

Then inference latency per message (p50/p99/max) for both. A benchmark reports figures; it
asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.machine import machine_details
from broker.intent_model import INTENTS, IntentModel, softmax
from broker.router import route_heuristic, route_rules
from broker.types import Intent

REPO = Path(__file__).resolve().parents[1]
BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.85), (0.85, 0.95), (0.95, 1.01))
SHORT = {
    Intent.CHAT_ONLY: "chat",
    Intent.LOOKUP_SEARCH: "search",
    Intent.BROWSE_ONCE: "browse",
    Intent.ONE_SHOT_DISCOVERY: "discover",
    Intent.SCREEN_OBSERVE: "screen",
    Intent.FILE_TASK: "file",
    Intent.SYSTEM_TASK: "system",
    Intent.MEMORY_READ: "recall",
    Intent.MEMORY_WRITE: "remember",
}


def training_script() -> ModuleType:
    """scripts/train_intent_model.py as a module: one definition of data loading and CV."""
    path = REPO / "scripts" / "train_intent_model.py"
    spec = importlib.util.spec_from_file_location("train_intent_model", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


Combine = Callable[[tuple[Intent, float], tuple[Intent, float]], Intent]


@dataclass(frozen=True)
class Scored:
    """One message: the label, and each router's answer with its confidence."""

    text: str
    expected: Intent
    classifier: Intent
    probability: float
    heuristic: Intent
    confidence: float

    def combined(self, combine: Combine) -> Intent:
        return combine((self.heuristic, self.confidence), (self.classifier, self.probability))


def _pct(right: int, total: int) -> str:
    return f"{right}/{total} ({100.0 * right / total:.1f}%)" if total else "-"


def score(
    cases: Sequence[tuple[str, Intent]],
    classify: Callable[[int, str], tuple[Intent, float]],
) -> list[Scored]:
    scored = []
    for index, (text, expected) in enumerate(cases):
        intent, probability = classify(index, text)
        routed = route_rules(text)
        scored.append(Scored(text, expected, intent, probability, routed.intent, routed.confidence))
    return scored


def report(title: str, scored: list[Scored], combine: Combine | None) -> None:
    print(f"\n## {title}: {len(scored)} messages\n")
    combined = f" {'combined':>18} |" if combine is not None else ""
    print(f"| {'intent':<20} | {'classifier':>18} | {'heuristic':>18} |{combined}")
    print(f"|{'-' * 22}|{'-' * 20}|{'-' * 20}|" + ("-" * 20 + "|" if combined else ""))
    rows = [(intent.value, [s for s in scored if s.expected is intent]) for intent in INTENTS]
    for name, members in [*rows, ("**overall**", scored)]:
        ours = sum(s.classifier is s.expected for s in members)
        theirs = sum(s.heuristic is s.expected for s in members)
        line = f"| {name:<20} | {_pct(ours, len(members)):>18} | {_pct(theirs, len(members)):>18} |"
        if combine is not None:
            right = sum(s.combined(combine) is s.expected for s in members)
            line += f" {_pct(right, len(members)):>18} |"
        print(line)
    if combine is not None:
        print(f"\ncombined: {combine.__doc__}")
    _confusion("classifier", [(s.expected, s.classifier) for s in scored])
    _confusion("heuristic", [(s.expected, s.heuristic) for s in scored])
    _calibration(scored)


def _confusion(name: str, pairs: list[tuple[Intent, Intent]]) -> None:
    counts = Counter(pairs)
    print(f"\nConfusion ({name}; rows: expected, columns: predicted):\n")
    print("| expected \\ got | " + " | ".join(f"{SHORT[i]:>8}" for i in INTENTS) + " |")
    print("|" + "-" * 16 + "|" + "|".join("-" * 10 for _ in INTENTS) + "|")
    for expected in INTENTS:
        cells = " | ".join(f"{counts[(expected, got)] or '.':>8}" for got in INTENTS)
        print(f"| {SHORT[expected]:<14} | {cells} |")


def _calibration(scored: list[Scored]) -> None:
    print("\nCalibration: messages and accuracy per confidence band\n")
    print(f"| {'band':<12} | {'classifier probability':>24} | {'heuristic confidence':>24} |")
    print(f"|{'-' * 14}|{'-' * 26}|{'-' * 26}|")
    for low, high in BANDS:
        name = f"≥ {low:g}" if high > 1 else (f"< {high:g}" if low == 0 else f"{low:g}–{high:g}")
        ours = [s for s in scored if low <= s.probability < high]
        theirs = [s for s in scored if low <= s.confidence < high]
        print(
            f"| {name:<12} | {_pct(sum(s.classifier is s.expected for s in ours), len(ours)):>24} "
            f"| {_pct(sum(s.heuristic is s.expected for s in theirs), len(theirs)):>24} |"
        )


def report_router(cases: Sequence[tuple[str, Intent]]) -> None:
    """What ships: `route_heuristic` (the rules, and the classifier where they are unsure, with
    the router's guards), per intent and per confidence band, on `cases`."""
    routed = [(expected, route_heuristic(text)) for text, expected in cases]
    print(f"\n## The router as shipped (route_heuristic): {len(routed)} messages\n")
    for intent in INTENTS:
        members = [out for expected, out in routed if expected is intent]
        right = sum(out.intent is intent for out in members)
        print(f"- {intent.value}: {_pct(right, len(members))}")
    print(f"- **overall**: {_pct(sum(o.intent is e for e, o in routed), len(routed))}")
    sources = Counter(out.source for _, out in routed)
    print(f"- decided by: {dict(sorted(sources.items()))}")
    print("\nCalibration of its confidence:\n")
    for low, high in BANDS:
        name = f"≥ {low:g}" if high > 1 else (f"< {high:g}" if low == 0 else f"{low:g}–{high:g}")
        band = [(e, o) for e, o in routed if low <= o.confidence < high]
        print(f"- {name}: {_pct(sum(o.intent is e for e, o in band), len(band))}")


def _percentiles(samples: list[int]) -> str:
    samples = sorted(samples)

    def at(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))] / 1000.0

    return f"p50 {at(0.5):.1f} µs, p99 {at(0.99):.1f} µs, max {samples[-1] / 1000.0:.1f} µs"


def report_latency(model: IntentModel, texts: list[str], rounds: int) -> None:
    print(f"\n## Latency: {rounds} rounds × {len(texts)} messages\n")
    for name, call in (("classifier", model.predict), ("heuristic", route_rules)):
        for text in texts:  # warm up: caches and lazy imports
            call(text)
        samples: list[int] = []
        for _ in range(rounds):
            for text in texts:
                start = time.perf_counter_ns()
                call(text)
                samples.append(time.perf_counter_ns() - start)
        print(f"- {name}: {_percentiles(samples)}")
    paste = ("I am not sure what we decided in the meeting yesterday. " * 2000)[:100_000]
    timings = []
    for _ in range(5):
        start = time.perf_counter_ns()
        model.predict(paste)
        timings.append(time.perf_counter_ns() - start)
    print(f"- classifier on a 100 KB paste: median {sorted(timings)[2] / 1e6:.2f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20, help="latency rounds")
    parser.add_argument("--no-cv", action="store_true", help="skip cross-validation (numpy)")
    options = parser.parse_args(argv)

    started = time.perf_counter()
    model = IntentModel.load()
    load_ms = (time.perf_counter() - started) * 1000
    machine = machine_details()
    settings: dict[str, Any] = model.metadata["features"]
    training: dict[str, Any] = model.metadata["training"]
    suggestion: dict[str, Any] = model.metadata.get("suggested_combination") or {}
    path = REPO / "resources" / "intent_model.json"

    print("# Intent classifier beside the heuristic router\n")
    print(f"- machine: {machine['cpu']}, {machine['nproc']} cpus, {machine['uname']}")
    print(f"- python: {machine['python']} ({machine['implementation']}), {machine['date']}")
    print(
        f"- model: {path.stat().st_size / 1024:.0f} KiB, {len(model.weights)} weight rows, "
        f"loaded in {load_ms:.0f} ms; buckets {model.buckets}, word weight "
        f"{settings['word_weight']:g}, l2 {training['l2']:g}, temperature {model.temperature}"
    )
    print(
        f"- trained on {training['messages']} messages {training['sources']}, "
        f"sha256 {training['sha256'][:16]}…"
    )

    script = training_script()
    combine: Combine | None = None
    if suggestion:

        def combine(rules: tuple[Intent, float], classifier: tuple[Intent, float]) -> Intent:
            return script.combined_intent(  # type: ignore[no-any-return]
                suggestion["strategy"], suggestion["threshold"], rules, classifier
            )

        combine.__doc__ = (
            f"{suggestion['strategy']} at {suggestion['threshold']:g}, the training script's "
            f"suggestion ({_pct(suggestion['correct'], suggestion['messages'])} on the "
            f"{suggestion['judged_on']})"
        )
    examples, _notes = script.training_examples()
    if training["sha256"] != script.data_digest(examples):
        print("- NOTE: the training data changed since the model was trained: re-run the script")
    all_texts = [e.text for e in examples]

    if not options.no_cv:
        labels = [INTENTS.index(e.intent) for e in examples]
        oof = script.cross_validate(
            all_texts,
            labels,
            model.buckets,
            model.word_weight,
            training["l2"],
            training["folds"],
            training["seed"],
        )

        def out_of_fold(index: int, _text: str) -> tuple[Intent, float]:
            probabilities = softmax([float(v) / model.temperature for v in oof[index]])
            best = max(range(len(INTENTS)), key=lambda k: (probabilities[k], -k))
            return INTENTS[best], probabilities[best]

        cases = [(e.text, e.intent) for e in examples]
        scored = score(cases, out_of_fold)
        report("Training data, out-of-fold (5-fold CV)", scored, combine)
        fresh = [s for s, e in zip(scored, examples, strict=True) if "CORPUS" not in e.source]
        if fresh:
            report("…of which router_tuning.jsonl (the rules never saw it)", fresh, combine)

    def shipped(_index: int, text: str) -> tuple[Intent, float]:
        prediction = model.predict(text)
        return prediction.intent, prediction.probability

    holdout = [(e.text, e.intent) for e in script.holdout_examples()]
    report("Old HOLDOUT list (never trained on)", score(holdout, shipped), combine)
    heldout_texts: list[str] = []
    if script.HELDOUT.exists():
        heldout = [(e.text, e.intent) for e in script.read_jsonl(script.HELDOUT)]
        heldout_texts = [text for text, _ in heldout]
        report("router_heldout.jsonl (never trained on)", score(heldout, shipped), combine)
        report_router(heldout)
    else:
        print(f"\n(no {script.HELDOUT.relative_to(REPO)}: not scored)")

    report_latency(model, all_texts + [t for t, _ in holdout] + heldout_texts, options.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

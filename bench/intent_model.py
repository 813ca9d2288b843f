"""How well, and how fast, the learned intent classifier routes, beside the heuristic router.

    python -m bench.intent_model [--rounds 20] [--no-cv]

For each set of labelled messages it prints, for the classifier (`broker.router.intent_model`)
and for `broker.router.route_rules` on the same messages, side by side: accuracy per intent and
overall, the confusion matrix, and calibration (count and accuracy per confidence band, for the
classifier's probability and the rules' confidence). Then the router as shipped
(`route_heuristic`: rules, classifier and the thresholds combining them): per intent, confusion
matrix, calibration, and how often a reading above the refinement threshold is right — on the
tuning file out of fold (each message routed with the fold model that never saw it) and on the
held-out file.

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
from broker.router import route_heuristic, route_rules
from broker.router.intent_model import INTENTS, IntentModel, softmax
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


@dataclass(frozen=True)
class Scored:
    """One message: the label, and each router's answer with its confidence."""

    text: str
    expected: Intent
    classifier: Intent
    probability: float
    heuristic: Intent
    confidence: float


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


def report(title: str, scored: list[Scored]) -> None:
    print(f"\n## {title}: {len(scored)} messages\n")
    print(f"| {'intent':<20} | {'classifier':>18} | {'rules':>18} |")
    print(f"|{'-' * 22}|{'-' * 20}|{'-' * 20}|")
    rows = [(intent.value, [s for s in scored if s.expected is intent]) for intent in INTENTS]
    for name, members in [*rows, ("**overall**", scored)]:
        ours = sum(s.classifier is s.expected for s in members)
        theirs = sum(s.heuristic is s.expected for s in members)
        print(f"| {name:<20} | {_pct(ours, len(members)):>18} | {_pct(theirs, len(members)):>18} |")
    _confusion("classifier", [(s.expected, s.classifier) for s in scored])
    _confusion("rules", [(s.expected, s.heuristic) for s in scored])
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
    print(f"| {'band':<12} | {'classifier probability':>24} | {'rules confidence':>24} |")
    print(f"|{'-' * 14}|{'-' * 26}|{'-' * 26}|")
    for low, high in BANDS:
        name = f"≥ {low:g}" if high > 1 else (f"< {high:g}" if low == 0 else f"{low:g}–{high:g}")
        ours = [s for s in scored if low <= s.probability < high]
        theirs = [s for s in scored if low <= s.confidence < high]
        print(
            f"| {name:<12} | {_pct(sum(s.classifier is s.expected for s in ours), len(ours)):>24} "
            f"| {_pct(sum(s.heuristic is s.expected for s in theirs), len(theirs)):>24} |"
        )


def report_router(
    title: str, answers: Sequence[tuple[Intent, Intent, float]], sources: Counter[str] | None = None
) -> None:
    """What ships: `route_heuristic` (the rules, the classifier unless the rules are sure, and
    the thresholds combining them). `answers`: (expected, routed intent, confidence)."""
    print(f"\n## {title}: {len(answers)} messages\n")
    for intent in INTENTS:
        members = [got for want, got, _ in answers if want is intent]
        print(f"- {intent.value}: {_pct(sum(got is intent for got in members), len(members))}")
    print(f"- **overall**: {_pct(sum(want is got for want, got, _ in answers), len(answers))}")
    if sources is not None:
        print(f"- decided by: {dict(sorted(sources.items()))}")
    _confusion("router as shipped", [(want, got) for want, got, _ in answers])
    print("\nCalibration of its confidence (threshold: router.confidence_threshold, 0.5):\n")
    for low, high in BANDS:
        name = f"≥ {low:g}" if high > 1 else (f"< {high:g}" if low == 0 else f"{low:g}–{high:g}")
        band = [(want, got) for want, got, c in answers if low <= c < high]
        print(f"- {name}: {_pct(sum(want is got for want, got in band), len(band))}")
    above = [(want, got) for want, got, c in answers if c >= 0.5]
    print(
        f"- **≥ 0.5 (acted on without a model)**: {_pct(sum(w is g for w, g in above), len(above))}"
    )


def _percentiles(samples: list[int]) -> str:
    samples = sorted(samples)

    def at(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))] / 1000.0

    return f"p50 {at(0.5):.1f} µs, p99 {at(0.99):.1f} µs, max {samples[-1] / 1000.0:.1f} µs"


def report_latency(model: IntentModel, texts: list[str], rounds: int) -> None:
    print(f"\n## Latency: {rounds} rounds × {len(texts)} messages\n")
    callers = (
        ("classifier", model.predict),
        ("rules", route_rules),
        ("router as shipped (route_heuristic)", route_heuristic),
    )
    for name, call in callers:
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
        report("Training data, out-of-fold (5-fold CV)", scored)
        fresh = [i for i, e in enumerate(examples) if "CORPUS" not in e.source]
        if fresh:
            report(
                "…of which router_tuning.jsonl (the rules never saw it)", [scored[i] for i in fresh]
            )
            assignment, models = script.fold_models(
                script.build_matrix(all_texts, model.buckets, model.word_weight),
                labels,
                settings,
                training["l2"],
                model.temperature,
                training["folds"],
                training["seed"],
            )
            routed = script.route_out_of_fold(
                examples, fresh, assignment, models, script.shipped_policy()
            )
            answers = [
                (want, got, confidence)
                for want, (got, confidence) in zip(routed.labels, routed.answers, strict=True)
            ]
            report_router("The router as shipped, router_tuning.jsonl out of fold", answers)

    def shipped(_index: int, text: str) -> tuple[Intent, float]:
        prediction = model.predict(text)
        return prediction.intent, prediction.probability

    holdout = [(e.text, e.intent) for e in script.holdout_examples()]
    report("Old HOLDOUT list (never trained on)", score(holdout, shipped))
    heldout_texts: list[str] = []
    if script.HELDOUT.exists():
        heldout = [(e.text, e.intent) for e in script.read_jsonl(script.HELDOUT)]
        heldout_texts = [text for text, _ in heldout]
        report("router_heldout.jsonl (never trained on)", score(heldout, shipped))
        outs = [(want, route_heuristic(text)) for text, want in heldout]
        report_router(
            "The router as shipped, router_heldout.jsonl",
            [(want, out.intent, out.confidence) for want, out in outs],
            Counter(out.source for _, out in outs),
        )
    else:
        print(f"\n(no {script.HELDOUT.relative_to(REPO)}: not scored)")

    report_latency(model, all_texts + [t for t, _ in holdout] + heldout_texts, options.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

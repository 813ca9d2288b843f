"""Train the learned follow-up reader and write resources/followup_model.json.

    .venv/bin/python scripts/train_followup_model.py [--dialogues FILE ...] [--output FILE]
                                                     [--no-grid] [--check-only]

Trains on every tests/broker/data/dialogues_tuning*.jsonl (plus any `--dialogues` file) and on
first messages paired with earlier turns; it never reads dialogues_heldout.jsonl. Examples:

- each dialogue's follow-up, read after its earlier turns (as `bench.router_followups` gives
  them: the person's words, the labelled intent, what each turn named and listed);
- each dialogue's second turn (and third's earlier one), read after the turns before it: a
  follow-up too, labelled in the data;
- each first message of router_tuning.jsonl and router_heldout.jsonl paired (seeded) with the
  first turn of a dialogue, labelled as it was alone: a message whose own words decide, so the
  reader learns when the conversation does not matter; weighted `--corpus-weight` of a
  dialogue's example.

Each dialogue is read (its own reading, the classifier's probabilities) by an intent classifier
trained as the shipped one but without that dialogue's fold (`cross_fitted_classifiers`; five
fits of about a minute each, ~20 with `bench.router_followups`' per-file figures): the shipped
classifier has learned the dialogues' changes of intent, and its readings of them would be
surer than any it gives a new message. The first messages paired with a turn are read by the
shipped classifier, which learned them too, as before.

Features are `broker.router.followup_model.feature_values`; the fit is
`scripts/train_intent_model.fit` (multinomial logistic regression, L2, L-BFGS, deterministic).
The L2 strength, the corpus weight and how sure the reader must be to overrule the rules
(`FOLLOW_UP_SWITCH`) are chosen by grouped k-fold cross-validation: every example of a dialogue
falls in one fold, and each dialogue's follow-up is routed end to end (rules, then the reader)
with the fold model that never saw that dialogue. Those out-of-fold figures are printed and
recorded in the file's header: they, not the in-sample ones, say how well it reads follow-ups
it has not seen.

numpy is a development dependency of this script only; inference never imports it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.router_followups import listed_in, named_by, target_kind, target_right  # noqa: E402
from broker.router import intent_model  # noqa: E402
from broker.router.followup import Earlier  # noqa: E402
from broker.router.followup_model import (  # noqa: E402
    FEATURES,
    FORMAT,
    FORMAT_VERSION,
    FollowupModel,
    Reading,
    feature_values,
)
from broker.router.heuristic import (  # noqa: E402
    FOLLOW_UP_SWITCH,
    _route,
    decide_follow_up,
    read_in_conversation,
)
from broker.router.intent_model import INTENTS, IntentModel, bucket  # noqa: E402
from broker.types import Intent, RouterOutput  # noqa: E402
from scripts.train_intent_model import (  # noqa: E402
    Matrix,
    _round,
    dialogue_group,
    fit,
    render,
    training_examples,
    weight_rows,
)
from scripts.train_intent_model import build_matrix as classifier_matrix  # noqa: E402

DATA = REPO / "tests" / "broker" / "data"
OUTPUT = REPO / "resources" / "followup_model.json"
CORPORA = (DATA / "router_tuning.jsonl", DATA / "router_heldout.jsonl")
BUCKETS = 2**18
FOLDS = 5
SEED = 20261127
L2_GRID = (1e-4, 3e-5, 3e-4)
CORPUS_WEIGHT_GRID = (0.1, 0.3)
SWITCH_GRID = tuple(sorted({0.0, 0.3, 0.4, 0.5, 0.6, FOLLOW_UP_SWITCH}))
# A weight this small changes no reading: its row is left out of the file (smaller, faster).
PRUNE = 1e-3


@dataclass
class Example:
    reading: Reading
    label: Intent
    # The dialogue it comes from (its fold), or "" for a first message paired with a turn.
    group: str
    # The dialogue's follow-up (scored), or an earlier turn read as one, or a first message.
    kind: str
    target: str | None = None
    values: dict[str, float] | None = None
    # The dialogue as read from its file (for the follow-up: what the bench prints).
    dialogue: dict[str, Any] | None = None


# Which intent classifier reads a dialogue's messages (`_route`'s weights; None: the shipped one).
Classifiers = Callable[[str], Path | None]


def _shipped(_group: str) -> Path | None:
    return None


def _own(text: str, weights: Path | None = None) -> RouterOutput:
    return _route(text, classifier=True, weights=weights)


def earlier_turns(turns: Sequence[dict[str, Any]], weights: Path | None = None) -> list[Earlier]:
    """`bench.router_followups.earlier_turns`, with the rules alone reading each turn's
    follow-ups (what the reader is trained on must not depend on an earlier reader)."""
    earlier: list[Earlier] = []
    for turn in turns:
        own = _own(turn["user"], weights)
        out = (
            own
            if not earlier
            else decide_follow_up(
                read_in_conversation(turn["user"], earlier, own, weights=weights), None
            )[0]
        )
        earlier.append(
            Earlier(
                text=turn["user"],
                intent=Intent(turn["intent"]),
                named=named_by(out),
                listed=listed_in(turn.get("assistant") or ""),
            )
        )
    return earlier


def load_dialogues(paths: Sequence[Path]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Each dialogue of `paths` with its group (`dialogue_group`), and notes on lines skipped."""
    loaded: list[tuple[str, dict[str, Any]]] = []
    notes: list[str] = []
    for path in paths:
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                dialogue = json.loads(line)
                for item in [*dialogue["turns"], dialogue["follow_up"]]:
                    Intent(item["intent"])
                    str(item["user"])
                loaded.append((dialogue_group(path, dialogue), dialogue))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                notes.append(f"{path.name}:{number}: skipped, not a dialogue ({error})")
    return loaded, notes


def read_dialogues(
    loaded: Sequence[tuple[str, dict[str, Any]]], classifiers: Classifiers = _shipped
) -> list[Example]:
    """Every later turn of every dialogue, the follow-up last, read after the turns before it,
    each dialogue's messages read by `classifiers(group)`."""
    examples: list[Example] = []
    for group, dialogue in loaded:
        weights = classifiers(group)
        turns = dialogue["turns"]
        follow = dialogue["follow_up"]
        earlier = earlier_turns(turns, weights)
        for index in range(1, len(turns)):
            text = turns[index]["user"]
            reading = read_in_conversation(
                text, earlier[:index], _own(text, weights), weights=weights
            )
            examples.append(Example(reading, Intent(turns[index]["intent"]), group, "turn"))
        text = follow["user"]
        reading = read_in_conversation(text, earlier, _own(text, weights), weights=weights)
        examples.append(
            Example(
                reading,
                Intent(follow["intent"]),
                group,
                "follow_up",
                follow.get("target"),
                dialogue=dialogue,
            )
        )
    return examples


def deal(groups: Sequence[str], folds: int, seed: int) -> dict[str, int]:
    """Each dialogue's fold: dialogues dealt to folds in a seeded random order."""
    ordered = sorted(set(groups))
    order = np.random.default_rng(seed).permutation(len(ordered))
    return {ordered[int(i)]: position % folds for position, i in enumerate(order)}


def cross_fitted_classifiers(
    fold_of: Mapping[str, int], folds: int, folder: Path
) -> dict[int, Path]:
    """For each fold, an intent classifier trained as the shipped one (its settings, its data)
    but without that fold's dialogues, written to `folder`.

    The classifier learns the dialogues' messages that change the intent
    (`scripts/train_intent_model.dialogue_messages`), and the reader weighs the classifier's
    reading: read by the shipped classifier, a dialogue the reader learns from would come with
    a reading the classifier had learned by heart, surer than any it gives a new message. So
    each dialogue is read by the classifier that never saw it, as a new one will be."""
    shipped = IntentModel.load()
    training = shipped.metadata.get("training", {})
    l2 = float(training["l2"])
    header: dict[str, Any] = {
        "format": intent_model.FORMAT,
        "version": intent_model.FORMAT_VERSION,
        "intents": [intent.value for intent in INTENTS],
        "features": shipped.metadata["features"],
        "temperature": shipped.temperature,
    }
    paths: dict[int, Path] = {}
    for k in range(folds):
        left_out = {group for group, f in fold_of.items() if f == k}
        examples, _ = training_examples(leave_out=left_out)
        texts = [e.text for e in examples]
        labels = [INTENTS.index(e.intent) for e in examples]
        matrix = classifier_matrix(texts, shipped.buckets, shipped.word_weight)
        w, b = fit(matrix, range(len(texts)), labels, l2)
        header["training"] = {"messages": len(texts), "left_out_dialogues": len(left_out)}
        paths[k] = folder / f"intent_fold_{k}.json"
        paths[k].write_text(render(header, b, weight_rows(w, matrix.columns)), "utf-8")
        print(
            f"classifier for fold {k + 1}/{folds}: {len(texts)} messages, "
            f"{len(left_out)} dialogues left out",
            flush=True,
        )
    return paths


def read_cross_fitted(
    loaded: Sequence[tuple[str, dict[str, Any]]], fold_of: Mapping[str, int], folds: int
) -> list[Example]:
    """`read_dialogues`, each dialogue read by the classifier that never saw it
    (`cross_fitted_classifiers`)."""
    with tempfile.TemporaryDirectory(prefix="chamberlain-classifiers-") as folder:
        fitted = cross_fitted_classifiers(fold_of, folds, Path(folder))
        return read_dialogues(loaded, lambda group: fitted[fold_of[group]])


def corpus_pairs(dialogues: list[Example], seed: int) -> list[Example]:
    """First messages, each after the first turn of a dialogue picked at random (seeded)."""
    firsts = sorted(
        {e.group: e.reading.earlier[0] for e in dialogues if e.kind == "follow_up"}.items()
    )
    rng = np.random.default_rng(seed)
    pairs: list[Example] = []
    for path in CORPORA:
        if not path.exists():
            continue
        for line in path.read_text("utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            earlier = [firsts[int(rng.integers(len(firsts)))][1]]
            reading = read_in_conversation(row["text"], earlier, _own(row["text"]))
            pairs.append(Example(reading, Intent(row["intent"]), "", "first"))
    return pairs


def build_matrix(examples: Sequence[Example]) -> Matrix:
    hashed: list[dict[int, float]] = []
    for example in examples:
        if example.values is None:
            example.values = feature_values(example.reading)
        merged: dict[int, float] = {}
        for name, value in example.values.items():
            slot = bucket(name, BUCKETS)
            merged[slot] = merged.get(slot, 0.0) + value
        hashed.append(merged)
    columns = np.array(sorted({slot for merged in hashed for slot in merged}), dtype=np.int64)
    column_of = {int(slot): index for index, slot in enumerate(columns)}
    rows = [
        (
            np.array([column_of[slot] for slot in sorted(merged)], dtype=np.int64),
            np.array([merged[slot] for slot in sorted(merged)], dtype=np.float64),
        )
        for merged in hashed
    ]
    return Matrix(rows, columns)


def model_of(w: np.ndarray, b: np.ndarray, columns: np.ndarray) -> FollowupModel:
    rows = weight_rows(w, columns)
    rows = [row for row in rows if max(abs(float(v)) for v in row[1:]) >= PRUNE]
    weights = {int(row[0]): tuple(float(v) for v in row[1:]) for row in rows}
    return FollowupModel(
        buckets=BUCKETS,
        bias=tuple(_round(float(v)) for v in b),
        weights=weights,
        metadata={},
    )


def folds_of(examples: Sequence[Example], folds: int, seed: int) -> list[int]:
    """A fold per example: its dialogue's (`deal`); -1 for a first message (always trained
    on, never scored)."""
    fold_of = deal([e.group for e in examples if e.group], folds, seed)
    return [fold_of[e.group] if e.group else -1 for e in examples]


@dataclass
class Scores:
    intent: int = 0
    target: int = 0
    resolvable: int = 0
    total: int = 0
    by_intent: Counter[str] = field(default_factory=Counter)
    right_by_intent: Counter[str] = field(default_factory=Counter)


def score(examples: Sequence[Example], outs: Sequence[RouterOutput]) -> Scores:
    scores = Scores()
    for example, out in zip(examples, outs, strict=True):
        scores.total += 1
        right = out.intent is example.label
        scores.intent += right
        scores.by_intent[example.label.value] += 1
        scores.right_by_intent[example.label.value] += right
        if target_kind(example.target) != "topic":
            scores.resolvable += 1
            scores.target += target_right(example.target, out, example.reading.own)
    return scores


def out_of_fold(
    examples: list[Example],
    matrix: Matrix,
    fold: list[int],
    l2: float,
    corpus_weight: float,
    folds: int,
) -> dict[float, list[RouterOutput]]:
    """Each follow-up routed with the fold model that never saw its dialogue, per switch."""
    outs: dict[float, list[RouterOutput | None]] = {s: [None] * len(examples) for s in SWITCH_GRID}
    labels = [INTENTS.index(e.label) for e in examples]
    for k in range(folds):
        train = [i for i, f in enumerate(fold) if f != k]
        w, b = fit(
            matrix,
            train,
            [labels[i] for i in train],
            l2,
            [corpus_weight if fold[i] < 0 else 1.0 for i in train],
        )
        model = model_of(w, b, matrix.columns)
        for i, f in enumerate(fold):
            if f == k and examples[i].kind == "follow_up":
                for s in SWITCH_GRID:
                    outs[s][i] = decide_follow_up(examples[i].reading, model, s)[0]
    return {s: [o for o in v if o is not None] for s, v in outs.items()}


def out_of_fold_routed(
    paths: Sequence[Path] | None = None, *, by_file: bool = False
) -> list[tuple[Example, RouterOutput]]:
    """Every tuning dialogue's follow-up routed with a reader trained, with the shipped file's
    settings (its L2 and corpus weight; `FOLLOW_UP_SWITCH`), on the other folds only: 5 folds
    of dialogues, or (`by_file`) each file's dialogues with a reader trained on the other files
    (what a new writer's dialogues would meet)."""
    paths = sorted(DATA.glob("dialogues_tuning*.jsonl")) if paths is None else paths
    shipped = FollowupModel.load().metadata.get("training", {})
    l2 = float(shipped.get("l2", L2_GRID[0]))
    corpus_weight = float(shipped.get("corpus_weight", CORPUS_WEIGHT_GRID[0]))
    loaded, _ = load_dialogues(paths)
    if by_file:
        files = sorted({group.split(":")[0] for group, _ in loaded})
        fold_of = {group: files.index(group.split(":")[0]) for group, _ in loaded}
        count = len(files)
    else:
        fold_of, count = deal([group for group, _ in loaded], FOLDS, SEED), FOLDS
    dialogues = read_cross_fitted(loaded, fold_of, count)
    examples = dialogues + corpus_pairs(dialogues, SEED)
    matrix = build_matrix(examples)
    fold = [fold_of[e.group] if e.group else -1 for e in examples]
    outs = out_of_fold(examples, matrix, fold, l2, corpus_weight, count)[FOLLOW_UP_SWITCH]
    return list(zip([e for e in examples if e.kind == "follow_up"], outs, strict=True))


def _pct(right: int, total: int) -> str:
    return f"{right}/{total} ({100.0 * right / total:.1f}%)" if total else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=Path, action="append", default=[])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--no-grid", action="store_true", help="the first grid values only")
    parser.add_argument("--l2", type=float, action="append", help="instead of the grid")
    parser.add_argument("--corpus-weight", type=float, action="append", help="instead of the grid")
    parser.add_argument("--check-only", action="store_true", help="figures, no file written")
    args = parser.parse_args(argv)
    paths = sorted(DATA.glob("dialogues_tuning*.jsonl")) + list(args.dialogues)
    if any(path.name == "dialogues_heldout.jsonl" for path in paths):
        parser.error("dialogues_heldout.jsonl is for measuring only, never for training")
    loaded, notes = load_dialogues(paths)
    for note in notes:
        print(note)
    dialogues = read_cross_fitted(loaded, deal([group for group, _ in loaded], FOLDS, SEED), FOLDS)
    pairs = corpus_pairs(dialogues, SEED)
    examples = dialogues + pairs
    follow_ups = [e for e in dialogues if e.kind == "follow_up"]
    print(
        f"{len(follow_ups)} dialogues from {len(paths)} files, "
        f"{len(dialogues) - len(follow_ups)} earlier turns read as follow-ups, "
        f"{len(pairs)} first messages paired with a turn"
    )
    matrix = build_matrix(examples)
    fold = folds_of(examples, FOLDS, SEED)
    rules = score(follow_ups, [decide_follow_up(e.reading, None)[0] for e in follow_ups])
    print(
        f"rules alone (in-sample: they were written looking at these): "
        f"intent {_pct(rules.intent, rules.total)}, "
        f"path/folder/URL or none {_pct(rules.target, rules.resolvable)}"
    )
    l2_grid = args.l2 or (L2_GRID[:1] if args.no_grid else L2_GRID)
    weight_grid = args.corpus_weight or (
        CORPUS_WEIGHT_GRID[:1] if args.no_grid else CORPUS_WEIGHT_GRID
    )
    best: tuple[int, int, float, float, float] | None = None
    table: list[dict[str, Any]] = []
    scored = [e for e in examples if e.kind == "follow_up"]
    for l2 in l2_grid:
        for corpus_weight in weight_grid:
            outs = out_of_fold(examples, matrix, fold, l2, corpus_weight, FOLDS)
            for switch, routed in outs.items():
                s = score(scored, routed)
                table.append(
                    {
                        "l2": l2,
                        "corpus_weight": corpus_weight,
                        "switch": switch,
                        "intent": round(s.intent / s.total, 4),
                        "target": round(s.target / max(1, s.resolvable), 4),
                    }
                )
                print(
                    f"l2 {l2:g} corpus weight {corpus_weight:g} switch {switch:g}: out of fold "
                    f"intent {_pct(s.intent, s.total)}, target {_pct(s.target, s.resolvable)}"
                )
                key = (s.intent, s.target, -abs(switch - FOLLOW_UP_SWITCH), l2, corpus_weight)
                if best is None or key > best:
                    best = key
    assert best is not None
    _, _, _, l2, corpus_weight = best
    chosen = max(
        (row for row in table if row["l2"] == l2 and row["corpus_weight"] == corpus_weight),
        key=lambda row: (row["intent"], row["target"], -abs(row["switch"] - FOLLOW_UP_SWITCH)),
    )
    shipped = next(
        row
        for row in table
        if row["l2"] == l2
        and row["corpus_weight"] == corpus_weight
        and row["switch"] == FOLLOW_UP_SWITCH
    )
    print(f"\nchosen: l2 {l2:g}, corpus weight {corpus_weight:g}; best switch {chosen['switch']}")
    print(
        f"shipped switch {FOLLOW_UP_SWITCH}: out of fold intent {shipped['intent']:.1%}, "
        f"target {shipped['target']:.1%}"
    )
    shipped_outs = out_of_fold(examples, matrix, fold, l2, corpus_weight, FOLDS)[FOLLOW_UP_SWITCH]
    per = score(scored, shipped_outs)
    for intent in INTENTS:
        right, total = per.right_by_intent[intent.value], per.by_intent[intent.value]
        print(f"  {intent.value}: {_pct(right, total)}")
    labels = [INTENTS.index(e.label) for e in examples]
    everything = list(range(len(examples)))
    w, b = fit(matrix, everything, labels, l2, [corpus_weight if f < 0 else 1.0 for f in fold])
    model = model_of(w, b, matrix.columns)
    inside = score(scored, [decide_follow_up(e.reading, model)[0] for e in scored])
    print(
        f"in-sample (flatters): intent {_pct(inside.intent, inside.total)}, "
        f"target {_pct(inside.target, inside.resolvable)}"
    )
    if args.check_only:
        return 0
    digest = hashlib.sha256()
    for path in [*paths, *CORPORA]:
        if path.exists():
            digest.update(path.read_bytes())
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "features": FEATURES,
        "intents": [intent.value for intent in INTENTS],
        "buckets": BUCKETS,
        "training": {
            "dialogue_files": [path.name for path in paths],
            "dialogues": len(follow_ups),
            "earlier_turns": len(dialogues) - len(follow_ups),
            "first_messages": len(pairs),
            "sha256": digest.hexdigest(),
            "l2": l2,
            "corpus_weight": corpus_weight,
            "seed": SEED,
        },
        "out_of_fold": {
            "folds": FOLDS,
            "grouped_by": "dialogue",
            "switch": FOLLOW_UP_SWITCH,
            "intent": shipped["intent"],
            "target": shipped["target"],
        },
    }
    rows = [[bucket_id, *values] for bucket_id, values in sorted(model.weights.items())]
    args.output.write_text(render(header, np.asarray(model.bias), rows), "utf-8")
    print(f"wrote {args.output} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

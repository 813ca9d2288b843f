"""How well, and how fast, the router's heuristics route the labelled corpus.

    python -m bench.router_accuracy [--rounds 50]

Prints per-intent accuracy (correct/total and %) on the corpus and on the held-out set, the
misses with what they were routed to, accuracy by confidence band (what the model-refinement
threshold and the direct-action cut-off see), argument-extraction results, and routing
latency p50/p99 over the corpus (heuristics only; no model is involved). The corpus figure is
an upper bound, since the corpus was written alongside the heuristics; the held-out figure is
the honest one. A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import Counter

from broker.router import DIRECT_ACTION_CONFIDENCE, route
from broker.types import Intent, RouterOutput
from tests.broker.router_corpus import CORPUS, EXPECTED_ARGUMENTS, HOLDOUT, LONG_INPUTS

Case = tuple[str, Intent]


def _pct(right: int, total: int) -> str:
    return f"{right}/{total} ({100.0 * right / total:.1f}%)" if total else "-"


def report_accuracy(title: str, cases: list[Case]) -> list[tuple[str, Intent, RouterOutput]]:
    total: Counter[Intent] = Counter()
    right: Counter[Intent] = Counter()
    misses: list[tuple[str, Intent, RouterOutput]] = []
    bands: dict[str, list[int]] = {"high (>=0.85)": [0, 0], "mid (0.7-0.85)": [0, 0]}
    bands["low (<0.7)"] = [0, 0]
    for text, expected in cases:
        out = route(text)
        total[expected] += 1
        ok = out.intent is expected
        right[expected] += ok
        if not ok:
            misses.append((text, expected, out))
        if out.confidence >= DIRECT_ACTION_CONFIDENCE:
            band = "high (>=0.85)"
        elif out.confidence >= 0.7:
            band = "mid (0.7-0.85)"
        else:
            band = "low (<0.7)"
        bands[band][0] += ok
        bands[band][1] += 1

    print(f"\n## {title}: {len(cases)} utterances\n")
    print(f"| {'intent':<20} | {'correct/total':>18} |")
    print(f"|{'-' * 22}|{'-' * 20}|")
    for intent in Intent:
        print(f"| {intent.value:<20} | {_pct(right[intent], total[intent]):>18} |")
    print(f"| {'**overall**':<20} | {_pct(sum(right.values()), len(cases)):>18} |")

    print("\nAccuracy by router confidence:\n")
    for band, (ok_count, count) in bands.items():
        print(f"- {band}: {_pct(ok_count, count)}")

    print(f"\nMisses ({len(misses)}):\n")
    pairs = Counter((expected, out.intent) for _, expected, out in misses)
    for (expected, got), count in pairs.most_common():
        print(f"- {expected.value} -> {got.value}: {count}")
    print()
    for text, expected, out in misses:
        print(
            f"- `{text}`: expected {expected.value}, got {out.intent.value} ({out.confidence:.2f})"
        )
    return misses


def report_arguments() -> None:
    bad: list[str] = []
    for text, expected in EXPECTED_ARGUMENTS.items():
        out = route(text)
        got = out.arguments.model_dump()
        got["risk_level"] = out.risk_level
        wrong = {key: got[key] for key, value in expected.items() if got[key] != value}
        if wrong:
            bad.append(f"- `{text}`: {wrong}")
    good = len(EXPECTED_ARGUMENTS) - len(bad)
    print(f"\n## Argument extraction: {_pct(good, len(EXPECTED_ARGUMENTS))} utterances exact\n")
    print("\n".join(bad))
    actions = sum(1 for text, _ in CORPUS if route(text).arguments.action is not None)
    print(f"Direct actions set on {actions} of {len(CORPUS)} corpus utterances.")


def _percentile(sorted_values: list[int], q: float) -> float:
    index = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[index] / 1000.0


def report_latency(rounds: int) -> None:
    texts = [text for text, _ in CORPUS + HOLDOUT]
    for text in texts:  # warm up: first calls pay for lazy imports and caches
        route(text)
    samples: list[int] = []
    for _ in range(rounds):
        for text in texts:
            start = time.perf_counter_ns()
            route(text)
            samples.append(time.perf_counter_ns() - start)
    samples.sort()
    print(f"\n## Latency: {len(samples)} routings ({rounds} rounds x {len(texts)} utterances)\n")
    print(f"- p50 {_percentile(samples, 0.50):.1f} us")
    print(f"- p99 {_percentile(samples, 0.99):.1f} us")
    print(f"- max {samples[-1] / 1000.0:.1f} us")

    long_inputs = {
        "100 KB prose": ("I am not sure what we decided in the meeting yesterday. " * 2000)[
            :100_000
        ],
        "100 KB 'a.a.a.'": "a." * 50_000,
        "100 KB '. , - '": ". , - " * 16_667,
        "100 KB '~/'": "~/" * 50_000,
    }
    print()
    for name, text in long_inputs.items():
        timings = []
        for _ in range(5):
            start = time.perf_counter_ns()
            route(text)
            timings.append(time.perf_counter_ns() - start)
        print(f"- {name}: median {sorted(timings)[2] / 1e6:.2f} ms")
    # The hostile long inputs tests/broker/test_router.py routes (timing-free there).
    slowest = (0.0, "")
    for text in LONG_INPUTS:
        timings = []
        for _ in range(5):
            start = time.perf_counter_ns()
            route(text)
            timings.append(time.perf_counter_ns() - start)
        slowest = max(slowest, (sorted(timings)[2] / 1e6, repr(text[:12]) + "…"))
    print(
        f"- the tests' {len(LONG_INPUTS)} long inputs (100 KB each): slowest median "
        f"{slowest[0]:.2f} ms ({slowest[1]})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=50, help="latency rounds over the corpus")
    args = parser.parse_args(argv)

    uname = platform.uname()
    print("# Router accuracy and latency\n")
    print(f"- machine: {uname.system} {uname.release} {uname.machine} ({uname.version})")
    print(f"- python: {sys.version.split()[0]} ({platform.python_implementation()})")
    print(f"- cpus: {os.cpu_count()}")

    report_accuracy("Corpus (tuned on)", CORPUS)
    report_accuracy("Held-out (never tuned on)", HOLDOUT)
    report_arguments()
    report_latency(args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

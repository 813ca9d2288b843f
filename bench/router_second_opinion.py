"""Is the embedded model worth asking as the router's second opinion? On labelled first
messages, the router alone against the router with the embedded model refining its unsure
readings (the path a capable model takes: `refine_with_model` below the direct-action level).

    python -m bench.router_second_opinion [--limit N] FILE.jsonl [FILE.jsonl ...]

Each file holds one JSON object per line with "text" and "intent" (tests/broker/data's
`intents_tuning_*.jsonl`). Figures: accuracy both ways, how many readings the model was asked
about, how many it turned right → wrong and wrong → right, and the time each refinement took
(p50, p99). Real parts only: the bundled SmolLM2-135M in its worker process. A benchmark reports
figures; it asserts nothing. Runs in a scratch home.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument(
        "--limit", type=int, default=0, help="an evenly spaced sample of this many (0: all)"
    )
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="chamberlain-bench-")
    os.environ["HOME"] = scratch
    os.environ["CHAMBERLAIN_HOME"] = str(Path(scratch) / "chamberlain")

    from bench.machine import machine_details
    from broker.executor import DIRECT_CONFIDENCE
    from broker.llm.embedded import EmbeddedChatModel, embedded_problem
    from broker.router import refine_with_model, route
    from broker.settings import Settings

    problem = embedded_problem()
    if problem is not None:
        print(f"the embedded model cannot run here: {problem}", file=sys.stderr)
        return 1
    print(json.dumps(machine_details()))
    threshold = Settings().router.confidence_threshold
    model = EmbeddedChatModel(timeout_s=120)
    try:
        for path in args.files:
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            if 0 < args.limit < len(rows):
                # Evenly spaced: the files are grouped by intent, so every intent is sampled.
                rows = [rows[k * len(rows) // args.limit] for k in range(args.limit)]
            alone = refined_right = asked = fixed = broke = 0
            times: list[float] = []
            for row in rows:
                base = route(row["text"])
                out = base
                if base.confidence < DIRECT_CONFIDENCE and base.source != "prefix":
                    asked += 1
                    start = time.perf_counter()
                    out = refine_with_model(base, base.text, model, threshold)
                    times.append(time.perf_counter() - start)
                want = row["intent"]
                before, after = base.intent.value == want, out.intent.value == want
                alone += before
                refined_right += after
                fixed += after and not before
                broke += before and not after
            n = len(rows)
            print(f"\n{path.name}: {n} messages")
            print(f"  router alone        {alone}/{n} ({100 * alone / n:.1f} %)")
            print(f"  with the embedded   {refined_right}/{n} ({100 * refined_right / n:.1f} %)")
            print(f"  asked {asked}; wrong → right {fixed}; right → wrong {broke}")
            if times:
                times.sort()
                p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
                print(f"  refinement: p50 {statistics.median(times):.2f} s, p99 {p99:.2f} s")
    finally:
        model.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

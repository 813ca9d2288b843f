"""How well the router tells research from a single web lookup, on labelled requests.

    python -m bench.research_recognition [FILE.jsonl ...]

Each line: {"text": ..., "label": "research" | "single", "note": ... on traps}; by default
tests/broker/data/research_tuning_r1.jsonl. Prints, per file, research recognised, single
lookups marked research, the same on the traps, and how many research requests the whole router
both routes as a lookup and marks (`route(text).research`). A benchmark reports figures; it
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from broker.router import is_research, route

DEFAULT = Path(__file__).resolve().parents[1] / "tests/broker/data/research_tuning_r1.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("files", nargs="*", type=Path, default=[DEFAULT])
    args = parser.parse_args(argv)
    for path in args.files:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        research = [r for r in rows if r["label"] == "research"]
        single = [r for r in rows if r["label"] == "single"]
        found = sum(is_research(r["text"]) for r in research)
        marked = sum(is_research(r["text"]) for r in single)
        trap_r = [r for r in research if "note" in r]
        trap_s = [r for r in single if "note" in r]
        routed = sum(route(r["text"]).research for r in research)
        traps = (
            f"research {sum(is_research(r['text']) for r in trap_r)}/{len(trap_r)}, "
            f"single right {sum(not is_research(r['text']) for r in trap_s)}/{len(trap_s)}"
        )
        print(f"{path.name}")
        print(f"  research recognised {found}/{len(research)}")
        print(f"  single lookups marked research {marked}/{len(single)}")
        print(f"  traps: {traps}")
        print(f"  routed as a lookup and marked research: {routed}/{len(research)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

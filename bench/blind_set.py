"""Score a blind message set the way issue 24 reports it: each first message routed once.

    .venv/bin/python -m bench.blind_set tests/broker/data/intents_scored_w12a.jsonl [...] [--misses]

Each line of a set is `{"text", "intent", "persona"}` and, for a trap, a `note`. A message is
routed by `route(text)` (the rules and the shipped classifier, no model, no earlier turns) and
counted right when its intent is the label. Printed per set: the overall figure, each intent's,
the traps', the commonest confusions, and for the memory writes the router missed how many the
reply would have offered to remember (`broker.fact_offer.offer_of`, as a turn does), with the
false offers among the other messages. `--misses` lists what was missed (label, reading, text).

A set scored after anything was tuned on it gives a tuning figure, not a fresh one: the
figure of record is the one taken once, before the set was looked at (docs/BENCHMARKS.md,
"Routing on fresh phrasing"; tests/broker/data/README.md says where each set was scored).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from broker.fact_offer import offer_of  # noqa: E402
from broker.router import route  # noqa: E402
from broker.router.classifier import keep_probability  # noqa: E402
from broker.types import Intent  # noqa: E402

# Of 30 messages an intent needs this many right for issue 24's 85 %.
BAR = 0.85


@dataclass
class Score:
    right: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    confusions: Counter[tuple[str, str]] = field(default_factory=Counter)
    traps: int = 0
    traps_right: int = 0
    facts_missed: int = 0
    facts_offered: int = 0
    false_offers: int = 0
    misses: list[tuple[str, str, str]] = field(default_factory=list)


def score(rows: list[dict[str, str]]) -> Score:
    out = Score()
    for row in rows:
        text, want = row["text"], row["intent"]
        got = route(text).intent.value
        out.total[want] += 1
        if got == want:
            out.right[want] += 1
        else:
            out.confusions[(want, got)] += 1
            out.misses.append((want, got, text))
        if "note" in row:
            out.traps += 1
            out.traps_right += got == want
        if got != Intent.MEMORY_WRITE.value:
            offered = offer_of(text, keep_probability(text)) is not None
            if want == Intent.MEMORY_WRITE.value:
                out.facts_missed += 1
                out.facts_offered += offered
            else:
                out.false_offers += offered
    return out


def report(name: str, result: Score, misses: bool) -> str:
    right, total = sum(result.right.values()), sum(result.total.values())
    lines = [f"== {name}: {right}/{total} ({100 * right / total:.1f} %)"]
    for intent in sorted(result.total):
        got, of = result.right[intent], result.total[intent]
        below = "  below 85 %" if got < BAR * of else ""
        lines.append(f"  {intent:20s} {got}/{of}{below}")
    lines.append(f"  traps right {result.traps_right}/{result.traps}")
    common = ", ".join(f"{w} → {g} {n}" for (w, g), n in result.confusions.most_common(8))
    lines.append(f"  commonest confusions: {common or 'none'}")
    lines.append(
        f"  memory writes missed {result.facts_missed}, offered {result.facts_offered}; "
        f"false offers {result.false_offers}"
    )
    if misses:
        lines += [f"  miss: {w} → {g}: {t}" for w, g, t in result.misses]
    return "\n".join(lines)


def read_set(path: Path) -> list[dict[str, str]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise SystemExit(f'{path}:{number}: a line needs "text" and "intent"')
        if row.get("intent") not in {intent.value for intent in Intent}:
            raise SystemExit(f"{path}:{number}: unknown intent {row.get('intent')!r}")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path, help="JSON-lines files of labelled messages")
    parser.add_argument("--misses", action="store_true", help="list every message missed")
    args = parser.parse_args(argv)
    for path in args.sets:
        print(report(str(path), score(read_set(path)), args.misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How well the router reads follow-ups: intent and target of the last message of each dialogue in
tests/broker/data/dialogues_tuning*.jsonl and dialogues_heldout.jsonl (written blind; see that
folder's README).

    python -m bench.router_followups                 # the tuning split: in-sample, with its
                                                     # misses, then out of fold
    python -m bench.router_followups --split heldout # totals and per-intent figures only

The tuning split is every dialogues_tuning*.jsonl. Its in-sample figure flatters: the rules were
written and the learned follow-up reader (resources/followup_model.json) trained on those
dialogues. The out-of-fold figure is the honest one for what was trained: the dialogues are
dealt into 5 folds (grouped by dialogue, so none scores itself), and each fold's follow-ups are
routed with a follow-up reader trained, with the shipped settings, on the other folds only
(scripts/train_followup_model.py; needs numpy; `--no-oof` skips it). Then by file: each
dialogue file routed with a reader trained on the other files only, what a new writer's
dialogues meet.

Each dialogue's earlier turns become `Earlier` values as a conversation would give them: the
person's text, the labelled intent, what the router's arguments named for that turn (its paths,
folder and URL, routed in turn with the turns before it), and, as `listed`, the paths and URLs
in the turn's reply in order (only the numbered or bulleted lines when the reply has a list, so
a heading such as "~/garden:" is not an item). The follow-up is routed with them by
`broker.router.route` (no model).

Targets, scored by kind:
- a path, folder or URL: right when the router's arguments carry it (paths, URL, command
  folder, or `refers_to`, what the model is told the words point at; a URL compared without
  scheme, "www." or trailing slash);
- none (`null`): right when the earlier turns added nothing to the arguments (no path, URL,
  folder or search words the message alone would not have);
- a topic, place or fact: right when every word of it is in the router's arguments. Most such
  targets appear only in a reply's text, which the router never reads, so this figure is
  reported apart and is not the router's goal.

The held-out split prints no message, only totals and per-intent figures: it is scored once,
after tuning, and nobody looks at its misses. A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.router import Earlier, classifier, route
from broker.router.extraction import _strip_trailing
from broker.router.patterns import _PATH_RE, _URL_RE
from broker.types import Intent, RouterOutput

DATA = Path(__file__).resolve().parent.parent / "tests" / "broker" / "data"
_LIST_LINE_RE = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*•])\s+")
_WORD_RE = re.compile(r"[\w]+", re.UNICODE)
# A size a listing shows after a name ("  6.1G", "21.4 GB"): the tool's column, not the name.
_SIZE = r"\s+\d[\d.,]*\s?(?:[KMGT]i?B?|bytes?)\b"
# A list item that is a path ("C:\\Users\\ana\\My Documents\\cv.docx (2 MB)"): all of it, up
# to a note in brackets, after a dash, or a size.
_ITEM_PATH_RE = re.compile(
    r"((?:~|/|[a-z]:\\|\\\\)[^()\n]*?)(?:\s+[(\[]|\s+[-–—]\s|" + _SIZE + r"|$)", re.I
)
# An item that is a file's path with brackets or a dash in its name ("~/Music/Low Tide (radio
# edit).wav", "Bruno Mars - Uptown Funk.mp3"): up to its extension, before any note. A file
# tool lists such a name whole, so the bench must not cut it at the bracket.
_ITEM_FILE_RE = re.compile(
    r"((?:~|/|[a-z]:\\|\\\\)[^\n]*?\.[a-z0-9]{1,5})"
    r"(?:\s+[(\[][^()\[\]]*[)\]]|\s+[-–—]\s.*|" + _SIZE + r".*)?\s*$",
    re.I,
)
# A list item that is a bare file name under a folder heading ("1. backup.ps1"): a listing
# tool gives it with its folder, which the router joins from the folder the turn named.
_ITEM_BARE_RE = re.compile(
    r"(\w[\w .\-]{0,80}\.(?=[a-z0-9]*[a-z])[a-z0-9]{1,5})(?:\s+[(\[].*|\s+[-–—]\s.*)?$", re.I
)


def _pct(right: int, total: int) -> str:
    return f"{right}/{total} ({100.0 * right / total:.1f}%)" if total else "-"


def listed_in(reply: str) -> tuple[str, ...]:
    """The paths and URLs a reply shows, in order: its list items when it has a list (an item
    that starts with a path is the whole path, spaces and all, up to a note in brackets or a
    size column, which a file tool gives apart from the name)."""
    lines = reply.splitlines()
    items = [_LIST_LINE_RE.sub("", line, count=1) for line in lines if _LIST_LINE_RE.match(line)]
    found: list[str] = []
    for line in items or lines:
        whole = None
        if items:
            item = line.strip()
            whole = _ITEM_FILE_RE.match(item) or _ITEM_PATH_RE.match(item)
            if whole is None and not _URL_RE.match(item):
                whole = _ITEM_BARE_RE.fullmatch(item)
        if whole is not None:
            found.append(_strip_trailing(whole.group(1).strip()))
            continue
        spans: list[tuple[int, str]] = []
        scan = line
        for match in _URL_RE.finditer(line):
            spans.append((match.start(), _strip_trailing(match.group(0))))
            scan = scan[: match.start()] + " " * (match.end() - match.start()) + scan[match.end() :]
        for match in _PATH_RE.finditer(scan):
            token = _strip_trailing(match.group(1))
            if token not in ("/", ".", ".."):
                spans.append((match.start(), token))
        found.extend(token for _, token in sorted(spans))
    return tuple(dict.fromkeys(found))


def named_by(out: RouterOutput) -> tuple[str, ...]:
    """What a turn's arguments named, as the conversation keeps it (broker/session.py)."""
    args = out.arguments
    named = [*args.paths, *([args.cwd] if args.cwd else []), *([args.url] if args.url else [])]
    return tuple(dict.fromkeys(named))


def earlier_turns(turns: list[dict[str, Any]]) -> list[Earlier]:
    earlier: list[Earlier] = []
    for turn in turns:
        out = route(turn["user"], earlier=earlier)
        earlier.append(
            Earlier(
                text=turn["user"],
                intent=Intent(turn["intent"]),
                named=named_by(out),
                listed=listed_in(turn.get("assistant") or ""),
            )
        )
    return earlier


def _norm(value: str) -> str:
    value = value.strip().rstrip("/\\")
    lowered = value.lower()
    for prefix in ("https://", "http://"):
        if lowered.startswith(prefix):
            value, lowered = value[len(prefix) :], lowered[len(prefix) :]
    if lowered.startswith("www."):
        value = value[4:]
    return value


def target_kind(target: str | None) -> str:
    if target is None:
        return "none"
    stripped = target.strip()
    if stripped.startswith(("~", "/", "./", "../", "\\\\")):
        return "place"
    if re.match(r"[a-z]:\\", stripped, re.I):
        return "place"
    if _URL_RE.fullmatch(stripped) or stripped.lower().startswith(("http://", "https://")):
        return "place"
    return "topic"


def _carried(out: RouterOutput) -> list[str]:
    args = out.arguments
    return [
        *args.paths,
        *([args.url] if args.url else []),
        *([args.cwd] if args.cwd else []),
        *([args.refers_to] if args.refers_to else []),
    ]


def target_right(target: str | None, out: RouterOutput, alone: RouterOutput) -> bool:
    kind = target_kind(target)
    if kind == "place":
        assert target is not None
        return _norm(target) in {_norm(value) for value in _carried(out)}
    added = set(_carried(out)) - set(_carried(alone))
    if kind == "none":
        return not added and out.arguments.query in (None, alone.arguments.query)
    assert target is not None
    args = out.arguments
    text = " ".join(
        [*_carried(out), args.query or "", args.fact or "", args.pattern or "", *args.topics]
    ).lower()
    words = [w for w in _WORD_RE.findall(target.lower()) if len(w) > 2]
    return bool(words) and all(word in text for word in words)


@dataclass
class Scored:
    dialogue: dict[str, Any]
    out: RouterOutput
    intent_ok: bool
    target_ok: bool
    kind: str


def score(path: Path | Sequence[Path]) -> list[Scored]:
    scored: list[Scored] = []
    paths = [path] if isinstance(path, Path) else list(path)
    lines = [line for p in paths for line in p.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if not line.strip():
            continue
        dialogue = json.loads(line)
        follow = dialogue["follow_up"]
        earlier = earlier_turns(dialogue["turns"])
        out = route(follow["user"], earlier=earlier)
        alone = route(follow["user"])
        scored.append(
            Scored(
                dialogue,
                out,
                out.intent is Intent(follow["intent"]),
                target_right(follow.get("target"), out, alone),
                target_kind(follow.get("target")),
            )
        )
    return scored


def report(scored: list[Scored], *, show_misses: bool) -> None:
    total: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for item in scored:
        expected = item.dialogue["follow_up"]["intent"]
        total[expected] += 1
        right[expected] += item.intent_ok
    print(f"\nFollow-ups: {len(scored)}\n")
    print("| intent | intent right |")
    print("|---|---|")
    for intent in Intent:
        print(f"| {intent.value} | {_pct(right[intent.value], total[intent.value])} |")
    print(f"| **overall** | **{_pct(sum(right.values()), len(scored))}** |")
    print("\n| target kind | right |")
    print("|---|---|")
    for kind, label in (
        ("place", "path, folder or URL"),
        ("none", "none (nothing referred to)"),
        ("topic", "topic, place or fact"),
    ):
        group = [item for item in scored if item.kind == kind]
        print(f"| {label} | {_pct(sum(item.target_ok for item in group), len(group))} |")
    resolvable = [item for item in scored if item.kind != "topic"]
    print(
        f"| **path/folder/URL or none** | "
        f"**{_pct(sum(item.target_ok for item in resolvable), len(resolvable))}** |"
    )
    both = sum(item.intent_ok and item.target_ok for item in resolvable)
    print(
        "\nIntent and target both right (path, folder, URL or none):",
        _pct(both, len(resolvable)),
    )
    if not show_misses:
        return
    print("\nMisses:\n")
    for item in scored:
        if item.intent_ok and (item.target_ok or item.kind == "topic"):
            continue
        d = item.dialogue
        history = " || ".join(f"{t['user']} [{t['intent']}]" for t in d["turns"])
        follow = d["follow_up"]
        print(
            f"- {d['id']} {history} ==> {follow['user']!r}: want {follow['intent']} "
            f"{follow.get('target')!r}; got {item.out.intent.value} ({item.out.confidence:.2f}) "
            f"{item.out.arguments.model_dump(exclude_defaults=True)}"
        )


def latency(paths: Sequence[Path], rounds: int) -> None:
    """Each follow-up routed with its earlier turns and, interleaved (same machine, same
    moment), alone: what reading the conversation adds."""
    cases = []
    for line in (line for p in paths for line in p.read_text(encoding="utf-8").splitlines()):
        if line.strip():
            dialogue = json.loads(line)
            cases.append((dialogue["follow_up"]["user"], earlier_turns(dialogue["turns"])))
    # Wall time, and the routing thread's CPU time: on a busy machine the wall-clock tail is
    # mostly time spent waiting for a core, which CPU time leaves out.
    timings: dict[str, list[int]] = {key: [] for key in ("alone", "with", "alone cpu", "with cpu")}

    def timed(key: str, text: str, earlier: list[Earlier]) -> None:
        classifier._last = None  # neither may use the other's cached classifier reading
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        route(text, earlier=earlier)
        timings[key].append(time.perf_counter_ns() - wall)
        timings[key + " cpu"].append(time.thread_time_ns() - cpu)

    for _ in range(rounds):
        for text, earlier in cases:
            timed("alone", text, [])
            timed("with", text, earlier)
    for key, name in (("alone", "alone"), ("with", "with its earlier turns")):
        print(f"\nLatency, each follow-up {name} ({len(timings[key])} routings):")
        for kind, samples in (("wall", timings[key]), ("cpu", timings[key + " cpu"])):
            samples.sort()

            def at(q: float, samples: list[int] = samples) -> float:
                return samples[min(len(samples) - 1, int(q * len(samples)))] / 1e6

            print(
                f"- {kind}: p50 {at(0.5):.2f} ms, p99 {at(0.99):.2f} ms, "
                f"max {samples[-1] / 1e6:.2f} ms"
            )


def out_of_fold() -> None:
    """The tuning dialogues routed with fold readers that never saw them (see the docstring)."""
    scripts = Path(__file__).resolve().parent.parent / "scripts"
    if str(scripts.parent) not in sys.path:
        sys.path.insert(0, str(scripts.parent))
    try:
        from broker.router.heuristic import decide_follow_up
        from scripts.train_followup_model import out_of_fold_routed
    except ImportError as error:
        print(f"\nOut of fold: not computed ({error}; the training script needs numpy)")
        return
    routed = out_of_fold_routed()
    print("\n## Out of fold (the follow-up reader trained without the fold's dialogues)")
    report(
        [
            Scored(
                example.dialogue or {},
                out,
                out.intent is example.label,
                target_right(example.target, out, example.reading.own),
                target_kind(example.target),
            )
            for example, out in routed
        ],
        show_misses=False,
    )
    print("\n## Out of fold by file (each file routed with a reader trained on the others)\n")
    print("| file | rules alone (in sample) | rules + reader trained on the other files |")
    print("|---|---|---|")
    by_file = out_of_fold_routed(by_file=True)
    for name in sorted({example.group.split(":")[0] for example, _ in by_file}):
        mine = [(e, out) for e, out in by_file if e.group.startswith(name + ":")]
        alone = sum(decide_follow_up(e.reading, None)[0].intent is e.label for e, _ in mine)
        right = sum(out.intent is e.label for e, out in mine)
        print(f"| {name} | {_pct(alone, len(mine))} | {_pct(right, len(mine))} |")
    right = sum(out.intent is e.label for e, out in by_file)
    print(f"| **all** | | **{_pct(right, len(by_file))}** |")


def load_cost() -> None:
    """How long the follow-up reader's weight file takes to load, and its size on disk and in
    memory (loaded once per process, on the first follow-up)."""
    import tracemalloc
    from importlib import resources

    from broker.router.followup_model import FollowupModel

    try:
        size = resources.files("resources").joinpath("followup_model.json").read_bytes()
    except OSError as error:
        print(f"\nFollow-up reader: none shipped ({error})")
        return
    times = []
    for _ in range(5):
        start = time.perf_counter()
        FollowupModel.load()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    model = FollowupModel.load()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\nFollow-up reader: {len(size) / 1024:.0f} KiB on disk, {len(model.weights)} weight "
        f"rows; load median {sorted(times)[2] * 1e3:.1f} ms (max {max(times) * 1e3:.1f} ms), "
        f"peak {peak / 2**20:.1f} MiB while loading"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tuning", "heldout"), default="tuning")
    parser.add_argument("--rounds", type=int, default=20, help="latency rounds (tuning split)")
    parser.add_argument("--no-oof", action="store_true", help="skip the out-of-fold figure")
    args = parser.parse_args(argv)
    if args.split == "heldout":
        paths = [DATA / "dialogues_heldout.jsonl"]
        if not paths[0].exists():
            print(f"No held-out dialogues: {paths[0]} does not exist (nothing to score).")
            return 0
    else:
        paths = sorted(DATA.glob("dialogues_tuning*.jsonl"))
        print("Tuning files:", ", ".join(path.name for path in paths))
    route("warm up", earlier=[Earlier("warm up", Intent.CHAT_ONLY)])
    print("\n## In sample" if args.split == "tuning" else "\n## Held out")
    report(score(paths), show_misses=args.split == "tuning")
    if args.split == "tuning" and not args.no_oof:
        out_of_fold()
    if args.split == "tuning" and args.rounds > 0:
        load_cost()
        latency(paths, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the chat transcript costs with 1,000 messages, against an empty one in the same run.

    python -m bench.chat_window [--runs 7] [--messages 1000] [--design lazy|eager] [--json]

Offscreen Qt (QT_QPA_PLATFORM=offscreen unless set), the real `app.chat_view.Transcript` at
700×560, filled with a realistic mix: the person's message, a tool card with a result, a
markdown reply (a paragraph, a list, bold and code). Each figure is the wall time of the call
plus the event processing that lays out and paints its result, median of `--runs` fresh rounds:

- ``append_empty``: append one reply to an empty chat — the baseline;
- ``append_1000``: append one reply to a chat of `--messages` messages, following the bottom;
- ``open_1000``: show a chat of `--messages` messages (what picking it in the sidebar costs);
- ``scroll_top``: from the bottom, scroll to the top once (the previous page is built);
- ``scroll_first``: keep scrolling to the top until the very first message is on show (the
  sum over every page built on the way: about `--messages` ÷ PAGE scrolls).

Each is measured twice: ``lazy`` is the transcript as shipped (widgets for the newest page,
more built while scrolling up, the oldest dropped while following the bottom); ``eager`` builds
every message's widget up front — the design the lazy one is measured against. A benchmark
reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.machine import machine_details


def _entries(count: int) -> list[Any]:
    from app.chat_entries import ReplyEntry, ToolCall, ToolEntry, UserEntry

    reply = (
        "Here is what I found in **Documents**:\n\n"
        "- `plan.txt`, last changed yesterday\n- `budget 2026.ods`\n- `notes.md`\n\n"
        "The budget file is the largest. Ask me to open any of them, or to search inside them."
    )
    listing = "\n".join(
        f"  {n * 37 % 900:>4} KB  2026-11-2{n % 10}  file-{n}.txt" for n in range(30)
    )
    made: list[Any] = []
    while len(made) < count:
        n = len(made)
        kind = n % 3
        if kind == 0:
            made.append(UserEntry(body=f"list files in ~/Documents/project-{n}"))
        elif kind == 1:
            call = ToolCall(
                f"c{n}", "file_list", "file_read", f"path=~/Documents/project-{n}", "ok", 0.012
            )
            call.result = listing
            made.append(ToolEntry(call=call))
        else:
            made.append(ReplyEntry(body=reply, status="done"))
    return made


def _settle(app: Any) -> None:
    for _ in range(3):
        app.processEvents()


def _timed(work: Callable[[], Any], app: Any) -> float:
    started = time.perf_counter()
    work()
    _settle(app)
    return time.perf_counter() - started


def _round(app: Any, messages: int, eager: bool) -> dict[str, float]:
    import app.chat_view as view
    from app.chat_entries import ReplyEntry
    from app.chat_view import Transcript

    page, live = view.PAGE, view.MAX_LIVE
    if eager:
        view.PAGE = view.MAX_LIVE = messages + 10
    try:
        figures: dict[str, float] = {}
        empty = Transcript()
        empty.resize(700, 560)
        empty.show()
        _settle(app)
        figures["append_empty"] = _timed(
            lambda: empty.append(ReplyEntry(body="A new reply, **just now**.", status="done")), app
        )
        empty.close()
        empty.deleteLater()

        full = Transcript()
        full.resize(700, 560)
        full.show()
        _settle(app)
        entries = _entries(messages)
        figures["open_1000"] = _timed(lambda: full.load(entries), app)
        full.scroll_to_bottom()
        _settle(app)
        figures["append_1000"] = _timed(
            lambda: full.append(ReplyEntry(body="A new reply, **just now**.", status="done")), app
        )
        bar = full.verticalScrollBar()
        figures["scroll_top"] = _timed(lambda: bar.setValue(0), app)
        started = time.perf_counter()
        for _ in range(messages):
            if full.first == 0:
                break
            bar.setValue(0)
            _settle(app)
        figures["scroll_first"] = time.perf_counter() - started + figures["scroll_top"]
        full.close()
        full.deleteLater()
        _settle(app)
        return figures
    finally:
        view.PAGE, view.MAX_LIVE = page, live


def measure(
    runs: int, messages: int, designs: tuple[str, ...] = ("lazy", "eager")
) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["bench-chat-window"])
    _round(app, min(messages, 100), eager=False)  # warm-up: fonts, styles, first layouts
    report: dict[str, Any] = {
        "machine": machine_details(),
        "runs": runs,
        "messages": messages,
        "platform": app.platformName(),
    }
    for design in designs:
        rounds = [_round(app, messages, eager=design == "eager") for _ in range(runs)]
        ms = {
            name: {
                "median": round(statistics.median(r[name] for r in rounds) * 1000, 2),
                "min": round(min(r[name] for r in rounds) * 1000, 2),
                "max": round(max(r[name] for r in rounds) * 1000, 2),
            }
            for name in rounds[0]
        }
        base = ms["append_empty"]["median"] or 1e-9
        report[design] = {
            "ms": ms,
            "append_ratio_to_empty": round(ms["append_1000"]["median"] / base, 2),
        }
    return report


def render(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        f"chat transcript — {report['messages']} messages, median of {report['runs']} runs, "
        f"Qt platform {report['platform']}, {machine['cpu']} ×{machine['nproc']}, "
        f"Python {machine['python']}, load {machine['load_average']}, {machine['date']}",
    ]
    for design in ("lazy", "eager"):
        if design not in report:
            continue
        row = report[design]
        lines.append(f"\n{design}{'':<10}{'median ms':>11}{'min ms':>9}{'max ms':>9}")
        for name, figures in row["ms"].items():
            lines.append(
                f"  {name:<14}{figures['median']:>11.2f}{figures['min']:>9.2f}"
                f"{figures['max']:>9.2f}"
            )
        lines.append(f"  append to {report['messages']} ÷ append to empty: ")
        lines[-1] += f"{row['append_ratio_to_empty']:.2f}×"
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument(
        "--design",
        choices=("lazy", "eager"),
        help="measure only this design (the shipped lazy one is the one that matters; eager "
        "takes most of the run)",
    )
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    designs = (options.design,) if options.design else ("lazy", "eager")
    report = measure(options.runs, options.messages, designs)
    print(json.dumps(report, indent=2) if options.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

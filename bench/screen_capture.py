"""What a screenshot costs: capture alone, and capture + OCR, at 1280×800 and 1920×1080.

    python -m bench.screen_capture [--n 10] [--warmup 2] [--sizes 1280x800,1920x1080] [--json]

For each size this starts its own Xvfb (tests/support/xvfb.py; stopped by PID afterwards), fills
the screen with real xmessage windows of text so OCR has a desktop's worth of work, and times
N runs after the warm-up ones, reporting median and p95 in milliseconds:

- grab: mss alone, all monitors into an RGB image;
- capture: the screen_capture tool with ocr=false (grab, PNG encode, save 0600, prune);
- capture_ocr: the tool with ocr=true (the above plus text recognition);
- png level 1 vs 6: encode time and bytes (why screenshots are saved at level 6).

The OCR engine's load is reported apart from the runs: once in a fresh Python process (imports
of OpenCV and onnxruntime included, what the first screenshot of a session pays) and once in
this one. Screenshots go to a temporary folder that is removed afterwards. A benchmark reports
figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.machine import machine_details
from bench.pipeline_overhead import percentile
from tests.support.xvfb import MEDIUM_FONT, Xvfb, running_xvfb
from tools.registry import ToolConfig
from tools.screen import OCR, encode_png, find_screen, grab, make_screen_tools

REPO = Path(__file__).resolve().parents[1]

_TEXT = (
    "the quarterly report shows revenue growth across every region while costs stayed flat "
    "please review the attached invoice before friday and confirm the delivery address "
    "meeting notes action items owner deadline status blocked waiting on legal approval "
    "build passed with warnings deploy to staging scheduled after the security review"
)
_WORDS = _TEXT.split()


def _paragraph(seed: int, lines: int, words_per_line: int) -> str:
    out = []
    for i in range(lines):
        start = (seed * 7 + i * 5) % len(_WORDS)
        words = [_WORDS[(start + k) % len(_WORDS)] for k in range(words_per_line)]
        out.append(" ".join(words).capitalize())
    return "\n".join(out)


def fill_screen(server: Xvfb) -> int:
    """A grid of text windows over the whole screen; how many lines of text are shown."""
    shown = 0
    cols, rows = (2, 3) if server.width < 1600 else (3, 4)
    cell_w, cell_h = server.width // cols, server.height // rows
    for row in range(rows):
        for col in range(cols):
            lines = max(2, cell_h // 24 - 3)
            text = _paragraph(row * cols + col, lines, max(3, cell_w // 90))
            title = f"bench window {row}-{col}"
            server.show_text(title, text, at=(col * cell_w + 4, row * cell_h + 4), font=MEDIUM_FONT)
            shown += lines
    return shown


def timed(fn: Callable[[], object], n: int, warmup: int) -> list[float]:
    """Milliseconds per call for n calls after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {
        "median": round(percentile(times, 50), 1),
        "p95": round(percentile(times, 95), 1),
        "min": round(min(times), 1),
        "max": round(max(times), 1),
    }


def cold_engine_load_s() -> float:
    """Seconds to import and load the OCR engine in a fresh Python process."""
    code = (
        "import time; t = time.perf_counter(); from tools.screen import OCR; OCR.load(); "
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def measure_size(width: int, height: int, n: int, warmup: int, folder: Path) -> dict[str, Any]:
    with running_xvfb(width, height) as server:
        os.environ["DISPLAY"] = server.display
        os.environ.pop("WAYLAND_DISPLAY", None)
        text_lines = fill_screen(server)
        session = find_screen()
        capture_tool = make_screen_tools(ToolConfig(screenshot_dir=folder))[0]
        image = grab(session, "all").image
        ocr_lines: list[int] = []

        def with_ocr() -> None:
            ocr_lines.append(len(capture_tool.run({"ocr": True}).data["ocr"]["lines"]))

        grab_ms = summary(timed(lambda: grab(session, "all"), n, warmup))
        capture_ms = summary(timed(lambda: capture_tool.run({"ocr": False}), n, warmup))
        capture_ocr_ms = summary(timed(with_ocr, n, warmup))
        png = {
            level: {
                "ms": summary(timed(lambda lv=level: encode_png(image, lv), n, warmup)),
                "bytes": len(encode_png(image, level)),
            }
            for level in (1, 6)
        }
        return {
            "size": f"{width}x{height}",
            "text_lines_shown": text_lines,
            "ocr_lines_found": ocr_lines[-1] if ocr_lines else None,
            "grab_ms": grab_ms,
            "capture_ms": capture_ms,
            "capture_ocr_ms": capture_ocr_ms,
            "png": png,
        }


def run(n: int, warmup: int, sizes: list[tuple[int, int]]) -> dict[str, Any]:
    cold = cold_engine_load_s()
    warm = OCR.load()
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-screen-") as tmp:
        results = [measure_size(w, h, n, warmup, Path(tmp) / f"{w}x{h}") for w, h in sizes]
    return {
        "machine": machine_details(),
        "n": n,
        "warmup": warmup,
        "ocr_engine_load_s": {
            "fresh_process": round(cold, 3),
            "this_process": round(warm, 3) if warm is not None else None,
        },
        "sizes": results,
    }


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    load = report["ocr_engine_load_s"]
    lines = [
        f"machine: {m['cpu']}, {m['nproc']} CPUs, {m['ram']} RAM; {m['uname']}",
        f"python {m['python']}; load average {m['load_average']}; {m['date']}",
        f"{report['n']} runs per figure after {report['warmup']} warm-up runs (ms)",
        f"OCR engine load: {load['fresh_process']:.2f} s in a fresh process (imports included), "
        f"{load['this_process']} s here after the imports",
        "",
        f"{'size':<11}{'what':<14}{'median':>9}{'p95':>9}{'min':>9}{'max':>9}",
    ]
    for row in report["sizes"]:
        for key, label in (
            ("grab_ms", "grab"),
            ("capture_ms", "capture"),
            ("capture_ocr_ms", "capture+OCR"),
        ):
            s = row[key]
            lines.append(
                f"{row['size']:<11}{label:<14}{s['median']:>9.1f}{s['p95']:>9.1f}"
                f"{s['min']:>9.1f}{s['max']:>9.1f}"
            )
        for level, figures in row["png"].items():
            s = figures["ms"]
            lines.append(
                f"{row['size']:<11}{'png level ' + str(level):<14}{s['median']:>9.1f}"
                f"{s['p95']:>9.1f}{s['min']:>9.1f}{s['max']:>9.1f}  {figures['bytes']:,} bytes"
            )
        lines.append(
            f"{row['size']:<11}text lines shown {row['text_lines_shown']}, "
            f"OCR lines found {row['ocr_lines_found']}"
        )
    return "\n".join(lines)


def _size(text: str) -> tuple[int, int]:
    width, _, height = text.partition("x")
    return int(width), int(height)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.screen_capture", description=__doc__)
    parser.add_argument("--n", type=int, default=10, help="timed runs per figure (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    parser.add_argument("--sizes", default="1280x800,1920x1080", help="screen sizes, WxH,...")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    sizes = [_size(s) for s in args.sizes.split(",") if s]
    saved = {k: os.environ.get(k) for k in ("DISPLAY", "WAYLAND_DISPLAY")}
    try:
        report = run(max(1, args.n), max(0, args.warmup), sizes)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

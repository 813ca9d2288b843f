"""tools/ocr.py (the PP-OCR models without OpenCV) against rapidocr-onnxruntime's own pipeline,
on the same screenshots, in the same process: what each reads and how long it takes.

    pip install --target /tmp/cvpkg --no-deps opencv-python-headless==5.0.0.93
    PYTHONPATH=/tmp/cvpkg python -m bench.ocr_compare [--runs 3] [--size 1280x800 ...]

OpenCV is not a dependency of Chamberlain (that is the point): it is put on the path for this
comparison only. For each size the benchmark starts its own Xvfb with bench/screen_capture.py's
grid of xmessage windows (a desktop's worth of English text), grabs it once, and reads that one
image with both, interleaved, `--runs` times each. It reports the median seconds of each, and how
alike their texts are: the lines (confidence ≥ 0.6, as the screen tool keeps) joined in reading
order, compared with and without spaces (difflib's ratio), and the lines each found that the
other did not.
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import sys
import time
from typing import Any

from bench.machine import machine_details
from bench.screen_capture import fill_screen
from tests.support.xvfb import running_xvfb
from tools.screen import OCR_MIN_CONFIDENCE, find_screen, grab


def _ours() -> Any:
    from tools.ocr import Reader

    reader = Reader()

    def read(image: Any) -> list[str]:
        return [b.text for b in reader.read(image) if b.confidence >= OCR_MIN_CONFIDENCE]

    return read


def _theirs() -> Any:
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR()

    def read(image: Any) -> list[str]:
        found, _ = engine(image)
        return [str(t) for _b, t, s in found or () if float(s) >= OCR_MIN_CONFIDENCE]

    return read


def compare(width: int, height: int, runs: int) -> dict[str, Any]:
    with running_xvfb(width, height) as server:
        shown = fill_screen(server)
        screen = find_screen(environ={"DISPLAY": server.display}, platform="linux")
        image = grab(screen, "all").image
    readers = {"tools.ocr": _ours(), "rapidocr": _theirs()}
    times: dict[str, list[float]] = {name: [] for name in readers}
    texts: dict[str, list[str]] = {}
    for name, read in readers.items():  # one warm-up each
        texts[name] = read(image)
    for _ in range(runs):
        for name, read in readers.items():
            started = time.perf_counter()
            texts[name] = read(image)
            times[name].append(time.perf_counter() - started)
    ours, theirs = texts["tools.ocr"], texts["rapidocr"]

    def ratio(a: list[str], b: list[str], spaces: bool) -> float:
        join = (lambda t: "\n".join(t)) if spaces else (lambda t: "".join(t).replace(" ", ""))
        return round(difflib.SequenceMatcher(None, join(a), join(b), autojunk=False).ratio(), 4)

    only_ours = sorted(set(ours) - set(theirs))
    only_theirs = sorted(set(theirs) - set(ours))
    return {
        "size": f"{width}x{height}",
        "lines_shown": shown,
        "median_s": {name: round(statistics.median(t), 3) for name, t in times.items()},
        "all_s": {name: [round(x, 3) for x in t] for name, t in times.items()},
        "lines_read": {"tools.ocr": len(ours), "rapidocr": len(theirs)},
        "same_lines": len(set(ours) & set(theirs)),
        "text_similarity": ratio(ours, theirs, True),
        "text_similarity_without_spaces": ratio(ours, theirs, False),
        "only_tools_ocr": only_ours[:15],
        "only_rapidocr": only_theirs[:15],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        import cv2  # noqa: F401
    except ImportError:
        print("bench.ocr_compare: needs OpenCV on the path for rapidocr (see the docstring)",
              file=sys.stderr)  # fmt: skip
        return 2
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.size] or [(1280, 800), (1920, 1080)]
    report = {
        "machine": machine_details(),
        "sizes": [compare(w, h, args.runs) for w, h in sizes],
    }
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

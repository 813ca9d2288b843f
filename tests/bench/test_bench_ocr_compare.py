"""bench.ocr_compare needs OpenCV on the path for rapidocr's side, which the project never
installs: without it the benchmark says so and exits 2, and its comparison of two readers' lines
is checked on a small screen with a stand-in for rapidocr (the real one needs OpenCV)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from bench import ocr_compare
from tests.support.xvfb import XVFB


def test_without_opencv_it_says_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("cv2") is not None:
        pytest.skip("OpenCV is on the path here")
    assert ocr_compare.main(["--runs", "1"]) == 2
    assert "needs OpenCV on the path" in capsys.readouterr().err


def test_the_comparison_reports_both_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    if XVFB is None:
        pytest.skip("Xvfb is not installed")
    ours = ocr_compare._ours()

    def theirs() -> Any:
        return lambda image: [*ours(image)[1:], "a line only the other read"]

    monkeypatch.setattr(ocr_compare, "_theirs", theirs)
    report = ocr_compare.compare(640, 480, runs=1)
    assert report["size"] == "640x480"
    assert report["lines_read"]["tools.ocr"] >= 3
    assert report["lines_read"]["rapidocr"] == report["lines_read"]["tools.ocr"]
    assert report["only_rapidocr"] == ["a line only the other read"]
    assert 0.5 < report["text_similarity"] < 1.0
    assert set(report["median_s"]) == {"tools.ocr", "rapidocr"}

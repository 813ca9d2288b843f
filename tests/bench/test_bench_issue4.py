"""The screen-capture and command-overhead benchmarks run end to end and report every figure.

Each benchmark's `main` is called in-process with the smallest run it accepts (one timed run,
no warm-up, one small screen), and the report's structure is checked: the keys
docs/BENCHMARKS.md quotes, positive timings, the temporary files gone again. No timing is
compared with anything: on a shared machine that would only flake.

The screen benchmark starts its own Xvfb (tests/support/xvfb.py). Without the Xvfb binary its
test skips with the reason; on CI (CI set) it fails instead, since `scripts/setup.sh --test`
installs it there — as in tests/tools/test_screen.py.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from bench import command_overhead, screen_capture
from tests.support.xvfb import XVFB

SCREEN_SIZE = "640x480"
SCREEN_SUMMARY = {"median", "p95", "min", "max"}
COMMAND_CASES = {
    "bare_true", "tool_true", "bare_echo", "tool_echo", "check_only", "check_pipeline",
    "sandbox_true", "tool_true_unconfined",
}  # fmt: skip


def _require(binary: str | None, what: str) -> None:
    """Skip (with the reason) only when Xvfb itself is missing, and never on CI."""
    if binary is not None:
        return
    reason = f"{what} is not installed (scripts/setup.sh --test installs it with apt-get)"
    if what != "Xvfb" or os.environ.get("CI"):
        pytest.fail(f"{reason}; the screen benchmark needs it")
    pytest.skip(reason)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where this process's temporary files and folders go for the test (checked empty after)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _json_report(capsys: pytest.CaptureFixture[str], main: Any, argv: list[str]) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _children_named(*names: str) -> list[str]:
    """Child processes of this one (zombies included) whose command name is in `names`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its closing bracket.
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == os.getpid() and comm in names:
            found.append(f"{entry.name} {comm}")
    return found


def test_screen_capture_benchmark_reports_every_figure(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    _require(XVFB, "Xvfb")
    monkeypatch.setenv("DISPLAY", ":bench-sentinel")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)

    argv = ["--n", "1", "--warmup", "0", "--sizes", SCREEN_SIZE]
    report = _json_report(capsys, screen_capture.main, argv)

    assert set(report) == {"machine", "n", "warmup", "ocr_engine_load_s", "sizes"}
    assert set(report["machine"]) >= {"uname", "cpu", "nproc", "ram", "python", "date"}
    assert (report["n"], report["warmup"]) == (1, 0)
    load = report["ocr_engine_load_s"]
    assert set(load) == {"fresh_process", "this_process"}
    assert load["fresh_process"] > 0
    assert load["this_process"] is None or load["this_process"] >= 0

    (row,) = report["sizes"]
    assert row["size"] == SCREEN_SIZE
    for key in ("grab_ms", "capture_ms", "capture_ocr_ms"):
        assert set(row[key]) == SCREEN_SUMMARY, key
        assert row[key]["median"] > 0, key
        assert row[key]["min"] <= row[key]["median"] <= row[key]["max"], key
    assert row["text_lines_shown"] > 0
    # The screen really was filled with text and OCR ran on it (a count, not a timing).
    assert row["ocr_lines_found"] > 0
    assert set(row["png"]) == {"1", "6"}
    for figures in row["png"].values():
        assert set(figures["ms"]) == SCREEN_SUMMARY
        assert figures["bytes"] > 0

    # The text report names every figure from the same data.
    text = screen_capture.render(report)
    for label in ("OCR engine load", "grab", "capture+OCR", "png level 1", "png level 6"):
        assert label in text, label
    assert f"{SCREEN_SIZE:<11}text lines shown {row['text_lines_shown']}" in text

    # The display it started is no longer $DISPLAY, its Xvfb and windows are stopped, and its
    # screenshots and the Xvfb log are removed.
    assert os.environ["DISPLAY"] == ":bench-sentinel"
    assert "WAYLAND_DISPLAY" not in os.environ
    assert _children_named("Xvfb", "xmessage") == []
    assert list(private_tmp.iterdir()) == []


def test_command_overhead_benchmark_reports_every_figure(
    capsys: pytest.CaptureFixture[str], private_tmp: Path
) -> None:
    report = _json_report(capsys, command_overhead.main, ["--runs", "1", "--warmup", "0"])

    assert set(report) == {
        "machine", "runs", "warmup", "ms", "ratio", "sandbox_added_ms", "pipeline_checked",
    }  # fmt: skip
    assert set(report["machine"]) >= {"uname", "nproc", "python", "date"}
    assert (report["runs"], report["warmup"]) == (1, 0)
    assert set(report["ms"]) == COMMAND_CASES
    for name, row in report["ms"].items():
        assert set(row) == {"median", "p95", "min"}, name
        assert row["median"] > 0, name
        assert row["min"] <= row["median"] <= row["p95"], name
    assert set(report["ratio"]) == {"true", "echo", "sandbox"}
    assert set(report["sandbox_added_ms"]) == {"sandbox_vs_bare", "tool_vs_unconfined_tool"}
    for kind, row in report["ratio"].items():
        assert set(row) == {"median", "p95"}, kind
        assert row["median"] > 0, kind
        assert row["p95"] > 0, kind
    assert report["pipeline_checked"] == command_overhead.PIPELINE

    text = command_overhead.render(report)
    for name in COMMAND_CASES:
        assert name in text, name
    assert "ratio tool/bare (true)" in text
    assert "ratio tool/bare (echo)" in text

    # The tool's home was a temporary folder, removed again; no command is left running.
    assert list(private_tmp.iterdir()) == []
    assert _children_named("true", "echo") == []


def test_command_overhead_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert command_overhead.main(["--runs", "1", "--warmup", "0"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("command overhead — 1 runs after 0 warm-up")
    assert "check_pipeline = parse + rules for: " + command_overhead.PIPELINE in text

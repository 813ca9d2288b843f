"""The desktop app's benchmarks run end to end and report their figures (tiny sizes).

Each runs as its own process, as a person would run it (they set HOME to their scratch dir and
make their own QApplication). No timing is asserted: on a shared machine that would only flake.
What is asserted is the report's shape and that what was measured really happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _report(tmp_path: Path, module: str, *args: str) -> dict[str, Any]:
    env = dict(os.environ, HOME=str(tmp_path), QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-m", module, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_event_loop_lag_benchmark_measures_a_real_turn(tmp_path):
    report = _report(tmp_path, "bench.app_lag", "--runs", "1", "--files", "200", "--items", "5")
    assert report["statuses"] == ["done"]
    assert report["calls"] == ["ok"]  # the tool really ran during the measured turn
    for phase in ("turn", "idle"):
        assert report[phase]["ticks"] > 0
        assert report[phase]["max_gap_ms"] >= report[phase]["p99_gap_ms"] > 0


def test_the_chat_window_benchmark_reports_both_designs(tmp_path):
    report = _report(tmp_path, "bench.chat_window", "--runs", "1", "--messages", "60")
    assert report["messages"] == 60
    assert {"lazy", "eager"} <= set(report)


@pytest.mark.skipif(not Path("/usr/bin/Xvfb").exists(), reason="needs Xvfb (scripts/setup.sh)")
def test_the_app_startup_benchmark_reaches_ready_in_both_cases(tmp_path):
    report = _report(tmp_path, "bench.app_startup", "--runs", "1", "--warmup", "0")
    for case in ("bare_tray", "chamberlain"):
        assert report[case]["exit_codes"] == [0]
        assert report[case]["median_s"] > 0
    assert report["chamberlain_over_bare"] > 0


def test_the_stop_latency_benchmark_stops_each_kind_of_wait(tmp_path):
    report = _report(tmp_path, "bench.stop_latency", "--runs", "1")
    for name in ("stream", "prompt"):
        assert report[name]["statuses"] == ["cancelled"]
        assert report[name]["median_ms"] > 0
    if report["command"] is not None:
        assert report["command"]["statuses"] == ["cancelled"]

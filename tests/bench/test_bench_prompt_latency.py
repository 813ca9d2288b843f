"""The permission-prompt latency benchmark runs end to end and reports what it measured.

It starts its own Xvfb and window manager (tests/support/xvfb.py), so it runs as its own process
with HOME in the test's scratch dir. No timing is asserted: on a shared machine that would only
flake. What is asserted is that each run really went Enter → router → gate → dialog on screen,
with the bare dialog measured beside it, and that a direct action asked no model first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.prompt_latency import STAGES
from tests.support.xvfb import OPENBOX, XVFB

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    XVFB is None or OPENBOX is None, reason="needs Xvfb and openbox (scripts/setup.sh)"
)
def test_the_prompt_latency_benchmark_times_every_stage_of_a_real_question(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "bench.prompt_latency", "--runs", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["runs"] == 2
    assert report["dialog_ms"]["p50"] > 0
    assert report["bare_ms"]["p50"] > 0
    # The dialog's own part (question received → exposed) is within the whole Enter → exposed.
    assert 0 < report["dialog_part_ms"]["p50"] <= report["dialog_ms"]["p50"]
    # Every stage from Enter to the first paint was reached, in order.
    assert list(report["stages"]) == [words for _, _, words in STAGES]
    assert report["model_requests_before_dialog"] == [0]  # a direct action asks no model
    assert report["prepared"] is True
    assert set(report["first_question"]) == {
        "enter_to_exposed_ms",
        "construction_ms",
        "show_to_exposed_ms",
    }


def test_the_question_path_benchmark_times_real_questions_hot_and_after_idle(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), CHAMBERLAIN_HOME=str(tmp_path / "ch"))
    done = subprocess.run(
        [sys.executable, "-m", "bench.question_path", "--turns", "2", "--idle", "0.01", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr  # it fails when a turn asks no question
    report = json.loads(done.stdout)
    assert report["turns"] == 2
    assert report["hot_p50_ms"] > 0
    assert report["after_idle_p50_ms"] > 0

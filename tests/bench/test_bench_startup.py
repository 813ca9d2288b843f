"""The start-up benchmark runs end to end and reports every figure docs/BENCHMARKS.md quotes.

One timed round, no warm-up; the report's structure is checked, and that every case really ran
(a direct action exits 0; a chat turn with no model exits 1, saying how to connect one). No
timing is compared with anything: on a shared machine that would only flake.
"""

from __future__ import annotations

import json

from bench import startup

CASES = {"python_pass", "import_cli", "ask_direct", "ask_chat"}


def test_the_startup_benchmark_reports_time_and_memory_for_every_case(capsys):
    assert startup.main(["--runs", "1", "--warmup", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["ms"]) == CASES
    assert set(report["peak_mib"]) == CASES
    assert report["ratio_to_python_pass"]["python_pass"] == 1.0
    assert all(row["median"] > 0 for row in report["ms"].values())
    assert all(value > 0 for value in report["peak_mib"].values())
    assert report["exit_codes"] == {
        "python_pass": [0],
        "import_cli": [0],
        "ask_direct": [0],
        "ask_chat": [1],
    }

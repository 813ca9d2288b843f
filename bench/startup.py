"""What one `chamberlain ask` costs to start, against `python -c pass` in the same run.

    python -m bench.startup [--runs 15] [--warmup 2] [--json]

Each round runs, one after the other (so a busy moment hits all alike), as separate processes
in a scratch home (HOME and CHAMBERLAIN_HOME in a temporary folder, no keyring, memory
unencrypted so no passphrase is derived):

- ``python_pass``: ``python -c pass`` — the floor;
- ``import_cli``: ``python -c "import app.cli"`` — the CLI module alone;
- ``ask_direct``: ``chamberlain ask "how much memory is free" --llm none --approve-all once`` —
  a direct action with no model (the turn itself takes milliseconds);
- ``ask_chat``: ``chamberlain ask "tell me a joke" --llm none`` — a chat turn with no model.

Wall time is measured around each process; peak memory is the process's own maximum resident
set size from ``wait4`` (not its children's). Issue 8's target: ``ask`` on a direct action
≤ 20× ``python -c pass`` and ≤ 70 MiB peak. A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import machine_details

REPO = Path(__file__).resolve().parents[1]


def _cases() -> dict[str, list[str]]:
    py = sys.executable
    cli = [py, "-m", "app.cli"]
    return {
        "python_pass": [py, "-c", "pass"],
        "import_cli": [py, "-c", "import app.cli"],
        "ask_direct": [
            *cli, "ask", "how much memory is free", "--llm", "none", "--approve-all", "once",
        ],
        "ask_chat": [*cli, "ask", "tell me a joke", "--llm", "none"],
    }  # fmt: skip


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB, exit code) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is KiB on Linux.
    return elapsed, usage.ru_maxrss / 1024, proc.returncode


def measure(runs: int, warmup: int) -> dict[str, Any]:
    cases = _cases()
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp:
        user = Path(tmp) / "user"
        user.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(user),
            "CHAMBERLAIN_HOME": str(user / ".chamberlain"),
            "CHAMBERLAIN_MEMORY__ENCRYPTION": "off",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
            "PYTHONPATH": str(REPO),
        }
        seconds: dict[str, list[float]] = {name: [] for name in cases}
        peak: dict[str, list[float]] = {name: [] for name in cases}
        codes: dict[str, set[int]] = {name: set() for name in cases}
        for index in range(warmup + runs):
            for name, argv in cases.items():
                elapsed, rss, code = _run(argv, env, user)
                codes[name].add(code)
                if index >= warmup:
                    seconds[name].append(elapsed)
                    peak[name].append(rss)
    ms = {
        name: {
            "median": round(statistics.median(values) * 1000, 1),
            "min": round(min(values) * 1000, 1),
            "max": round(max(values) * 1000, 1),
        }
        for name, values in seconds.items()
    }
    mib = {name: round(statistics.median(values), 1) for name, values in peak.items()}
    floor = ms["python_pass"]["median"]
    ratio = {name: round(row["median"] / floor, 1) for name, row in ms.items()}
    return {
        "machine": machine_details(),
        "runs": runs,
        "warmup": warmup,
        "ms": ms,
        "peak_mib": mib,
        "ratio_to_python_pass": ratio,
        "exit_codes": {name: sorted(c) for name, c in codes.items()},
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"start-up — {report['runs']} runs after {report['warmup']} warm-up, "
        f"{report['machine']['cpu']}, Python {report['machine']['python']}",
        f"{'case':<14}{'median ms':>11}{'min ms':>9}{'max ms':>9}{'× pass':>9}{'peak MiB':>10}",
    ]
    for name, row in report["ms"].items():
        lines.append(
            f"{name:<14}{row['median']:>11.1f}{row['min']:>9.1f}{row['max']:>9.1f}"
            f"{report['ratio_to_python_pass'][name]:>9.1f}{report['peak_mib'][name]:>10.1f}"
        )
    lines.append(f"exit codes: {report['exit_codes']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    report = measure(options.runs, options.warmup)
    print(json.dumps(report, indent=2) if options.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

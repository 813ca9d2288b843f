"""How fast the desktop app puts its tray icon up, against a bare PySide6 tray app, same run.

    python -m bench.app_startup [--runs 11] [--warmup 2] [--json]

Runs under a real X server (Xvfb) with a real tray host (trayer), both started here and
stopped by PID afterwards. Each round starts, one after the other:

- ``bare_tray``: a bare PySide6 program — QApplication, one QSystemTrayIcon from the same SVG,
  shown, one turn of the event loop — the floor for any Qt tray app;
- ``chamberlain``: ``chamberlain --ready-and-quit`` in a scratch home: the app's real start-up
  (the qasync loop, the single-instance socket, the tray) up to the moment the tray is shown and
  the loop has turned once. The session, memory and the model load after that point, off the UI
  thread, and are not part of the figure.

Time is from just before the process is spawned to the wall-clock time it prints when ready;
peak memory is the process's own maximum resident set size from ``wait4``. Issue 9's goal:
≤ 0.5 s and ≤ 4× bare (measured for the issue: bare 0.12 s, 48 MiB). A benchmark reports
figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import machine_details

REPO = Path(__file__).resolve().parents[1]

BARE = """
import sys, time
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QSystemTrayIcon
app = QApplication(sys.argv[:1])
app.setQuitOnLastWindowClosed(False)
tray = QSystemTrayIcon(QIcon(sys.argv[1]))
tray.show()
app.processEvents()
print(f"ready {time.time():.6f}", flush=True)
"""


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(seconds to ready, peak RSS in MiB, exit code) of one process."""
    started = time.time()
    proc = subprocess.Popen(
        argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    ready = [line for line in out.splitlines() if line.startswith("ready ")]
    seconds = float(ready[0].split()[1]) - started if ready else float("nan")
    return seconds, usage.ru_maxrss / 1024, code


def measure(runs: int, warmup: int) -> dict[str, Any]:
    from tests.support.xvfb import running_xvfb

    trayer = shutil.which("trayer")
    svg = str(REPO / "resources" / "icons" / "idle.svg")
    with (
        tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp,
        running_xvfb(1280, 800) as server,
    ):
        server.start_window_manager()
        if trayer is not None:
            server.spawn(
                [trayer, "--edge", "top", "--align", "right", "--widthtype", "pixel",
                 "--width", "160", "--height", "32", "--transparent", "false"]
            )  # fmt: skip
            time.sleep(1.0)
        user = Path(tmp) / "user"
        user.mkdir()
        env = dict(server.env)
        env.update(
            HOME=str(user),
            CHAMBERLAIN_HOME=str(user / ".chamberlain"),
            CHAMBERLAIN_MEMORY__ENCRYPTION="off",
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
            PYTHONPATH=str(REPO),
            XDG_RUNTIME_DIR=str(Path(tmp) / "runtime"),
        )
        (Path(tmp) / "runtime").mkdir(mode=0o700)
        cases = {
            "bare_tray": [sys.executable, "-c", BARE, svg],
            "chamberlain": [sys.executable, "-m", "app.launcher", "--ready-and-quit"],
        }
        seconds: dict[str, list[float]] = {name: [] for name in cases}
        peak: dict[str, list[float]] = {name: [] for name in cases}
        codes: dict[str, set[int]] = {name: set() for name in cases}
        for index in range(warmup + runs):
            for name, argv in cases.items():
                took, rss, code = _run(argv, env)
                codes[name].add(code)
                if index >= warmup:
                    seconds[name].append(took)
                    peak[name].append(rss)
    result: dict[str, Any] = {"machine": machine_details(), "runs": runs, "tray_host": trayer}
    for name in cases:
        result[name] = {
            "median_s": round(statistics.median(seconds[name]), 4),
            "min_s": round(min(seconds[name]), 4),
            "max_s": round(max(seconds[name]), 4),
            "peak_rss_mib": round(statistics.median(peak[name]), 1),
            "exit_codes": sorted(codes[name]),
        }
    ratios = [c / b for c, b in zip(seconds["chamberlain"], seconds["bare_tray"], strict=True)]
    result["chamberlain_over_bare"] = round(statistics.median(ratios), 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.runs, args.warmup)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    machine = result["machine"]
    print(
        f"machine: {machine['cpu']}, {machine['nproc']} CPUs, {machine['ram']}; load "
        f"{machine['load_average']}; {machine['date']}; tray host: {result['tray_host']}"
    )
    print(f"{'case':<14}{'median s':>10}{'min s':>8}{'max s':>8}{'peak MiB':>10}  exit")
    for name in ("bare_tray", "chamberlain"):
        row = result[name]
        print(
            f"{name:<14}{row['median_s']:>10.3f}{row['min_s']:>8.3f}{row['max_s']:>8.3f}"
            f"{row['peak_rss_mib']:>10.1f}  {row['exit_codes']}"
        )
    print(f"chamberlain ÷ bare (median of per-round ratios): {result['chamberlain_over_bare']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the command limits (tools/limits.py) cost per command.

    python -m bench.command_limits [--runs 200] [--warmup 20] [--json]

In one run, interleaved so that a busy moment on the machine hits every case alike, ``true``
started with ``subprocess.run``:

- ``bare``: the program alone;
- ``walls``: inside the sandbox as it was before the limits (bubblewrap's own /dev, no rlimits);
- ``walls_limits``: inside the sandbox a command gets now: /dev read-only with a capped /dev/shm
  of its own, and the rlimits set by ``prlimit`` inside (what ``bwrap_args`` builds from a plan
  with limits, on this machine's way of holding them);
- ``run_argv`` / ``run_argv_limits``: the same sandboxed ``true`` through ``run_argv`` (the
  selector loop, output capture) without and with ``limits=``: with them, each stage is also
  reaped with wait4 and its end explained (and, where a service manager holds the limits,
  started in a cgroup scope of its own: ``cgroup`` in the report says whether it was here).

``limits_added_ms`` is what the limits add to one command: walls_limits − walls, and
run_argv_limits − run_argv (medians). A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.machine import machine_details
from tools.limits import CommandLimits, limit_ways
from tools.private import private_places
from tools.sandbox import SandboxPlan, bwrap_args, sandbox_status
from tools.system import run_argv


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered) * 1000, 4),
        "p95": round(p95 * 1000, 4),
        "min": round(ordered[0] * 1000, 4),
    }


def _time(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _without_limits(args: list[str]) -> list[str]:
    """The walls as they were before the limits: bubblewrap's own /dev, nothing else of them."""
    start = args.index("--dev")
    end = args.index("/dev", args.index("--remount-ro", start))
    return [*args[:start], "--dev", "/dev", *args[end + 1 :]]


def measure(runs: int, warmup: int) -> dict[str, Any]:
    status = sandbox_status()
    if not status.available or status.program is None:
        raise SystemExit(f"no sandbox to measure: {status.why}")
    program = status.program
    limits = CommandLimits()
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp:
        home = Path(tmp)
        base = SandboxPlan(cwd=home, home=home, read=(home,), private=private_places(home))
        limited = SandboxPlan(
            cwd=home, home=home, read=(home,), private=private_places(home), limits=limits
        )
        walls = [program, *_without_limits(bwrap_args(base, ["/bin/true"], status=status))]
        walls_limits = [program, *bwrap_args(limited, ["/bin/true"], status=status)]
        env = {"PATH": "/usr/bin:/bin"}

        def through_run_argv(argv: list[str], with_limits: CommandLimits | None) -> None:
            done = run_argv(
                [argv], cwd=home, env=env, timeout_s=30, output_cap=65536, limits=with_limits
            )
            assert done.exit_code == 0, done.stderr

        cases: dict[str, Callable[[], object]] = {
            "bare": lambda: subprocess.run(["true"], check=True),
            "walls": lambda: subprocess.run(walls, check=True),
            "walls_limits": lambda: subprocess.run(walls_limits, check=True),
            "run_argv": lambda: through_run_argv(walls, None),
            "run_argv_limits": lambda: through_run_argv(walls_limits, limits),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for index in range(warmup + runs):
            for name, fn in cases.items():
                elapsed = _time(fn)
                if index >= warmup:
                    samples[name].append(elapsed)
    ms = {name: _summary(values) for name, values in samples.items()}
    ways = limit_ways()
    return {
        "machine": machine_details(),
        "runs": runs,
        "warmup": warmup,
        "ms": ms,
        "limits_added_ms": {
            "walls": round(ms["walls_limits"]["median"] - ms["walls"]["median"], 3),
            "run_argv": round(ms["run_argv_limits"]["median"] - ms["run_argv"]["median"], 3),
            "over_bare": round(ms["run_argv_limits"]["median"] - ms["bare"]["median"], 3),
        },
        "cgroup": ways.cgroup,
        "how": ways.why,
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"command limits — {report['runs']} runs after {report['warmup']} warm-up, "
        f"{report['machine']['uname']}, Python {report['machine']['python']}",
        f"limits held by: {report['how']}",
        f"{'case':<18}{'median ms':>12}{'p95 ms':>12}{'min ms':>12}",
    ]
    for name, row in report["ms"].items():
        lines.append(f"{name:<18}{row['median']:>12.3f}{row['p95']:>12.3f}{row['min']:>12.3f}")
    added = report["limits_added_ms"]
    lines.append(
        f"added by the limits (median): {added['walls']:.2f} ms to the sandbox, "
        f"{added['run_argv']:.2f} ms through run_argv; a limited sandboxed command "
        f"{added['over_bare']:.2f} ms over a bare subprocess.run"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    report = measure(options.runs, options.warmup)
    print(json.dumps(report, indent=2) if options.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

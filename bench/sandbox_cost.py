"""What the sandbox costs per command, with and without a network of its own.

    python -m bench.sandbox_cost [--runs 100] [--warmup 10] [--json]

In one run, interleaved so that a busy moment on the machine hits every case alike, `/bin/true`:

- ``bare``: ``subprocess.run(["/bin/true"])``, the least a Python program can do to run it;
- ``run_argv``: the pipeline runner commands use (own session, pidfd/selector loop, output
  capture), with no sandbox;
- ``sandbox``: ``run_argv`` of ``true`` inside the walls a command without the network gets
  (bubblewrap: read-only root, hidden homes, private /tmp, own PID and network namespaces);
- ``sandbox_slirp4netns`` / ``sandbox_pasta``: the same walls for a stage that needs the
  network: bubblewrap's own network namespace with the helper attached before ``true`` runs
  (tools/netns.py), and the helper gone after; only the helpers installed here are measured.

Reported: each case's median, p95 and min in ms; ``added_ms`` is each sandboxed case's median
minus ``bare``'s (the figure issue 20 sets at ≤ 15 ms); ratios are case / bare. A benchmark
reports figures; it asserts nothing.
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
from tools.netns import NetworkHelper, StageNetwork, find_helper
from tools.private import private_places
from tools.sandbox import SandboxPlan, sandbox_status, wrap_stage
from tools.system import run_argv

ENV = {"PATH": "/usr/bin:/bin"}


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered) * 1000, 3),
        "p95": round(p95 * 1000, 3),
        "min": round(ordered[0] * 1000, 3),
    }


def measure(runs: int, warmup: int) -> dict[str, Any]:
    status = sandbox_status()
    if not status.available or status.program is None:
        raise SystemExit(f"no sandbox to measure: {status.why}")
    helpers: dict[str, NetworkHelper] = {}
    skipped: dict[str, str] = {}
    for kind in ("slirp4netns", "pasta"):
        helper = find_helper(prefer=(kind,))
        if helper.available and helper.kind == kind:
            helpers[kind] = helper
        else:
            skipped[kind] = helper.why
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp:
        home = Path(tmp)
        plan = SandboxPlan(cwd=home, home=home, read=(home,), private=private_places(home))
        networked = SandboxPlan(
            cwd=home, home=home, read=(home,), private=private_places(home), network=True
        )

        def runner(argv: list[str], exe: str, network: StageNetwork | None = None) -> None:
            outcome = run_argv(
                [argv],
                cwd=home,
                env=ENV,
                timeout_s=30,
                output_cap=4096,
                executables=[exe],
                networks=[network] if network is not None else [],
            )
            if outcome.exit_code != 0:
                raise SystemExit(f"{argv[0]} failed: {outcome.stderr.strip()[-300:]}")

        def sandboxed() -> None:
            argv, exe = wrap_stage(plan, ["true"], "/bin/true")
            runner(argv, exe)

        def with_network(helper: NetworkHelper) -> Callable[[], None]:
            def run() -> None:
                with StageNetwork(helper) as network:
                    argv, exe = wrap_stage(networked, ["true"], "/bin/true", network)
                    runner(argv, exe, network)

            return run

        cases: dict[str, Callable[[], object]] = {
            "bare": lambda: subprocess.run(["/bin/true"], check=True),
            "run_argv": lambda: runner(["/bin/true"], "/bin/true"),
            "sandbox": sandboxed,
        }
        for kind, helper in helpers.items():
            cases[f"sandbox_{kind}"] = with_network(helper)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for index in range(warmup + runs):
            for name, fn in cases.items():
                started = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - started
                if index >= warmup:
                    samples[name].append(elapsed)
    ms = {name: _summary(values) for name, values in samples.items()}
    bare = ms["bare"]["median"]
    added = {name: round(ms[name]["median"] - bare, 3) for name in ms if name != "bare"}
    ratio = {name: round(ms[name]["median"] / bare, 2) for name in ms if name != "bare"}
    return {
        "machine": machine_details(),
        "runs": runs,
        "warmup": warmup,
        "ms": ms,
        "added_ms": added,
        "ratio_median": ratio,
        "not_measured": skipped,
    }


def render(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        f"sandbox cost per command — {report['runs']} rounds after {report['warmup']} warm-up, "
        f"{machine.get('uname', '?')}, Python {machine.get('python', '?')}",
        f"{'case':<22} {'median ms':>10} {'p95 ms':>10} {'min ms':>8} {'+ms':>8} {'×bare':>7}",
    ]
    for name, figures in report["ms"].items():
        added = report["added_ms"].get(name)
        ratio = report["ratio_median"].get(name)
        lines.append(
            f"{name:<22} {figures['median']:>10.3f} {figures['p95']:>10.3f} {figures['min']:>8.3f} "
            f"{'' if added is None else f'{added:+.3f}':>8} {'' if ratio is None else ratio:>7}"
        )
    for kind, why in report["not_measured"].items():
        lines.append(f"{kind}: not measured ({why})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.runs, args.warmup)
    print(json.dumps(report, indent=2) if args.json else render(report))


if __name__ == "__main__":
    main()

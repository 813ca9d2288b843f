"""What system_execute costs on top of starting the program itself.

    python -m bench.command_overhead [--runs 200] [--warmup 20] [--json]

In one run, interleaved so that a busy moment on the machine hits both sides alike:

- ``bare_true`` / ``bare_echo``: ``subprocess.run(["true"])`` and ``subprocess.run(["echo",
  "hi"], capture_output=True)``, the least a Python program can do to run them;
- ``tool_true`` / ``tool_echo``: the same commands through the tool as the runner calls it,
  ``targets()`` then ``run()``: parse with tree-sitter-bash, the rules, PATH look-up, the
  scrubbed environment, a process in its own session, the pidfd/selector loop, output capture;
- ``check_only``: parse + rules alone (``assess_command``) for ``echo hi`` and for a three-stage
  pipeline;
- ``sandbox_true``: ``true`` inside the bubblewrap sandbox a command gets (the same walls:
  read-only root, hidden homes, private /tmp, own PID and network namespaces), started with
  ``subprocess.run``: the sandbox's own cost, to set against ``bare_true``;
- ``tool_true_unconfined``: the tool with the sandbox switched off (the settings' opt-in), to set
  against ``tool_true``.

Ratios are tool / bare (median and p95); ``sandbox_added_ms`` is what the sandbox adds to one
command (sandbox − bare, and tool − unconfined tool). A benchmark reports figures; it asserts
nothing.
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
from tools.commands.assess import assess_command
from tools.manual import Tool
from tools.private import private_places
from tools.registry import ToolConfig
from tools.sandbox import SandboxPlan, SandboxStatus, bwrap_args, sandbox_status
from tools.system import make_system_tools

PIPELINE = "ps aux | grep -i python | sort -k 2"


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


def measure(runs: int, warmup: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp:
        home = Path(tmp)
        tool = next(
            t for t in make_system_tools(ToolConfig(), home=home) if t.name == "system_execute"
        )

        unconfined = next(
            t
            for t in make_system_tools(
                ToolConfig(unsandboxed_commands=True),
                home=home,
                sandbox=SandboxStatus(False, None, "switched off for the benchmark"),
            )
            if t.name == "system_execute"
        )
        status = sandbox_status()
        if not status.available or status.program is None:
            raise SystemExit(f"no sandbox to measure: {status.why}")
        plan = SandboxPlan(cwd=home, home=home, read=(home,), private=private_places(home))
        sandboxed = [status.program, *bwrap_args(plan, ["/bin/true"])]

        def through_tool(command: str, which: Tool = tool) -> None:
            args = {"command": command}
            which.targets(args)
            result = which.run(args)
            assert result.data["exit_code"] == 0

        cases: dict[str, Callable[[], object]] = {
            "bare_true": lambda: subprocess.run(["true"], check=True),
            "tool_true": lambda: through_tool("true"),
            "bare_echo": lambda: subprocess.run(["echo", "hi"], capture_output=True, check=True),
            "tool_echo": lambda: through_tool("echo hi"),
            "check_only": lambda: assess_command("echo hi", home=home),
            "check_pipeline": lambda: assess_command(PIPELINE, home=home),
            "sandbox_true": lambda: subprocess.run(sandboxed, check=True),
            "tool_true_unconfined": lambda: through_tool("true", unconfined),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for index in range(warmup + runs):
            for name, fn in cases.items():
                elapsed = _time(fn)
                if index >= warmup:
                    samples[name].append(elapsed)
    ms = {name: _summary(values) for name, values in samples.items()}
    ratio = {
        kind: {
            "median": round(ms[f"tool_{kind}"]["median"] / ms[f"bare_{kind}"]["median"], 3),
            "p95": round(ms[f"tool_{kind}"]["p95"] / ms[f"bare_{kind}"]["p95"], 3),
        }
        for kind in ("true", "echo")
    }
    ratio["sandbox"] = {
        "median": round(ms["sandbox_true"]["median"] / ms["bare_true"]["median"], 3),
        "p95": round(ms["sandbox_true"]["p95"] / ms["bare_true"]["p95"], 3),
    }
    added = {
        "sandbox_vs_bare": round(ms["sandbox_true"]["median"] - ms["bare_true"]["median"], 3),
        "tool_vs_unconfined_tool": round(
            ms["tool_true"]["median"] - ms["tool_true_unconfined"]["median"], 3
        ),
    }
    return {
        "machine": machine_details(),
        "runs": runs,
        "warmup": warmup,
        "ms": ms,
        "ratio": ratio,
        "sandbox_added_ms": added,
        "pipeline_checked": PIPELINE,
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"command overhead — {report['runs']} runs after {report['warmup']} warm-up, "
        f"{report['machine']['uname']}, Python {report['machine']['python']}",
        f"{'case':<16}{'median ms':>12}{'p95 ms':>12}{'min ms':>12}",
    ]
    for name, row in report["ms"].items():
        lines.append(f"{name:<16}{row['median']:>12.3f}{row['p95']:>12.3f}{row['min']:>12.3f}")
    for kind, row in report["ratio"].items():
        lines.append(
            f"ratio tool/bare ({kind}): median {row['median']:.2f}x, p95 {row['p95']:.2f}x"
        )
    added = report["sandbox_added_ms"]
    lines.append(
        f"added by the sandbox (median): {added['sandbox_vs_bare']:.2f} ms over a bare "
        f"subprocess.run, {added['tool_vs_unconfined_tool']:.2f} ms over the unconfined tool"
    )
    lines.append(f"check_pipeline = parse + rules for: {report['pipeline_checked']}")
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

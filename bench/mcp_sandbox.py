"""What an MCP server's sandbox costs when it connects: sandboxed against unsandboxed, same run.

    python -m bench.mcp_sandbox [--rounds 15] [--json]

Real parts only, two servers over stdio: the tests' notes server (`tests/support/mcp_notes_server.py
FOLDER`, run with this Python) and the reference filesystem server (node; `scripts/setup.sh
--test` installs it — skipped, and said so, when it is not there). Each round connects each
server three ways, in turn, with `McpHub(...).ensure()` from its start until the server's tools
are registered (the hub's loop thread, finding the program and its roots, the program's start,
the handshake, the listing), then `McpHub.close()`:

- ``sandboxed``: the default — bubblewrap built from the server's settings (tools/mcp/sandbox.py);
- ``unsandboxed``: `"sandbox": false`, the person's warned choice — the program contained in its
  lifetime only (bubblewrap's PID namespace here, tools/mcp/lifetime.py);
- ``bare``: the program started directly, no wrapper at all (the floor).

Medians and p95 per way, and the sandboxed median over each of the other two, measured in the
same run (rounds interleaved, so a noisy neighbour hits all three alike). Everything runs in a
scratch home (HOME and CHAMBERLAIN_HOME set before anything of ours is imported); every server is
ended by its hub's close. A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import machine_details

REPO = Path(__file__).resolve().parents[1]
NOTES_SERVER = REPO / "tests" / "support" / "mcp_notes_server.py"
WAYS = ("sandboxed", "unsandboxed", "bare")


def _servers(folder: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    from tests.support import mcp_fs

    found: dict[str, dict[str, Any]] = {
        "notes": {"command": sys.executable, "args": [str(NOTES_SERVER), str(folder)]}
    }
    missing = mcp_fs.node_missing() or mcp_fs.install_problem()
    if missing is not None:
        return found, [f"filesystem server: {missing}"]
    found["files"] = mcp_fs.server_settings(folder, write=False)
    return found, []


def _connect_once(name: str, entry: dict[str, Any], way: str, chamberlain: Path) -> float:
    from tools.mcp import lifetime
    from tools.mcp import sandbox as server_sandbox
    from tools.mcp.config import McpServerConfig
    from tools.mcp.hub import McpHub
    from tools.mcp.sandbox import ServerPlaces
    from tools.registry import ToolRegistry

    settings = dict(entry, connect_timeout_s=60)
    original = server_sandbox.containment
    if way != "sandboxed":
        settings["sandbox"] = False
    if way == "bare":
        bare = lifetime.Containment("none", why_not_better="the benchmark's floor")
        server_sandbox.containment = lambda: bare  # type: ignore[assignment]
    try:
        config = McpServerConfig.model_validate(settings)
        hub = McpHub({name: config}, ToolRegistry(), places=ServerPlaces.for_install(chamberlain))
        started = time.perf_counter()
        hub.ensure()
        took = time.perf_counter() - started
        status = hub.server_status(name)
        hub.close()
    finally:
        server_sandbox.containment = original  # type: ignore[assignment]
    if status.state != "connected":
        raise RuntimeError(f"{name} ({way}) did not connect: {status.last_error}")
    return took


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": statistics.median(ordered) * 1000, "p95_ms": p95 * 1000}


def measure(rounds: int, scratch: Path) -> dict[str, Any]:
    from tools.mcp import lifetime

    folder = scratch / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Budget: 1200 for travel.\n")
    chamberlain = scratch / "home"
    chamberlain.mkdir()
    servers, skipped = _servers(folder)
    # Both wrappers probe bubblewrap once per process: not part of any connection's time.
    lifetime.containment()
    samples: dict[str, dict[str, list[float]]] = {n: {w: [] for w in WAYS} for n in servers}
    for name, entry in servers.items():
        for way in WAYS:  # a first, untimed connection each way: caches, page cache
            _connect_once(name, entry, way, chamberlain)
    for _ in range(rounds):
        for name, entry in servers.items():
            for way in WAYS:
                samples[name][way].append(_connect_once(name, entry, way, chamberlain))
    results: dict[str, Any] = {}
    for name, ways in samples.items():
        summary = {way: _summary(values) for way, values in ways.items()}
        sandboxed = summary["sandboxed"]["median_ms"]
        summary["ratio_to_unsandboxed"] = sandboxed / summary["unsandboxed"]["median_ms"]
        summary["ratio_to_bare"] = sandboxed / summary["bare"]["median_ms"]
        results[name] = summary
    return {"servers": results, "skipped": skipped, "rounds": rounds}


def print_report(report: dict[str, Any]) -> None:
    machine = report["machine"]
    print(
        f"{machine['date']} · {machine['cpu']} · {machine['nproc']} CPUs · {machine['ram']} · "
        f"load {machine['load_average']} · Python {machine['python']} · node {report['node']}"
    )
    print(f"MCP server connect (McpHub.ensure), {report['rounds']} interleaved rounds:")
    for name, summary in report["servers"].items():
        parts = [
            f"{way} {summary[way]['median_ms']:.0f} ms (p95 {summary[way]['p95_ms']:.0f})"
            for way in WAYS
        ]
        print(f"  {name}: " + "; ".join(parts))
        print(
            f"    sandboxed / unsandboxed = {summary['ratio_to_unsandboxed']:.2f}x; "
            f"sandboxed / bare = {summary['ratio_to_bare']:.2f}x"
        )
    for line in report["skipped"]:
        print(f"  skipped: {line}")


def _node_version() -> str | None:
    import subprocess

    try:
        done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per server and way")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    # The warning an unsandboxed server logs at each start is for a person, not for this report.
    logging.getLogger("chamberlain.tools.mcp.sandbox").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as name:
        scratch = Path(name)
        # Before anything of ours reads them: the home, and no system keyring.
        os.environ["HOME"] = str(scratch)
        os.environ["CHAMBERLAIN_HOME"] = str(scratch / "home")
        os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
        report: dict[str, Any] = {"machine": machine_details(), "node": _node_version()}
        report.update(measure(options.rounds, scratch))
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

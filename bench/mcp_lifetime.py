"""Whether MCP servers outlive a killed Chamberlain: SIGKILL a real Chamberlain process holding
hostile servers, many times, and count the server processes left running.

    python -m bench.mcp_lifetime [--kills 25] [--baseline 5] [--json]

Real parts only (tests/support/mcp_lifetime.py, which the tests use too). Each kill starts, in a
fresh scratch home, a Chamberlain process whose settings.json holds the tests' hostile MCP server
(tests/support/mcp_hostile_server.py) twice: one that daemonises at start (fork, setsid, fork,
streams to /dev/null, SIGTERM and SIGHUP ignored) and one that ignores the end of its input and
SIGTERM. It waits until every server process (the daemon included) runs, SIGKILLs the
Chamberlain process, and counts the processes of those servers still alive (not zombies) once
they are all gone or 10 s have passed; then it ends any left, by PID. The holders:

- ``cli``: `chamberlain mcp list`, killed while it waits for a third server that never answers
  (also daemonising and ignoring its input's end);
- ``session``: a `Session` with its servers connected, as the desktop app holds them
  (tests/support/mcp_hub_process.py), servers contained as this machine allows (bubblewrap's
  PID namespace here);
- ``session-supervisor``: the same, forced onto the fallback supervisor (tools/mcp/supervise.py);
- ``session-bare`` (the baseline, `--baseline` kills): the same with the servers started
  directly, as before this change (and as the installed bundle must where bubblewrap cannot
  help), to show the servers are hostile enough to be left behind.

Issue 19's goal: 0 server processes left after 25 kills. A benchmark reports figures; it
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.machine import machine_details

REPO = Path(__file__).resolve().parents[1]
HOLDERS = ("cli", "session", "session-supervisor")


def measure(kills: int, baseline: int) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from tests.support.mcp_lifetime import Holder, kill_round
    from tools.mcp.lifetime import containment

    report: dict[str, Any] = {
        "machine": machine_details(),
        "containment": containment().describe(),
        "kills": kills,
    }
    plan: list[tuple[Holder, int]] = [(h, kills) for h in HOLDERS]  # type: ignore[misc]
    if baseline:
        plan.append(("session-bare", baseline))
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as scratch:
        for holder, count in plan:
            left: list[int] = []
            started: list[int] = []
            ended_ms: list[float] = []
            for kill in range(count):
                done = kill_round(
                    holder,
                    Path(scratch) / f"{holder}-{kill}",
                    settle_s=3.0 if holder == "session-bare" else 10.0,
                )
                started.append(done.started)
                left.append(len(done.left))
                if done.ended_after_s is not None:
                    ended_ms.append(done.ended_after_s * 1000)
            report[holder] = {
                "kills": count,
                "processes_started": sum(started),
                "left_running": sum(left),
                "kills_leaving_some": sum(1 for n in left if n),
                "all_gone_median_ms": statistics.median(ended_ms) if ended_ms else None,
                "all_gone_max_ms": max(ended_ms) if ended_ms else None,
            }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--baseline", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    report = measure(options.kills, options.baseline)
    if options.json:
        print(json.dumps(report, indent=2))
        return 0
    m = report["machine"]
    print(f"machine: {m['cpu']}, {m['nproc']} CPUs; load {m['load_average']}; {m['date']}")
    print(f"servers start {report['containment']}")
    print(f"{'holder':<20}{'kills':>6}{'started':>9}{'left':>6}  all gone after (median/max ms)")
    for holder in (*HOLDERS, "session-bare"):
        row = report.get(holder)
        if row is None:
            continue
        gone = (
            f"{row['all_gone_median_ms']:.0f} / {row['all_gone_max_ms']:.0f}"
            if row["all_gone_median_ms"] is not None
            else "never (within the wait)"
        )
        print(
            f"{holder:<20}{row['kills']:>6}{row['processes_started']:>9}"
            f"{row['left_running']:>6}  {gone}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

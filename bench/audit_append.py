"""How much one audit append costs, with and without fsync.

    python -m bench.audit_append [--n 5000] [--dir DIR]

Appends N representative events (a tool call's end: names, a status, a digest, a duration) to a
fresh log in a temporary directory and prints p50/p99 microseconds per append. Everything is
written inside that temporary directory, which is removed afterwards; ``--dir`` only chooses
where it is created (use it to measure the disk your Chamberlain home lives on, since /tmp may
be a RAM disk where fsync is free). A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from broker.audit.events import AuditEvent
from broker.audit.redaction import digest
from broker.audit.verify import verify
from broker.audit.writer import AuditLog


def measure(directory: Path, n: int, *, durable: bool) -> list[float]:
    """Microseconds per append for n appends to a new log in ``directory``."""
    path = directory / ("durable.jsonl" if durable else "fast.jsonl")
    output = digest("x" * 4096)
    times: list[float] = []
    with AuditLog(path, durable=durable) as audit:
        audit.append(AuditEvent.POLICY_DECISION)  # opening the files is not what we measure
        for i in range(n):
            start = time.perf_counter_ns()
            audit.append(
                AuditEvent.TOOL_CALL_END,
                f"turn-{i // 10}",
                tool="file_read",
                capability="file_read",
                status="ok",
                token_id="3f2a9c4e8b7d6a5f4e3d2c1b0a998877",
                output=output,
                duration_ms=12.5,
            )
            times.append((time.perf_counter_ns() - start) / 1000)
    result = verify(path)
    if not result.ok:
        raise SystemExit(f"benchmark log failed to verify: {result.reason}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.audit_append", description=__doc__)
    parser.add_argument("--n", type=int, default=5000, help="appends per run (default 5000)")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temp dir")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-", dir=args.dir) as tmp:
        directory = Path(tmp)
        print(f"{args.n} appends per run in {directory} (python {sys.version.split()[0]})")
        print(f"{'mode':<16}{'p50 µs':>10}{'p99 µs':>10}{'max µs':>10}{'bytes/line':>12}")
        for durable in (False, True):
            times = measure(directory, args.n, durable=durable)
            cuts = statistics.quantiles(times, n=100, method="inclusive")
            name = "durable.jsonl" if durable else "fast.jsonl"
            per_line = os.path.getsize(directory / name) / (args.n + 1)
            label = "fsync" if durable else "no fsync"
            print(
                f"{label:<16}{cuts[49]:>10.1f}{cuts[98]:>10.1f}{max(times):>10.1f}{per_line:>12.0f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

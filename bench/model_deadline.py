"""How long a turn lasts when its model server fails slowly, against `llm.timeout_s`.

    python -m bench.model_deadline [--limits 2,12] [--runs 3] [--interval 1.0] [--json]

Real parts: the real `chamberlain ask` in a subprocess with a scratch home, talking to the
scripted OpenAI server on 127.0.0.1, which answers every chat request in one of these ways:

- ``headers``: the whole HTTP answer, status line and headers included, one byte per interval
  (the report's "server sending 1 byte/s": no response exists for a long time);
- ``body``: the headers at once, then the body one byte per interval;
- ``keepalive``: SSE keep-alive comments every interval, never an answer;
- ``silent``: nothing at all after reading the request.

For each limit, `llm.timeout_s` is set to it and the turn is timed from the first model request
the server received to the end of the process (the CLI's own start-up is not the model's doing;
it is reported apart). The promise (issue 19): a turn with a failed model call ends within 1.5×
the limit. A benchmark reports figures; it asserts nothing.
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
MODES = ("headers", "body", "keepalive", "silent")
# A message the rules are sure of (the first model call is the reply), and one they are not (the
# first call asks the model to route it; nothing calls the model again once that call failed).
MESSAGES = {"reply": "tell me a joke", "routing": "do the thing"}


def _turn(mode: str, interval: float) -> Any:
    from tests.support.openai_server import KeepAlive, Stall, Text, Trickle

    reply = Text("Here is a slow joke. " * 20)
    if mode == "headers":
        return Trickle(reply, interval=interval, whole=True)
    if mode == "body":
        return Trickle(reply, interval=interval)
    if mode == "keepalive":
        return KeepAlive(3600, reply, interval=interval)
    return Stall(3600, reply)


def _one_run(
    mode: str, message: str, limit: float, interval: float, scratch: Path
) -> dict[str, Any]:
    from tests.support.cli import cli_env, make_user
    from tests.support.openai_server import ScriptedOpenAIServer

    user = make_user(Path(tempfile.mkdtemp(dir=scratch)) / "user")
    server = ScriptedOpenAIServer([_turn(mode, interval)]).start()
    try:
        env = cli_env(user, {"CHAMBERLAIN_LLM__TIMEOUT_S": f"{limit:g}"})
        argv = ["ask", message, "--llm", server.base_url, "--model", "scripted-model"]
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "app.cli", *argv],
            cwd=user,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit * 10 + 60,
        )
        ended = time.monotonic()
        calls = [hit.at for hit in server.hits if hit.path.endswith("/chat/completions")]
    finally:
        server.stop()
    first = calls[0] if calls else ended
    return {
        "turn_s": ended - first,
        "ratio": (ended - first) / limit,
        "before_s": first - started,
        "model_calls": len(calls),
        "exit": proc.returncode,
        "said_timeout": f"did not answer within {limit:g} s" in proc.stdout,
    }


def _summary(samples: list[dict[str, Any]], mode: str, first: str, limit: float) -> dict[str, Any]:
    ratios = [s["ratio"] for s in samples]
    return {
        "mode": mode,
        "first_call": first,
        "limit_s": limit,
        "turn_s_median": statistics.median(s["turn_s"] for s in samples),
        "ratio_median": statistics.median(ratios),
        "ratio_range": [min(ratios), max(ratios)],
        "before_s_median": statistics.median(s["before_s"] for s in samples),
        "model_calls": sorted({s["model_calls"] for s in samples}),
        "exits": sorted({s["exit"] for s in samples}),
        "all_said_timeout": all(s["said_timeout"] for s in samples),
    }


def measure(
    limits: list[float],
    runs: int,
    interval: float,
    scratch: Path,
    modes: tuple[str, ...] = MODES,
    firsts: tuple[str, ...] = tuple(MESSAGES),
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for limit in limits:
        for first in firsts:
            message = MESSAGES[first]
            for mode in modes:
                samples = [_one_run(mode, message, limit, interval, scratch) for _ in range(runs)]
                results[f"{mode}/{first}@{limit:g}"] = _summary(samples, mode, first, limit)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", default="2,12", help="llm.timeout_s values, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between bytes")
    parser.add_argument("--modes", default=",".join(MODES), help="which servers, comma-separated")
    parser.add_argument(
        "--first", default=",".join(MESSAGES), help="which first call: reply, routing or both"
    )
    parser.add_argument("--dir", help="where the scratch homes are made")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    limits = [float(x) for x in args.limits.split(",") if x.strip()]
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        os.environ.pop("CHAMBERLAIN_HOME", None)
        modes = tuple(m for m in args.modes.split(",") if m in MODES)
        firsts = tuple(f for f in args.first.split(",") if f in MESSAGES)
        results = measure(limits, args.runs, args.interval, Path(scratch), modes, firsts)
    report = {"machine": machine_details(), "runs": args.runs, "results": results}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"machine: {report['machine']}")
    print(f"{args.runs} runs each; one byte every {args.interval:g} s; time from the first model")
    print("request to the end of `chamberlain ask` ('before': start-up, routing, memory)\n")
    print(
        f"{'server':<10} {'first call':<10} {'limit':>6} {'turn (median)':>14} {'× limit':>8}"
        f" {'range':>13} {'calls':>6} {'exit':>5} {'timeout said':>13} {'before':>8}"
    )
    for row in results.values():
        low, high = row["ratio_range"]
        print(
            f"{row['mode']:<10} {row['first_call']:<10} {row['limit_s']:>5g}s"
            f" {row['turn_s_median']:>13.2f}s {row['ratio_median']:>8.2f}"
            f" {f'{low:.2f}–{high:.2f}':>13} {','.join(map(str, row['model_calls'])):>6}"
            f" {','.join(map(str, row['exits'])):>5}"
            f" {'yes' if row['all_said_timeout'] else 'NO':>13} {row['before_s_median']:>7.2f}s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

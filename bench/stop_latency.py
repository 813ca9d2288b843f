"""How long Stop takes: from the person's Stop to the turn's end, for what a turn waits on.

    python -m bench.stop_latency [--runs 10] [--json]

Headless, real parts: a real Session in a scratch home, the real OpenAI client against the
scripted OpenAI server on 127.0.0.1, a real command in the real bubblewrap sandbox. Each run
starts a turn, waits until it is in the state below, fires the turn's StopSignal from another
thread and times until `Session.ask` has returned (the turn ended, audited as cancelled):

- ``stream``: the model is streaming a reply that would take minutes (a byte every 2 ms);
- ``command``: `sleep 600` is running (skipped without bubblewrap);
- ``prompt``: a permission question is open and nobody answers it.

Issue 9's goal: the model stream stops within 0.5 s. A benchmark reports figures; it asserts
nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.machine import machine_details


def _session(home: Path, **options: Any) -> Any:
    from broker.session import Session
    from broker.settings import Settings
    from core.clock import SystemClock

    settings = Settings()
    settings.router.model_refinement = False
    settings.memory.extract = False
    return Session(home=home, settings=settings, clock=SystemClock(), **options)


def _time_stop(session: Any, text: str, ready: threading.Event) -> tuple[float, str]:
    """Run `text` as a turn; stop it once `ready` is set; (seconds from Stop to the end, status)."""
    from tools.stop import StopSignal

    stop = StopSignal()
    fired: list[float] = []

    def press() -> None:
        ready.wait(30)
        time.sleep(0.2)  # well inside the wait, not at its edge
        fired.append(time.perf_counter())
        stop.stop()

    threading.Thread(target=press, daemon=True).start()
    turn = session.ask(text, stop=stop)
    ended = time.perf_counter()
    return (ended - fired[0]) if fired else float("nan"), turn.status


def measure(runs: int) -> dict[str, Any]:
    from broker.events import TextDelta, ToolStarted
    from broker.llm.openai_client import OpenAIChatModel
    from broker.permissions import (
        PermissionQuestion,
        PermissionRequest,
        PromptDecision,
        RulePrompter,
    )
    from broker.types import GrantMode
    from tests.support.openai_server import ScriptedOpenAIServer, Text, Trickle
    from tools.sandbox import sandbox_status

    class Allow(RulePrompter):
        def decide(self, request: PermissionRequest) -> PromptDecision:
            return PromptDecision(allow=True, mode=GrantMode.ONCE)

    class Nobody:
        """Shows the question and never answers it: only Stop ends it."""

        def __init__(self) -> None:
            self.asked = threading.Event()

        def present(self, question: PermissionQuestion) -> None:
            self.asked.set()

    results: dict[str, list[float]] = {"stream": [], "command": [], "prompt": []}
    statuses: dict[str, set[str]] = {name: set() for name in results}
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp:
        user = Path(tmp) / "user"
        (user / "Documents").mkdir(parents=True)
        os.environ["HOME"] = str(user)
        reply = Trickle(Text("word " * 20000), interval=0.002)
        with ScriptedOpenAIServer([reply], fragments=2000) as server:
            model = OpenAIChatModel(server.base_url, model="bench", timeout_s=600)
            for index in range(runs):
                streaming = threading.Event()
                session = _session(Path(tmp) / f"s{index}", prompter=Allow())
                session.use_model(model)
                session.events = lambda e, s=streaming: (
                    s.set() if isinstance(e, TextDelta) else None
                )
                took, status = _time_stop(session, "tell me a very long story", streaming)
                results["stream"].append(took)
                statuses["stream"].add(status)
            model.close()
        for index in range(runs if sandbox_status().available else 0):
            running = threading.Event()
            session = _session(Path(tmp) / f"c{index}", prompter=Allow())
            session.events = lambda e, r=running: r.set() if isinstance(e, ToolStarted) else None
            took, status = _time_stop(session, "run `sleep 600`", running)
            results["command"].append(took)
            statuses["command"].add(status)
        for index in range(runs):
            nobody = Nobody()
            session = _session(Path(tmp) / f"p{index}", prompter=nobody)
            took, status = _time_stop(session, f"list files in {user / 'Documents'}", nobody.asked)
            results["prompt"].append(took)
            statuses["prompt"].add(status)
    report: dict[str, Any] = {"machine": machine_details(), "runs": runs}
    for name, times in results.items():
        if not times:
            report[name] = None
            continue
        report[name] = {
            "median_ms": round(statistics.median(times) * 1000, 1),
            "max_ms": round(max(times) * 1000, 1),
            "statuses": sorted(statuses[name]),
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    report = measure(options.runs)
    if options.json:
        print(json.dumps(report, indent=2))
        return 0
    m = report["machine"]
    print(f"machine: {m['cpu']}, {m['nproc']} CPUs; load {m['load_average']}; {m['date']}")
    print(f"{'waiting on':<12}{'median ms':>11}{'max ms':>9}  statuses")
    for name in ("stream", "command", "prompt"):
        row = report[name]
        if row is None:
            print(f"{name:<12}  (skipped: no sandbox here)")
            continue
        print(f"{name:<12}{row['median_ms']:>11.1f}{row['max_ms']:>9.1f}  {row['statuses']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

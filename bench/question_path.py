"""The broker's path from a message to its permission question, headless: hot, and after idle.

    python -m bench.question_path [--turns 40] [--idle 0.1] [--json]

A real Session in a scratch home (real audit log, real router, the scripted OpenAI server on
127.0.0.1 as the model, never asked for a direct action) runs "list files in <folder>" turns in
one conversation; a prompter that denies notes when the question reaches it. Each turn is
timed from `Session.ask` to the question, interleaved: one turn straight after the one before
(hot: the interpreter's code and data still in the CPU's caches), then one after the process
slept `--idle` seconds, as it does between a person's messages. The ratio of the two medians
is what this machine charges the same work for coming to it cold: `bench.prompt_latency` runs
each question after such a pause, so its broker stages include that charge.

A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import machine_details


def measure(turns: int, idle: float) -> dict[str, Any]:
    from broker import permissions
    from broker.conversation import Conversation
    from broker.llm.openai_client import OpenAIChatModel
    from broker.permissions import DenyPrompter
    from broker.session import Session
    from broker.settings import Settings
    from core.clock import SystemClock
    from tests.support.openai_server import ScriptedOpenAIServer, Text

    asked: list[float] = []
    real_pose = permissions.pose

    def pose(prompter: Any, question: Any) -> Any:
        asked.append(time.perf_counter())
        return real_pose(prompter, question)

    permissions.pose = pose  # the gate calls it by the module's name
    server = ScriptedOpenAIServer([lambda _request: Text("ok")], repeat_last=True).start()
    try:
        with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as tmp:
            scratch = Path(tmp)
            # Everything under the scratch folder, HOME too: the folders listed are the
            # person's own, as in the app.
            os.environ["HOME"] = str(scratch / "user")
            docs = scratch / "user" / "Documents"
            docs.mkdir(parents=True)
            settings = Settings()
            settings.memory.extract = False
            home, prompter = scratch / "home", DenyPrompter()
            session = Session(home=home, settings=settings, clock=SystemClock(), prompter=prompter)
            model = OpenAIChatModel(server.base_url, model="bench")
            session.use_model(model)
            conversation = Conversation()
            hot: list[float] = []
            cold: list[float] = []
            try:
                for index in range(turns * 2 + 4):  # the first four warm imports and caches
                    after_idle = index % 2 == 1
                    folder = docs / f"run-{index}"
                    folder.mkdir()
                    (folder / "notes.txt").write_text("hello\n")
                    if after_idle:
                        time.sleep(idle)
                    asked.clear()
                    start = time.perf_counter()
                    session.ask(f"list files in {folder}", conversation=conversation)
                    if not asked:
                        raise RuntimeError("the turn asked no permission question")
                    if index >= 4:
                        (cold if after_idle else hot).append(asked[0] - start)
            finally:
                model.close()
    finally:
        permissions.pose = real_pose
        server.stop()
    hot_p50, cold_p50 = statistics.median(hot), statistics.median(cold)
    return {
        "machine": machine_details(),
        "turns": turns,
        "idle_s": idle,
        "hot_p50_ms": round(hot_p50 * 1000, 2),
        "after_idle_p50_ms": round(cold_p50 * 1000, 2),
        "ratio": round(cold_p50 / hot_p50, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--idle", type=float, default=0.1)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    report = measure(options.turns, options.idle)
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        m = report["machine"]
        print(
            f"machine: {m['cpu']} ({m['nproc']} cores), {m['ram']}, load {m['load_average']}, "
            f"{m['date']}\n"
            f"Session.ask → permission question, {report['turns']} turns each, p50:\n"
            f"  straight after the turn before   {report['hot_p50_ms']:6.2f} ms\n"
            f"  after {report['idle_s']:.2f} s idle               "
            f"{report['after_idle_p50_ms']:6.2f} ms  ({report['ratio']:.2f}×)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

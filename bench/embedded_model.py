"""The embedded model here: load time, time to first token, tokens per second; our client's
overhead against calling the same server directly; the cost of the context budget's counting.

    python -m bench.embedded_model [--rounds 5] [--json]

Real parts only: the bundled SmolLM2-135M GGUF in its worker process (llama-cpp-python), and the
same file
served by llama-cpp-python's OpenAI-compatible server on 127.0.0.1 (started and stopped here,
by its PID). Figures:

- ``import``: importing llama_cpp in a fresh interpreter (loads the shared library);
- ``load``: `EmbeddedChatModel` starting its worker and loading the weights (first use), after
  an unload each round (the worker's CPU build remembered, as after the first start);
- ``round trip``: one tokenizer request to the running worker and its answer;
- ``first token`` and ``tokens/s``: one chat reply of up to 128 tokens, streamed from the worker;
- ``client overhead``: the same streamed request (the body our client sends, at temperature 0:
  the same reply both ways), sent by `OpenAIChatModel.chat` and by a bare `http.client` POST
  reading the SSE stream to its end, rounds interleaved; the ratio of the medians;
- ``budget``: `broker.llm.budget.fit` on a turn with an 8 KB tool result, counting with the
  model's tokenizer and with the estimate;
- ``mid-prompt``: a request of ~3,500 tokens (its evaluation alone takes seconds) under a 0.5 s
  `llm.timeout_s`, and the same with the person's Stop 0.5 s in: when each call really ended.

A benchmark reports figures; it asserts nothing. Runs in a scratch home.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
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

SHORT = [{"role": "user", "content": "Reply with the single word OK."}]
PROMPT = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "Explain what a file system is, in three sentences."},
]


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def import_seconds() -> float:
    code = "import time; t = time.perf_counter(); import llama_cpp; print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return float(out.stdout.strip())


def in_worker(rounds: int) -> dict[str, Any]:
    from broker.llm.base import deltas_to
    from broker.llm.embedded import EmbeddedChatModel

    record = os.path.join(os.environ["CHAMBERLAIN_HOME"], "llm-cpu.json")
    model = EmbeddedChatModel(max_reply_tokens=128, idle_unload_s=0, record_path=Path(record))
    loads, trips, firsts, rates, lengths = [], [], [], [], []
    try:
        model.start()  # the first start on a machine also probes; not counted
        for _ in range(rounds):
            model.unload()
            started = time.perf_counter()
            model.start()
            loads.append(time.perf_counter() - started)
        for _ in range(rounds * 20):
            started = time.perf_counter()
            model.tokenize("hello")
            trips.append(time.perf_counter() - started)
        for _ in range(rounds):
            first: list[float] = []

            def seen(_piece: str, first: list[float] = first) -> None:
                if not first:
                    first.append(time.perf_counter())

            started = time.perf_counter()
            with deltas_to(seen):
                answer = model.chat(PROMPT)
            ended = time.perf_counter()
            tokens = len(model.tokenize(answer.content))
            firsts.append(first[0] - started if first else ended - started)
            if first and ended > first[0]:
                rates.append(tokens / (ended - first[0]))
            lengths.append(tokens)
    finally:
        model.close()
    return {
        "load_ms": _median_ms(loads),
        "round_trip_ms": _median_ms(trips),
        "first_token_ms": _median_ms(firsts),
        "tokens_per_s": round(statistics.median(rates), 1) if rates else None,
        "reply_tokens": statistics.median(lengths),
    }


def _direct(port: int, body: dict[str, Any]) -> float:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.perf_counter()
    connection.request(
        "POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    while response.read(65536):
        pass
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed


def client_overhead(rounds: int) -> dict[str, Any]:
    from broker.llm.embedded import bundled_model_path
    from broker.llm.openai_client import OpenAIChatModel
    from tests.support.llama_server import MODEL_ALIAS, LlamaServer

    path = bundled_model_path()
    assert path is not None
    ours, bare = [], []
    with LlamaServer(path) as server:
        client = OpenAIChatModel(
            server.base_url, model=MODEL_ALIAS, timeout_s=120, stream=True, temperature=0.0
        )
        # Exactly the body our client sends (model, messages, stream, temperature 0): greedy
        # decoding, so both get the same reply, token for token.
        body = {"model": MODEL_ALIAS, "messages": SHORT, "stream": True, "temperature": 0.0}
        _direct(server.port, body)  # warm up: the server's first request loads its caches
        for _ in range(rounds):
            bare.append(_direct(server.port, body))
            started = time.perf_counter()
            client.chat([*SHORT])
            ours.append(time.perf_counter() - started)
        client.close()
    return {
        "direct_ms": _median_ms(bare),
        "client_ms": _median_ms(ours),
        "ratio": round(statistics.median(ours) / statistics.median(bare), 2),
    }


def budget_cost(rounds: int) -> dict[str, Any]:
    from broker.llm.budget import estimate_tokens, fit
    from broker.llm.embedded import EmbeddedChatModel

    result = "\n".join(f"line {n}: the meeting moved to room {n % 7}" for n in range(250))[:8192]
    messages = [
        *PROMPT,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "file_read", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]
    model = EmbeddedChatModel(idle_unload_s=0)
    try:
        model.start()
        tokenizer, estimate = [], []
        for _ in range(rounds * 20):
            started = time.perf_counter()
            fit(messages, 4096, 512, lambda text: len(model.tokenize(text)))
            tokenizer.append(time.perf_counter() - started)
            started = time.perf_counter()
            fit(messages, 4096, 512, estimate_tokens)
            estimate.append(time.perf_counter() - started)
    finally:
        model.close()
    return {"tokenizer_ms": _median_ms(tokenizer), "estimate_ms": _median_ms(estimate)}


def mid_prompt(rounds: int) -> dict[str, Any]:
    import threading

    from broker.llm.base import ModelError
    from broker.llm.embedded import EmbeddedChatModel
    from tools.stop import Stopped, StopSignal, stopping

    record = Path(os.environ["CHAMBERLAIN_HOME"]) / "llm-cpu.json"
    long = [{"role": "user", "content": "Tell me about the sea and the ships on it. " * 330}]
    limit = 0.5
    deadline_ends, stop_ends, full = [], [], []
    for _ in range(rounds):
        model = EmbeddedChatModel(max_reply_tokens=1, timeout_s=300, record_path=record)
        try:
            model.start()
            started = time.perf_counter()
            model.chat(long)  # the whole evaluation, for scale
            full.append(time.perf_counter() - started)
        finally:
            model.close()
        model = EmbeddedChatModel(max_reply_tokens=1, timeout_s=300, record_path=record)
        try:
            model.start()
            # The deadline counts from each call, the worker's start included: started, the
            # limit is lowered so that it falls in the middle of the prompt's evaluation.
            model._timeout_s = limit
            started = time.perf_counter()
            with contextlib.suppress(ModelError):
                model.chat(long)
            deadline_ends.append(time.perf_counter() - started)
        finally:
            model.close()
        model = EmbeddedChatModel(max_reply_tokens=1, timeout_s=300, record_path=record)
        try:
            model.start()
            signal = StopSignal()
            timer = threading.Timer(limit, signal.stop)
            started = time.perf_counter()
            timer.start()
            try:
                with stopping(signal):
                    model.chat(long)
            except Stopped:
                pass
            stop_ends.append(time.perf_counter() - started)
            timer.cancel()
        finally:
            model.close()
    return {
        "evaluation_ms": _median_ms(full),
        "limit_ms": limit * 1000,
        "deadline_ended_ms": _median_ms(deadline_ends),
        "stop_ended_ms": _median_ms(stop_ends),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as scratch:
        os.environ["HOME"] = scratch
        os.environ["CHAMBERLAIN_HOME"] = os.path.join(scratch, "home")
        report = {
            "machine": machine_details(),
            "import_s": round(import_seconds(), 3),
            "in_worker": in_worker(options.rounds),
            "client": client_overhead(options.rounds * 2),
            "budget": budget_cost(options.rounds),
            "mid_prompt": mid_prompt(max(1, options.rounds // 2)),
        }
    if options.json:
        print(json.dumps(report, indent=2))
        return 0
    machine = report["machine"]
    print("# The embedded model (SmolLM2-135M-Instruct, Q4_1) here\n")
    print(
        f"- machine: {machine.get('cpu')}, {machine.get('nproc')} cpus, "
        f"load {machine.get('load_average')}, {machine.get('date')}"
    )
    print(f"- import llama_cpp: {report['import_s'] * 1000:.0f} ms")
    inproc = report["in_worker"]
    print(
        f"- worker start and load: {inproc['load_ms']} ms; a request's round trip "
        f"{inproc['round_trip_ms']} ms; first token {inproc['first_token_ms']} ms; "
        f"{inproc['tokens_per_s']} tokens/s over {inproc['reply_tokens']} tokens (medians)"
    )
    client = report["client"]
    print(
        f"- same streamed request to llama-cpp-python's server: our client {client['client_ms']} "
        f"ms, a bare HTTP request {client['direct_ms']} ms: ratio {client['ratio']}"
    )
    budget = report["budget"]
    print(
        f"- context budget per turn (8 KB tool result): {budget['tokenizer_ms']} ms counting "
        f"with the model's tokenizer, {budget['estimate_ms']} ms with the estimate"
    )
    mid = report["mid_prompt"]
    print(
        f"- a {mid['evaluation_ms']} ms prompt evaluation under a {mid['limit_ms']:.0f} ms limit "
        f"ended at {mid['deadline_ended_ms']} ms; Stop at {mid['limit_ms']:.0f} ms ended it at "
        f"{mid['stop_ended_ms']} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

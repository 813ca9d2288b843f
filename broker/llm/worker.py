"""The embedded model's worker: llama.cpp runs in this process, never in the app's.

Native code can crash — an illegal instruction on a CPU that reports more than it runs, a
segmentation fault in a grammar compiler — and a crash here ends one turn, not the app
(`broker.llm.embedded` starts this process, watches it and words what happened). It is started
as `python -m broker.llm.worker` (or `chamberlain --llm-worker` in the installed bundle) with:

- requests on stdin, one JSON object a line; when stdin closes — the app quit, or was killed —
  this process exits at once, even in the middle of evaluating a prompt;
- answers on its stdout, one JSON object a line: `{"event": …}` announcements (which CPU level
  it is about to load, so a crash can be pinned on it), `{"delta": …}` pieces of a streamed
  reply, then `{"ok": true, …}` or `{"error": "…"}` ending the request. Whatever llama.cpp
  itself prints to stdout goes to /dev/null, so it can never corrupt an answer.

It trusts its parent (the requests are ours) and nothing else. It must never open a network
connection, write a file, or outlive the process that started it.
"""

from __future__ import annotations

import ctypes
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from llama_cpp import Llama

# The probe: a real prompt of a few hundred tokens. Short prompts run code paths that long ones
# do not (an AMX build answered a 1-token prompt and crashed on 300), so the probe is long.
PROBE_TEXT = "The quick brown fox jumps over the lazy dog near the river bank. " * 24
PROBE_REPLY_TOKENS = 4


class _Answers:
    """The answer channel: a private copy of stdout; fd 1 itself is pointed at /dev/null."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self._out: IO[bytes] = os.fdopen(os.dup(1), "wb", buffering=0)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n"
        with self._lock:
            self._out.write(line)


def _watch_stdin(requests: queue.Queue[bytes]) -> None:
    """Hand each request line to the main thread; at EOF (the parent is gone) exit at once —
    the main thread may be deep in llama.cpp, which would not notice for seconds."""
    for line in sys.stdin.buffer:
        requests.put(line)
    os._exit(0)


def _ggml() -> ctypes.CDLL:
    """ggml's loader, reached through libllama: the wheel holds several copies of libggml
    (libggml.so, libggml.so.0, …: a wheel cannot hold links), each with a backend registry of
    its own, and only the one libllama was linked against is the one llama.cpp asks. A symbol
    looked up in libllama's handle is found in its dependencies, so in that copy."""
    from llama_cpp import llama_cpp

    return cast(ctypes.CDLL, llama_cpp._lib)


def load_cpu_build(path: str) -> bool:
    """Register llama.cpp's CPU build at `path` as this process's CPU backend. Once one is
    registered, llama.cpp does not go looking for the "best" level itself (llama_backend_init
    loads them all only when none is), so this one is what runs. False if it would not load."""
    loader = _ggml().ggml_backend_load
    loader.restype = ctypes.c_void_p
    loader.argtypes = [ctypes.c_char_p]
    return bool(loader(os.fsencode(path)))


def _scores(files: dict[str, str], answers: _Answers) -> dict[str, int]:
    """Each CPU level's own verdict on this CPU (0: it cannot run here). Each library is loaded
    to ask it, as ggml itself would; the level is announced first, so that if loading it
    crashes this process, the parent knows which one did."""
    import llama_cpp  # noqa: F401  (loads libggml-base, which every level links against)

    scores: dict[str, int] = {}
    for name, path in files.items():
        answers.send({"event": "scoring", "name": name})
        try:
            library = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
            score_fn = library.ggml_backend_score
        except (OSError, AttributeError):
            scores[name] = 0
            continue
        score_fn.restype = ctypes.c_int
        score_fn.argtypes = []
        scores[name] = int(score_fn())
    return scores


class Worker:
    def __init__(self, answers: _Answers) -> None:
        self.answers = answers
        self.llama: Llama | None = None

    # --- requests -------------------------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        handler: Callable[[dict[str, Any]], dict[str, Any]] | None = {
            "scores": self.scores,
            "load": self.load,
            "probe": self.probe,
            "count": self.count,
            "tokenize": self.tokenize,
            "chat": self.chat,
        }.get(str(op))
        if handler is None:
            return {"error": f"unknown request {op!r}"}
        if op not in ("scores", "load") and self.llama is None:
            return {"error": "the model is not loaded"}
        return handler(request)

    def scores(self, request: dict[str, Any]) -> dict[str, Any]:
        files = {str(k): str(v) for k, v in dict(request["files"]).items()}
        return {"ok": True, "scores": _scores(files, self.answers)}

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        variant = request.get("variant")
        from llama_cpp import Llama

        if variant:
            name, path = str(variant[0]), str(variant[1])
            self.answers.send({"event": "loading", "name": name})
            if not load_cpu_build(path):
                return {"error": f"llama.cpp could not load its {name} CPU build ({path})"}
        try:
            self.llama = Llama(
                model_path=str(request["model"]),
                n_ctx=int(request["context"]),
                n_threads=int(request["threads"]),
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            return {"error": f"the model at {request['model']} could not be loaded: {exc}"}
        return {"ok": True, "load_seconds": time.monotonic() - started}

    def probe(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.llama is not None
        started = time.monotonic()
        self.llama.create_completion(PROBE_TEXT, max_tokens=PROBE_REPLY_TOKENS, temperature=0.0)
        tokens = len(self.llama.tokenize(PROBE_TEXT.encode(), add_bos=True))
        return {"ok": True, "seconds": time.monotonic() - started, "tokens": tokens}

    def count(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.llama is not None
        counts = [
            len(self.llama.tokenize(str(text).encode("utf-8", "replace"), add_bos=False))
            for text in request["texts"]
        ]
        return {"ok": True, "counts": counts}

    def tokenize(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.llama is not None
        tokens = self.llama.tokenize(
            str(request["text"]).encode("utf-8", "replace"),
            add_bos=False,
            special=bool(request.get("special")),
        )
        return {"ok": True, "tokens": list(tokens)}

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.llama is not None
        # llama-cpp-python types its messages as TypedDicts; ours were validated by the parent.
        create = cast(Callable[..., Iterator[Any]], self.llama.create_chat_completion)
        finish: str | None = None
        for chunk in create(
            messages=request["messages"],
            stream=True,
            max_tokens=int(request["max_tokens"]),
            temperature=float(request["temperature"]),
            repeat_penalty=float(request["repeat_penalty"]),
            response_format=request.get("response_format"),
        ):
            choice = (chunk.get("choices") or [{}])[0]
            piece = (choice.get("delta") or {}).get("content") or ""
            if piece:
                self.answers.send({"delta": piece})
            finish = choice.get("finish_reason") or finish
        return {"ok": True, "finish": finish}


def main(argv: list[str] | None = None) -> int:
    answers = _Answers()
    requests: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=_watch_stdin, args=(requests,), daemon=True).start()
    worker = Worker(answers)
    answers.send({"event": "ready", "pid": os.getpid()})
    while True:
        line = requests.get()
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
        except ValueError as exc:
            answers.send({"error": f"unreadable request: {exc}"})
            continue
        try:
            answer = worker.handle(request)
        except Exception as exc:  # noqa: BLE001  (llama.cpp failures: one answer, worker lives)
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.send(answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

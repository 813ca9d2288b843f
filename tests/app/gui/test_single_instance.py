"""One instance per user and home: a second launch brings the first to the front, and says so
when the first does not respond, offering to end it.

Real parts: QLocalServer/QLocalSocket and flock on this machine, the real app started as a
subprocess (`python -m app.launcher`, tests/support/app.py), a real frozen instance (a process
holding the lock and the socket that never answers and ignores SIGTERM,
tests/support/frozen_instance.py, or the real app stopped with SIGSTOP), real dialogs offscreen,
and, for the whole second launch, a real X server (Xvfb) with keys typed through XTEST.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from PySide6.QtCore import QDir
from PySide6.QtWidgets import QApplication, QMessageBox

from app.single_instance import (
    Claim,
    Holder,
    SingleInstance,
    ask_to_end,
    end_instance,
    lock_path,
    read_holder,
    server_name,
)
from tests.support.app import REPO, app_env, running_app
from tests.support.xvfb import running_xvfb

# Generous bounds for a busy 2-core machine: the app's imports, Xvfb, a dialog appearing.
START_S = 90


@pytest.fixture
def name() -> str:
    return f"chamberlain-test-{uuid.uuid4().hex[:12]}"


def wait_until(done, seconds: float = START_S, what: str = "the condition") -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def frozen(tmp_path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A frozen instance holding the lock of tmp_path/home; killed by its PID afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.frozen_instance", str(home)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        yield process, home
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
        (Path(QDir.tempPath()) / server_name(home)).unlink(missing_ok=True)


# --- claiming --------------------------------------------------------------------------------


def test_the_first_instance_records_its_process_in_the_lock_and_lets_go_on_release(
    qapp, name, tmp_path
):
    lock = tmp_path / "instance.lock"
    first = SingleInstance(name, lock)
    assert first.claim() is Claim.FIRST
    me = psutil.Process()
    assert read_holder(lock) == Holder(me.pid, round(me.create_time(), 3))
    first.release()
    assert read_holder(lock) is None
    again = SingleInstance(name, lock)
    assert again.claim() is Claim.FIRST
    again.release()


def test_a_second_launch_of_the_real_app_brings_the_first_forward_and_exits_0(
    qapp, qtbot, tmp_path
):
    env = app_env(tmp_path)
    home = Path(env["CHAMBERLAIN_HOME"])
    first = SingleInstance(server_name(home), lock_path(home))
    assert first.claim() is Claim.FIRST
    try:
        with (
            qtbot.waitSignal(first.activated, timeout=START_S * 1000),
            running_app(env) as second,
        ):
            # This process must keep answering while the second launch waits for it.
            qtbot.waitUntil(lambda: second.poll() is not None, timeout=START_S * 1000)
        assert second.returncode == 0
    finally:
        first.release()


def test_a_socket_left_by_a_crashed_instance_does_not_block_a_new_one(qapp, name, tmp_path):
    stale = Path(QDir.tempPath()) / name
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(stale))
    leftover.close()  # never listened, never unlinked: what a crash leaves
    assert stale.exists()
    instance = SingleInstance(name, tmp_path / "instance.lock")
    assert instance.claim() is Claim.FIRST
    instance.release()
    assert not stale.exists()  # and nothing is left behind on a clean exit


def test_a_lock_file_left_by_a_killed_instance_does_not_block_a_new_one(qapp, name, tmp_path):
    lock = tmp_path / "instance.lock"
    lock.write_text("999999 12345.000\n")  # recorded, but nobody holds the lock any more
    instance = SingleInstance(name, lock)
    assert instance.claim() is Claim.FIRST
    assert read_holder(lock).pid == os.getpid()
    instance.release()


def test_names_differ_per_home_and_say_whose_they_are(tmp_path):
    a, b = server_name(tmp_path / "a"), server_name(tmp_path / "b")
    assert a != b
    assert a.startswith(f"chamberlain-{os.getuid()}-")


# --- a frozen instance -----------------------------------------------------------------------


def test_a_real_app_stopped_with_sigstop_is_found_not_responding_and_ends_cleanly_on_yes(
    qapp, tmp_path
):
    env = app_env(tmp_path, CHAMBERLAIN_MEMORY__ENCRYPTION="off")
    home = Path(env["CHAMBERLAIN_HOME"])
    lock = lock_path(home)
    with running_app(env) as app:
        wait_until(lambda: (read_holder(lock) or Holder(0, 0)).pid == app.pid, what="the lock")
        probe = SingleInstance(server_name(home), lock)
        assert probe.claim() is Claim.SHOWN  # it answers while it runs
        app.send_signal(signal.SIGSTOP)
        second = SingleInstance(server_name(home), lock)
        assert second.claim(answer_s=2.0) is Claim.NOT_RESPONDING
        assert second.holder is not None
        assert second.holder.pid == app.pid
        assert app.poll() is None  # nothing was done to it without a yes
        assert end_instance(second.holder, lock) is True
        # SIGTERM, then SIGCONT: the stopped app quits as Quit does.
        assert app.wait(30) == 0
        assert second.claim() is Claim.FIRST
        second.release()


def test_a_frozen_instance_that_ignores_sigterm_is_killed_and_only_it(qapp, frozen):
    process, home = frozen
    lock = lock_path(home)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        second = SingleInstance(server_name(home), lock)
        assert second.claim(answer_s=1.0) is Claim.NOT_RESPONDING
        assert second.holder == read_holder(lock)
        assert second.holder is not None
        assert second.holder.pid == process.pid
        assert end_instance(second.holder, lock, grace_s=1.0) is True
        assert process.wait(10) == -signal.SIGKILL
        assert bystander.poll() is None
        assert second.claim() is Claim.FIRST
        second.release()
    finally:
        bystander.kill()
        bystander.wait(10)


def test_a_recorded_process_whose_start_time_differs_is_never_ended(qapp, frozen):
    """A PID the lock records but that now belongs to another program (the PID was reused)."""
    process, home = frozen
    lock = lock_path(home)
    recorded = read_holder(lock)
    assert recorded is not None
    someone_else = Holder(recorded.pid, recorded.started + 1000)
    assert end_instance(someone_else, lock, grace_s=1.0) is False
    assert process.poll() is None


# --- what the person sees --------------------------------------------------------------------


async def press(button_text: str) -> str:
    """Wait for the not-responding box, press the button `button_text`; returns its text."""
    for _ in range(400):
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, QMessageBox) and widget.isVisible():
                text = f"{widget.text()} {widget.informativeText()}"
                for button in widget.buttons():
                    if button.text().replace("&", "") == button_text:
                        button.click()
                        return text
                raise AssertionError(f"no button {button_text!r} in {text!r}")
        await asyncio.sleep(0.02)
    raise AssertionError("no message box appeared")


def test_the_box_says_which_process_does_not_respond_and_ends_it_only_on_yes(qapp, run):
    holder = Holder(4321, 1.0)

    async def answer(button: str) -> tuple[bool, str]:
        pressing = asyncio.ensure_future(press(button))
        chose = await ask_to_end(holder)
        return chose, await pressing

    chose, text = run(answer("End it and start again"))
    assert chose is True
    assert "already running (process 4321) but has not responded for 5 seconds" in text
    assert "anything it had not saved yet" in text  # what ending it costs
    chose, _text = run(answer("Wait"))
    assert chose is False


def test_enter_and_esc_leave_the_frozen_instance_running(qapp, run):
    async def keys() -> list[bool]:
        answers = []
        for key in ("default", "escape"):

            async def hit(key: str = key) -> None:
                for _ in range(400):
                    for widget in QApplication.topLevelWidgets():
                        if isinstance(widget, QMessageBox) and widget.isVisible():
                            chosen = widget.defaultButton() if key == "default" else None
                            (chosen or widget.escapeButton()).click()
                            return
                    await asyncio.sleep(0.02)

            hitting = asyncio.ensure_future(hit())
            answers.append(await ask_to_end(Holder(4321, 1.0)))
            await hitting
        return answers

    assert run(keys()) == [False, False]


def test_without_a_recorded_process_the_box_offers_nothing_to_end(qapp, run):
    async def answer() -> tuple[bool, str]:
        pressing = asyncio.ensure_future(press("Close"))
        chose = await ask_to_end(None)
        return chose, await pressing

    chose, text = run(answer())
    assert chose is False
    assert "cannot be ended from here" in text


# --- the whole second launch -----------------------------------------------------------------


def test_an_offscreen_second_launch_says_the_first_does_not_respond_and_leaves_it(tmp_path, frozen):
    process, home = frozen
    env = app_env(tmp_path, CHAMBERLAIN_HOME=str(home))
    with running_app(env) as second:
        code = second.wait(START_S)
        stderr = second.stderr.read() if second.stderr else ""
    assert code == 1
    assert (
        f"chamberlain: Chamberlain is already running (process {process.pid}) but has not "
        "responded for 5 seconds; this launch did not start another." in stderr
    )
    assert "Traceback" not in stderr
    assert process.poll() is None


def _type_keys(display: str, *names: str) -> None:
    """Press and release the keys `names` (held down together, in order) through XTEST."""
    from Xlib import XK, X
    from Xlib import display as xdisplay
    from Xlib.ext import xtest

    conn = xdisplay.Display(display)
    try:
        codes = [conn.keysym_to_keycode(XK.string_to_keysym(name)) for name in names]
        for code in codes:
            xtest.fake_input(conn, X.KeyPress, code)
        for code in reversed(codes):
            xtest.fake_input(conn, X.KeyRelease, code)
        conn.sync()
    finally:
        conn.close()


@pytest.mark.parametrize("answer", ["end", "wait", "sigterm"])
def test_a_second_launch_on_screen_offers_to_end_the_frozen_one(tmp_path, frozen, answer):
    """The second launch of the real app, on a real X server with a window manager: the box
    appears; Alt+E ends the frozen instance and this launch starts in its place; Esc leaves it
    and this launch ends, saying so; SIGTERM (logout) while it asks ends it with 0, the frozen
    one untouched."""
    process, home = frozen
    with running_xvfb() as server:
        server.start_window_manager()
        env = app_env(
            tmp_path,
            display=server.display,
            CHAMBERLAIN_HOME=str(home),
            CHAMBERLAIN_MEMORY__ENCRYPTION="off",
        )
        with running_app(env) as second:
            server.wait_for_window("Not responding", second, timeout=START_S)
            assert process.poll() is None  # asked, not done
            if answer == "end":
                _type_keys(server.display, "Alt_L", "e")
                assert process.wait(30) == -signal.SIGKILL
                wait_until(
                    lambda: (read_holder(lock_path(home)) or Holder(0, 0)).pid == second.pid,
                    what="the second launch to take the lock",
                )
                # Started in its place: with no tray on this bare desktop, its chat window.
                server.wait_for_window("Chat", second, timeout=START_S)
                second.send_signal(signal.SIGTERM)
                assert second.wait(30) == 0
            elif answer == "sigterm":
                second.send_signal(signal.SIGTERM)
                assert second.wait(30) == 0
                assert process.poll() is None
            else:
                _type_keys(server.display, "Escape")
                assert second.wait(30) == 1
                stderr = second.stderr.read() if second.stderr else ""
                assert "it was left running, and this launch did not start another" in stderr
                assert process.poll() is None


# --- a minimised chat ------------------------------------------------------------------------

# ICCCM WM_STATE values.
NORMAL_STATE, ICONIC_STATE = 1, 3


def _window_state(display: str, window_id: int) -> tuple[int | None, int | None]:
    """(WM_STATE as the window manager set it, the window _NET_ACTIVE_WINDOW names)."""
    from Xlib import X
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    try:
        window = conn.create_resource_object("window", window_id)
        wm_state = window.get_full_property(conn.intern_atom("WM_STATE"), X.AnyPropertyType)
        active = conn.screen().root.get_full_property(
            conn.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType
        )
        return (
            int(wm_state.value[0]) if wm_state is not None else None,
            int(active.value[0]) if active is not None and len(active.value) else None,
        )
    finally:
        conn.close()


def _minimise(display: str, window_id: int) -> None:
    """Ask the window manager to minimise the window, as a title bar's button or a taskbar
    does (ICCCM: WM_CHANGE_STATE with IconicState, sent to the root window)."""
    from Xlib import X
    from Xlib import display as xdisplay
    from Xlib.protocol import event

    conn = xdisplay.Display(display)
    try:
        root = conn.screen().root
        message = event.ClientMessage(
            window=conn.create_resource_object("window", window_id),
            client_type=conn.intern_atom("WM_CHANGE_STATE"),
            data=(32, [ICONIC_STATE, 0, 0, 0, 0]),
        )
        mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
        root.send_event(message, event_mask=mask)
        conn.sync()
    finally:
        conn.close()


def test_a_second_launch_brings_a_minimised_chat_back_raised_and_active(tmp_path):
    """On a real X server with a window manager that minimises (Openbox): the person minimises
    the chat, then starts Chamberlain again; the chat is back on screen, not minimised, and the
    active window, and the second launch ends with 0."""
    with running_xvfb() as server:
        server.start_window_manager(openbox=True)
        env = app_env(tmp_path, display=server.display, CHAMBERLAIN_MEMORY__ENCRYPTION="off")
        with running_app(env) as first:
            # With no tray on this bare desktop, the app opens its chat.
            chat = server.wait_for_window("Chat", first, timeout=START_S)
            _minimise(server.display, chat.id)
            wait_until(
                lambda: _window_state(server.display, chat.id)[0] == ICONIC_STATE,
                30,
                "the window manager to minimise the chat",
            )
            with running_app(env) as second:
                assert second.wait(START_S) == 0
            wait_until(
                lambda: _window_state(server.display, chat.id) == (NORMAL_STATE, chat.id),
                30,
                "the chat to be restored and active",
            )
            assert first.poll() is None

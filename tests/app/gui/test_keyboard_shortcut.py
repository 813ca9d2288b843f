"""The desktop-wide key that opens the chat (app/global_shortcut.py), on a real X server.

Real parts: Xvfb (tests/support/xvfb.py) with a real tray host (trayer), the real app started as
a person starts it (tests/support/app.py), the key pressed with xdotool through the X server's
XTEST extension, and python-xlib for a second program that holds a key. Every process started
here is stopped by its PID.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
from PySide6.QtGui import QKeySequence
from Xlib import XK, X
from Xlib import error as xerror

from app.global_shortcut import GlobalShortcut, desktop_kind, x11_key
from app.qt_session import QtSession
from tests.app.gui.conftest import make_session, open_settings, until
from tests.support.app import app_env, running_app
from tests.support.xvfb import Xvfb, running_xvfb

XDOTOOL = shutil.which("xdotool")
TRAYER = shutil.which("trayer")


@pytest.fixture
def server() -> Iterator[Xvfb]:
    if XDOTOOL is None or TRAYER is None:
        pytest.fail("xdotool and trayer are missing: scripts/setup.sh --test installs them")
    with running_xvfb(1280, 800) as started:
        yield started


def holds(server: Xvfb, shortcut: str) -> bool:
    """Whether some program holds `shortcut` on the server: X refuses a second grab of it."""
    found = x11_key(shortcut)
    assert found is not None
    keysym, mask = found
    conn = server.connect()
    try:
        keycode = conn.keysym_to_keycode(keysym)
        caught = xerror.CatchError(xerror.BadAccess)
        root = conn.screen().root
        root.grab_key(keycode, mask, True, X.GrabModeAsync, X.GrabModeAsync, onerror=caught)
        conn.sync()
        return caught.get_error() is not None
    finally:
        conn.close()  # our own grab, if it was made, ends with the connection


def press(server: Xvfb, keys: str) -> None:
    assert XDOTOOL is not None
    subprocess.run([XDOTOOL, "key", keys], env=server.env, check=True, timeout=10)


def start_tray_host(server: Xvfb) -> None:
    assert TRAYER is not None
    server.spawn([TRAYER, "--edge", "top", "--align", "right", "--width", "10"])
    conn = server.connect()
    try:
        selection = conn.intern_atom("_NET_SYSTEM_TRAY_S0")
        deadline = time.monotonic() + 10
        while conn.get_selection_owner(selection) == X.NONE:
            assert time.monotonic() < deadline, "the tray host did not start"
            time.sleep(0.05)
    finally:
        conn.close()


def wait_for(done, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_key_brings_up_the_chat_of_the_running_app_from_anywhere(server, tmp_path):
    start_tray_host(server)
    server.start_window_manager()
    env = app_env(tmp_path, display=server.display)
    with running_app(env) as app:
        # The app lives in the tray: no chat until asked for.
        wait_for(lambda: holds(server, "Ctrl+Alt+Space") or app.poll() is not None)
        assert app.poll() is None
        press(server, "ctrl+alt+space")
        window = server.wait_for_window("Chat", app, timeout=20)
        assert window.id
    # Quitting gives the key back to the desktop.
    assert not holds(server, "Ctrl+Alt+Space")


def test_chamberlain_chat_opens_the_chat_when_the_app_is_not_running_yet(server, tmp_path):
    """What a desktop's own keyboard settings run where no program may take a key (Wayland)."""
    start_tray_host(server)
    server.start_window_manager()
    env = app_env(tmp_path, display=server.display, CHAMBERLAIN_CHAT__SHORTCUT="")
    with running_app(env, "--chat") as app:
        server.wait_for_window("Chat", app, timeout=20)
        assert not holds(server, "Ctrl+Alt+Space")  # turned off: nothing taken


def test_chamberlain_chat_brings_up_the_chat_of_the_running_app(server, tmp_path):
    """The desktop's own binding pressed while the app runs: the second launch hands over and
    ends; the running app shows its chat."""
    start_tray_host(server)
    server.start_window_manager()
    env = app_env(tmp_path, display=server.display, CHAMBERLAIN_CHAT__SHORTCUT="")
    with running_app(env) as first:
        wait_for(lambda: (tmp_path / "home" / "instance.lock").exists() or first.poll() is not None)
        assert first.poll() is None
        with running_app(env, "--chat") as second:
            assert second.wait(30) == 0
        server.wait_for_window("Chat", first, timeout=20)


def test_a_key_another_program_holds_is_said_in_settings_and_nothing_fails(
    server, qtbot, app_home, run
):
    other = server.connect()
    try:
        keycode = other.keysym_to_keycode(XK.string_to_keysym("space"))
        other.screen().root.grab_key(
            keycode, X.ControlMask | X.Mod1Mask, True, X.GrabModeAsync, X.GrabModeAsync
        )
        other.sync()
        shortcut = GlobalShortcut("xcb", server.display)
        problem = shortcut.start("Ctrl+Alt+Space")
        assert problem is not None
        assert "already used by another program" in problem
        assert not shortcut.active
        assistant = QtSession(make_session(app_home))
        window = open_settings(qtbot, assistant)
        window.chat_shortcut = shortcut
        window.load()
        note = window.fields["chat.shortcut"].message
        assert "already used by another program" in note
        assistant.close()
    finally:
        other.close()


def test_a_new_key_saved_in_settings_is_taken_and_the_old_one_given_back(
    server, qtbot, app_home, run
):
    shortcut = GlobalShortcut("xcb", server.display)
    pressed: list[int] = []
    shortcut.pressed.connect(lambda: pressed.append(1))
    assert shortcut.start("Ctrl+Alt+Space") is None
    assistant = QtSession(make_session(app_home))
    window = open_settings(qtbot, assistant)
    window.chat_shortcut = shortcut
    window.shortcut_edit.setKeySequence(QKeySequence("Ctrl+Alt+K"))
    try:
        assert run(window.save())
        saved = json.loads((app_home / "settings.json").read_text())
        assert saved["chat"]["shortcut"] == "Ctrl+Alt+K"
        assert "Ctrl+Alt+K now opens the chat" in window.status.text()
        assert holds(server, "Ctrl+Alt+K")
        assert not holds(server, "Ctrl+Alt+Space")
        press(server, "ctrl+alt+k")
        run(until(lambda: pressed))

        window.shortcut_edit.clear()  # turned off
        assert run(window.save())
        assert json.loads((app_home / "settings.json").read_text())["chat"]["shortcut"] == ""
        assert "No key opens the chat now" in window.status.text()
        assert not holds(server, "Ctrl+Alt+K")
    finally:
        shortcut.stop()
        assistant.close()


def test_a_key_without_ctrl_alt_or_meta_is_refused_beside_the_field(qtbot, app_home):
    assistant = QtSession(make_session(app_home))
    window = open_settings(qtbot, assistant)
    window.shortcut_edit.setKeySequence(QKeySequence("Shift+K"))
    settings, errors = window.candidate()
    assert settings is None
    assert errors["chat.shortcut"] == (
        "Needs Ctrl, Alt or Meta with it, or it would take keys you type."
    )
    assert not (app_home / "settings.json").exists()
    assistant.close()


def test_where_no_program_may_take_a_key_settings_says_what_to_bind_instead(qtbot, app_home):
    """Wayland: the desktop's own keyboard settings run `chamberlain --chat` (tried above)."""
    shortcut = GlobalShortcut("wayland", None)
    assert shortcut.start("Ctrl+Alt+Space") is not None
    assert not shortcut.active
    assistant = QtSession(make_session(app_home))
    window = open_settings(qtbot, assistant)
    window.chat_shortcut = shortcut
    window.load()
    note = window.fields["chat.shortcut"].message
    assert "keyboard settings" in note
    assert "chamberlain --chat" in note
    assistant.close()


def test_the_tray_shows_the_key_beside_open_chat_while_it_works(
    server, qapp, app_home, event_loop_qt, monkeypatch
):
    from app.main import DesktopApp

    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    shell = DesktopApp(app_home, use_tray=True, connect_model=False)
    try:
        chat = shell.tray.actions["chat"]
        # Offscreen, no program may take a key: none is shown.
        shell.chat_shortcut.start("Ctrl+Alt+Space")
        assert chat.shortcut().isEmpty()
        shell.chat_shortcut.platform, shell.chat_shortcut.display = "xcb", server.display
        shell.chat_shortcut.start("Ctrl+Alt+Space")
        assert chat.shortcut().toString() == "Ctrl+Alt+Space"
        shell.chat_shortcut.start("")
        assert chat.shortcut().isEmpty()
    finally:
        shell.quit()


def test_while_a_new_key_is_being_chosen_the_one_in_use_is_not_taken_from_the_box(
    server, qtbot, app_home
):
    """Pressed in Settings' box to choose it again, the key in use would open the chat."""
    shortcut = GlobalShortcut("xcb", server.display)
    assert shortcut.start("Ctrl+Alt+Space") is None
    assistant = QtSession(make_session(app_home))
    window = open_settings(qtbot, assistant)
    window.chat_shortcut = shortcut
    try:
        window.activateWindow()
        window.shortcut_edit.setFocus()
        qtbot.waitUntil(lambda: not holds(server, "Ctrl+Alt+Space"))
        window.model_name.setFocus()
        qtbot.waitUntil(lambda: holds(server, "Ctrl+Alt+Space"))
        assert shortcut.active
    finally:
        shortcut.stop()
        assistant.close()


@pytest.mark.parametrize(
    ("platform", "environ", "kind"),
    [
        ("xcb", {"DISPLAY": ":0"}, "xcb"),
        # Qt on XWayland: a key grabbed there would only work over X windows.
        ("xcb", {"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, "wayland"),
        ("xcb", {"DISPLAY": ":0", "XDG_SESSION_TYPE": "wayland"}, "wayland"),
        ("wayland", {"WAYLAND_DISPLAY": "wayland-0"}, "wayland"),
    ],
)
def test_in_a_wayland_session_no_key_is_grabbed_even_through_xwayland(platform, environ, kind):
    assert desktop_kind(platform, environ) == kind

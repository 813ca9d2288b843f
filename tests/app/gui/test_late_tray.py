"""A tray host that starts after the app, on X11: the usual order at login (the panel comes up
after the apps that start with the session). Real parts: Xvfb, the real app started as a person
starts it (tests/support/app.py), and trayer, a real XEmbed tray host, started later. Every
process is stopped by its PID. (The same on Wayland, with waybar: tests/app/test_wayland_app.py.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from Xlib import error as xerror

from tests.app.gui.test_keyboard_shortcut import TRAYER, start_tray_host
from tests.support.app import app_env, running_app
from tests.support.xvfb import Xvfb, running_xvfb


@pytest.fixture
def server() -> Iterator[Xvfb]:
    if TRAYER is None:
        pytest.fail("trayer is missing: scripts/setup.sh --test installs it")
    with running_xvfb(1280, 800) as started:
        yield started


def _docked(server: Xvfb) -> int:
    """How many windows trayer holds (its own, and the icons docked in it). A window that goes
    while it is looked at (a menu or a splash closing under load) counts as none."""
    conn = server.connect()
    try:

        def count(window: Any) -> int:
            try:
                children = window.query_tree().children
            except xerror.XError:
                return 0
            return len(children) + sum(count(child) for child in children)

        total = 0
        for window in conn.screen().root.query_tree().children:
            try:
                names = window.get_wm_class() or ()
            except xerror.XError:
                continue
            if any("trayer" in name.lower() for name in names):
                total += count(window)
        return total
    finally:
        conn.close()


def test_a_tray_host_that_starts_after_the_app_gets_its_icon(server: Xvfb, tmp_path: Path):
    env = app_env(tmp_path, display=server.display, CHAMBERLAIN_LOG="INFO",
                  CHAMBERLAIN_MEMORY__ENCRYPTION="off")  # fmt: skip
    with running_app(env) as app:
        # No tray: the chat opens instead (its window titled by Qt as "Chat — Chamberlain").
        server.wait_for_window("Chat — Chamberlain", app, timeout=60)  # type: ignore[arg-type]
        start_tray_host(server)
        empty = _docked(server)
        deadline = time.monotonic() + 20
        while _docked(server) <= empty:
            assert app.poll() is None, "the app ended"
            assert time.monotonic() < deadline, "the app's icon never docked in the late tray"
            time.sleep(0.1)
        app.terminate()
        app.wait(20)
        said = app.stderr.read() if app.stderr else ""
    assert "no system tray here: opening the chat window instead" in said
    assert "a system tray appeared: showing the tray icon" in said

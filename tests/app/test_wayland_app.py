"""The desktop app natively on Wayland: a real headless sway, run as a normal user, the app on
Qt's Wayland platform (tests/support/sway.py, tests/support/wayland_probe.py).

With no tray host the chat window carries the app's menu (its Quit ends the app); a tray host
that starts after the app (waybar, a StatusNotifierItem host, as panels start at login) is
picked up; the permission dialog floats above the tiled chat. Without sway, waybar or
bubblewrap these skip, and fail on CI (CI=true), where scripts/setup.sh --test installs them.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from tests.support import sway

MENU = [
    "Open &chat", "&Pause assistant", "&Revoke all permissions", "P&ermissions…", "&Memory…",
    "&Activity…", "&Settings…", "A&bout Chamberlain", "&Welcome…", "&Quit Chamberlain",
]  # fmt: skip


@pytest.fixture(scope="module")
def walk() -> dict[str, Any]:
    reason = sway.missing() or sway.portal_missing()
    if reason is None and shutil.which("waybar") is None:
        reason = "waybar is not installed (scripts/setup.sh --test installs it)"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return dict(sway.in_sway(["-m", "tests.support.wayland_probe", "app"], portal=True))


def test_the_app_runs_natively_on_wayland(walk: dict[str, Any]) -> None:
    assert walk["platform"] == "wayland"


def test_without_a_tray_the_chat_window_carries_the_apps_menu(walk: dict[str, Any]) -> None:
    assert walk["tray_at_start"] is False
    assert walk["chat_visible"] is True
    assert walk["menu_bar"] == ["&Chamberlain"]
    assert walk["menu"] == MENU
    # Quit from that menu ends the app.
    assert walk["quit"] == 0


def test_a_tray_host_that_starts_later_is_used(walk: dict[str, Any]) -> None:
    assert walk["tray_after_host"] is True
    assert walk["tray_shown"] is True
    assert walk["seconds_to_tray"] < 30


def test_the_permission_dialog_floats_above_the_tiled_chat(walk: dict[str, Any]) -> None:
    dialog = walk["dialog"]
    assert (dialog["type"], dialog["chat_type"]) == ("floating_con", "con")
    # sway gives a new window the keyboard whatever the app asks: documented, and safe, since
    # Deny is the default button (the cancelled question here is a denial).
    assert dialog["focused"] is True
    assert "allow=False" in dialog["answer"]

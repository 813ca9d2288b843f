"""The chat window on small screens at a large scale, as a person's desktop shows it.

Real parts: a real X server (Xvfb) of the screen's size with a real window manager (Openbox:
it frames windows with a title bar, as desktops do), and the real chat window in its own
process at QT_SCALE_FACTOR=1.5 (tests/support/chat_on_screen.py), which says where it is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.app import REPO, app_env
from tests.support.xvfb import running_xvfb

TITLE = "A conversation about " + "the budget for the third quarter and its many lines " * 6


def chat_on_screen(tmp_path: Path, width: int, height: int, *args: str) -> dict[str, list[int]]:
    tmp_path.mkdir(exist_ok=True)
    with running_xvfb(width, height) as server:
        server.start_window_manager(openbox=True)
        env = app_env(tmp_path, display=server.display, QT_SCALE_FACTOR="1.5")
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.chat_on_screen", *args],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    said: dict[str, list[int]] = json.loads(done.stdout.strip().splitlines()[-1])
    return said


def inside(rect: list[int], room: list[int]) -> bool:
    x, y, w, h = rect
    rx, ry, rw, rh = room
    return rx <= x and ry <= y and x + w <= rx + rw and y + h <= ry + rh


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1366, 768)])
def test_at_one_and_a_half_times_the_chat_opens_on_screen_with_the_message_box_and_stop(
    tmp_path, width, height
):
    said = chat_on_screen(tmp_path, width, height, "--title", TITLE)
    room = said["available"]
    assert room[3] <= height / 1.5 + 1  # the scale really is 1.5
    assert inside(said["frame"], room), said
    for control in ("input", "send", "stop"):
        assert inside(said[control], room), (control, said)


def test_a_long_title_does_not_make_the_window_wider(tmp_path):
    plain = chat_on_screen(tmp_path / "a", 1280, 800)
    titled = chat_on_screen(tmp_path / "b", 1280, 800, "--title", TITLE)
    assert titled["minimum_width"] == plain["minimum_width"]
    assert titled["frame"][2] == plain["frame"][2]

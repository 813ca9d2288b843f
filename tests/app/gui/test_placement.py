"""Windows fit the screen (app/windows/placement.py): at a large scale factor a window designed
taller than the screen's free area opened with Save and Close below its edge.

Real widgets offscreen, where Qt's screen is 800×600 (smaller than Settings' 820-pixel design
height, as a 900-pixel screen is at QT_SCALE_FACTOR=1.5).
"""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtWidgets import QApplication

from app.main import DesktopApp

WINDOWS = ("permissions", "memory", "activity", "settings")


@pytest.fixture
def shell(qapp, app_home, event_loop_qt, run, monkeypatch):
    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    made = DesktopApp(app_home, use_tray=True, connect_model=False)
    run(made.load())
    yield made
    made.quit()


@pytest.mark.parametrize("name", WINDOWS)
def test_a_window_opens_no_larger_than_the_screens_free_area(shell, run, name):
    window = shell.show_window(name)
    assert window is not None
    run(asyncio.sleep(0.1))
    room = QApplication.primaryScreen().availableGeometry()
    assert room.height() < 820  # the premise: Settings' own height would not fit
    assert window.width() <= room.width()
    assert window.height() <= room.height()

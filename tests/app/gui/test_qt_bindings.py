"""The Qt bindings themselves, as the app uses them for hours at a time.

PySide6 6.12.0 on CPython 3.11 drops one reference to None on every Qt call that returns
nothing; a tray app that ticks timers and resizes widgets runs out of them and aborts
("Fatal Python error: none_dealloc") after a few hours. pyproject.toml excludes that release.
"""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QWidget


def test_qt_calls_that_return_nothing_leave_references_to_none_alone(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    before = sys.getrefcount(None)
    for _ in range(2000):
        widget.resize(120, 80)
    assert sys.getrefcount(None) - before >= -10

"""Window sizes that fit the screen: a window asks for the size it is designed for and gets at
most what the screen's free area holds, so its buttons (Save, Close) are never below the screen's
edge at a large scale factor (QT_SCALE_FACTOR=1.5 on a 900-pixel screen).

It must never move a window: where a window goes is the window manager's choice.
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

# Room left for the window manager's frame and title bar, and a panel.
MARGIN = QSize(32, 72)


def fitted(window: QWidget, wanted: QSize) -> QSize:
    """`wanted`, cut down to the free area of the window's screen (the primary one until it is
    shown) less MARGIN."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return wanted
    room = screen.availableGeometry()
    return QSize(
        max(1, min(wanted.width(), room.width() - MARGIN.width())),
        max(1, min(wanted.height(), room.height() - MARGIN.height())),
    )


def resize_to_fit(window: QWidget, width: int, height: int) -> None:
    """Resize `window` to width×height, or less where the screen is smaller."""
    window.resize(fitted(window, QSize(width, height)))

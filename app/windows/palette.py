"""The colours that say "problem" and "fine", readable on the system's light or dark theme."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def problem_color(palette: QPalette) -> QColor:
    """A red that reads on the system's light or dark background."""
    return QColor("#ff8a80") if is_dark(palette) else QColor("#b3261e")


def good_color(palette: QPalette) -> QColor:
    return QColor("#81c995") if is_dark(palette) else QColor("#1e7b34")

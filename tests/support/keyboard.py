"""What a keyboard user meets in a window: its Alt-keys (mnemonics) and its Tab order.

    clashes(window)       -> the Alt-keys two controls of one window claim at once
    tab_walk(window)      -> the controls Tab visits, in order, from the first one
    out_of_reading_order(stops) -> each step of a walk that goes back up the screen or
                                   leftwards within a row

Real widgets only: the walk presses Tab with QTest on whatever has the focus, exactly as a
person's key would arrive, and reads QApplication.focusWidget() after each press.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QGroupBox,
    QLabel,
    QMenu,
    QTabWidget,
    QWidget,
)

# "&Save" -> "s"; "&&" is a literal ampersand, not a mnemonic.
_MNEMONIC = re.compile(r"(?<!&)&([^&\s])")


def mnemonic(text: str) -> str | None:
    """The Alt-key `text` claims ("Re&vert" -> "v"), lower-cased; None when it claims none."""
    found = _MNEMONIC.search(text.replace("&&", ""))
    return found.group(1).lower() if found else None


def _scope(widget: QWidget, window: QWidget) -> str:
    """Which part of the window `widget` belongs to: a tab widget's page (only one shows at a
    time), or the window itself (its chrome, always there)."""
    child: QWidget = widget
    parent = widget.parentWidget()
    while parent is not None and child is not window:
        if isinstance(parent.parentWidget(), QTabWidget) or parent.objectName() == (
            "qt_tabwidget_stackedwidget"
        ):
            tabs = parent.parentWidget()
            assert isinstance(tabs, QTabWidget)
            return f"{tabs.accessibleName() or id(tabs)} page {tabs.indexOf(child)}"
        child, parent = parent, parent.parentWidget()
    return "window"


def claims(window: QWidget) -> list[tuple[str, str, str]]:
    """(scope, key, what) for every control of `window` that claims an Alt-key, shown or not
    (what a state hides, another state shows next to the rest): buttons, labels, group boxes,
    tab titles."""
    found: list[tuple[str, str, str]] = []
    for widget in [window, *window.findChildren(QWidget)]:
        if widget is not window and widget.window() is not window:
            continue  # a dialog of its own: its keys are its own
        text = ""
        if isinstance(widget, QAbstractButton):
            text = widget.text()
        elif isinstance(widget, QLabel) and widget.textFormat() != Qt.TextFormat.PlainText:
            text = widget.text() if widget.buddy() is not None else ""
        elif isinstance(widget, QGroupBox):
            text = widget.title()
        key = mnemonic(text)
        if key is not None:
            found.append((_scope(widget, window), key, text))
        if isinstance(widget, QTabWidget):
            for index in range(widget.count()):
                key = mnemonic(widget.tabText(index))
                if key is not None:
                    found.append(("window", key, f"tab {widget.tabText(index)}"))
    return found


def clashes(window: QWidget) -> dict[str, list[str]]:
    """Alt-keys claimed twice within what shows at once: a tab page with the window's chrome."""
    by_scope: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for scope, key, text in claims(window):
        by_scope[scope].append((key, text))
    chrome = by_scope.pop("window", [])
    found: dict[str, list[str]] = {}
    for scope, own in [("window", []), *by_scope.items()]:
        seen: dict[str, list[str]] = defaultdict(list)
        for key, text in [*chrome, *own]:
            seen[key].append(text)
        for key, texts in seen.items():
            if len(texts) > 1:
                found[f"Alt+{key.upper()} ({scope})"] = texts
    return found


def unbound_labels(window: QWidget) -> list[str]:
    """Labels that show an Alt-key but have no buddy to give the focus to (the key does
    nothing)."""
    return [
        label.text()
        for label in window.findChildren(QLabel)
        if label.textFormat() != Qt.TextFormat.PlainText
        and mnemonic(label.text()) is not None
        and label.buddy() is None
        and "<" not in label.text()
    ]


def menu_clashes(menu: QMenu) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = defaultdict(list)
    for action in menu.actions():
        key = mnemonic(action.text())
        if key is not None:
            seen[key].append(action.text())
    return {f"Alt+{k.upper()}": texts for k, texts in seen.items() if len(texts) > 1}


def without_mnemonic(actions: Iterable[QAction]) -> list[str]:
    return [a.text() for a in actions if not a.isSeparator() and mnemonic(a.text()) is None]


def tab_stops(window: QWidget) -> list[QWidget]:
    """The controls of `window` on screen now that Tab should reach: shown, enabled, taking
    the focus by Tab."""
    wanted = Qt.FocusPolicy.TabFocus
    return [
        widget
        for widget in window.findChildren(QWidget)
        if widget.isVisible()
        and widget.isEnabled()
        and widget.window() is window
        and widget.focusPolicy() & wanted == wanted
        and widget.focusProxy() is None
    ]


def first_stop(window: QWidget) -> QWidget:
    """The control a reader meets first: in the top row, the leftmost (as laid out, however far
    a scroll area is scrolled)."""
    return min(tab_stops(window), key=functools.cmp_to_key(_reading_order))


def tab_walk(window: QWidget, first: QWidget, limit: int = 80) -> list[QWidget]:
    """Give `first` the focus, then press Tab until the focus comes back to it (or leaves the
    window); the controls visited, `first` included, in order."""
    window.activateWindow()
    first.setFocus(Qt.FocusReason.TabFocusReason)
    QApplication.processEvents()
    stops = [first]
    for _ in range(limit):
        current = QApplication.focusWidget()
        assert current is not None, "the focus left the window"
        QTest.keyClick(current, Qt.Key.Key_Tab)
        QApplication.processEvents()
        now = QApplication.focusWidget()
        if now is None or now is first or now.window() is not window:
            return stops
        if now is current:
            raise AssertionError(f"Tab is kept by {name(now)} (a keyboard trap)")
        stops.append(now)
    raise AssertionError(f"Tab did not come back to the first control in {limit} presses")


def _ancestors(widget: QWidget) -> list[QWidget]:
    chain = [widget]
    parent = widget.parentWidget()
    while parent is not None:
        chain.append(parent)
        parent = parent.parentWidget()
    return chain


def _branches(a: QWidget, b: QWidget) -> tuple[QRect, QRect] | None:
    """Where `a` and `b` sit relative to each other, as their nearest common container lays
    them out: the rectangles of its two children that hold them. A pane beside another is read
    as a whole column before the next, and a scroll area's content counts from its top, however
    far it is scrolled. None when one holds the other (a list, then the rows inside it)."""
    up_a, up_b = _ancestors(a), _ancestors(b)
    common = next(w for w in up_a if w in up_b)
    if common is a or common is b:
        return None
    branch_a = up_a[up_a.index(common) - 1]
    branch_b = up_b[up_b.index(common) - 1]
    return branch_a.geometry(), branch_b.geometry()


def _reading_order(a: QWidget, b: QWidget) -> int:
    """-1 when `a` is read before `b`, 1 when after, 0 when one holds the other."""
    branches = _branches(a, b)
    if branches is None:
        return 0
    first, second = branches
    if first.top() < second.bottom() and second.top() < first.bottom():
        return -1 if first.left() < second.left() else 1
    return -1 if first.top() < second.top() else 1


def out_of_reading_order(stops: list[QWidget]) -> list[str]:
    """Each step of the walk that goes back up the screen, or leftwards within a row (top to
    bottom, then left to right). Two controls are in one row where they overlap vertically."""
    wrong: list[str] = []
    for before, after in itertools.pairwise(stops):
        branches = _branches(before, after)
        if branches is None:
            continue
        a, b = branches
        same_row = a.top() < b.bottom() and b.top() < a.bottom()
        if same_row:
            if b.left() < a.left():
                wrong.append(f"{name(before)} -> {name(after)} goes left within a row")
        elif b.top() < a.top():
            wrong.append(f"{name(before)} -> {name(after)} goes back up")
    return wrong


def name(widget: QWidget) -> str:
    text = widget.accessibleName()
    if not text and isinstance(widget, QAbstractButton):
        text = widget.text()
    return f"{type(widget).__name__}({text or widget.objectName()!r})"

"""The tray: its menu, its icon per state, pausing, flashing, and the SVG icons.

Real parts: real Qt widgets offscreen, a real Session on a real home behind the QtSession.
"""

from __future__ import annotations

import pytest
from PySide6.QtGui import QImage

from app.qt_session import ASKING, IDLE, PAUSED, THINKING, TOOL, Paused, QtSession
from app.tray import Tray, icon, icon_for
from tests.app.gui.conftest import make_session

STATES = [(IDLE, ""), (THINKING, ""), (ASKING, "file_read"), (PAUSED, "")] + [
    (TOOL, cap)
    for cap in ("file_read", "system_execute", "screen_read", "web_access", "system_read")
]


def image(qicon, size: int = 64) -> QImage:
    return qicon.pixmap(size, size).toImage()


@pytest.fixture
def tray(qapp, app_home):
    assistant = QtSession(make_session(app_home))
    made = Tray(assistant)
    yield made
    assistant.close()


def test_the_menu_offers_what_the_issues_list_in_order(tray):
    texts = [a.text().replace("&", "") for a in tray.menu.actions() if not a.isSeparator()]
    assert texts == [
        "Open chat",
        "Pause assistant",
        "Revoke all permissions",
        "Permissions…",
        "Memory…",
        "Activity…",
        "Settings…",
        "About Chamberlain",
        "Welcome…",
        "Quit Chamberlain",
    ]


@pytest.mark.parametrize(("state", "detail"), STATES)
def test_each_state_has_its_own_icon(tray, state, detail):
    tray.show_state(state, detail)
    assert image(tray.icon.icon()) == image(icon_for(state, detail))
    others = {(s, d) for s, d in STATES if image(icon_for(s, d)) != image(icon_for(state, detail))}
    # Only the states drawn with the same glyph share an icon (file tools share the folder).
    assert len(others) >= len(STATES) - 2


def test_the_tooltip_says_in_words_what_the_tool_in_use_is_doing(tray):
    tray.show_state(TOOL, "system_execute")
    assert tray.icon.toolTip() == "Chamberlain — running a command"
    tray.show_state(TOOL, "file_read")
    assert tray.icon.toolTip() == "Chamberlain — reading files"
    tray.show_state(TOOL, "web_access")
    assert "_" not in tray.icon.toolTip()


def test_pause_from_the_menu_pauses_the_assistant_and_shows_it(tray, run):
    tray.actions["pause"].trigger()
    assert tray.assistant.paused
    assert tray.shown_state == (PAUSED, "")
    # Ticked, and still saying what ticking it means: never a ticked "Resume assistant".
    assert tray.actions["pause"].isChecked()
    assert tray.actions["pause"].text() == "&Pause assistant"
    with pytest.raises(Paused):
        run(tray.assistant.ask("list files in /tmp"))
    tray.actions["pause"].trigger()
    assert not tray.assistant.paused
    assert tray.shown_state == (IDLE, "")
    assert not tray.actions["pause"].isChecked()
    assert tray.actions["pause"].text() == "&Pause assistant"


def test_the_icon_flashes_while_a_permission_question_waits(tray, qtbot):
    tray.set_waiting(1)
    assert tray.flashing
    seen = set()
    for _ in range(6):
        qtbot.wait(250)
        seen.add(image(tray.icon.icon()).cacheKey())
        seen.add(bytes(image(tray.icon.icon()).constBits()))
    assert len(seen) > 2  # it alternates
    tray.set_waiting(0)
    assert not tray.flashing
    assert image(tray.icon.icon()) == image(icon_for(IDLE))


@pytest.mark.parametrize("name", ["idle", "thinking", "asking", "paused", "tool-command"])
def test_the_svg_icons_render_sharp_at_hidpi_sizes(qapp, name):
    for size in (16, 32, 64, 128, 256):
        pixmap = icon(name).pixmap(size, size)
        assert (pixmap.width(), pixmap.height()) == (size, size)
    big = image(icon(name), 256)
    # A vector icon has hard edges at 256 px: most pixels are fully opaque or fully clear.
    alphas = [big.pixelColor(x, y).alpha() for x in range(0, 256, 4) for y in range(0, 256, 4)]
    crisp = sum(1 for a in alphas if a in (0, 255))
    assert crisp / len(alphas) > 0.9

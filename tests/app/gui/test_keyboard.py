"""The windows from the keyboard alone: every Alt-key means one thing, Tab follows the screen.

A real DesktopApp (real session, real memory store, real Qt widgets offscreen on a qasync loop)
opens each of its windows as the tray would; the checks read what a person meets: the Alt-keys
the controls claim (underlined letters, tab titles included) and where Tab takes the focus, key
press by key press (tests/support/keyboard.py). A new control that takes an Alt-key already in
use, or a layout change that makes Tab jump about, fails here.
"""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QTabWidget, QWidget

from app.main import DesktopApp
from app.passphrase import PassphraseDialog
from memory.types import Sensitivity
from tests.support import keyboard

WINDOWS = ("chat", "permissions", "memory", "activity", "settings", "about", "welcome")


@pytest.fixture
def shell(qapp, app_home, event_loop_qt, run, monkeypatch):
    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    made = DesktopApp(app_home, use_tray=True, connect_model=False)
    run(made.load())
    store = made.assistant.session.memory
    assert store is not None
    # Something in each of Memory's lists, so their rows of buttons are live.
    store.add("I live in Lisbon", sensitivity=Sensitivity.LOW)
    store.add("My doctor is Dr Ferreira", sensitivity=Sensitivity.PERSONAL)
    store.add_anchor("Answer in British English")
    yield made
    made.quit()


def opened(shell: DesktopApp, name: str, run) -> QWidget:
    """The window `name`, opened as the tray opens it, once what it reads has come in."""
    window = shell.show_window(name)
    assert window is not None
    run(asyncio.sleep(0.2))
    return window


def pages(window: QWidget) -> list[int | None]:
    """Each page of the window's tabs in turn (None: a window without tabs)."""
    tabs = window.findChildren(QTabWidget)
    return list(range(tabs[0].count())) if tabs else [None]


@pytest.mark.parametrize("name", WINDOWS)
def test_no_two_controls_of_a_window_share_an_alt_key(shell, run, name):
    window = opened(shell, name, run)
    assert keyboard.clashes(window) == {}
    assert keyboard.unbound_labels(window) == []  # an underlined letter that does nothing


def test_settings_has_an_alt_key_for_what_is_changed_most_and_each_reaches_its_control(shell, run):
    """Alt+S meant three things here (Model server, Keep screenshots, Save)."""
    window = opened(shell, "settings", run)
    keys = {key: text for _, key, text in keyboard.claims(window)}
    assert keys["s"] == "&Save"
    assert keys["m"] == "&Model server:"
    assert keys["w"] == "Open chat &with:"
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    assert QApplication.focusWidget() is window.shortcut_edit
    QTest.keyClick(window, Qt.Key.Key_M, Qt.KeyboardModifier.AltModifier)
    assert QApplication.focusWidget() is window.url_choice


def test_memory_keeps_one_meaning_per_alt_key_on_every_tab(shell, run):
    window = opened(shell, "memory", run)
    scopes = {scope for scope, _, _ in keyboard.claims(window)}
    assert len(scopes) == 4  # the window's own keys, and each of its three tabs
    assert keyboard.clashes(window) == {}


@pytest.mark.parametrize("new", [True, False])
def test_the_passphrase_dialog_has_one_meaning_per_alt_key(qapp, qtbot, new):
    dialog = PassphraseDialog(new=new)
    qtbot.addWidget(dialog)
    assert keyboard.clashes(dialog) == {}
    assert {key for _, key, _ in keyboard.claims(dialog)} >= {"n"}  # Not now


def test_every_item_of_the_tray_menu_has_its_own_alt_key(shell):
    menu = shell.tray.menu
    assert keyboard.without_mnemonic(menu.actions()) == []
    assert keyboard.menu_clashes(menu) == {}


@pytest.mark.parametrize("name", WINDOWS)
def test_tab_goes_through_a_window_as_it_reads_top_to_bottom_then_left_to_right(shell, run, name):
    window = opened(shell, name, run)
    for page in pages(window):
        if page is not None:
            window.findChildren(QTabWidget)[0].setCurrentIndex(page)
            QApplication.processEvents()
        stops = keyboard.tab_walk(window, keyboard.first_stop(window))
        assert keyboard.out_of_reading_order(stops) == [], f"page {page}"
        missed = [keyboard.name(w) for w in keyboard.tab_stops(window) if w not in stops]
        assert missed == [], f"page {page}: Tab never reaches these"


def test_tab_reaches_the_mcp_server_editor_in_reading_order(shell, run):
    window = opened(shell, "settings", run)
    window.mcp.add_button.click()
    QApplication.processEvents()
    assert window.mcp.editor.isVisible()
    stops = keyboard.tab_walk(window, keyboard.first_stop(window))
    assert window.mcp.name_edit in stops
    assert window.mcp.save_server_button in stops
    assert keyboard.out_of_reading_order(stops) == []

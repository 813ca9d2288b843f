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
from PySide6.QtWidgets import QApplication, QGridLayout, QPushButton, QTabWidget, QWidget

from app.main import DesktopApp
from app.passphrase import PassphraseDialog
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.settings_seal import PendingChange
from broker.types import GrantMode
from memory.types import Sensitivity
from tests.app.gui.conftest import until
from tests.support import keyboard

WINDOWS = ("chat", "permissions", "memory", "activity", "settings", "about", "welcome")


class ByFolder(RulePrompter):
    """Documents for five minutes, Music always, anything else no: one row in each of the
    Permissions window's lists."""

    def decide(self, request: PermissionRequest) -> PromptDecision:
        if "Documents" in request.scope:
            return PromptDecision(allow=True, mode=GrantMode.TIMED, duration_s=300)
        if "Music" in request.scope:
            return PromptDecision(allow=True, mode=GrantMode.ALWAYS)
        return PromptDecision(allow=False)


@pytest.fixture
def shell(qapp, app_home, event_loop_qt, run, monkeypatch):
    """The app with something in every list, so each window shows its rows and their buttons."""
    monkeypatch.setenv("CHAMBERLAIN_MEMORY__ENCRYPTION", "off")
    user = app_home.parent / "user"
    for folder in ("Documents", "Music", "Pictures"):
        (user / folder).mkdir()
        (user / folder / "notes.txt").write_text("hello\n")
    made = DesktopApp(app_home, prompter=ByFolder(), use_tray=True, connect_model=False)
    run(made.load())
    store = made.assistant.session.memory
    assert store is not None
    store.add("I live in Lisbon", sensitivity=Sensitivity.LOW)
    store.add("My doctor is Dr Ferreira", sensitivity=Sensitivity.PERSONAL)
    store.add_anchor("Answer in British English")

    async def from_the_chat() -> None:
        # Asked in the chat, as a person would: a past conversation in its list, replies in
        # its transcript, rows in Activity and Permissions.
        chat = made.show_window("chat")
        for folder in ("Documents", "Music", "Pictures"):
            assert await chat.send(f"list files in {user / folder}") is not None
        await until(lambda: chat.conversation_list.count() == 1)
        chat.conversation_list.setCurrentRow(0)

    run(from_the_chat())
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
    assert window.shortcut_edit.visibleRegion().isEmpty()  # far down the window at first
    QTest.keyClick(window, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    assert QApplication.focusWidget() is window.shortcut_edit
    QApplication.processEvents()
    assert not window.shortcut_edit.visibleRegion().isEmpty()  # scrolled into sight
    QTest.keyClick(window, Qt.Key.Key_M, Qt.KeyboardModifier.AltModifier)
    assert QApplication.focusWidget() is window.url_choice
    QApplication.processEvents()
    assert not window.url_choice.visibleRegion().isEmpty()


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


@pytest.mark.parametrize("new", [True, False])
def test_tab_goes_through_the_passphrase_dialog_in_reading_order(qapp, qtbot, new):
    dialog = PassphraseDialog(new=new)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    stops = keyboard.tab_walk(dialog, keyboard.first_stop(dialog))
    assert stops[0] is dialog.first  # the passphrase first
    assert keyboard.out_of_reading_order(stops) == []
    assert [w for w in keyboard.tab_stops(dialog) if w not in stops] == []


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
        assert keyboard.out_of_reading_order(stops) == [], [keyboard.name(w) for w in stops]
        missed = [keyboard.name(w) for w in keyboard.tab_stops(window) if w not in stops]
        assert missed == [], f"page {page}: Tab never reaches these"


def test_the_walk_notices_a_tab_order_that_reads_down_a_column_first(qtbot):
    """The check itself can fail: a 2×2 grid walked A, C, B, D goes back up from C to B."""
    window = QWidget()
    grid = QGridLayout(window)
    a, b, c, d = (QPushButton(text) for text in "ABCD")
    for button, (row, column) in zip((a, b, c, d), ((0, 0), (0, 1), (1, 0), (1, 1)), strict=True):
        grid.addWidget(button, row, column)
    qtbot.addWidget(window)
    window.show()
    assert keyboard.out_of_reading_order(keyboard.tab_walk(window, a)) == []
    QWidget.setTabOrder(a, c)
    QWidget.setTabOrder(c, b)
    QWidget.setTabOrder(b, d)
    assert keyboard.out_of_reading_order(keyboard.tab_walk(window, a)) == [
        "QPushButton('C') -> QPushButton('B') goes back up"
    ]


def test_tab_reaches_the_mcp_server_editor_and_the_outside_changes_in_reading_order(shell, run):
    window = opened(shell, "settings", run)
    # A change another program made, waiting at the top with Discard and Confirm.
    window.outside.show_pending(
        [PendingChange("tools.unsandboxed_commands", value=True, in_use=False, confirmed=False)]
    )
    window.mcp.add_button.click()
    QApplication.processEvents()
    assert window.mcp.editor.isVisible()
    stops = keyboard.tab_walk(window, keyboard.first_stop(window))
    assert window.mcp.name_edit in stops
    assert window.mcp.save_server_button in stops
    assert stops[:2] == [window.outside.discard_button, window.outside.confirm_button]
    assert keyboard.out_of_reading_order(stops) == []

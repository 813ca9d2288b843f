"""The memory passphrase, asked once per start in a dialog when there is no keyring.

Real parts: the real broker key derivation and SQLCipher memory file under a tmp home (the
keyring is the failing backend, as on a desktop without one), real dialogs offscreen, the app's
DesktopApp on a qasync loop. The person typing is played by setting the dialog's fields.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from PySide6.QtWidgets import QApplication, QLabel

from app.main import DesktopApp
from app.passphrase import ENCRYPTION_OFF, PassphraseDialog
from app.permission_prompt import GuiPrompter
from app.smoke import DialogAnswerer
from broker.settings import load_settings
from tests.app.gui.conftest import until


def allowing() -> GuiPrompter:
    """The smoke test's prompter: each question in the real dialog, answered "Allow once"."""
    return GuiPrompter(present=DialogAnswerer())


async def answer(passphrase: str, again: str | None = None, *, off: bool = False) -> str:
    """Wait for the passphrase dialog, type into it, press a button; returns its message."""
    for _ in range(400):
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, PassphraseDialog) and widget.isVisible():
                message = widget.problem.text() if widget.problem.isVisible() else ""
                if off:
                    assert widget.off is not None
                    widget.off.click()  # shows the warning first
                    assert widget.warning.isVisible()
                    widget.off.click()  # confirms
                    return message
                widget.first.setText(passphrase)
                widget.second.setText(passphrase if again is None else again)
                widget.ok.click()
                return message
        await asyncio.sleep(0.02)
    raise AssertionError("no passphrase dialog appeared")


@pytest.fixture
def shell(qapp, app_home, event_loop_qt):
    made = DesktopApp(app_home, prompter=allowing(), use_tray=True, connect_model=False)
    yield made
    made.quit()


def test_a_new_memory_is_created_with_the_passphrase_typed_in_the_dialog(shell, run, app_home):
    async def start() -> None:
        answering = asyncio.ensure_future(answer("correct horse battery"))
        await shell.load()
        await answering

    run(start())
    session = shell.assistant.session
    assert session.memory is not None
    assert (app_home / "memory.keying").read_text().strip() == "passphrase"
    assert not (app_home / "memory.db").read_bytes().startswith(b"SQLite format 3")


def test_a_new_passphrase_typed_differently_twice_is_refused_in_the_dialog(qtbot):
    dialog = PassphraseDialog(new=True)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.first.setText("one thing")
    dialog.second.setText("another")
    dialog.ok.click()
    assert dialog.isVisible()
    assert "not the same" in dialog.problem.text()
    assert dialog.second.text() == ""


def test_turning_encryption_off_warns_first_and_then_stores_memory_unencrypted(
    shell, run, app_home
):
    async def start() -> None:
        answering = asyncio.ensure_future(answer("", off=True))
        await shell.load()
        await answering

    run(start())
    assert shell.assistant.session.memory is not None
    assert load_settings(app_home).memory.encryption == "off"
    assert (app_home / "memory.db").read_bytes().startswith(b"SQLite format 3")


def test_a_wrong_passphrase_is_asked_again_and_says_so(qapp, app_home, run):
    first = DesktopApp(app_home, prompter=allowing(), use_tray=True, connect_model=False)

    async def create() -> None:
        answering = asyncio.ensure_future(answer("the right one"))
        await first.load()
        await answering

    run(create())
    first.quit()

    second = DesktopApp(app_home, prompter=allowing(), use_tray=True, connect_model=False)

    async def reopen() -> list[str]:
        async def wrong_then_right() -> list[str]:
            return [await answer("a typo"), await answer("the right one")]

        answering = asyncio.ensure_future(wrong_then_right())
        await second.load()
        return await answering

    messages = run(reopen())
    assert messages[0] == ""
    assert messages[1]  # the second dialog says the first one did not open it
    assert second.assistant.session.memory is not None
    second.quit()


def test_not_now_runs_without_memory_and_says_why(shell, run):
    async def start() -> None:
        async def later() -> None:
            for _ in range(400):
                for widget in QApplication.topLevelWidgets():
                    if isinstance(widget, PassphraseDialog) and widget.isVisible():
                        widget.later.click()
                        return
                await asyncio.sleep(0.02)

        answering = asyncio.ensure_future(later())
        await shell.load()
        await answering

    run(start())
    session = shell.assistant.session
    assert session.memory is None
    # Said in the app's terms: no terminal to run in, no environment variable to set.
    assert session.memory_problem == (
        "memory is encrypted and there is no system keyring here: quit Chamberlain and start it "
        "again to type the memory passphrase when it asks, or start a system keyring (GNOME "
        "Keyring, KWallet or KeePassXC's Secret Service)"
    )


def test_the_encryption_off_result_code_is_distinct(qtbot):
    assert ENCRYPTION_OFF not in (0, 1)


async def dialog_on_screen() -> PassphraseDialog:
    for _ in range(400):
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, PassphraseDialog) and widget.isVisible():
                return widget
        await asyncio.sleep(0.02)
    raise AssertionError("no passphrase dialog appeared")


def test_quit_while_the_passphrase_dialog_is_open_ends_at_once_and_creates_no_memory(
    qapp, app_home, run
):
    """Quit used to wait for ever here: it waits for the io thread, which waited for this very
    dialog, which needs the loop Quit was holding. (tests/app/test_app_signals.py does the same
    with SIGTERM to the real app.)"""
    shell = DesktopApp(app_home, prompter=allowing(), use_tray=True, connect_model=False)

    async def quit_during_the_dialog() -> None:
        loading = asyncio.ensure_future(shell.load())
        dialog = await dialog_on_screen()
        shell.quit()  # returns only once the io thread has ended
        assert shell.finished.done()
        with contextlib.suppress(RuntimeError):  # the io work after memory found it closed
            await loading
        await until(lambda: not dialog.isVisible())

    run(quit_during_the_dialog())
    session = shell.assistant.session
    assert session.memory is None
    assert not (app_home / "memory.db").exists()
    assert not (app_home / "memory.keying").exists()


def test_a_keyring_that_did_not_answer_is_named_in_the_new_passphrase_dialog(
    shell, run, monkeypatch
):
    """The keyring's deadline itself is tested in tests/broker/test_keys.py with a real hanging
    backend; here the broker already knows it did not answer, as it does after that."""
    from broker import keys

    monkeypatch.setattr(keys, "_stalled", "the system keyring did not answer within 5 s")

    async def start() -> list[str]:
        async def read_and_close() -> list[str]:
            dialog = await dialog_on_screen()
            texts = [label.text() for label in dialog.findChildren(QLabel) if label.isVisible()]
            dialog.later.click()
            return texts

        reading = asyncio.ensure_future(read_and_close())
        await shell.load()
        return await reading

    texts = run(start())
    assert any("The system keyring did not answer" in text for text in texts)
    assert not any("There is no system keyring here" in text for text in texts)
    assert shell.assistant.session.memory is None

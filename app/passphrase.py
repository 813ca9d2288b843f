"""Asking for the memory passphrase in a dialog, once per start, when there is no keyring.

The broker asks for a passphrase through a callback (`ask_passphrase(prompt) -> str | None`) on
whichever thread opens memory; `PassphraseAsker` answers it from a dialog on the UI thread and
blocks only the calling (io) thread meanwhile. A new memory's passphrase is typed twice in one
dialog; the dialog says plainly that it cannot be recovered, and offers to turn encryption off
instead, with the warning that comes with it.

The io thread waits on the UI loop here, so the wait must end whenever the app does: Quit (the
tray, SIGTERM at logout) calls `PassphraseAsker.cancel()` before it waits for the io thread,
which then gets no passphrase (memory stays closed, nothing is created) instead of waiting for
a dialog the stopped loop can no longer show. It must never be answered on the UI thread itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from dataclasses import dataclass

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app import async_dialog

log = logging.getLogger("chamberlain.app.passphrase")

# The dialog's result codes besides Accepted / Rejected.
ENCRYPTION_OFF = 2

NEW_TEXT = (
    "Chamberlain keeps what it remembers for you encrypted on this computer. There is no "
    "system keyring here to hold the key, so choose a passphrase. You will be asked for it "
    "once each time Chamberlain starts.\n\nIt cannot be recovered: if you forget it, what "
    "was remembered is lost."
)
# The same, when a keyring is there but did not answer (broker.keys.keyring_stalled()).
STALLED_TEXT = (
    "Chamberlain keeps what it remembers for you encrypted on this computer. The system "
    "keyring did not answer, so its key cannot be kept there this time: choose a passphrase "
    "instead. You will be asked for it once each time Chamberlain starts.\n\nIt cannot be "
    "recovered: if you forget it, what was remembered is lost."
)
EXISTING_TEXT = (
    "Type the passphrase you chose for Chamberlain's memory. Until you do, nothing is "
    "recalled or remembered, and past conversations stay closed."
)
OFF_WARNING = (
    "Turning encryption off stores your memory and conversations as plain text that anyone "
    "with access to your files can read. Choose this only on a computer nobody else uses."
)


class PassphraseDialog(QDialog):
    """New: two fields that must match, and "turn encryption off". Existing: one field."""

    TITLE = "Memory passphrase"  # Qt adds " — Chamberlain" (app/windows/words.py)

    def __init__(
        self,
        new: bool,
        message: str = "",
        parent: QWidget | None = None,
        *,
        keyring_stalled: bool = False,
    ) -> None:
        super().__init__(parent)
        self.new = new
        self.setWindowTitle(self.TITLE)
        self.setMinimumWidth(460)
        layout = QVBoxLayout(self)
        intro = QLabel((STALLED_TEXT if keyring_stalled else NEW_TEXT) if new else EXISTING_TEXT)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.problem = QLabel(message)
        self.problem.setWordWrap(True)
        self.problem.setVisible(bool(message))
        self.problem.setStyleSheet("font-weight: bold")
        layout.addWidget(self.problem)
        self.first = QLineEdit()
        self.first.setEchoMode(QLineEdit.EchoMode.Password)
        self.first.setPlaceholderText("Passphrase")
        self.first.setAccessibleName("Memory passphrase")
        layout.addWidget(self.first)
        self.second = QLineEdit()
        self.second.setEchoMode(QLineEdit.EchoMode.Password)
        self.second.setPlaceholderText("The same passphrase again")
        self.second.setAccessibleName("Memory passphrase, again")
        self.second.setVisible(new)
        layout.addWidget(self.second)
        buttons = QDialogButtonBox()
        self.ok = buttons.addButton(
            "&Create memory" if new else "&Open memory", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.ok.setAccessibleName(self.ok.text().replace("&", ""))
        self.later = buttons.addButton("&Not now", QDialogButtonBox.ButtonRole.RejectRole)
        self.later.setAccessibleName("Not now: run without memory this time")
        self.off: QPushButton | None = None
        if new:
            self.off = buttons.addButton(
                "Turn encryption o&ff…", QDialogButtonBox.ButtonRole.ResetRole
            )
            self.off.setAccessibleName("Turn encryption off")
            self.off.setAccessibleDescription(OFF_WARNING)
            self.off.clicked.connect(self._confirm_off)
        self.ok.clicked.connect(self._accept)
        self.later.clicked.connect(self.reject)
        layout.addWidget(buttons)
        self.warning = QLabel(OFF_WARNING)
        self.warning.setWordWrap(True)
        self.warning.setVisible(False)
        layout.addWidget(self.warning)
        self.first.setFocus(Qt.FocusReason.OtherFocusReason)

    def passphrase(self) -> str:
        return self.first.text()

    def _accept(self) -> None:
        if not self.first.text():
            self._say("Type a passphrase, or choose “Not now”.")
            return
        if self.new and self.first.text() != self.second.text():
            self._say("The two passphrases are not the same. Type them again.")
            self.second.clear()
            self.second.setFocus()
            return
        self.accept()

    def _confirm_off(self) -> None:
        assert self.off is not None
        if not self.warning.isVisible():
            self.warning.setVisible(True)
            self.off.setText("Yes, store memory unencrypted")
            self.off.setAccessibleName("Yes, store memory unencrypted")
            return
        self.done(ENCRYPTION_OFF)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        # Tab goes through the buttons as they sit, left to right: where the box puts each one
        # depends on the desktop's button order, and Qt's own order is the order they were added.
        buttons = [b for b in (self.off, self.ok, self.later) if b is not None]
        buttons.sort(key=lambda button: button.mapTo(self, QPoint(0, 0)).x())
        before: QWidget = self.second if self.new else self.first
        for button in buttons:
            QWidget.setTabOrder(before, button)
            before = button

    def _say(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.setVisible(True)


@dataclass
class PassphraseOutcome:
    passphrase: str | None = None
    encryption_off: bool = False


class PassphraseAsker:
    """The broker's `ask_passphrase` callback, answered by dialogs on the UI thread.

    Create it on the UI thread; it is called on the io thread, and the UI loop shows the dialog
    meanwhile. A new memory asks twice (the broker confirms it); both answers come from the one
    dialog. `cancel()` (on any thread) ends the question at once: the dialog closes and the
    waiting thread gets None, as for "Not now".
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, new: bool) -> None:
        self.loop = loop
        self.new = new
        self.outcome = PassphraseOutcome()
        self._confirming: str | None = None
        self._asked = 0
        self._ui_thread = threading.get_ident()
        self._lock = threading.Lock()
        self._cancelled = False
        self._waiting: concurrent.futures.Future[PassphraseOutcome] | None = None

    def __call__(self, prompt: str) -> str | None:
        if self._confirming is not None:
            answer, self._confirming = self._confirming, None
            return answer
        if threading.get_ident() == self._ui_thread:
            # Waiting here would freeze the very loop that must show the dialog.
            log.error("the memory passphrase was asked on the UI thread; memory stays closed")
            return None
        message = "" if self._asked == 0 else prompt.strip()
        self._asked += 1
        with self._lock:
            if self._cancelled:
                return None
            future = asyncio.run_coroutine_threadsafe(self._ask(message), self.loop)
            self._waiting = future
        try:
            outcome = future.result()
        except concurrent.futures.CancelledError:
            log.info("the passphrase question was withdrawn: Chamberlain is quitting")
            return None
        finally:
            with self._lock:
                self._waiting = None
        self.outcome = outcome
        if outcome.passphrase and self.new:
            self._confirming = outcome.passphrase
        return outcome.passphrase

    def cancel(self) -> None:
        """Withdraw the question (the app is quitting): the waiting thread gets None now, and
        the dialog closes as soon as the loop turns again; a later call asks nothing."""
        with self._lock:
            self._cancelled = True
            waiting = self._waiting
        if waiting is not None:
            # Wakes the io thread at once, and cancels the dialog's task on the loop, which
            # rejects (closes) the dialog.
            waiting.cancel()

    async def _ask(self, message: str) -> PassphraseOutcome:
        from broker.keys import keyring_stalled

        dialog = PassphraseDialog(self.new, message, keyring_stalled=keyring_stalled() is not None)
        result = await async_dialog.show_dialog(dialog)
        outcome = PassphraseOutcome()
        if result == ENCRYPTION_OFF:
            outcome.encryption_off = True
        elif result == QDialog.DialogCode.Accepted.value:
            outcome.passphrase = dialog.passphrase()
        dialog.deleteLater()
        return outcome

"""`chamberlain --smoke-test`: the app starts, every window opens, one request runs, it quits.

Run offscreen in a throwaway home (see app.main). It creates a memory with a passphrase through
the real passphrase dialog, checks the welcome window opened by itself (the home's first start),
opens the chat, Permissions, Memory, Activity, Settings, About and welcome windows and renders
each, closes the welcome (which notes in the home that it was seen), asks "list files in
~/Documents" through the real session, whose permission question opens the real permission
dialog (through the real GuiPrompter) and is answered "Allow once" there, checks the reply
names the file it put there, closes everything and exits 0. Anything that fails is printed on
stderr with exit 1: a build is not done until this passes from the installed files.

Its result must never depend on the caller's environment: the caller's CHAMBERLAIN_* variables
(a memory passphrase, any setting) are removed before it starts (`clear_caller_settings`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QApplication

from app.permission_prompt import Choice, QuestionView
from broker.permissions import PermissionRequest

if TYPE_CHECKING:
    from app.main import DesktopApp

log = logging.getLogger("chamberlain.app.smoke")

SMOKE_PASSPHRASE = "smoke-test passphrase"
MARKER = "chamberlain-smoke-test.txt"
# The caller's variables the smoke test keeps: they change what is logged, not what happens.
KEPT_VARIABLES = frozenset({"CHAMBERLAIN_LOG"})


def clear_caller_settings(environ: MutableMapping[str, str]) -> list[str]:
    """Remove every CHAMBERLAIN_* variable but those in KEPT_VARIABLES from `environ`, in any
    case (settings variables match without case); returns the names removed."""
    removed = [
        name
        for name in environ
        if name.upper().startswith("CHAMBERLAIN_") and name.upper() not in KEPT_VARIABLES
    ]
    for name in removed:
        del environ[name]
    return removed


class DialogAnswerer:
    """Shows each question in the real permission dialog and answers "Allow once" there, as a
    person would; keeps what was asked and whether each dialog rendered."""

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []
        self.unrendered: list[str] = []

    async def __call__(self, question: QuestionView) -> object:
        from app.permission_dialog import PermissionDialog

        self.asked.append(question.request)
        dialog = PermissionDialog(question, activation_delay_s=0)
        try:
            dialog.show()
            await asyncio.sleep(0.05)  # let it lay out and paint
            if dialog.grab().isNull() or not dialog.rows:
                self.unrendered.append(question.request.tool)
            dialog.select(Choice.ONCE)
            dialog.allow_button.click()
        finally:
            if not question.done:
                question.cancel("error")
            dialog.deleteLater()
        return question.decision


async def _answer_passphrase_dialog() -> None:
    """Type the passphrase into the dialog once it appears (as a person would)."""
    from app.passphrase import PassphraseDialog

    for _ in range(400):
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, PassphraseDialog) and widget.isVisible():
                widget.first.setText(SMOKE_PASSPHRASE)
                widget.second.setText(SMOKE_PASSPHRASE)
                widget.ok.click()
                return
        await asyncio.sleep(0.025)
    raise RuntimeError("the memory passphrase dialog never appeared")


async def _close_welcome(shell: DesktopApp, home: Path) -> list[str]:
    """Close the welcome as a person would; it must note so in the home (on the io thread)."""
    from app.windows.welcome import welcomed

    shell.window("welcome").close()
    for _ in range(200):
        if welcomed(home):
            return []
        await asyncio.sleep(0.025)
    return ["closing the welcome window did not note it in the home"]


async def smoke_test(home: Path) -> int:
    from app.main import WINDOWS, DesktopApp, end_pending_work

    problems: list[str] = []
    documents = Path.home() / "Documents"
    documents.mkdir(parents=True, exist_ok=True)
    (documents / MARKER).write_text("smoke\n")
    from app.permission_prompt import GuiPrompter

    answerer = DialogAnswerer()
    prompter = GuiPrompter(present=answerer)
    shell = DesktopApp(home, prompter=prompter, connect_model=False)
    try:
        shell.start()
        answering = asyncio.ensure_future(_answer_passphrase_dialog())
        await shell.load()
        await answering
        if shell.assistant.session.memory is None:
            problems.append(f"memory did not open: {shell.assistant.session.memory_problem}")
        welcome = shell.windows.get("welcome")
        if welcome is None or not welcome.isVisible():
            problems.append("the welcome window did not open on the first start")
        for name in WINDOWS:
            widget = shell.show_window(name)
            await asyncio.sleep(0.05)  # let it lay out, paint and start its first refresh
            if widget is None or widget.grab().isNull():
                problems.append(f"the {name} window did not render")
        problems.extend(await _close_welcome(shell, home))
        turn = await asyncio.wait_for(shell.assistant.ask("list files in ~/Documents"), 60)
        if turn.status != "done" or MARKER not in turn.reply:
            problems.append(f"the request did not list the folder: {turn.status}: {turn.reply}")
        if len(answerer.asked) != 1:
            problems.append(f"expected one permission question, saw {len(answerer.asked)}")
        for tool in answerer.unrendered:
            problems.append(f"the permission dialog for {tool} did not render")
    except Exception as exc:  # the smoke test's boundary: every failure is reported
        log.exception("smoke test failed")
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        shell.quit()
        await end_pending_work()
    for problem in problems:
        sys.stderr.write(f"smoke test: {problem}\n")
    if not problems:
        sys.stdout.write("smoke test: ok\n")
    return 1 if problems else 0

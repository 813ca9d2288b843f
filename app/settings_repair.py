"""The desktop app's offer when settings.json is broken: it started on defaults; open or reset.

One message box, shown through the app's one awaitable dialog seam (`app.async_dialog`) and not
modal, so the tray and the chat work meanwhile. It names the file, the line and the wrong key,
says what is in use instead, and offers to open the file (the desktop's editor) or reset it.

It must never overwrite or delete the broken file: reset moves it aside first
(`broker.settings.reset_settings`), and the box says where it went.

Also the notice at start when settings.json holds changes made outside Chamberlain to settings
that widen reach (broker.settings_seal): it says they are not used and offers Settings, where
they are listed in full and confirmed or discarded. It never confirms anything itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QLabel, QMessageBox

from app import async_dialog
from app.settings_notice import in_use, pending_summary
from broker.settings import LoadedSettings, SettingsError, reset_settings

log = logging.getLogger("chamberlain.app.settings_repair")

RunIo = Callable[..., Awaitable[Any]]

# What the person chose.
OPENED, RESET, LATER, REVIEW = "opened", "reset", "later", "review"


def repair_box(loaded: LoadedSettings) -> QMessageBox:
    """The question, with its three buttons named "open", "reset" and "later" (objectName)."""
    problem = loaded.problem
    assert problem is not None
    if loaded.whole_file:
        text = "Chamberlain's settings file is broken, so it started with its default settings."
    else:
        text = (
            f"A setting in Chamberlain's settings file is wrong, so it uses {in_use(loaded)} "
            "for now; your other settings are in use."
        )
    saved = "the default settings" if loaded.whole_file else "the settings in use"
    name = problem.path.name if problem.path is not None else "settings.json"
    details = (
        f"{problem.problem}.\n\n"
        "Open it to fix it yourself (Chamberlain reads it again at its next start), or reset it: "
        f"{saved} are saved in its place, and the broken file is kept beside it as "
        f"{name}.broken-<date>-<time>. Saving in the Settings window keeps it the same way."
    )
    box = QMessageBox(QMessageBox.Icon.Warning, "Chamberlain", text)
    box.setInformativeText(details)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.addButton("Open the File", QMessageBox.ButtonRole.ActionRole).setObjectName("open")
    box.addButton("Reset", QMessageBox.ButtonRole.AcceptRole).setObjectName("reset")
    later = box.addButton("Not Now", QMessageBox.ButtonRole.RejectRole)
    later.setObjectName("later")
    box.setDefaultButton(later)
    box.setWindowModality(Qt.WindowModality.NonModal)
    return box


async def offer_repair(
    loaded: LoadedSettings,
    home: Path,
    run_io: RunIo,
    *,
    open_url: Callable[[QUrl], bool] | None = None,
) -> str:
    """Ask, then do what was chosen; returns OPENED, RESET or LATER. `run_io` runs the file work
    off the UI thread; `open_url` hands the file to the desktop (its editor; by default
    QDesktopServices.openUrl)."""
    box = repair_box(loaded)
    await async_dialog.show_dialog(box)
    clicked = box.clickedButton()
    choice = clicked.objectName() if clicked is not None else "later"
    problem = loaded.problem
    assert problem is not None
    path = problem.path or home / "settings.json"
    if choice == "open":
        if not (open_url or QDesktopServices.openUrl)(QUrl.fromLocalFile(str(path))):
            await _tell(f"No program opened {path}; open it in a text editor to fix it.")
        return OPENED
    if choice != "reset":
        return LATER
    try:
        kept_as = await run_io(reset_settings, home, loaded)
    except (OSError, SettingsError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        await _tell(
            f"The settings file could not be reset ({reason}); nothing was changed. Check that "
            f"{home} is writable.",
            problem=True,
        )
        return LATER
    where = f" The broken file is kept as {kept_as}." if kept_as is not None else ""
    await _tell(f"Settings reset: {path} now holds the settings in use.{where}")
    return RESET


async def _tell(text: str, *, problem: bool = False) -> None:
    icon = QMessageBox.Icon.Warning if problem else QMessageBox.Icon.Information
    box = QMessageBox(icon, "Chamberlain", text)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.setWindowModality(Qt.WindowModality.NonModal)
    await async_dialog.show_dialog(box)


def review_box(loaded: LoadedSettings) -> QMessageBox:
    """The notice of changes made outside Chamberlain, each one named, with "Review in
    Settings" (objectName "review") and "Not Now" ("later")."""
    from tools.escapes import visible

    box = QMessageBox(QMessageBox.Icon.Warning, "Chamberlain", pending_summary(loaded))
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setInformativeText("\n".join(f"• {visible(c.describe())}" for c in loaded.pending))
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    review = box.addButton("Review in Settings", QMessageBox.ButtonRole.AcceptRole)
    review.setObjectName("review")
    later = box.addButton("Not Now", QMessageBox.ButtonRole.RejectRole)
    later.setObjectName("later")
    box.setDefaultButton(later)
    box.setWindowModality(Qt.WindowModality.NonModal)
    return box


async def offer_review(loaded: LoadedSettings, open_settings: Callable[[], object]) -> str:
    """Say that changes made outside Chamberlain wait; REVIEW opens Settings, LATER does not."""
    box = review_box(loaded)
    # Informative text is rich text by Qt's guess; the file's words must stay plain.
    for label in box.findChildren(QLabel):
        label.setTextFormat(Qt.TextFormat.PlainText)
    await async_dialog.show_dialog(box)
    clicked = box.clickedButton()
    if clicked is not None and clicked.objectName() == "review":
        open_settings()
        return REVIEW
    return LATER

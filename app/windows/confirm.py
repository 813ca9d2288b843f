"""The one confirmation seam every window's yes/no question goes through.

A question is shown with `open()` and its answer awaited, never `exec()`ed: the qasync loop keeps
running underneath, and Cancel is always the default.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


async def confirm(parent: QWidget, title: str, text: str, accept: str) -> bool:
    """Ask a yes/no question without blocking: the one seam every window's confirmation goes
    through. Cancel is the default button, and Esc answers it."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.NoButton)
    box.setParent(parent, box.windowFlags())
    box.setObjectName("confirmation")
    yes = box.addButton(accept, QMessageBox.ButtonRole.AcceptRole)
    no = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(no)
    box.setEscapeButton(no)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.setAccessibleName(title)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def done(_result: int) -> None:
        if not answer.done():
            answer.set_result(box.clickedButton() is yes)

    box.finished.connect(done)
    box.open()
    try:
        return await answer
    finally:
        box.deleteLater()

"""The one awaitable seam every modal dialog of the app goes through.

`await show_dialog(dialog)` shows the dialog and returns its result code once it has finished,
while the qasync loop keeps running: turns, timers and other windows go on meanwhile. Tests that
do not want a real dialog patch this one function (`app.async_dialog.show_dialog`).

This module must never call `QDialog.exec()` nor start a nested event loop: under qasync a
nested loop re-enters the running asyncio loop and deadlocks or raises (qasync issues #59, #82,
#174).
"""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QDialog


async def show_dialog(dialog: QDialog) -> int:
    """Show `dialog` and wait for its `finished(int)`; the result code (Accepted, Rejected, …).

    The dialog keeps its own modality: one whose `isModal()` is true is opened window-modal
    (`open()`), any other is shown without blocking other windows (`show()`), so a permission
    prompt never locks the chat window's Stop button. When the awaiting task is cancelled, the
    dialog is rejected (closed) rather than left on screen with nobody waiting for it.
    """
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[int] = loop.create_future()

    def on_finished(result: int) -> None:
        if not finished.done():
            finished.set_result(int(result))

    dialog.finished.connect(on_finished)
    try:
        if dialog.isModal():
            dialog.open()
        else:
            dialog.show()
        return await finished
    except asyncio.CancelledError:
        if dialog.isVisible():
            dialog.reject()
        raise
    finally:
        dialog.finished.disconnect(on_finished)

"""Show the real chat window on the display it is given and say where it and its controls are.

    python -m tests.support.chat_on_screen [--grab OUT.png]

Run with DISPLAY (a real X server with a window manager), QT_SCALE_FACTOR as the test wants,
and HOME and CHAMBERLAIN_HOME in a scratch folder. Prints one JSON line, in logical pixels:
the screen's available geometry, the window's frame, and the global rectangles of the message
box, Send and Stop; with --grab, also writes a grab of the whole screen. Ends by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication, QWidget


def _rect(rect: QRect) -> list[int]:
    return [rect.x(), rect.y(), rect.width(), rect.height()]


def _global(widget: QWidget) -> list[int]:
    at = widget.mapToGlobal(widget.rect().topLeft())
    return [at.x(), at.y(), widget.width(), widget.height()]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grab", type=Path)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    app = QApplication(sys.argv[:1])

    from app.chat import ChatWindow
    from app.qt_session import QtSession
    from broker.session import Session
    from broker.settings import Settings
    from core.clock import SystemClock

    settings = Settings()
    settings.router.model_refinement = False
    home = Path(os.environ["CHAMBERLAIN_HOME"])
    assistant = QtSession(Session(home=home, settings=settings, clock=SystemClock()))
    window = ChatWindow(assistant, lambda: None)
    if args.title:
        window.title.setText(args.title)
    window.show()
    # Until the window manager has framed and placed it (the frame grows past the window).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        app.processEvents()
        if window.isVisible() and window.frameGeometry() != window.geometry():
            break
        time.sleep(0.02)
    for _ in range(20):
        app.processEvents()
        time.sleep(0.02)
    screen = window.screen()
    print(
        json.dumps(
            {
                "available": _rect(screen.availableGeometry()),
                "frame": _rect(window.frameGeometry()),
                "input": _global(window.input),
                "send": _global(window.send_button),
                "stop": _global(window.stop_button),
                "minimum_width": window.minimumSizeHint().width(),
            }
        ),
        flush=True,
    )
    if args.grab is not None:
        screen.grabWindow(0).save(str(args.grab))
    window.hide()
    assistant.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

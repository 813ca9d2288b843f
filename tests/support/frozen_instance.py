"""A frozen Chamberlain, for tests: a real process that holds the instance lock of a home and
listens on its socket, but never answers and ignores SIGTERM, as an app whose UI thread is stuck
does (its SIGTERM handler runs on that loop too).

    python -m tests.support.frozen_instance HOME

It takes the lock and records itself exactly as the app does (app.single_instance), prints
"ready" on stdout, and then waits until it is killed. Tests end it by its PID.
"""

from __future__ import annotations

import signal
import socket
import sys
import time
from pathlib import Path

from PySide6.QtCore import QDir

from app.single_instance import SingleInstance, lock_path, server_name


def main(home: Path) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    instance = SingleInstance(server_name(home), lock_path(home))
    if instance.take_lock() is not True:
        sys.exit(f"the instance lock of {home} is held by another process")
    # Where QLocalServer puts a socket it is given by name; listening, never accepting: a
    # connection is made (the kernel queues it), and "show" is never read nor answered.
    path = Path(QDir.tempPath()) / server_name(home)
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    print("ready", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

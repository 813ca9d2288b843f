"""One Chamberlain per person and home: a second launch brings the first to the front.

The first instance listens on a local socket named after the user and the Chamberlain home;
a later launch connects, says "show", and exits. Nothing is left behind by a crash: a socket
that nobody answers on is stale and is replaced (unlike a lock file, which would need
cleaning by hand). Only the same user may connect.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger("chamberlain.app.single_instance")

CONNECT_MS = 500
SHOW = b"show\n"


def server_name(home: Path) -> str:
    """The socket's name: one per user and Chamberlain home."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    digest = hashlib.sha256(str(home.expanduser().resolve()).encode()).hexdigest()[:16]
    return f"chamberlain-{uid}-{digest}"


class SingleInstance(QObject):
    """`claim()` once at start: True — this is the first instance (it now listens); False — one
    was running, and it has been asked to show itself."""

    # A later launch asked this instance to come to the front.
    activated = Signal()

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._server: QLocalServer | None = None
        self._sockets: list[QLocalSocket] = []

    def claim(self) -> bool:
        if self._tell_running_instance():
            return False
        # Nobody answered: any socket file left by a crashed instance is stale.
        QLocalServer.removeServer(self.name)
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.name):
            log.warning("could not listen on %s: %s", self.name, server.errorString())
            return True  # run anyway; only the bring-to-front feature is lost
        server.newConnection.connect(self._on_connection)
        self._server = server
        return True

    def _tell_running_instance(self) -> bool:
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if not socket.waitForConnected(CONNECT_MS):
            return False
        socket.write(SHOW)
        socket.waitForBytesWritten(CONNECT_MS)
        socket.disconnectFromServer()
        return True

    def _on_connection(self) -> None:
        assert self._server is not None
        while (socket := self._server.nextPendingConnection()) is not None:
            self._sockets.append(socket)
            socket.readyRead.connect(self._read_all)
            socket.disconnected.connect(self._read_all)
        self._read_all()

    def _read_all(self) -> None:
        for socket in list(self._sockets):
            if socket.bytesAvailable() and SHOW.strip() in bytes(socket.readAll().data()):
                self.activated.emit()
            if socket.state() == QLocalSocket.LocalSocketState.UnconnectedState:
                self._forget(socket)

    def _forget(self, socket: QLocalSocket) -> None:
        self._sockets.remove(socket)
        socket.readyRead.disconnect(self._read_all)
        socket.disconnected.disconnect(self._read_all)
        socket.abort()

    def release(self) -> None:
        """Stop listening and remove the socket: nothing is left behind."""
        for socket in list(self._sockets):
            self._forget(socket)
        if self._server is not None:
            self._server.close()
            QLocalServer.removeServer(self.name)
            self._server = None

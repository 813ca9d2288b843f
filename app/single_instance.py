"""One Chamberlain per person and home: a second launch brings the first to the front.

The first instance takes a lock on `instance.lock` in the Chamberlain home (flock: the kernel
lets go of it when the process ends, however it ends, so a crash leaves nothing to clean up),
writes its PID there, and listens on a local socket named after the user and the home. A later
launch finds the lock taken, connects, says "show", and waits a few seconds for the first to
answer "shown". No answer means the first instance is frozen (its UI thread stuck, or the
process stopped): the later launch says so and, with the person's yes, ends that one process
(the PID the lock records, checked against its start time so a reused PID is never hit) and
starts in its place. Only the same user may connect to the socket.

This module must never end a process the person did not agree to end, nor any process other
than the one that holds the lock, and must never block the UI thread of a running instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import hashlib
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QMessageBox

from app import async_dialog

try:
    import fcntl
except ImportError:  # Windows: the socket alone says whether one runs
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("chamberlain.app.single_instance")

CONNECT_MS = 500
# How long a running instance has to answer "show" before it counts as not responding. A
# healthy one answers within milliseconds; a busy UI thread may take a second or two.
ANSWER_S = 5.0
# How long an instance being ended has for SIGTERM before it is killed.
END_GRACE_S = 3.0
SHOW = b"show\n"
SHOWN = b"shown\n"
LOCK_FILE = "instance.lock"


def server_name(home: Path) -> str:
    """The socket's name: one per user and Chamberlain home."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    digest = hashlib.sha256(str(home.expanduser().resolve()).encode()).hexdigest()[:16]
    return f"chamberlain-{uid}-{digest}"


def lock_path(home: Path) -> Path:
    """The instance lock of the Chamberlain home `home`."""
    return home.expanduser() / LOCK_FILE


class Claim(enum.Enum):
    # This is the first instance: it holds the lock and listens.
    FIRST = "first"
    # One was running and answered: it has been asked to show itself.
    SHOWN = "shown"
    # One is running (it holds the lock) but did not answer within ANSWER_S.
    NOT_RESPONDING = "not responding"


@dataclass(frozen=True)
class Holder:
    """The process that holds the instance lock, as it recorded itself."""

    pid: int
    # psutil's create_time() of that process: a PID reused by another program differs.
    started: float


class SingleInstance(QObject):
    """`claim()` once at start. FIRST: this is the first instance (it holds the lock and
    listens); SHOWN: one was running and has been asked to show itself; NOT_RESPONDING: one is
    running but did not answer (`holder` says which process, when it recorded itself)."""

    # A later launch asked this instance to come to the front.
    activated = Signal()

    def __init__(self, name: str, lock: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.lock = lock
        self.holder: Holder | None = None
        self._lock_fd: int | None = None
        self._server: QLocalServer | None = None
        self._sockets: list[QLocalSocket] = []

    def claim(self, answer_s: float = ANSWER_S) -> Claim:
        locked = self.take_lock()
        if locked is not False:
            # The lock is ours (or there is none to take). Whatever listens on the socket now
            # is an instance of a version without the lock (running across an upgrade): it is
            # asked to show itself as those versions were, without waiting for an answer.
            if self._tell_running_instance(0.0, wait_for_answer=False):
                self._release_lock()
                return Claim.SHOWN
            self._listen()
            return Claim.FIRST
        self.holder = read_holder(self.lock)
        if self._tell_running_instance(answer_s):
            return Claim.SHOWN
        if self.take_lock():
            # It ended while we waited (a Quit racing this launch): we are the first now.
            self._listen()
            return Claim.FIRST
        self.holder = read_holder(self.lock)
        return Claim.NOT_RESPONDING

    # -- the lock --------------------------------------------------------------------------------

    def take_lock(self) -> bool | None:
        """True: this process now holds the lock; False: another one does; None: no lock can
        be had here (no flock on this system, or the home cannot hold the file)."""
        if self._lock_fd is not None:
            return True
        if fcntl is None:
            return None
        try:
            self.lock.parent.mkdir(parents=True, exist_ok=True)
            # Not inherited by child processes (os.open's default): an MCP server or a command
            # must never keep the lock alive after the app is gone.
            fd = os.open(self.lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            log.warning("cannot use the instance lock %s: %s", self.lock, exc)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            os.close(fd)
            log.warning("cannot lock the instance lock %s: %s", self.lock, exc)
            return None
        me = psutil.Process()
        record = f"{me.pid} {me.create_time():.3f}\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        self._lock_fd = fd
        return True

    def _release_lock(self) -> None:
        if self._lock_fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._lock_fd, 0)
        os.close(self._lock_fd)  # closing it lets go of the lock
        self._lock_fd = None

    # -- the socket ------------------------------------------------------------------------------

    def _listen(self) -> None:
        # Nobody answered, or we hold the lock: any socket file left by a crash is stale.
        QLocalServer.removeServer(self.name)
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.name):
            log.warning("could not listen on %s: %s", self.name, server.errorString())
            return  # run anyway; only the bring-to-front feature is lost
        server.newConnection.connect(self._on_connection)
        self._server = server

    def _tell_running_instance(self, answer_s: float, *, wait_for_answer: bool = True) -> bool:
        """Say "show" to the running instance; True once it answered "shown" within `answer_s`
        (or, with `wait_for_answer` False, once it was said).

        Blocking, but only ever in a launch that has nothing on screen yet. A connection can be
        refused for a moment while the first instance starts (it holds the lock before it
        listens), so connecting is tried again until the time is up.
        """
        deadline = time.monotonic() + answer_s
        while True:
            socket = QLocalSocket()
            socket.connectToServer(self.name)
            if socket.waitForConnected(CONNECT_MS):
                break
            socket.abort()
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        socket.write(SHOW)
        socket.waitForBytesWritten(CONNECT_MS)
        if not wait_for_answer:
            socket.disconnectFromServer()
            return True
        received = b""
        while SHOWN.strip() not in received:
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0 or not socket.waitForReadyRead(remaining_ms):
                break
            received += bytes(socket.readAll().data())
        socket.abort()
        return SHOWN.strip() in received

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
                # Answered from the event loop: a frozen loop cannot answer, which is the point.
                socket.write(SHOWN)
                socket.flush()
                self.activated.emit()
            if socket.state() == QLocalSocket.LocalSocketState.UnconnectedState:
                self._forget(socket)

    def _forget(self, socket: QLocalSocket) -> None:
        self._sockets.remove(socket)
        socket.readyRead.disconnect(self._read_all)
        socket.disconnected.disconnect(self._read_all)
        socket.abort()

    def release(self) -> None:
        """Stop listening, remove the socket, let go of the lock: nothing is left behind."""
        for socket in list(self._sockets):
            self._forget(socket)
        if self._server is not None:
            self._server.close()
            QLocalServer.removeServer(self.name)
            self._server = None
        self._release_lock()


def read_holder(lock: Path) -> Holder | None:
    """The process recorded in the lock file, or None (not written yet, or not ours)."""
    try:
        pid_text, started_text = lock.read_text("ascii").split()
        return Holder(int(pid_text), float(started_text))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _same_process(holder: Holder) -> psutil.Process | None:
    try:
        process = psutil.Process(holder.pid)
        if abs(process.create_time() - holder.started) > 0.01:
            return None  # the PID was reused: the recorded process is long gone
        if process.uids().real != os.getuid():
            return None
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return process


def end_instance(holder: Holder, lock: Path, grace_s: float = END_GRACE_S) -> bool:
    """End the frozen instance `holder` (the person agreed): SIGTERM, and SIGKILL when it has
    not ended after `grace_s`. Only that process, and only while it still holds `lock` as the
    same process it recorded. True once it is gone."""
    if read_holder(lock) != holder:
        log.warning("the instance lock no longer names process %d; nothing ended", holder.pid)
        return False
    process = _same_process(holder)
    if process is None:
        return True  # already gone (or never ours): nothing to end
    log.warning("ending Chamberlain process %d, which did not respond", holder.pid)
    try:
        process.terminate()
        # A stopped process handles SIGTERM only once it runs again.
        process.resume()
        if _ended(process, grace_s):
            return True
        log.warning("Chamberlain process %d did not end on SIGTERM; killing it", holder.pid)
        process.kill()
    except psutil.NoSuchProcess:
        return True
    return _ended(process, grace_s)


def _ended(process: psutil.Process, within_s: float) -> bool:
    """Whether `process` ended within `within_s`: gone, or a zombie its parent has not reaped
    yet (its files, the lock among them, are closed by then)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


# --- a frozen instance, told to the person --------------------------------------------------------

# Qt platforms with no screen a person looks at: a question there would wait for nobody.
_UNSEEN_PLATFORMS = ("offscreen", "minimal")


def not_responding(holder: Holder | None, answer_s: float = ANSWER_S) -> str:
    """The sentence for a running instance that did not answer."""
    which = f" (process {holder.pid})" if holder is not None else ""
    return f"Chamberlain is already running{which} but has not responded for {answer_s:g} seconds"


async def ask_to_end(holder: Holder | None, answer_s: float = ANSWER_S) -> bool:
    """Say that the running instance does not respond and, when it is known which process it
    is, offer to end it. True only when the person chose to end it."""
    box = QMessageBox(
        QMessageBox.Icon.Warning, "Chamberlain", not_responding(holder, answer_s) + "."
    )
    box.setWindowTitle("Not responding")  # Qt adds " — Chamberlain" (app/windows/words.py)
    if holder is None:
        box.setInformativeText(
            "It did not say which process it is, so it cannot be ended from here. Wait a moment "
            "and open Chamberlain again, or end it from your system monitor."
        )
        box.addButton("Close", QMessageBox.ButtonRole.RejectRole)
        await async_dialog.show_dialog(box)
        return False
    box.setInformativeText(
        "It may be busy for a moment, or stuck. You can wait and open Chamberlain again later, "
        "or end it now and start a new one. Ending it stops what it was doing: a request it was "
        "answering is lost, and so is anything it had not saved yet."
    )
    end = box.addButton("&End it and start again", QMessageBox.ButtonRole.DestructiveRole)
    end.setAccessibleName(f"End Chamberlain process {holder.pid} and start again")
    wait = box.addButton("&Wait", QMessageBox.ButtonRole.RejectRole)
    wait.setAccessibleName("Wait: leave it running and do not start another")
    # Ending a process takes a deliberate choice: Enter and Esc both leave it running.
    box.setDefaultButton(wait)
    box.setEscapeButton(wait)
    await async_dialog.show_dialog(box)
    return box.clickedButton() is end


async def take_over(instance: SingleInstance) -> Claim:
    """The running instance did not respond (`instance.claim()` said NOT_RESPONDING): say so,
    and with the person's yes end it and claim again. FIRST when this launch may start now.

    Where nobody can see a dialog (Qt's offscreen platform) the sentence goes to stderr alone.
    """
    holder = instance.holder
    sentence = not_responding(holder)
    if QGuiApplication.platformName() in _UNSEEN_PLATFORMS:
        _say(f"{sentence}; this launch did not start another. {_by_hand(holder)}")
        return Claim.NOT_RESPONDING
    if not await ask_to_end(holder):
        _say(f"{sentence}; it was left running, and this launch did not start another.")
        return Claim.NOT_RESPONDING
    assert holder is not None  # ask_to_end offers to end only a known process
    ended = await asyncio.to_thread(end_instance, holder, instance.lock)
    if not ended:
        _say(f"{sentence}, and it could not be ended. {_by_hand(holder)}")
        return Claim.NOT_RESPONDING
    log.warning("Chamberlain process %d, which did not respond, was ended", holder.pid)
    return instance.claim()


def _by_hand(holder: Holder | None) -> str:
    if holder is None:
        return "Wait a moment and try again, or end it from your system monitor."
    return (
        f"Wait a moment and try again, or end process {holder.pid} from your system monitor "
        "and start Chamberlain again."
    )


def _say(text: str) -> None:
    sys.stderr.write(f"chamberlain: {text}\n")
    sys.stderr.flush()
